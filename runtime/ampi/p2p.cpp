// Point-to-point: messages, matching, requests, completion, probe, cancel; device buffers.
//
// A message is one core raw message to the receiving rank's element: WireHeader (+ WireExt)
// + the packed data. The runtime delivers the messages of a pair of ranks in order, so the
// receiver matches them in arrival order against its posted receives, or queues them as
// unexpected: no sequence numbers here.
//
// Device buffers (CUDA memory, found by the memory-type cache): the data goes device-direct
// as a Converse device transfer (CmiSendDevice) started at once, next to the host message,
// which carries its tag; the receiver posts the device receive when the message matches.
// That needs no rendezvous round trip; ANY_SOURCE works because matching happens on the host
// message. +ampi-staging copies through host memory instead.
#include "rank.h"

#include <cstring>
#include <utility>
#include <vector>

#ifdef UCHARM_AMPI_CUDA
#include <cuda_runtime.h>
#endif

namespace ampi {

namespace {

// ---- routing -----------------------------------------------------------------------------------
// Point-to-point traffic is AMPI's hot path: its messages skip the core's entry-method
// layer (envelope, collection and element lookup, quiescence counts) and go as Converse
// messages with one handler, the destination rank in the header. Each PE knows which PE
// holds every rank (the rank array's map, asked once) and which ranks it holds itself.
// Converse keeps the messages of a pair of PEs in order, as the core's path did. Migration
// (a later issue) would update `pe` and forward what reaches the old PE.
struct Routes {
  std::vector<int> pe;                  // by world rank: the PE that holds it
  std::vector<Rank*> local;             // by world rank: the rank, if it lives on this PE
  std::vector<std::pair<int, void*>> early;  // messages for ranks not built here yet, in order
};
Routes g_routes;  // this PE's (non-SMP: one PE per process)

void on_wire(void* msg);
using WireHandler = ck::ConverseHandler<&on_wire>;

inline char* payload(void* msg) { return CmiMsgPayload(msg); }
inline std::size_t payload_length(void* msg) { return CmiMsgSize(msg) - CmiMsgHeaderSizeBytes; }
inline void* wire_alloc(std::size_t len) {
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + len);
  CmiSetHandler(m, WireHandler::handler());
  return m;
}
inline void wire_send(int dest_world, void* msg) {
  CmiSyncSendAndFree(g_routes.pe[static_cast<std::size_t>(dest_world)], CmiMsgSize(msg), msg);
}


constexpr std::uint32_t kInternalFlags = kSyncAck;

inline WireHeader& wire(void* msg) { return *reinterpret_cast<WireHeader*>(payload(msg)); }
inline bool has_ext(std::uint32_t flags) { return (flags & (kSync | kSyncAck | kDevice)) != 0; }
inline WireExt& ext(void* msg) {
  return *reinterpret_cast<WireExt*>(payload(msg) + sizeof(WireHeader));
}
inline std::size_t data_offset(std::uint32_t flags) {
  return sizeof(WireHeader) + (has_ext(flags) ? sizeof(WireExt) : 0);
}
inline char* data_of(void* msg) { return payload(msg) + data_offset(wire(msg).flags); }
inline std::size_t data_bytes(void* msg) {
  const WireHeader& h = wire(msg);
  return (h.flags & kDevice) ? ext(msg).bytes : payload_length(msg) - data_offset(h.flags);
}

inline bool matches(const WireHeader& h, std::uint32_t context, int src, int tag) {
  return h.context == context && (src == MPI_ANY_SOURCE || src == h.src) && (tag == MPI_ANY_TAG || tag == h.tag);
}

}  // namespace

bool is_device(const void* p) { return p && cuda_loaded() && CmiGetMemoryType(p) == CmiMemoryType::Cuda; }

