// What ucharmrun gives GPU programs: the local-rank variables they pick a GPU by, and a
// private CUDA MPS control daemon for PEs that share a GPU (--mps). The MPS tests run on
// any machine: they put a stand-in nvidia-cuda-mps-control (fake_mps_control, a daemon on
// a unix socket that records every call) and a one-line nvidia-smi first in PATH, and check
// what the launcher does with them: when it starts a daemon, with which directories, what
// the PEs see, and that the daemon is told to quit however the job ends.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "job.h"

using namespace launcher_test;

namespace {

const std::string kFakeMps = FAKE_MPS_PATH;

// "rank R NAME=VALUE" / "rank R NAME unset" lines of `launcher_helper env NAME...`.
std::string value_of(const std::string& out, int rank, const std::string& name) {
  std::istringstream in(out);
  const std::string set = "rank " + std::to_string(rank) + " " + name + "=";
  const std::string unset = "rank " + std::to_string(rank) + " " + name + " unset";
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(set)) return line.substr(set.size());
    if (line == unset) return "(unset)";
  }
  return "(missing)";
}

std::vector<std::string> env_job(int n, const std::vector<std::string>& names,
                                 std::vector<std::string> opts = {}) {
  std::vector<std::string> cmd = {kHelper, "env"};
  cmd.insert(cmd.end(), names.begin(), names.end());
  return launcher(n, cmd, std::move(opts));
}

// ---- local-rank variables ------------------------------------------------------------

TEST(LauncherLocalRank, EveryPeGetsItsLocalRankUnderEveryLaunchersName) {
  // Not under Slurm here, whatever the machine running the tests is.
  for (const char* v : {"SLURM_LOCALID", "SLURM_PROCID"}) ::unsetenv(v);
  const std::vector<std::string> ranks = {
      "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_RANK",
      "OMPI_COMM_WORLD_NODE_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
      "MV2_COMM_WORLD_RANK", "MVP_COMM_WORLD_LOCAL_RANK", "MVP_COMM_WORLD_RANK", "PMIX_RANK"};
  const std::vector<std::string> sizes = {
      "LOCAL_SIZE", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_SIZE",
      "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_SIZE",
      "MVP_COMM_WORLD_LOCAL_SIZE", "MVP_COMM_WORLD_SIZE"};
  std::vector<std::string> names = ranks;
  names.insert(names.end(), sizes.begin(), sizes.end());
  names.insert(names.end(), {"SLURM_LOCALID", "SLURM_PROCID"});
  // Values inherited by the launcher (it was started by mpirun, say) are not the PEs'.
  Result r = run(env_job(4, names), 60,
                 {"OMPI_COMM_WORLD_LOCAL_RANK=7", "LOCAL_RANK=7", "MPI_LOCALNRANKS=9"});
  ASSERT_EQ(r.code, 0) << describe(r);
  for (int pe = 0; pe < 4; ++pe) {
    for (const auto& n : ranks) EXPECT_EQ(value_of(r.out, pe, n), std::to_string(pe)) << n << describe(r);
    for (const auto& n : sizes) EXPECT_EQ(value_of(r.out, pe, n), "4") << n << describe(r);
    // Slurm's names are not made up outside Slurm.
    EXPECT_EQ(value_of(r.out, pe, "SLURM_LOCALID"), "(unset)") << describe(r);
    EXPECT_EQ(value_of(r.out, pe, "SLURM_PROCID"), "(unset)") << describe(r);
  }
}

// Inside a Slurm step (or batch script) the launcher's own SLURM_LOCALID/SLURM_PROCID
// would send every PE to the same GPU: each PE gets its own instead.
TEST(LauncherLocalRank, InheritedSlurmRanksAreThePes) {
  Result r = run(env_job(4, {"SLURM_LOCALID", "SLURM_PROCID", "LOCAL_RANK"}), 60,
                 {"SLURM_LOCALID=0", "SLURM_PROCID=3"});
  ASSERT_EQ(r.code, 0) << describe(r);
  for (int pe = 0; pe < 4; ++pe) {
    EXPECT_EQ(value_of(r.out, pe, "SLURM_LOCALID"), std::to_string(pe)) << describe(r);
    EXPECT_EQ(value_of(r.out, pe, "SLURM_PROCID"), std::to_string(pe)) << describe(r);
  }
}

// ---- CUDA MPS ---------------------------------------------------------------------------

