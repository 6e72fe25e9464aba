// Converse over the Lrts interface: message memory, handlers, sends and broadcasts,
// the scheduler loop, barrier, start-up and shutdown.
#include <ucharm/converse.h>
#include <ucharm/machine.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fmt/core.h>
#include <utility>
#include <vector>

#include "converse_internal.h"

#include <dlfcn.h>
#include <sched.h>

namespace ucharm::converse {
// The job's end (defined with CmiExit below).
void broadcast_exit(int code, bool abnormal);
void shutdown_pe(int code);
[[noreturn]] void end_process(int code, bool abnormal);

PeState g_pe_state;

namespace {

namespace lrts = ucharm::machine;

inline CmiMsgHeader* hdr(void* m) { return static_cast<CmiMsgHeader*>(m); }

void check_pe(int pe, const char* who) {
  if (pe < 0 || pe >= pe_state().num_pes)
    CmiAbort("%s: destination PE %d is out of range [0, %d)", who, pe, pe_state().num_pes);
}

void check_size(std::size_t size, const char* who) {
  if (size < CmiMsgHeaderSizeBytes)
    CmiAbort("%s: message size %zu is smaller than the %zu-byte header", who, size,
             CmiMsgHeaderSizeBytes);
  if (size > UINT32_MAX)
    CmiAbort("%s: message size %zu exceeds the 4 GiB limit of a Converse message", who, size);
}

// Queues a message that is now this PE's to run.
inline void enqueue_local(void* msg) {
  CmiMsgHeader* h = hdr(msg);
  pe_state().queue.push(msg, h->prio, (h->flags & CmiMsgExpedited) != 0);
}

// Flow control: when more than the send-queue limit waits for credit, the sending PE
// progresses (taking in messages, returning and receiving credit, running no handler)
// until half of it has left. Receivers return credit without running handlers either,
// so two PEs flooding each other cannot deadlock.
void wait_for_backlog() {
  PeState& s = pe_state();
  if (s.in_backlog_wait || s.exiting || s.exit_arrived) return;
  s.in_backlog_wait = true;
  lrts::LrtsCreditOnDelivery(true);
  // An exit that arrives meanwhile ends the wait: the scheduler runs it next.
  while (lrts::LrtsBackloggedBytes() > s.options.send_queue_limit / 2 && !s.exit_arrived)
    if (lrts::LrtsProgress() == 0) lrts::LrtsIdleWait(10);
  lrts::LrtsCreditOnDelivery(false);
  s.in_backlog_wait = false;
}

inline void check_backlog() {
  if (lrts::LrtsBackloggedBytes() > pe_state().options.send_queue_limit) [[unlikely]]
    wait_for_backlog();
}

// Takes `msg` (one reference).
inline void send_owned(int pe, void* msg) {
  PeState& s = pe_state();
  if (pe == s.my_pe) {
    enqueue_local(msg);
    return;
  }
  lrts::LrtsSend(pe, msg, hdr(msg)->size, (hdr(msg)->flags & CmiMsgExpedited) != 0);
  check_backlog();
}

void* copy_msg(std::size_t size, const void* msg) {
  void* m = CmiAlloc(size);
  std::memcpy(m, msg, size);
  return m;
}

// Sends `msg` on to this PE's children in the broadcast tree rooted at the header's
// srcpe; each send holds its own reference (no copy per target).
void forward_broadcast(void* msg) {
  PeState& s = pe_state();
  const int n = s.num_pes, root = hdr(msg)->srcpe;
  const int rel = (s.my_pe - root + n) % n;
  for (int c = rel * CmiBroadcastBranching + 1;
       c <= rel * CmiBroadcastBranching + CmiBroadcastBranching && c < n; ++c) {
    CmiReference(msg);
    lrts::LrtsSend((root + c) % n, msg, hdr(msg)->size, (hdr(msg)->flags & CmiMsgExpedited) != 0);
  }
}

// --- machine hooks ---------------------------------------------------------------------

// Receive buffers: UCX writes the header, so none is initialised here.
void* hook_alloc(std::size_t bytes) { return pe_state().pool.alloc(bytes); }

void hook_deliver(void* msg, std::size_t bytes, int src) {
  // Exiting: what still arrives is dropped (as queued messages are, like CkExit).
  if (pe_state().exiting) {
    CmiFree(msg);
    lrts::LrtsConsumed(src, bytes);
    return;
  }
  prefix_of(msg)->link_src = src;  // its credit goes back to `src` when it is dispatched
  CmiMsgHeader* h = hdr(msg);
  if (h->handler == pe_state().h_exit) pe_state().exit_arrived = true;
  if (bytes < CmiMsgHeaderSizeBytes || h->size != bytes)
    CmiAbort("received a corrupted message (%zu bytes, header says %u)", bytes,
             bytes >= CmiMsgHeaderSizeBytes ? h->size : 0u);
  if (h->flags & CmiMsgBroadcast) forward_broadcast(msg);
  enqueue_local(msg);
}

void hook_release(void* msg) { CmiFree(msg); }

// Only on an empty queue: a message waiting there from the same sender would otherwise
// be handled after a later one that its handler already took (a matched receive, say).
void* hook_place(void* head, std::size_t head_bytes, std::size_t bytes, int) {
  PeState& s = pe_state();
  CmiMsgHeader* h = hdr(head);
  if (s.exiting || !s.queue.empty() || h->size != bytes || head_bytes < CmiMsgHeaderSizeBytes ||
      h->handler >= s.placements.size())
    return nullptr;
  CmiPlaceFn fn = s.placements[h->handler];
  if (!fn) return nullptr;
  void* at = fn(head, head_bytes);
  if (at) h->flags |= CmiMsgPlaced;
  return at;
}

[[noreturn]] void hook_peer_failed(int pe, const char* why) {
  CmiAbort("lost PE %d (%s): its process died or became unreachable", pe, why);
}

// --- internal handlers -------------------------------------------------------------

struct ExitPayload {
  int code;
  int abnormal;  // CmiExitAbnormal: no exit handlers run
};

void exit_handler(void* msg) {
  const ExitPayload p = *reinterpret_cast<ExitPayload*>(CmiMsgPayload(msg));
  CmiFree(msg);
  end_process(p.code, p.abnormal != 0);
}

struct BarrierPayload {
  std::uint64_t round;
};

void barrier_arrive_handler(void* msg) {  // on PE 0
  PeState& s = pe_state();
  std::uint64_t round = reinterpret_cast<BarrierPayload*>(CmiMsgPayload(msg))->round;
  CmiFree(msg);
  if (++s.barrier_arrivals[round & 1] == s.num_pes) {
    s.barrier_arrivals[round & 1] = 0;
    void* rel = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(BarrierPayload));
    CmiSetHandler(rel, s.h_barrier_release);
    reinterpret_cast<BarrierPayload*>(CmiMsgPayload(rel))->round = round;
    CmiSyncBroadcastAllAndFree(CmiMsgHeaderSizeBytes + sizeof(BarrierPayload), rel);
  }
}

void barrier_release_handler(void* msg) {
  PeState& s = pe_state();
  s.barrier_released = reinterpret_cast<BarrierPayload*>(CmiMsgPayload(msg))->round + 1;
  CmiFree(msg);
}

void dispatch(void* msg) {
  PeState& s = pe_state();
  if (s.traced_idle) [[unlikely]] {
    s.traced_idle = false;
    s.trace_hooks.idle_end();
  }
  CmiMsgHeader* h = hdr(msg);
  // Off the queue: a message from another PE gives its sender's credit back.
  if (int src = prefix_of(msg)->link_src; src >= 0) {
    prefix_of(msg)->link_src = -1;
    lrts::LrtsConsumed(src, h->size);
  }
  if (h->handler >= s.handlers.size())
    CmiAbort("message from PE %d names handler %d, but only %zu are registered: register "
             "handlers in the same order on every PE",
             h->srcpe, static_cast<int>(h->handler), s.handlers.size());
  // A broadcast message may still be read by sends to the children; the handler gets a
  // private copy in that (rare) case, so it may write to or reuse its message.
  if ((h->flags & CmiMsgBroadcast) && CmiGetReference(msg) > 1) {
    void* own = copy_msg(h->size, msg);
    CmiFree(msg);
    msg = own;
  }
  s.handlers[h->handler](msg);
}

void stamp(void* msg, std::size_t size) {
  CmiMsgHeader* h = hdr(msg);
  h->size = static_cast<std::uint32_t>(size);
  h->srcpe = pe_state().my_pe;
}

void broadcast_owned(std::size_t size, void* msg, bool include_self) {
  stamp(msg, size);
  CmiMsgHeader* h = hdr(msg);
  h->flags |= CmiMsgBroadcast;
  if (include_self) h->flags |= CmiMsgBroadcastAll;
  else h->flags &= static_cast<std::uint16_t>(~CmiMsgBroadcastAll);
  forward_broadcast(msg);
  if (include_self) enqueue_local(msg);
  else CmiFree(msg);
  check_backlog();
}

// exit(n) called by the program (not CmiExit) ends the whole job with n, as CmiExit(n)
// does. Without this the machine's static destructors would finalize PMIx, the launcher
// would take this PE's end for an orderly one, and the other PEs would wait for it.
// The process then goes on with libc's exit: the remaining handlers, destructors, flushes.
void on_process_exit(int code, void*) {
  if (pe_state().exiting) return;
  broadcast_exit(code, false);
  shutdown_pe(code);
}

// An exception that leaves an entry point ends the job with a message, not a SIGABRT
// the other PEs learn of only through the launcher.
[[noreturn]] void on_terminate() {
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      CmiAbort("uncaught exception: %s", x.what());
    } catch (...) {
      CmiAbort("uncaught exception (not derived from std::exception)");
    }
  }
  CmiAbort("std::terminate called without an active exception");
}

}  // namespace
}  // namespace ucharm::converse

