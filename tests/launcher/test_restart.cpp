// ucharmrun --restart-on-failure N: a PE that dies restarts the job from the checkpoint
// PE 0 recorded in $UCHARM_CHECKPOINT_RECORD (launcher_helper's "crash" plays the
// program), up to N times; ends the program chose are not restarted.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <string>
#include <vector>

#include "job.h"

using namespace launcher_test;

namespace {

std::vector<std::string> restarts(int n) { return {"--restart-on-failure", std::to_string(n)}; }

// A job whose rank 1 dies in attempt 0 after rank 0 recorded a checkpoint; attempt 1
// gets `+restart DIR` and ends in order.
class LauncherRestart : public ::testing::TestWithParam<int> {
 protected:
  int n() const { return GetParam(); }
  // The line each rank of attempt `k` prints with its arguments.
  static std::string args_line(unsigned rank, int k, const std::string& args) {
    return "rank " + std::to_string(rank) + " attempt " + std::to_string(k) + " args: " + args + "\n";
  }
};

TEST_P(LauncherRestart, RestartsFromTheRecordedCheckpoint) {
  TempDir tmp;
  const std::string ckpt = tmp.path + "/ckpt.7";
  fs::create_directory(ckpt);
  Job job(launcher(n(), {kHelper, "crash", "1", "1", ckpt, "tail"}, restarts(3)), {tmp.env()});
  const int code = job.wait_exit(60);
  EXPECT_EQ(code, 0) << job.text();
  EXPECT_TRUE(has(job.err(), "ucharmrun: rank 1 died (signal 9); restarting from checkpoint " +
                                 ckpt + " (attempt 1 of 3)\n")) << job.text();
  EXPECT_EQ(count(job.err(), "restarting"), 1u) << job.text();
  for (int r = 0; r < n(); ++r)
    EXPECT_TRUE(has(job.out(), args_line(r, 1, "crash 1 1 " + ckpt + " tail +restart " + ckpt)))
        << r << "\n" << job.text();
  // Every rank of every attempt got the same record file, in the launcher's folder.
  const std::string rec = "record " + tmp.path + "/ucharmrun." + std::to_string(job.pid()) + ".";
  EXPECT_EQ(count(job.out(), rec), 2u * static_cast<size_t>(n())) << job.text();
  EXPECT_EQ(count(job.out(), "attempt 0 record"), static_cast<size_t>(n())) << job.text();
  EXPECT_TRUE(group_ends(job.pid())) << "ranks left running";
  EXPECT_EQ(tmp.entries(), std::vector<std::string>{"ckpt.7"}) << "the launcher's folder was left";
}

// `+restart X` (or `+restart=X`) among the arguments is replaced, not repeated.
TEST_P(LauncherRestart, ReplacesAnEarlierRestartArgument) {
  TempDir tmp;
  const std::string ckpt = tmp.path + "/ckpt.2";
  Job job(launcher(n(), {kHelper, "crash", "1", "1", ckpt, "+restart", "/old/a", "mid",
                         "+restart=/old/b"}, restarts(1)), {tmp.env()});
  EXPECT_EQ(job.wait_exit(60), 0) << job.text();
  EXPECT_TRUE(has(job.out(), args_line(0, 1, "crash 1 1 " + ckpt + " +restart " + ckpt +
                                                  " mid +restart=" + ckpt))) << job.text();
  EXPECT_FALSE(has(job.out(), "attempt 1 args: crash 1 1 " + ckpt + " +restart /old")) << job.text();
}

// No checkpoint recorded yet: the job starts again from the beginning.
TEST_P(LauncherRestart, WithoutARecordRestartsWithTheOriginalArguments) {
  TempDir tmp;
  Job job(launcher(n(), {kHelper, "crash", "1", "1", "-", "tail"}, restarts(2)), {tmp.env()});
  EXPECT_EQ(job.wait_exit(60), 0) << job.text();
  EXPECT_TRUE(has(job.err(), "ucharmrun: rank 1 died (signal 9); restarting from the beginning "
                             "(no checkpoint recorded) (attempt 1 of 2)\n")) << job.text();
  EXPECT_TRUE(has(job.out(), args_line(0, 1, "crash 1 1 - tail"))) << job.text();
  EXPECT_FALSE(has(job.out(), "+restart")) << job.text();
}

// Every attempt fails: N restarts, then the code of the last attempt.
TEST_P(LauncherRestart, ExhaustedRestartsEndWithTheFailingCode) {
  TempDir tmp;
  const std::string ckpt = tmp.path + "/ckpt";
  Job job(launcher(n(), {kHelper, "crash", "1", "99", ckpt}, restarts(2)), {tmp.env()});
  EXPECT_EQ(job.wait_exit(60), 128 + SIGKILL) << job.text();
  EXPECT_EQ(count(job.err(), "restarting from checkpoint " + ckpt), 2u) << job.text();
  EXPECT_TRUE(has(job.err(), "(attempt 2 of 2)\n")) << job.text();
  EXPECT_TRUE(has(job.err(), "ucharmrun: rank 1 died (signal 9); not restarting: all 2 restarts used\n"))
      << job.text();
  EXPECT_EQ(count(job.out(), "rank 0 attempt 2 record"), 1u) << job.text();
  EXPECT_FALSE(has(job.out(), "attempt 3")) << job.text();
  EXPECT_TRUE(group_ends(job.pid())) << "ranks left running";
  EXPECT_TRUE(tmp.entries().empty()) << "the launcher's folder was left";
}

INSTANTIATE_TEST_SUITE_P(Pes, LauncherRestart, ::testing::Values(2, 4),
                         [](const auto& info) { return std::to_string(info.param) + "pe"; });

// Ends the program chose are final: every PE ending in order with a code (CkExit(3)),
// an abort (CmiAbort, MPI_Abort), a PE that never joined (a bad +option).
TEST(LauncherRestartRule, ProgramChosenEndsAreNotRestarted) {
  TempDir tmp;
  struct Case {
    std::vector<std::string> cmd;
    int code;
  };
  const std::vector<Case> cases = {
      {{kHelper, "finalize", "all", "3"}, 3},
      {{kHelper, "abort", "1", "6"}, 6},
      {{kProg, "abort"}, 1},
      {{kProg, "hello", "+eager-size=bogus"}, 2},
  };
  for (const Case& c : cases) {
    Result r = run(launcher(4, c.cmd, restarts(3)), 60, {tmp.env()});
    EXPECT_EQ(r.code, c.code) << c.cmd[1] << "\n" << describe(r);
    EXPECT_FALSE(has(r.err, "restart")) << c.cmd[1] << "\n" << describe(r);
    EXPECT_LE(count(r.out, "rank 0 ready"), 1u) << describe(r);
  }
  EXPECT_TRUE(tmp.entries().empty());
}

// Without the option a dying rank ends the job, and the variables are set all the same
// (inherited ones are replaced).
TEST(LauncherRestartRule, VariablesAreSetAndNothingRestartsWithoutTheOption) {
  TempDir tmp;
  Result ok = run(launcher(2, {kHelper, "crash", "0", "0", "-"}), 60,
                  {tmp.env(), "UCHARM_RESTART_ATTEMPT=7", "UCHARM_CHECKPOINT_RECORD=/elsewhere"});
  EXPECT_EQ(ok.code, 0) << describe(ok);
  EXPECT_EQ(count(ok.out, "attempt 0 record " + tmp.path + "/ucharmrun."), 2u) << describe(ok);
  EXPECT_TRUE(has(ok.out, "/checkpoint-record\n")) << describe(ok);
  Result died = run(launcher(2, {kHelper, "crash", "1", "1", tmp.path}), 60, {tmp.env()});
  EXPECT_EQ(died.code, 128 + SIGKILL) << describe(died);
  EXPECT_FALSE(has(died.err, "restart")) << describe(died);
  EXPECT_TRUE(tmp.entries().empty());
}

// A record that is not one absolute path is an error, not a wrong restart.
TEST(LauncherRestartRule, AMalformedRecordStopsTheRestarts) {
  TempDir tmp;
  Result r = run(launcher(2, {kHelper, "crash", "1", "1", "relative/dir"}, restarts(2)), 60,
                 {tmp.env()});
  EXPECT_EQ(r.code, 128 + SIGKILL) << describe(r);
  EXPECT_TRUE(has(r.err, "does not hold one absolute directory path")) << describe(r);
  EXPECT_TRUE(has(r.err, "not restarting")) << describe(r);
  EXPECT_FALSE(has(r.out, "attempt 1")) << describe(r);
}

// --timeout bounds the whole run, restarts included.
TEST(LauncherRestartRule, TimeoutCountsOverEveryAttempt) {
  TempDir tmp;
  Result r = run(launcher(2, {kHelper, "crash", "1", "1000", "-"}, {"--timeout", "3",
                 "--restart-on-failure", "1000"}), 60, {tmp.env()});
  EXPECT_TRUE(r.code == 124 || r.code == 128 + SIGKILL) << describe(r);
  EXPECT_TRUE(has(r.err, "--timeout")) << describe(r);
  EXPECT_FALSE(r.timed_out) << describe(r);
  EXPECT_TRUE(tmp.entries().empty());
}

// Real ucharm PEs (UCX, PMIx fence) start again in the fresh namespace: killpeer's
// barrier is passed, and a PE dies, in both attempts.
TEST(LauncherRestartRule, UcharmPesRunAgainAfterARestart) {
  TempDir tmp;
  Result r = run(launcher(4, {kProg, "killpeer"}, restarts(1)), 90, {tmp.env()});
  EXPECT_EQ(r.code, 128 + SIGKILL) << describe(r);
  EXPECT_EQ(count(r.err, "ucharmrun: rank 3 (PE 3, pid "), 2u) << describe(r);
  EXPECT_TRUE(has(r.err, "ucharmrun: rank 3 died (signal 9); restarting from the beginning "
                         "(no checkpoint recorded) (attempt 1 of 1)\n")) << describe(r);
  EXPECT_TRUE(has(r.err, "not restarting: all 1 restarts used")) << describe(r);
  EXPECT_TRUE(tmp.entries().empty());
}

}  // namespace
