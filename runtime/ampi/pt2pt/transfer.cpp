// Point-to-point transfer: routing, arrival, delivery, sends and receives inside the runtime,
// nonblocking-collective tasks; device buffers.
//
// A message is one Converse message to the receiving rank's PE: WireHeader (+ WireExt)
// + the packed data. Routing and the order of a pair of ranks' messages are route.cpp's;
// the receiver matches them in that order against its posted receives, or queues them as
// unexpected (queues.cpp: O(1) per message).
//
// Device buffers (CUDA memory, found by the memory-type cache): the data goes device-direct
// as a Converse device transfer (CmiSendDevice) started at once, next to the host message,
// which carries its tag; the receiver posts the device receive when the message matches.
// That needs no rendezvous round trip; ANY_SOURCE works because matching happens on the host
// message. +ampi-staging copies through host memory instead.
#include "pt2pt/pt2pt.h"
#include "pt2pt/status.h"
#include "pt2pt/wire.h"
#include "rank.h"

#include <cstring>
#include <utility>
#include <vector>

#ifdef UCHARM_AMPI_CUDA
#include <cuda_runtime.h>
#endif

namespace ampi {
using namespace pt2pt;

namespace {

constexpr std::uint32_t kInternalFlags = kSyncAck;  // with kSendDone or kPulled, or a receive's completion

}  // namespace

bool is_device(const void* p) { return p && cuda_loaded() && CmiGetMemoryType(p) == CmiMemoryType::Cuda; }
void copy_bytes_any(void* dst, const void* src, std::size_t n) { pt2pt::copy_any(dst, src, n); }

namespace pt2pt {

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

// The message that completes a device transfer on this rank (runs here later): a
// receive's (`flags` kSyncAck) or a send's (kSyncAck | kSendDone; req 0: an Ssend's, which
// its acknowledgement completes).
void* completion_msg(Rank* r, MPI_Request req, std::uint16_t flags = kSyncAck) {
  void* m = wire_alloc(sizeof(WireHeader) + sizeof(WireExt));
  wire(m) = WireHeader{0, 0, 0, flags, 0, r->world_rank(), 0};
  ext(m) = WireExt{0, 0, r->world_rank(), req};
  return m;
}

// Starts a device transfer's receive into `dst` for request h (counted until it lands).
void recv_direct(Rank* r, MPI_Request h, void* dst, std::size_t bytes, std::uint64_t tag) {
  ++r->p2p().direct_in;
  CmiRecvDevice(dst, bytes, tag, completion_msg(r, h));
}

// Acknowledges a matched Ssend: the sender's request completes.
void send_ack(Rank* r, Request& q) {
  void* ack = wire_alloc(sizeof(WireHeader) + sizeof(WireExt));
  wire(ack) = WireHeader{0, 0, 0, kSyncAck, 0, q.ack_world, 0};
  ext(ack) = WireExt{0, 0, r->world_rank(), q.ack_req};
  wire_send_unordered(q.ack_world, ack);
  q.ack_world = -1;
}

char* place(Rank* r, const WireHeader& h, std::size_t bytes, MPI_Request* taken) {
  P2p& p = r->p2p();
  const MPI_Request req = p.find_posted(h.context, h.src, h.tag);
  if (!req) return nullptr;
  Request& q = p.req(req);
  if (q.device || !q.facts.contiguous || q.ext_kind != ReqExtKind::None ||
      static_cast<std::size_t>(q.count) * q.facts.size < bytes)
    return nullptr;  // deliver() copies (device, derived layout) or reports the truncation
  p.unpost(req);
  q.status.MPI_SOURCE = h.src;
  q.status.MPI_TAG = h.tag;
  q.status.MPI_ERROR = MPI_SUCCESS;
  q.status.MPI_COMM = q.comm;
  status_set_bytes(q.status, static_cast<long long>(bytes));
  q.matched = true;
  ++p.direct_in;  // a move waits until the data is in
  *taken = req;
  return static_cast<char*>(q.buf) + q.facts.lb;
}

void placed_arrived(Rank* r, MPI_Request h) {
  P2p& p = r->p2p();
  --p.direct_in;
  p.complete(h);
  p.note_progress();
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
  q.status.MPI_COMM = q.comm;
  status_set_bytes(q.status, static_cast<long long>(bytes < room ? bytes : room));
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
      recv_direct(r, h, q.device_stage, bytes, tag);
      return;
    }
    if (q.facts.contiguous) {
      recv_direct(r, h, static_cast<char*>(q.buf) + q.facts.lb, bytes, tag);
    } else {  // a derived layout: land it in host memory, unpack when it is in
      q.device_stage = std::malloc(bytes ? bytes : 1);
      recv_direct(r, h, q.device_stage, bytes, tag);
    }
    return;
  }
  if (n) {
    char* dst = static_cast<char*>(q.buf) + q.facts.lb;
    if (q.device) copy_any(dst, data_of(msg), n);  // host data into a device buffer
    else if (q.facts.contiguous) std::memcpy(dst, data_of(msg), n);
    else type_unpack(data_of(msg), n, q.buf, q.count, q.type);
  }
  wire_free(msg);
  p.complete(h);
}