using namespace ucharm::converse;
namespace lrts = ucharm::machine;

// ---- messages ------------------------------------------------------------------------

void* CmiAlloc(std::size_t bytes) {
  if (bytes > UINT32_MAX) CmiAbort("CmiAlloc: %zu bytes exceeds the 4 GiB message limit", bytes);
  void* m = pe_state().pool.alloc(bytes < CmiMsgHeaderSizeBytes ? CmiMsgHeaderSizeBytes : bytes);
  std::memset(m, 0, CmiMsgHeaderSizeBytes);
  hdr(m)->size = static_cast<std::uint32_t>(bytes);
  return m;
}
void CmiFree(void* msg) { pe_state().pool.release(msg); }
void CmiReference(void* msg) { ++prefix_of(msg)->refcount; }
int CmiGetReference(void* msg) { return prefix_of(msg)->refcount; }

int CmiRegisterHandler(CmiHandler h) {
  auto& hs = pe_state().handlers;
  if (hs.size() > UINT16_MAX) CmiAbort("CmiRegisterHandler: more than 65535 handlers");
  hs.push_back(h);
  return static_cast<int>(hs.size() - 1);
}

void CmiRegisterPlacement(int handler, CmiPlaceFn fn) {
  auto& ps = pe_state().placements;
  if (handler < 0 || static_cast<std::size_t>(handler) >= pe_state().handlers.size())
    CmiAbort("CmiRegisterPlacement: %d is not a registered handler", handler);
  if (ps.size() <= static_cast<std::size_t>(handler)) ps.resize(static_cast<std::size_t>(handler) + 1, nullptr);
  ps[static_cast<std::size_t>(handler)] = fn;
}

