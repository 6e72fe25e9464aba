// UCX machine layer, non-SMP: one UCP context and worker per PE (= process).
//
// Host messages: up to the eager size they go with the EAGER tag into pre-posted
// receives; larger ones go with the PROBE tag and are found with ucp_tag_probe_nb and
// received with ucp_tag_msg_recv_nbx. UCX callbacks only record completions; delivery
// to Converse and re-posting happen after ucp_worker_progress returns, so no UCX call
// is ever made from inside a UCX callback.
#include <ucharm/machine.h>
#include <ucharm/tag.h>

#include <hwloc.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fmt/core.h>
#include <memory>
#include <vector>

#include "bootstrap.h"
#include "cuda_driver.h"

namespace ucharm::machine {
namespace {

constexpr const char* kAddressKey = "ucharm.ucp.addr";

enum class ReqKind : std::uint8_t { Send, Eager, Probe, OpSend, DeviceRecv, ChannelRecv };

// Per-request state lives in the space UCX reserves in front of each request
// (ucp_params_t::request_size): nothing is allocated per message.
struct RequestState {
  void* msg;     // the send buffer, or the receive buffer of a probed message
  int pe;        // destination of a send (for error reports)
  int slot;      // pre-posted receive slot (Eager)
  ReqKind kind;
  DeviceRecvType rtype;
  Completion done;        // OpSend, ChannelRecv
  DeviceRdmaOp* op;       // DeviceRecv
  std::size_t capacity;   // receive buffer size (truncation reports)
  std::uint64_t tag;
  RequestState* prev;     // outstanding device/channel receives, cancelled at exit
  RequestState* next;
  bool gpu;               // a receive into GPU memory (counted in gpu_inflight)
};

// State of one device/channel send, handed to UCX as user_data. It must exist before the
// send is issued: with UCP_OP_ATTR_FLAG_NO_IMM_CMPL, UCX may run the callback inside
// ucp_tag_send_nbx, before the request it returns could be filled in.
struct OpState {
  Completion done;
  int pe;
  bool gpu;
  OpState* next_free;
};

// A device/channel operation waiting for the work queued on its CUDA stream: an event
// recorded on the stream is polled from progress. Pooled, with its event, so nothing is
// created per operation once the pool has grown.
struct Deferred {
  bool send;
  ReqKind kind;           // receives: DeviceRecv or ChannelRecv
  DeviceRecvType rtype;
  MemoryType mem;
  int pe;
  void* ptr;
  std::size_t size;
  std::uint64_t tag;
  Completion done;
  DeviceRdmaOp* op;
#ifdef UCHARM_HAVE_CUDA
  CUevent event;
#endif
  Deferred* next;         // FIFO of waiting operations
  Deferred* next_free;
};

// A free list that grows in chunks and never shrinks: per-operation state without a heap
// allocation per operation. T has a `T* next_free` member.
template <class T>
class ChunkPool {
 public:
  T* take() {
    if (!free_) {
      chunks_.push_back(std::make_unique<T[]>(kChunk));
      for (int i = 0; i < kChunk; ++i) give(&chunks_.back()[i]);
    }
    T* t = free_;
    free_ = t->next_free;
    return t;
  }
  void give(T* t) {
    t->next_free = free_;
    free_ = t;
  }
  template <class F>
  void for_each(F&& f) {
    for (auto& c : chunks_)
      for (int i = 0; i < kChunk; ++i) f(c[i]);
  }

