// One-sided communication (RMA): registered regions and their packed remote keys, peers'
// regions attached on the endpoint to their owner, put/get/atomics, fence and flush.
//
// Per-operation state is an RmaOp from a pool, handed to UCX as user_data (it must exist
// before the call: with UCP_OP_ATTR_FLAG_NO_IMM_CMPL, UCX may call back inside it). One
// RmaOp may cover several UCX operations (a notified put: the data and the counter's add);
// its completion is queued once the last of them is done, and runs after progress.
#include <ucharm/machine.h>

#include <poll.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <fmt/core.h>

#include "machine_internal.h"

namespace ucharm::machine {

struct RmaRegion {
  ucp_mem_h memh = nullptr;   // null for an empty region
  void* key = nullptr;        // packed remote key (ucp_rkey_pack)
  std::size_t key_len = 0;
  void* base = nullptr;
  std::size_t size = 0;
  MemoryType mem = MemoryType::Host;
  RmaRegion* prev = nullptr;  // this PE's regions (released at exit)
  RmaRegion* next = nullptr;
};

struct RmaRemote {
  ucp_rkey_h rkey = nullptr;  // null for an empty region
  std::uint64_t addr = 0;
  std::size_t size = 0;
  int pe = 0;
  MemoryType mem = MemoryType::Host;
  std::size_t open = 0;       // operations on it UCX has not completed (detach waits)
  RmaRemote* prev = nullptr;  // this PE's attached regions (released at exit)
  RmaRemote* next = nullptr;
};

namespace detail {
namespace {

struct RmaOp {
  Completion done;
  RmaRemote* remote;     // the region operated on (null for a flush)
  RmaRemote* counter;    // a notified put's counter region, or null
  void* result;          // an atomic's result (user memory), or null
  std::uint64_t operand; // an atomic's operand (CompareSwap: the value compared)
  std::uint64_t reply;   // a fetching atomic's reply buffer (CompareSwap: the new value, in)
  int pending;           // UCX operations of this op still open
  int pe;
  std::uint8_t width;
  bool gpu;              // counted in gpu_inflight: CUDA completions are polled
  RmaOp* next_free;
};

// This process's one-sided state (non-SMP), beside g_machine.
struct RmaState {
  ChunkPool<RmaOp> ops;
  RmaRegion* regions = nullptr;
  RmaRemote* remotes = nullptr;
};
RmaState g_rma;

template <class T>
void link(T*& head, T* x) {
  x->prev = nullptr;
  x->next = head;
  if (head) head->prev = x;
  head = x;
}
template <class T>
void unlink(T*& head, T* x) {
  if (x->prev) x->prev->next = x->next;
  else head = x->next;
  if (x->next) x->next->prev = x->prev;
}

ucs_memory_type_t ucs_mem(MemoryType t) { return t == MemoryType::Cuda ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST; }

const char* op_name(RmaAtomicOp op) {
  switch (op) {
    case RmaAtomicOp::Add: return "add";
    case RmaAtomicOp::And: return "and";
    case RmaAtomicOp::Or: return "or";
    case RmaAtomicOp::Xor: return "xor";
    case RmaAtomicOp::Swap: return "swap";
    case RmaAtomicOp::CompareSwap: return "compare-swap";
  }
  return "?";
}

// Offsets and lengths are checked on every operation: it costs two compares.
void check_range(const RmaRemote* r, std::size_t offset, std::size_t bytes, const char* what) {
  if (!r) fatal(fmt::format("one-sided {} on a null remote region", what));
  if (offset > r->size || bytes > r->size - offset) [[unlikely]]
    fatal(fmt::format("one-sided {} out of range: offset {} + length {} bytes reaches past the end of PE {}'s "
                      "{}-byte region",
                      what, offset, bytes, r->pe, r->size));
}

// The op's completion, after progress: the atomic's result to the caller, then theirs.
void op_finish(void* ctx) {
  auto* op = static_cast<RmaOp*>(ctx);
  if (op->result) std::memcpy(op->result, &op->reply, op->width);
  const Completion done = op->done;
  g_rma.ops.give(op);
  if (done.fn) done.fn(done.ctx);
}

// One UCX operation of `op` is over.
void part_done(RmaOp* op, ucs_status_t status) {
  Machine& m = M();
  if (status != UCS_OK && !m.shutting_down) {
    if (op->pe >= 0) peer_lost(op->pe, ucs_status_string(status));
    failed_maybe_by_peer(fmt::format("one-sided flush failed: {}", ucs_status_string(status)));
  }
  if (--op->pending > 0) return;
  --m.rma_open;
  if (op->gpu) --m.gpu_inflight;
  if (op->remote) --op->remote->open;
  if (op->counter) --op->counter->open;
  m.done.push_back({Completion{op_finish, op}, nullptr, DeviceRecvType::Converse});
}

void op_callback(void* request, ucs_status_t status, void* user_data) {
  part_done(static_cast<RmaOp*>(user_data), status);
  ucp_request_free(request);
}

RmaOp* new_op(RmaRemote* r, int pe, Completion done, int parts, bool gpu = false) {
  RmaOp* op = g_rma.ops.take();
  op->done = done;
  op->remote = r;
  op->counter = nullptr;
  op->result = nullptr;
  op->operand = op->reply = 0;
  op->pending = parts;
  op->pe = pe;
  op->width = 0;
  op->gpu = gpu;
  ++M().rma_open;
  if (gpu) ++M().gpu_inflight;
  if (r) ++r->open;
  return op;
}

// Whatever a *_nbx call returned: completed in place (no callback comes), failed, or
// in flight (the callback, maybe already run, finishes it).
void issued(RmaOp* op, ucs_status_ptr_t sp) {
  if (sp == nullptr) part_done(op, UCS_OK);
  else if (UCS_PTR_IS_ERR(sp)) part_done(op, UCS_PTR_STATUS(sp));
}

ucp_request_param_t params(RmaOp* op, MemoryType mem) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  // As for device sends (gpu_ops.cpp): UCX's inline path picks its protocol from its own
  // memory-type cache; no immediate completion keeps device buffers off it.
  if (mem != MemoryType::Host) p.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.cb.send = op_callback;
  p.user_data = op;
  p.memory_type = ucs_mem(mem);
  return p;
}

void put_part(RmaOp* op, RmaRemote* r, std::size_t offset, const void* src, std::size_t bytes, MemoryType mem) {
  if (bytes == 0) return part_done(op, UCS_OK);
  ucp_request_param_t p = params(op, mem);
  issued(op, ucp_put_nbx(endpoint(r->pe), src, bytes, r->addr + offset, r->rkey, &p));
}

void add_part(RmaOp* op, RmaRemote* r, std::size_t offset) {
  op->operand = 1;
  ucp_request_param_t p = params(op, MemoryType::Host);
  p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
  p.datatype = ucp_dt_make_contig(8);
  issued(op, ucp_atomic_op_nbx(endpoint(r->pe), UCP_ATOMIC_OP_ADD, &op->operand, 1, r->addr + offset, r->rkey, &p));
}

void check_atomic_target(const RmaRemote* r, std::size_t offset, std::size_t width, const char* what) {
  check_range(r, offset, width, what);
  if (r->mem != MemoryType::Host)
    fatal(fmt::format("one-sided {} on PE {}'s region in {} memory: atomics need a host-memory region", what, r->pe,
                      LrtsMemoryTypeName(r->mem)));
  if ((r->addr + offset) % width != 0)
    fatal(fmt::format("one-sided {} at offset {} of PE {}'s region: the word's address is not {}-byte aligned", what,
                      offset, r->pe, width));
}

bool gpu_op(const RmaRemote* r, MemoryType local) { return local != MemoryType::Host || r->mem != MemoryType::Host; }

// Sleeps at most `timeout_us` on the worker's event fd (armed first).
void short_wait(int timeout_us) {
  Machine& m = M();
  ucs_status_t s = ucp_worker_arm(m.worker);
  if (s == UCS_ERR_BUSY) {
    // Events pending: progress again, unless only small sends held back by a busy peer
    // keep UCX busy (as in LrtsIdleWait): then the step is spent asleep.
    if (m.own_waits == 0 && m.rma_open == 0 && m.small_sends_open > 0) {
      ++m.idle_stats.backoff_sleeps;
      ::usleep(static_cast<useconds_t>(timeout_us));
    } else {
      ++m.idle_stats.busy_retries;
    }
    return;
  }
  check(s, "ucp_worker_arm");
  ++m.idle_stats.fd_waits;
  pollfd pfd{m.epoll_fd, POLLIN, 0};
  const timespec ts{0, static_cast<long>(timeout_us) * 1000L};
  if (::ppoll(&pfd, 1, &ts, nullptr) > 0) drain_wakeups();  // readable: perhaps LrtsWakeup's eventfd
}

// While host one-sided operations are open: their completions (or the replies of
// software-emulated ones) normally signal the fd, but nothing promises it, so the PE
// sleeps in short steps only (and yields the core to others meanwhile).
constexpr int kRmaStepUs = 50;

}  // namespace

void rma_idle_wait() { short_wait(kRmaStepUs); }

// At exit, before the endpoints close: attached keys and registrations are released.
void rma_release_all() {
  // Every operation was flushed before (LrtsExit): nothing is waited for.
  while (RmaRemote* r = g_rma.remotes) {
    r->open = 0;
    LrtsRmaDetach(r);
  }
  while (g_rma.regions) LrtsRmaDeregister(g_rma.regions);
}

}  // namespace detail

