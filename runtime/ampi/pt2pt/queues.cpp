// The request table and the matching queues of a rank (P2p in p2p.h): posted receives and
// unexpected messages in FIFO lists found through one hash table (O(1) per message, see
// "Matching" in p2p.h), the ready list of completed requests, and messages taken by
// MPI_Mprobe.
#include "pt2pt/pt2pt.h"
#include "pt2pt/wire.h"
#include "errhan/grequest.h"

#include <algorithm>

namespace ampi {
using namespace pt2pt;

// ---- the queue table -------------------------------------------------------------------------------
namespace {
inline std::uint64_t mix(std::uint64_t x) {  // a 64-bit finalizer: every key bit moves every slot bit
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}
constexpr std::size_t kFirstSlots = 64;
}  // namespace

std::size_t QueueTable::home(const QueueKey& k) const {
  const std::uint64_t a = (std::uint64_t{k.context} << 32) | static_cast<std::uint32_t>(k.src);
  const std::uint64_t b = (std::uint64_t{static_cast<std::uint32_t>(k.tag)} << 32) | k.pattern;
  return static_cast<std::size_t>(mix(a ^ mix(b))) & (slots_.size() - 1);
}

QueueEnds* QueueTable::find(const QueueKey& k) {
  if (used_ == 0) return nullptr;
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = home(k);; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (!s.used) return nullptr;
    if (s.key == k) return &s.ends;
  }
}

QueueEnds& QueueTable::get(const QueueKey& k) {
  if (2 * (used_ + 1) > slots_.size()) grow();
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = home(k);; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.used && s.key == k) return s.ends;
    if (!s.used) {
      s = Slot{k, QueueEnds{}, true};
      ++used_;
      return s.ends;
    }
  }
}

// Linear probing with backward-shift deletion: no tombstones, so lookups stay short however
// many lists come and go (each message may create and drop several).
void QueueTable::erase(const QueueKey& k) {
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = home(k);
  while (!(slots_[i].used && slots_[i].key == k)) {
    if (!slots_[i].used) return;
    i = (i + 1) & mask;
  }
  for (std::size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
    if (!slots_[j].used) break;
    const std::size_t h = home(slots_[j].key);
    // Slot j may move back to the hole at i unless its home lies cyclically in (i, j].
    if (((j - h) & mask) >= ((j - i) & mask)) {
      slots_[i] = slots_[j];
      i = j;
    }
  }
  slots_[i].used = false;
  --used_;
}

void QueueTable::grow() {
  std::vector<Slot> old(slots_.empty() ? kFirstSlots : 2 * slots_.size());
  old.swap(slots_);
  used_ = 0;
  for (const Slot& s : old)
    if (s.used) get(s.key) = s.ends;
}

namespace {
inline std::uint32_t pattern_of(int src, int tag) {
  return (tag == MPI_ANY_TAG ? kAnyTag : 0u) | (src == MPI_ANY_SOURCE ? kAnySource : 0u);
}
inline QueueKey key_of(std::uint32_t context, int src, int tag, std::uint32_t pattern) {
  return QueueKey{context, (pattern & kAnySource) ? 0 : src, (pattern & kAnyTag) ? 0 : tag, pattern};
}
}  // namespace

// ---- P2p bookkeeping -------------------------------------------------------------------------------
MPI_Request P2p::alloc(ReqKind k) {
  MPI_Request h;
  if (!free_reqs_.empty()) {
    h = free_reqs_.back();
    free_reqs_.pop_back();
  } else {
    if (n_reqs_ % kChunk == 0) chunks_.push_back(std::make_unique<Request[]>(kChunk));
    h = static_cast<MPI_Request>(++n_reqs_);
  }
  Request& q = req(h);
  q.kind = k;
  q.complete = q.persistent = q.active = q.user_freed = q.sync = q.matched = q.device = q.quiet = false;
  q.waiter = nullptr;
  q.prev = q.next = 0;
  q.listed = 0;
  q.rprev = q.rnext = 0;
  q.stamp = 0;
  q.slot = -1;
  q.device_stage = nullptr;
  q.on_device = false;
  q.ack_world = -1;
  q.comm = MPI_COMM_NULL;
  q.ext_kind = ReqExtKind::None;
  q.ext = nullptr;
  q.status = MPI_Status{};
  return h;
}

