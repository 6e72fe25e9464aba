// ucharmrun itself: command-line errors, exit codes, exec failures, signals to the
// launcher, kill -9 of the launcher and the cleanup of its folder, failing ranks.
// Jobs run in a process group of their own and with a private TMPDIR, so the tests can
// check that no process of the job is left and that the launcher's folder is gone.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "job.h"

using namespace launcher_test;

namespace {

// ---- command line and exit codes --------------------------------------------------

TEST(LauncherCommandLine, BadArgumentsNameTheProblemAndExit2) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"-n", "abc", kProg}, "-n expects a positive integer, got 'abc'"},
      {{"--np", "abc", kProg}, "--np expects a positive integer, got 'abc'"},
      {{"--np=-4", kProg}, "--np expects a positive integer, got '-4'"},
      {{"-n0", kProg}, "-n expects a positive integer, got '0'"},
      {{"-n", "2.5", kProg}, "-n expects a positive integer, got '2.5'"},
      {{"-n", "5000", kProg}, "-n expects at most 4096 PEs, got '5000'"},
      {{"-n", "18446744073709551620", kProg}, "-n expects at most 4096 PEs"},
      {{"-n"}, "-n needs a value"},
      {{"--bogus"}, "unknown option '--bogus'"},
      {{"-n", "2", "--bogus", kProg}, "unknown option '--bogus'"},
      {{"-n", "2", "-x", kProg}, "unknown option '-x'"},
      {{"-n", "2", "--timeout", "xyz", kProg}, "--timeout expects a number of seconds from 0 to 1000000000, got 'xyz'"},
      {{"-n", "2", "--timeout=-1", kProg}, "--timeout expects a number of seconds from 0 to 1000000000, got '-1'"},
      {{"-n", "2", "--timeout", "1e99", kProg}, "--timeout expects a number of seconds from 0 to 1000000000, got '1e99'"},
      {{"-n", "2", "--timeout", "99999999999", kProg}, "--timeout expects a number of seconds from 0 to 1000000000, got '99999999999'"},
      {{"-n", "2", "--timeout"}, "--timeout needs a value"},
      {{"-n", "2", "--restart-on-failure", "x", kProg}, "--restart-on-failure expects a number of restarts from 0 to 1000, got 'x'"},
      {{"-n", "2", "--restart-on-failure=1001", kProg}, "--restart-on-failure expects a number of restarts from 0 to 1000, got '1001'"},
      {{"-n", "2", "--restart-on-failure"}, "--restart-on-failure needs a value"},
      {{"-n", "2", "--mps", "maybe", kProg}, "--mps expects auto, on or off, got 'maybe'"},
      {{"-n", "2", "--mps"}, "--mps needs a value"},
      {{"-n", "2", "--prefix=yes", kProg}, "--prefix takes no value"},
      {{"-n", "2", "--no-bind=1", kProg}, "--no-bind takes no value"},
      {{"-n", "2", "--verbose=1", kProg}, "--verbose takes no value"},
      {{"-n", "2"}, "no program given"},
      {{kProg, "hello"}, "--np is required"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {kRun};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    Result r = run(argv, 20);
    std::string what;
    for (const auto& a : c.args) what += a + " ";
    EXPECT_EQ(r.code, 2) << what << describe(r);
    EXPECT_TRUE(has(r.err, "ucharmrun: " + c.message)) << what << describe(r);
    EXPECT_TRUE(has(r.err, "Run 'ucharmrun --help'")) << what << describe(r);
    EXPECT_FALSE(has(r.out + r.err, "hello from")) << what << describe(r);
  }
}