using namespace detail;

RmaRegion* LrtsRmaRegister(void* ptr, std::size_t size, MemoryType mem) {
  Machine& m = M();
  if (!ptr && size) fatal(fmt::format("registering a null buffer of {} bytes for one-sided access", size));
  auto* r = new RmaRegion;
  r->base = ptr;
  r->size = size;
  r->mem = mem;
  if (size) {
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                    UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    mp.address = ptr;
    mp.length = size;
    mp.memory_type = ucs_mem(mem);
    ucs_status_t s = ucp_mem_map(m.context, &mp, &r->memh);
    if (s != UCS_OK)
      fatal(fmt::format("registering {} bytes of {} memory at {} for one-sided access failed: {}", size,
                        LrtsMemoryTypeName(mem), ptr, ucs_status_string(s)));
    s = ucp_rkey_pack(m.context, r->memh, &r->key, &r->key_len);
    if (s != UCS_OK) fatal(fmt::format("packing a remote key failed: {}", ucs_status_string(s)));
  }
  link(g_rma.regions, r);
  return r;
}

void LrtsRmaDeregister(RmaRegion* r) {
  if (!r) return;
  unlink(g_rma.regions, r);
  if (r->key) ucp_rkey_buffer_release(r->key);
  if (r->memh) ucp_mem_unmap(M().context, r->memh);
  delete r;
}