P2p::~P2p() {
  route_forget(this);
  for_each_held([](void*& m) { CmiFree(m); });
  for (std::size_t i = 0; i < n_reqs_; ++i) {
    Request& q = req(static_cast<MPI_Request>(i + 1));
    if (q.kind == ReqKind::Generalized) grequest_drop(q);
    if (q.ext_kind == ReqExtKind::PersistentColl) pcoll_drop(q, false);
    if (q.ext_kind == ReqExtKind::Partitioned) part_drop(q);
    std::free(q.device_stage);
  }
}

// A request of the last scanned array leaves it: one active request fewer there.
static void leave_wait_set(P2p::WaitSet& w, Request& q) {
  if (q.stamp == w.gen && q.slot >= 0) --w.active;
  q.stamp = 0;
  q.slot = -1;
}

void P2p::release(MPI_Request h) {
  Request& q = req(h);
  if (q.holds_type) {  // a pending receive or persistent request kept a freed type alive
    q.holds_type = false;
    type_release(q.type);
  }
  if (q.ext_kind != ReqExtKind::None) [[unlikely]] {  // a persistent collective's or partitioned record
    if (q.ext_kind == ReqExtKind::PersistentColl) pcoll_drop(q, true);
    else part_drop(q);
    q.ext_kind = ReqExtKind::None;
    q.ext = nullptr;
  }
  unlink(h);
  leave_wait_set(wait_set, q);
  q.kind = ReqKind::Free;
  free_reqs_.push_back(h);
}

namespace {
// The ready and parked lists (links rprev/rnext) and each posted queue (prev/next) are
// lists of requests threaded through two of their fields: appending and taking out is one
// piece of code for both, instantiated per pair of fields (small enough to be inlined).
template <MPI_Request Request::*Prev, MPI_Request Request::*Next, class Ends>
void list_append(P2p& p, Ends& l, MPI_Request h) {
  Request& q = p.req(h);
  q.*Prev = l.tail;
  q.*Next = 0;
  if (l.tail) p.req(l.tail).*Next = h;
  else l.head = h;
  l.tail = h;
}
template <MPI_Request Request::*Prev, MPI_Request Request::*Next, class Ends>
void list_remove(P2p& p, Ends& l, MPI_Request h) {
  Request& q = p.req(h);
  if (q.*Prev) p.req(q.*Prev).*Next = q.*Next;
  else l.head = q.*Next;
  if (q.*Next) p.req(q.*Next).*Prev = q.*Prev;
  else l.tail = q.*Prev;
  q.*Prev = q.*Next = 0;
}
}  // namespace

void P2p::link(RList& l, std::uint8_t which, MPI_Request h) {
  req(h).listed = which;
  list_append<&Request::rprev, &Request::rnext>(*this, l, h);
}

void P2p::unlink(MPI_Request h) {
  Request& q = req(h);
  if (!q.listed) return;
  list_remove<&Request::rprev, &Request::rnext>(*this, q.listed == 1 ? ready_ : parked_, h);
  q.listed = 0;
}

void P2p::park(MPI_Request h) {
  unlink(h);
  link(parked_, 2, h);
}

void P2p::unpark_all() {
  while (MPI_Request h = parked_.head) {
    unlink(h);
    link(ready_, 1, h);
  }
}

void P2p::mark_complete(MPI_Request h) {
  Request& q = req(h);
  q.complete = true;
  if (!q.listed) link(ready_, 1, h);
}

void P2p::deactivate(MPI_Request h) {
  Request& q = req(h);
  q.active = false;
  q.complete = false;
  unlink(h);
  leave_wait_set(wait_set, q);
}

