// barrier: before barrier k every PE adds 1 to a counter in a shared file; after it,
// the counter must be at least N*(k+1) on every PE (nobody left early).
#include "common.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>

namespace testprog::barrier {

void start(const Args& a) {
  if (a.args.empty()) CmiAbort("barrier: needs a shared file path argument");
  int fd = ::open(a.args[0].c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0 || ::ftruncate(fd, 4096) != 0) CmiAbort("barrier: cannot open %s", a.args[0].c_str());
  void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  auto* counter = static_cast<std::atomic<std::int64_t>*>(p);
  const int n = CmiNumPes(), rounds = 100;
  for (int k = 0; k < rounds; ++k) {
    counter->fetch_add(1);
    CmiBarrier();
    std::int64_t c = counter->load();
    if (c < static_cast<std::int64_t>(n) * (k + 1))
      CmiAbort("barrier %d: left with counter %lld < %lld", k, (long long)c, (long long)n * (k + 1));
  }
  CmiBarrier();
  if (CmiMyPe() == 0) {
    CmiPrintf("barrier ok: %d rounds\n", rounds);
    ::unlink(a.args[0].c_str());
    CmiExit(0);
  }
}

}  // namespace testprog::barrier
