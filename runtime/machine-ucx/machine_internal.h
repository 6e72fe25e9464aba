// Machine-layer internals shared by its files: per-request state, pools and the one
// Machine of this process (non-SMP). Not installed; nothing above the layer includes it.
#pragma once

#include <ucharm/machine.h>
#include <ucharm/tag.h>

#include <ucp/api/ucp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap.h"
#include "chunk_pool.h"
#include "cuda_driver.h"

namespace ucharm::machine::detail {

inline constexpr const char* kAddressKey = "ucharm.ucp.addr";
inline constexpr const char* kHostKey = "ucharm.host";  // this PE's host name (LrtsPeHosts)

enum class ReqKind : std::uint8_t { Send, FragmentSend, VectorSend, Eager, Large, OpSend, DeviceRecv, ChannelRecv };

// Per-request state lives in the space UCX reserves in front of each request
// (ucp_params_t::request_size): nothing is allocated per message.
struct RequestState {
  void* msg;     // the send buffer (null for a credit), a fragment's LargeSend, a
                 // vector send's count of parts in flight, or a Large receive's Held record
  int pe;        // destination of a send (for error reports); source of a Large receive
  int slot;      // pre-posted receive slot (Eager)
  ReqKind kind;
  DeviceRecvType rtype;
  Completion done;        // OpSend, ChannelRecv
  DeviceRdmaOp* op;       // DeviceRecv
  std::size_t capacity;   // receive buffer size (truncation reports)
  std::uint64_t tag;
  RequestState* prev;     // outstanding Large/device/channel receives, cancelled at exit
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
  CUevent event;          // kept with the pooled record, remade if the next stream's context differs
  CUcontext event_ctx;
#endif
  Deferred* next;         // FIFO of waiting operations
  Deferred* next_free;
};

// A device/channel completion waiting to run after progress.
struct PendingDone {
  Completion done;
  DeviceRdmaOp* op;  // a device receive (handled by its type's handler) or nullptr
  DeviceRecvType rtype;
};


struct EagerSlot {
  void* buf = nullptr;
  RequestState* req = nullptr;  // outstanding receive, or null
};

struct Completed {
  int slot;
  std::size_t bytes;
  std::uint64_t tag;  // the sender's tag: source PE, sequence number, announce bit
};

// A small host message that came as a UCX active message, copied into a pooled block.
struct Arrived {
  void* buf;  // null for an empty message (a credit return)
  std::size_t bytes;
  std::uint64_t tag;  // as Completed::tag (sent as the AM header)
  bool with_head;     // an announcement carrying its message's head (LrtsSendVector)
};

// A host message that arrived ahead of an earlier one from the same PE, or a large
// message whose data is still coming. Pooled.
struct Held {
  void* msg;
  std::size_t bytes;
  std::uint32_t seq;
  bool ready;        // the data is in
  std::uint32_t pieces_left;  // fragments of a large message still coming in
  Held* next;        // the source's held messages, in sequence order
  Held* next_free;
};

// The caller's buffers of a vector send, while UCX may read them: the pieces in flight.
// LrtsSendVector waits with one on its stack; LrtsSendVectorLater's are pooled, and their
// completion is queued (Machine::done) when the last piece has left.
struct VectorWait {
  int left = 0;
  Completion done{};
  bool pooled = false;
  VectorWait* next_free = nullptr;
};

// A large host message sent in fragments: its buffer is released when the last is sent
// (UCX does not promise that sends complete in order). Pooled.
struct LargeSend {
  void* msg;
  std::uint32_t pieces_left;
  LargeSend* next_free;
};

// A host message waiting for flow-control credit (the link's window is full).
struct Backlogged {
  void* msg;
  std::size_t bytes;
  Backlogged* next;
  Backlogged* next_free;
};

// Per peer: both directions of the host path between this PE and it.
struct Link {
  // sending: sequence numbers, credit units in flight, messages waiting for credit
  std::uint32_t send_seq = 0;
  std::int64_t in_flight = 0;
  Backlogged* backlog_head = nullptr;
  Backlogged* backlog_tail = nullptr;
  // receiving: the next sequence number to deliver, held messages, and credit: of
  // delivered messages not yet consumed (owed), returned before their consumption
  // (forgiven), consumed and not yet returned (unreturned, sent in batches)
  std::uint32_t recv_seq = 0;
  Held* held = nullptr;
  std::int64_t owed = 0;
  std::int64_t forgiven = 0;
  std::int64_t unreturned = 0;
};

struct Machine {
  Options opt;
  Hooks hooks{};
  Info info;
  std::unique_ptr<Bootstrap> boot;
  std::vector<int> pe_hosts;  // LrtsPeHosts, filled on first use
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  std::vector<ucp_ep_h> eps;
  std::vector<bool> ep_peer_mode;  // endpoint created with UCP_ERR_HANDLING_MODE_PEER
  std::vector<EagerSlot> slots;
  std::vector<Completed> completed;  // filled by callbacks, drained after progress
  std::vector<int> repost;           // delivered slots waiting to be posted again
  std::vector<Arrived> arrived;      // small messages (active messages), drained after progress
  int ucx_fd = -1, epoll_fd = -1;
  int wake_fd = -1;  // LrtsWakeup's eventfd (other threads of the process), in the epoll set
  std::size_t pending_sends = 0;
  // Operations of this PE's own that wait for UCX progress on this worker: large host
  // sends (rendezvous), large-message, device and channel receives, device and channel
  // sends. While any is open, a busy ucp_worker_arm is about our own transfer and the PE
  // must progress, not sleep (LrtsIdleWait).
  std::size_t own_waits = 0;
  std::size_t small_sends_open = 0;  // eager host sends UCX has not completed yet
  // LrtsIdleWait's back-off while ucp_worker_arm keeps answering busy for others' sake
  int busy_backoff_us = 0;
  std::chrono::steady_clock::time_point last_busy_arm{};
  IdleStats idle_stats{};
  // host path: order and flow control
  std::vector<Link> links;               // one per PE
  std::int64_t window_units = 0;         // credit a link may have in flight
  std::size_t backlog_bytes = 0;         // bytes waiting for credit, all links
  ChunkPool<Held> held_pool;
  ChunkPool<Backlogged> backlog_pool;
  ChunkPool<LargeSend> large_sends;
  ChunkPool<VectorWait> vector_waits;
  std::size_t large_fragment = 0;        // Options::large_fragment resolved (0: no fragments)
  std::vector<int> large_done;           // sources whose large receive completed
  bool credit_on_delivery = false;  // LrtsCreditOnDelivery
  bool shutting_down = false;  // after the exit fence: no more credit, errors expected
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
  std::size_t rma_open = 0;  // one-sided operations and flushes open (rma.cpp): short sleeps only
  std::vector<char> my_address;        // for the endpoint to self (device data to self)
  bool trace_ops = false;              // UCHARM_TRACE_OPS=1: one stderr line per device/channel op
  // Host sends' parameters, the same for every send (set once: the hot path does not
  // rebuild a 100-byte struct per message).
  ucp_request_param_t host_send_params{};
  ucp_request_param_t host_am_params{};
  ucp_request_param_t eager_recv_params{};  // its recv_info points at eager_recv_info
  ucp_tag_recv_info_t eager_recv_info{};
  bool force_callbacks = false;        // UCHARM_TEST_SEND_CALLBACKS=1: host buffers take the
                                       // device path (callback always), so CI covers it
};

extern Machine g_machine;  // this process's PE (non-SMP); reached only through M()
inline Machine& M() { return g_machine; }

[[noreturn]] void fatal(const std::string& what);
// UCX reported `pe` lost. Under a launcher, waits a moment for its word first: it names the
// PE that died first, where UCX would name whichever peer this PE heard fail (often one
// that was itself stopping because of the first).
[[noreturn]] void peer_lost(int pe, const char* why);
// A failure that a dead peer may have caused (which one is not known): gives the launcher
// the time peer_lost gives it to report the death first, then stops with `what`.
[[noreturn]] void failed_maybe_by_peer(const std::string& what);
// Takes the device and channel transfers waiting in UCX's unexpected queue into a scratch
// buffer: at exit nobody will post their receives, and their senders wait for them.
void drain_unexpected_transfers();
void check(ucs_status_t s, const char* what);

// host.cpp: the host message path
void post_host_receives();
void drop_backlogs();         // at exit: what waits for credit is dropped
void cancel_host_receives();  // at exit, after the last fence
// gpu_ops.cpp: the list of open receives (cancelled at exit)
void link_recv(RequestState* r);
void unlink_recv(RequestState* r);
// gpu_ops.cpp: device and channel operations
int start_deferred();
// rma.cpp: at exit, before the endpoints close; LrtsIdleWait's short sleep while
// one-sided operations are open
void rma_release_all();
void rma_idle_wait();
void drain_wakeups();  // after a wait saw the epoll set readable: LrtsWakeup's eventfd reset
// endpoints.cpp
void bind_to_core(Machine& m);
ucp_ep_h connect(int pe);  // creates the endpoint to `pe` (first use)
// The endpoint to `pe`: the send path's lookup is inline, its first-use creation is not.
inline ucp_ep_h endpoint(int pe) {
  ucp_ep_h ep = M().eps[static_cast<std::size_t>(pe)];
  return ep ? ep : connect(pe);
}
void wait_request(ucs_status_ptr_t sp, const char* what);

}  // namespace ucharm::machine::detail
