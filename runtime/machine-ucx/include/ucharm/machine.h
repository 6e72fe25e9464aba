// The Lrts interface: what the UCX machine layer offers to Converse (the one layer
// allowed to call it). No UCX or PMIx type appears here.
//
// Non-SMP: one PE per process, one UCP worker per PE. Everything here is called from
// the PE's own thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ucharm::machine {

struct Options {
  std::size_t eager_size = 32 * 1024;  // largest message sent with the EAGER tag (bytes)
  int prepost = 64;                    // pre-posted EAGER receives
  // Flow control: bytes one PE may have in flight to another before it waits for the
  // receiver to take them (a message larger than this goes alone).
  std::size_t flow_window = 4u << 20;
  // A host message above the eager size to a PE on this host goes as pieces of this many
  // bytes, each copied through shared memory (0: one rendezvous, CMA where UCX has it).
  // Measured on the 2-core VM: CMA's single copy was 3x slower than copying at 256 KiB-4 MiB.
  // -1: 128 KiB, or 0 when the host has more PEs than cores (copies through a FIFO need
  // both sides running; a rendezvous lets the receiver pull while the sender waits).
  std::int64_t large_fragment = -1;
  bool bind = true;                    // bind this PE to its own core when there are enough
};

// Upcalls into the layer above. Plain function pointers: nothing on the hot path
// allocates or goes through std::function.
struct Hooks {
  // A buffer for an incoming message of `bytes` (the layer above owns its memory).
  void* (*alloc)(std::size_t bytes);
  // A complete message from PE `src`: ownership of `msg` passes to the layer above,
  // which calls LrtsConsumed(src, bytes) once it has taken the message off its queues.
  void (*deliver)(void* msg, std::size_t bytes, int src);
  // The machine no longer needs the buffer of a send.
  void (*release)(void* msg);
  // A peer was lost (its process died or became unreachable). Must not return.
  [[noreturn]] void (*peer_failed)(int pe, const char* why);
  // Optional (null: never asked). A large message sent by LrtsSendVector is next in its
  // link's order: `head` (alloc'd, head_bytes long, owned by the machine) holds its first
  // part and `bytes` is the whole message's size. Returns where the rest (bytes -
  // head_bytes) is to be received, or nullptr for the usual whole message. Given a place,
  // the machine later delivers `head` alone, as a message of `bytes`.
  void* (*place)(void* head, std::size_t head_bytes, std::size_t bytes, int src);
};

// What start-up found; for the verbose banner.
struct Info {
  int my_pe = 0;
  int num_pes = 1;
  int local_rank = 0;
  int local_size = 1;
  int num_hosts = 1;
  bool launched = false;       // under a PMIx server (else a singleton)
  std::string hostname;
  std::string binding;         // e.g. "core 3" or "none (8 PEs on 2 cores)"
  bool oversubscribed = false;  // more PEs on this host than cores
  std::string ucx_version;
  std::string transports;      // filled by LrtsDescribeTransports
};

// Bootstraps (PMIx or singleton), creates the UCP context and worker, exchanges
// worker addresses, pre-posts the EAGER receives. Errors abort with a clear message.
void LrtsInit(const Options& options, const Hooks& hooks);
const Info& LrtsInfo();
// The host of every PE, by PE: hosts are numbered 0.. in the order of their first PE (PEs
// whose host names are equal share one). Read once, on first use, from the names the PEs
// published at start-up.
const std::vector<int>& LrtsPeHosts();
int LrtsMyPe();
int LrtsNumPes();

// Sends `bytes` of `msg` to `pe`. The machine calls hooks.release(msg) once the buffer
// may be reused (possibly before this returns). Send to self is not handled here.
// Delivery: exactly once, and in send order between two PEs, whatever the sizes. When
// the link to `pe` has its flow-control window in flight, the message waits in the
// link's backlog (in order) and leaves as the receiver returns credit; never blocks.
// An `urgent` message (Converse's expedited ones: exit, barrier) leaves at once, ahead
// of the backlog and regardless of credit, and is delivered on arrival, outside the
// link's order (a large one, above the eager size, keeps its place in the order).
void LrtsSend(int pe, void* msg, std::size_t bytes, bool urgent = false);

