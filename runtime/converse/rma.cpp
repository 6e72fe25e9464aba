// One-sided communication over the machine layer's registered regions, and pollers (the
// scheduler's way to notice one-sided writes, which wake nobody).
//
// A descriptor is a fixed header (magic, owner PE, address, size, memory type, key
// length) followed by the packed remote key; the region keeps its bytes, so sending it
// costs one copy into the caller's message.
#include <ucharm/converse.h>
#include <ucharm/machine.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "converse_internal.h"

namespace lrts = ucharm::machine;

struct CmiRmaRegion {
  lrts::RmaRegion* r = nullptr;
  void* base = nullptr;
  std::size_t size = 0;
  std::vector<char> desc;
};

struct CmiRmaRemote {
  lrts::RmaRemote* r = nullptr;
  int pe = 0;
  std::size_t size = 0;
  CmiMemoryType mem = CmiMemoryType::Host;
};

namespace ucharm::converse {
namespace {

constexpr std::uint32_t kDescMagic = 0x554D4131;  // "UMA1"

struct DescHeader {
  std::uint32_t magic;
  std::int32_t pe;
  std::uint64_t addr;
  std::uint64_t size;
  std::uint32_t key_len;
  std::uint8_t mem;
  std::uint8_t pad[3];
};

void enqueue_done(void* msg) { CsdEnqueue(msg); }
lrts::Completion completion(void* done_msg) {
  return done_msg ? lrts::Completion{enqueue_done, done_msg} : lrts::Completion{};
}
lrts::MemoryType mem_of(const void* p) { return lrts::LrtsMemoryType(p); }

// Checked here (as well as in the machine layer) so that the message names the call.
void check_range(const CmiRmaRemote* r, std::size_t offset, std::size_t bytes, const char* who) {
  if (!r) CmiAbort("%s: the remote region is null", who);
  if (offset > r->size || bytes > r->size - offset) [[unlikely]]
    CmiAbort("%s: out of range: offset %zu + length %zu bytes reaches past the end of PE %d's %zu-byte region", who,
             offset, bytes, r->pe, r->size);
}

}  // namespace

bool run_pollers() {
  PeState& s = pe_state();
  if (s.in_pollers) return false;  // a poller that runs the scheduler: not again inside it
  s.in_pollers = true;
  bool found = false;
  // By index, on a copy: a poller may add (reallocating) or remove pollers.
  for (std::size_t i = 0; i < s.pollers.size(); ++i) {
    const PeState::Poller p = s.pollers[i];
    if (p.fn && p.fn(p.ctx)) found = true;
  }
  s.in_pollers = false;
  std::erase_if(s.pollers, [](const PeState::Poller& p) { return p.fn == nullptr; });
  s.polling = !s.pollers.empty();
  return found;
}

bool run_foreign_work() {
  PeState& s = pe_state();
  CmiForeignWork* w = s.foreign.exchange(nullptr, std::memory_order_acquire);
  if (!w) return false;
  CmiForeignWork* oldest = nullptr;  // pushed newest first: reversed, so work runs in order
  while (w) {
    CmiForeignWork* next = w->next;
    w->next = oldest;
    oldest = w;
    w = next;
  }
  while (oldest) {
    CmiForeignWork* next = oldest->next;  // read first: run may end the pusher's wait
    oldest->run(oldest);
    oldest = next;
  }
  return true;
}

void poller_idle_wait() {
  PeState& s = pe_state();
  const int step_us = std::min(20 << std::min(s.poll_sleeps, 6u), 1000);
  ++s.poll_sleeps;
  lrts::LrtsIdleWaitUs(step_us);
}

}  // namespace ucharm::converse

using namespace ucharm::converse;

// ---- work from other threads -------------------------------------------------------------

void CmiPushForeignWork(CmiForeignWork* w) {
  PeState& s = pe_state();
  CmiForeignWork* head = s.foreign.load(std::memory_order_relaxed);
  do {
    w->next = head;
  } while (!s.foreign.compare_exchange_weak(head, w, std::memory_order_release, std::memory_order_relaxed));
  if (!head) lrts::LrtsWakeup();  // the first pushed since the PE last looked wakes it
}

// ---- pollers ---------------------------------------------------------------------------

int CmiAddPoller(CmiPollerFn fn, void* ctx) {
  if (!fn) CmiAbort("CmiAddPoller: the poller function is null");
  PeState& s = pe_state();
  const int id = ++s.last_poller_id;
  s.pollers.push_back({fn, ctx, id});
  s.polling = true;
  return id;
}

void CmiRemovePoller(int id) {
  PeState& s = pe_state();
  for (auto& p : s.pollers)
    if (p.id == id) p.fn = nullptr;
  if (s.in_pollers) return;  // compacted when the running ones are done
  std::erase_if(s.pollers, [](const PeState::Poller& p) { return p.fn == nullptr; });
  s.polling = !s.pollers.empty();
}

int CmiNumPollers() {
  const PeState& s = pe_state();
  return static_cast<int>(std::count_if(s.pollers.begin(), s.pollers.end(), [](const auto& p) { return p.fn; }));
}

// ---- regions -----------------------------------------------------------------------------

