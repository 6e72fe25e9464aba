// Migratable threads between real processes: isomalloc_prog on 2 PEs through ucharmrun.
#include <gtest/gtest.h>
#include <sys/personality.h>

#include <fstream>
#include <iostream>
#include <string>

#include "../common/run.h"

using ucharm::test::describe;
using ucharm::test::Result;
using ucharm::test::run;

// AddressSanitizer builds: a re-executed, non-randomized process crashes ASan's
// process_vm_readv interceptor in UCX's CMA probe, and ASan's malloc is not the slice heap
// the runtime relies on: the AMPI loader leaves isomalloc off there, and so do these tests.
#if defined(__SANITIZE_ADDRESS__)
#define SKIP_UNDER_ASAN() GTEST_SKIP() << "isomalloc migration is off in AddressSanitizer builds"
#else
#define SKIP_UNDER_ASAN() (void)0
#endif

namespace {

Result job(std::vector<std::string> args, std::vector<std::string> env = {}) {
  std::vector<std::string> argv = {UCHARMRUN_PATH, "-n", "2", "--timeout", "50", ISOPROG_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, 60, env);
}
bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

TEST(IsomallocJob, LibrariesAtTheSameAddressesInBothProcesses) {
  SKIP_UNDER_ASAN();
  Result r = job({"layout"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "layout same")) << describe(r);
  EXPECT_TRUE(has(r.out, "libc.so")) << describe(r);
  EXPECT_TRUE(has(r.out, "libucharm-converse")) << describe(r);
}

TEST(IsomallocJob, ThreadWith100MiBHeapAndDeepStackMovesBackAndForthEndingOnTheOtherPe) {
  SKIP_UNDER_ASAN();
  Result r = job({"migrate", "7"});  // odd: ends on PE 1, where every canary differs
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "migrate ok (7 moves)")) << describe(r);
}

TEST(IsomallocJob, MigrationAgainstAPlainSendOf10MiB) {
  SKIP_UNDER_ASAN();
  Result r = job({"timing"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "timing ok")) << describe(r);
  for (std::size_t at = r.out.find("plain 10 MiB"); at != std::string::npos; at = std::string::npos)
    std::cout << r.out.substr(at, r.out.find('\n', at) - at) << "\n";
}

// Without the re-exec the two processes' libraries lie at different addresses: the
// receiver must refuse the thread with a clear error, not run it and crash.
TEST(IsomallocJob, ProcessWithRandomizedLayoutRefusesAThread) {
  SKIP_UNDER_ASAN();
  std::ifstream f("/proc/sys/kernel/randomize_va_space");
  int level = 0;
  f >> level;
  if (level == 0 || (personality(0xffffffff) & ADDR_NO_RANDOMIZE))
    GTEST_SKIP() << "address-space randomization is off here";
  Result r = job({"refuse"}, {"UCHARM_ISOMALLOC_REEXEC=0"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "PE 0: can migrate: no")) << describe(r);
  EXPECT_TRUE(has(r.out, "refused: cannot unpack slice 3")) << describe(r);
  EXPECT_TRUE(has(r.out, "addresses differ")) << describe(r);
  EXPECT_TRUE(has(r.err + r.out, "UCHARM_ISOMALLOC_REEXEC=0")) << describe(r);
}

}  // namespace
