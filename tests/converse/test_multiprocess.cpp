// Real multi-process runs of converse_testprog through ucharmrun at 1, 2 and 4 PEs,
// plus start-up without a launcher and under OpenMPI's mpirun.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#include "../common/proc.h"
#include "../common/run.h"

using ucharm::test::describe;
using ucharm::test::Result;
using ucharm::test::run;

namespace {

const std::string kRun = UCHARMRUN_PATH;
const std::string kProg = TESTPROG_PATH;

Result job(int n, std::vector<std::string> args, double limit = 60,
           std::vector<std::string> launcher_opts = {}) {
  std::vector<std::string> argv = {kRun, "-n", std::to_string(n), "--timeout", "50"};
  argv.insert(argv.end(), launcher_opts.begin(), launcher_opts.end());
  argv.push_back(kProg);
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, limit);
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// Any process whose command line contains `token` (an orphan left by a job).
bool process_with_token(const std::string& token) {
  DIR* d = ::opendir("/proc");
  bool found = false;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    if (has(ucharm::test::proc_file(std::string("/proc/") + e->d_name + "/cmdline"), token) && std::to_string(::getpid()) != e->d_name) found = true;
  }
  ::closedir(d);
  return found;
}

std::string unique_token() {
  std::random_device rd;
  return "tok" + std::to_string(rd()) + std::to_string(::getpid());
}

// A mode that must end with exit code 0 and print "<marker>" (e.g. "storm ok").
void expect_ok(const Result& r, const std::string& marker) {
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, marker)) << describe(r);
}

class ConverseJob : public ::testing::TestWithParam<int> {
 protected:
  int n() const { return GetParam(); }
};

TEST_P(ConverseJob, PingPongEverySizeWithPayloadChecks) {
  Result r = job(n(), {"pingpong"});
  expect_ok(r, "pingpong ok");
  // Clean shutdown after every size: UCX prints nothing (no warning, error or assertion).
  EXPECT_FALSE(has(r.err, "UCX")) << describe(r);
}

TEST_P(ConverseJob, AllToAllStormLosesNothing) {
  Result r = job(n(), {"storm"});
  expect_ok(r, "storm ok");
  EXPECT_FALSE(has(r.err, "UCX")) << describe(r);
}

TEST_P(ConverseJob, StormWithFewPrepostedReceivesAndSmallEagerSize) {
  Result r = job(n(), {"storm", "+prepost=4", "+eager-size=1k"});
  expect_ok(r, "storm ok");
}

TEST_P(ConverseJob, BroadcastsReachEveryPeOnce) {
  Result r = job(n(), {"bcast"});
  expect_ok(r, "bcast ok");
}

TEST_P(ConverseJob, BarrierHoldsEveryPe) {
  std::string path = "/tmp/ucharm-barrier-" + unique_token();
  Result r = job(n(), {"barrier", path});
  expect_ok(r, "barrier ok");
}

TEST_P(ConverseJob, ThreadSuspendedUntilAMessageAwakensIt) {
  Result r = job(n(), {"thread"});
  expect_ok(r, "thread ok");
}

TEST_P(ConverseJob, ThreadTakesSchedulerStepsWhileItWaits) {
  Result r = job(n(), {"threadstep"});
  expect_ok(r, "threadstep ok");
}

TEST_P(ConverseJob, WorkFromOtherThreadsRunsOnThePeInOrder) {
  Result r = job(n(), {"foreign"});
  expect_ok(r, "foreign ok");
}

TEST_P(ConverseJob, AsyncSendCompletesAndReleasesTheBuffer) {
  Result r = job(n(), {"async"});
  expect_ok(r, "async ok");
}

TEST_P(ConverseJob, SchedulerRunsCountPollAndUntil) {
  Result r = job(n(), {"sched"});
  expect_ok(r, "sched ok");
}

TEST_P(ConverseJob, DeviceBuffersOfEverySizeArriveIntact) {
  Result r = job(n(), {"device"});
  expect_ok(r, "device ok");
  EXPECT_FALSE(has(r.err, "UCX")) << describe(r);
}

