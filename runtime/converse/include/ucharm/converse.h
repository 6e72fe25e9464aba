// Converse: messages, handlers, the per-PE scheduler and user-level threads.
// The names are Charm++'s (CmiMyPe, CmiAlloc, CsdScheduler, CthSuspend, ...), so that
// Converse users find them where they expect. This header includes no UCX or PMIx type.
#pragma once

#include <cstddef>
#include <cstdint>

// The library is built with hidden visibility; everything declared here is its API.
#pragma GCC visibility push(default)

// ---- messages ------------------------------------------------------------------------
// Every message starts with this header; CmiAlloc'd memory holds header + payload.
struct CmiMsgHeader {
  std::uint16_t handler;  // index from CmiRegisterHandler (same on every PE)
  std::uint16_t flags;    // CmiMsgFlag bits
  std::int32_t srcpe;     // sending PE (the root, for a broadcast)
  std::uint32_t size;     // total bytes, header included (messages < 4 GiB)
  std::int32_t prio;      // scheduler priority: smaller runs first, 0 is the default
};
// Small on purpose: at 8-byte payloads the header is most of what travels.
static_assert(sizeof(CmiMsgHeader) == 16, "the wire header is 16 bytes");

inline constexpr std::size_t CmiMsgHeaderSizeBytes = sizeof(CmiMsgHeader);

enum CmiMsgFlag : std::uint16_t {
  CmiMsgExpedited = 1u << 0,     // bypasses the queue order
  CmiMsgBroadcast = 1u << 1,     // travels along the broadcast spanning tree
  CmiMsgBroadcastAll = 1u << 2,  // ... and the root runs it too
  CmiMsgPlaced = 1u << 3,        // the data went where a placement said (CmiRegisterPlacement)
};

// Allocates a message of `bytes` (header included), reference count 1.
void* CmiAlloc(std::size_t bytes);
// Drops one reference; the memory is reused when none is left.
void CmiFree(void* msg);
void CmiReference(void* msg);
int CmiGetReference(void* msg);

inline CmiMsgHeader* CmiMsgHeaderOf(void* msg) { return static_cast<CmiMsgHeader*>(msg); }
inline void CmiSetHandler(void* msg, int h) { CmiMsgHeaderOf(msg)->handler = static_cast<std::uint16_t>(h); }
inline int CmiGetHandler(void* msg) { return static_cast<int>(CmiMsgHeaderOf(msg)->handler); }
inline int CmiMsgSourcePe(void* msg) { return CmiMsgHeaderOf(msg)->srcpe; }
inline std::size_t CmiMsgSize(void* msg) { return CmiMsgHeaderOf(msg)->size; }
inline void CmiSetPriority(void* msg, int prio) { CmiMsgHeaderOf(msg)->prio = prio; }
inline void CmiSetExpedited(void* msg) { CmiMsgHeaderOf(msg)->flags |= CmiMsgExpedited; }
inline char* CmiMsgPayload(void* msg) { return static_cast<char*>(msg) + CmiMsgHeaderSizeBytes; }

// ---- handlers ------------------------------------------------------------------------
// A handler owns the message it is given: it must CmiFree it (or send it AndFree).
using CmiHandler = void (*)(void* msg);
// Register in the same order on every PE (before the first message can arrive);
// at most 65535 handlers.
int CmiRegisterHandler(CmiHandler h);