// Sends one message made of `head` and `data` (head_bytes + data_bytes, delivered as
// LrtsSend's are, in the same order) to `pe` straight from the caller's buffers, and
// returns once they may be reused: UCX has copied them out (shared memory) or sent them.
// It may progress this PE meanwhile (while the peer's FIFO is full, or for a rendezvous).
// Returns false, having sent nothing, where the message could not leave at once in its
// link's order: a backlog or a full window (the caller copies and uses LrtsSend). Not for
// urgent messages nor for this PE. Above the eager size the head travels in the
// announcement, so the receiver may place the data (Hooks::place) before it comes.
bool LrtsSendVector(int pe, const void* head, std::size_t head_bytes, const void* data, std::size_t data_bytes);
struct Completion;
// LrtsSendVector without the wait, for a message above the eager size whose head (at most
// 256 bytes) travels in its announcement: `head` is the caller's again at return, `data`
// once `done` has run (from a later LrtsProgress). False, having sent nothing, where it
// cannot: the eager size or less, a larger head, a backlog or a full window.
bool LrtsSendVectorLater(int pe, const void* head, std::size_t head_bytes, const void* data, std::size_t data_bytes,
                         Completion done);

// Bytes waiting for flow-control credit on all links. The layer above bounds it by
// progressing (which lets receivers return credit) while it is over its limit.
std::size_t LrtsBackloggedBytes();

// A message delivered from `src` has been consumed (handled or dropped): its credit goes
// back to the sender (in batches). Credit for a message is returned once, whichever of
// this and LrtsCreditOnDelivery comes first.
void LrtsConsumed(int src, std::size_t bytes);

// On: credit for everything delivered and not yet consumed is returned now, and for
// what arrives from now on at once. For a PE that is itself waiting for credit: were it
// to keep the credit of the messages in its queue, two PEs flooding each other would
// wait for each other forever.
void LrtsCreditOnDelivery(bool on);

// Drives UCX; delivers arrived messages through hooks.deliver. Returns the number of
// events seen (0: nothing happened).
int LrtsProgress();

// Sleeps until network activity or `timeout_ms` (-1: no limit). Arms the
// worker first; returns at once if events are pending. When UCX keeps reporting pending
// events while small sends of ours wait inside UCX and none of this PE's own transfers is
// open (a peer's full FIFO holds our sends back: it is busy computing), it backs off with
// short sleeps so that the peer gets the core; while a transfer of its own (rendezvous,
// large, device or channel) is open, or nothing of ours waits, it never sleeps there.
void LrtsIdleWait(int timeout_ms);

// Callable from any thread of the process: a PE sleeping in LrtsIdleWait (or LrtsIdleWaitUs)
// returns now; one that is not sleeping returns at once from its next wait. An eventfd in
// the worker's epoll set, so the PE's own path pays nothing until it is used.
void LrtsWakeup();

// A file descriptor of the layer above (Converse's CCS server) joins the set LrtsIdleWait
// sleeps on: a sleeping PE returns when it becomes readable. The caller consumes what made
// it readable (else the next wait returns at once); remove it before closing it.
void LrtsAddWaitFd(int fd);
void LrtsRemoveWaitFd(int fd);

// What LrtsIdleWait did, counted since start-up (for tests and diagnostics).
struct IdleStats {
  std::uint64_t fd_waits = 0;        // slept on the worker's event fd (UCX will wake it)
  std::uint64_t backoff_sleeps = 0;  // slept while UCX was busy for others' sake
  std::uint64_t busy_retries = 0;    // busy for our own sake: returned to progress at once
};
IdleStats LrtsIdleStats();




// Fills Info::transports by asking UCX which transports reach `pe` (creates the
// endpoint if needed).
void LrtsDescribeTransports(int pe);

// ---- memory types ------------------------------------------------------------------------
// Where a buffer lives. Every UCX call is given it, so UCX never has to guess (its own
// detection misses memory allocated before it started, static CUDA and custom pools).
enum class MemoryType : std::uint8_t { Host = 0, Cuda = 1 };
// Host or CUDA, from CUDA's pointer attributes through a range cache that drops a range
// when its memory is freed (so a reused address is asked about again). Without CUDA
// (not built in, or no driver) everything is host.
MemoryType LrtsMemoryType(const void* ptr);
const char* LrtsMemoryTypeName(MemoryType t);
std::size_t LrtsMemoryTypeCachedRanges();  // for tests: device ranges in the cache
bool LrtsMemoryTypeCaching();  // false: frees are not seen, so every lookup asks the driver

