// One-sided windows (CkWindow) over Converse's registered regions (CmiRma*).
//
// Each end registers its buffer and an 8-byte notification counter, and tells its peer
// both descriptors in one setup message; the peer attaches them. Operations issued before
// the peer's setup is here wait in the end, in order. Waiting for notifications is a
// per-PE poller over the ends that have waiters, registered only while there are any.
#include "internal.h"

#include <algorithm>
#include <cstring>

namespace ck {

namespace detail {

struct WindowEnd {
  enum class Op : std::uint8_t { Put, Get, PutNotify, FetchAdd, CompareSwap, Flush };
  struct Pending {  // an operation issued before the peer's setup arrived
    Op op;
    std::size_t offset, bytes;
    const void* src;
    void* dst;
    std::uint64_t a, b;
    void* done_msg;
  };
  struct Waiter {
    std::uint64_t count;
    CkCallback cb;
  };
  CollectionRef self_ref, peer_ref;
  Index self_idx, peer_idx;
  std::uint32_t sub = 0;
  int peer_pe = 0;
  bool exposed = false, ready = false;
  void* base = nullptr;
  std::size_t bytes = 0;
  alignas(8) std::uint64_t notify_count = 0;  // the peer adds to it one-sidedly
  CmiRmaRegion* data_reg = nullptr;
  CmiRmaRegion* count_reg = nullptr;
  CmiRmaRemote* peer_data = nullptr;
  CmiRmaRemote* peer_count = nullptr;
  std::uint64_t issued = 0;
  std::vector<Pending> pending;  // only before `ready`
  std::vector<Waiter> waiters;   // on_notify, not yet reached
};

}  // namespace detail

namespace {

using detail::WindowEnd;

using detail::EndKey;
using detail::EndKeyHash;

// The setup message: this header, then the buffer's and the counter's descriptors.
struct WindowSetupHead {
  std::uint64_t to_coll, from_coll;
  Index to_idx, from_idx;
  std::uint32_t sub;
  std::int32_t from_pe;
  std::uint32_t data_len, count_len;
};

struct WindowTable {
  std::unordered_map<EndKey, WindowEnd*, EndKeyHash> ends;
  // Setups for ends not opened here yet (the payload after the header's copy).
  std::unordered_map<EndKey, std::vector<char>, EndKeyHash> early;
  std::vector<WindowEnd*> watching;  // ends with waiters
  int poller = 0;                    // CmiAddPoller id while `watching` is not empty
};
WindowTable& table() {
  static WindowTable t;
  return t;
}

std::string end_str(const CollectionRef& r, const Index& i) {
  return "collection " + std::to_string(r.id) + " element " + i.str();
}
std::string describe(const WindowEnd& e) {
  return "window from " + end_str(e.self_ref, e.self_idx) + " to " + end_str(e.peer_ref, e.peer_idx) +
         " (sub-id " + std::to_string(e.sub) + ")";
}

// ---- completions ------------------------------------------------------------------------------
// A window completion reaches the scheduler as this message, then the user's callback.
// An atomic's old word is written into the message itself (`value`) before it runs.
enum class DoneKind : std::uint8_t { Bytes, Value, Ops };
struct WindowDone {
  std::uint64_t value;  // first: the atomic's result lands here (8-byte aligned)
  CkCallback cb;
  DoneKind kind;
};
void window_done_handler(void* msg) {
  WindowDone d;
  std::memcpy(&d, CmiMsgPayload(msg), sizeof d);
  CmiFree(msg);
  ++detail::core().processed;
  if (d.kind == DoneKind::Value) d.cb.send(d.value);
  else d.cb.send(static_cast<std::size_t>(d.value));
}
using DoneHandler = ConverseHandler<&window_done_handler>;

// nullptr when nobody waits (no message at all).
void* done_msg(const CkCallback& cb, DoneKind kind, std::uint64_t value, bool always = false) {
  if (cb.is_ignore() && !always) return nullptr;
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(WindowDone));
  WindowDone d{value, cb, kind};
  std::memcpy(CmiMsgPayload(m), &d, sizeof d);
  CmiSetHandler(m, DoneHandler::handler());
  ++detail::core().sent;  // processed by window_done_handler (QD)
  return m;
}
std::uint64_t* result_slot(void* msg) { return reinterpret_cast<std::uint64_t*>(CmiMsgPayload(msg)); }

// ---- issuing ----------------------------------------------------------------------------------
void check_range(const WindowEnd& e, const char* what, std::size_t offset, std::size_t bytes) {
  const std::size_t size = CmiRmaRemoteSize(e.peer_data);
  if (offset > size || bytes > size - offset)
    CkAbort("CkWindow::%s on the %s: offset %zu + length %zu bytes reaches past the end of the peer's %zu-byte "
            "buffer",
            what, describe(e).c_str(), offset, bytes, size);
}

void issue(WindowEnd& e, const WindowEnd::Pending& p) {
  using Op = WindowEnd::Op;
  switch (p.op) {
    case Op::Put:
      check_range(e, "put", p.offset, p.bytes);
      CmiRmaPut(e.peer_data, p.offset, p.src, p.bytes, p.done_msg);
      break;
    case Op::Get:
      check_range(e, "get", p.offset, p.bytes);
      CmiRmaGet(e.peer_data, p.offset, p.dst, p.bytes, p.done_msg);
      break;
    case Op::PutNotify:
      check_range(e, "put_notify", p.offset, p.bytes);
      CmiRmaPutNotify(e.peer_data, p.offset, p.src, p.bytes, e.peer_count, 0, p.done_msg);
      break;
    case Op::FetchAdd:
    case Op::CompareSwap: {
      const char* what = p.op == Op::FetchAdd ? "fetch_add" : "compare_swap";
      check_range(e, what, p.offset, 8);
      if (CmiRmaRemoteMemoryType(e.peer_data) != CmiMemoryType::Host)
        CkAbort("CkWindow::%s on the %s: the peer's buffer is in CUDA memory; atomics need host memory", what,
                describe(e).c_str());
      if (p.offset % 8)
        CkAbort("CkWindow::%s on the %s: offset %zu is not a multiple of 8 (atomics act on aligned 8-byte words)",
                what, describe(e).c_str(), p.offset);
      if (p.op == Op::FetchAdd)
        CmiRmaAtomic(e.peer_data, p.offset, CmiRmaOp::Add, 8, p.a, 0, result_slot(p.done_msg), p.done_msg);
      else
        CmiRmaAtomic(e.peer_data, p.offset, CmiRmaOp::CompareSwap, 8, p.b, p.a, result_slot(p.done_msg), p.done_msg);
      break;
    }
    case Op::Flush:
      if (p.done_msg) CmiRmaFlush(e.peer_pe, p.done_msg);  // nobody waits: nothing to do
      break;
  }
}

void submit(WindowEnd& e, const WindowEnd::Pending& p) {
  ++e.issued;
  if (e.ready) [[likely]]
    issue(e, p);
  else
    e.pending.push_back(p);
}

// The peer's setup payload (header, descriptors) is here: attach, then send what waits.
void attach_peer(WindowEnd& e, const char* payload) {
  WindowSetupHead h;
  std::memcpy(&h, payload, sizeof h);
  const char* d = payload + sizeof h;
  e.peer_pe = h.from_pe;
  e.peer_data = CmiRmaAttach(h.from_pe, d, h.data_len);
  e.peer_count = CmiRmaAttach(h.from_pe, d + h.data_len, h.count_len);
  e.ready = true;
  std::vector<WindowEnd::Pending> waiting;
  waiting.swap(e.pending);
  for (const auto& p : waiting) issue(e, p);
}

void window_setup_handler(void* msg) {
  WindowSetupHead h;
  const char* payload = CmiMsgPayload(msg);
  std::memcpy(&h, payload, sizeof h);
  ++detail::core().processed;  // counted as sent by the peer's expose (QD)
  WindowTable& t = table();
  const EndKey key{h.to_coll, h.from_coll, h.to_idx, h.from_idx, h.sub};
  auto it = t.ends.find(key);
  if (it == t.ends.end()) {  // not open here yet: the end attaches when it opens
    t.early[key].assign(payload, payload + sizeof h + h.data_len + h.count_len);
  } else {
    if (it->second->ready)
      CkAbort("the %s was exposed again at the peer while this end stayed open; close both ends before opening a "
              "window between them again",
              describe(*it->second).c_str());
    attach_peer(*it->second, payload);
  }
  CmiFree(msg);
}
using SetupHandler = ConverseHandler<&window_setup_handler>;

// ---- notifications ------------------------------------------------------------------------------
std::uint64_t count_of(const WindowEnd& e) { return CmiRmaReadCounter(&e.notify_count); }

// Runs the waiters of `e` that its count has reached; true if any ran.
bool fire(WindowEnd& e) {
  if (e.waiters.empty()) return false;
  const std::uint64_t c = count_of(e);
  bool any = false;
  // By index: a callback may add waiters (to this end too).
  for (std::size_t i = 0; i < e.waiters.size();) {
    if (e.waiters[i].count <= c) {
      const CkCallback cb = e.waiters[i].cb;
      e.waiters.erase(e.waiters.begin() + static_cast<std::ptrdiff_t>(i));
      cb.send(c);
      any = true;
    } else {
      ++i;
    }
  }
  return any;
}

void unwatch(WindowEnd* e) {
  WindowTable& t = table();
  std::erase(t.watching, e);
  if (t.watching.empty() && t.poller) {
    CmiRemovePoller(t.poller);
    t.poller = 0;
  }
}

bool window_poller(void*) {
  WindowTable& t = table();
  bool any = false;
  for (std::size_t i = 0; i < t.watching.size();) {
    WindowEnd* e = t.watching[i];
    any |= fire(*e);
    if (e->waiters.empty()) unwatch(e);  // removes t.watching[i]
    else ++i;
  }
  return any;
}

void watch(WindowEnd* e) {
  WindowTable& t = table();
  if (std::find(t.watching.begin(), t.watching.end(), e) == t.watching.end()) t.watching.push_back(e);
  if (!t.poller) t.poller = CmiAddPoller(window_poller, nullptr);
}

WindowEnd& live(WindowEnd* e, const char* what) {
  if (!e) CkAbort("CkWindow::%s on a window that is not open", what);
  return *e;
}

}  // namespace

