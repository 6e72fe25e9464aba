// Sections of chare arrays (tests/core/sections.cpp) through ucharmrun at 1, 2, 4 and 8 PEs:
// multicasts reach exactly the members once, reductions over a section, members migrating
// during both, and the errors for bad sections.
#include <gtest/gtest.h>

#include <string>

#include "../common/run.h"

using ucharm::test::describe;
using ucharm::test::Result;
using ucharm::test::run;

namespace {

Result job(int n, const std::string& mode) {
  return run({UCHARMRUN_PATH, "-n", std::to_string(n), "--timeout", "50", SECTIONS_PATH, mode}, 60);
}
bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

class Sections : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(Sections, ModePasses) {
  auto [mode, n] = GetParam();
  Result r = job(n, mode);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, mode + " ok")) << describe(r);
}

INSTANTIATE_TEST_SUITE_P(
    Core, Sections,
    ::testing::Combine(::testing::Values("list", "box2d", "box3d", "reduce", "migrate"), ::testing::Values(1, 2, 4, 8)),
    [](const auto& info) { return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "pe"; });

class SectionErrors : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(SectionErrors, AbortsNamingTheCause) {
  auto [mode, message] = GetParam();
  for (int n : {1, 4}) {
    Result r = job(n, mode);
    EXPECT_NE(r.code, 0) << describe(r);
    EXPECT_FALSE(r.timed_out) << describe(r);
    EXPECT_TRUE(has(r.out + r.err, message)) << describe(r);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Core, SectionErrors,
    ::testing::Values(
        std::make_tuple("bad_index", "member (4) is outside the chare array's bounds (4)"),
        std::make_tuple("empty", "a section needs at least one member"),
        std::make_tuple("empty_box", "is empty in dimension 1"),
        std::make_tuple("not_member", "which it is not a member of"),
        std::make_tuple("twice", "contributed twice")),
    [](const auto& info) { return std::get<0>(info.param); });

}  // namespace
