// CCS through ucharmrun (tests/converse/ccs_prog.cpp, whose client thread talks to PE 0's
// server over TCP) at 1, 2 and 4 PEs, with and without a key file; the launcher's
// ++server options; bad server options.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

#include "../common/run.h"

using ucharm::test::describe;
using ucharm::test::Result;
using ucharm::test::run;

namespace {

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

class ConverseCcs : public ::testing::TestWithParam<int> {};

TEST_P(ConverseCcs, RequestsRepliesBroadcastsAndBadInput) {
  const int n = GetParam();
  Result r = run({UCHARMRUN_PATH, "-n", std::to_string(n), "--timeout", "80", CCSPROG_PATH, "plain", "+server",
                  "+server-port", "0"},
                 90);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "ccs: Server IP = 127.0.0.1, Server port = ")) << describe(r);
  EXPECT_TRUE(has(r.out, "ccs plain: 0 failures, " + std::to_string(n) + " PEs")) << describe(r);
  EXPECT_TRUE(has(r.err, "refused a request from 127.0.0.1:")) << describe(r);
}

TEST_P(ConverseCcs, KeyFileRequiresAuthentication) {
  const int n = GetParam();
  char path[] = "/tmp/ucharm-ccs-keyXXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string key = "12345678901234567890123456789012";
  const std::string text = "# level key\n0 " + key + "\n";
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fd);
  // The launcher's spelling (charmrun's): ++server-auth before the program.
  Result r = run({UCHARMRUN_PATH, "-n", std::to_string(n), "--timeout", "80", "++server-auth", path, "++local",
                  CCSPROG_PATH, "auth", path, key},
                 90);
  ::unlink(path);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "ccs auth: 0 failures, " + std::to_string(n) + " PEs")) << describe(r);
  EXPECT_TRUE(has(r.err, "an unauthenticated request (this server requires a key)")) << describe(r);
  EXPECT_TRUE(has(r.err, "bad key in the salt exchange")) << describe(r);
}

INSTANTIATE_TEST_SUITE_P(Pes, ConverseCcs, ::testing::Values(1, 2, 4),
                         [](const auto& info) { return std::to_string(info.param) + "pe"; });

TEST(ConverseCcsOptions, BadValuesAreRefusedNamingTheOption) {
  Result r = run({UCHARMRUN_PATH, "-n", "1", "++server-port", "70000", CCSPROG_PATH}, 30);
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_TRUE(has(r.err, "++server-port expects a TCP port from 0 to 65535, got '70000'")) << describe(r);
  r = run({UCHARMRUN_PATH, "-n", "1", CCSPROG_PATH, "+server-ip", "no.such.address"}, 30);
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "+server-ip: 'no.such.address' is not an IPv4 address")) << describe(r);
  r = run({UCHARMRUN_PATH, "-n", "1", CCSPROG_PATH, "+server-auth", "/nonexistent/keys"}, 30);
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "cannot open the authentication file '/nonexistent/keys'")) << describe(r);
}

}  // namespace