// A device transfer into request `h` has landed.
void device_arrived(Rank* r, MPI_Request h) {
  P2p& p = r->p2p();
  Request& q = p.req(h);
  if (q.device_stage) {
    // Truncated into host memory: the part that fits, as an inline message gives it.
    if ((q.status.MPI_ERROR == MPI_SUCCESS || !q.device) && q.status.ucharm_bytes > 0)
      type_unpack(q.device_stage, static_cast<std::size_t>(q.status.ucharm_bytes), q.buf, q.count, q.type);
    std::free(q.device_stage);
    q.device_stage = nullptr;
  }
  if (q.ack_world >= 0) send_ack(r, q);
  p.complete(h);
  --p.direct_in;  // after the completion: a move waiting for it packs the request complete
  p.note_progress();
}

// The probes' status: a single-completion status, so MPI_ERROR is left alone (§3.2.5).
void fill_status_from_msg(MPI_Status* st, void* msg, MPI_Comm comm) {
  const WireHeader& h = wire(msg);
  if (st) {
    st->MPI_SOURCE = h.src;
    st->MPI_TAG = h.tag;
    st->ucharm_cancelled = 0;
    st->MPI_COMM = comm;
    status_set_bytes(*st, static_cast<long long>(data_bytes(msg)));
  }
}

void empty_status(MPI_Status* st) {
  if (!st) return;
  st->MPI_SOURCE = MPI_ANY_SOURCE;
  st->MPI_TAG = MPI_ANY_TAG;
  st->MPI_ERROR = MPI_SUCCESS;
  st->ucharm_cancelled = 0;
  st->MPI_COMM = MPI_COMM_NULL;
  status_set_bytes(*st, 0);
}

void proc_null_status(MPI_Status* st) {
  empty_status(st);
  if (st) st->MPI_SOURCE = MPI_PROC_NULL;
}

bool blocking_from_buffer(int dest_world) {
  const Rank* r = current_rank();
  const int pe = route_pe(dest_world), me = CmiMyPe();
  return r && r->world_size() <= CmiNumPes() && pe != me && CmiPhysicalNodeID(pe) == CmiPhysicalNodeID(me) &&
         !CmiOversubscribed();
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
  const auto flags = static_cast<std::uint16_t>((sync_req ? unsigned{kSync} : 0u) | (device ? unsigned{kDevice} : 0u));
  const std::size_t inline_bytes = device ? 0 : bytes;
  void* msg = wire_alloc(data_offset(flags) + inline_bytes);
  wire(msg) = WireHeader{c.ctx(ctx), c.rank, tag, flags, 0, dest_world, 0};
  if (has_ext(flags)) ext(msg) = WireExt{bytes, 0, r->world_rank(), sync_req};
  if (device) {
    CmiDeviceBuffer db;
    db.ptr = base;
    db.size = bytes;
    // Counted until the data has left (a move waits for it: the buffer moves with the rank).
    ++r->p2p().direct_out;
    CmiSendDevice(route_pe(dest_world), db, completion_msg(r, device_req, kSyncAck | kSendDone));
    ext(msg).device_tag = db.tag;
  } else if (bytes) {
    if (on_device) copy_any(data_of(msg), base, bytes);  // +ampi-staging: through host memory
    else if (f.contiguous) std::memcpy(data_of(msg), base, bytes);
    else type_pack(buf, count, t, data_of(msg));
  }
  wire_send(r, dest_world, msg);
}

