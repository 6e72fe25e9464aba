// Device and channel operations (GPU Messaging and Channel APIs): tagged sends and
// full-mask receives with completions run after progress, and operations waiting for a
// CUDA stream.
#include <ucharm/machine.h>
#include <ucharm/tag.h>

#include <ucp/api/ucp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fmt/core.h>

#include "machine_internal.h"

namespace ucharm::machine {
namespace detail {

ucs_memory_type_t ucs_type(MemoryType t) {
  return t == MemoryType::Cuda ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
}

OpState* take_op() { return M().ops.take(); }
void give_op(OpState* s) { M().ops.give(s); }

void op_send_done(void* request, ucs_status_t status, void* user_data) {
  auto* st = static_cast<OpState*>(user_data);
  Machine& m = M();
  if (status != UCS_OK && !m.shutting_down) peer_lost(st->pe, ucs_status_string(status));
  --m.pending_sends;
  --m.own_waits;
  if (st->gpu) --m.gpu_inflight;
  if (status == UCS_OK) m.done.push_back({st->done, nullptr, DeviceRecvType::Converse});
  if (m.trace_ops) fmt::print(stderr, "ucharm: PE {}: send to PE {} done: {}\n", m.info.my_pe, st->pe, ucs_status_string(status));
  give_op(st);
  ucp_request_free(request);
}

void link_recv(RequestState* r) {
  Machine& m = M();
  r->prev = nullptr;
  r->next = m.open_recvs;
  if (m.open_recvs) m.open_recvs->prev = r;
  m.open_recvs = r;
  ++m.own_waits;
}

void unlink_recv(RequestState* r) {
  Machine& m = M();
  if (r->prev) r->prev->next = r->next;
  else m.open_recvs = r->next;
  if (r->next) r->next->prev = r->prev;
  --m.own_waits;
}

std::string describe_tag(std::uint64_t t) {
  if (tag::DeviceTag::is(t))
    return fmt::format("device-transfer data from PE {} (counter {})", tag::DeviceTag::src_pe(t),
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
    // Most likely the sender died: let the launcher report that first.
    if (!m.shutting_down)
      failed_maybe_by_peer(fmt::format("{}: receive failed: {}", describe_tag(r->tag), ucs_status_string(status)));
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
  ++m.own_waits;
  if (st->gpu) ++m.gpu_inflight;
  ucs_status_ptr_t sp = ucp_tag_send_nbx(endpoint(pe), ptr, size, t, &p);
  if (sp == nullptr) {  // completed in place: no callback comes
    --m.pending_sends;
    --m.own_waits;
    if (st->gpu) --m.gpu_inflight;
    give_op(st);
    m.done.push_back({done, nullptr, DeviceRecvType::Converse});
    return;
  }
  if (UCS_PTR_IS_ERR(sp)) {
    --m.pending_sends;
    --m.own_waits;
    if (st->gpu) --m.gpu_inflight;
    give_op(st);
    peer_lost(pe, ucs_status_string(UCS_PTR_STATUS(sp)));
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
  link_recv(r);
}

void issue_recv(void* ptr, std::size_t size, MemoryType mem, std::uint64_t t, ReqKind kind, Completion done,
                DeviceRdmaOp* op, DeviceRecvType rtype) {
  tagged_recv(ptr, size, mem, t, kind, [&](RequestState& r) {
    r.done = done;
    r.op = op;
    r.rtype = rtype;
  });
}

// Records `d`'s event behind the work queued on `stream` so far (or fails with a clear
// message); `d` starts once that work has finished and it is linked (link_deferred).
void record_on_stream(Deferred* d, GpuStream stream) {
#ifdef UCHARM_HAVE_CUDA
  const CudaDriver& cu = cuda_driver();
  if (!cu.ok) fatal("an operation names a CUDA stream, but CUDA is not available in this process (no driver or GPU)");
  // The event is made and recorded in the stream's context, whatever is current on this
  // thread (a CuPy stream's context may not be: seen with 2 PEs sharing one GPU).
  // Where the driver cannot name the stream's context, a device buffer's own context serves.
  const CUcontext stream_ctx = context_of(static_cast<CUstream>(stream));
  CUcontext buf_ctx = nullptr;
  if (!stream_ctx && d->mem == MemoryType::Cuda && d->ptr) {
    CUpointer_attribute a[] = {CU_POINTER_ATTRIBUTE_CONTEXT};
    void* v[] = {&buf_ctx};
    if (cu.get_attrs(1, a, v, reinterpret_cast<CUdeviceptr>(d->ptr)) != CUDA_SUCCESS) buf_ctx = nullptr;
  }
  const CUcontext ctx = stream_ctx ? stream_ctx : buf_ctx;
  CtxScope scope(ctx);
  if (d->event && d->event_ctx != ctx) {
    cu.event_destroy(d->event);
    d->event = nullptr;
  }
  CUresult r = CUDA_SUCCESS;
  const char* step = "cuEventCreate";
  if (!d->event) r = cu.event_create(&d->event, CU_EVENT_DISABLE_TIMING);
  d->event_ctx = ctx;
  if (r == CUDA_SUCCESS) {
    step = "cuEventRecord";
    r = cu.event_record(d->event, static_cast<CUstream>(stream));
  }
  if (r != CUDA_SUCCESS) {
    CUcontext cur = nullptr;
    cu.ctx_get_current(&cur);
    fatal(fmt::format("recording an event on CUDA stream {} for {} failed: {} in {} (the stream's context: {}, "
                      "the buffer's: {}, current on this PE: {}; is the stream valid, and of a device of this PE?)",
                      stream, describe_tag(d->tag), cu.name_of(r), step, static_cast<void*>(stream_ctx),
                      static_cast<void*>(buf_ctx), static_cast<void*>(cur)));
  }
#else
  (void)stream;
  fatal(fmt::format("{} names a CUDA stream, but ucharm was built without CUDA", describe_tag(d->tag)));
#endif
}

void link_deferred(Deferred* d) {
  Machine& m = M();
  d->next = nullptr;
  if (m.deferred_tail) m.deferred_tail->next = d;
  else m.deferred_head = d;
  m.deferred_tail = d;
  ++m.gpu_inflight;
  trace("waits for its stream:", d->tag, d->size, d->mem);
}

void defer_on_stream(Deferred* d, GpuStream stream) {
  record_on_stream(d, stream);
  link_deferred(d);
}

// Starts the deferred operations whose streams have caught up; returns how many.
int start_deferred() {
  int n = 0;
#ifdef UCHARM_HAVE_CUDA
  Machine& m = M();
  const CudaDriver& cu = cuda_driver();
  Deferred* prev = nullptr;
  for (Deferred* d = m.deferred_head; d;) {
    CUresult r = CUDA_SUCCESS;
    {
      CtxScope scope(d->event_ctx);
      r = cu.event_query(d->event);
    }
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

}  // namespace detail

using namespace detail;


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

HeldSend* LrtsChannelSendHold(const void* ptr, std::size_t size, MemoryType mem, Completion done, GpuStream stream) {
  if (!stream) fatal("LrtsChannelSendHold needs a CUDA stream (a send without one is issued when its tag is known)");
  Deferred* d = M().deferred_pool.take();
  d->send = true;
  d->pe = -1;
  d->ptr = const_cast<void*>(ptr);
  d->size = size;
  d->mem = mem;
  d->tag = 0;
  d->done = done;
  record_on_stream(d, stream);
  return d;
}

void LrtsChannelSendRelease(HeldSend* d, int dest_pe, std::uint64_t t) {
  Machine& m = M();
  if (dest_pe < 0 || dest_pe >= m.info.num_pes)
    fatal(fmt::format("channel send to PE {}, outside [0, {})", dest_pe, m.info.num_pes));
  d->pe = dest_pe;
  d->tag = t;
  link_deferred(d);
}

void LrtsChannelSendDrop(HeldSend* d) { M().deferred_pool.give(d); }

void LrtsChannelRecv(void* ptr, std::size_t size, MemoryType mem, std::uint64_t t, Completion done,
                     GpuStream stream) {
  recv_or_defer(ptr, size, mem, t, ReqKind::ChannelRecv, done, nullptr, DeviceRecvType::Converse, stream);
}

}  // namespace ucharm::machine