 private:
  static constexpr int kChunk = 64;
  T* free_ = nullptr;
  std::vector<std::unique_ptr<T[]>> chunks_;
};

// A device/channel completion waiting to run after progress.
struct PendingDone {
  Completion done;
  DeviceRdmaOp* op;  // a device receive (handled by its type's handler) or nullptr
  DeviceRecvType rtype;
};

void request_init(void* request) { std::memset(request, 0, sizeof(RequestState)); }

struct EagerSlot {
  void* buf = nullptr;
  RequestState* req = nullptr;  // outstanding receive, or null
};

struct Completed {
  int slot;
  std::size_t bytes;
};

struct Arrived {
  void* msg;
  std::size_t bytes;
};

struct Machine {
  Options opt;
  Hooks hooks{};
  Info info;
  std::unique_ptr<Bootstrap> boot;
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  std::vector<ucp_ep_h> eps;
  std::vector<bool> ep_peer_mode;  // endpoint created with UCP_ERR_HANDLING_MODE_PEER
  std::vector<EagerSlot> slots;
  std::vector<Completed> completed;  // filled by callbacks, drained after progress
  std::vector<int> repost;           // delivered slots waiting to be posted again
  std::vector<Arrived> probe_arrived;
  int ucx_fd = -1, wake_fd = -1, epoll_fd = -1;
  std::size_t pending_sends = 0;
  std::size_t pending_probe_recvs = 0;
  bool shutting_down = false;
  // device and channel operations
  std::vector<PendingDone> done;  // run after progress
  DeviceRecvHandler recv_handlers[kDeviceRecvTypes] = {};
  std::uint64_t device_counter = 0;
  RequestState* open_recvs = nullptr;  // intrusive list
  ChunkPool<OpState> ops;
  ChunkPool<Deferred> deferred_pool;
  Deferred* deferred_head = nullptr;  // waiting for their streams, oldest first
  Deferred* deferred_tail = nullptr;
  // GPU-memory operations in flight (and operations waiting for a stream). UCX finishes
  // them by polling CUDA events, which do not signal the worker's event fd, so an idle PE
  // must not sleep while any is open.
  std::size_t gpu_inflight = 0;
  std::vector<char> my_address;        // for the endpoint to self (device data to self)
  bool trace_ops = false;              // UCHARM_TRACE_OPS=1: one stderr line per device/channel op
  bool force_callbacks = false;        // UCHARM_TEST_SEND_CALLBACKS=1: host buffers take the
                                       // device path (callback always), so CI covers it
};

Machine g_machine;  // this process's PE (non-SMP); reached only through M()
inline Machine& M() { return g_machine; }

[[noreturn]] void fatal(const std::string& what) {
  fmt::print(stderr, "ucharm: PE {}: {}\n", M().info.my_pe, what);
  std::fflush(stderr);
  LrtsAbort(1, what.c_str());
}

void check(ucs_status_t s, const char* what) {
  if (s != UCS_OK) fatal(fmt::format("{} failed: {}", what, ucs_status_string(s)));
}

// ---- callbacks: record only -------------------------------------------------------

void send_done(void* request, ucs_status_t status, void*) {
  auto* r = static_cast<RequestState*>(request);
  Machine& m = M();
  if (status != UCS_OK && !m.shutting_down)
    m.hooks.peer_failed(r->pe, ucs_status_string(status));
  --m.pending_sends;
  m.hooks.release(r->msg);
  ucp_request_free(request);
}

void eager_done(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void*) {
  auto* r = static_cast<RequestState*>(request);
  Machine& m = M();
  EagerSlot& slot = m.slots[r->slot];
  slot.req = nullptr;
  if (status == UCS_OK) {
    m.completed.push_back({r->slot, info->length});  // capacity == prepost: no realloc
  } else if (status == UCS_ERR_CANCELED) {
    m.hooks.release(slot.buf);
    slot.buf = nullptr;
  } else if (status == UCS_ERR_MESSAGE_TRUNCATED) {
    fatal(fmt::format("an EAGER message was larger than this PE's eager size ({} bytes): "
                      "all PEs must use the same +eager-size", m.opt.eager_size));
  } else if (!m.shutting_down) {
    fatal(fmt::format("eager receive failed: {}", ucs_status_string(status)));
  }
  ucp_request_free(request);
}

void probe_done(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void*) {
  auto* r = static_cast<RequestState*>(request);
  Machine& m = M();
  --m.pending_probe_recvs;
  if (status != UCS_OK) {
    if (!m.shutting_down) fatal(fmt::format("large-message receive failed: {}", ucs_status_string(status)));
    m.hooks.release(r->msg);
  } else {
    m.probe_arrived.push_back({r->msg, info->length});
  }
  ucp_request_free(request);
}

void ep_error(void* arg, ucp_ep_h, ucs_status_t status) {
  Machine& m = M();
  if (m.shutting_down) return;
  m.hooks.peer_failed(static_cast<int>(reinterpret_cast<intptr_t>(arg)), ucs_status_string(status));
}

// ---- receives ---------------------------------------------------------------------

// Posts slot `i`; if a message is already waiting the receive may complete in place,
// in which case it is delivered and the slot is posted again.
void post_eager(int i) {
  Machine& m = M();
  for (;;) {
    EagerSlot& slot = m.slots[i];
    slot.buf = m.hooks.alloc(m.opt.eager_size);
    ucp_tag_recv_info_t tinfo{};
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_RECV_INFO |
                     UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    p.cb.recv = eager_done;
    p.recv_info.tag_info = &tinfo;
    p.memory_type = UCS_MEMORY_TYPE_HOST;
    ucs_status_ptr_t sp = ucp_tag_recv_nbx(m.worker, slot.buf, m.opt.eager_size,
                                           tag::host_tag(tag::MsgType::Eager), tag::kFullMask, &p);
    if (sp == nullptr) {  // completed in place
      void* msg = slot.buf;
      slot.buf = nullptr;
      m.hooks.deliver(msg, tinfo.length);
      continue;
    }
    if (UCS_PTR_IS_ERR(sp)) fatal(fmt::format("posting an eager receive failed: {}",
                                              ucs_status_string(UCS_PTR_STATUS(sp))));
    auto* r = static_cast<RequestState*>(sp);
    r->kind = ReqKind::Eager;
    r->slot = i;
    r->msg = slot.buf;
    slot.req = r;
    return;
  }
}

int probe_large() {
  Machine& m = M();
  int n = 0;
  for (;;) {
    ucp_tag_recv_info_t tinfo{};
    ucp_tag_message_h msg = ucp_tag_probe_nb(m.worker, tag::host_tag(tag::MsgType::Probe),
                                             tag::kFullMask, 1, &tinfo);
    if (!msg) return n;
    ++n;
    void* buf = m.hooks.alloc(tinfo.length);
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    p.cb.recv = probe_done;
    p.memory_type = UCS_MEMORY_TYPE_HOST;
    ucs_status_ptr_t sp = ucp_tag_msg_recv_nbx(m.worker, buf, tinfo.length, msg, &p);
    if (sp == nullptr) {
      m.probe_arrived.push_back({buf, tinfo.length});
    } else if (UCS_PTR_IS_ERR(sp)) {
      fatal(fmt::format("receiving a large message failed: {}", ucs_status_string(UCS_PTR_STATUS(sp))));
    } else {
      auto* r = static_cast<RequestState*>(sp);
      r->kind = ReqKind::Probe;
      r->msg = buf;
      ++m.pending_probe_recvs;
    }
  }
}

// Hands completed receives to Converse. Their slots are re-posted at the start of the
// next progress call, so that the handler of a message runs before the re-post (the
// re-post is off the latency path).
int drain() {
  Machine& m = M();
  int n = 0;
  // Index loops: deliver() may send (broadcast forwarding) but never re-enters progress.
  for (std::size_t k = 0; k < m.completed.size(); ++k, ++n) {
    auto [i, bytes] = m.completed[k];
    void* msg = m.slots[i].buf;
    m.slots[i].buf = nullptr;
    m.hooks.deliver(msg, bytes);
    m.repost.push_back(i);  // capacity == prepost
  }
  m.completed.clear();
  for (std::size_t k = 0; k < m.probe_arrived.size(); ++k, ++n)
    m.hooks.deliver(m.probe_arrived[k].msg, m.probe_arrived[k].bytes);
  m.probe_arrived.clear();
  // Completions may start operations that complete in place (appending): index loop.
  for (std::size_t k = 0; k < m.done.size(); ++k, ++n) {
    PendingDone d = m.done[k];
    if (d.op) {
      DeviceRecvHandler h = m.recv_handlers[static_cast<int>(d.rtype)];
      if (!h) fatal(fmt::format("a device receive completed, but no handler is set for its type {}",
                                static_cast<int>(d.rtype)));
      h(d.op);
    } else if (d.done.fn) {
      d.done.fn(d.done.ctx);
    }
  }
  m.done.clear();
  return n;
}

void repost_slots() {
  Machine& m = M();
  for (std::size_t k = 0; k < m.repost.size(); ++k) post_eager(m.repost[k]);
  m.repost.clear();
}

// ---- device and channel operations -------------------------------------------------------

ucp_ep_h endpoint(int pe);

ucs_memory_type_t ucs_type(MemoryType t) {
  return t == MemoryType::Cuda ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
}

OpState* take_op() { return M().ops.take(); }
void give_op(OpState* s) { M().ops.give(s); }

void op_send_done(void* request, ucs_status_t status, void* user_data) {
  auto* st = static_cast<OpState*>(user_data);
  Machine& m = M();
  if (status != UCS_OK && !m.shutting_down) m.hooks.peer_failed(st->pe, ucs_status_string(status));
  --m.pending_sends;
  if (st->gpu) --m.gpu_inflight;
  if (status == UCS_OK) m.done.push_back({st->done, nullptr, DeviceRecvType::Converse});
  if (m.trace_ops) fmt::print(stderr, "ucharm: PE {}: send to PE {} done: {}\n", m.info.my_pe, st->pe, ucs_status_string(status));
  give_op(st);
  ucp_request_free(request);
}

void unlink_recv(RequestState* r) {
  Machine& m = M();
  if (r->prev) r->prev->next = r->next;
  else m.open_recvs = r->next;
  if (r->next) r->next->prev = r->prev;
}

std::string describe_tag(std::uint64_t t) {
  if (tag::DeviceTag::is(t))
    return fmt::format("GPU Messaging data from PE {} (counter {})", tag::DeviceTag::src_pe(t),
                       tag::DeviceTag::counter(t));
  return fmt::format("channel {} data (counter {})", tag::ChannelTag::channel_id(t), tag::ChannelTag::counter(t));
}

void trace(const char* what, std::uint64_t t, std::size_t size, MemoryType mem) {
  if (M().trace_ops)
    fmt::print(stderr, "ucharm: PE {}: {} {} ({} bytes, {})\n", M().info.my_pe, what, describe_tag(t), size,
               LrtsMemoryTypeName(mem));
}

// A receive completed (in a callback or in place): queue its completion.
void recv_finished(RequestState* r, ucs_status_t status, std::size_t length) {
  Machine& m = M();
  if (r->gpu) --m.gpu_inflight;
  if (status == UCS_ERR_CANCELED) return;
  if (status == UCS_ERR_MESSAGE_TRUNCATED)
    fatal(fmt::format("{} does not fit: the receive buffer holds {} bytes, the incoming data is "
                      "{} bytes", describe_tag(r->tag), r->capacity, length));
  if (status != UCS_OK) {
    if (!m.shutting_down) fatal(fmt::format("{}: receive failed: {}", describe_tag(r->tag), ucs_status_string(status)));
    return;
  }
  trace("received", r->tag, length, MemoryType::Host);
  if (r->kind == ReqKind::DeviceRecv) m.done.push_back({{}, r->op, r->rtype});
  else m.done.push_back({r->done, nullptr, DeviceRecvType::Converse});
}

void op_recv_done(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void*) {
  auto* r = static_cast<RequestState*>(request);
  unlink_recv(r);
  recv_finished(r, status, info ? info->length : 0);
  ucp_request_free(request);
}

void tagged_send(int pe, const void* ptr, std::size_t size, MemoryType mem, std::uint64_t t, Completion done) {
  Machine& m = M();
  trace("send", t, size, mem);
  if (pe < 0 || pe >= m.info.num_pes) fatal(fmt::format("device send to PE {}, outside [0, {})", pe, m.info.num_pes));
  OpState* st = take_op();
  st->done = done;
  st->pe = pe;
  st->gpu = mem != MemoryType::Host;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  // UCX's inline fast path picks its short protocol from its own memory-type cache, not
  // from memory_type: with CUDA memory that cache missed (static cudart, early
  // allocations) it memcpy's from the device pointer and crashes (seen on H200). Asking
  // for no immediate completion skips that path for device buffers.
  if (mem != MemoryType::Host || m.force_callbacks) p.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.cb.send = op_send_done;
  p.user_data = st;
  p.memory_type = ucs_type(mem);
  ++m.pending_sends;  // before the call: the callback may run inside it
  if (st->gpu) ++m.gpu_inflight;
  ucs_status_ptr_t sp = ucp_tag_send_nbx(endpoint(pe), ptr, size, t, &p);
  if (sp == nullptr) {  // completed in place: no callback comes
    --m.pending_sends;
    if (st->gpu) --m.gpu_inflight;
    give_op(st);
    m.done.push_back({done, nullptr, DeviceRecvType::Converse});
    return;
  }
  if (UCS_PTR_IS_ERR(sp)) {
    --m.pending_sends;
    if (st->gpu) --m.gpu_inflight;
    give_op(st);
    m.hooks.peer_failed(pe, ucs_status_string(UCS_PTR_STATUS(sp)));
  }
  // Otherwise the request belongs to UCX and the callback (maybe already run) owns st.
}

// Posts a full-mask receive; `setup` fills the request's own fields.
template <class Setup>
void tagged_recv(void* ptr, std::size_t size, MemoryType mem, std::uint64_t t, ReqKind kind, Setup&& setup) {
  Machine& m = M();
  trace("post receive", t, size, mem);
  ucp_tag_recv_info_t tinfo{};
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_MEMORY_TYPE | UCP_OP_ATTR_FIELD_RECV_INFO;
  p.cb.recv = op_recv_done;
  p.memory_type = ucs_type(mem);
  p.recv_info.tag_info = &tinfo;
  ucs_status_ptr_t sp = ucp_tag_recv_nbx(m.worker, ptr, size, t, tag::kFullMask, &p);
  if (UCS_PTR_IS_ERR(sp) && UCS_PTR_STATUS(sp) != UCS_ERR_MESSAGE_TRUNCATED)
    fatal(fmt::format("posting a receive for {} failed: {}", describe_tag(t), ucs_status_string(UCS_PTR_STATUS(sp))));
  // Filling the request after the call is safe here (unlike sends): receives do not ask
  // for NO_IMM_CMPL, so UCX either completes in place (returns NULL, no callback) or
  // calls back later, from progress.
  RequestState local{};
  RequestState* r = (sp == nullptr || UCS_PTR_IS_ERR(sp)) ? &local : static_cast<RequestState*>(sp);
  r->kind = kind;
  r->capacity = size;
  r->tag = t;
  r->gpu = mem != MemoryType::Host;
  if (r->gpu) ++m.gpu_inflight;
  setup(*r);
  if (r == &local) {  // completed in place (or truncated at once)
    recv_finished(r, sp == nullptr ? UCS_OK : UCS_PTR_STATUS(sp), tinfo.length);
    return;
  }
  r->prev = nullptr;
  r->next = m.open_recvs;
  if (m.open_recvs) m.open_recvs->prev = r;
  m.open_recvs = r;
}

void issue_recv(void* ptr, std::size_t size, MemoryType mem, std::uint64_t t, ReqKind kind, Completion done,
                DeviceRdmaOp* op, DeviceRecvType rtype) {
  tagged_recv(ptr, size, mem, t, kind, [&](RequestState& r) {
    r.done = done;
    r.op = op;
    r.rtype = rtype;
  });
}

// Queues `d` behind the work on `stream` (or fails with a clear message).
void defer_on_stream(Deferred* d, GpuStream stream) {
  Machine& m = M();
#ifdef UCHARM_HAVE_CUDA
  const CudaDriver& cu = cuda_driver();
  if (!cu.ok) fatal("an operation names a CUDA stream, but CUDA is not available in this process (no driver or GPU)");
  CUresult r = CUDA_SUCCESS;
  if (!d->event) r = cu.event_create(&d->event, CU_EVENT_DISABLE_TIMING);
  if (r == CUDA_SUCCESS) r = cu.event_record(d->event, static_cast<CUstream>(stream));
  if (r != CUDA_SUCCESS)
    fatal(fmt::format("recording an event on CUDA stream {} for {} failed: {} (is the stream valid, and its "
                      "device's context current on this PE?)",
                      stream, describe_tag(d->tag), cu.name_of(r)));
#else
  (void)stream;
  fatal(fmt::format("{} names a CUDA stream, but ucharm was built without CUDA", describe_tag(d->tag)));
#endif
  d->next = nullptr;
  if (m.deferred_tail) m.deferred_tail->next = d;
  else m.deferred_head = d;
  m.deferred_tail = d;
  ++m.gpu_inflight;
  trace("waits for its stream:", d->tag, d->size, d->mem);
}

// Starts the deferred operations whose streams have caught up; returns how many.
int start_deferred() {
  int n = 0;
#ifdef UCHARM_HAVE_CUDA
  Machine& m = M();
  const CudaDriver& cu = cuda_driver();
  Deferred* prev = nullptr;
  for (Deferred* d = m.deferred_head; d;) {
    CUresult r = cu.event_query(d->event);
    if (r == CUDA_ERROR_NOT_READY) {
      prev = d;
      d = d->next;
      continue;
    }
    if (r != CUDA_SUCCESS) fatal(fmt::format("waiting on the CUDA stream of {} failed: {}", describe_tag(d->tag), cu.name_of(r)));
    Deferred* next = d->next;
    if (prev) prev->next = next;
    else m.deferred_head = next;
    if (m.deferred_tail == d) m.deferred_tail = prev;
    --m.gpu_inflight;
    if (d->send) tagged_send(d->pe, d->ptr, d->size, d->mem, d->tag, d->done);
    else issue_recv(d->ptr, d->size, d->mem, d->tag, d->kind, d->done, d->op, d->rtype);
    m.deferred_pool.give(d);
    ++n;
    d = next;
  }
#endif
  return n;
}

void send_or_defer(int pe, const void* ptr, std::size_t size, MemoryType mem, std::uint64_t t, Completion done,
                   GpuStream stream) {
  if (!stream) return tagged_send(pe, ptr, size, mem, t, done);
  Deferred* d = M().deferred_pool.take();
  d->send = true;
  d->pe = pe;
  d->ptr = const_cast<void*>(ptr);
  d->size = size;
  d->mem = mem;
  d->tag = t;
  d->done = done;
  defer_on_stream(d, stream);
}

void recv_or_defer(void* ptr, std::size_t size, MemoryType mem, std::uint64_t t, ReqKind kind, Completion done,
                   DeviceRdmaOp* op, DeviceRecvType rtype, GpuStream stream) {
  if (!stream) return issue_recv(ptr, size, mem, t, kind, done, op, rtype);
  Deferred* d = M().deferred_pool.take();
  d->send = false;
  d->kind = kind;
  d->ptr = ptr;
  d->size = size;
  d->mem = mem;
  d->tag = t;
  d->done = done;
  d->op = op;
  d->rtype = rtype;
  defer_on_stream(d, stream);
}

void bind_to_core(Machine& m) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
    m.info.binding = "none (hwloc could not read the topology)";
    return;
  }
  int cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  if (!m.opt.bind) {
    m.info.binding = "none (+nobind)";
  } else if (cores <= 0 || m.info.local_size > cores) {
    m.info.binding = fmt::format("none ({} PEs on {} cores)", m.info.local_size, cores);
  } else {
    hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, m.info.local_rank);
    if (core && hwloc_set_cpubind(topo, core->cpuset, HWLOC_CPUBIND_PROCESS) == 0)
      m.info.binding = fmt::format("core {}", core->logical_index);
    else
      m.info.binding = fmt::format("none (binding to core {} failed: {})", m.info.local_rank,
                                   std::strerror(errno));
  }
  hwloc_topology_destroy(topo);
}