// ---- sends -----------------------------------------------------------------------------

void CmiSyncSend(int pe, std::size_t size, const void* msg) {
  check_pe(pe, "CmiSyncSend");
  check_size(size, "CmiSyncSend");
  void* m = copy_msg(size, msg);
  stamp(m, size);
  send_owned(pe, m);
}

void CmiSyncVectorSend(int pe, int n, const int* sizes, char* const* comps) {
  check_pe(pe, "CmiSyncVectorSend");
  std::size_t size = 0;
  for (int i = 0; i < n; ++i) {
    if (sizes[i] < 0) CmiAbort("CmiSyncVectorSend: part %d has a negative size (%d)", i, sizes[i]);
    size += static_cast<std::size_t>(sizes[i]);
  }
  if (n < 1 || static_cast<std::size_t>(sizes[0]) < CmiMsgHeaderSizeBytes)
    CmiAbort("CmiSyncVectorSend: the first part must hold the %zu-byte header", CmiMsgHeaderSizeBytes);
  check_size(size, "CmiSyncVectorSend");
  stamp(comps[0], size);
  if (n == 2 && pe != pe_state().my_pe && !(hdr(comps[0])->flags & CmiMsgExpedited) &&
      lrts::LrtsSendVector(pe, comps[0], static_cast<std::size_t>(sizes[0]), comps[1],
                           static_cast<std::size_t>(sizes[1])))
    return;
  void* m = CmiAlloc(size);
  char* at = static_cast<char*>(m);
  for (int i = 0; i < n; ++i) {
    std::memcpy(at, comps[i], static_cast<std::size_t>(sizes[i]));
    at += sizes[i];
  }
  send_owned(pe, m);
}