namespace {
// From a handler, the waiting rank runs at once (no trip through the queue); from the
// waiting thread itself (a handler it runs while it waits: rank_wait) nothing to do.
void wake(CthThread w) {
  if (!w) return;
  CthThread self = CthSelf();
  if (!self) CthResume(w);
  else if (w != self) CthAwaken(w);
}
}  // namespace

void P2p::note_progress() { wake(std::exchange(move_waiter, nullptr)); }

void P2p::complete(MPI_Request h) {
  Request& q = req(h);
  if (q.quiet) {  // only its own waiter cares
    q.complete = true;
    wake(std::exchange(q.waiter, nullptr));
    return;
  }
  if (q.user_freed && !q.persistent) {
    q.complete = true;
    release(h);
    return;
  }
  mark_complete(h);
  CthThread w = std::exchange(q.waiter, nullptr);
  CthThread any = std::exchange(any_waiter, nullptr);
  wake(w);
  if (any != w) wake(any);
  if (any && !more_any_waiters.empty()) [[unlikely]]
    wake_more(more_any_waiters);
}

void P2p::add_waiter(CthThread& first, std::vector<CthThread>& more, CthThread t) {
  if (!first || first == t) first = t;
  else if (std::find(more.begin(), more.end(), t) == more.end()) more.push_back(t);
}

void P2p::remove_waiter(CthThread& first, std::vector<CthThread>& more, CthThread t) {
  if (first == t) {
    first = nullptr;
    if (!more.empty()) {
      first = more.back();
      more.pop_back();
    }
  } else {
    std::erase(more, t);
  }
}

void P2p::wake_more(std::vector<CthThread>& more) {
  std::vector<CthThread> all;
  all.swap(more);
  for (CthThread t : all) wake(t);
}

// ---- posted receives -------------------------------------------------------------------------------
void P2p::table_post(MPI_Request h) {
  Request& q = req(h);
  ++posted_by_pattern_[q.pattern];
  ++posted_in_table_;
  list_append<&Request::prev, &Request::next>(*this, queues_.get(key_of(q.context, q.peer, q.tag, q.pattern)), h);
}

void P2p::table_unpost(MPI_Request h) {
  Request& q = req(h);
  const QueueKey k = key_of(q.context, q.peer, q.tag, q.pattern);
  QueueEnds* l = queues_.find(k);
  if (!l || (!q.prev && l->head != h)) return;  // not posted
  list_remove<&Request::prev, &Request::next>(*this, *l, h);
  --posted_by_pattern_[q.pattern];
  --posted_in_table_;
  if (!l->head) queues_.erase(k);
}

void P2p::spill_solo() {
  if (MPI_Request h = std::exchange(solo_, 0)) table_post(h);
  if (std::int32_t id = std::exchange(unexp_solo_, 0)) link_unexpected(id);
}

void P2p::post(MPI_Request h) {
  Request& q = req(h);
  q.seq = ++post_seq_;
  q.pattern = static_cast<std::uint8_t>(pattern_of(q.peer, q.tag));
  q.prev = q.next = 0;
  if (!solo_ && !posted_in_table_) {
    solo_ = h;
    return;
  }
  if (solo_) table_post(std::exchange(solo_, 0));  // posted first: first in its list
  table_post(h);
}

void P2p::unpost(MPI_Request h) {
  if (h == solo_) {
    solo_ = 0;
    return;
  }
  table_unpost(h);
}

MPI_Request P2p::find_posted(std::uint32_t context, int src, int tag) {
  if (solo_) {  // the only posted receive
    const Request& q = req(solo_);
    if (q.context == context && (q.peer == MPI_ANY_SOURCE || q.peer == src) && (q.tag == MPI_ANY_TAG || q.tag == tag))
      return solo_;
    return 0;
  }
  if (!posted_in_table_) return 0;
  MPI_Request best = 0;
  std::uint64_t best_seq = 0;
  for (std::uint32_t pat = 0; pat < 4; ++pat) {
    if (!posted_by_pattern_[pat]) continue;
    const QueueEnds* l = queues_.find(key_of(context, src, tag, pat));
    if (!l) continue;
    const std::uint64_t s = req(l->head).seq;
    if (!best || s < best_seq) best = l->head, best_seq = s;
  }
  return best;
}