ucp_ep_h endpoint(int pe) {
  Machine& m = M();
  ucp_ep_h& ep = m.eps[pe];
  if (ep) return ep;
  std::vector<char> addr = pe == m.info.my_pe ? m.my_address : m.boot->get(pe, kAddressKey);
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                 UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.address = reinterpret_cast<const ucp_address_t*>(addr.data());
  // UCX's shared-memory transports (posix, sysv) cannot report a dead peer, so PEER mode
  // would force a same-host pair onto TCP loopback (~20x the latency). Same-host peers use
  // shared memory and learn of a dead peer from the launcher's PMIx event instead;
  // peers on other hosts get PEER mode and UCX's own failure reports.
  const bool peer_mode = !m.boot->is_local(pe);
  p.err_mode = peer_mode ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
  m.ep_peer_mode[pe] = peer_mode;
  p.err_handler.cb = ep_error;
  p.err_handler.arg = reinterpret_cast<void*>(static_cast<intptr_t>(pe));
  ucs_status_t s = ucp_ep_create(m.worker, &p, &ep);
  if (s != UCS_OK) fatal(fmt::format("cannot connect to PE {}: {}", pe, ucs_status_string(s)));
  return ep;
}

// Waits (progressing) for a request returned by a *_nbx call.
void wait_request(ucs_status_ptr_t sp, const char* what) {
  if (sp == nullptr) return;
  if (UCS_PTR_IS_ERR(sp)) {
    if (!M().shutting_down) check(UCS_PTR_STATUS(sp), what);
    return;
  }
  while (ucp_request_check_status(sp) == UCS_INPROGRESS) ucp_worker_progress(M().worker);
  ucp_request_free(sp);
}

}  // namespace

