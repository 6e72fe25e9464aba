// One-sided communication through ucharmrun (tests/converse/rma_prog.cpp) at 2 and 4 PEs.
#include <gtest/gtest.h>

#include <string>

#include "../common/run.h"

using ucharm::test::describe;
using ucharm::test::Result;
using ucharm::test::run;

namespace {

Result job(int n, const std::string& mode) {
  return run({UCHARMRUN_PATH, "-n", std::to_string(n), "--timeout", "80", RMAPROG_PATH, mode}, 90);
}
bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

class ConverseRma : public ::testing::TestWithParam<int> {};

// put/get (self included), every atomic, put-fence-put ordering, 10,000 notified puts
// checked in order, and an idle PE that notices a flag put, with the data fenced ahead of it.
TEST_P(ConverseRma, AllPhasesPass) {
  Result r = job(GetParam(), "all");
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "rma ok: " + std::to_string(GetParam()) + " PEs, 10000 notified puts")) << describe(r);
}

TEST_P(ConverseRma, OutOfRangePutEndsTheJobNamingSizeOffsetAndLength) {
  Result r = job(GetParam(), "range");
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "CmiRmaPut: out of range: offset 8190 + length 16 bytes reaches past the end of PE 1's "
                         "8192-byte region"))
      << describe(r);
  EXPECT_FALSE(has(r.out, "was not refused")) << describe(r);
}

INSTANTIATE_TEST_SUITE_P(Pes, ConverseRma, ::testing::Values(2, 4),
                         [](const auto& info) { return std::to_string(info.param) + "pe"; });

}  // namespace