// ---- point-to-point ------------------------------------------------------------------
// `size` is the total message size, header included, below 4 GiB. Send to self goes straight to
// the local queue.
void CmiSyncSend(int pe, std::size_t size, const void* msg);  // copies; msg stays yours
void CmiSyncSendAndFree(int pe, std::size_t size, void* msg);  // takes msg
// Sends one message made of `n` parts (sizes[i] bytes at comps[i], concatenated; comps[0]
// begins with the header, its handler set) and returns once every part may be reused, as
// Charm++'s. Two parts to another PE go straight from the buffers where the link can take
// them at once (the data is copied once, by UCX, instead of twice); otherwise the parts are
// copied into one message. Writes the size and source PE into comps[0]'s header.
void CmiSyncVectorSend(int pe, int n, const int* sizes, char* const* comps);
// CmiSyncVectorSend of two parts without a copy or a wait, for a message above the eager
// size to another PE: comps[0] is the caller's again at return, comps[1] must stay as it is
// until `done_msg` (yours, or nullptr) runs here through the scheduler. Returns false,
// having sent nothing, where it cannot (the eager size or less, a first part over 256
// bytes, a link waiting for credit, this PE, an expedited message): send otherwise then.
bool CmiVectorSendNoCopy(int pe, const int* sizes, char* const* comps, void* done_msg);
// Placement: where the second part of a large two-part message (above the eager size, as
// CmiSyncVectorSend sends it) lands on the receiving PE. The handler's placement is asked
// when the message is next in its sender's order and this PE's queue is empty, before its
// data arrives: `head` is the first part (writable; its header's size is the whole
// message's), and the result is where the remaining CmiMsgSize(head) - head_bytes bytes are
// received (host memory), or nullptr for the message as usual. Given a place, the handler
// later runs with the first part alone, flagged CmiMsgPlaced, once the data is there.
using CmiPlaceFn = void* (*)(void* head, std::size_t head_bytes);
void CmiRegisterPlacement(int handler, CmiPlaceFn fn);
// Sends a message that arrived here on to `pe`, keeping its header's source PE (the PE
// that first sent it): a layer that forwards (the core's location manager) still knows
// whose message it is. Takes msg.
void CmiForwardAndFree(int pe, void* msg);
using CmiCommHandle = void*;
// No copy: msg must stay unchanged until CmiAsyncMsgSent(handle) is true; then CmiFree it.
CmiCommHandle CmiAsyncSend(int pe, std::size_t size, void* msg);
int CmiAsyncMsgSent(CmiCommHandle handle);
void CmiReleaseCommHandle(CmiCommHandle handle);

// ---- broadcast along a spanning tree (not N sends from the root) ----------------------
void CmiSyncBroadcast(std::size_t size, const void* msg);        // all but self
void CmiSyncBroadcastAndFree(std::size_t size, void* msg);
void CmiSyncBroadcastAll(std::size_t size, const void* msg);     // all, self included
void CmiSyncBroadcastAllAndFree(std::size_t size, void* msg);
inline constexpr int CmiBroadcastBranching = 4;