void send_inline(Rank* r, const void* data, std::size_t bytes, int dest, int tag, Comm& c, Ctx ctx, bool from_buffer) {
  const int dest_world = c.members[static_cast<std::size_t>(dest)];
  if (from_buffer && bytes >= kVectorSendMin &&
      bytes <= (r->world_size() > CmiNumPes() ? kVectorSendShared : kVectorSendMax)) {  // the header here, the data where it is
    WireHead head;
    wire_head(head, WireHeader{c.ctx(ctx), c.rank, tag, 0, 0, dest_world, 0});
    wire_send_vector(r, dest_world, head, data, bytes);
    return;
  }
  void* msg = wire_alloc(sizeof(WireHeader) + bytes);
  wire(msg) = WireHeader{c.ctx(ctx), c.rank, tag, 0, 0, dest_world, 0};
  if (bytes) std::memcpy(payload(msg) + sizeof(WireHeader), data, bytes);
  wire_send(r, dest_world, msg);
}

// The calling thread waits until request h completes.
void wait_one(P2p& p, MPI_Request h) {
  Request& q = p.req(h);  // stable: requests live in chunks that never move
  if (q.complete) return;
  CthThread self = CthSelf();
  rank_wait([&q, self] {
    if (q.complete) return true;
    q.waiter = self;  // complete() clears it when it wakes us
    return false;
  });
  q.waiter = nullptr;
}

}  // namespace pt2pt
// ---- arrival ----------------------------------------------------------------------------------------
void on_message(Rank* r, void* msg) {
  P2p& p = r->p2p();
  const WireHeader& h = wire(msg);
  if (h.flags & kInternalFlags) {  // an Ssend acknowledgement or a device completion
    const std::uint16_t flags = h.flags;
    MPI_Request req = ext(msg).sender_req;
    wire_free(msg);
    if (flags & (kSendDone | kPulled)) [[unlikely]] {  // a direct send's data left; a pull for a move landed
      if (req) p.complete(req);
      --(flags & kSendDone ? p.direct_out : p.direct_in);
      p.note_progress();
      return;
    }
    Request& q = p.req(req);
    if (q.kind == ReqKind::Recv) device_arrived(r, req);
    else p.complete(req);
    return;
  }
  if (MPI_Request req = p.take_posted(h.context, h.src, h.tag)) {
    deliver(r, req, msg);
    return;
  }
  p.push_unexpected(msg);
  if (CthThread w = p.probe_waiter) {
    p.probe_waiter = nullptr;
    if (w != CthSelf()) CthAwaken(w);
    if (!p.more_probe_waiters.empty()) [[unlikely]]
      P2p::wake_more(p.more_probe_waiters);
  }
}

// ---- the runtime's point-to-point ------------------------------------------------------------------
namespace {
// A nonblocking send of contiguous host data above the eager size from the user's buffer
// (CmiVectorSendNoCopy): no copy into a message, and the receiver may place the data
// straight into its posted receive; request h completes when UCX no longer reads the
// buffer. Not from +ampi-direct-min (`direct`), where the receiver pulls the data: two-member
// Allreduce of 4 MiB (IMB, 256 KiB pieces) took 951 us from the buffer against 708 pulled
// (1 MiB: 128 against 162). False: nothing sent.
bool send_nocopy(Rank* r, const void* buf, int count, const TypeFacts& f, int dest, int tag, Comm& c, Ctx ctx,
                 MPI_Request h, bool direct) {
  const std::size_t bytes = static_cast<std::size_t>(count) * f.size;
  const int dest_world = c.members[static_cast<std::size_t>(dest)];
  if (direct || bytes < kNoCopySendMin || bytes > kVectorSendMax) return false;
  WireHead head;
  wire_head(head, WireHeader{c.ctx(ctx), c.rank, tag, 0, 0, dest_world, 0});
  void* done = completion_msg(r, h, kSyncAck | kSendDone);
  if (!wire_send_nocopy(r, dest_world, head, static_cast<const char*>(buf) + f.lb, bytes, done)) {
    wire_free(done);
    return false;
  }
  ++r->p2p().direct_out;  // a move waits until UCX has let go of the buffer
  return true;
}
}  // namespace