namespace {

// Copies between any two buffers, host or device.
void copy_any(void* dst, const void* src, std::size_t n) {
#ifdef UCHARM_AMPI_CUDA
  if (is_device(dst) || is_device(src)) {
    if (cudaMemcpy(dst, src, n, cudaMemcpyDefault) != cudaSuccess)
      CkAbort("AMPI: cudaMemcpy of %zu bytes between a device and a host buffer failed", n);
    return;
  }
#endif
  std::memcpy(dst, src, n);
}

// The message that completes a device transfer's request on this rank (runs here later).
void* completion_msg(Rank* r, MPI_Request req) {
  void* m = wire_alloc(sizeof(WireHeader) + sizeof(WireExt));
  wire(m) = WireHeader{0, 0, 0, kSyncAck, r->world_rank(), 0};
  ext(m) = WireExt{0, 0, r->world_rank(), req};
  return m;
}

// Acknowledges a matched Ssend: the sender's request completes.
void send_ack(Rank* r, Request& q) {
  void* ack = wire_alloc(sizeof(WireHeader) + sizeof(WireExt));
  wire(ack) = WireHeader{0, 0, 0, kSyncAck, q.ack_world, 0};
  ext(ack) = WireExt{0, 0, r->world_rank(), q.ack_req};
  wire_send(q.ack_world, ack);
  q.ack_world = -1;
}

// Delivers `msg` (matched) into receive request `h`; takes the message.
void deliver(Rank* r, MPI_Request h, void* msg) {
  P2p& p = r->p2p();
  Request& q = p.req(h);
  const WireHeader hd = wire(msg);
  const std::size_t bytes = data_bytes(msg);
  const std::size_t room = static_cast<std::size_t>(q.count) * q.facts.size;
  q.status.MPI_SOURCE = hd.src;
  q.status.MPI_TAG = hd.tag;
  q.status.MPI_ERROR = MPI_SUCCESS;
  q.status.ucharm_bytes = static_cast<long long>(bytes < room ? bytes : room);
  std::size_t n = bytes;
  if (bytes > room) {
    q.status.MPI_ERROR = MPI_ERR_TRUNCATE;
    n = room;
  }
  q.matched = true;
  if (hd.flags & kSync) {  // Ssend: acknowledged once the data is here (the sender's buffer is free)
    q.ack_world = ext(msg).sender_world;
    q.ack_req = ext(msg).sender_req;
    if (!(hd.flags & kDevice)) send_ack(r, q);
  }
  if (hd.flags & kDevice) {
    const std::uint64_t tag = ext(msg).device_tag;
    CmiFree(msg);
    if (bytes > room) {  // the transfer must still be taken, whole: into a scratch buffer
      q.device_stage = std::malloc(bytes);
      CmiRecvDevice(q.device_stage, bytes, tag, completion_msg(r, h));
      return;
    }
    if (q.facts.contiguous) {
      CmiRecvDevice(static_cast<char*>(q.buf) + q.facts.lb, bytes, tag, completion_msg(r, h));
    } else {  // a derived layout: land it in host memory, unpack when it is in
      q.device_stage = std::malloc(bytes ? bytes : 1);
      CmiRecvDevice(q.device_stage, bytes, tag, completion_msg(r, h));
    }
    return;
  }
  if (n) {
    char* dst = static_cast<char*>(q.buf) + q.facts.lb;
    if (q.device) copy_any(dst, data_of(msg), n);  // host data into a device buffer
    else if (q.facts.contiguous) std::memcpy(dst, data_of(msg), n);
    else type_unpack(data_of(msg), n, q.buf, q.count, q.type);
  }
  CmiFree(msg);
  p.complete(h);
}

// A device transfer into request `h` has landed.
void device_arrived(Rank* r, MPI_Request h) {
  P2p& p = r->p2p();
  Request& q = p.req(h);
  if (q.device_stage) {
    if (q.status.MPI_ERROR == MPI_SUCCESS && q.status.ucharm_bytes > 0)
      type_unpack(q.device_stage, static_cast<std::size_t>(q.status.ucharm_bytes), q.buf, q.count, q.type);
    std::free(q.device_stage);
    q.device_stage = nullptr;
  }
  if (q.ack_world >= 0) send_ack(r, q);
  p.complete(h);
}

void fill_status_from_msg(MPI_Status* st, void* msg) {
  const WireHeader& h = wire(msg);
  if (st) {
    st->MPI_SOURCE = h.src;
    st->MPI_TAG = h.tag;
    st->MPI_ERROR = MPI_SUCCESS;
    st->ucharm_cancelled = 0;
    st->ucharm_bytes = static_cast<long long>(data_bytes(msg));
  }
}

void empty_status(MPI_Status* st) {
  if (!st) return;
  st->MPI_SOURCE = MPI_ANY_SOURCE;
  st->MPI_TAG = MPI_ANY_TAG;
  st->MPI_ERROR = MPI_SUCCESS;
  st->ucharm_cancelled = 0;
  st->ucharm_bytes = 0;
}

void proc_null_status(MPI_Status* st) {
  empty_status(st);
  if (st) st->MPI_SOURCE = MPI_PROC_NULL;
}

// Starts a send. `sync_req`: the request an Ssend's acknowledgement completes (0: none).
// Whether a send's data travels as its own zero-copy transfer (a Converse device transfer,
// which takes host memory as well) rather than copied into the message: device buffers
// (unless +ampi-staging), and contiguous host data of +ampi-direct-min bytes or more. The
// send then completes when the transfer has left the buffer.
bool goes_direct(int count, const TypeFacts& f, bool on_device) {
  if (count <= 0) return false;
  if (on_device) return !staging_forced();
  if (!f.contiguous) return false;
  const std::size_t bytes = static_cast<std::size_t>(count) * f.size;
  return direct_min() > 0 && bytes >= direct_min();
}

// `on_device`: buf is device memory (the caller asked the memory-type cache once);
// `device`: goes_direct said so (the data goes as a transfer, `device_req` completes then).
// `f`: the facts of t.
void start_send(Rank* r, const void* buf, int count, MPI_Datatype t, const TypeFacts& f, int dest, int tag, Comm& c,
                Ctx ctx, MPI_Request sync_req, MPI_Request device_req, bool on_device, bool device) {
  const std::size_t bytes = static_cast<std::size_t>(count) * f.size;
  const int dest_world = c.members[static_cast<std::size_t>(dest)];
  const char* base = static_cast<const char*>(buf) + f.lb;
  if (on_device && !f.contiguous)
    CkAbort("AMPI: a send from a device buffer with a non-contiguous datatype (%s) is not supported",
            type_name(t).c_str());
  std::uint32_t flags = (sync_req ? kSync : 0u) | (device ? kDevice : 0u);
  const std::size_t inline_bytes = device ? 0 : bytes;
  void* msg = wire_alloc(data_offset(flags) + inline_bytes);
  wire(msg) = WireHeader{c.ctx(ctx), c.rank, tag, flags, dest_world, 0};
  if (has_ext(flags)) ext(msg) = WireExt{bytes, 0, r->world_rank(), sync_req};
  if (device) {
    CmiDeviceBuffer db;
    db.ptr = base;
    db.size = bytes;
    CmiSendDevice(g_routes.pe[static_cast<std::size_t>(dest_world)], db, device_req ? completion_msg(r, device_req) : nullptr);
    ext(msg).device_tag = db.tag;
  } else if (bytes) {
    if (on_device) copy_any(data_of(msg), base, bytes);  // +ampi-staging: through host memory
    else if (f.contiguous) std::memcpy(data_of(msg), base, bytes);
    else type_pack(buf, count, t, data_of(msg));
  }
  wire_send(dest_world, msg);
}

// The calling thread waits until request h completes.
void wait_one(P2p& p, MPI_Request h) {
  Request& q = p.req(h);  // stable: requests live in a deque that only grows
  if (q.complete) return;
  CthThread self = CthSelf();
  rank_wait([&q, self] {
    if (q.complete) return true;
    q.waiter = self;  // complete() clears it when it wakes us
    return false;
  });
  q.waiter = nullptr;
}

}  // namespace

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
  req(h).kind = ReqKind::Free;
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

// ---- arrival ----------------------------------------------------------------------------------------
void on_message(Rank* r, void* msg) {
  P2p& p = r->p2p();
  const WireHeader& h = wire(msg);
  if (h.flags & kInternalFlags) {  // an Ssend acknowledgement or a device completion
    MPI_Request req = ext(msg).sender_req;
    CmiFree(msg);
    Request& q = p.req(req);
    if (q.kind == ReqKind::Recv) device_arrived(r, req);
    else p.complete(req);
    return;
  }
  if (MPI_Request req = p.match_posted(h.context, h.src, h.tag)) {
    p.unpost(req);
    deliver(r, req, msg);
    return;
  }
  p.push_unexpected(msg);
  if (CthThread w = p.probe_waiter) {
    p.probe_waiter = nullptr;
    if (w != CthSelf()) CthAwaken(w);
  }
}

namespace {
void on_wire(void* msg) {
  const auto dest = static_cast<std::size_t>(wire(msg).dest);
  Rank* r = dest < g_routes.local.size() ? g_routes.local[dest] : nullptr;
  if (!r) [[unlikely]] {  // its PE's creation message has not come yet (another PE was faster)
    g_routes.early.emplace_back(static_cast<int>(dest), msg);
    return;
  }
  on_message(r, msg);
}
}  // namespace