MPI_Request P2p::take_posted(std::uint32_t context, int src, int tag) {
  const MPI_Request h = find_posted(context, src, tag);
  if (h) unpost(h);
  return h;
}

// ---- unexpected messages ---------------------------------------------------------------------------
void P2p::link_unexpected(std::int32_t id) {
  Unexpected& u = unexpected_[static_cast<std::size_t>(id - 1)];
  const WireHeader& h = wire(u.msg);
  for (std::uint32_t pat = 0; pat < 4; ++pat) {
    QueueEnds& l = queues_.get(key_of(h.context, h.src, h.tag, kUnexpected | pat));
    u.prev[pat] = l.tail;
    u.next[pat] = 0;
    if (l.tail) unexpected_[static_cast<std::size_t>(l.tail - 1)].next[pat] = id;
    else l.head = id;
    l.tail = id;
  }
}

void P2p::push_unexpected(void* msg) {
  std::int32_t id;
  if (unexp_free_) {
    id = unexp_free_;
    unexp_free_ = unexpected_[static_cast<std::size_t>(id - 1)].next[0];
  } else {
    unexpected_.emplace_back();
    id = static_cast<std::int32_t>(unexpected_.size());
  }
  unexpected_[static_cast<std::size_t>(id - 1)].msg = msg;
  if (n_unexp_++ == 0) {  // the only one: out of the table
    unexp_solo_ = id;
    return;
  }
  if (unexp_solo_) link_unexpected(std::exchange(unexp_solo_, 0));  // it came first
  link_unexpected(id);
}

std::int32_t P2p::find_unexpected(std::uint32_t context, int src, int tag) {
  if (!n_unexp_) return -1;
  if (unexp_solo_) {
    const std::int32_t i = unexp_solo_ - 1;
    return matches(wire(unexpected_[static_cast<std::size_t>(i)].msg), context, src, tag) ? i : -1;
  }
  const QueueEnds* l = queues_.find(key_of(context, src, tag, kUnexpected | pattern_of(src, tag)));
  return l ? l->head - 1 : -1;
}

void* P2p::take_unexpected(std::int32_t i) {
  const std::int32_t id = i + 1;
  Unexpected& u = unexpected_[static_cast<std::size_t>(i)];
  if (id == unexp_solo_) {
    unexp_solo_ = 0;
  } else {
    const WireHeader& h = wire(u.msg);
    for (std::uint32_t pat = 0; pat < 4; ++pat) {
      const QueueKey k = key_of(h.context, h.src, h.tag, kUnexpected | pat);
      QueueEnds* l = queues_.find(k);
      if (u.prev[pat]) unexpected_[static_cast<std::size_t>(u.prev[pat] - 1)].next[pat] = u.next[pat];
      else l->head = u.next[pat];
      if (u.next[pat]) unexpected_[static_cast<std::size_t>(u.next[pat] - 1)].prev[pat] = u.prev[pat];
      else l->tail = u.prev[pat];
      if (!l->head) queues_.erase(k);
    }
  }
  --n_unexp_;
  void* m = u.msg;
  u.msg = nullptr;
  u.next[0] = unexp_free_;
  unexp_free_ = id;
  return m;
}

// ---- messages taken by MPI_Mprobe -------------------------------------------------------------------
MPI_Message P2p::keep_matched(void* msg, MPI_Comm comm) {
  std::size_t i = 0;
  while (i < matched_.size() && matched_[i].msg) ++i;
  if (i == matched_.size()) matched_.emplace_back();
  matched_[i] = Matched{msg, comm};
  return static_cast<MPI_Message>(i + 2);
}

void* P2p::take_matched(MPI_Message m, MPI_Comm* comm) {
  if (m < 2 || static_cast<std::size_t>(m - 2) >= matched_.size()) return nullptr;
  Matched& k = matched_[static_cast<std::size_t>(m - 2)];
  void* msg = std::exchange(k.msg, nullptr);
  *comm = k.comm;
  return msg;
}

}  // namespace ampi