namespace pt2pt {
int isend_with(Rank* r, const void* buf, int count, MPI_Datatype t, const TypeFacts& f, int dest, int tag, Comm& c,
               Ctx ctx, MPI_Request* req) {
  P2p& p = r->p2p();
  if (dest == MPI_PROC_NULL) {
    MPI_Request h = p.alloc(ReqKind::Send);
    proc_null_status(&p.req(h).status);
    p.mark_complete(h);
    *req = h;
    return MPI_SUCCESS;
  }
  const bool on_device = count > 0 && is_device(buf);
  const bool device = goes_direct(count, f, on_device);
  MPI_Request h = p.alloc(ReqKind::Send);
  empty_status(&p.req(h).status);
  p.req(h).on_device = on_device;
  if (!on_device && f.contiguous && send_nocopy(r, buf, count, f, dest, tag, c, ctx, h, device)) {
    *req = h;
    return MPI_SUCCESS;
  }
  start_send(r, buf, count, t, f, dest, tag, c, ctx, 0, device ? h : 0, on_device, device);
  if (!device) p.mark_complete(h);  // the data is in the message: the buffer is free
  *req = h;
  return MPI_SUCCESS;
}

int send_with(Rank* r, const void* buf, int count, MPI_Datatype t, const TypeFacts& f, int dest, int tag, Comm& c,
              Ctx ctx) {
  if (dest == MPI_PROC_NULL) return MPI_SUCCESS;
  const bool on_device = count > 0 && is_device(buf);
  const bool host_contiguous = !on_device && f.contiguous;
  if (goes_direct(count, f, on_device) &&
      !(host_contiguous && static_cast<std::size_t>(count) * f.size <= kVectorSendMax &&
        blocking_from_buffer(c.members[static_cast<std::size_t>(dest)]))) {
    MPI_Request h;  // the buffer is busy until the transfer is done
    isend_with(r, buf, count, t, f, dest, tag, c, ctx, &h);
    return wait_all(1, &h, nullptr);
  }
  if (host_contiguous) {  // blocking: the data may go from the buffer
    send_inline(r, static_cast<const char*>(buf) + f.lb, static_cast<std::size_t>(count) * f.size, dest, tag, c, ctx);
    return MPI_SUCCESS;
  }
  start_send(r, buf, count, t, f, dest, tag, c, ctx, 0, 0, on_device, false);
  return MPI_SUCCESS;
}

// `matched`: a message MPI_Mprobe took (MPI_Mrecv): received as is, no matching.
int irecv_with(Rank* r, void* buf, int count, MPI_Datatype t, const TypeFacts& f, int src, int tag, Comm& c,
               Ctx ctx, MPI_Request* req, void* matched, bool quiet) {
  P2p& p = r->p2p();
  MPI_Request h = p.alloc(ReqKind::Recv);
  Request& q = p.req(h);
  q.quiet = quiet;
  *req = h;
  if (src == MPI_PROC_NULL) {
    proc_null_status(&q.status);
    p.mark_complete(h);
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
  irecv_with(r, buf, count, t, f, src, tag, c, ctx, &h, nullptr, true);
  P2p& p = r->p2p();
  wait_one(p, h);
  Request& q = p.req(h);
  const int rc = q.status.MPI_ERROR;
  if (st) *st = q.status;
  p.release(h);
  return rc;
}
}  // namespace pt2pt

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

bool send_returns_at_once(const void* buf, int count, MPI_Datatype t, int dest, const Comm& c) {
  TypeFacts f;
  type_facts(t, f);
  return inline_send_ok(buf, count, f, c, dest);
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
  p.req(h).on_device = on_device;
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
  --p.tasks;  // after the completion: a move waiting for the tasks packs the request complete
  p.note_progress();
  g_running.rank = nullptr;  // the thread ends here
}
}  // namespace

MPI_Request start_task(int (*body)(void*), void* arg, MPI_Request reuse) {
  Rank* r = current_rank();
  P2p& p = r->p2p();
  MPI_Request h = reuse ? reuse : p.alloc(ReqKind::Task);
  empty_status(&p.req(h).status);
  ++p.tasks;
  // The rank's stack size (mapped lazily): a task may go as deep as the rank, e.g. into
  // UCX's endpoint creation on a first message to a PE, deeper still in a sanitizer build.
  CthThread t = CthCreate(task_main, new Task{r, h, body, arg}, rank_stack_size());
  CthSetData(t, r);
  CthAwaken(t);
  return h;
}

}  // namespace ampi