bool CmiVectorSendNoCopy(int pe, const int* sizes, char* const* comps, void* done_msg) {
  check_pe(pe, "CmiVectorSendNoCopy");
  if (sizes[0] < static_cast<int>(CmiMsgHeaderSizeBytes) || sizes[1] < 0)
    CmiAbort("CmiVectorSendNoCopy: parts of %d and %d bytes (the first holds the %zu-byte header)", sizes[0],
             sizes[1], CmiMsgHeaderSizeBytes);
  if (pe == pe_state().my_pe || (hdr(comps[0])->flags & CmiMsgExpedited)) return false;
  const std::size_t size = static_cast<std::size_t>(sizes[0]) + static_cast<std::size_t>(sizes[1]);
  check_size(size, "CmiVectorSendNoCopy");
  stamp(comps[0], size);
  return lrts::LrtsSendVectorLater(pe, comps[0], static_cast<std::size_t>(sizes[0]), comps[1],
                                   static_cast<std::size_t>(sizes[1]), lrts::Completion{enqueue_done, done_msg});
}

void CmiSyncSendAndFree(int pe, std::size_t size, void* msg) {
  check_pe(pe, "CmiSyncSendAndFree");
  check_size(size, "CmiSyncSendAndFree");
  if (CmiGetReference(msg) > 1) {  // shared (e.g. still being sent): send a copy
    CmiSyncSend(pe, size, msg);
    CmiFree(msg);
    return;
  }
  stamp(msg, size);
  send_owned(pe, msg);
}

void CmiRegisterOption(const char* name, int takes_value) {
  layer_options().emplace_back(name, takes_value != 0);
}

void CmiForwardAndFree(int pe, void* msg) {
  check_pe(pe, "CmiForwardAndFree");
  if (hdr(msg)->flags & CmiMsgPlaced) CmiAbort("CmiForwardAndFree: a placed message holds only its first part");
  const std::size_t size = CmiMsgSize(msg);
  const int src = CmiMsgSourcePe(msg);
  if (CmiGetReference(msg) > 1) {  // shared: forward a copy
    void* m = copy_msg(size, msg);
    CmiFree(msg);
    msg = m;
  }
  hdr(msg)->srcpe = src;  // the first sender, not this PE: the receiver orders by it
  send_owned(pe, msg);
}

CmiCommHandle CmiAsyncSend(int pe, std::size_t size, void* msg) {
  check_pe(pe, "CmiAsyncSend");
  check_size(size, "CmiAsyncSend");
  stamp(msg, size);
  CmiReference(msg);  // the caller keeps its reference; the send holds another
  send_owned(pe, msg);
  return msg;
}
int CmiAsyncMsgSent(CmiCommHandle h) { return CmiGetReference(h) == 1; }
void CmiReleaseCommHandle(CmiCommHandle) {}

void CmiSyncBroadcast(std::size_t size, const void* msg) {
  check_size(size, "CmiSyncBroadcast");
  broadcast_owned(size, copy_msg(size, msg), false);
}
void CmiSyncBroadcastAndFree(std::size_t size, void* msg) {
  check_size(size, "CmiSyncBroadcastAndFree");
  broadcast_owned(size, msg, false);
}
void CmiSyncBroadcastAll(std::size_t size, const void* msg) {
  check_size(size, "CmiSyncBroadcastAll");
  broadcast_owned(size, copy_msg(size, msg), true);
}
void CmiSyncBroadcastAllAndFree(std::size_t size, void* msg) {
  check_size(size, "CmiSyncBroadcastAllAndFree");
  broadcast_owned(size, msg, true);
}

// ---- information, output, errors -------------------------------------------------------

int CmiMyPe() { return pe_state().my_pe; }
int CmiNumPes() { return pe_state().num_pes; }
int CmiNumHosts() { return lrts::LrtsInfo().num_hosts; }
int CmiOversubscribed() { return lrts::LrtsInfo().oversubscribed ? 1 : 0; }

// ---- physical-node topology ---------------------------------------------------------------

