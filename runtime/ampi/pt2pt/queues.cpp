// The request table and the two matching queues of a rank (P2p in p2p.h): posted receives
// in posting order, unexpected messages in arrival order, and messages taken by MPI_Mprobe.
#include "pt2pt/wire.h"

namespace ampi {
using namespace pt2pt;

// ---- P2p bookkeeping -------------------------------------------------------------------------------
MPI_Request P2p::alloc(ReqKind k) {
  MPI_Request h;
  if (!free_reqs_.empty()) {
    h = free_reqs_.back();
    free_reqs_.pop_back();
  } else {
    reqs_.emplace_back();
    h = static_cast<MPI_Request>(reqs_.size());
  }
  Request& q = req(h);
  q.kind = k;
  q.complete = q.persistent = q.active = q.user_freed = q.sync = q.matched = q.device = false;
  q.waiter = nullptr;
  q.prev = q.next = 0;
  q.device_stage = nullptr;
  q.ack_world = -1;
  q.comm = MPI_COMM_NULL;
  q.status = MPI_Status{};
  return h;
}

void P2p::release(MPI_Request h) {
  Request& q = req(h);
  if (q.holds_type) {  // a pending receive or persistent request kept a freed type alive
    q.holds_type = false;
    type_release(q.type);
  }
  q.kind = ReqKind::Free;
  free_reqs_.push_back(h);
}

void P2p::complete(MPI_Request h) {
  Request& q = req(h);
  q.complete = true;
  if (q.user_freed && !q.persistent) {
    release(h);
    return;
  }
  if (CthThread w = q.waiter) {
    q.waiter = nullptr;
    // From a handler, the waiting rank runs at once (no trip through the queue); from the
    // waiting thread itself (a handler it runs while it waits: rank_wait) nothing to do.
    CthThread self = CthSelf();
    if (!self) CthResume(w);
    else if (w != self) CthAwaken(w);
  }
}

void P2p::post(MPI_Request h) {
  Request& q = req(h);
  q.prev = posted_tail_;
  q.next = 0;
  if (posted_tail_) req(posted_tail_).next = h;
  else posted_head_ = h;
  posted_tail_ = h;
}

void P2p::unpost(MPI_Request h) {
  Request& q = req(h);
  if (q.prev) req(q.prev).next = q.next;
  else posted_head_ = q.next;
  if (q.next) req(q.next).prev = q.prev;
  else posted_tail_ = q.prev;
  q.prev = q.next = 0;
}

MPI_Request P2p::match_posted(std::uint32_t context, int src, int tag) {
  for (MPI_Request h = posted_head_; h; h = req(h).next) {
    const Request& q = req(h);
    if (q.context == context && (q.peer == MPI_ANY_SOURCE || q.peer == src) && (q.tag == MPI_ANY_TAG || q.tag == tag))
      return h;
  }
  return 0;
}

void P2p::push_unexpected(void* msg) {
  std::int32_t i;
  if (unexp_free_ >= 0) {
    i = unexp_free_;
    unexp_free_ = unexpected_[static_cast<std::size_t>(i)].next;
  } else {
    i = static_cast<std::int32_t>(unexpected_.size());
    unexpected_.emplace_back();
  }
  Unexpected& u = unexpected_[static_cast<std::size_t>(i)];
  u.msg = msg;
  u.next = -1;
  u.prev = unexp_tail_;
  if (unexp_tail_ >= 0) unexpected_[static_cast<std::size_t>(unexp_tail_)].next = i;
  else unexp_head_ = i;
  unexp_tail_ = i;
}

std::int32_t P2p::find_unexpected(std::uint32_t context, int src, int tag) const {
  for (std::int32_t i = unexp_head_; i >= 0; i = unexpected_[static_cast<std::size_t>(i)].next)
    if (matches(wire(unexpected_[static_cast<std::size_t>(i)].msg), context, src, tag)) return i;
  return -1;
}

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

void* P2p::take_unexpected(std::int32_t i) {
  Unexpected& u = unexpected_[static_cast<std::size_t>(i)];
  if (u.prev >= 0) unexpected_[static_cast<std::size_t>(u.prev)].next = u.next;
  else unexp_head_ = u.next;
  if (u.next >= 0) unexpected_[static_cast<std::size_t>(u.next)].prev = u.prev;
  else unexp_tail_ = u.prev;
  void* m = u.msg;
  u.msg = nullptr;
  u.next = unexp_free_;
  unexp_free_ = i;
  return m;
}

}  // namespace ampi
