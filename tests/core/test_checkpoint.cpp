// Checkpoint and restart through ucharmrun (tests/core/checkpoint.cpp): a restarted run ends
// with the result of an uninterrupted one, on the same and on other PE counts; damaged
// checkpoints and objects that cannot be rebuilt are clear errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "../common/run.h"

using ucharm::test::describe;
using ucharm::test::Result;
using ucharm::test::run;

namespace fs = std::filesystem;

namespace {

Result job(int n, std::vector<std::string> args, std::vector<std::string> launcher = {}) {
  std::vector<std::string> argv = {UCHARMRUN_PATH, "-n", std::to_string(n), "--timeout", "50"};
  argv.insert(argv.end(), launcher.begin(), launcher.end());
  argv.push_back(CHECKPOINT_PATH);
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, 60);
}
bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// The "result ..." line.
std::string result_of(const Result& r) {
  const auto at = r.out.rfind("result ");
  if (at == std::string::npos) return "";
  return r.out.substr(at, r.out.find('\n', at) - at);
}

// A fresh directory for one test's checkpoints.
struct Dir {
  std::string path;
  explicit Dir(const std::string& name) {
    path = (fs::temp_directory_path() / ("ucharm-ckpt-" + name + "-" + std::to_string(::getpid()))).string();
    fs::remove_all(path);
  }
  ~Dir() { fs::remove_all(path); }
};

std::string uninterrupted(int n, const std::vector<std::string>& opts) {
  Dir d("ref" + std::to_string(n));
  std::vector<std::string> args = {d.path, "20"};
  args.insert(args.end(), opts.begin(), opts.end());
  Result r = job(n, args);
  EXPECT_EQ(r.code, 0) << describe(r);
  return result_of(r);
}

// Stops after the checkpoint of step 10 on `from` PEs, restarts on `to` (`runtime`: options
// of the runtime for every run).
void restart_matches(int from, int to, std::vector<std::string> opts, const std::vector<std::string>& runtime = {}) {
  opts.insert(opts.end(), runtime.begin(), runtime.end());
  const std::string expected = uninterrupted(from, opts);
  ASSERT_FALSE(expected.empty());
  Dir d("restart");
  std::vector<std::string> args = {d.path, "20", "--stop-after", "10"};
  args.insert(args.end(), opts.begin(), opts.end());
  Result a = job(from, args);
  ASSERT_EQ(a.code, 0) << describe(a);
  ASSERT_TRUE(has(a.out, "stopped at step 10")) << describe(a);
  std::vector<std::string> again = {d.path, "20", "+restart", d.path};
  again.insert(again.end(), runtime.begin(), runtime.end());
  Result b = job(to, again);
  EXPECT_EQ(b.code, 0) << describe(b);
  EXPECT_TRUE(has(b.out, "restarted at step 10 (checkpoint of " + std::to_string(from) + " PEs, now " +
                             std::to_string(to) + ")"))
      << describe(b);
  EXPECT_EQ(result_of(b), expected) << describe(b);
}

// A checkpoint of 2 PEs stopped at step 10, for the damage tests.
std::string stopped_checkpoint(const Dir& d) {
  Result a = job(2, {d.path, "20", "--stop-after", "10"});
  EXPECT_EQ(a.code, 0) << describe(a);
  for (const auto& e : fs::directory_iterator(d.path))
    if (e.path().filename().string().rfind("pe1.", 0) == 0) return e.path().string();
  ADD_FAILURE() << "no file of PE 1 in " << d.path;
  return "";
}

TEST(Checkpoint, RestartOnTheSamePeCount) { restart_matches(2, 2, {}); }
TEST(Checkpoint, RestartOnMorePes) { restart_matches(2, 4, {}); }
TEST(Checkpoint, RestartOnFewerPes) { restart_matches(4, 2, {}); }
TEST(Checkpoint, RestartFromOnePe) { restart_matches(1, 3, {}); }
TEST(Checkpoint, MovingElementsRestartAnywhere) { restart_matches(4, 3, {"--migrate"}); }
TEST(Checkpoint, SixteenPesToFive) { restart_matches(16, 5, {"--migrate"}); }
TEST(Checkpoint, BigElements) { restart_matches(2, 4, {"--big", "100000"}); }
TEST(Checkpoint, BalancedElementsRestartAndBalanceAgain) {
  restart_matches(4, 2, {"--lb"}, {"+balancer", "RotateLB"});
}

TEST(Checkpoint, AKilledPeRestartsFromTheLastCheckpoint) {
  for (int n : {2, 4}) {
    Dir d("crash" + std::to_string(n));
    Result r = job(n, {d.path, "20", "--crash-at", "12"}, {"--restart-on-failure", "2"});
    EXPECT_EQ(r.code, 0) << describe(r);
    EXPECT_TRUE(has(r.err, "died (signal 9); restarting from checkpoint " + d.path)) << describe(r);
    EXPECT_TRUE(has(r.out, "restarted at step 10 (checkpoint of " + std::to_string(n) + " PEs")) << describe(r);
    EXPECT_EQ(result_of(r), uninterrupted(n, {})) << describe(r);
  }
}