static const PeState& topology() {
  PeState& s = pe_state();
  if (s.node_pes.empty()) {
    s.pe_node = lrts::LrtsPeHosts();
    s.pe_node_rank.assign(s.pe_node.size(), 0);
    for (std::size_t pe = 0; pe < s.pe_node.size(); ++pe) {
      const auto node = static_cast<std::size_t>(s.pe_node[pe]);
      if (node >= s.node_pes.size()) s.node_pes.resize(node + 1);
      s.pe_node_rank[pe] = static_cast<int>(s.node_pes[node].size());
      s.node_pes[node].push_back(static_cast<int>(pe));
    }
  }
  return s;
}

static int checked_pe(int pe, const char* what) {
  if (pe < 0 || pe >= CmiNumPes()) CmiAbort("%s(%d): no such PE (the job has %d)", what, pe, CmiNumPes());
  return pe;
}

static const std::vector<int>& node_pes(int node, const char* what) {
  const PeState& s = topology();
  if (node < 0 || static_cast<std::size_t>(node) >= s.node_pes.size())
    CmiAbort("%s(%d): no such physical node (the job runs on %zu)", what, node, s.node_pes.size());
  return s.node_pes[static_cast<std::size_t>(node)];
}

int CmiNumPhysicalNodes() { return static_cast<int>(topology().node_pes.size()); }
int CmiPhysicalNodeID(int pe) { return topology().pe_node[checked_pe(pe, "CmiPhysicalNodeID")]; }
int CmiPhysicalRank(int pe) { return topology().pe_node_rank[checked_pe(pe, "CmiPhysicalRank")]; }
int CmiNumPesOnPhysicalNode(int node) {
  return static_cast<int>(node_pes(node, "CmiNumPesOnPhysicalNode").size());
}
int CmiGetFirstPeOnPhysicalNode(int node) { return node_pes(node, "CmiGetFirstPeOnPhysicalNode").front(); }
void CmiGetPesOnPhysicalNode(int node, const int** pes, int* num) {
  const std::vector<int>& v = node_pes(node, "CmiGetPesOnPhysicalNode");
  *pes = v.data();
  *num = static_cast<int>(v.size());
}
CmiIdleCounts CmiIdleStats() {
  const lrts::IdleStats st = lrts::LrtsIdleStats();
  return {st.fd_waits, st.backoff_sleeps, st.busy_retries};
}
double CmiWallTimer() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now() - pe_state().start_time).count();
}

void CmiPrintf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vprintf(fmt, ap);
  va_end(ap);
}

void CmiError(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
}

void CmiAbort(const char* fmt, ...) {
  char prefix[64];
  std::snprintf(prefix, sizeof prefix, "ucharm: PE %d: abort: ", pe_state().my_pe);
  va_list ap;
  va_start(ap, fmt);
  char buf[4096];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  ucharm::converse::run_exit_hook(1);
  std::fprintf(stderr, "%s%s\n", prefix, buf);
  lrts::LrtsAbort(1, buf);
}

// ---- barrier and exit ----------------------------------------------------------------

void CmiBarrier() {
  PeState& s = pe_state();
  if (s.num_pes == 1) return;
  std::uint64_t round = s.barrier_round++;
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(BarrierPayload));
  CmiSetHandler(m, s.h_barrier_arrive);
  CmiSetExpedited(m);
  reinterpret_cast<BarrierPayload*>(CmiMsgPayload(m))->round = round;
  CmiSyncSendAndFree(0, CmiMsgHeaderSizeBytes + sizeof(BarrierPayload), m);
  CsdScheduleUntil([&] { return s.barrier_released > round; });
}

namespace ucharm::converse {
// Tells the other PEs to end (once; a PE already exiting has told them or been told).
void broadcast_exit(int code, bool abnormal) {
  PeState& s = pe_state();
  if (s.exiting || s.num_pes <= 1) return;
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(ExitPayload));
  CmiSetHandler(m, s.h_exit);
  CmiSetExpedited(m);
  *reinterpret_cast<ExitPayload*>(CmiMsgPayload(m)) = ExitPayload{code, abnormal ? 1 : 0};
  CmiSyncBroadcastAndFree(CmiMsgHeaderSizeBytes + sizeof(ExitPayload), m);
}