// ---- CUDA streams --------------------------------------------------------------------------
// A cudaStream_t (or CUstream), or nullptr for none; CU_STREAM_LEGACY names the legacy
// default stream. An operation given a stream starts only once the work queued on that
// stream before the call has finished (the data to send is written; the receive buffer
// is no longer in use), without blocking the PE: an event is recorded and polled. Its
// completion runs once the data has left or is in, so work queued on any stream after the
// completion sees it.
using GpuStream = void*;

// ---- GPU Messaging API (tag: DEVICE | source PE | per-source counter) ----------------------
// A completion: `fn(ctx)` runs on this PE after progress (never inside UCX), once the
// operation's buffer may be reused (send) or holds the data (receive).
struct Completion {
  void (*fn)(void* ctx) = nullptr;
  void* ctx = nullptr;
};
// Sends `size` bytes at `ptr` to `dest_pe`; returns the tag it used in `tag` (the layer
// above tells the receiver, in its metadata message).
void LrtsDeviceSend(int dest_pe, const void* ptr, std::size_t size, MemoryType mem,
                    std::uint64_t& tag, Completion done, GpuStream stream = nullptr);

// Who handles a completed device receive: the core now, the MPI shim and Python later.
enum class DeviceRecvType : std::uint8_t { Converse = 0, Core = 1, Ampi = 2, Python = 3 };
inline constexpr int kDeviceRecvTypes = 4;
struct DeviceRdmaOp {
  int src_pe = 0;
  void* dest_ptr = nullptr;
  std::size_t size = 0;  // capacity of dest_ptr; more incoming data is an error
  std::uint64_t tag = 0;
  MemoryType mem = MemoryType::Host;
  void* user = nullptr;  // for the handler
  GpuStream stream = nullptr;  // posted once the work queued on it has finished
};
using DeviceRecvHandler = void (*)(DeviceRdmaOp* op);
void LrtsSetDeviceRecvHandler(DeviceRecvType type, DeviceRecvHandler h);
// Posts the receive (full tag mask); the handler for `type` gets `op` when the data is in.
void LrtsDeviceRecv(DeviceRdmaOp* op, DeviceRecvType type);

// ---- Channel API (tag: CHANNEL | channel id | per-channel, per-direction counter) ----------
// The layer above builds the tags; no metadata message travels.
void LrtsChannelSend(int dest_pe, const void* ptr, std::size_t size, MemoryType mem,
                     std::uint64_t tag, Completion done, GpuStream stream = nullptr);
void LrtsChannelRecv(void* ptr, std::size_t size, MemoryType mem, std::uint64_t tag,
                     Completion done, GpuStream stream = nullptr);
// A send on `stream` whose tag and destination are not known yet (a channel end whose
// peer has not told its id): the stream's point is taken at the hold, so the data sent is
// what the work queued on the stream before the hold left, whatever is queued later and
// even if the stream is destroyed meanwhile. Release names the destination and tag (the
// send then starts once the stream has passed the point); drop forgets it (no completion).
namespace detail { struct Deferred; }
using HeldSend = detail::Deferred;
HeldSend* LrtsChannelSendHold(const void* ptr, std::size_t size, MemoryType mem, Completion done, GpuStream stream);
void LrtsChannelSendRelease(HeldSend* held, int dest_pe, std::uint64_t tag);
void LrtsChannelSendDrop(HeldSend* held);

// ---- One-sided (RMA): registered regions, put/get/atomics, fence, flush -------------------
// (issue 19, part 1: rma.cpp.) A region is an existing buffer registered with UCX
// (ucp_mem_map); its packed remote key goes to a peer (the layer above carries it), which
// attaches it on its endpoint to the owner (ucp_ep_rkey_unpack; the owner itself included).
// Operations name the attached region and an offset in it; an offset or length outside the
// region is a fatal error naming the region's size, the offset and the length (always
// checked). Completions run after progress, never inside UCX; no heap allocation per
// operation once the pool has grown. While an operation or flush is open, LrtsIdleWait
// sleeps in 50 us steps only (UCX's one-sided completions need not signal the worker's
// event fd), and not at all while one involves CUDA memory (counted as a GPU operation).
struct RmaRegion;  // registered here
struct RmaRemote;  // a peer's region, attached here
// Registers [ptr, ptr + size) of memory type `mem` (size 0 allowed: nothing is mapped).
RmaRegion* LrtsRmaRegister(void* ptr, std::size_t size, MemoryType mem);
// Unregisters; operations of peers on it must be over (the layer above makes sure).
void LrtsRmaDeregister(RmaRegion* r);
// The packed remote key (valid while the region is registered).
const void* LrtsRmaKey(const RmaRegion* r, std::size_t* len);
// Attaches the region `key` describes, of PE `pe` at its address `addr`, `size` bytes.
RmaRemote* LrtsRmaAttach(int pe, std::uint64_t addr, std::size_t size, MemoryType mem, const void* key,
                         std::size_t key_len);