TEST_P(ConverseJob, ChannelsBetweenEveryPairInBothArrivalOrders) {
  Result r = job(n(), {"channel"});
  expect_ok(r, "channel ok");
  EXPECT_FALSE(has(r.err, "UCX")) << describe(r);
}

TEST_P(ConverseJob, ExitCodeFromAnyPeReachesTheLauncher) {
  Result r = job(n(), {"exitcode"});
  EXPECT_EQ(r.code, 3) << describe(r);
  EXPECT_FALSE(has(r.err, "died")) << describe(r);
}

TEST_P(ConverseJob, AbortEndsEveryPeWithItsMessage) {
  Result r = job(n(), {"abort"}, 30);
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_FALSE(r.timed_out) << describe(r);
  const int last = n() - 1;
  EXPECT_TRUE(has(r.err, "PE " + std::to_string(last) + ": abort: test abort requested")) << describe(r);
  for (int pe = 0; pe < last; ++pe)
    EXPECT_TRUE(has(r.err, "PE " + std::to_string(pe) + ": PE " + std::to_string(last) + " died"))
        << describe(r);
}

TEST_P(ConverseJob, KilledPeerIsReportedByEveryOtherPe) {
  if (n() == 1) GTEST_SKIP() << "needs a peer to kill";
  std::string token = unique_token();
  Result r = job(n(), {"killpeer", token}, 30);
  const int last = n() - 1;
  EXPECT_EQ(r.code, 128 + 9) << describe(r);
  EXPECT_FALSE(r.timed_out) << describe(r);
  EXPECT_TRUE(has(r.err, "rank " + std::to_string(last))) << describe(r);
  EXPECT_TRUE(has(r.err, "killed by signal 9")) << describe(r);
  for (int pe = 0; pe < last; ++pe)
    EXPECT_TRUE(has(r.err, "PE " + std::to_string(pe) + ": PE " + std::to_string(last) + " died"))
        << describe(r);
  EXPECT_FALSE(process_with_token(token)) << "orphan processes left";
}

// Per sender, messages arrive in send order at every size (a 3.5 MiB message used to be
// overtaken by the small ones sent after it).
TEST_P(ConverseJob, MessagesBetweenTwoPesArriveInSendOrderAtEverySize) {
  Result r = job(n(), {"order"}, 90);
  expect_ok(r, "order ok");
  Result small = job(n(), {"order", "+eager-size=1k"}, 90);
  expect_ok(small, "order ok");
  // Both large-message protocols at every PE count (the default picks one by whether the
  // host is oversubscribed): many small fragments with a short last one, and one
  // rendezvous per message.
  Result pieces = job(n(), {"order", "+large-fragment=5k"}, 90);
  expect_ok(pieces, "order ok");
  Result whole = job(n(), {"order", "+large-fragment=0"}, 90);
  expect_ok(whole, "order ok");
}

// CmiSyncVectorSend (the two-part sends go straight from the caller's buffers where the
// link allows) keeps the link's order with the other sends, at every size and with each
// large-message protocol, and the parts may be reused as soon as it returns.
TEST_P(ConverseJob, VectorSendsKeepOrderAndTheirBuffersAreFreeOnReturn) {
  for (const char* opt : {"", "+eager-size=1k", "+large-fragment=5k", "+large-fragment=0"}) {
    std::vector<std::string> args = {"order", "vector"};
    if (*opt) args.emplace_back(opt);
    Result r = job(n(), args, 90);
    expect_ok(r, "order ok: 240 messages from each PE to each PE in order (vector sends)");
  }
}

// An idle receiver's placement is asked about every large two-part message, and the data
// of those it places lands there, intact and flagged (fragments or not).
TEST_P(ConverseJob, PlacementTakesLargeMessagesIntoItsBuffers) {
  for (const char* opt : {"", "+large-fragment=5k", "+large-fragment=0"}) {
    std::vector<std::string> args = {"place"};
    if (*opt) args.emplace_back(opt);
    Result r = job(n(), args, 60);
    expect_ok(r, "place ok");
    if (n() > 1) EXPECT_NE(r.out.find("placed 8 of 16 messages"), std::string::npos) << describe(r);
  }
}

