// Whether UCX's memory hooks are needed on this host (internal header; header-only, and
// free of UCX, so that the launcher can use it too).
//
// UCX intercepts mmap/munmap/brk/... (and the CUDA allocation calls) to learn of memory
// events. Who needs them:
//  - UCX's memory-type cache: it learns CUDA/ROCm allocations through the hooks, and
//    without it GPU latency is 8x worse (measured on H200). Needed wherever a GPU is.
//  - registration caches of RDMA transports (InfiniBand/RoCE, EFA via rdma-core) and of
//    xpmem/knem: they drop a registration when its memory is unmapped, so a reused
//    address is not sent through a stale registration. Needed wherever those devices are.
//  - shared memory (sysv, posix), CMA and TCP register nothing that can go stale: they
//    do not need the hooks.
// Installing them costs ~0.4 s at start-up with UCX 1.22 (each of 8 binary patches
// waits UCX_MEM_BISTRO_GRACE_DURATION, 50 ms). So where no GPU and no RDMA/xpmem/knem
// device exists, UCX_MEM_EVENTS=no is set, unless the user set UCX_MEM_EVENTS.
//
// When: UCX 1.22 installs the mmap hooks in libucs's load-time constructor, before
// main(), reading UCX_MEM_EVENTS from the environment then. So the variable must be in
// the environment a program starts with: the launcher applies the policy before it
// starts the PEs. Called inside a program (even before ucp_init) it only reaches the
// processes that program starts: libucs read its UCX_MEM_* options at load time.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace ucharm::machine {

// What the policy looks at.
struct MemoryEventFacts {
  bool user_set = false;      // UCX_MEM_EVENTS is in the environment (the user decides)
  bool gpu = false;           // an NVIDIA or AMD GPU driver is loaded
  bool rdma = false;          // an RDMA device (/sys/class/infiniband) exists
  bool xpmem_or_knem = false; // /dev/xpmem or /dev/knem exists
};

enum class MemoryEvents { Keep, Disable };

// The policy: disable only where nothing can need the hooks, and never against the user.
constexpr MemoryEvents decide_memory_events(const MemoryEventFacts& f) {
  if (f.user_set || f.gpu || f.rdma || f.xpmem_or_knem) return MemoryEvents::Keep;
  return MemoryEvents::Disable;
}

// Reads the facts from this host. `root` prefixes every path (tests point it at a
// fake tree); the environment is read from the process.
inline MemoryEventFacts probe_memory_event_facts(const std::string& root = "") {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto exists = [&](const char* p) { return fs::exists(root + p, ec); };
  auto nonempty_dir = [&](const char* p) {
    return fs::is_directory(root + p, ec) && fs::directory_iterator(root + p, ec) != fs::directory_iterator();
  };
  MemoryEventFacts f;
  f.user_set = std::getenv("UCX_MEM_EVENTS") != nullptr;
  // The NVIDIA kernel driver (its control node or its /proc tree) or AMD's KFD node.
  // Checked on the file system: loading libcuda and calling cuInit would cost more than
  // the hooks do.
  f.gpu = exists("/dev/nvidiactl") || exists("/proc/driver/nvidia") || exists("/dev/kfd");
  f.rdma = nonempty_dir("/sys/class/infiniband");
  f.xpmem_or_knem = exists("/dev/xpmem") || exists("/dev/knem");
  return f;
}

// Applies the policy to this process's environment (inherited by the processes it
// starts). Returns what it decided.
inline MemoryEvents configure_memory_events() {
  const MemoryEvents d = decide_memory_events(probe_memory_event_facts());
  if (d == MemoryEvents::Disable) ::setenv("UCX_MEM_EVENTS", "no", 0);
  return d;
}

}  // namespace ucharm::machine