// ---- CkWindow -----------------------------------------------------------------------------------

CkWindow::CkWindow(const CollectionRef& self, const Index& self_idx, const CollectionRef& peer, const Index& peer_idx,
                   std::uint32_t sub_id) {
  const int home = detail::LocationManager::pe_of(self, self_idx);
  if (home != CmiMyPe())
    CkAbort("a window end must be opened on its own element's PE (%s lives on PE %d, this is PE %d)",
            self_idx.str().c_str(), home, CmiMyPe());
  WindowTable& t = table();
  const EndKey key{self.id, peer.id, self_idx, peer_idx, sub_id};
  auto [slot, fresh] = t.ends.emplace(key, nullptr);
  if (!fresh)
    CkAbort("window from %s to %s (sub-id %u) is opened twice at the same end (close the first one)",
            end_str(self, self_idx).c_str(), end_str(peer, peer_idx).c_str(), sub_id);
  auto* e = new WindowEnd;
  slot->second = e;
  e->self_ref = self;
  e->self_idx = self_idx;
  e->peer_ref = peer;
  e->peer_idx = peer_idx;
  e->sub = sub_id;
  e->peer_pe = detail::LocationManager::pe_of(peer, peer_idx);
  e->count_reg = CmiRmaRegister(&e->notify_count, sizeof e->notify_count);
  end_ = e;
  auto early = t.early.find(key);
  if (early != t.early.end()) {  // the peer exposed first
    attach_peer(*e, early->second.data());
    t.early.erase(early);
  }
}