// With placements registered in the flood of the order mode, every other large two-part
// message may be placed (where the receiver's queue is empty): order and data hold either way.
TEST_P(ConverseJob, PlacedMessagesKeepOrderAndTheirDataLandsInThePlace) {
  for (const char* opt : {"", "+eager-size=1k", "+large-fragment=5k"}) {
    std::vector<std::string> args = {"order", "vector", "place"};
    if (*opt) args.emplace_back(opt);
    Result r = job(n(), args, 90);
    expect_ok(r, "order ok: 240 messages from each PE to each PE in order (vector sends)");
  }
}

// Peak resident memory of the largest PE, from the flood mode's report.
long flood_peak_mib(const Result& r) {
  auto at = r.out.find("peak resident memory of a PE ");
  return at == std::string::npos ? -1 : std::stol(r.out.substr(at + 29));
}

// The bound the flood tests hold a PE to. AddressSanitizer keeps freed memory in
// quarantine (256 MiB per process by default) and adds its shadow: no bound there.
#if defined(__SANITIZE_ADDRESS__)
constexpr long kFloodBoundMib = 1L << 30;
#else
constexpr long kFloodBoundMib = 400;
#endif

// Random sizes 0 B - 4 MiB to random PEs as fast as the senders can: everything arrives
// in order and intact, and memory stays bounded (docs/architecture.md, flow control).
TEST_P(ConverseJob, FloodOfLargeMessagesStaysBoundedInMemory) {
  Result r = job(n(), {"flood"}, 110);
  expect_ok(r, "flood ok");
  EXPECT_LT(flood_peak_mib(r), kFloodBoundMib) << describe(r);
}

// Every PE floods PE 0, which takes half a millisecond per message: the senders are held
// back (without flow control PE 0 queued everything: ~1.6 GB at 16 PEs).
TEST_P(ConverseJob, SlowReceiverHoldsItsSendersBack) {
  if (n() == 1) GTEST_SKIP() << "needs senders";
  Result r = job(n(), {"flood", "slow"}, 110);
  expect_ok(r, "flood ok");
  EXPECT_LT(flood_peak_mib(r), kFloodBoundMib) << describe(r);
}

// Broadcasts sent at once from every PE while PE 1 (an inner node of the broadcast tree
// from PE 0 at 6 PEs and more) is held 0.7 s in the start-up fence by an LD_PRELOAD shim.
TEST_P(ConverseJob, BroadcastsSentWhileAPeIsStillStartingReachEveryPe) {
  if (n() == 1) GTEST_SKIP() << "no fence to delay";
  std::vector<std::string> env = {std::string("LD_PRELOAD=") + FENCE_DELAY_PATH, "UCHARM_TEST_FENCE_DELAY_RANK=1"};
#if defined(__SANITIZE_ADDRESS__)
  // The shim is preloaded ahead of the (linked) ASan runtime, which ASan refuses by default.
  const char* asan = std::getenv("ASAN_OPTIONS");
  env.push_back(std::string("ASAN_OPTIONS=") + (asan ? std::string(asan) + ":" : "") + "verify_asan_link_order=0");
#endif
  Result r = run({kRun, "-n", std::to_string(n()), "--timeout", "50", kProg, "startbcast"}, 60, env);
  expect_ok(r, "startbcast ok");
}

// exit(n) from one PE (the C library's, as MPI programs call it) ends the job with n.
TEST_P(ConverseJob, ExitFromOnePeEndsTheJobWithItsCode) {
  std::string token = unique_token();
  Result r = job(n(), {"exitcall", "7", token}, 30);
  EXPECT_EQ(r.code, 7) << describe(r);
  EXPECT_FALSE(r.timed_out) << describe(r);
  Result z = job(n(), {"exitcall", "0", token}, 30);  // exit(0) ends the job too, with 0
  EXPECT_EQ(z.code, 0) << describe(z);
  EXPECT_FALSE(z.timed_out) << describe(z);
  EXPECT_FALSE(process_with_token(token)) << "orphan processes left";
}

TEST_P(ConverseJob, UncaughtExceptionEndsTheJobNamingIt) {
  Result r = job(n(), {"throw"}, 30);
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_FALSE(r.timed_out) << describe(r);
  EXPECT_TRUE(has(r.err, "uncaught exception: test exception from an entry point")) << describe(r);
}