void route_add(Rank* r) {
  Routes& t = g_routes;
  const auto n = static_cast<std::size_t>(r->world_size());
  if (t.pe.size() != n) {
    t.pe.resize(n);
    for (std::size_t i = 0; i < n; ++i) t.pe[i] = ck::detail::home_pe(r->array_ref(), ck::index(static_cast<int>(i)));
    t.local.assign(n, nullptr);
  }
  t.local[static_cast<std::size_t>(r->world_rank())] = r;
  // What came for it before it existed, in arrival order.
  std::vector<std::pair<int, void*>> early;
  early.swap(t.early);
  for (auto& [dest, msg] : early) {
    if (dest == r->world_rank()) on_message(r, msg);
    else t.early.emplace_back(dest, msg);
  }
}

// ---- the runtime's point-to-point ------------------------------------------------------------------
namespace {
int isend_with(Rank* r, const void* buf, int count, MPI_Datatype t, const TypeFacts& f, int dest, int tag, Comm& c,
               Ctx ctx, MPI_Request* req) {
  P2p& p = r->p2p();
  if (dest == MPI_PROC_NULL) {
    MPI_Request h = p.alloc(ReqKind::Send);
    proc_null_status(&p.req(h).status);
    p.req(h).complete = true;
    *req = h;
    return MPI_SUCCESS;
  }
  const bool on_device = count > 0 && is_device(buf);
  const bool device = goes_direct(count, f, on_device);
  MPI_Request h = p.alloc(ReqKind::Send);
  empty_status(&p.req(h).status);
  start_send(r, buf, count, t, f, dest, tag, c, ctx, 0, device ? h : 0, on_device, device);
  if (!device) p.req(h).complete = true;  // the data is in the message: the buffer is free
  *req = h;
  return MPI_SUCCESS;
}

int send_with(Rank* r, const void* buf, int count, MPI_Datatype t, const TypeFacts& f, int dest, int tag, Comm& c,
              Ctx ctx) {
  if (dest == MPI_PROC_NULL) return MPI_SUCCESS;
  const bool on_device = count > 0 && is_device(buf);
  if (goes_direct(count, f, on_device)) {  // the buffer is busy until the transfer is done
    MPI_Request h;
    isend_with(r, buf, count, t, f, dest, tag, c, ctx, &h);
    return wait_all(1, &h, nullptr);
  }
  start_send(r, buf, count, t, f, dest, tag, c, ctx, 0, 0, on_device, false);
  return MPI_SUCCESS;
}

// `matched`: a message MPI_Mprobe took (MPI_Mrecv): received as is, no matching.
int irecv_with(Rank* r, void* buf, int count, MPI_Datatype t, const TypeFacts& f, int src, int tag, Comm& c,
               Ctx ctx, MPI_Request* req, void* matched = nullptr) {
  P2p& p = r->p2p();
  MPI_Request h = p.alloc(ReqKind::Recv);
  Request& q = p.req(h);
  *req = h;
  if (src == MPI_PROC_NULL) {
    proc_null_status(&q.status);
    q.complete = true;
    return MPI_SUCCESS;
  }
  q.buf = buf;
  q.count = count;
  q.type = t;
  q.peer = src;
  q.tag = tag;
  q.comm = c.handle;
  q.context = c.ctx(ctx);
  q.facts = f;
  q.device = count > 0 && is_device(buf);
  if (q.device && !f.contiguous)
    CkAbort("AMPI: a receive into a device buffer with a non-contiguous datatype (%s) is not supported",
            type_name(t).c_str());
  if (matched) {
    deliver(r, h, matched);
    return MPI_SUCCESS;
  }
  std::int32_t u = p.find_unexpected(q.context, src, tag);
  if (u >= 0) deliver(r, h, p.take_unexpected(u));
  else p.post(h);
  return MPI_SUCCESS;
}

// A blocking receive: its status into *st (when not null); returns the status's error.
int recv_with(Rank* r, void* buf, int count, MPI_Datatype t, const TypeFacts& f, int src, int tag, Comm& c, Ctx ctx,
              MPI_Status* st) {
  MPI_Request h;
  irecv_with(r, buf, count, t, f, src, tag, c, ctx, &h);
  P2p& p = r->p2p();
  wait_one(p, h);
  Request& q = p.req(h);
  const int rc = q.status.MPI_ERROR;
  if (st) *st = q.status;
  p.release(h);
  return rc;
}
}  // namespace

int isend(const void* buf, int count, MPI_Datatype t, int dest, int tag, Comm& c, Ctx ctx, MPI_Request* req) {
  TypeFacts f;
  type_facts(t, f);
  return isend_with(current_rank(), buf, count, t, f, dest, tag, c, ctx, req);
}

int send(const void* buf, int count, MPI_Datatype t, int dest, int tag, Comm& c, Ctx ctx) {
  TypeFacts f;
  type_facts(t, f);
  return send_with(current_rank(), buf, count, t, f, dest, tag, c, ctx);
}

int issend(const void* buf, int count, MPI_Datatype t, int dest, int tag, Comm& c, Ctx ctx, MPI_Request* req) {
  if (dest == MPI_PROC_NULL) return isend(buf, count, t, dest, tag, c, ctx, req);
  Rank* r = current_rank();
  P2p& p = r->p2p();
  MPI_Request h = p.alloc(ReqKind::Send);
  empty_status(&p.req(h).status);
  // Completes on the receiver's acknowledgement, which comes after the data left (device
  // data: the receiver posts its receive when it matches; the ack follows from there).
  const bool on_device = count > 0 && is_device(buf);
  TypeFacts f;
  type_facts(t, f);
  start_send(r, buf, count, t, f, dest, tag, c, ctx, h, 0, on_device, goes_direct(count, f, on_device));
  *req = h;
  return MPI_SUCCESS;
}

int irecv(void* buf, int count, MPI_Datatype t, int src, int tag, Comm& c, Ctx ctx, MPI_Request* req) {
  TypeFacts f;
  type_facts(t, f);
  return irecv_with(current_rank(), buf, count, t, f, src, tag, c, ctx, req);
}

int recv(void* buf, int count, MPI_Datatype t, int src, int tag, Comm& c, Ctx ctx, MPI_Status* st) {
  TypeFacts f;
  type_facts(t, f);
  return recv_with(current_rank(), buf, count, t, f, src, tag, c, ctx, st);
}

int wait_all(int n, MPI_Request* reqs, MPI_Status* statuses) {
  P2p& p = current_rank()->p2p();
  int rc = MPI_SUCCESS;
  for (int i = 0; i < n; ++i) {
    if (reqs[i] == MPI_REQUEST_NULL) continue;
    wait_one(p, reqs[i]);
    Request& q = p.req(reqs[i]);
    if (q.status.MPI_ERROR != MPI_SUCCESS) rc = q.status.MPI_ERROR;
    if (statuses) statuses[i] = q.status;
    p.release(reqs[i]);
    reqs[i] = MPI_REQUEST_NULL;
  }
  return rc;
}

