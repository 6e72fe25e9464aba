// The +trace writer driven directly on one PE (no job): trace.cpp is compiled in, as the
// core hides its symbols. Each test writes a trace, then reads it back: a few exact checks
// here, and the structural checks of check_trace.py (valid JSON, nesting, flows bound
// inside entries) through Python.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "trace.h"

namespace tr = ck::detail::trace;

namespace {

std::string temp_base(const char* name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/ucharm_trace_" + name + "_" +
         std::to_string(::getpid()) + ".json";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// Runs check_trace.py on `path` with `args`; true when it passes.
bool python_check(const std::string& path, const std::string& args) {
  std::string cmd = std::string(PYTHON_EXE) + " " + CHECK_TRACE_PY + " " + path + " " + args;
  return std::system(cmd.c_str()) == 0;
}

}  // namespace

TEST(Trace, OffCostsNothingAndWritesNothing) {
  EXPECT_FALSE(tr::enabled());
  EXPECT_EQ(tr::send(1, 100), 0u);
  tr::begin_entry("C", "e", ck::index(1), 0, 0);
  tr::end_entry();
  tr::flush_and_close();  // closing a trace never opened is harmless
  EXPECT_FALSE(tr::enabled());
}

TEST(Trace, PartPath) {
  EXPECT_EQ(tr::part_path("out.json", 3), "out.pe3.json");
  EXPECT_EQ(tr::part_path("dir/run", 0), "dir/run.pe0.json");
  EXPECT_EQ(tr::part_path(".json", 1), ".json.pe1.json");
}

TEST(Trace, EventsParseBack) {
  const std::string file = temp_base("events");
  const std::string part = tr::part_path(file, 0);
  tr::open(file);
  ASSERT_TRUE(tr::enabled());
  // A main entry that sends to PE 0 itself; the message runs a nested-free entry later.
  tr::begin_entry("Main", "Main::start", ck::Index{}, 0, 0);
  const std::uint64_t id = tr::send(0, 64);
  const std::uint64_t id2 = tr::send(1, 8);
  tr::end_entry();
  EXPECT_NE(id, 0u);
  EXPECT_EQ(id >> 40, 0u);  // PE 0's ids
  EXPECT_NE(id, id2);
  tr::begin_entry("Block\"quoted\"", "Block::recv", ck::index(1, 2), 0, id);
  // An entry run inside another (a local call) nests.
  tr::begin_entry("Block", "Block::inner", ck::index(3), 0, 0);
  tr::end_entry();
  tr::end_entry();
  tr::migration("Block", ck::index(1, 2), 0, 1, 4096, false);
  tr::migration("Block", ck::index(1, 2), 0, 1, 4096, true);  // as PE 1 would record it
  tr::lb_step(1, "GreedyRefine", {3.0, 1.0}, {2.0, 2.0}, 1, 8);
  tr::flush_and_close();
  tr::flush_and_close();  // twice is fine
  EXPECT_FALSE(tr::enabled());

  const std::string text = slurp(part);
  ASSERT_FALSE(text.empty()) << part;
  EXPECT_EQ(text.rfind("{\"traceEvents\":[", 0), 0u);
  EXPECT_EQ(text.substr(text.size() - 3), "]}\n");
  EXPECT_EQ(count(text, "\"thread_name\""), 1u);
  EXPECT_NE(text.find("\"args\":{\"name\":\"PE 0\"}"), std::string::npos);
  EXPECT_EQ(count(text, "\"cat\":\"entry\""), 3u);
  EXPECT_NE(text.find("\"index\":\"(1, 2)\""), std::string::npos);
  EXPECT_NE(text.find("\"chare\":\"Block\\\"quoted\\\"\""), std::string::npos);
  EXPECT_EQ(count(text, "\"ph\":\"s\""), 2u);
  EXPECT_EQ(count(text, "\"ph\":\"f\""), 1u);
  EXPECT_EQ(count(text, "\"cat\":\"migration\""), 2u);
  EXPECT_NE(text.find("\"before\":[3,1],\"after\":[2,2]"), std::string::npos);
  EXPECT_TRUE(python_check(part, "--pes 1 --min-entries 3 --migrations --lb-steps 1"));
  std::remove(part.c_str());
}

// More events than the buffer holds: written out in chunks, all there at the end.
TEST(Trace, LongRunFlushesInChunks) {
  const std::string file = temp_base("long");
  const std::string part = tr::part_path(file, 0);
  tr::open(file);
  constexpr int kEntries = 60000;  // ~12 MB of events, the buffer holds 4 MiB
  std::uint64_t prev = 0;
  for (int i = 0; i < kEntries; ++i) {
    tr::begin_entry("Worker", "Worker::step", ck::index(i), 0, prev);
    prev = tr::send(0, 8);
    tr::end_entry();
  }
  tr::flush_and_close();
  const std::string text = slurp(part);
  EXPECT_EQ(count(text, "\"cat\":\"entry\""), static_cast<std::size_t>(kEntries));
  EXPECT_EQ(count(text, "\"ph\":\"f\""), static_cast<std::size_t>(kEntries - 1));
  EXPECT_TRUE(python_check(part, "--pes 1 --min-entries 60000"));
  std::remove(part.c_str());
}

TEST(Trace, UnwritableFileIsAClearError) {
  auto failed = [](int status) { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; };
  EXPECT_EXIT(tr::open("/nonexistent-dir/x.json"), failed,
              "\\+trace /nonexistent-dir/x.json: cannot write this PE's part "
              "/nonexistent-dir/x.pe0.json");
}