// CmiExit while every PE floods the others with up to 4 MiB messages: prompt, quiet, code 0.
TEST_P(ConverseJob, ExitWithTrafficInFlightIsPromptAndQuiet) {
  if (n() == 1) GTEST_SKIP() << "no traffic at 1 PE";
  Result r = job(n(), {"exitstorm"}, 60);
  expect_ok(r, "exiting with traffic in flight");
  EXPECT_FALSE(r.timed_out) << describe(r);
  EXPECT_FALSE(has(r.err, "UCX")) << describe(r);
}

INSTANTIATE_TEST_SUITE_P(Pes, ConverseJob, ::testing::Values(1, 2, 4, 8, 16),
                         [](const auto& info) { return std::to_string(info.param) + "pe"; });

#ifdef UCHARM_TEST_CUDA
#include <cuda_runtime.h>
#endif

int cuda_devices() {
#ifdef UCHARM_TEST_CUDA
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
#else
  return 0;
#endif
}

// The same transfers with GPU memory: every buffer from cudaMalloc, one GPU per PE.
TEST(ConverseGpu, DeviceChannelAndWrapWithCudaBuffers) {
  if (cuda_devices() == 0) GTEST_SKIP() << "no CUDA device visible (or a build without CUDA)";
  for (int n : {1, 2}) {
    expect_ok(job(n, {"device", "cuda"}), "device ok");
    expect_ok(job(n, {"channel", "cuda"}), "channel ok");
  }
  expect_ok(job(2, {"wrap", "cuda"}), "wrap ok");
}

TEST(ConverseGpu, OperationsNamingAStreamWaitForItsWork) {
  if (cuda_devices() == 0) GTEST_SKIP() << "no CUDA device visible (or a build without CUDA)";
  for (int n : {1, 2}) expect_ok(job(n, {"stream"}), "stream ok");
}

TEST(ConverseGpu, MemoryTypeCacheStaysCorrectAfterFree) {
  if (cuda_devices() == 0) GTEST_SKIP() << "no CUDA device visible (or a build without CUDA)";
  expect_ok(job(1, {"memtype"}), "memtype ok");
}

TEST(Converse, DeviceSendsWhoseCallbackRunsInsideTheSendComplete) {
  // Device buffers are sent with NO_IMM_CMPL, and UCX may then run the callback inside
  // ucp_tag_send_nbx. This switch sends host buffers the same way, so the path that hung
  // with CUDA buffers on the GPU machine is covered here.
  for (int n : {1, 2, 4}) {
    for (const char* mode : {"device", "channel"}) {
      Result r = run({kRun, "-n", std::to_string(n), "--timeout", "50", kProg, mode}, 60,
                     {"UCHARM_TEST_SEND_CALLBACKS=1"});
      expect_ok(r, std::string(mode) + " ok");
    }
  }
}

TEST(Converse, TagCountersWrapWithoutMismatch) {
  // 200 steps: 100 channel and 100 GPU Messaging transfers. In the narrow test build
  // (4-bit counters) each counter wraps six times.
  for (const char* prog : {TESTPROG_PATH, NARROW_TESTPROG_PATH}) {
    for (int n : {2, 4}) {
      Result r = run({kRun, "-n", std::to_string(n), "--timeout", "50", prog, "wrap", "200"}, 60);
      expect_ok(r, "wrap ok: 200 steps");
    }
  }
}

TEST(Converse, TooSmallReceiveBufferIsReportedWithBothSizes) {
  Result r = job(2, {"truncate"}, 30);
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "the receive buffer holds 100 bytes, the incoming data is 1000 bytes")) << describe(r);
}

TEST(Converse, HotPathAllocatesNothingFromTheHeap) {
  for (int n : {1, 2, 4}) {
    Result r = run({kRun, "-n", std::to_string(n), "--timeout", "50", ALLOCPROG_PATH}, 60);
    expect_ok(r, "alloc ok");
  }
}

TEST(Converse, QueueOrderThroughTheScheduler) {
  Result r = job(1, {"queue"});
  expect_ok(r, "queue ok");
}