// ---- tasks (nonblocking collectives) -------------------------------------------------------------
namespace {
struct Task {
  Rank* rank;
  MPI_Request req;
  int (*body)(void*);
  void* arg;
};
void task_main(void* a) {
  Task t = *static_cast<Task*>(a);
  delete static_cast<Task*>(a);
  g_running.rank = t.rank;
  t.rank->load_getopt();  // the rank's, not the last running rank's (switch_away saves it back)
  int rc = t.body(t.arg);
  P2p& p = t.rank->p2p();
  p.req(t.req).status.MPI_ERROR = rc;
  p.complete(t.req);
  g_running.rank = nullptr;  // the thread ends here
}
}  // namespace

MPI_Request start_task(int (*body)(void*), void* arg) {
  Rank* r = current_rank();
  P2p& p = r->p2p();
  MPI_Request h = p.alloc(ReqKind::Task);
  empty_status(&p.req(h).status);
  // The rank's stack size (mapped lazily): a task may go as deep as the rank, e.g. into
  // UCX's endpoint creation on a first message to a PE, deeper still in a sanitizer build.
  CthThread t = CthCreate(task_main, new Task{r, h, body, arg}, rank_stack_size());
  CthSetData(t, r);
  CthAwaken(t);
  return h;
}

}  // namespace ampi

// ==== the MPI functions ===============================================================================
using namespace ampi;

namespace {

// Argument checks shared by the point-to-point calls; MPI_SUCCESS or the error's return.
// `f`: the facts of t, for the call to use.
int check_buffer(MPI_Comm comm, const char* fn, Comm* c, const void* buf, int count, MPI_Datatype t, TypeFacts& f) {
  if (!c) [[unlikely]] return error(comm, MPI_ERR_COMM, fn, "invalid communicator %d", comm);
  if (count < 0) [[unlikely]] return error(comm, MPI_ERR_COUNT, fn, "negative count %d", count);
  if (!type_facts(t, f)) [[unlikely]]
    return error(comm, MPI_ERR_TYPE, fn, "%s %s", type_valid(t) ? "uncommitted datatype" : "invalid datatype",
                 type_name(t).c_str());
  if (count > 0 && !buf && f.size > 0 && f.lb == 0)
    return error(comm, MPI_ERR_BUFFER, fn, "buffer is NULL with count %d", count);
  return MPI_SUCCESS;
}

int check_send(const char* fn, const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
               Comm*& c, TypeFacts& f) {
  c = comm_get(comm);
  if (int rc = check_buffer(comm, fn, c, buf, count, t, f)) return rc;
  if (dest != MPI_PROC_NULL && (dest < 0 || dest >= c->size()))
    return error(comm, MPI_ERR_RANK, fn, "destination rank %d is out of range [0, %d)", dest, c->size());
  if (tag < 0 || tag > UCHARM_MPI_TAG_UB) return error(comm, MPI_ERR_TAG, fn, "invalid tag %d", tag);
  return MPI_SUCCESS;
}

int check_recv(const char* fn, const void* buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm,
               Comm*& c, TypeFacts& f) {
  c = comm_get(comm);
  if (int rc = check_buffer(comm, fn, c, buf, count, t, f)) return rc;
  if (src != MPI_PROC_NULL && src != MPI_ANY_SOURCE && (src < 0 || src >= c->size()))
    return error(comm, MPI_ERR_RANK, fn, "source rank %d is out of range [0, %d)", src, c->size());
  if (tag != MPI_ANY_TAG && (tag < 0 || tag > UCHARM_MPI_TAG_UB))
    return error(comm, MPI_ERR_TAG, fn, "invalid tag %d", tag);
  return MPI_SUCCESS;
}

// The standard and ready modes are one send here (a ready send's receive is posted by
// definition). The buffered mode always copies the data into the message, whatever its
// size: a buffered send must complete without the receiver.
int checked_send(const char* fn, const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
                 bool buffered = false) {
  Comm* c;
  TypeFacts f;
  if (int rc = check_send(fn, buf, count, t, dest, tag, comm, c, f)) [[unlikely]] return rc;
  if (!buffered || dest == MPI_PROC_NULL) return send_with(current_rank(), buf, count, t, f, dest, tag, *c, Ctx::P2P);
  start_send(current_rank(), buf, count, t, f, dest, tag, *c, Ctx::P2P, 0, 0, count > 0 && is_device(buf), false);
  return MPI_SUCCESS;
}
int checked_isend(const char* fn, const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
                  MPI_Request* request, bool buffered = false) {
  Comm* c;
  TypeFacts f;
  if (int rc = check_send(fn, buf, count, t, dest, tag, comm, c, f)) [[unlikely]] return rc;
  if (!buffered || dest == MPI_PROC_NULL) return isend_with(current_rank(), buf, count, t, f, dest, tag, *c, Ctx::P2P, request);
  P2p& p = current_rank()->p2p();
  MPI_Request h = p.alloc(ReqKind::Send);
  empty_status(&p.req(h).status);
  start_send(current_rank(), buf, count, t, f, dest, tag, *c, Ctx::P2P, 0, 0, count > 0 && is_device(buf), false);
  p.req(h).complete = true;
  *request = h;
  return MPI_SUCCESS;
}

// The error a completed request's status reports, through the communicator's handler.
int status_error(const char* fn, MPI_Comm comm, const MPI_Status& st) {
  if (st.MPI_ERROR == MPI_ERR_TRUNCATE)
    return error(comm, MPI_ERR_TRUNCATE, fn, "message of %lld bytes from rank %d (tag %d) is larger than the receive buffer",
                 st.ucharm_bytes, st.MPI_SOURCE, st.MPI_TAG);
  if (st.MPI_ERROR != MPI_SUCCESS) return error(comm, st.MPI_ERROR, fn, "the operation failed");
  return MPI_SUCCESS;
}

// Finishes a completed request for Wait/Test: status out, request freed (or made inactive).
// Returns the request's error class (MPI_SUCCESS normally).
int finish(P2p& p, MPI_Request* h, MPI_Status* st) {
  Request& q = p.req(*h);
  const int err = q.status.MPI_ERROR;
  if (st) *st = q.status;
  if (q.persistent) {
    q.active = false;
    q.complete = false;
  } else {
    p.release(*h);
    *h = MPI_REQUEST_NULL;
  }
  return err;
}

bool inactive(P2p& p, MPI_Request h) {
  return h == MPI_REQUEST_NULL || (p.req(h).persistent && !p.req(h).active);
}

// Lets the scheduler run (messages arrive, other ranks run) and comes back: what a polling
// call (Test, Iprobe) does when it finds nothing, so that polling loops make progress.
void poll_yield() { rank_poll(); }

int check_request(P2p& p, MPI_Request h, const char* fn) {
  if (h != MPI_REQUEST_NULL && !p.valid(h))
    return error(MPI_COMM_WORLD, MPI_ERR_REQUEST, fn, "invalid request %d", h);
  return MPI_SUCCESS;
}

int check_requests(P2p& p, int n, const MPI_Request* reqs, const char* fn) {
  for (int i = 0; i < n; ++i)
    if (int rc = check_request(p, reqs[i], fn)) return rc;
  return MPI_SUCCESS;
}

// The calling thread waits until one of the active requests completes.
void wait_for_any(P2p& p, int n, const MPI_Request* reqs) {
  CthThread self = CthSelf();
  rank_wait([&] {
    bool any = false;
    for (int i = 0; i < n; ++i) {
      if (inactive(p, reqs[i])) continue;
      Request& q = p.req(reqs[i]);
      if (q.complete) any = true;
      else q.waiter = self;  // the first to complete clears its own and wakes us
    }
    return any;
  });
  for (int i = 0; i < n; ++i)
    if (!inactive(p, reqs[i])) p.req(reqs[i]).waiter = nullptr;
}

// Waitany/Testany: finishes the first complete active request (true, with *indx, *status
// and in `rc` the call's result through the request's communicator's handler); false when
// none is complete. `any_active`: some request is active.
bool take_one(P2p& p, int n, MPI_Request* reqs, int* indx, MPI_Status* status, const char* fn, bool& any_active,
              int& rc) {
  for (int i = 0; i < n; ++i) {
    MPI_Request& h = reqs[i];
    if (inactive(p, h)) continue;
    any_active = true;
    if (!p.req(h).complete) continue;
    *indx = i;
    const MPI_Comm comm = p.req(h).comm;
    MPI_Status st;
    const int err = finish(p, &h, &st);
    if (status) *status = st;
    rc = err ? status_error(fn, comm, st) : MPI_SUCCESS;
    return true;
  }
  return false;
}

int none_active_one(int* indx, MPI_Status* status) {
  *indx = MPI_UNDEFINED;
  empty_status(status);
  return MPI_SUCCESS;
}

std::pair<int, int> active_and_complete(P2p& p, int n, const MPI_Request* reqs) {
  int active = 0, complete = 0;
  for (int i = 0; i < n; ++i) {
    if (inactive(p, reqs[i])) continue;
    ++active;
    if (p.req(reqs[i]).complete) ++complete;
  }
  return {active, complete};
}

// Waitsome/Testsome: finishes every complete active request (MPI_UNDEFINED when none is active).
int take_some(P2p& p, int n, MPI_Request* reqs, int* outcount, int* indices, MPI_Status* statuses, const char* fn) {
  if (active_and_complete(p, n, reqs).first == 0) {
    *outcount = MPI_UNDEFINED;
    return MPI_SUCCESS;
  }
  int done = 0;
  bool failed = false;
  MPI_Comm err_comm = MPI_COMM_WORLD;  // the first failed request's: its handler decides
  for (int i = 0; i < n; ++i) {
    MPI_Request& h = reqs[i];
    if (inactive(p, h) || !p.req(h).complete) continue;
    const MPI_Comm comm = p.req(h).comm;
    MPI_Status st;
    if (finish(p, &h, &st) && !failed) {
      failed = true;
      err_comm = comm;
    }
    if (statuses) statuses[done] = st;
    indices[done++] = i;
  }
  *outcount = done;
  if (failed) return error(err_comm, MPI_ERR_IN_STATUS, fn, "a request failed (see the statuses)");
  return MPI_SUCCESS;
}

}  // namespace

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Send(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return checked_send("MPI_Send", buf, count, datatype, dest, tag, comm);
}