const void* LrtsRmaKey(const RmaRegion* r, std::size_t* len) {
  *len = r->key_len;
  return r->key;
}

RmaRemote* LrtsRmaAttach(int pe, std::uint64_t addr, std::size_t size, MemoryType mem, const void* key,
                         std::size_t key_len) {
  Machine& m = M();
  if (pe < 0 || pe >= m.info.num_pes)
    fatal(fmt::format("attaching a one-sided region of PE {}, outside [0, {})", pe, m.info.num_pes));
  if (size && !key_len) fatal(fmt::format("attaching a {}-byte region of PE {} without a remote key", size, pe));
  auto* r = new RmaRemote;
  r->addr = addr;
  r->size = size;
  r->pe = pe;
  r->mem = mem;
  if (size) {
    ucs_status_t s = ucp_ep_rkey_unpack(endpoint(pe), key, &r->rkey);
    if (s != UCS_OK)
      fatal(fmt::format("unpacking the remote key of PE {}'s {}-byte region failed: {} (is the descriptor from "
                        "that PE?)",
                        pe, size, ucs_status_string(s)));
  }
  link(g_rma.remotes, r);
  return r;
}

void LrtsRmaDetach(RmaRemote* r) {
  if (!r) return;
  // UCX reads the key until the operations on it are done.
  while (r->open) LrtsProgress();
  unlink(g_rma.remotes, r);
  if (r->rkey) ucp_rkey_destroy(r->rkey);
  delete r;
}

void LrtsRmaPut(RmaRemote* r, std::size_t offset, const void* src, std::size_t bytes, MemoryType mem,
                Completion done) {
  check_range(r, offset, bytes, "put");
  put_part(new_op(r, r->pe, done, 1, gpu_op(r, mem)), r, offset, src, bytes, mem);
}

void LrtsRmaGet(RmaRemote* r, std::size_t offset, void* dst, std::size_t bytes, MemoryType mem, Completion done) {
  check_range(r, offset, bytes, "get");
  RmaOp* op = new_op(r, r->pe, done, 1, gpu_op(r, mem));
  if (bytes == 0) return part_done(op, UCS_OK);
  ucp_request_param_t p = params(op, mem);
  issued(op, ucp_get_nbx(endpoint(r->pe), dst, bytes, r->addr + offset, r->rkey, &p));
}