TEST(LauncherCommandLine, HelpListsOptionsExitCodesAndSignals) {
  Result r = run({kRun, "--help"}, 20);
  EXPECT_EQ(r.code, 0) << describe(r);
  for (const char* s : {"--np", "--prefix", "--no-bind", "--verbose", "--timeout", "124", "125",
                        "126", "127", "128+S", "130", "143", "SIGKILL", "ucharmrun.PID",
                        "--restart-on-failure", "UCHARM_CHECKPOINT_RECORD", "UCHARM_RESTART_ATTEMPT",
                        "+restart DIR", "--mps auto|on|off", "UCHARM_MPS", "LOCAL_RANK",
                        "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "CUDA_MPS_PIPE_DIRECTORY"})
    EXPECT_TRUE(has(r.out, s)) << s << "\n" << describe(r);
}

TEST(LauncherCommandLine, OptionFormsAndDoubleDash) {
  Result r = run({kRun, "--np=2", "-p", "--timeout=60", "--", kProg, "hello"}, 60);
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "[1] hello from PE 1 of 2")) << describe(r);
  Result s = run({kRun, "-n2", "--timeout", "60.5", kProg, "hello"}, 60);
  EXPECT_EQ(s.code, 0) << describe(s);
  EXPECT_TRUE(has(s.out, "hello from PE 1 of 2")) << describe(s);
}

// A runtime +option that overflows reaches the ranks, which reject it (exit 2).
TEST(LauncherCommandLine, OverflowingRuntimeOptionIsRejected) {
  Result r = run(launcher(4, {kProg, "hello", "+eager-size=18014398509482016k"}), 60);
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_TRUE(has(r.err, "bad value '18014398509482016k' for 'eager-size' (too large)")) << describe(r);
  EXPECT_FALSE(has(r.out, "hello from")) << describe(r);
}

// ---- the program cannot be run ---------------------------------------------------

TEST(LauncherExec, MissingOrUnrunnableProgramsAreReported) {
  TempDir tmp;
  Result missing = run({kRun, "-n", "4", "/nonexistent/program"}, 20, {tmp.env()});
  EXPECT_EQ(missing.code, 127) << describe(missing);
  EXPECT_TRUE(has(missing.err, "ucharmrun: cannot run '/nonexistent/program': No such file or directory"))
      << describe(missing);
  Result notinpath = run({kRun, "-n", "4", "ucharm-no-such-program"}, 20, {tmp.env()});
  EXPECT_EQ(notinpath.code, 127) << describe(notinpath);
  EXPECT_TRUE(has(notinpath.err, "cannot run 'ucharm-no-such-program': not found in PATH"))
      << describe(notinpath);
  Result dir = run({kRun, "-n", "4", tmp.path}, 20, {tmp.env()});
  EXPECT_EQ(dir.code, 126) << describe(dir);
  EXPECT_TRUE(has(dir.err, "Is a directory")) << describe(dir);
  const std::string plain = tmp.path + "/plain";
  std::ofstream(plain) << "data\n";
  ::chmod(plain.c_str(), 0644);
  Result noexec = run({kRun, "-n", "4", plain}, 20, {tmp.env()});
  EXPECT_EQ(noexec.code, 126) << describe(noexec);
  EXPECT_TRUE(has(noexec.err, "Permission denied")) << describe(noexec);
  EXPECT_TRUE(tmp.entries().size() == 1) << "the launcher left files in TMPDIR";
}

// Executable but not a program (no #! line): exec itself fails in the child, which
// reports errno to the launcher; no shell is tried in its place.
TEST(LauncherExec, FailedExecInTheChildIsReportedClearly) {
  TempDir tmp;
  const std::string script = tmp.path + "/noshebang";
  std::ofstream(script) << "echo ran by a shell\nexit 7\n";
  ::chmod(script.c_str(), 0755);
  for (int n : {4, 8}) {
    Result r = run({kRun, "-n", std::to_string(n), script}, 30, {tmp.env()});
    EXPECT_EQ(r.code, 126) << describe(r);
    EXPECT_TRUE(has(r.err, "ucharmrun: cannot run '" + script + "': exec of " + script +
                               " failed: Exec format error")) << describe(r);
    EXPECT_FALSE(has(r.out, "ran by a shell")) << describe(r);
    EXPECT_EQ(tmp.entries().size(), 1u) << "the launcher's folder was left";
  }
}