int PMPI_Rsend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return checked_send("MPI_Rsend", buf, count, datatype, dest, tag, comm);
}

int PMPI_Bsend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return checked_send("MPI_Bsend", buf, count, datatype, dest, tag, comm, true);
}

int PMPI_Ssend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  Comm* c;
  TypeFacts f;
  if (int rc = check_send("MPI_Ssend", buf, count, datatype, dest, tag, comm, c, f)) return rc;
  MPI_Request h;
  ampi::issend(buf, count, datatype, dest, tag, *c, Ctx::P2P, &h);
  return wait_all(1, &h, nullptr);
}

int PMPI_Isend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request* request) {
  return checked_isend("MPI_Isend", buf, count, datatype, dest, tag, comm, request);
}

int PMPI_Irsend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                MPI_Request* request) {
  return checked_isend("MPI_Irsend", buf, count, datatype, dest, tag, comm, request);
}

int PMPI_Ibsend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                MPI_Request* request) {
  return checked_isend("MPI_Ibsend", buf, count, datatype, dest, tag, comm, request, true);
}

int PMPI_Issend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                MPI_Request* request) {
  Comm* c;
  TypeFacts f;
  if (int rc = check_send("MPI_Issend", buf, count, datatype, dest, tag, comm, c, f)) return rc;
  return ampi::issend(buf, count, datatype, dest, tag, *c, Ctx::P2P, request);
}

int PMPI_Recv(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status* status) {
  Comm* c;
  TypeFacts f;
  if (int rc = check_recv("MPI_Recv", buf, count, datatype, source, tag, comm, c, f)) [[unlikely]] return rc;
  MPI_Status st;
  if (recv_with(current_rank(), buf, count, datatype, f, source, tag, *c, Ctx::P2P, &st) != MPI_SUCCESS) [[unlikely]] {
    if (status) *status = st;
    return status_error("MPI_Recv", comm, st);
  }
  if (status) *status = st;
  return MPI_SUCCESS;
}

int PMPI_Irecv(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
               MPI_Request* request) {
  Comm* c;
  TypeFacts f;
  if (int rc = check_recv("MPI_Irecv", buf, count, datatype, source, tag, comm, c, f)) [[unlikely]] return rc;
  return irecv_with(current_rank(), buf, count, datatype, f, source, tag, *c, Ctx::P2P, request);
}

int PMPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  Comm* c;
  TypeFacts sf, rf;
  if (int rc = check_send("MPI_Sendrecv", sendbuf, sendcount, sendtype, dest, sendtag, comm, c, sf)) return rc;
  if (int rc = check_recv("MPI_Sendrecv", recvbuf, recvcount, recvtype, source, recvtag, comm, c, rf)) return rc;
  MPI_Request r[2];
  Rank* rank = current_rank();
  irecv_with(rank, recvbuf, recvcount, recvtype, rf, source, recvtag, *c, Ctx::P2P, &r[0]);
  isend_with(rank, sendbuf, sendcount, sendtype, sf, dest, sendtag, *c, Ctx::P2P, &r[1]);
  MPI_Status st[2];
  wait_all(2, r, st);
  if (status) *status = st[0];
  return status_error("MPI_Sendrecv", comm, st[0]);
}

