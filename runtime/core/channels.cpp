// The Channel API: two-sided transfers between two chares with no metadata message.
//
// Ids. A transfer's tag is CHANNEL | id | counter, and a receive matches on the tag at the
// receiving PE, so an id needs to be unique only among the ends that receive on one PE.
// The receiving PE therefore picks it: each PE allocates the incoming id of every end
// opened there, and the end tells its peer once, with one setup message. The peer's sends
// issued before that message arrives wait in order in the peer's end. Explicit ids
// (CkChannel::with_ids) live in the lower half of the id space, allocated ones in the
// upper half, so the two never meet.
#include "internal.h"

#include <cstring>
#include <deque>

namespace ck {

namespace detail {

// One open channel end. CkChannel points at it, so it stays put when the CkChannel moves.
struct ChannelEnd {
  struct Waiting {  // a send issued before the peer's incoming id was known
    const void* ptr;
    std::size_t size;
    void* done_msg;
    CmiHeldSend* held;  // a send on a stream: its stream point, taken at the call
  };
  CollectionRef self_ref, peer_ref;
  Index self_idx, peer_idx;
  std::uint32_t sub = 0;
  bool explicit_ids = false;
  bool ready = false;  // out_id is known
  int peer_pe = 0;
  std::uint32_t out_id = CkChannel::kNoId, in_id = CkChannel::kNoId;
  std::uint64_t out_counter = 0, in_counter = 0;
  std::vector<Waiting> waiting;  // only before `ready`; empty (no allocation) after
};

}  // namespace detail

namespace {

using detail::ChannelEnd;

using detail::EndKey;
using detail::EndKeyHash;

// The setup message: "the end (to, from, sub) sends on `id`, to PE `from_pe`".
struct ChannelSetup {
  std::uint64_t to_coll, from_coll;
  Index to_idx, from_idx;
  std::uint32_t sub;
  std::uint32_t id;
  std::int32_t from_pe;
};

// This PE's channel ends and incoming-id allocator.
struct ChannelTable {
  std::unordered_map<EndKey, ChannelEnd*, EndKeyHash> ends;  // open ends with allocated ids
  struct Early {
    std::uint32_t id;
    int pe;
  };
  // Setup messages for ends not opened here yet. In-order links between two PEs make the
  // latest one the right one if an end was closed and opened again.
  std::unordered_map<EndKey, Early, EndKeyHash> early;
  std::unordered_map<std::uint32_t, ChannelEnd*> explicit_in;  // with_ids ends, by incoming id
  // Allocation: fresh ids first (so an id is reused as late as possible: a stale transfer
  // to a closed end cannot meet a new one), then freed ids in the order they were freed.
  std::uint64_t next_fresh = 0, limit = 0;
  std::deque<std::uint32_t> freed;
  std::uint64_t allocated = 0;  // ids in use
};
ChannelTable& table() {
  static ChannelTable t;
  return t;
}

unsigned id_bits() { return std::min(CmiChannelIdBits(), 32u); }
std::uint64_t explicit_limit() { return std::uint64_t{1} << (id_bits() - 1); }

std::uint32_t allocate_id() {
  ChannelTable& t = table();
  if (t.limit == 0) {
    t.next_fresh = explicit_limit();
    t.limit = std::uint64_t{1} << id_bits();
  }
  ++t.allocated;
  if (t.next_fresh < t.limit) return static_cast<std::uint32_t>(t.next_fresh++);
  if (!t.freed.empty()) {
    const std::uint32_t id = t.freed.front();
    t.freed.pop_front();
    return id;
  }
  CkAbort("PE %d has run out of channel ids: %llu channel ends are open on it, the most one PE can receive on "
          "(2^%u); close channels that are done (CkChannel::close)",
          CmiMyPe(), static_cast<unsigned long long>(t.allocated - 1), id_bits() - 1);
}

std::string end_str(const CollectionRef& r, const Index& i) {
  return "collection " + std::to_string(r.id) + " element " + i.str();
}
std::string describe(const ChannelEnd& e) {
  return "from " + end_str(e.peer_ref, e.peer_idx) + " to " + end_str(e.self_ref, e.self_idx);
}

// A channel completion reaches the scheduler as this message, then the user's callback.
struct ChannelDone {
  CkCallback cb;
  std::uint64_t bytes;
  bool received;  // a receive completed: the matching send is now processed (QD)
};
int h_channel_done = -1, h_channel_setup = -1;
void channel_done_handler(void* msg) {
  ChannelDone d;
  std::memcpy(&d, CmiMsgPayload(msg), sizeof d);
  CmiFree(msg);
  if (d.received) ++detail::core().processed;
  d.cb.send(static_cast<std::size_t>(d.bytes));
}
void* channel_done_msg(const CkCallback& cb, std::size_t bytes, bool received) {
  if (h_channel_done < 0) CkAbort("channels are used before the runtime started");
  if (!received && cb.is_ignore()) return nullptr;  // a send nobody waits for: no completion message
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(ChannelDone));
  ChannelDone d{cb, bytes, received};
  std::memcpy(CmiMsgPayload(m), &d, sizeof d);
  CmiSetHandler(m, h_channel_done);
  return m;
}

std::uint64_t next_out_tag(ChannelEnd& e) {
  const std::uint64_t tag = CmiChannelTag(e.out_id, e.out_counter);
  e.out_counter = CmiChannelNextCounter(e.out_counter);
  return tag;
}

void issue_send(ChannelEnd& e, const void* ptr, std::size_t size, void* done_msg, void* stream) {
  CmiChannelSend(e.peer_pe, ptr, size, next_out_tag(e), done_msg, stream);
}

// The peer's incoming id is here: the waiting sends go, in the order they were issued.
void make_ready(ChannelEnd& e, std::uint32_t out_id, int peer_pe) {
  e.out_id = out_id;
  e.peer_pe = peer_pe;
  e.ready = true;
  std::vector<ChannelEnd::Waiting> waiting;
  waiting.swap(e.waiting);
  for (const auto& w : waiting) {
    if (w.held) CmiChannelSendHeld(w.held, e.peer_pe, next_out_tag(e));
    else issue_send(e, w.ptr, w.size, w.done_msg, nullptr);
  }
}

void channel_setup_handler(void* msg) {
  ChannelSetup s;
  std::memcpy(&s, CmiMsgPayload(msg), sizeof s);
  CmiFree(msg);
  ++detail::core().processed;  // counted as sent by the peer that opened its end
  ChannelTable& t = table();
  const EndKey key{s.to_coll, s.from_coll, s.to_idx, s.from_idx, s.sub};
  auto it = t.ends.find(key);
  if (it == t.ends.end()) {  // this end is not open yet: it takes the id when it opens
    t.early[key] = ChannelTable::Early{s.id, s.from_pe};
    return;
  }
  ChannelEnd& e = *it->second;
  if (e.ready)
    CkAbort("channel %s (sub-id %u) was opened again at collection %llu element %s while this end stayed open; "
            "close both ends before opening a channel between them again",
            describe(e).c_str(), e.sub, static_cast<unsigned long long>(s.from_coll), s.from_idx.str().c_str());
  make_ready(e, s.id, s.from_pe);
}

void check_home(const CollectionRef& self, const Index& self_idx) {
  const int home = detail::LocationManager::pe_of(self, self_idx);
  if (home != CmiMyPe())
    CkAbort("a channel end must be opened on its own element's PE (%s lives on PE %d, this is PE %d)",
            self_idx.str().c_str(), home, CmiMyPe());
}

}  // namespace