// ---- the Lrts interface -----------------------------------------------------------

void LrtsInit(const Options& options, const Hooks& hooks) {
  Machine& m = M();
  m.opt = options;
  m.hooks = hooks;
  m.trace_ops = std::getenv("UCHARM_TRACE_OPS") != nullptr;
  m.force_callbacks = std::getenv("UCHARM_TEST_SEND_CALLBACKS") != nullptr;
  m.boot = std::make_unique<Bootstrap>();
  Bootstrap& b = *m.boot;
  m.info.my_pe = b.rank();
  m.info.num_pes = b.size();
  m.info.local_rank = b.local_rank();
  m.info.local_size = b.local_size();
  m.info.num_hosts = b.num_nodes();
  m.info.launched = b.launched();
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  m.info.hostname = host;
  m.info.ucx_version = ucp_get_version_string();
  bind_to_core(m);

  ucp_config_t* config = nullptr;
  check(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
  // UCX's memory-type cache stays on (off costs 8x in GPU latency, measured on H200);
  // LrtsMemoryType reports every CUDA range it finds to it, so it never misleads UCX.
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_REQUEST_SIZE |
                      UCP_PARAM_FIELD_REQUEST_INIT | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_ESTIMATED_NUM_EPS | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  params.request_size = sizeof(RequestState);
  params.request_init = request_init;
  params.mt_workers_shared = 0;
  params.estimated_num_eps = static_cast<size_t>(m.info.num_pes);
  params.name = "ucharm";
  ucs_status_t s = ucp_init(&params, config, &m.context);
  ucp_config_release(config);
  check(s, "ucp_init");

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  check(ucp_worker_create(m.context, &wp, &m.worker), "ucp_worker_create");

  // Idle wait: the worker's event fd plus an eventfd for local wake-ups, in one epoll set.
  check(ucp_worker_get_efd(m.worker, &m.ucx_fd), "ucp_worker_get_efd");
  m.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  m.epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  if (m.wake_fd < 0 || m.epoll_fd < 0) fatal(fmt::format("eventfd/epoll: {}", std::strerror(errno)));
  for (int fd : {m.ucx_fd, m.wake_fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0)
      fatal(fmt::format("epoll_ctl: {}", std::strerror(errno)));
  }

  ucp_worker_attr_t wa{};
  wa.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS;
  check(ucp_worker_query(m.worker, &wa), "ucp_worker_query");
  b.put(kAddressKey, wa.address, wa.address_length);
  const char* a = reinterpret_cast<const char*>(wa.address);
  m.my_address.assign(a, a + wa.address_length);
  ucp_worker_release_address(m.worker, wa.address);

  m.eps.assign(static_cast<std::size_t>(m.info.num_pes), nullptr);
  m.ep_peer_mode.assign(static_cast<std::size_t>(m.info.num_pes), false);
  m.slots.assign(static_cast<std::size_t>(m.opt.prepost), EagerSlot{});
  m.completed.reserve(static_cast<std::size_t>(m.opt.prepost));
  m.repost.reserve(static_cast<std::size_t>(m.opt.prepost));
  m.probe_arrived.reserve(64);
  m.done.reserve(256);
  for (int i = 0; i < m.opt.prepost; ++i) post_eager(i);

  // Every PE's address is known (and its receives posted) once the fence is done.
  b.fence(true, LrtsProgress);
}

const Info& LrtsInfo() { return M().info; }
int LrtsMyPe() { return M().info.my_pe; }
int LrtsNumPes() { return M().info.num_pes; }

void LrtsSend(int pe, void* msg, std::size_t bytes) {
  Machine& m = M();
  ucp_ep_h ep = endpoint(pe);
  tag::MsgType type = bytes <= m.opt.eager_size ? tag::MsgType::Eager : tag::MsgType::Probe;
  ucp_request_param_t p{};
  // FAST_CMPL: a host send only needs its buffer back, so UCX may pick copy protocols
  // up to 256 KiB over shared memory instead of a CMA rendezvous (measured: 16 KiB
  // one-way 4.7 -> 3.3 us, 64 KiB 12.5 -> 7.9 us; small and large sizes unchanged).
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_MEMORY_TYPE |
                   UCP_OP_ATTR_FLAG_FAST_CMPL;
  p.cb.send = send_done;
  p.memory_type = UCS_MEMORY_TYPE_HOST;
  ucs_status_ptr_t sp = ucp_tag_send_nbx(ep, msg, bytes, tag::host_tag(type), &p);
  if (sp == nullptr) {
    m.hooks.release(msg);
    return;
  }
  if (UCS_PTR_IS_ERR(sp)) m.hooks.peer_failed(pe, ucs_status_string(UCS_PTR_STATUS(sp)));
  auto* r = static_cast<RequestState*>(sp);
  r->kind = ReqKind::Send;
  r->msg = msg;
  r->pe = pe;
  ++m.pending_sends;
}

int LrtsProgress() {
  Machine& m = M();
  if (!m.repost.empty()) repost_slots();
  int n = static_cast<int>(ucp_worker_progress(m.worker));
  // A large message's rendezvous request can only have arrived during a progress call
  // that reported events, so an idle poll skips the probe.
  if (n > 0) n += probe_large();
  if (m.deferred_head) n += start_deferred();
  if (!m.completed.empty() || !m.probe_arrived.empty() || !m.done.empty()) n += drain();
  return n;
}

void LrtsIdleWait(int timeout_ms) {
  Machine& m = M();
  if (m.gpu_inflight) return;  // completions come from polling CUDA events, not the fd
  ucs_status_t s = ucp_worker_arm(m.worker);
  if (s == UCS_ERR_BUSY) return;  // events pending: the caller progresses again
  check(s, "ucp_worker_arm");
  epoll_event ev[2];
  int n = ::epoll_wait(m.epoll_fd, ev, 2, timeout_ms);
  for (int i = 0; i < n; ++i) {
    if (ev[i].data.fd == m.wake_fd) {
      std::uint64_t v;
      [[maybe_unused]] ssize_t r = ::read(m.wake_fd, &v, sizeof v);
    }
  }
}

void LrtsNotify() {
  std::uint64_t one = 1;
  [[maybe_unused]] ssize_t r = ::write(M().wake_fd, &one, sizeof one);
}

std::size_t LrtsPendingSends() { return M().pending_sends; }

void LrtsBarrier() { M().boot->fence(false, LrtsProgress); }

void LrtsDescribeTransports(int pe) {
  Machine& m = M();
  if (pe < 0 || pe >= m.info.num_pes || pe == m.info.my_pe) {
    m.info.transports = "self";
    return;
  }
  ucp_transport_entry_t entries[16];
  ucp_ep_attr_t attr{};
  attr.field_mask = UCP_EP_ATTR_FIELD_TRANSPORTS;
  attr.transports.entries = entries;
  attr.transports.num_entries = 16;
  attr.transports.entry_size = sizeof(ucp_transport_entry_t);
  if (ucp_ep_query(endpoint(pe), &attr) != UCS_OK) {
    m.info.transports = "unknown";
    return;
  }
  std::string out;
  for (unsigned i = 0; i < attr.transports.num_entries; ++i) {
    std::string t = fmt::format("{}/{}", entries[i].transport_name, entries[i].device_name);
    if (out.find(t) != std::string::npos) continue;
    if (!out.empty()) out += ", ";
    out += t;
  }
  m.info.transports = out;
}

void LrtsDeviceSend(int dest_pe, const void* ptr, std::size_t size, MemoryType mem, std::uint64_t& t,
                    Completion done, GpuStream stream) {
  Machine& m = M();
  // The tag is taken now, in call order, even if the data waits for its stream.
  t = tag::DeviceTag::make(static_cast<std::uint64_t>(m.info.my_pe), m.device_counter);
  m.device_counter = tag::DeviceTag::next(m.device_counter);
  send_or_defer(dest_pe, ptr, size, mem, t, done, stream);
}

void LrtsSetDeviceRecvHandler(DeviceRecvType type, DeviceRecvHandler h) {
  M().recv_handlers[static_cast<int>(type)] = h;
}

void LrtsDeviceRecv(DeviceRdmaOp* op, DeviceRecvType type) {
  recv_or_defer(op->dest_ptr, op->size, op->mem, op->tag, ReqKind::DeviceRecv, {}, op, type, op->stream);
}

void LrtsChannelSend(int dest_pe, const void* ptr, std::size_t size, MemoryType mem, std::uint64_t t,
                     Completion done, GpuStream stream) {
  send_or_defer(dest_pe, ptr, size, mem, t, done, stream);
}

void LrtsChannelRecv(void* ptr, std::size_t size, MemoryType mem, std::uint64_t t, Completion done,
                     GpuStream stream) {
  recv_or_defer(ptr, size, mem, t, ReqKind::ChannelRecv, done, nullptr, DeviceRecvType::Converse, stream);
}

void LrtsExit() {
  Machine& m = M();
  // 0. Operations still waiting for their streams start (sends must leave; receives are
  //    cancelled below with the others).
  while (m.deferred_head) {
    start_deferred();
    ucp_worker_progress(m.worker);
  }
  // 1. Our sends complete, then every PE is past that point.
  ucp_request_param_t fp{};
  wait_request(ucp_worker_flush_nbx(m.worker, &fp), "ucp_worker_flush_nbx");
  m.boot->fence(false, LrtsProgress);
  m.shutting_down = true;
  m.repost.clear();
  // 2. Cancel receives nobody sent to, and the pre-posted ones (their callbacks release
  //    the buffers).
  for (RequestState* r = m.open_recvs; r; r = r->next) ucp_request_cancel(m.worker, r);
  while (m.open_recvs) ucp_worker_progress(m.worker);
  m.done.clear();
  for (EagerSlot& slot : m.slots)
    if (slot.req) ucp_request_cancel(m.worker, slot.req);
  for (EagerSlot& slot : m.slots) {
    while (slot.req) ucp_worker_progress(m.worker);
  }
  for (const Completed& c : m.completed) {  // arrived after the fence: nobody will read them
    m.hooks.release(m.slots[c.slot].buf);
    m.slots[c.slot].buf = nullptr;
  }
  m.completed.clear();
  // 3. Close endpoints; a second fence keeps every worker alive until all have closed.
  std::vector<ucs_status_ptr_t> closing;
  for (std::size_t pe = 0; pe < m.eps.size(); ++pe) {
    ucp_ep_h& ep = m.eps[pe];
    if (!ep) continue;
    ucp_request_param_t cp{};
    cp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    // FORCE needs PEER mode on both sides; others close with a flush (peers are alive).
    cp.flags = m.ep_peer_mode[pe] ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    closing.push_back(ucp_ep_close_nbx(ep, &cp));
    ep = nullptr;
  }
  for (ucs_status_ptr_t sp : closing) wait_request(sp, "ucp_ep_close_nbx");
  m.boot->fence(false, [] { return static_cast<int>(ucp_worker_progress(M().worker)); });
#ifdef UCHARM_HAVE_CUDA
  m.deferred_pool.for_each([](Deferred& d) {
    if (d.event) cuda_driver().event_destroy(d.event);
    d.event = nullptr;
  });
#endif
  ::close(m.epoll_fd);
  ::close(m.wake_fd);
  ucp_worker_destroy(m.worker);
  ucp_cleanup(m.context);
  m.worker = nullptr;
  m.context = nullptr;
  m.boot.reset();
}

void LrtsAbort(int code, const char* msg) {
  std::fflush(stdout);
  std::fflush(stderr);
  Machine& m = M();
  if (m.boot) m.boot->abort(code, msg);
  std::_Exit(code);
}

}  // namespace ucharm::machine