int PMPI_Sendrecv_replace(void* buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source,
                          int recvtag, MPI_Comm comm, MPI_Status* status) {
  Comm* c;
  TypeFacts f;
  if (int rc = check_send("MPI_Sendrecv_replace", buf, count, datatype, dest, sendtag, comm, c, f)) return rc;
  if (int rc = check_recv("MPI_Sendrecv_replace", buf, count, datatype, source, recvtag, comm, c, f)) return rc;
  // The outgoing data must not be overwritten by the incoming: a send copied into its
  // message is safe; one that goes as a transfer (device or large host data) would only
  // leave once the peer receives, and the peer may be waiting for us the same way, so it is
  // sent from a packed host copy instead.
  MPI_Request r[2];
  const bool on_device = count > 0 && is_device(buf);
  std::vector<char> copy;
  if (goes_direct(count, f, on_device)) {
    copy.resize(static_cast<std::size_t>(count) * f.size);
    if (on_device) copy_any(copy.data(), static_cast<const char*>(buf) + f.lb, copy.size());
    else type_pack(buf, count, datatype, copy.data());
    ampi::isend(copy.data(), static_cast<int>(copy.size()), MPI_BYTE, dest, sendtag, *c, Ctx::P2P, &r[1]);
  } else {
    ampi::isend(buf, count, datatype, dest, sendtag, *c, Ctx::P2P, &r[1]);
  }
  ampi::irecv(buf, count, datatype, source, recvtag, *c, Ctx::P2P, &r[0]);
  MPI_Status st[2];
  wait_all(2, r, st);
  if (status) *status = st[0];
  return status_error("MPI_Sendrecv_replace", comm, st[0]);
}

int PMPI_Buffer_attach(void* buffer, int size) {
  (void)buffer;
  (void)size;  // sends never need the user's buffer: the runtime copies into its messages
  return MPI_SUCCESS;
}

int PMPI_Buffer_detach(void* buffer_addr, int* size) {
  *static_cast<void**>(buffer_addr) = nullptr;
  *size = 0;
  return MPI_SUCCESS;
}

// ---- completion ----------------------------------------------------------------------------------------
int PMPI_Wait(MPI_Request* request, MPI_Status* status) {
  P2p& p = current_rank()->p2p();
  if (int rc = check_request(p, *request, "MPI_Wait")) return rc;
  if (inactive(p, *request)) {
    empty_status(status);
    return MPI_SUCCESS;
  }
  wait_one(p, *request);
  const MPI_Comm comm = p.req(*request).comm;
  MPI_Status st;
  int err = finish(p, request, &st);
  if (status) *status = st;
  return err ? status_error("MPI_Wait", comm, st) : MPI_SUCCESS;
}

int PMPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  P2p& p = current_rank()->p2p();
  if (int rc = check_request(p, *request, "MPI_Test")) return rc;
  if (inactive(p, *request)) {
    *flag = 1;
    empty_status(status);
    return MPI_SUCCESS;
  }
  if (!p.req(*request).complete) poll_yield();
  if (!p.req(*request).complete) {
    *flag = 0;
    return MPI_SUCCESS;
  }
  *flag = 1;
  const MPI_Comm comm = p.req(*request).comm;
  MPI_Status st;
  int err = finish(p, request, &st);
  if (status) *status = st;
  return err ? status_error("MPI_Test", comm, st) : MPI_SUCCESS;
}

int PMPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[]) {
  P2p& p = current_rank()->p2p();
  if (int rc = check_requests(p, count, array_of_requests, "MPI_Waitall")) return rc;
  bool any_error = false;
  MPI_Comm err_comm = MPI_COMM_WORLD;  // the first failed request's: its handler decides
  for (int i = 0; i < count; ++i) {
    MPI_Request& h = array_of_requests[i];
    MPI_Status* st = array_of_statuses ? &array_of_statuses[i] : nullptr;
    if (inactive(p, h)) {
      empty_status(st);
      continue;
    }
    wait_one(p, h);
    const MPI_Comm comm = p.req(h).comm;
    MPI_Status s;
    if (finish(p, &h, &s) && !any_error) {
      any_error = true;
      err_comm = comm;
    }
    if (st) *st = s;
  }
  if (any_error) return error(err_comm, MPI_ERR_IN_STATUS, "MPI_Waitall", "a request failed (see the statuses)");
  return MPI_SUCCESS;
}

int PMPI_Testall(int count, MPI_Request array_of_requests[], int* flag, MPI_Status array_of_statuses[]) {
  P2p& p = current_rank()->p2p();
  if (int rc = check_requests(p, count, array_of_requests, "MPI_Testall")) return rc;
  auto all_done = [&] {
    for (int i = 0; i < count; ++i)
      if (!inactive(p, array_of_requests[i]) && !p.req(array_of_requests[i]).complete) return false;
    return true;
  };
  if (!all_done()) poll_yield();
  if (!all_done()) {
    *flag = 0;
    return MPI_SUCCESS;
  }
  *flag = 1;
  return PMPI_Waitall(count, array_of_requests, array_of_statuses);
}

int PMPI_Waitany(int count, MPI_Request array_of_requests[], int* indx, MPI_Status* status) {
  P2p& p = current_rank()->p2p();
  if (int rc = check_requests(p, count, array_of_requests, "MPI_Waitany")) return rc;
  for (;;) {
    bool any_active = false;
    int rc;
    if (take_one(p, count, array_of_requests, indx, status, "MPI_Waitany", any_active, rc)) return rc;
    if (!any_active) return none_active_one(indx, status);
    wait_for_any(p, count, array_of_requests);
  }
}

int PMPI_Testany(int count, MPI_Request array_of_requests[], int* indx, int* flag, MPI_Status* status) {
  P2p& p = current_rank()->p2p();
  if (int rc = check_requests(p, count, array_of_requests, "MPI_Testany")) return rc;
  for (int pass = 0; pass < 2; ++pass) {
    bool any_active = false;
    int rc;
    *flag = 1;
    if (take_one(p, count, array_of_requests, indx, status, "MPI_Testany", any_active, rc)) return rc;
    if (!any_active) return none_active_one(indx, status);
    if (pass == 0) poll_yield();
  }
  *indx = MPI_UNDEFINED;
  *flag = 0;
  return MPI_SUCCESS;
}

int PMPI_Testsome(int incount, MPI_Request array_of_requests[], int* outcount, int array_of_indices[],
                  MPI_Status array_of_statuses[]) {
  P2p& p = current_rank()->p2p();
  if (int rc = check_requests(p, incount, array_of_requests, "MPI_Testsome")) return rc;
  if (active_and_complete(p, incount, array_of_requests).second == 0) poll_yield();
  return take_some(p, incount, array_of_requests, outcount, array_of_indices, array_of_statuses, "MPI_Testsome");
}

