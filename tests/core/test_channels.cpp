// Channel ids through ucharmrun (tests/core/channel_ids.cpp): ids that the former hashed
// scheme made collide, 25,600 channel ends per PE, and channels opened again.
#include <gtest/gtest.h>

#include <string>

#include "../common/run.h"

using ucharm::test::describe;
using ucharm::test::Result;
using ucharm::test::run;

namespace {

Result job(int n, std::vector<std::string> args, double limit = 90) {
  std::vector<std::string> argv = {UCHARMRUN_PATH, "-n", std::to_string(n), "--timeout", "80", CHANNEL_IDS_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, limit);
}
bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

class ChannelIds : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(ChannelIds, ModePasses) {
  auto [mode, n] = GetParam();
  Result r = job(n, {mode});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, mode + " ok")) << describe(r);
  EXPECT_FALSE(has(r.err, "collides")) << describe(r);
}

INSTANTIATE_TEST_SUITE_P(
    Core, ChannelIds,
    ::testing::Combine(::testing::Values("hashcollide", "many", "reopen"), ::testing::Values(1, 2, 4, 8)),
    [](const auto& info) { return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "pe"; });

// "many" opens 25,600 channel ends per PE; the former hashed ids collided there (an abort)
// at 1, 2, 4 and 8 PEs, and "hashcollide" at every PE count.
TEST(ChannelIds, ManyOpensOver10000EndsPerPe) {
  Result r = job(4, {"many"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "many ok: 25600 channel ends per PE")) << describe(r);
}

}  // namespace
