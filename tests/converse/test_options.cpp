#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "options.h"

using ucharm::converse::parse_runtime_options;
using ucharm::converse::RuntimeOptions;

namespace {
struct Args {
  std::vector<std::string> store;
  std::vector<char*> argv;
  int argc = 0;
  explicit Args(std::vector<std::string> a) : store(std::move(a)) {
    for (auto& s : store) argv.push_back(s.data());
    argv.push_back(nullptr);
    argc = static_cast<int>(store.size());
  }
};
const char* const kNoEnv[] = {nullptr};

std::optional<std::string> parse(Args& a, RuntimeOptions& o, const char* const* env = kNoEnv) {
  return parse_runtime_options(a.argc, a.argv.data(), o, env);
}
}  // namespace

TEST(RuntimeOptions, ParsesAndRemovesPlusOptions) {
  Args a({"prog", "x", "+eager-size=8k", "+prepost=16", "y", "+nobind", "+verbose",
          "+stacksize=2M", "+idle-spin-us=0"});
  RuntimeOptions o;
  EXPECT_FALSE(parse(a, o));
  EXPECT_EQ(a.argc, 3);
  EXPECT_STREQ(a.argv[1], "x");
  EXPECT_STREQ(a.argv[2], "y");
  EXPECT_EQ(a.argv[3], nullptr);
  EXPECT_EQ(o.eager_size, 8u * 1024);
  EXPECT_EQ(o.prepost, 16);
  EXPECT_FALSE(o.bind);
  EXPECT_TRUE(o.verbose);
  EXPECT_EQ(o.stack_size, 2u << 20);
  EXPECT_EQ(o.idle_spin_us, 0);
  EXPECT_EQ(o.large_fragment, -1);  // chosen at start-up
  Args b({"prog", "+large-fragment=64k"});
  EXPECT_FALSE(parse(b, o));
  EXPECT_EQ(o.large_fragment, 64 * 1024);
}

TEST(RuntimeOptions, EnvironmentFromTheLauncherThenCommandLineWins) {
  const char* env[] = {"UCHARM_VERBOSE=1", "UCHARM_BIND=0", "UCHARM_EAGER_SIZE=4096", nullptr};
  Args a({"prog", "+eager-size=2048"});
  RuntimeOptions o;
  EXPECT_FALSE(parse(a, o, env));
  EXPECT_TRUE(o.verbose);
  EXPECT_FALSE(o.bind);
  EXPECT_EQ(o.eager_size, 2048u);
}

TEST(RuntimeOptions, ErrorsNameTheOptionAndTheProblem) {
  struct Case { const char* arg; const char* expect; };
  const Case cases[] = {
      {"+eager-size=abc", "bad value 'abc' for 'eager-size'"},
      {"+eager-size=10", "from 256 to 1M"},
      {"+eager-size", "needs a value"},
      {"+prepost=0", "bad value '0' for 'prepost'"},
      {"+prepost=-3", "bad value '-3' for 'prepost'"},
      {"+stacksize=1", "bad value '1' for 'stacksize'"},
      {"+nobind=maybe", "expected 0 or 1"},
      {"+large-fragment=3k", "not a multiple of 1k from 4k"},
      {"+large-fragment=5000", "not a multiple of 1k from 4k"},
      {"+large-fragment=2G", "(out of range)"},
      {"+frobnicate", "unknown runtime option 'frobnicate'"},
  };
  for (const Case& c : cases) {
    Args a({"prog", c.arg});
    RuntimeOptions o;
    auto err = parse(a, o);
    ASSERT_TRUE(err) << c.arg;
    EXPECT_NE(err->find(c.expect), std::string::npos) << *err;
  }
  const char* env[] = {"UCHARM_PREPOST=lots", nullptr};
  Args a({"prog"});
  RuntimeOptions o;
  auto err = parse(a, o, env);
  ASSERT_TRUE(err);
  EXPECT_NE(err->find("UCHARM_PREPOST"), std::string::npos) << *err;
}

// Every numeric option: overflow, signs, spaces and suffixes on counts are errors, never
// a silently wrapped or truncated value (18014398509482016k is 2^64 + 32k).
TEST(RuntimeOptions, NumbersRejectOverflowAndGarbage) {
  struct Case { const char* arg; const char* expect; };
  const Case cases[] = {
      {"+eager-size=18014398509482016k", "(too large)"},
      {"+eager-size=99999999999999999999999", "(too large)"},
      {"+eager-size=18446744073709551615", "(out of range)"},
      {"+eager-size= 4096", "(not a size)"},
      {"+eager-size=+4096", "(not a size)"},
      {"+eager-size=-4096", "(negative)"},
      {"+eager-size=4096kb", "(unknown suffix)"},
      {"+eager-size=", "(empty)"},
      {"+stacksize=18014398509482016k", "(too large)"},
      {"+stacksize=17592186044416M", "(too large)"},
      {"+stacksize=17179869184G", "(too large)"},
      {"+stacksize=2G", "(out of range)"},
      {"+prepost=1k", "(not an integer)"},
      {"+prepost=4294967360", "(out of range)"},
      {"+prepost=18446744073709551617", "(too large)"},
      {"+prepost=0x10", "(not an integer)"},
      {"+idle-spin-us=18014398509482016k", "(not an integer)"},
      {"+idle-spin-us=4294967296", "(out of range)"},
      {"+idle-spin-us=1.5", "(not an integer)"},
  };
  for (const Case& c : cases) {
    Args a({"prog", c.arg});
    RuntimeOptions o;
    auto err = parse(a, o);
    ASSERT_TRUE(err) << c.arg;
    EXPECT_NE(err->find(c.expect), std::string::npos) << c.arg << ": " << *err;
    EXPECT_NE(err->find("bad value"), std::string::npos) << *err;
  }
  const char* env[] = {"UCHARM_EAGER_SIZE=18014398509482016k", nullptr};
  Args a({"prog"});
  RuntimeOptions o;
  auto err = parse(a, o, env);
  ASSERT_TRUE(err);
  EXPECT_NE(err->find("UCHARM_EAGER_SIZE"), std::string::npos) << *err;
  EXPECT_NE(err->find("(too large)"), std::string::npos) << *err;
}

TEST(RuntimeOptions, LargestAndSmallestValuesAreAccepted) {
  Args a({"prog", "+eager-size=1M", "+stacksize=1G", "+prepost=4096", "+idle-spin-us=1000000"});
  RuntimeOptions o;
  EXPECT_FALSE(parse(a, o));
  EXPECT_EQ(o.eager_size, 1u << 20);
  EXPECT_EQ(o.stack_size, 1u << 30);
  EXPECT_EQ(o.prepost, 4096);
  EXPECT_EQ(o.idle_spin_us, 1000000);
  Args b({"prog", "+eager-size=256", "+stacksize=16KiB", "+prepost=1", "+idle-spin-us=0"});
  EXPECT_FALSE(parse(b, o));
  EXPECT_EQ(o.eager_size, 256u);
  EXPECT_EQ(o.stack_size, 16u * 1024);
  EXPECT_EQ(o.prepost, 1);
}