namespace detail {
int open_channel_ends(std::uint64_t collection, const Index& idx) {
  int n = 0;
  for (const auto& [key, end] : table().ends)
    if (key.self_coll == collection && key.self_idx == idx) ++n;
  for (const auto& [id, end] : table().explicit_in)
    if (end->self_ref.id == collection && end->self_idx == idx) ++n;
  return n;
}

bool channel_next_tag(ChannelEnd& e, bool send, std::uint64_t& tag, int& peer_pe) {
  if (send && !e.ready) return false;
  std::uint64_t& counter = send ? e.out_counter : e.in_counter;
  tag = CmiChannelTag(send ? e.out_id : e.in_id, counter);
  counter = CmiChannelNextCounter(counter);
  peer_pe = e.peer_pe;
  return true;
}

void register_channel_handler() {
  h_channel_done = CmiRegisterHandler(channel_done_handler);
  h_channel_setup = CmiRegisterHandler(channel_setup_handler);
}
}  // namespace detail

namespace {
// A new end joining `self` to `peer` (its record stays put while the CkChannel moves).
ChannelEnd* new_end(const CollectionRef& self, const Index& self_idx, const CollectionRef& peer,
                    const Index& peer_idx) {
  auto* e = new ChannelEnd;
  e->self_ref = self;
  e->self_idx = self_idx;
  e->peer_ref = peer;
  e->peer_idx = peer_idx;
  e->peer_pe = detail::LocationManager::pe_of(peer, peer_idx);
  return e;
}
}  // namespace

CkChannel::CkChannel(const CollectionRef& self, const Index& self_idx, const CollectionRef& peer,
                     const Index& peer_idx, std::uint32_t sub_id) {
  if (h_channel_setup < 0) CkAbort("channels are used before the runtime started");
  check_home(self, self_idx);
  ChannelTable& t = table();
  const EndKey key{self.id, peer.id, self_idx, peer_idx, sub_id};
  auto [slot, fresh] = t.ends.emplace(key, nullptr);
  if (!fresh)
    CkAbort("channel from %s to %s (sub-id %u) is opened twice at the same end (close the first one)",
            end_str(peer, peer_idx).c_str(), end_str(self, self_idx).c_str(), sub_id);
  ChannelEnd* e = new_end(self, self_idx, peer, peer_idx);
  slot->second = e;
  e->sub = sub_id;
  e->in_id = allocate_id();
  end_ = e;
  // Tell the peer end which id to send on; it goes where the peer's entry messages go.
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(ChannelSetup));
  const ChannelSetup s{peer.id, self.id, peer_idx, self_idx, sub_id, e->in_id, CmiMyPe()};
  std::memcpy(CmiMsgPayload(m), &s, sizeof s);
  CmiSetHandler(m, h_channel_setup);
  ++detail::core().sent;  // processed by channel_setup_handler (QD)
  CmiSyncSendAndFree(e->peer_pe, static_cast<int>(CmiMsgHeaderSizeBytes + sizeof s), m);
  // The peer opened its end first: its id is already here.
  auto early = t.early.find(key);
  if (early != t.early.end()) {
    make_ready(*e, early->second.id, early->second.pe);
    t.early.erase(early);
  }
}