#if defined(__SANITIZE_ADDRESS__)
// Set once a PE has shut down: the process then ends with its chares, suspended threads
// and undelivered messages still allocated (the runtime tears none of them down), which
// LeakSanitizer's check at exit would report. Processes that return from main (unit tests,
// the launcher) keep the check.
bool g_pe_shut_down = false;
#endif

// This PE's part of the end: the embedder's hook, queued messages discarded, the machine
// shut down in order (pending sends complete, endpoints closed).
void shutdown_pe(int code) {
  PeState& s = pe_state();
  s.exiting = true;
#if defined(__SANITIZE_ADDRESS__)
  g_pe_shut_down = true;
#endif
  run_exit_hook(code);
  std::fflush(stdout);
  // Messages still queued are discarded (as in Charm++'s CkExit), first: their senders
  // get the credit back, or a sender still flooding this PE would wait for it forever
  // and never reach the exit.
  while (void* m = s.queue.pop()) {
    if (int src = prefix_of(m)->link_src; src >= 0) lrts::LrtsConsumed(src, hdr(m)->size);
    CmiFree(m);
  }
  lrts::LrtsExit();
}

// libc's own exit, found in libc itself: a library may interpose `exit` (libucharm-ampi's
// ends only the calling MPI rank after MPI_Finalize), but here the runtime ends the process.
[[noreturn]] void libc_exit(int code) {
  using Exit = void (*)(int);
  static const Exit fn = [] {
    void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    auto f = libc ? reinterpret_cast<Exit>(dlsym(libc, "exit")) : nullptr;
    return f ? f : static_cast<Exit>(&std::exit);
  }();
  fn(code);
  __builtin_unreachable();
}

// A normal end runs what a process's normal end runs: atexit handlers, static destructors
// (of every loaded object, dlopen'ed ones too) and the flush of every C stdio stream. An
// abnormal one (CmiExitAbnormal) flushes stdout/stderr only and ends at once.
void end_process(int code, bool abnormal) {
  shutdown_pe(code);
  if (abnormal) {
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(code);
  }
  libc_exit(code);
}
}  // namespace ucharm::converse

void CmiExit(int code) {
  broadcast_exit(code, false);
  end_process(code, false);
}

void CmiExitAbnormal(int code) {
  broadcast_exit(code, true);
  end_process(code, true);
}

void ConverseExit(int code) { end_process(code, false); }

#if defined(__SANITIZE_ADDRESS__)
// LeakSanitizer asks this (a weak hook of its interface) before its check at exit.
extern "C" __attribute__((visibility("default"))) int __lsan_is_turned_off() {
  return ucharm::converse::g_pe_shut_down ? 1 : 0;
}
#endif

// ---- scheduler -------------------------------------------------------------------------

void CsdEnqueue(void* msg) { enqueue_local(msg); }

void CmiSetEmbedHooks(const CmiEmbedHooks& hooks) { pe_state().hooks = hooks; }
void CmiSetTraceHooks(const CmiTraceHooks& hooks) {
  PeState& s = pe_state();
  if (s.traced_idle && s.trace_hooks.idle_end) s.trace_hooks.idle_end();
  s.traced_idle = false;
  s.trace_hooks = hooks;
}

// The scheduler found nothing to do: tell the tracer once per idle period.
static void note_idle(PeState& s) {
  if (s.trace_hooks.idle_begin && !s.traced_idle) {
    s.traced_idle = true;
    s.trace_hooks.idle_begin();
  }
}

namespace ucharm::converse {
void run_exit_hook(int code) {
  PeState& s = pe_state();
  if (auto* hook = std::exchange(s.hooks.on_exit, nullptr)) hook(code);
  if (auto* hook = std::exchange(s.trace_hooks.on_exit, nullptr)) hook(code);
}
}  // namespace ucharm::converse

void CsdExitScheduler() { pe_state().stop_scheduler = true; }

// Local work never starves the network: after kPollEvery messages taken from the queue
// in a row, the network is polled once (a PE whose handlers keep queueing local messages,
// such as quiescence waves on one PE, would otherwise never see a transfer complete).
constexpr unsigned kPollEvery = 64;
inline void* next_local() {
  PeState& s = pe_state();
  if (++s.since_poll >= kPollEvery) {
    s.since_poll = 0;
    lrts::LrtsProgress();
    if (s.polling) run_pollers();
    if (foreign_pending(s)) run_foreign_work();
    if (s.ccs_server) [[unlikely]] ccs::poll();
  }
  return s.queue.pop();
}