TEST(Checkpoint, AKilledPeBeforeAnyCheckpointStartsAgain) {
  Dir d("early");
  Result r = job(2, {d.path, "20", "--crash-at", "3"}, {"--restart-on-failure", "1"});
  EXPECT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "restarting from the beginning")) << describe(r);
  EXPECT_EQ(result_of(r), uninterrupted(2, {})) << describe(r);
}

TEST(Checkpoint, WritingAgainKeepsOnlyTheNewestFiles) {
  Dir d("gens");
  Result a = job(2, {d.path, "20"});  // checkpoints at 5, 10 and 15
  ASSERT_EQ(a.code, 0) << describe(a);
  int files = 0;
  for (const auto& e : fs::directory_iterator(d.path)) {
    const std::string n = e.path().filename().string();
    if (n == "manifest") continue;
    EXPECT_NE(n.find(".g3.ckpt"), std::string::npos) << n;
    ++files;
  }
  EXPECT_EQ(files, 2);
}

TEST(Checkpoint, ATornNewerCheckpointLeavesThePreviousOneUsable) {
  Dir d("torn");
  stopped_checkpoint(d);
  // What a crash while writing generation 3 leaves: partial files, no new manifest.
  std::ofstream(d.path + "/pe0.g3.ckpt") << "partial";
  std::ofstream(d.path + "/manifest.tmp") << "partial manifest";
  Result b = job(2, {d.path, "20", "+restart", d.path});
  EXPECT_EQ(b.code, 0) << describe(b);
  EXPECT_EQ(result_of(b), uninterrupted(2, {})) << describe(b);
}

TEST(CheckpointErrors, AFlippedByteIsReported) {
  Dir d("flip");
  const std::string f = stopped_checkpoint(d);
  {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(40);
    char c = 0;
    io.read(&c, 1);
    c = static_cast<char>(c ^ 0x5a);
    io.seekp(40);
    io.write(&c, 1);
  }
  Result b = job(2, {d.path, "20", "+restart", d.path});
  EXPECT_NE(b.code, 0) << describe(b);
  EXPECT_TRUE(has(b.err, "is damaged (checksum mismatch)")) << describe(b);
  EXPECT_TRUE(has(b.err, fs::path(f).filename().string())) << describe(b);
}

TEST(CheckpointErrors, ATruncatedFileIsReported) {
  Dir d("trunc");
  const std::string f = stopped_checkpoint(d);
  fs::resize_file(f, fs::file_size(f) / 2);
  Result b = job(2, {d.path, "20", "+restart", d.path});
  EXPECT_NE(b.code, 0) << describe(b);
  EXPECT_TRUE(has(b.err, "the file was torn or edited")) << describe(b);
}

TEST(CheckpointErrors, AnEditedManifestIsReported) {
  Dir d("manifest");
  stopped_checkpoint(d);
  const std::string m = d.path + "/manifest";
  {
    std::fstream io(m, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(fs::file_size(m) - 3));
    io.write("xyz", 3);
  }
  Result b = job(2, {d.path, "20", "+restart", d.path});
  EXPECT_NE(b.code, 0) << describe(b);
  EXPECT_TRUE(has(b.err, "the manifest")) << describe(b);
  EXPECT_TRUE(has(b.err, "is damaged (checksum mismatch)")) << describe(b);
}

TEST(CheckpointErrors, NoCheckpointInTheDirectory) {
  Dir d("none");
  fs::create_directories(d.path);
  Result b = job(2, {d.path, "20", "+restart", d.path});
  EXPECT_NE(b.code, 0) << describe(b);
  EXPECT_TRUE(has(b.err, "no complete checkpoint there")) << describe(b);
}

TEST(CheckpointErrors, AnotherProgramsCheckpoint) {
  Dir d("other");
  stopped_checkpoint(d);
  Result b = run({UCHARMRUN_PATH, "-n", "2", "--timeout", "50", MIGRATION_PATH, "storm", "+restart", d.path}, 60);
  EXPECT_NE(b.code, 0) << describe(b);
  EXPECT_TRUE(has(b.err, "written by a different program")) << describe(b);
}

TEST(CheckpointErrors, AChareWithoutMigrationConstructor) {
  Dir d("stubborn");
  Result b = job(2, {d.path, "20", "--unrebuildable"});
  EXPECT_NE(b.code, 0) << describe(b);
  EXPECT_TRUE(has(b.err, "cannot be rebuilt at restart")) << describe(b);
  EXPECT_TRUE(has(b.err, "Stubborn")) << describe(b);
}

}  // namespace