bool alive(pid_t pid) {
  const std::string stat = ucharm::test::proc_file("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z' &&
         stat[close + 2] != 'X';
}

// GPUs the launcher finds on this machine through the driver (-1: no driver; then it asks
// nvidia-smi, which the tests fake).
int driver_gpus() {
  std::error_code ec;
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    (void)e;
    ++n;
  }
  return ec ? -1 : n;
}

// The stand-in tools in a bin folder put first in PATH, and the record of their calls.
struct FakeTools {
  TempDir dir;
  std::string bin = dir.path + "/bin", record = dir.path + "/record";
  // No daemon answers here: a system-wide MPS on the machine running the tests (whose
  // CUDA_MPS_PIPE_DIRECTORY is the default) does not change what the launcher does.
  std::string no_daemon = dir.path + "/no-daemon";

  // gpus: lines of the fake nvidia-smi -L (-1: no nvidia-smi); control: the MPS tool.
  explicit FakeTools(int gpus, bool control = true) {
    ::mkdir(bin.c_str(), 0755);
    if (control) {
      EXPECT_EQ(::symlink(kFakeMps.c_str(), (bin + "/nvidia-cuda-mps-control").c_str()), 0);
    }
    if (gpus >= 0) {
      std::ofstream smi(bin + "/nvidia-smi");
      smi << "#!/bin/sh\n";
      for (int g = 0; g < gpus; ++g)
        smi << "echo 'GPU " << g << ": Fake GPU (UUID: GPU-fake-" << g << ")'\n";
      smi.close();
      ::chmod((bin + "/nvidia-smi").c_str(), 0755);
    }
  }
  // The environment of a launcher: PATH with the fakes first (only them: `only_fakes`).
  std::vector<std::string> env(const TempDir& tmp, std::vector<std::string> more = {},
                               bool only_fakes = false) const {
    const char* path = std::getenv("PATH");
    std::vector<std::string> e = {
        tmp.env(), "PATH=" + bin + (only_fakes || !path ? "" : std::string(":") + path),
        "FAKE_MPS_RECORD=" + record, "CUDA_MPS_PIPE_DIRECTORY=" + no_daemon};
    e.insert(e.end(), more.begin(), more.end());
    return e;
  }
  std::vector<std::string> lines(const std::string& kind) const {
    std::ifstream f(record);
    std::vector<std::string> out;
    for (std::string line; std::getline(f, line);)
      if (line.starts_with(kind + " ")) out.push_back(line);
    return out;
  }
  std::string all() const {
    std::ifstream f(record);
    return "--- record:\n" + std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
};

std::string field(const std::string& line, const std::string& key) {
  const size_t at = line.find(" " + key + "=");
  if (at == std::string::npos) return "";
  const size_t from = at + key.size() + 2;
  return line.substr(from, line.find(' ', from) - from);
}

// The job's daemon came up once, in a private folder of the launcher's, every PE saw it,
// and it was told to quit and has ended. Returns its pipe directory.
std::string expect_daemon_started_and_quit(const FakeTools& f, const TempDir& tmp,
                                           const std::string& out, int n) {
  const auto starts = f.lines("start"), daemons = f.lines("daemon");
  EXPECT_EQ(starts.size(), 1u) << f.all();
  EXPECT_EQ(daemons.size(), 1u) << f.all();
  if (starts.size() != 1 || daemons.size() != 1) return "";
  const std::string pipe = field(starts[0], "pipe");
  EXPECT_TRUE(pipe.starts_with(tmp.path + "/ucharmrun.") && pipe.ends_with("/mps")) << f.all();
  EXPECT_EQ(field(starts[0], "mode"), "700") << f.all();
  EXPECT_TRUE(field(starts[0], "log").starts_with(tmp.path + "/ucharmrun.")) << f.all();
  for (int pe = 0; pe < n && !out.empty(); ++pe)
    EXPECT_EQ(value_of(out, pe, "CUDA_MPS_PIPE_DIRECTORY"), pipe) << out;
  const pid_t pid = std::atoi(field(daemons[0], "pid").c_str());
  EXPECT_EQ(f.lines("client"), std::vector<std::string>{"client quit pipe=" + pipe}) << f.all();
  EXPECT_EQ(f.lines("quit"), std::vector<std::string>{"quit pid=" + std::to_string(pid) + " pipe=" + pipe})
      << f.all();
  EXPECT_FALSE(pid > 0 && alive(pid)) << "the daemon still runs\n" << f.all();
  if (pid > 0 && alive(pid)) ::kill(pid, SIGKILL);
  EXPECT_TRUE(tmp.entries().empty()) << "the launcher's folder was left";
  return pipe;
}

TEST(LauncherMps, OnWithoutTheToolIsAClearError) {
  TempDir tmp;
  FakeTools f(-1, /*control=*/false);
  Result r = run(env_job(2, {"LOCAL_RANK"}, {"--mps", "on"}), 30, f.env(tmp, {}, /*only_fakes=*/true));
  EXPECT_EQ(r.code, 125) << describe(r);
  EXPECT_TRUE(has(r.err, "ucharmrun: --mps on: nvidia-cuda-mps-control was not found in PATH")) << describe(r);
  EXPECT_FALSE(has(r.out, "LOCAL_RANK")) << "PEs started\n" << describe(r);
  EXPECT_TRUE(tmp.entries().empty());
  // The same through UCHARM_MPS; --mps on the command line wins over it.
  Result e = run(env_job(2, {"LOCAL_RANK"}), 30, f.env(tmp, {"UCHARM_MPS=on"}, true));
  EXPECT_EQ(e.code, 125) << describe(e);
  Result off = run(env_job(2, {"LOCAL_RANK"}, {"--mps=off"}), 30, f.env(tmp, {"UCHARM_MPS=on"}, true));
  EXPECT_EQ(off.code, 0) << describe(off);
}

TEST(LauncherMps, BadModeIsAUsageError) {
  Result r = run({kRun, "-n", "2", "--mps", "sometimes", kHelper, "env"}, 20);
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_TRUE(has(r.err, "ucharmrun: --mps expects auto, on or off, got 'sometimes'")) << describe(r);
  Result e = run({kRun, "-n", "2", kHelper, "env"}, 20, {"UCHARM_MPS=yes"});
  EXPECT_EQ(e.code, 2) << describe(e);
  EXPECT_TRUE(has(e.err, "ucharmrun: UCHARM_MPS expects auto, on or off, got 'yes'")) << describe(e);
}

// auto without a visible GPU, or with a GPU per PE: no daemon and not a word about MPS.
// (Test names say GPU, not Gpu: ctest -R Gpu on the GPU machine selects the GPU tests, and
// the launcher tests are not in its pack.)
TEST(LauncherMps, AutoStaysSilentWithoutSharedGPUs) {
  struct Case {
    int gpus, n;
    std::vector<std::string> env;
  };
  std::vector<Case> cases = {{1, 4, {"CUDA_VISIBLE_DEVICES="}}, {-1, 4, {"CUDA_VISIBLE_DEVICES="}},
                             {1, 1, {}}};
  // A GPU per PE: the fake nvidia-smi's GPUs, or the driver's where there is one.
  if (const int real = driver_gpus(); real < 0) {
    cases.push_back({4, 4, {}});
    cases.push_back({2, 2, {"CUDA_VISIBLE_DEVICES=1,0"}});
  } else if (real >= 2) {
    cases.push_back({real, real, {}});
    cases.push_back({2, 2, {"CUDA_VISIBLE_DEVICES=1,0"}});
  }
  for (const Case& c : cases) {
    TempDir tmp;
    FakeTools f(c.gpus);
    Result r = run(env_job(c.n, {"CUDA_MPS_PIPE_DIRECTORY"}), 60, f.env(tmp, c.env));
    const std::string what = "gpus " + std::to_string(c.gpus) + ", " + std::to_string(c.n) + " PEs\n";
    EXPECT_EQ(r.code, 0) << what << describe(r);
    EXPECT_EQ(r.err, "") << what << describe(r);
    EXPECT_TRUE(f.lines("start").empty()) << what << f.all();
    EXPECT_EQ(value_of(r.out, 0, "CUDA_MPS_PIPE_DIRECTORY"), f.no_daemon) << what << describe(r);
  }
}

// More PEs than GPUs: the launcher starts a daemon of its own and stops it at the end.
TEST(LauncherMps, AutoStartsAPrivateDaemonWhenPesShareAGPU) {
  for (std::vector<std::string> env : {std::vector<std::string>{"CUDA_VISIBLE_DEVICES=0"},
                                       std::vector<std::string>{"CUDA_VISIBLE_DEVICES=0,7,1"}}) {
    TempDir tmp;
    FakeTools f(2);  // 2 GPUs (or the driver's), 1 or 2 visible (7: no device on most
                     // machines; CUDA stops there), fewer than 4 PEs either way
    Result r = run(env_job(4, {"CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY"}), 60, f.env(tmp, env));
    ASSERT_EQ(r.code, 0) << describe(r) << f.all();
    EXPECT_EQ(r.err, "") << describe(r);
    expect_daemon_started_and_quit(f, tmp, r.out, 4);
  }
  // --verbose says what happened.
  TempDir tmp;
  FakeTools f(1);
  Result v = run(env_job(3, {"LOCAL_RANK"}, {"-v"}), 60, f.env(tmp, {"CUDA_VISIBLE_DEVICES=0"}));
  EXPECT_EQ(v.code, 0) << describe(v);
  EXPECT_TRUE(has(v.err, "ucharmrun: CUDA MPS: started a control daemon for this job (3 PEs")) << describe(v);
  EXPECT_TRUE(has(v.err, "ucharmrun: CUDA MPS: the job's control daemon has quit")) << describe(v);
}

// However the job ends, the daemon is told to quit.
TEST(LauncherMps, TheDaemonQuitsWhenARankFailsOrAbortsOnTimeoutAndOnSignals) {
  {
    TempDir tmp;
    FakeTools f(-1);
    Result r = run(launcher(4, {kHelper, "exit", "3", "5"}, {"--mps", "on"}), 60, f.env(tmp));
    EXPECT_EQ(r.code, 5) << describe(r);
    expect_daemon_started_and_quit(f, tmp, "", 4);
  }
  {  // PMIx_Abort, as CmiAbort and MPI_Abort
    TempDir tmp;
    FakeTools f(-1);
    Result r = run(launcher(4, {kHelper, "abort", "1", "3"}, {"--mps", "on"}), 60, f.env(tmp));
    EXPECT_EQ(r.code, 3) << describe(r);
    expect_daemon_started_and_quit(f, tmp, "", 4);
  }
  {
    TempDir tmp;
    FakeTools f(-1);
    Result r = run({kRun, "-n", "2", "--mps", "on", "--timeout", "1", kHelper, "none", "0", "0"}, 60, f.env(tmp));
    EXPECT_EQ(r.code, 124) << describe(r);
    expect_daemon_started_and_quit(f, tmp, "", 2);
  }
  {
    TempDir tmp;
    FakeTools f(-1);
    Job job(launcher(2, {kHelper, "none", "0", "0"}, {"--mps", "on"}), f.env(tmp));
    ASSERT_TRUE(job.wait_for("ready", 2, 60)) << job.text();
    ::kill(job.pid(), SIGTERM);
    EXPECT_EQ(job.wait_exit(30), 128 + SIGTERM) << job.text();
    expect_daemon_started_and_quit(f, tmp, "", 2);
  }
  {  // the program cannot be run: no daemon is started for nothing
    TempDir tmp;
    FakeTools f(-1);
    Result r = run({kRun, "-n", "2", "--mps", "on", "/nonexistent/program"}, 30, f.env(tmp));
    EXPECT_EQ(r.code, 127) << describe(r);
    EXPECT_TRUE(f.lines("start").empty()) << f.all();
  }
}

// A daemon that cannot start: one warning and the job runs without MPS (auto), or a clear
// error before any PE starts (on).
TEST(LauncherMps, AFailedStartWarnsOnceOrFailsWithOn) {
  TempDir tmp;
  FakeTools f(1);
  Result r = run(env_job(2, {"CUDA_MPS_PIPE_DIRECTORY"}), 60, f.env(tmp, {"FAKE_MPS_FAIL=1", "CUDA_VISIBLE_DEVICES=0"}));
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(count(r.err, "ucharmrun: warning: could not start a CUDA MPS control daemon"), 1u) << describe(r);
  EXPECT_TRUE(has(r.err, "fake: An instance of this daemon is already running")) << describe(r);
  EXPECT_EQ(count(r.err, "\n"), 1u) << describe(r);
  EXPECT_EQ(value_of(r.out, 1, "CUDA_MPS_PIPE_DIRECTORY"), f.no_daemon) << describe(r);
  EXPECT_TRUE(tmp.entries().empty());

  Result on = run(env_job(2, {"LOCAL_RANK"}, {"--mps", "on"}), 60, f.env(tmp, {"FAKE_MPS_FAIL=1", "CUDA_VISIBLE_DEVICES=0"}));
  EXPECT_EQ(on.code, 125) << describe(on);
  EXPECT_TRUE(has(on.err, "ucharmrun: --mps on: could not start the CUDA MPS control daemon: '")) << describe(on);
  EXPECT_TRUE(has(on.err, "-d' exited with code 1: fake: An instance of this daemon is already running"))
      << describe(on);
  EXPECT_FALSE(has(on.out, "LOCAL_RANK")) << describe(on);
  EXPECT_TRUE(tmp.entries().empty());
}

// An MPS daemon that already answers where the PEs would look serves them: no second one.
TEST(LauncherMps, AutoUsesADaemonThatAlreadyAnswers) {
  TempDir tmp;
  FakeTools f(1);
  const std::string own = f.dir.path + "/own";
  ASSERT_EQ(::mkdir(own.c_str(), 0700), 0);
  const std::vector<std::string> at_own = {"CUDA_MPS_PIPE_DIRECTORY=" + own, "FAKE_MPS_RECORD=" + f.record};
  ASSERT_EQ(run({kFakeMps, "-d"}, 10, at_own).code, 0);
  for (int i = 0; i < 6000 && f.lines("daemon").empty(); ++i) ::usleep(10000);  // a minute at most
  ASSERT_EQ(f.lines("daemon").size(), 1u) << f.all();
  Result r = run(env_job(4, {"CUDA_MPS_PIPE_DIRECTORY"}), 60, f.env(tmp, {"CUDA_MPS_PIPE_DIRECTORY=" + own, "CUDA_VISIBLE_DEVICES=0"}));
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.err, "") << describe(r);
  EXPECT_EQ(f.lines("start").size(), 1u) << "a second daemon\n" << f.all();
  EXPECT_TRUE(f.lines("quit").empty()) << "the launcher stopped a daemon it did not start\n" << f.all();
  for (int pe = 0; pe < 4; ++pe) EXPECT_EQ(value_of(r.out, pe, "CUDA_MPS_PIPE_DIRECTORY"), own) << describe(r);
  EXPECT_EQ(run({"/bin/sh", "-c", "echo quit | " + kFakeMps}, 10, at_own).code, 0);
  for (int i = 0; i < 6000 && f.lines("quit").empty(); ++i) ::usleep(10000);  // a minute at most
  EXPECT_EQ(f.lines("quit").size(), 1u) << f.all();
}