int PMPI_Waitsome(int incount, MPI_Request array_of_requests[], int* outcount, int array_of_indices[],
                  MPI_Status array_of_statuses[]) {
  P2p& p = current_rank()->p2p();
  if (int rc = check_requests(p, incount, array_of_requests, "MPI_Waitsome")) return rc;
  for (;;) {
    auto [active, complete] = active_and_complete(p, incount, array_of_requests);
    if (active == 0 || complete > 0) break;
    wait_for_any(p, incount, array_of_requests);
  }
  return take_some(p, incount, array_of_requests, outcount, array_of_indices, array_of_statuses, "MPI_Waitsome");
}

int PMPI_Request_free(MPI_Request* request) {
  P2p& p = current_rank()->p2p();
  if (*request == MPI_REQUEST_NULL || !p.valid(*request))
    return error(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Request_free", "invalid request %d", *request);
  Request& q = p.req(*request);
  if (q.complete || (q.persistent && !q.active)) p.release(*request);
  else q.user_freed = true, q.persistent = false;
  *request = MPI_REQUEST_NULL;
  return MPI_SUCCESS;
}

int PMPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  P2p& p = current_rank()->p2p();
  if (int rc = check_request(p, request, "MPI_Request_get_status")) return rc;
  if (inactive(p, request)) {
    *flag = 1;
    empty_status(status);
    return MPI_SUCCESS;
  }
  if (!p.req(request).complete) poll_yield();
  *flag = p.req(request).complete;
  if (*flag && status) *status = p.req(request).status;
  return MPI_SUCCESS;
}

int PMPI_Cancel(MPI_Request* request) {
  P2p& p = current_rank()->p2p();
  if (*request == MPI_REQUEST_NULL || !p.valid(*request))
    return error(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Cancel", "invalid request %d", *request);
  Request& q = p.req(*request);
  // A receive not yet matched is taken back; a send has left already (it completes normally).
  if (q.kind == ReqKind::Recv && !q.complete && !q.matched && !(q.persistent && !q.active)) {
    p.unpost(*request);
    q.status.ucharm_cancelled = 1;
    q.status.MPI_SOURCE = MPI_ANY_SOURCE;
    q.status.MPI_TAG = MPI_ANY_TAG;
    q.status.ucharm_bytes = 0;
    p.complete(*request);
  }
  return MPI_SUCCESS;
}

int PMPI_Test_cancelled(const MPI_Status* status, int* flag) {
  *flag = status->ucharm_cancelled;
  return MPI_SUCCESS;
}

int PMPI_Status_set_cancelled(MPI_Status* status, int flag) {
  status->ucharm_cancelled = flag;
  return MPI_SUCCESS;
}

// ---- probe ----------------------------------------------------------------------------------------------
namespace {
constexpr std::int32_t kProbeProcNull = -2;
// What the four probes share: checks the arguments (an error: *rc, and -1), then finds the
// first matching unexpected message, waiting for one (`blocking`) or after one scheduler
// step (else; -1 when none). kProbeProcNull for MPI_PROC_NULL.
std::int32_t probe_find(const char* fn, int source, int tag, MPI_Comm comm, bool blocking, int* rc, P2p*& pp) {
  Comm* c;
  TypeFacts f;
  *rc = check_recv(fn, nullptr, 0, MPI_BYTE, source, tag, comm, c, f);
  if (*rc) return -1;
  if (source == MPI_PROC_NULL) return kProbeProcNull;
  P2p& p = current_rank()->p2p();
  pp = &p;
  const std::uint32_t ctx = c->ctx(Ctx::P2P);
  std::int32_t u = p.find_unexpected(ctx, source, tag);
  if (u >= 0) return u;
  if (!blocking) {
    poll_yield();
    return p.find_unexpected(ctx, source, tag);
  }
  CthThread self = CthSelf();
  rank_wait([&] {
    if ((u = p.find_unexpected(ctx, source, tag)) >= 0) return true;
    p.probe_waiter = self;  // a new arrival clears it, waking us
    return false;
  });
  p.probe_waiter = nullptr;
  return u;
}
}  // namespace

int PMPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  int rc;
  P2p* p = nullptr;
  const std::int32_t u = probe_find("MPI_Iprobe", source, tag, comm, false, &rc, p);
  if (rc) return rc;
  *flag = u >= 0 || u == kProbeProcNull;
  if (u == kProbeProcNull) proc_null_status(status);
  else if (u >= 0) fill_status_from_msg(status, p->unexpected_msg(u));
  return MPI_SUCCESS;
}

int PMPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
  int rc;
  P2p* p = nullptr;
  const std::int32_t u = probe_find("MPI_Probe", source, tag, comm, true, &rc, p);
  if (rc) return rc;
  if (u == kProbeProcNull) proc_null_status(status);
  else fill_status_from_msg(status, p->unexpected_msg(u));
  return MPI_SUCCESS;
}

// Matched probes: the message leaves the unexpected queue at the probe, so that no other
// receive (another thread of the rank, a wildcard) can take it before MPI_Mrecv.
int PMPI_Improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message, MPI_Status* status) {
  int rc;
  P2p* p = nullptr;
  const std::int32_t u = probe_find("MPI_Improbe", source, tag, comm, false, &rc, p);
  if (rc) return rc;
  *flag = u >= 0 || u == kProbeProcNull;
  if (u == kProbeProcNull) {
    *message = MPI_MESSAGE_NO_PROC;
    proc_null_status(status);
  } else if (u >= 0) {
    fill_status_from_msg(status, p->unexpected_msg(u));
    *message = p->keep_matched(p->take_unexpected(u), comm);
  }
  return MPI_SUCCESS;
}

int PMPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status) {
  int rc;
  P2p* p = nullptr;
  const std::int32_t u = probe_find("MPI_Mprobe", source, tag, comm, true, &rc, p);
  if (rc) return rc;
  if (u == kProbeProcNull) {
    *message = MPI_MESSAGE_NO_PROC;
    proc_null_status(status);
    return MPI_SUCCESS;
  }
  fill_status_from_msg(status, p->unexpected_msg(u));
  *message = p->keep_matched(p->take_unexpected(u), comm);
  return MPI_SUCCESS;
}

namespace {
// Starts the receive of a matched message into request *request (MPI_Mrecv/Imrecv).
int start_mrecv(const char* fn, void* buf, int count, MPI_Datatype datatype, MPI_Message* message,
                MPI_Request* request) {
  Rank* r = current_rank();
  P2p& p = r->p2p();
  if (*message == MPI_MESSAGE_NO_PROC) {
    *message = MPI_MESSAGE_NULL;
    Comm* world = comm_get(MPI_COMM_WORLD);
    TypeFacts f;
    type_facts(MPI_BYTE, f);
    return irecv_with(r, buf, count, datatype, f, MPI_PROC_NULL, 0, *world, Ctx::P2P, request);
  }
  MPI_Comm comm = MPI_COMM_NULL;
  void* msg = p.take_matched(*message, &comm);
  if (!msg) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "message handle %d names no message taken by MPI_Mprobe/MPI_Improbe (already received?)", *message);
  Comm* c = comm_get(comm);
  TypeFacts f;
  if (int rc = check_buffer(comm, fn, c, buf, count, datatype, f)) {
    *message = p.keep_matched(msg, comm);  // still the program's to receive
    return rc;
  }
  *message = MPI_MESSAGE_NULL;
  return irecv_with(r, buf, count, datatype, f, wire(msg).src, wire(msg).tag, *c, Ctx::P2P, request, msg);
}
}  // namespace