CkChannel CkChannel::with_ids(const CollectionRef& self, const Index& self_idx, const CollectionRef& peer,
                              const Index& peer_idx, std::uint32_t out_id, std::uint32_t in_id) {
  if (h_channel_setup < 0) CkAbort("channels are used before the runtime started");
  if (out_id >= explicit_limit() || in_id >= explicit_limit())
    CkAbort("explicit channel ids %u/%u: they must be below %llu (2^%u; the upper half is allocated by the "
            "runtime)",
            out_id, in_id, static_cast<unsigned long long>(explicit_limit()), id_bits() - 1);
  check_home(self, self_idx);
  ChannelTable& t = table();
  auto [slot, fresh] = t.explicit_in.emplace(in_id, nullptr);
  if (!fresh) {
    const ChannelEnd& old = *slot->second;
    CkAbort("channel id %u collides on PE %d: the channel %s (explicit id) already receives on it, and so would "
            "the one from %s to %s (explicit id); use another id",
            in_id, CmiMyPe(), describe(old).c_str(), end_str(peer, peer_idx).c_str(),
            end_str(self, self_idx).c_str());
  }
  ChannelEnd* e = new_end(self, self_idx, peer, peer_idx);
  slot->second = e;
  e->explicit_ids = true;
  e->ready = true;
  e->out_id = out_id;
  e->in_id = in_id;
  CkChannel ch;
  ch.end_ = e;
  return ch;
}

CkChannel& CkChannel::operator=(CkChannel&& o) noexcept {
  if (this != &o) {
    close();
    end_ = o.end_;
    o.end_ = nullptr;
  }
  return *this;
}

void CkChannel::close() noexcept {
  if (!end_) return;
  ChannelEnd* e = end_;
  end_ = nullptr;
  ChannelTable& t = table();
  if (e->explicit_ids) {
    t.explicit_in.erase(e->in_id);
  } else {
    t.ends.erase(EndKey{e->self_ref.id, e->peer_ref.id, e->self_idx, e->peer_idx, e->sub});
    t.freed.push_back(e->in_id);
    --t.allocated;
  }
  // Sends that never left: the peer end never opened. They are settled for quiescence
  // detection (counted sent when issued), and their completions never run.
  for (const auto& w : e->waiting) {
    ++detail::core().processed;
    if (w.held) CmiChannelSendDrop(w.held);
    if (w.done_msg) CmiFree(w.done_msg);
  }
  delete e;
}

bool CkChannel::ready() const { return end_ && end_->ready; }
std::uint32_t CkChannel::out_id() const { return end_ && end_->ready ? end_->out_id : kNoId; }
std::uint32_t CkChannel::in_id() const { return end_ ? end_->in_id : kNoId; }

void CkChannel::send(const void* ptr, std::size_t size, const CkCallback& done, void* stream) {
  if (!end_) CkAbort("CkChannel::send on a channel that is not open");
  ChannelEnd& e = *end_;
  ++detail::core().sent;  // processed when the peer's receive completes (QD)
  void* done_msg = channel_done_msg(done, size, false);
  if (e.ready) [[likely]]
    issue_send(e, ptr, size, done_msg, stream);
  else  // a send on a stream sends what the stream's work so far leaves: its point is taken now
    e.waiting.push_back(
        ChannelEnd::Waiting{ptr, size, done_msg, stream ? CmiChannelSendHold(ptr, size, done_msg, stream) : nullptr});
}

void CkChannel::recv(void* ptr, std::size_t size, const CkCallback& done, void* stream) {
  if (!end_) CkAbort("CkChannel::recv on a channel that is not open");
  ChannelEnd& e = *end_;
  const std::uint64_t tag = CmiChannelTag(e.in_id, e.in_counter);
  e.in_counter = CmiChannelNextCounter(e.in_counter);
  CmiChannelRecv(ptr, size, tag, channel_done_msg(done, size, true), stream);
}

void CkChannel::send_wait(const void* ptr, std::size_t size, void* stream) {
  auto f = Future<std::size_t>::make();
  send(ptr, size, f.callback(), stream);
  f.get();
}

void CkChannel::recv_wait(void* ptr, std::size_t size, void* stream) {
  auto f = Future<std::size_t>::make();
  recv(ptr, size, f.callback(), stream);
  f.get();
}

}  // namespace ck
