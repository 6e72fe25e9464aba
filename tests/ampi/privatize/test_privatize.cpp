// Privatization by the AMPI loader (runtime/ampi/loader.cpp): every rank's copy of the
// program has its own globals, and the loader's errors are clear.
#include <gtest/gtest.h>

#include <cstdlib>

#include "../../common/run.h"

using ucharm::test::describe;
using ucharm::test::run;

// The loader with copies.c appended and copies_driver.cpp in place of the runtime.
TEST(AmpiPrivatize, EveryCopyHasItsOwnGlobals) {
  auto r = run({COPIES_PATH, "8"}, 60);
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("8 copies, each with its own globals"), std::string::npos) << describe(r);
}

TEST(AmpiPrivatize, LoaderWithoutProgramSaysSo) {
  auto r = run({BARE_LOADER_PATH, "2"}, 60);
  EXPECT_EQ(r.code, 1) << describe(r);
  EXPECT_NE(r.err.find("holds no MPI program"), std::string::npos) << describe(r);
}

TEST(AmpiPrivatize, ProgramWithoutMainIsRefused) {
  auto r = run({COMPOSE_PATH, NO_EXE_PATH, NOMAIN_PATH}, 60);
  EXPECT_EQ(r.code, 1) << describe(r);
  EXPECT_NE(r.err.find("defines no main"), std::string::npos) << describe(r);
}

namespace {

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

// 8 ranks on 2 processes: 4 ranks share each process, each with its own globals.
TEST(AmpiPrivatize, RanksSeeTheirOwnGlobals) {
  auto r = run({UCHARMRUN_PATH, "-n", "2", RANKS_PATH, "+vp", "8"}, 90);
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(count(r.out, "globals hold my rank"), 8) << describe(r);
}

// ampicc and ampicxx from the build tree: one step (source to program), two steps (objects,
// then a mixed C/C++ link), then the programs under ucharmrun.
TEST(AmpiPrivatize, AmpiccBuildsProgramsThatRun) {
  std::string dir = testing::TempDir() + "ampicc-XXXXXX";
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string src = SOURCE_DIR;
  const std::vector<std::vector<std::string>> steps = {
      {AMPICC_PATH, src + "/ranks.c", "-o", dir + "/one"},
      {AMPICC_PATH, "-c", src + "/ranks.c", "-o", dir + "/ranks.o"},
      {AMPICXX_PATH, "-c", src + "/copies_cxx.cpp", "-o", dir + "/copies_cxx.o"},
      {AMPICXX_PATH, dir + "/ranks.o", dir + "/copies_cxx.o", "-o", dir + "/two"},
  };
  for (const auto& step : steps) {
    auto r = run(step, 90);
    ASSERT_EQ(r.code, 0) << step[1] << ": " << describe(r);
  }
  for (const char* prog : {"/one", "/two"}) {
    auto r = run({UCHARMRUN_PATH, "-n", "2", dir + prog, "+vp", "4"}, 90);
    EXPECT_EQ(r.code, 0) << prog << ": " << describe(r);
    EXPECT_EQ(count(r.out, "globals hold my rank"), 4) << prog << ": " << describe(r);
  }
  run({"rm", "-rf", dir});
}

// A C++ program (static objects, exceptions, thread_local, library containers) through
// ampicxx, 3 ranks in one process and 6 on 2: each rank's copy is its own (with isomalloc,
// loaded into the rank's slice by ucharm's ELF loader), its static destructors run at the end.
TEST(AmpiPrivatize, CxxProgramThroughAmpicxx) {
  std::string dir = testing::TempDir() + "ampicxx-XXXXXX";
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  auto b = run({AMPICXX_PATH, std::string(SOURCE_DIR) + "/ranks_cxx.cpp", "-o", dir + "/cxx"}, 120);
  ASSERT_EQ(b.code, 0) << describe(b);
  for (auto [pes, vp] : {std::pair{"1", 3}, {"2", 6}}) {
    auto r = run({UCHARMRUN_PATH, "-n", pes, dir + "/cxx", "+vp", std::to_string(vp)}, 90);
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_EQ(count(r.out, "c++ ok"), vp) << describe(r);
    EXPECT_EQ(count(r.out, "static destructor"), vp) << describe(r);
  }
  run({"rm", "-rf", dir});
}