// kill -9 of the launcher leaves its daemon running (it is in a session of its own); the
// next launcher with the same TMPDIR stops it along with the stale folder.
TEST(LauncherMps, TheNextLauncherStopsTheDaemonOfAKilledOne) {
  TempDir tmp;
  FakeTools f(-1);
  pid_t daemon = 0;
  {
    Job job(launcher(2, {kHelper, "none", "0", "0"}, {"--mps", "on"}), f.env(tmp));
    ASSERT_TRUE(job.wait_for("ready", 2, 60)) << job.text();
    ASSERT_EQ(f.lines("daemon").size(), 1u) << f.all();
    daemon = std::atoi(field(f.lines("daemon")[0], "pid").c_str());
    ::kill(job.pid(), SIGKILL);
    EXPECT_EQ(job.wait_exit(30), 128 + SIGKILL);
    EXPECT_TRUE(group_ends(job.pid())) << "ranks outlived a killed launcher";
  }
  ASSERT_GT(daemon, 0);
  EXPECT_TRUE(alive(daemon));
  EXPECT_TRUE(f.lines("quit").empty()) << f.all();
  const std::string pipe = field(f.lines("start")[0], "pipe");
  Result next = run(env_job(1, {"LOCAL_RANK"}, {"--mps", "off"}), 60, f.env(tmp));
  EXPECT_EQ(next.code, 0) << describe(next);
  EXPECT_EQ(f.lines("quit"), std::vector<std::string>{"quit pid=" + std::to_string(daemon) + " pipe=" + pipe})
      << f.all();
  for (int i = 0; i < 6000 && alive(daemon); ++i) ::usleep(10000);  // a minute at most
  EXPECT_FALSE(alive(daemon));
  if (alive(daemon)) ::kill(daemon, SIGKILL);
  EXPECT_TRUE(tmp.entries().empty()) << "the stale folder is still there";
}

}  // namespace