// ---- PE information, timers, output, errors ------------------------------------------
int CmiMyPe();
int CmiNumPes();
int CmiNumHosts();  // hosts the job's processes run on (the launcher's node count)
int CmiOversubscribed();  // 1 when this host runs more PEs than it has cores
// Charm++'s physical-node topology: the hosts the PEs run on, numbered 0.. in the order of
// their first PE (PEs whose host names are equal share one), and each host's PEs in
// increasing order (a PE's rank is its position there). Read once, on first use, from the
// host names the PEs published at start-up; any PE may call them for any PE or host.
int CmiNumPhysicalNodes();
int CmiPhysicalNodeID(int pe);
int CmiPhysicalRank(int pe);
int CmiNumPesOnPhysicalNode(int node);
int CmiGetFirstPeOnPhysicalNode(int node);
// The node's PEs: *pes (valid as long as the program runs), *num of them.
void CmiGetPesOnPhysicalNode(int node, const int** pes, int* num);
double CmiWallTimer();  // seconds since start-up
void CmiPrintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void CmiError(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Prints the message and ends every PE with a non-zero exit code.
[[noreturn]] void CmiAbort(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Every PE waits until all PEs have called it; messages keep being handled meanwhile.
void CmiBarrier();

// How this PE has idled since start-up (for tests and diagnostics): sleeps on the network
// event fd, back-off sleeps while the network was busy for other PEs' sake (small sends
// held back by a busy peer), and busy answers retried at once because a transfer of this
// PE's own (rendezvous, large, device or channel) was open.
struct CmiIdleCounts {
  std::uint64_t fd_waits = 0;
  std::uint64_t backoff_sleeps = 0;
  std::uint64_t busy_retries = 0;
};
CmiIdleCounts CmiIdleStats();

// Ends the program on all PEs with exit code `code` (callable from any one PE):
// every PE stops, pending sends complete, the network is torn down in order.
// Messages still queued are discarded.
[[noreturn]] void CmiExit(int code = 0);
// An abnormal end of the program on all PEs with `code` (MPI_Abort): as CmiExit, but no
// atexit handlers or static destructors run and only stdout/stderr are flushed. CmiExit
// and ConverseExit end each process as a normal end does: atexit handlers, static
// destructors (also of dlopen'ed objects), every C stdio stream flushed.
[[noreturn]] void CmiExitAbnormal(int code);

// ---- the scheduler -------------------------------------------------------------------
// Queues `msg` on this PE by its header's priority and flags.
void CsdEnqueue(void* msg);
// maxmsgs < 0: until CsdExitScheduler; 0: handle what is there, then return;
// n > 0: return after n messages (or CsdExitScheduler).
void CsdScheduler(int maxmsgs);
inline void CsdScheduleForever() { CsdScheduler(-1); }
inline void CsdSchedulePoll() { CsdScheduler(0); }
void CsdExitScheduler();
// One scheduling step: run one message, or progress the network, or idle briefly.
void CsdScheduleStep();
// A scheduling step taken by a user-level thread that waits (a blocking MPI call) instead
// of suspending: runs the next message on this thread's stack, or progresses the network.
// Handlers it runs must not resume threads directly (CthAwaken, never CthResume). Returns
// false, having done nothing, when the thread should suspend instead: the next message
// resumes a thread (only the scheduler may run that), the scheduler was asked to stop, or
// the PE has been idle past its spin time (the scheduler then sleeps).
bool CsdScheduleStepInThread();
// Runs the scheduler until `cond()` is true.
template <class Cond>
void CsdScheduleUntil(Cond&& cond) {
  while (!cond()) CsdScheduleStep();
}

// ---- start-up and shutdown -----------------------------------------------------------
// Charm++'s ConverseInit: parses and removes the runtime's +options from argv, starts
// the machine, runs `start(argc, argv)` on every PE; then, unless `initret`, runs the
// scheduler (unless `usched`) and ends with ConverseExit.
//   +eager-size=BYTES  +prepost=N  +stacksize=BYTES  +idle-spin-us=N  +nobind  +verbose
void ConverseInit(int argc, char** argv, void (*start)(int, char**), int usched = 0,
                  int initret = 0);
// A layer above Converse names a +option of its own before ConverseInit (without the '+';
// `takes_value`: "+name VALUE" or "+name=VALUE"): ConverseInit leaves it in argv for that
// layer instead of rejecting it as unknown.
void CmiRegisterOption(const char* name, int takes_value);
// Collective: every PE must call it. Ends the process with `code`.
[[noreturn]] void ConverseExit(int code = 0);

// Hooks for a runtime embedded in an interpreter (the Python bindings): `idle_begin` runs
// before the PE sleeps waiting for the network and `idle_end` after it (the interpreter
// lets other threads run meanwhile); `on_exit` runs once before this process ends, by
// CmiExit, ConverseExit or CmiAbort (the interpreter flushes its output). Null: nothing.
struct CmiEmbedHooks {
  void (*idle_begin)() = nullptr;
  void (*idle_end)() = nullptr;
  void (*on_exit)(int code) = nullptr;
};
void CmiSetEmbedHooks(const CmiEmbedHooks& hooks);
// Hooks for a tracer (the core's `+trace`), beside the embedder's: `idle_begin` runs when
// the scheduler has found nothing to do for its first idle polls, `idle_end` before it next
// runs a message (one pair per idle period, however often the PE sleeps in it); `on_exit`
// runs once before this process ends, as the embedder's does. Null: nothing, and the
// message path tests one flag.
struct CmiTraceHooks {
  void (*idle_begin)() = nullptr;
  void (*idle_end)() = nullptr;
  void (*on_exit)(int code) = nullptr;
};
void CmiSetTraceHooks(const CmiTraceHooks& hooks);

// ---- GPU data: the Converse layer of the GPU Messaging and Channel APIs ----------------
// Data moves straight between buffers, host or CUDA memory alike, tagged by the machine
// layer (the paper's Fig. 3). A completion is a message you allocate and pass in (or
// nullptr): the scheduler runs it on this PE once the operation is done.
enum class CmiMemoryType : std::uint8_t { Host = 0, Cuda = 1 };
CmiMemoryType CmiGetMemoryType(const void* ptr);  // host or CUDA (cached, correct after free)
std::size_t CmiMemoryTypeCachedRanges();          // for tests: device ranges cached now
bool CmiMemoryTypeCaching();                      // false: no caching (frees not visible)

// Streams: every call takes an optional CUDA stream (a cudaStream_t; nullptr for none).
// A send that names one leaves only after the work queued on that stream before the
// call has finished; a receive that names one is posted only after that work has
// finished (a kernel still reading the buffer keeps it). Neither blocks the PE. Once a
// completion runs, work queued on any stream sees the data.
struct CmiDeviceBuffer {
  const void* ptr = nullptr;
  std::size_t size = 0;
  std::uint64_t tag = 0;   // set by CmiSendDevice; the receiver needs it
  void* stream = nullptr;  // optional cudaStream_t the data waits for
};

// GPU Messaging: sends buf.size bytes at buf.ptr to `pe` and sets buf.tag (send it to the
// receiver in a host message). `done_msg` runs here once the buffer may be reused.
void CmiSendDevice(int pe, CmiDeviceBuffer& buf, void* done_msg);
// Receives the data of `tag` into `dest`, which holds `size` bytes (more incoming data
// is an error naming both sizes). `done_msg` runs here once the data is in.
void CmiRecvDevice(void* dest, std::size_t size, std::uint64_t tag, void* done_msg, void* stream = nullptr);

// Channels: both sides build the same tags from a channel id and a counter that each
// side advances per direction; no metadata message travels.
unsigned CmiChannelIdBits();  // 28 in normal builds
std::uint64_t CmiChannelTag(std::uint64_t channel_id, std::uint64_t counter);
std::uint64_t CmiChannelNextCounter(std::uint64_t counter);  // wraps at the counter width
void CmiChannelSend(int pe, const void* ptr, std::size_t size, std::uint64_t tag, void* done_msg,
                    void* stream = nullptr);
void CmiChannelRecv(void* ptr, std::size_t size, std::uint64_t tag, void* done_msg, void* stream = nullptr);
// A send on `stream` before its tag and destination are known (a channel end that has not
// heard its peer's id): the stream's point is taken now, so what is sent is what the work
// queued on `stream` before this call left. CmiChannelSendHeld issues it (started once the
// stream has passed the point); CmiChannelSendDrop forgets it (`done_msg` stays the caller's).
struct CmiHeldSend;
CmiHeldSend* CmiChannelSendHold(const void* ptr, std::size_t size, void* done_msg, void* stream);
void CmiChannelSendHeld(CmiHeldSend* held, int pe, std::uint64_t tag);
void CmiChannelSendDrop(CmiHeldSend* held);

// ---- Pollers: work the scheduler checks each turn (one-sided notifications) ----------------
// (issue 19, part 1: rma.cpp.) `fn(ctx)` runs while registered: at every idle turn of the
// scheduler and whenever it polls the network between messages (at least every 64
// messages); it returns true when it found something to do (the PE is then not idle). A
// one-sided write into this PE wakes nobody, so while any poller is registered an idle PE
// sleeps only in short steps (20 us doubling to 1 ms per idle period) instead of waiting
// for the network. With none registered the scheduler pays one predictable branch per idle
// turn. A poller may add or remove pollers, itself included. Returns an id (> 0).
using CmiPollerFn = bool (*)(void* ctx);
int CmiAddPoller(CmiPollerFn fn, void* ctx);
void CmiRemovePoller(int id);  // an unknown id is ignored
int CmiNumPollers();

// ---- Work handed to the PE by other threads of its process ------------------------------
// A thread that is not the PE's (a program's own pthread or OpenMP thread) must never touch
// the PE's state; it hands work over instead: CmiPushForeignWork queues `w` (the caller's
// memory: it must stay valid until `w->run(w)` has been called) and wakes the PE if it
// sleeps (LrtsWakeup). The PE runs `run` between messages, at its next idle turn or
// network poll, in its scheduler's context: like a handler, `run` must not resume threads
// directly (CthAwaken them). Lock-free (a Treiber stack, taken whole and run oldest first);
// callable from any thread of the process, the PE's own included. With nothing pushed the
// scheduler pays one load per idle turn.
struct CmiForeignWork {
  void (*run)(CmiForeignWork* self) = nullptr;
  CmiForeignWork* next = nullptr;
};
void CmiPushForeignWork(CmiForeignWork* w);

// ---- One-sided (RMA): windows of registered memory ----------------------------------------
// (issue 19, part 1: rma.cpp; UCX ucp_mem_map / ucp_rkey_pack / ucp_put_nbx / ...)
// A region is an existing buffer of this PE (host or CUDA memory, detected) registered for
// one-sided access. Its descriptor (address, size, memory type, packed remote key; a few
// hundred bytes at most) is sent to a peer in a message of your own; the peer attaches it
// and then reads and writes the region without this PE taking part.
// Completions: `done_msg` (a message you allocate, or nullptr) is run by the scheduler on
// the calling PE once the operation has completed locally: a put's source may be reused,
// a get's data is in, an atomic's result is written. A put's data is at the target only
// after a flush (CmiRmaFlush) has completed, or, for the target, once a notification
// that follows it has been seen (CmiRmaPutNotify). Offsets and lengths are checked on
// every call: outside the region, the program ends naming the region's size, the offset
// and the length.
struct CmiRmaRegion;  // registered here
struct CmiRmaRemote;  // a peer's (or this PE's own) region, attached here
// `size` 0 is allowed (nothing is mapped; only zero-length operations fit).
CmiRmaRegion* CmiRmaRegister(void* ptr, std::size_t size);
// Peers must be done with the region (their operations flushed) before it goes.
void CmiRmaDeregister(CmiRmaRegion* r);
void* CmiRmaRegionBase(const CmiRmaRegion* r);
std::size_t CmiRmaRegionSize(const CmiRmaRegion* r);
// The descriptor's bytes (valid while the region is registered): copy them into a message.
const void* CmiRmaDescriptor(const CmiRmaRegion* r, std::size_t* len);
// Attaches the region a descriptor from PE `pe` describes (`pe` may be this PE). A
// descriptor that is malformed or from another PE ends the program with a clear message.
CmiRmaRemote* CmiRmaAttach(int pe, const void* desc, std::size_t len);
// Waits (progressing) until this PE's operations on `r` are done, then releases it.
void CmiRmaDetach(CmiRmaRemote* r);
int CmiRmaRemotePe(const CmiRmaRemote* r);
std::size_t CmiRmaRemoteSize(const CmiRmaRemote* r);
CmiMemoryType CmiRmaRemoteMemoryType(const CmiRmaRemote* r);

// Writes `bytes` at `src` (host or CUDA) to offset `offset` of `dst`.
void CmiRmaPut(CmiRmaRemote* dst, std::size_t offset, const void* src, std::size_t bytes, void* done_msg);
// Reads `bytes` at offset `offset` of `src` into `dst` (host or CUDA).
void CmiRmaGet(CmiRmaRemote* src, std::size_t offset, void* dst, std::size_t bytes, void* done_msg);
// Notified put (dCUDA's notified access): the data, then, ordered after it at the target,
// +1 on the 8-byte counter at `counter_offset` of `counter` (a host-memory region of the
// same PE, 8-byte aligned). A target that reads the counter with an acquire load
// (CmiRmaReadCounter) and sees it rise by n sees the data of n notified puts (of each
// origin, in issue order), with no message. `done_msg`: the source may be reused.
void CmiRmaPutNotify(CmiRmaRemote* dst, std::size_t offset, const void* src, std::size_t bytes,
                     CmiRmaRemote* counter, std::size_t counter_offset, void* done_msg);
// Atomics on a 4- or 8-byte word (`width`, aligned to it) of a host-memory region.
// Add/And/Or/Xor apply `value` (`result`, optional: the old word); Swap writes `value`;
// CompareSwap writes `value` where the word equals `compare`. Swap and CompareSwap need
// `result` (host memory, `width` bytes): the old word, written when `done_msg` runs.
enum class CmiRmaOp : std::uint8_t { Add, And, Or, Xor, Swap, CompareSwap };
void CmiRmaAtomic(CmiRmaRemote* r, std::size_t offset, CmiRmaOp op, std::size_t width, std::uint64_t value,
                  std::uint64_t compare, void* result, void* done_msg);
// Orders at their targets the operations this PE issued before against those it issues
// after (UCX's worker fence: it orders at every target; UCX 1.22 has no per-target one).
void CmiRmaFence();
// `done_msg` runs once every operation issued before to `pe` (pe < 0: to every PE) is
// complete at its target (remote completion).
void CmiRmaFlush(int pe, void* done_msg);
// One-sided operations and flushes of this PE not completed yet.
std::size_t CmiRmaOpen();
// An acquire load of a notification counter (or any word peers write one-sidedly).
inline std::uint64_t CmiRmaReadCounter(const std::uint64_t* counter) {
  return __atomic_load_n(counter, __ATOMIC_ACQUIRE);
}

// ---- CUDA IPC mappings (PEs on one host): device windows ----------------------------------
// (issue 19, part 3: device_ipc.cpp) The machine layer's CUDA IPC calls, for the core's
// CkDeviceWindow. Each returns nullptr on success, else a message naming the cause (valid
// until the next failing call). `ctx` is the CUcontext of the exported allocation.
struct CmiIpcHandle {
  unsigned char handle[64] = {};  // CUipcMemHandle of the whole allocation
  std::uint64_t offset = 0;       // of the exported pointer within it
  std::uint64_t bytes = 0;        // exposed from the pointer on
  char bus_id[32] = {};           // PCI bus id of its GPU
};
// [ptr, ptr + bytes) must be device memory inside one cudaMalloc/cuMemAlloc allocation.
const char* CmiIpcExport(const void* ptr, std::size_t bytes, CmiIpcHandle& out, void** ctx);
// Same GPU or peer access; *atomics: this GPU's atomics work on that GPU's memory.
const char* CmiIpcCanMap(void* ctx, const char* bus_id, bool* atomics);
const char* CmiIpcOpen(void* ctx, const CmiIpcHandle& h, void** ptr);  // a peer process's export
void CmiIpcClose(void* ctx, const CmiIpcHandle& h);
const char* CmiIpcAllocWords(void* ctx, std::size_t bytes, void** ptr);  // zeroed device words
void CmiIpcFreeWords(void* ctx, void* ptr);
// Stream-ordered (the host never waits): copy; 64-bit write after a memory barrier; wait
// until the word is >= value.
const char* CmiIpcStreamCopy(void* ctx, void* stream, void* dst, const void* src, std::size_t bytes);
const char* CmiIpcStreamWrite64(void* ctx, void* stream, void* addr, std::uint64_t value);
const char* CmiIpcStreamWaitGeq64(void* ctx, void* stream, void* addr, std::uint64_t value);
// This PE's host name (PEs on one host can map each other's exports).
const char* CmiIpcHostName();

// ---- Stream-ordered transfers -----------------------------------------------------------------
// (issue 19, part 4: stream_ordered.cpp.) Operations enqueued on a CUDA stream (a
// cudaStream_t; nullptr is the legacy default stream): the operation starts once the work
// queued on the stream before it has finished, and, for the forms whose stream waits, work
// queued on the stream after it runs only once the operation has completed. The host
// never waits for the GPU: the stream writes a word in pinned host memory when it reaches
// the operation, a poller on this PE sees it and starts the transfer, and the transfer's
// completion writes the word the stream waits on (machine.h, "Stream memory operations").
// Enqueuing ends the program with the reason where it cannot work (a build or a process
// without CUDA, no CUDA context current); CmiStreamOpsUnavailable says it beforehand.
struct CmiStreamOp {
  std::uint32_t slot = 0;  // 0: none
  std::uint64_t seq = 0;
};
const char* CmiStreamOpsUnavailable();  // nullptr: available now; else why not
// A point on `stream`: when the stream reaches it, `ready_msg` (a message you allocate, or
// nullptr) is queued on this PE's scheduler. With `stream_waits`, the stream then waits
// until CmiStreamOpDone(op) (call it exactly once, after the ready message has run).
CmiStreamOp CmiStreamEnqueue(void* stream, void* ready_msg, bool stream_waits);
void CmiStreamOpDone(CmiStreamOp op);
bool CmiStreamOpIsDone(CmiStreamOp op);
// Work queued on `stream` from now on waits for `op` (any stream, any time: a completed
// operation passes at once).
void CmiStreamEnqueueWait(void* stream, CmiStreamOp op);
std::size_t CmiStreamOpsOpen();  // enqueued on this PE, not yet done (tests)
// Channel transfers (CmiChannelSend/Recv's tags) started when `stream` reaches them, from
// the poller itself (no scheduler hop). `done_msg` (or nullptr) runs here once the transfer
// has completed; with `stream_waits` the stream waits for that completion as well. Device
// buffers travel through pinned host buffers copied on the stream (below): a receive into
// one always makes the stream wait, and its data reaches the device buffer on the stream
// (work queued after the receive sees it; `done_msg` may run before that copy).
// UCHARM_STREAM_STAGING=0 hands device buffers to UCX instead (see machine.h, "Staging").
//
// Staging for layers that start their own transfers (the MPI shim): StageOut enqueues the
// copy of device data into a pinned buffer and returns it (release it once sent);
// StageBuffer gives a pinned buffer to receive into; StageIn, enqueued once the stream
// waits for that receive, copies it into the device buffer and recycles it after the copy.
void* CmiStreamStageOut(void* stream, const void* dev, std::size_t size);
void* CmiStreamStageBuffer(std::size_t size);
void CmiStreamStageIn(void* stream, void* dev, void* host, std::size_t size);
void CmiStreamStageRelease(void* host);
CmiStreamOp CmiChannelSendEnqueue(int pe, const void* ptr, std::size_t size, std::uint64_t tag, void* stream,
                                  bool stream_waits, void* done_msg);
CmiStreamOp CmiChannelRecvEnqueue(void* ptr, std::size_t size, std::uint64_t tag, void* stream, bool stream_waits,
                                  void* done_msg);

// ---- CCS: Converse Client-Server -------------------------------------------------------
// Programs outside the job (Charm++'s CcsConnect/CcsSendRequest/CcsRecvResponse clients,
// the Python package's ucharm.ccs) call named handlers of a running job over TCP. The
// server is PE 0's: started by +server / +server-port N / +server-auth FILE / +server-ip
// ADDR (ucharmrun's ++server ...), it prints "ccs: Server IP = ..., Server port = ... $"
// and listens on 127.0.0.1 unless told otherwise. PE 0's scheduler serves it (its socket
// is in the set an idle PE sleeps on); a request runs the handler of that name on the PE
// it names (-1: every PE, whose replies are merged) and the reply goes back on the
// client's connection. Charm++'s wire protocol, SHA-1 authentication included.
inline constexpr int CcsMaxHandlerName = 31;  // bytes of a handler name (32 with its NUL)
// A Converse-style handler: it gets a message whose payload is the request's data
// (CmiMsgSize(msg) - CmiMsgHeaderSizeBytes bytes) and must CmiFree it.
void CcsRegisterHandler(const char* name, CmiHandler fn);
// A handler given a read-only view of the request's data.
using CcsHandlerFn = void (*)(void* user, int len, const void* data);
void CcsRegisterHandlerFn(const char* name, CcsHandlerFn fn, void* user);
// Combines the replies of a broadcast (pe -1) or multicast request to this handler on
// PE 0 (register it there): `local` is the first reply, `remote` the other n, each a
// (data, length) pair; returns the merged reply in a malloc'ed buffer (*size its length).
// Without one, the replies are concatenated in PE order.
using CcsMergeFn = void* (*)(int* size, const void* local, int local_len, const void* const* remote,
                             const int* remote_lens, int n);
void CcsSetMergeFn(const char* name, CcsMergeFn fn);
int CcsEnabled();  // 1: this job runs a CCS server (on PE 0)
// 1 inside a CCS handler whose reply is still due (not yet sent or delayed).
int CcsIsRemoteRequest();
// Replies to the request being handled (once; a handler that returns without replying
// or delaying sends an empty reply).
void CcsSendReply(int len, const void* data);
void CcsNoReply();  // closes the client's connection without a reply
// Keeps the reply for later, from any PE: pass the token to CcsSendDelayedReply once.
struct CcsDelayedReply {
  std::uint64_t id = 0;  // the request on PE 0
  std::int32_t pe = 0;   // the PE that handled it
  std::int32_t dest = 0; // what the request named (>= 0, -1 broadcast, < -1 multicast)
};
CcsDelayedReply CcsDelayReply();
void CcsSendDelayedReply(CcsDelayedReply d, int len, const void* data);
void CcsNoDelayedReply(CcsDelayedReply d);
// PE 0: the address and port the server listens on (0 when it does not run).
int CcsServerPort();
const char* CcsServerAddress();

// ---- user-level threads ----------------------------------------------------------------
struct CthThreadStruct;
using CthThread = CthThreadStruct*;
using CthVoidFn = void (*)(void*);

// A new thread, suspended; CthAwaken starts it. stacksize 0: the +stacksize default.
CthThread CthCreate(CthVoidFn fn, void* arg, std::size_t stacksize = 0);
CthThread CthSelf();  // nullptr outside a thread
// Suspends the calling thread; it runs again when someone calls CthAwaken on it.
void CthSuspend();
// Queues `t` to resume (through the scheduler queue, with priority `prio`).
void CthAwaken(CthThread t);
void CthAwakenPrio(CthThread t, int prio);
// Lets other queued work run, then continues.
void CthYield();
// Runs `t` at once, from a handler (not from a thread): returns when it suspends or ends.
// For a thread whose wait a handler has just ended (a reply it was blocked on), this skips
// the queue's round trip; a thread already queued (CthAwaken) is left to the queue.
void CthResume(CthThread t);
// One word per thread for the layers above (the MPI shim keeps the thread's rank there).
void CthSetData(CthThread t, void* data);
void* CthGetData(CthThread t);

// ==== isomalloc: memory at the same addresses in every process (migratable threads) ====
// One region is reserved at the same virtual address in every process and cut into equal
// slices; slice k (for thread or rank k) holds a heap and a stack. A suspended migratable
// thread, its stack and its slice heap move to another process as a byte copy at the
// same addresses (docs/architecture.md, "Isomalloc: memory that moves").
struct CmiIsoSlice;

// Call first thing in main(), before ConverseInit. If address-space randomization is on,
// re-executes the program (same argv and environment) with it off, so that code and
// libraries sit at the same addresses in every process (UCHARM_ISOMALLOC_REEXEC=0: never
// re-execute). Takes +isomalloc-region=SIZE (default and most 48T) and +isomalloc-slice=SIZE
// (default 48G) out of argv, then reserves the region (no memory, no swap). False: no
// region (CmiIsomallocError says why); with a region but randomization on, threads run
// but cannot move (CmiIsomallocCanMigrate() is false). A bad option ends the program.
bool CmiIsomallocInit(int& argc, char** argv);
bool CmiIsomallocReady();      // the region is reserved in this process
bool CmiIsomallocCanMigrate(); // ... and the layout is fixed: threads may leave and arrive
// Why the last isomalloc call failed (or why threads cannot migrate); "" if nothing failed.
const char* CmiIsomallocError();
int CmiIsomallocNumSlices();
std::size_t CmiIsomallocSliceBytes();
// Slice `id` (0 <= id < CmiIsomallocNumSlices()), fresh and empty, in this process; nullptr
// (CmiIsomallocError) when it does not exist, is in use here or isomalloc is not set up.
CmiIsoSlice* CmiIsomallocSlice(int id);
int CmiIsoSliceId(const CmiIsoSlice* s);
bool CmiIsomallocContains(const void* p);    // p lies in the region
CmiIsoSlice* CmiIsoSliceOf(const void* p);   // the live slice holding p, or nullptr

// The slice heap (16-byte aligned blocks; nullptr when the slice is full, or the system
// refuses the memory). Every byte of its bookkeeping is inside the slice. Freeing a pointer
// from elsewhere aborts. Not thread-safe: callers that share a slice serialize.
void* CmiIsoMalloc(CmiIsoSlice* s, std::size_t n);
void* CmiIsoCalloc(CmiIsoSlice* s, std::size_t n, std::size_t size);
void* CmiIsoRealloc(CmiIsoSlice* s, void* p, std::size_t n);
// `align`: a power of two.
void* CmiIsoMemalign(CmiIsoSlice* s, std::size_t align, std::size_t n);
void CmiIsoFree(CmiIsoSlice* s, void* p);
std::size_t CmiIsoUsableSize(const void* p);
// Bytes in allocated blocks (16-byte block headers included); 0 once all is freed.
std::size_t CmiIsoUsedBytes(const CmiIsoSlice* s);
// For tests: walks the heap; nullptr if consistent, else what is wrong.
const char* CmiIsoSliceCheck(const CmiIsoSlice* s);

// Moving a slice: the pack holds the used extents only (the heap up to its top less free
// blocks' interiors, the stack's live part), plus the addresses of the program and its
// libraries. Pack writes exactly PackSize bytes. Unpack maps the extents at their
// addresses here; nullptr (CmiIsomallocError) if the pack is corrupt, the slice is in use
// here, or this process's code or library addresses differ from the sender's. After the
// pack has left, the sender calls Release (its pages and addresses are given back).
std::size_t CmiIsoSlicePackSize(const CmiIsoSlice* s);
std::size_t CmiIsoSlicePack(const CmiIsoSlice* s, void* dest);
CmiIsoSlice* CmiIsoSliceUnpack(const void* src, std::size_t len);
void CmiIsoSliceRelease(CmiIsoSlice* s);

// Migratable threads: stack and thread record inside `slice` (one thread per slice).
// stacksize 0: the +stacksize default. Otherwise a CthThread like any other.
CthThread CthCreateMigratable(CthVoidFn fn, void* arg, CmiIsoSlice* slice, std::size_t stacksize = 0);
CmiIsoSlice* CthMigratableSlice(CthThread t);  // nullptr for a thread of CthCreate
// A thread suspended in CthSuspend (not queued, not finished) is packed with its slice;
// CthUnpackMigratable (another process) returns it suspended where it was: CthAwaken it.
// nullptr (CmiIsomallocError) as CmiIsoSliceUnpack. Its CthSetData word travels as is.
// The sender then calls CthMigratableRelease (drops its local state and the slice).
// A migratable thread that finishes leaves its slice to its owner (CmiIsoSliceRelease).
std::size_t CthPackMigratableSize(CthThread t);
std::size_t CthPackMigratable(CthThread t, void* dest);
CthThread CthUnpackMigratable(const void* src, std::size_t len);
void CthMigratableRelease(CthThread t);
// ==== end isomalloc =========================================================================

#pragma GCC visibility pop