// The idle PEs' CPU time while they wait is printed; benchmarks/run_time_bounds.sh judges it.
TEST(Converse, IdlePesWaitAndWakeForAMessage) {
  Result r = job(4, {"idle"});
  expect_ok(r, "idle ok");
}

// A PE waiting for its own rendezvous (256 KiB-2 MiB host messages) must progress, not
// take the back-off sleeps meant for small sends held back by a busy peer (counted).
TEST(Converse, PeWithItsOwnRendezvousOpenDoesNotSleep) {
  for (const char* bytes : {"262144", "1048576", "2097152"}) {
    Result r = job(2, {"rndvidle", bytes, "100"});
    expect_ok(r, "rndvidle ok");
  }
}

TEST(Converse, SingletonStartWithoutALauncher) {
  Result r = run({kProg, "pingpong"}, 60);
  expect_ok(r, "pingpong ok");
}

TEST(Converse, ExitAndKilledRankUnderMpirun) {
  if (::access("/usr/bin/mpirun", X_OK) != 0) GTEST_SKIP() << "OpenMPI's mpirun is not installed";
  std::string token = unique_token();
  Result e = run({"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4", kProg, "exitcall", "6", token}, 60);
  EXPECT_EQ(e.code, 6) << describe(e);
  Result z = run({"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4", kProg, "exitcall", "0", token}, 60);
  EXPECT_EQ(z.code, 0) << describe(z);
  EXPECT_FALSE(z.timed_out) << describe(z);
  Result k = run({"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4", kProg, "killpeer", token}, 60);
  EXPECT_NE(k.code, 0) << describe(k);
  EXPECT_FALSE(k.timed_out) << describe(k);
  // mpirun stops the other ranks itself and names the dead one (it sends them no PMIx
  // event first, so they cannot); ucharmrun's own test checks that every PE names it.
  EXPECT_TRUE(has(k.err, "rank 3")) << describe(k);
  EXPECT_FALSE(process_with_token(token)) << "orphan processes left";
}

TEST(Converse, StartsUnderMpirun) {
  if (::access("/usr/bin/mpirun", X_OK) != 0) GTEST_SKIP() << "OpenMPI's mpirun is not installed";
  Result r = run({"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", kProg, "pingpong"}, 90);
  expect_ok(r, "pingpong ok");
  Result s = run({"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "3", kProg, "bcast"}, 90);
  expect_ok(s, "bcast ok");
}

TEST(Converse, SendToAPeOutOfRangeIsReported) {
  Result r = job(2, {"badpe"}, 30);
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "destination PE 2 is out of range [0, 2)")) << describe(r);
}

TEST(Converse, UnknownHandlerIndexIsReported) {
  Result r = job(2, {"badhandler"}, 30);
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "names handler 999")) << describe(r);
}

// Where CUDA is not available (no GPU here, or a build without CUDA), naming a stream is
// an error that says so, not an operation that waits forever.
TEST(Converse, StreamWithoutCudaIsReported) {
  if (cuda_devices() > 0) GTEST_SKIP() << "a GPU is visible: streams work here";
  Result r = job(2, {"streamnogpu"}, 30);
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "CUDA stream")) << describe(r);
}

TEST(Converse, SuspendOutsideAThreadIsReported) {
  Result r = job(1, {"suspendmain"}, 30);
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "CthSuspend called outside a user-level thread")) << describe(r);
}

TEST(Converse, BadRuntimeOptionsAreRejected) {
  Result r = run({kProg, "hello", "+eager-size=abc"}, 30);
  EXPECT_EQ(r.code, 2) << describe(r);
  EXPECT_TRUE(has(r.err, "bad value 'abc' for 'eager-size'")) << describe(r);
  Result u = job(2, {"hello", "+bogus"}, 30);
  EXPECT_NE(u.code, 0) << describe(u);
  EXPECT_TRUE(has(u.err, "unknown runtime option 'bogus'")) << describe(u);
}

TEST(Converse, PmixFailureIsReportedNotHung) {
  // A PMIx namespace in the environment but no server behind it.
  Result r = run({kProg, "hello"}, 30, {"PMIX_NAMESPACE=ucharm-no-such-job", "PMIX_RANK=0"});
  EXPECT_NE(r.code, 0) << describe(r);
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(has(r.err, "PMIx bootstrap failed: PMIx_Init")) << describe(r);
}

