// The memory-hook policy (runtime/machine-ucx/memevents.h): UCX_MEM_EVENTS=no only where
// no GPU and no RDMA/xpmem/knem device can need the hooks, never against the user.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "memevents.h"

namespace {

namespace fs = std::filesystem;
using ucharm::machine::decide_memory_events;
using ucharm::machine::MemoryEventFacts;
using ucharm::machine::MemoryEvents;
using ucharm::machine::probe_memory_event_facts;

TEST(MemoryEvents, DisabledOnlyWhereNothingNeedsThem) {
  EXPECT_EQ(decide_memory_events({}), MemoryEvents::Disable);
  MemoryEventFacts gpu;
  gpu.gpu = true;
  EXPECT_EQ(decide_memory_events(gpu), MemoryEvents::Keep);
  MemoryEventFacts rdma;
  rdma.rdma = true;
  EXPECT_EQ(decide_memory_events(rdma), MemoryEvents::Keep);
  MemoryEventFacts xp;
  xp.xpmem_or_knem = true;
  EXPECT_EQ(decide_memory_events(xp), MemoryEvents::Keep);
  MemoryEventFacts user;
  user.user_set = true;
  EXPECT_EQ(decide_memory_events(user), MemoryEvents::Keep);
}

// A fake root with the device files the probe looks for.
struct FakeRoot {
  fs::path dir = fs::temp_directory_path() / ("ucharm-memevents-" + std::to_string(::getpid()));
  FakeRoot() { fs::create_directories(dir); }
  ~FakeRoot() { fs::remove_all(dir); }
  void touch(const std::string& p) {
    fs::create_directories((dir / p.substr(1)).parent_path());
    std::ofstream(dir / p.substr(1)).put('\n');
  }
  void mkdir(const std::string& p) { fs::create_directories(dir / p.substr(1)); }
  std::string root() const { return dir.string(); }
};

TEST(MemoryEvents, ProbeSeesGpuRdmaAndXpmemDevices) {
  FakeRoot r;
  MemoryEventFacts f = probe_memory_event_facts(r.root());
  EXPECT_FALSE(f.gpu);
  EXPECT_FALSE(f.rdma);
  EXPECT_FALSE(f.xpmem_or_knem);
  r.mkdir("/sys/class/infiniband");  // the class exists but holds no device
  EXPECT_FALSE(probe_memory_event_facts(r.root()).rdma);
  r.mkdir("/sys/class/infiniband/mlx5_0");
  EXPECT_TRUE(probe_memory_event_facts(r.root()).rdma);
  r.touch("/dev/nvidiactl");
  EXPECT_TRUE(probe_memory_event_facts(r.root()).gpu);
  r.touch("/dev/knem");
  EXPECT_TRUE(probe_memory_event_facts(r.root()).xpmem_or_knem);
}

TEST(MemoryEvents, TheUsersSettingWins) {
  const char* old = std::getenv("UCX_MEM_EVENTS");
  const std::string saved = old ? old : "";
  ::setenv("UCX_MEM_EVENTS", "yes", 1);
  FakeRoot r;  // nothing there: the policy alone would disable
  EXPECT_TRUE(probe_memory_event_facts(r.root()).user_set);
  EXPECT_EQ(ucharm::machine::configure_memory_events(), MemoryEvents::Keep);
  EXPECT_STREQ(std::getenv("UCX_MEM_EVENTS"), "yes");
  ::unsetenv("UCX_MEM_EVENTS");
  EXPECT_FALSE(probe_memory_event_facts(r.root()).user_set);
  if (old) ::setenv("UCX_MEM_EVENTS", saved.c_str(), 1);
}

}  // namespace