// ---- signals to the launcher -----------------------------------------------------

struct SignalCase {
  int sig;
  int n;
};

class LauncherSignal : public ::testing::TestWithParam<SignalCase> {};

TEST_P(LauncherSignal, StopsEveryRankRemovesItsFolderAndExits128PlusSignal) {
  const auto [sig, n] = GetParam();
  TempDir tmp;
  Job job(launcher(n, {kProg, "wait"}), {tmp.env()});
  ASSERT_TRUE(job.wait_for("waiting", 1, 90)) << job.text();
  ASSERT_TRUE(has_folder_of(tmp, job.pid()));
  EXPECT_GE(live_in_group(job.pid()).size(), static_cast<size_t>(n + 1));
  ::kill(job.pid(), sig);
  const int code = job.wait_exit(30);
  ASSERT_NE(code, -1) << "the launcher did not end\n" << job.text();
  EXPECT_EQ(code, 128 + sig) << job.text();
  EXPECT_TRUE(has(job.err(), std::string("ucharmrun: got SIG") + sigabbrev_np(sig) +
                                 "; stopping the job")) << job.text();
  EXPECT_TRUE(group_ends(job.pid())) << "ranks left running";
  EXPECT_TRUE(tmp.entries().empty()) << "the launcher's folder was left";
}

INSTANTIATE_TEST_SUITE_P(
    Signals, LauncherSignal,
    ::testing::Values(SignalCase{SIGINT, 4}, SignalCase{SIGTERM, 4}, SignalCase{SIGHUP, 4},
                      SignalCase{SIGINT, 8}, SignalCase{SIGTERM, 8}),
    [](const auto& info) {
      return std::string(sigabbrev_np(info.param.sig)) + "_" + std::to_string(info.param.n) + "pe";
    });

// Ranks that ignore SIGTERM are killed after the grace period.
TEST(LauncherSignals, RanksIgnoringSigtermAreKilled) {
  TempDir tmp;
  Job job(launcher(4, {kHelper, "none", "0", "0", "stubborn"}), {tmp.env()});
  ASSERT_TRUE(job.wait_for("ready", 4, 90)) << job.text();
  ::kill(job.pid(), SIGTERM);
  const int code = job.wait_exit(30);
  EXPECT_EQ(code, 128 + SIGTERM) << job.text();
  EXPECT_TRUE(group_ends(job.pid())) << "ranks left running";
  EXPECT_TRUE(tmp.entries().empty()) << "the launcher's folder was left";
}

// ---- kill -9 of the launcher ------------------------------------------------------

class LauncherKilled : public ::testing::TestWithParam<int> {};