TEST(Launcher, VerboseBannerShowsPesUcxTransportsAndBinding) {
  Result r = job(2, {"hello"}, 30, {"--verbose"});
  expect_ok(r, "ucharm: 2 PEs on 1 host");
  EXPECT_TRUE(has(r.out, "UCX 1.")) << describe(r);
  EXPECT_TRUE(has(r.out, "transports to PE 1:")) << describe(r);
  if (::sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
    EXPECT_TRUE(has(r.out, "PE 1 on") && has(r.out, "binding core")) << describe(r);
  }
  Result nb = job(2, {"hello"}, 30, {"--verbose", "--no-bind"});
  expect_ok(nb, "binding none (+nobind)");
}

TEST(Launcher, LinesStayWholeWhenStdoutWasUnbuffered) {
  Result r = job(2, {"stdoutlines"}, 30);
  expect_ok(r, "stdoutlines ok");
}

TEST(Launcher, PrefixesOutputWithTheRank) {
  Result r = job(2, {"hello"}, 30, {"--prefix"});
  expect_ok(r, "[0] hello from PE 0 of 2");
  EXPECT_TRUE(has(r.out, "[1] hello from PE 1 of 2")) << describe(r);
}

TEST(Launcher, BadCommandLinesAreRejected) {
  Result none = run({kRun, kProg}, 10);
  EXPECT_NE(none.code, 0) << describe(none);
  EXPECT_TRUE(has(none.err + none.out, "--np is required")) << describe(none);
  Result zero = run({kRun, "-n", "0", kProg}, 10);
  EXPECT_NE(zero.code, 0) << describe(zero);
  Result noprog = run({kRun, "-n", "2"}, 10);
  EXPECT_NE(noprog.code, 0) << describe(noprog);
  EXPECT_TRUE(has(noprog.err, "no program given")) << describe(noprog);
  Result missing = run({kRun, "-n", "2", "/nonexistent/program"}, 10);
  EXPECT_EQ(missing.code, 127) << describe(missing);
  EXPECT_TRUE(has(missing.err, "cannot run '/nonexistent/program'")) << describe(missing);
}

TEST(Launcher, TimeoutStopsAHungJob) {
  std::string token = unique_token();
  Result r = run({kRun, "-n", "2", "--timeout", "2", kProg, "wait", token}, 30);
  EXPECT_EQ(r.code, 124) << describe(r);
  EXPECT_FALSE(r.timed_out) << describe(r);
  EXPECT_FALSE(process_with_token(token)) << "orphan processes left";
}

TEST(Launcher, KillingTheLauncherLeavesNoOrphans) {
  std::string token = unique_token();
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::execl(kRun.c_str(), kRun.c_str(), "-n", "3", kProg.c_str(), "wait", token.c_str(), nullptr);
    ::_exit(127);
  }
  ::close(out[1]);
  std::string seen;
  char buf[256];
  while (!has(seen, "waiting")) {  // PE 0 is in its scheduler: the job is up
    ssize_t n = ::read(out[0], buf, sizeof buf);
    ASSERT_GT(n, 0) << "the job ended before it started waiting: " << seen;
    seen.append(buf, static_cast<size_t>(n));
  }
  ASSERT_TRUE(process_with_token(token));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ::close(out[0]);
  bool gone = false;
  for (int i = 0; i < 1200 && !gone; ++i) {  // a minute at most: orphans would stay forever
    gone = !process_with_token(token);
    if (!gone) ::usleep(50000);
  }
  EXPECT_TRUE(gone) << "ranks outlived a killed launcher";
}

TEST(Launcher, ForwardsSigint) {
  std::string token = unique_token();
  // coreutils' timeout delivers SIGINT to ucharmrun, which passes it to the ranks.
  Result r = run({"timeout", "--preserve-status", "-s", "INT", "2", kRun, "-n", "2", kProg, "wait", token}, 30);
  EXPECT_EQ(r.code, 128 + 2) << describe(r);
  EXPECT_TRUE(has(r.out, "waiting")) << describe(r);
  EXPECT_FALSE(process_with_token(token)) << "orphan processes left";
}

}  // namespace