CkWindow& CkWindow::operator=(CkWindow&& o) noexcept {
  if (this != &o) {
    close();
    end_ = o.end_;
    o.end_ = nullptr;
  }
  return *this;
}

void CkWindow::close() noexcept {
  if (!end_) return;
  WindowEnd* e = std::exchange(end_, nullptr);
  table().ends.erase(EndKey{e->self_ref.id, e->peer_ref.id, e->self_idx, e->peer_idx, e->sub});
  if (!e->waiters.empty()) unwatch(e);
  for (const auto& p : e->pending)  // never sent: settled for QD, callbacks dropped
    if (p.done_msg) {
      ++detail::core().processed;
      CmiFree(p.done_msg);
    }
  CmiRmaDetach(e->peer_data);  // waits for this end's operations on them
  CmiRmaDetach(e->peer_count);
  CmiRmaDeregister(e->data_reg);
  CmiRmaDeregister(e->count_reg);
  delete e;
}

void CkWindow::expose(void* base, std::size_t bytes) {
  WindowEnd& e = live(end_, "expose");
  if (e.exposed) CkAbort("CkWindow::expose called twice on the %s (expose once per window)", describe(e).c_str());
  e.exposed = true;
  e.base = base;
  e.bytes = bytes;
  e.data_reg = CmiRmaRegister(base, bytes);
  std::size_t dlen = 0, clen = 0;
  const void* d = CmiRmaDescriptor(e.data_reg, &dlen);
  const void* c = CmiRmaDescriptor(e.count_reg, &clen);
  const WindowSetupHead h{e.peer_ref.id, e.self_ref.id, e.peer_idx, e.self_idx, e.sub, CmiMyPe(),
                          static_cast<std::uint32_t>(dlen), static_cast<std::uint32_t>(clen)};
  const std::size_t total = CmiMsgHeaderSizeBytes + sizeof h + dlen + clen;
  void* m = CmiAlloc(total);
  char* p = CmiMsgPayload(m);
  std::memcpy(p, &h, sizeof h);
  std::memcpy(p + sizeof h, d, dlen);
  std::memcpy(p + sizeof h + dlen, c, clen);
  CmiSetHandler(m, SetupHandler::handler());
  ++detail::core().sent;  // processed by window_setup_handler (QD)
  CmiSyncSendAndFree(e.peer_pe, total, m);
}