void LrtsRmaDetach(RmaRemote* r);
// `done` of a put: `src` may be reused (the data may not be at the target yet: flush). Of
// a get: the data is in `dst`. `src`/`dst` are local buffers of memory type `mem`.
void LrtsRmaPut(RmaRemote* r, std::size_t offset, const void* src, std::size_t bytes, MemoryType mem,
                Completion done);
void LrtsRmaGet(RmaRemote* r, std::size_t offset, void* dst, std::size_t bytes, MemoryType mem, Completion done);
// Notified put: the data, a fence, then +1 on the 8-byte word at `counter_offset` of
// `counter` (a host-memory region of the same PE). The target sees the count rise only
// after the data is in. `done`: `src` may be reused.
void LrtsRmaPutNotify(RmaRemote* r, std::size_t offset, const void* src, std::size_t bytes, MemoryType mem,
                      RmaRemote* counter, std::size_t counter_offset, Completion done);
// Atomics on a 4- or 8-byte word (aligned to its width) of a host-memory region:
// Add/And/Or/Xor with `value` (`result`, optional, gets the old word); Swap puts `value`
// and CompareSwap puts `value` where the word equals `compare`: both need `result`.
// `result` (host memory, `width` bytes) holds the old word when `done` runs.
enum class RmaAtomicOp : std::uint8_t { Add, And, Or, Xor, Swap, CompareSwap };
void LrtsRmaAtomic(RmaRemote* r, std::size_t offset, RmaAtomicOp op, std::size_t width, std::uint64_t value,
                   std::uint64_t compare, void* result, Completion done);
// Orders at their targets the operations issued before it against those issued after
// (ucp_worker_fence: UCX 1.22 has no per-endpoint fence, so it orders at every target).
void LrtsRmaFence();
// `done` runs once every operation issued before to `pe` (pe < 0: to every PE) is
// complete at its target.
void LrtsRmaFlush(int pe, Completion done);
// One-sided operations and flushes not yet completed (for tests and idle decisions).
std::size_t LrtsRmaOpen();
// Sleeps at most `timeout_us` microseconds for network activity (a pollers' idle step:
// a one-sided write into this PE signals nothing, so the layer above polls for it).
void LrtsIdleWaitUs(int timeout_us);

// ---- CUDA IPC mappings (PEs on one host): device windows ----------------------------------
// (issue 19, part 3: cuda_ipc.cpp) What a device window needs from the driver: export the
// allocation that holds a device pointer, map a peer process's export, allocate small
// shared words, and stream memory operations on device words. Every call returns nullptr
// on success, else a message naming the cause (a static string or one kept until the next
// call that fails). Without CUDA (not built in, or no driver) every call fails saying so.
struct IpcExport {
  unsigned char handle[64] = {};  // CUipcMemHandle of the whole allocation
  std::uint64_t offset = 0;       // of the pointer within that allocation
  std::uint64_t bytes = 0;        // exposed from the pointer on
  char bus_id[32] = {};           // PCI bus id of the allocation's GPU ("0000:1b:00.0")
};
// Checks that [ptr, ptr + bytes) is device memory inside one CUDA allocation (a host pointer,
// managed or freed memory is refused) and fills `out`; `ctx` gets the
// allocation's CUcontext (later calls run in it).
const char* LrtsIpcExport(const void* ptr, std::size_t bytes, IpcExport& out, void*& ctx);
// Whether this process's GPU of `ctx` can map memory of the GPU `bus_id` (the same GPU,
// or peer access between the two); nullptr if it can, else why not. `atomics`: whether
// this GPU's atomics on that memory work (the same GPU, or native peer atomics: NVLink).
const char* LrtsIpcCanMap(void* ctx, const char* bus_id, bool& atomics);
// Maps a peer process's export in `ctx` (peer access enabled as needed); `ptr` is the
// exported pointer (allocation base + offset). Exports of one allocation opened twice
// share one mapping (reference counted); close each open once.
const char* LrtsIpcOpen(void* ctx, const IpcExport& e, void*& ptr);
void LrtsIpcClose(void* ctx, const IpcExport& e);
// Device memory for flag words, zeroed before this returns, in `ctx` (its own allocation,
// so that it can be exported), and its release.
const char* LrtsIpcAllocWords(void* ctx, std::size_t bytes, void*& ptr);
void LrtsIpcFreeWords(void* ctx, void* ptr);
// Stream-ordered operations (the host never waits): a copy between device pointers
// (mapped ones included); a 64-bit store after the stream's earlier work (with a
// system-wide memory barrier first); a wait until the 64-bit word at `addr` is >= value
// (as an unsigned difference: wraps correctly).
const char* LrtsIpcStreamCopy(void* ctx, GpuStream stream, void* dst, const void* src, std::size_t bytes);
const char* LrtsIpcStreamWrite64(void* ctx, GpuStream stream, void* addr, std::uint64_t value);
const char* LrtsIpcStreamWaitGeq64(void* ctx, GpuStream stream, void* addr, std::uint64_t value);