void LrtsRmaPutNotify(RmaRemote* r, std::size_t offset, const void* src, std::size_t bytes, MemoryType mem,
                      RmaRemote* counter, std::size_t counter_offset, Completion done) {
  check_range(r, offset, bytes, "notified put");
  check_atomic_target(counter, counter_offset, 8, "notified put's counter");
  if (counter->pe != r->pe)
    fatal(fmt::format("notified put to PE {} names a counter on PE {}: the counter must be on the same PE", r->pe,
                      counter->pe));
  // Two parts: the data, then (ordered after it at the target) the counter's add.
  RmaOp* op = new_op(r, r->pe, done, 2, gpu_op(r, mem));
  op->counter = counter;
  ++counter->open;
  put_part(op, r, offset, src, bytes, mem);
  if (bytes) check(ucp_worker_fence(M().worker), "ucp_worker_fence");
  add_part(op, counter, counter_offset);
}

void LrtsRmaAtomic(RmaRemote* r, std::size_t offset, RmaAtomicOp op, std::size_t width, std::uint64_t value,
                   std::uint64_t compare, void* result, Completion done) {
  const char* name = op_name(op);
  if (width != 4 && width != 8)
    fatal(fmt::format("one-sided atomic {} on a {}-byte word: only 4 and 8 bytes are supported", name, width));
  check_atomic_target(r, offset, width, name);
  const bool fetch_needed = op == RmaAtomicOp::Swap || op == RmaAtomicOp::CompareSwap;
  if (fetch_needed && !result) fatal(fmt::format("one-sided atomic {} needs a result buffer", name));
  RmaOp* o = new_op(r, r->pe, done, 1);
  o->result = result;
  o->width = static_cast<std::uint8_t>(width);
  // The low `width` bytes of the 8-byte fields hold the word (little-endian hosts).
  const std::uint64_t mask = width == 8 ? ~std::uint64_t{0} : 0xFFFFFFFFull;
  ucp_atomic_op_t code = UCP_ATOMIC_OP_ADD;
  switch (op) {
    case RmaAtomicOp::Add: code = UCP_ATOMIC_OP_ADD; break;
    case RmaAtomicOp::And: code = UCP_ATOMIC_OP_AND; break;
    case RmaAtomicOp::Or: code = UCP_ATOMIC_OP_OR; break;
    case RmaAtomicOp::Xor: code = UCP_ATOMIC_OP_XOR; break;
    case RmaAtomicOp::Swap: code = UCP_ATOMIC_OP_SWAP; break;
    case RmaAtomicOp::CompareSwap: code = UCP_ATOMIC_OP_CSWAP; break;
  }
  // CSWAP: `buffer` holds the value compared, the reply buffer the new value (in) and the
  // old word (out); the others: `buffer` holds the operand.
  if (op == RmaAtomicOp::CompareSwap) {
    o->operand = compare & mask;
    o->reply = value & mask;
  } else {
    o->operand = value & mask;
  }
  ucp_request_param_t p = params(o, MemoryType::Host);
  p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
  p.datatype = ucp_dt_make_contig(width);
  if (result) {
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    p.reply_buffer = &o->reply;
  }
  issued(o, ucp_atomic_op_nbx(endpoint(r->pe), code, &o->operand, 1, r->addr + offset, r->rkey, &p));
}

void LrtsRmaFence() { check(ucp_worker_fence(M().worker), "ucp_worker_fence"); }

void LrtsRmaFlush(int pe, Completion done) {
  Machine& m = M();
  if (pe >= m.info.num_pes) fatal(fmt::format("one-sided flush to PE {}, outside [0, {})", pe, m.info.num_pes));
  RmaOp* op = new_op(nullptr, pe, done, 1);
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = op_callback;
  p.user_data = op;
  issued(op, pe < 0 ? ucp_worker_flush_nbx(m.worker, &p) : ucp_ep_flush_nbx(endpoint(pe), &p));
}

std::size_t LrtsRmaOpen() { return M().rma_open; }

void LrtsIdleWaitUs(int timeout_us) {
  Machine& m = M();
  if (m.gpu_inflight) return;  // CUDA completions are polled
  if (m.rma_open) timeout_us = std::min(timeout_us, kRmaStepUs);
  if (timeout_us >= 1000) return LrtsIdleWait(timeout_us / 1000);
  short_wait(timeout_us);
}

}  // namespace ucharm::machine