void CkWindow::put(std::size_t dst_offset, const void* src, std::size_t bytes, const CkCallback& done) {
  WindowEnd& e = live(end_, "put");
  submit(e, {WindowEnd::Op::Put, dst_offset, bytes, src, nullptr, 0, 0, done_msg(done, DoneKind::Bytes, bytes)});
}

void CkWindow::get(std::size_t src_offset, void* dst, std::size_t bytes, const CkCallback& done) {
  WindowEnd& e = live(end_, "get");
  submit(e, {WindowEnd::Op::Get, src_offset, bytes, nullptr, dst, 0, 0, done_msg(done, DoneKind::Bytes, bytes)});
}

void CkWindow::put_notify(std::size_t dst_offset, const void* src, std::size_t bytes, const CkCallback& done) {
  WindowEnd& e = live(end_, "put_notify");
  submit(e,
         {WindowEnd::Op::PutNotify, dst_offset, bytes, src, nullptr, 0, 0, done_msg(done, DoneKind::Bytes, bytes)});
}

void CkWindow::fetch_add(std::size_t offset, std::uint64_t value, const CkCallback& done) {
  WindowEnd& e = live(end_, "fetch_add");
  submit(e, {WindowEnd::Op::FetchAdd, offset, 8, nullptr, nullptr, value, 0, done_msg(done, DoneKind::Value, 0, true)});
}

void CkWindow::compare_swap(std::size_t offset, std::uint64_t expected, std::uint64_t desired,
                            const CkCallback& done) {
  WindowEnd& e = live(end_, "compare_swap");
  submit(e, {WindowEnd::Op::CompareSwap, offset, 8, nullptr, nullptr, expected, desired,
             done_msg(done, DoneKind::Value, 0, true)});
}

void CkWindow::flush(const CkCallback& done) {
  WindowEnd& e = live(end_, "flush");
  const std::uint64_t before = e.issued;
  submit(e, {WindowEnd::Op::Flush, 0, 0, nullptr, nullptr, before, 0, done_msg(done, DoneKind::Ops, before)});
}

std::uint64_t CkWindow::notifications() const { return count_of(live(end_, "notifications")); }

void CkWindow::on_notify(std::uint64_t count, const CkCallback& cb) {
  WindowEnd& e = live(end_, "on_notify");
  const std::uint64_t c = count_of(e);
  if (c >= count) {
    cb.send(c);
    return;
  }
  e.waiters.push_back({count, cb});
  watch(&e);
}

void CkWindow::put_wait(std::size_t dst_offset, const void* src, std::size_t bytes) {
  auto f = Future<std::size_t>::make();
  put(dst_offset, src, bytes, f.callback());
  f.get();
}
void CkWindow::get_wait(std::size_t src_offset, void* dst, std::size_t bytes) {
  auto f = Future<std::size_t>::make();
  get(src_offset, dst, bytes, f.callback());
  f.get();
}
void CkWindow::put_notify_wait(std::size_t dst_offset, const void* src, std::size_t bytes) {
  auto f = Future<std::size_t>::make();
  put_notify(dst_offset, src, bytes, f.callback());
  f.get();
}
std::uint64_t CkWindow::fetch_add_wait(std::size_t offset, std::uint64_t value) {
  auto f = Future<std::uint64_t>::make();
  fetch_add(offset, value, f.callback());
  return f.get();
}
std::uint64_t CkWindow::compare_swap_wait(std::size_t offset, std::uint64_t expected, std::uint64_t desired) {
  auto f = Future<std::uint64_t>::make();
  compare_swap(offset, expected, desired, f.callback());
  return f.get();
}
void CkWindow::flush_wait() {
  auto f = Future<std::size_t>::make();
  flush(f.callback());
  f.get();
}
std::uint64_t CkWindow::wait_notify(std::uint64_t count) {
  auto f = Future<std::uint64_t>::make();
  on_notify(count, f.callback());
  return f.get();
}

bool CkWindow::exposed() const { return end_ && end_->exposed; }
bool CkWindow::ready() const { return end_ && end_->ready; }
std::size_t CkWindow::local_bytes() const { return end_ ? end_->bytes : 0; }
std::size_t CkWindow::peer_bytes() const { return end_ && end_->ready ? CmiRmaRemoteSize(end_->peer_data) : 0; }

}  // namespace ck