int PMPI_Imrecv(void* buf, int count, MPI_Datatype datatype, MPI_Message* message, MPI_Request* request) {
  return start_mrecv("MPI_Imrecv", buf, count, datatype, message, request);
}

int PMPI_Mrecv(void* buf, int count, MPI_Datatype datatype, MPI_Message* message, MPI_Status* status) {
  MPI_Request h;
  if (int rc = start_mrecv("MPI_Mrecv", buf, count, datatype, message, &h)) return rc;
  P2p& p = current_rank()->p2p();
  wait_one(p, h);
  const MPI_Comm comm = p.req(h).comm;
  MPI_Status st;
  const int err = finish(p, &h, &st);
  if (status) *status = st;
  return err ? status_error("MPI_Mrecv", comm, st) : MPI_SUCCESS;
}

int PMPI_Get_count(const MPI_Status* status, MPI_Datatype datatype, int* count) {
  if (!type_committed(datatype))
    return error(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Get_count", "invalid datatype %s", type_name(datatype).c_str());
  const std::size_t size = type_size(datatype);
  const auto bytes = static_cast<std::size_t>(status->ucharm_bytes);
  if (size == 0) *count = bytes == 0 ? 0 : MPI_UNDEFINED;
  else *count = bytes % size ? MPI_UNDEFINED : static_cast<int>(bytes / size);
  return MPI_SUCCESS;
}

int PMPI_Get_elements(const MPI_Status* status, MPI_Datatype datatype, int* count) {
  if (!type_committed(datatype))
    return error(MPI_COMM_WORLD, MPI_ERR_TYPE, "MPI_Get_elements", "invalid datatype %s", type_name(datatype).c_str());
  long long n = type_basic_elements(datatype, static_cast<std::size_t>(status->ucharm_bytes));
  *count = n < 0 ? MPI_UNDEFINED : static_cast<int>(n);
  return MPI_SUCCESS;
}

int PMPI_Status_set_elements(MPI_Status* status, MPI_Datatype datatype, int count) {
  status->ucharm_bytes = static_cast<long long>(type_size(datatype)) * count;
  return MPI_SUCCESS;
}

// ---- persistent requests ------------------------------------------------------------------------------
namespace {
int init_persistent(const char* fn, bool is_send, bool sync, const void* buf, int count, MPI_Datatype t, int peer,
                    int tag, MPI_Comm comm, MPI_Request* request) {
  Comm* c;
  TypeFacts f;
  if (int rc = is_send ? check_send(fn, buf, count, t, peer, tag, comm, c, f) : check_recv(fn, buf, count, t, peer, tag, comm, c, f))
    return rc;
  P2p& p = current_rank()->p2p();
  MPI_Request h = p.alloc(is_send ? ReqKind::Send : ReqKind::Recv);
  Request& q = p.req(h);
  q.persistent = true;
  q.sync = sync;
  q.buf = const_cast<void*>(buf);
  q.sbuf = buf;
  q.count = count;
  q.type = t;
  q.peer = peer;
  q.tag = tag;
  q.comm = comm;
  *request = h;
  return MPI_SUCCESS;
}
}  // namespace

int PMPI_Send_init(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                   MPI_Request* request) {
  return init_persistent("MPI_Send_init", true, false, buf, count, datatype, dest, tag, comm, request);
}
int PMPI_Ssend_init(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                    MPI_Request* request) {
  return init_persistent("MPI_Ssend_init", true, true, buf, count, datatype, dest, tag, comm, request);
}
int PMPI_Rsend_init(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                    MPI_Request* request) {
  return init_persistent("MPI_Rsend_init", true, false, buf, count, datatype, dest, tag, comm, request);
}
int PMPI_Bsend_init(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                    MPI_Request* request) {
  return init_persistent("MPI_Bsend_init", true, false, buf, count, datatype, dest, tag, comm, request);
}
int PMPI_Recv_init(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                   MPI_Request* request) {
  return init_persistent("MPI_Recv_init", false, false, buf, count, datatype, source, tag, comm, request);
}

int PMPI_Start(MPI_Request* request) {
  Rank* r = current_rank();
  P2p& p = r->p2p();
  if (*request == MPI_REQUEST_NULL || !p.valid(*request) || !p.req(*request).persistent)
    return error(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Start", "request %d is not a persistent request", *request);
  Request& q = p.req(*request);
  if (q.active) return error(q.comm, MPI_ERR_REQUEST, "MPI_Start", "request %d is already active", *request);
  Comm* c = comm_get(q.comm);
  if (!c) return error(q.comm, MPI_ERR_COMM, "MPI_Start", "the request's communicator was freed");
  const MPI_Request h = *request;
  q.active = true;
  q.complete = false;
  q.matched = false;
  empty_status(&q.status);
  if (q.kind == ReqKind::Send) {
    if (q.peer == MPI_PROC_NULL) {
      proc_null_status(&q.status);
      q.complete = true;
      return MPI_SUCCESS;
    }
    const bool on_device = q.count > 0 && is_device(q.sbuf);
    TypeFacts f;
    type_facts(q.type, f);
    const bool device = goes_direct(q.count, f, on_device);
    start_send(r, q.sbuf, q.count, q.type, f, q.peer, q.tag, *c, Ctx::P2P, q.sync ? h : 0, device && !q.sync ? h : 0,
               on_device, device);
    if (!q.sync && !device) p.req(h).complete = true;
    return MPI_SUCCESS;
  }
  if (q.peer == MPI_PROC_NULL) {
    proc_null_status(&q.status);
    q.complete = true;
    return MPI_SUCCESS;
  }
  q.context = c->ctx(Ctx::P2P);
  type_facts(q.type, q.facts);
  q.device = q.count > 0 && is_device(q.buf);
  std::int32_t u = p.find_unexpected(q.context, q.peer, q.tag);
  if (u >= 0) deliver(r, h, p.take_unexpected(u));
  else p.post(h);
  return MPI_SUCCESS;
}

int PMPI_Startall(int count, MPI_Request array_of_requests[]) {
  for (int i = 0; i < count; ++i)
    if (int rc = PMPI_Start(&array_of_requests[i])) return rc;
  return MPI_SUCCESS;
}

}
#pragma GCC visibility pop