TEST_P(LauncherKilled, RanksDieAndTheNextLauncherRemovesTheStaleFolder) {
  const int n = GetParam();
  TempDir tmp;
  pid_t killed = 0;
  {
    Job job(launcher(n, {kProg, "wait"}), {tmp.env()});
    ASSERT_TRUE(job.wait_for("waiting", 1, 90)) << job.text();
    killed = job.pid();
    ::kill(killed, SIGKILL);
    EXPECT_EQ(job.wait_exit(30), 128 + SIGKILL);
    EXPECT_TRUE(group_ends(killed)) << "ranks outlived a killed launcher";
  }
  ASSERT_TRUE(has_folder_of(tmp, killed)) << "nothing stale to clean up";

  // Folders the next launcher must leave alone: one whose owner pid lives (ours), and one
  // whose owner pid is gone but whose lock is held (a live launcher in another pid
  // namespace would look like that).
  const std::string live = tmp.path + "/ucharmrun." + std::to_string(::getpid()) + ".abcdef";
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  const std::string locked = tmp.path + "/ucharmrun." + std::to_string(gone) + ".ghijkl";
  ASSERT_EQ(::mkdir(live.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(locked.c_str(), 0700), 0);
  int lock_fd = ::open(locked.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(lock_fd, 0);
  ASSERT_EQ(::flock(lock_fd, LOCK_EX), 0);

  Result next = run(launcher(2, {kProg, "hello"}), 60, {tmp.env()});
  EXPECT_EQ(next.code, 0) << describe(next);
  EXPECT_FALSE(has_folder_of(tmp, killed)) << "the stale folder is still there";
  EXPECT_TRUE(fs::exists(live)) << "removed the folder of a live pid";
  EXPECT_TRUE(fs::exists(locked)) << "removed a locked folder";
  ::close(lock_fd);
  EXPECT_EQ(tmp.entries().size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Pes, LauncherKilled, ::testing::Values(4, 8),
                         [](const auto& info) { return std::to_string(info.param) + "pe"; });

// ---- failing ranks ------------------------------------------------------------------

class LauncherFailure : public ::testing::TestWithParam<int> {
 protected:
  int n() const { return GetParam(); }
  std::string last() const { return std::to_string(n() - 1); }
};

// A rank exits with a code while the others ignore SIGTERM: the job still ends promptly
// with that code, and names the rank.
TEST_P(LauncherFailure, ExitCodeOfTheFailingRankEndsTheJob) {
  TempDir tmp;
  Job job(launcher(n(), {kHelper, "exit", last(), "5", "stubborn"}), {tmp.env()});
  const int code = job.wait_exit(60);
  EXPECT_EQ(code, 5) << job.text();
  EXPECT_TRUE(has(job.err(), "ucharmrun: rank " + last() + " (PE " + last() + ", pid ")) << job.text();
  EXPECT_TRUE(has(job.err(), "exited with code 5; stopping the other")) << job.text();
  EXPECT_TRUE(group_ends(job.pid())) << "ranks left running";
  EXPECT_TRUE(tmp.entries().empty());
}

// Joining the job and leaving with code 0 without finishing it is a failure (exit 1).
TEST_P(LauncherFailure, LeavingWithCode0WithoutFinishingFailsTheJob) {
  TempDir tmp;
  Job job(launcher(n(), {kHelper, "exit", last(), "0"}), {tmp.env()});
  const int code = job.wait_exit(60);
  EXPECT_EQ(code, 1) << job.text();
  EXPECT_TRUE(has(job.err(), "exited with code 0 without finishing the job")) << job.text();
  EXPECT_TRUE(group_ends(job.pid())) << "ranks left running";
}

// A rank that ended in order with a non-zero code while the others run on: they are
// stopped after a grace period and the job exits with that code.
TEST_P(LauncherFailure, OrderlyEndWithACodeStopsRanksThatRunOn) {
  TempDir tmp;
  Job job(launcher(n(), {kHelper, "finalize", last(), "4"}), {tmp.env()});
  const int code = job.wait_exit(60);
  EXPECT_EQ(code, 4) << job.text();
  EXPECT_TRUE(has(job.err(), "rank " + last() + " (PE " + last() + ") ended the job with code 4"))
      << job.text();
  EXPECT_TRUE(group_ends(job.pid())) << "ranks left running";
}

// A ucharm rank killed by a signal: 128+signal, every other PE reports it.
TEST_P(LauncherFailure, RankKilledBySignal) {
  TempDir tmp;
  Job job(launcher(n(), {kProg, "killpeer"}), {tmp.env()});
  const int code = job.wait_exit(60);
  EXPECT_EQ(code, 128 + SIGKILL) << job.text();
  EXPECT_TRUE(has(job.err(), "ucharmrun: rank " + last() + " (PE " + last() + ", pid ")) << job.text();
  EXPECT_TRUE(has(job.err(), "was killed by signal 9")) << job.text();
  EXPECT_TRUE(group_ends(job.pid())) << "ranks left running";
  EXPECT_TRUE(tmp.entries().empty());
}

INSTANTIATE_TEST_SUITE_P(Pes, LauncherFailure, ::testing::Values(4, 8),
                         [](const auto& info) { return std::to_string(info.param) + "pe"; });

}  // namespace