void CsdScheduleStep() {
  PeState& s = pe_state();
  if (void* msg = next_local()) {
    s.idle_since_ns = 0;
    dispatch(msg);
    return;
  }
  s.since_poll = 0;
  // Pollers run even when the network was busy: a stream of arrivals must not starve them.
  if ((lrts::LrtsProgress() > 0) | (s.polling && run_pollers()) | (foreign_pending(s) && run_foreign_work())) {
    s.idle_since_ns = 0;
    return;
  }
  // Idle: spin briefly (a reply is often microseconds away), then sleep on the
  // worker's event fd so that idle PEs leave the cores to busy ones. The clock is read
  // every 64 idle polls only: it costs as much as a poll. With more PEs than cores each
  // idle poll yields the core (sched_yield) to a PE that has work: the peer a reply waits
  // for runs at once, where a sleep would cost a wake-up per message.
  if (s.yield_when_idle) sched_yield();
  if ((++s.idle_polls & 63) != 0) return;
  // PE 0's CCS server: its sockets are served at the idle turns that read the clock (and
  // every kPollEvery messages, in next_local); a sleeping PE 0 wakes for them.
  if (s.ccs_server && ccs::poll()) [[unlikely]] {
    s.idle_since_ns = 0;
    return;
  }
  auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  if (s.idle_since_ns == 0) {
    s.idle_since_ns = now;
    s.poll_sleeps = 0;
    note_idle(s);
    return;
  }
  if (now - s.idle_since_ns < static_cast<long long>(s.options.idle_spin_us) * 1000) return;
  if (s.hooks.idle_begin) s.hooks.idle_begin();
  if (s.polling) [[unlikely]] {
    poller_idle_wait();  // short steps (a one-sided write wakes nobody); the period goes on
  } else {
    lrts::LrtsIdleWait(100);  // bounded, so a missed wake-up costs at most 100 ms
    s.idle_since_ns = 0;
  }
  if (s.hooks.idle_end) s.hooks.idle_end();
}

bool CsdScheduleStepInThread() {
  PeState& s = pe_state();
  if (s.stop_scheduler || s.exiting) return false;
  bool worked = false;
  if (++s.since_poll >= kPollEvery) {
    s.since_poll = 0;
    worked = lrts::LrtsProgress() > 0;
    if (s.polling) worked |= run_pollers();
    if (foreign_pending(s)) worked |= run_foreign_work();
    if (s.ccs_server) [[unlikely]] worked |= ccs::poll();
  }
  if (void* msg = s.queue.peek()) {
    // A thread's resumption runs on the scheduler's stack: the waiting thread yields to it
    // (it may be another rank of this PE, or this very thread, awakened). Not after work
    // ran here: that work may have made the caller's condition true without waking it (it
    // was the running thread), so false, which suspends the caller, must mean nothing ran.
    if (hdr(msg)->handler == s.h_thread_resume) return worked;
    s.queue.pop();
    s.idle_since_ns = 0;
    dispatch(msg);
    return true;
  }
  s.since_poll = 0;
  if ((lrts::LrtsProgress() > 0) | (s.polling && run_pollers()) | (foreign_pending(s) && run_foreign_work())) {
    s.idle_since_ns = 0;
    return true;
  }
  // Idle: the same spin as the scheduler's, then back to it, which sleeps.
  if (s.yield_when_idle) sched_yield();
  if ((++s.idle_polls & 63) != 0) return true;
  if (s.ccs_server && ccs::poll()) [[unlikely]] {
    s.idle_since_ns = 0;
    return true;
  }
  auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  if (s.idle_since_ns == 0) {
    s.idle_since_ns = now;
    note_idle(s);
    return true;
  }
  return now - s.idle_since_ns < static_cast<long long>(s.options.idle_spin_us) * 1000;
}

void CsdScheduler(int maxmsgs) {
  PeState& s = pe_state();
  s.stop_scheduler = false;
  if (maxmsgs == 0) {  // poll: handle what is there now
    lrts::LrtsProgress();
    for (std::size_t n = s.queue.size(); n > 0 && !s.stop_scheduler; --n)
      if (void* msg = s.queue.pop()) dispatch(msg);
    return;
  }
  int handled = 0;
  while (!s.stop_scheduler && (maxmsgs < 0 || handled < maxmsgs)) {
    if (void* msg = next_local()) {
      s.idle_since_ns = 0;
      dispatch(msg);
      ++handled;
    } else {
      CsdScheduleStep();
    }
  }
  s.stop_scheduler = false;
}

