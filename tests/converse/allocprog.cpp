// Counts heap allocations on the hot path: this program interposes malloc/calloc/realloc
// (every library in the process, UCX included, calls these), warms up, then runs
// 20,000 round trips of small messages through CmiSyncSendAndFree, CmiSyncSend and
// broadcasts, and reports how many allocations each PE made meanwhile. Expected: none
// (at most a handful of one-time container growths).
#include <ucharm/converse.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
}

namespace {
std::atomic<std::uint64_t> g_allocs{0};
}

#if defined(__SANITIZE_ADDRESS__)
// Under AddressSanitizer malloc belongs to it: count through its allocation hook instead.
// (GCC ships no allocator_interface.h; libasan exports the call.)
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*)(const volatile void*, std::size_t),
                                                        void (*)(const volatile void*));
namespace {
void count_alloc(const volatile void*, std::size_t) { g_allocs.fetch_add(1, std::memory_order_relaxed); }
void ignore_free(const volatile void*) {}
[[maybe_unused]] const int g_hooked = __sanitizer_install_malloc_and_free_hooks(count_alloc, ignore_free);
}  // namespace
#else
extern "C" void* malloc(std::size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(n);
}
extern "C" void* calloc(std::size_t a, std::size_t b) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(a, b);
}
extern "C" void* realloc(void* p, std::size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(p, n);
}

#endif

namespace {

constexpr int kRounds = 20000;
constexpr std::size_t kSize = CmiMsgHeaderSizeBytes + 8;
int h_ping, h_pong, h_report, h_measure, h_start, h_bcast, h_back;
int left = 0, phase = 0, acks = 0, reports = 0;
bool counting = false;  // second pass: the first one warms up pools, queues, endpoints
std::uint64_t base = 0, worst = 0;

int peer() { return CmiNumPes() > 1 ? 1 : 0; }
void* fresh(int handler) {
  void* m = CmiAlloc(kSize);
  CmiSetHandler(m, handler);
  return m;
}

// Phase 0: ping-pong with CmiSyncSendAndFree; phase 1: with the copying CmiSyncSend;
// phase 2: rounds of CmiSyncBroadcastAllAndFree, every PE answering each one.
void send_ping(void* msg) {
  CmiSetHandler(msg, h_ping);
  if (phase == 1) {
    CmiSyncSend(peer(), kSize, msg);
    CmiFree(msg);
  } else {
    CmiSyncSendAndFree(peer(), kSize, msg);
  }
}
void ping(void* msg) {
  CmiSetHandler(msg, h_pong);
  CmiSyncSendAndFree(0, kSize, msg);
}
void bcast(void* msg) {
  CmiSetHandler(msg, h_back);
  CmiSyncSendAndFree(0, kSize, msg);
}
void start_phase(int p) {  // on PE 0
  phase = p;
  left = p == 2 ? kRounds / 10 : kRounds;
  if (p == 2) CmiSyncBroadcastAllAndFree(kSize, fresh(h_bcast));
  else send_ping(CmiAlloc(kSize));
}
void pass_done() {  // on PE 0
  CmiSyncBroadcastAllAndFree(kSize, fresh(counting ? h_measure : h_start));
}
void pong(void* msg) {
  if (--left > 0) {
    send_ping(msg);
    return;
  }
  CmiFree(msg);
  start_phase(phase + 1);
}
void back(void* msg) {
  CmiFree(msg);
  if (++acks < CmiNumPes()) return;
  acks = 0;
  if (--left > 0) CmiSyncBroadcastAllAndFree(kSize, fresh(h_bcast));
  else pass_done();
}
void start_counting(void* msg) {  // every PE, after the warm-up pass
  CmiFree(msg);
  counting = true;
  base = g_allocs.load();
  if (CmiMyPe() == 0) start_phase(0);
}
void measure(void* msg) {  // every PE, after the counted pass
  std::uint64_t d = g_allocs.load() - base;
  CmiFree(msg);
  void* m = fresh(h_report);
  *reinterpret_cast<std::uint64_t*>(CmiMsgPayload(m)) = d;
  CmiSyncSendAndFree(0, kSize, m);
}
void report(void* msg) {  // PE 0
  std::uint64_t d = *reinterpret_cast<std::uint64_t*>(CmiMsgPayload(msg));
  CmiFree(msg);
  worst = d > worst ? d : worst;
  if (++reports < CmiNumPes()) return;
  CmiPrintf("heap allocations in %d round trips x 2 kinds of send + %d broadcasts: %llu "
            "(most on one PE)\n", kRounds, kRounds / 10, static_cast<unsigned long long>(worst));
  // Containers may still grow once under a new interleaving of PEs (amortised, not per
  // message); one allocation per message would show up here as tens of thousands.
  if (worst > 16) CmiAbort("the hot path allocated %llu times", static_cast<unsigned long long>(worst));
  CmiPrintf("alloc ok\n");
  CmiExit(0);
}

void start(int, char**) {
  h_ping = CmiRegisterHandler(ping);
  h_pong = CmiRegisterHandler(pong);
  h_report = CmiRegisterHandler(report);
  h_measure = CmiRegisterHandler(measure);
  h_start = CmiRegisterHandler(start_counting);
  h_bcast = CmiRegisterHandler(bcast);
  h_back = CmiRegisterHandler(back);
  if (CmiMyPe() == 0) start_phase(0);
}

}  // namespace

int main(int argc, char** argv) { ConverseInit(argc, argv, start); }