CmiRmaRegion* CmiRmaRegister(void* ptr, std::size_t size) {
  if (!ptr && size) CmiAbort("CmiRmaRegister: a null buffer of %zu bytes", size);
  const lrts::MemoryType mem = size ? mem_of(ptr) : lrts::MemoryType::Host;
  auto* reg = new CmiRmaRegion;
  reg->r = lrts::LrtsRmaRegister(ptr, size, mem);
  reg->base = ptr;
  reg->size = size;
  std::size_t key_len = 0;
  const void* key = lrts::LrtsRmaKey(reg->r, &key_len);
  const DescHeader h{kDescMagic,
                     CmiMyPe(),
                     reinterpret_cast<std::uintptr_t>(ptr),
                     size,
                     static_cast<std::uint32_t>(key_len),
                     static_cast<std::uint8_t>(mem),
                     {}};
  reg->desc.resize(sizeof h + key_len);
  std::memcpy(reg->desc.data(), &h, sizeof h);
  if (key_len) std::memcpy(reg->desc.data() + sizeof h, key, key_len);
  return reg;
}

void CmiRmaDeregister(CmiRmaRegion* r) {
  if (!r) return;
  lrts::LrtsRmaDeregister(r->r);
  delete r;
}

void* CmiRmaRegionBase(const CmiRmaRegion* r) { return r->base; }
std::size_t CmiRmaRegionSize(const CmiRmaRegion* r) { return r->size; }

const void* CmiRmaDescriptor(const CmiRmaRegion* r, std::size_t* len) {
  *len = r->desc.size();
  return r->desc.data();
}

CmiRmaRemote* CmiRmaAttach(int pe, const void* desc, std::size_t len) {
  if (pe < 0 || pe >= CmiNumPes()) CmiAbort("CmiRmaAttach: PE %d is out of range [0, %d)", pe, CmiNumPes());
  DescHeader h{};
  if (!desc || len < sizeof h) CmiAbort("CmiRmaAttach: a descriptor of %zu bytes is too short (not a descriptor)", len);
  std::memcpy(&h, desc, sizeof h);
  if (h.magic != kDescMagic || h.mem > 1 || len != sizeof h + h.key_len)
    CmiAbort("CmiRmaAttach: %zu bytes that are not a region descriptor of CmiRmaDescriptor (or a damaged one)", len);
  if (h.pe != pe)
    CmiAbort("CmiRmaAttach: the descriptor is of a region of PE %d, not of PE %d", static_cast<int>(h.pe), pe);
  auto* rem = new CmiRmaRemote;
  rem->pe = pe;
  rem->size = h.size;
  rem->mem = static_cast<CmiMemoryType>(h.mem);
  rem->r = lrts::LrtsRmaAttach(pe, h.addr, h.size, static_cast<lrts::MemoryType>(h.mem),
                               static_cast<const char*>(desc) + sizeof h, h.key_len);
  return rem;
}

void CmiRmaDetach(CmiRmaRemote* r) {
  if (!r) return;
  lrts::LrtsRmaDetach(r->r);
  delete r;
}

int CmiRmaRemotePe(const CmiRmaRemote* r) { return r->pe; }
std::size_t CmiRmaRemoteSize(const CmiRmaRemote* r) { return r->size; }
CmiMemoryType CmiRmaRemoteMemoryType(const CmiRmaRemote* r) { return r->mem; }

// ---- operations ----------------------------------------------------------------------------

void CmiRmaPut(CmiRmaRemote* dst, std::size_t offset, const void* src, std::size_t bytes, void* done_msg) {
  check_range(dst, offset, bytes, "CmiRmaPut");
  lrts::LrtsRmaPut(dst->r, offset, src, bytes, bytes ? mem_of(src) : lrts::MemoryType::Host, completion(done_msg));
}

void CmiRmaGet(CmiRmaRemote* src, std::size_t offset, void* dst, std::size_t bytes, void* done_msg) {
  check_range(src, offset, bytes, "CmiRmaGet");
  lrts::LrtsRmaGet(src->r, offset, dst, bytes, bytes ? mem_of(dst) : lrts::MemoryType::Host, completion(done_msg));
}

void CmiRmaPutNotify(CmiRmaRemote* dst, std::size_t offset, const void* src, std::size_t bytes,
                     CmiRmaRemote* counter, std::size_t counter_offset, void* done_msg) {
  check_range(dst, offset, bytes, "CmiRmaPutNotify");
  check_range(counter, counter_offset, 8, "CmiRmaPutNotify (counter)");
  if (counter->pe != dst->pe)
    CmiAbort("CmiRmaPutNotify: the data goes to PE %d but the counter is on PE %d (they must be on one PE)", dst->pe,
             counter->pe);
  if (counter->mem != CmiMemoryType::Host)
    CmiAbort("CmiRmaPutNotify: the counter must be in a host-memory region (PE %d's is in CUDA memory)", counter->pe);
  lrts::LrtsRmaPutNotify(dst->r, offset, src, bytes, bytes ? mem_of(src) : lrts::MemoryType::Host, counter->r,
                         counter_offset, completion(done_msg));
}

void CmiRmaAtomic(CmiRmaRemote* r, std::size_t offset, CmiRmaOp op, std::size_t width, std::uint64_t value,
                  std::uint64_t compare, void* result, void* done_msg) {
  check_range(r, offset, width, "CmiRmaAtomic");
  lrts::LrtsRmaAtomic(r->r, offset, static_cast<lrts::RmaAtomicOp>(op), width, value, compare, result,
                      completion(done_msg));
}

void CmiRmaFence() { lrts::LrtsRmaFence(); }

void CmiRmaFlush(int pe, void* done_msg) {
  if (pe >= CmiNumPes()) CmiAbort("CmiRmaFlush: PE %d is out of range [0, %d)", pe, CmiNumPes());
  lrts::LrtsRmaFlush(pe < 0 ? -1 : pe, completion(done_msg));
}

std::size_t CmiRmaOpen() { return lrts::LrtsRmaOpen(); }