// ---- start-up --------------------------------------------------------------------------

void ConverseInit(int argc, char** argv, void (*start)(int, char**), int usched, int initret) {
  PeState& s = pe_state();
  s.start_time = std::chrono::steady_clock::now();
  // Lines reach the launcher as they are printed, each in one write: other PEs' lines
  // cannot split it. The buffer is given, not left to glibc: a stream made unbuffered
  // before (python -u, PYTHONUNBUFFERED) keeps its one-byte buffer through setvbuf with
  // none, and each printf then leaves in pieces.
  static char stdout_line_buffer[BUFSIZ];
  std::setvbuf(stdout, stdout_line_buffer, _IOLBF, sizeof stdout_line_buffer);
  if (auto err = parse_runtime_options(argc, argv, s.options)) {
    std::fprintf(stderr, "ucharm: %s\n", err->c_str());
    std::exit(2);
  }
  // Internal handlers first, in a fixed order: the same indices on every PE.
  s.h_exit = CmiRegisterHandler(exit_handler);
  s.h_barrier_arrive = CmiRegisterHandler(barrier_arrive_handler);
  s.h_barrier_release = CmiRegisterHandler(barrier_release_handler);
  s.h_thread_resume = CmiRegisterHandler(thread_resume_handler);

  lrts::Options mo;
  mo.eager_size = s.options.eager_size;
  mo.prepost = s.options.prepost;
  mo.flow_window = s.options.flow_window;
  mo.large_fragment = s.options.large_fragment;
  mo.bind = s.options.bind;
  lrts::LrtsInit(mo, lrts::Hooks{hook_alloc, hook_deliver, hook_release, hook_peer_failed, hook_place});
  s.my_pe = lrts::LrtsMyPe();
  s.num_pes = lrts::LrtsNumPes();
  // With more PEs than cores, an idle PE that polls takes the core a busy one needs:
  // MPICH's sendflood at 8 PEs on 2 cores took 83 s polling 50 us, 18 s sleeping at once.
  // So there the spin is 0 (the PE sleeps at the second clock reading, after 128 idle
  // polls), and each of those polls yields the core (yield_when_idle): a sleep at once cost
  // a wake-up per message (an 8-byte barrier of 4 PEs on 2 cores took 68 us, OpenMPI's
  // yielding poll 7.5), while yielding for 100 us made sendflood take 157 s (14 s so).
  s.yield_when_idle = lrts::LrtsInfo().oversubscribed;
  if (s.options.idle_spin_us < 0) s.options.idle_spin_us = s.yield_when_idle ? 0 : 50;
  ::on_exit(on_process_exit, nullptr);  // after LrtsInit: runs before the machine's destructors
  std::set_terminate(on_terminate);
  device_init();
  if (s.options.verbose) print_banner();
  // CCS: its two handlers on every PE (after the internal ones: same indices everywhere),
  // the server on PE 0 when asked for (it prints its address before the program starts).
  ccs::init(s.options.server, s.options.server_port, s.options.server_auth, s.options.server_ip);

  if (start) start(argc, argv);
  if (initret) return;
  if (!usched) CsdScheduler(-1);
  ConverseExit(0);
}

namespace ucharm::converse {

void print_banner() {
  const lrts::Info& in = lrts::LrtsInfo();
  if (in.my_pe == 0) {
    lrts::LrtsDescribeTransports(in.num_pes > 1 ? 1 : 0);
    const PeState& s = pe_state();
    std::printf("ucharm: %d PE%s on %d host%s (PE 0 on %s), started %s; UCX %s; "
                "transports to PE 1: %s; eager size %zu B, %d pre-posted receives\n",
                in.num_pes, in.num_pes == 1 ? "" : "s", in.num_hosts,
                in.num_hosts == 1 ? "" : "s", in.hostname.c_str(),
                in.launched ? "under PMIx" : "as a singleton (no launcher)",
                in.ucx_version.c_str(), in.transports.c_str(), s.options.eager_size,
                s.options.prepost);
  }
  std::printf("ucharm: PE %d on %s: binding %s\n", in.my_pe, in.hostname.c_str(),
              in.binding.c_str());
}

}  // namespace ucharm::converse
