// Migration, location management and AtSync load balancing through ucharmrun at 1-16 PEs
// (tests/core/migration.cpp), and the user errors they can meet.
#include <gtest/gtest.h>

#include <string>

#include "../common/run.h"

using ucharm::test::describe;
using ucharm::test::Result;
using ucharm::test::run;

namespace {

Result job(int n, std::vector<std::string> args, double limit = 60) {
  std::vector<std::string> argv = {UCHARMRUN_PATH, "-n", std::to_string(n), "--timeout", "50", MIGRATION_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, limit);
}
bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

class Migration : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(Migration, ModePasses) {
  auto [mode, n] = GetParam();
  Result r = job(n, {mode});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, mode + " ok")) << describe(r);
}

INSTANTIATE_TEST_SUITE_P(
    Core, Migration,
    ::testing::Combine(::testing::Values("storm", "qd", "hops", "reduction", "broadcast", "insert", "bigstate", "dims6"),
                       ::testing::Values(1, 2, 4, 8, 16)),
    [](const auto& info) { return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "pe"; });

TEST(MigrationLb, GreedyPutsOneHeavyElementOnEachPe) {
  for (int n : {2, 4}) {
    Result r = job(n, {"lb", "+balancer", "GreedyLB", "+LBDebug"});
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_TRUE(has(r.out, "lb ok")) << describe(r);
    EXPECT_TRUE(has(r.out, "ucharm LB step 0 (GreedyLB)")) << describe(r);
  }
}

TEST(MigrationLb, MetisPartitionsTheMeasuredGraph) {
  Result r = job(4, {"lb_any", "+balancer", "MetisLB", "+LBDebug"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "ucharm LB step 0 (MetisLB)")) << describe(r);
}

TEST(MigrationLb, DefaultBalancerIsGreedyRefine) {
  Result r = job(2, {"lb", "+LBDebug"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "(GreedyRefineLB)")) << describe(r);
}

TEST(MigrationErrors, UnknownBalancerNamesTheKnownOnes) {
  Result r = job(2, {"lb", "+balancer", "NoSuchLB"});
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "+balancer NoSuchLB: no such load balancer")) << describe(r);
  EXPECT_TRUE(has(r.err, "GreedyRefineLB")) << describe(r);
}

TEST(MigrationErrors, MigratingANonMigratableElementIsAnError) {
  Result r = job(2, {"not_migratable"});
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "is not migratable")) << describe(r);
}

TEST(MigrationErrors, APupThatReadsMoreThanItWroteIsAnError) {
  Result r = job(2, {"pup_overrun"});
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "read past the end")) << describe(r);
  EXPECT_TRUE(has(r.err, "pup()")) << describe(r);
}

TEST(MigrationErrors, APupThatReadsLessThanItWroteIsAnError) {
  Result r = job(2, {"pup_short"});
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "bytes fewer than it wrote")) << describe(r);
}

TEST(MigrationErrors, AnOpenChannelStopsAMoveWithTheReason) {
  Result r = job(2, {"channel_open"});
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "CkChannel end(s) open: channels do not move")) << describe(r);
}

TEST(MigrationErrors, DeviceBufferToAnElementThatMovedIsReportedNotWaitedOn) {
  Result r = job(3, {"devbuf_moved"});
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_FALSE(r.timed_out) << describe(r);
  EXPECT_TRUE(has(r.err, "device data cannot be forwarded")) << describe(r);
}

}  // namespace