// ---- Stream memory operations: stream-ordered transfers -----------------------------------
// (issue 19, part 4: stream_ops.cpp.) A point in a CUDA stream where the stream and this PE
// meet without either blocking. When the stream reaches it, it writes a "ready" word (pinned
// host memory mapped into the GPU, cuStreamWriteValue64); LrtsStreamPoll sees the word and
// runs the point's `on_ready` (which typically starts a transfer). With `stream_waits`, the
// stream then waits (cuStreamWaitValue64, >=) until LrtsStreamOpDone: work queued on it later
// runs after the operation. The words come from a pool allocated once; each use of a slot
// writes a higher number, so nothing is reset and a StreamOp names its completion forever
// (waiting on a completed one passes at once). Without 64-bit stream memory operations the
// words are written and waited for by host functions on the stream (cuLaunchHostFunc; also
// with UCHARM_STREAM_MEMOPS=0). Everything is called from the PE's thread.
struct StreamOp {
  std::uint32_t slot = 0;  // 0: none
  std::uint64_t seq = 0;
};
// nullptr when points can be enqueued on this PE now; otherwise why not (built without
// CUDA, no driver or GPU, no CUDA context current, no pinned memory).
const char* LrtsStreamOpsUnavailable();
bool LrtsStreamOpsUseMemops();  // false: the host-function fallback is in use
// Enqueues a point on `stream` (a CUstream; nullptr is the legacy default stream). Ends the
// program with the reason when points are unavailable or the stream is invalid.
StreamOp LrtsStreamEnqueue(GpuStream stream, Completion on_ready, bool stream_waits);
// Work queued on `stream` from now on waits for `op`'s completion.
void LrtsStreamWaitOp(GpuStream stream, StreamOp op);
// Runs `on_ready` of the points whose streams have arrived (returns how many). While points
// wait, the PE does not sleep on the network (nothing signals it when a word is written):
// the layer above polls this (a Converse poller).
int LrtsStreamPoll();
// The operation of a point that has run `on_ready` is complete: its stream waits pass.
void LrtsStreamOpDone(StreamOp op);
bool LrtsStreamOpIsDone(StreamOp op);
std::size_t LrtsStreamOpsOpen();     // enqueued, not yet done (tests)
std::size_t LrtsStreamOpsWaiting();  // enqueued, their streams not yet there (or staged copies pending)
// Staging. While a stream waited for this PE, UCX never completed the transfer of a device
// buffer (seen on an H100 pair with cuda_ipc and with cuda_copy alone; the same chain on
// pinned host buffers ran; the cause inside UCX is not known). So device buffers go through pinned host buffers, copied on the stream
// itself: StageOut enqueues the copy of `size` bytes at `dev` into a staging buffer (before
// the point whose transfer sends it) and returns it; a receive lands in StageBuffer's
// buffer, and StageIn enqueues (after the point the stream waits on) the copy into `dev`
// and recycles the buffer once the stream has done it. A send's buffer goes back with
// StageRelease, once the data has left. Buffers are pooled by power-of-two size.
void* LrtsStreamStageOut(GpuStream stream, const void* dev, std::size_t size);
void* LrtsStreamStageBuffer(std::size_t size);
void LrtsStreamStageIn(GpuStream stream, void* dev, void* host, std::size_t size);
void LrtsStreamStageRelease(void* host);

// Orderly teardown, collective over all PEs: flush sends, fence, cancel pre-posted
// receives, close endpoints, fence, destroy worker and context, finalize PMIx.
void LrtsExit();

// Reports `msg` to the launcher (PMIx_Abort) and ends this process with `code`.
[[noreturn]] void LrtsAbort(int code, const char* msg);

}  // namespace ucharm::machine
