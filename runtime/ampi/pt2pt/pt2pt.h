// What the point-to-point sources share (private to pt2pt/): the send and receive paths
// with the datatype's facts already looked up, statuses, waiting, and the argument checks
// of the point-to-point calls. The MPI-level entry points are in send.cpp, completion.cpp,
// probe.cpp and persistent.cpp; the paths themselves in transfer.cpp.
#pragma once

#include "pt2pt/p2p.h"

namespace ampi {

// Ssend inside the runtime: completes when the receiver has matched (transfer.cpp).
int issend(const void* buf, int count, MPI_Datatype t, int dest, int tag, Comm& c, Ctx ctx, MPI_Request* req);

// Requests with a record (Request::ext): persistent collectives (coll/persistent.cpp) and
// partitioned requests (pt2pt/partitioned.cpp). Start begins a round; drop deletes the record
// (`release_refs`: and gives back the datatype and op references it holds; not when the
// whole P2p goes away or moved); pup packs it with its request.
int pcoll_start(MPI_Request h);
void pcoll_drop(Request& q, bool release_refs);
void pcoll_pup(PUP::er& p, Request& q);
int part_start(MPI_Request h);
void part_drop(Request& q);
void part_pup(PUP::er& p, Request& q);
// What Wait/Test report of a finished partitioned receive: the program's tag.
void part_status(const Request& q, MPI_Status* st);

namespace pt2pt {

// ---- transfer.cpp ----------------------------------------------------------------------------
// Copies between any two buffers, host or device.
void copy_any(void* dst, const void* src, std::size_t n);
// Delivers `msg` (matched) into receive request `h`; takes the message.
void deliver(Rank* r, MPI_Request h, void* msg);
// A message of `bytes` data whose data is still coming, next in its pair's order: matched
// now if a posted contiguous host receive with room takes it (*taken: that request, which
// completes in placed_arrived); returns where the data goes, or nullptr.
char* place(Rank* r, const WireHeader& h, std::size_t bytes, MPI_Request* taken);
void placed_arrived(Rank* r, MPI_Request h);
void fill_status_from_msg(MPI_Status* st, void* msg, MPI_Comm comm);
void empty_status(MPI_Status* st);
void proc_null_status(MPI_Status* st);
// Whether a send's data travels as its own zero-copy transfer (see transfer.cpp).
bool goes_direct(int count, const TypeFacts& f, bool on_device);
// Starts a send. `sync_req`: the request an Ssend's acknowledgement completes (0: none);
// `on_device`: buf is device memory; `device`: goes_direct said so (`device_req` completes
// when the transfer has left the buffer). `f`: the facts of t.
void start_send(Rank* r, const void* buf, int count, MPI_Datatype t, const TypeFacts& f, int dest, int tag, Comm& c,
                Ctx ctx, MPI_Request sync_req, MPI_Request device_req, bool on_device, bool device);
// The common send: `bytes` of contiguous host data at `data` (below +ampi-direct-min, or
// blocking_from_buffer) as one message to `dest` of c (not MPI_PROC_NULL). What start_send
// does for it, without its other cases. `from_buffer`: a blocking send, which may wait for
// the data to leave `data` (from kVectorSendMin bytes it goes from there, copied by UCX
// alone, when the link can take it at once); false (a buffered send, which must not wait
// on the receiver): always copied.
void send_inline(Rank* r, const void* data, std::size_t bytes, int dest, int tag, Comm& c, Ctx ctx,
                 bool from_buffer = true);
// Whether a blocking send of contiguous host data to world rank `dest_world` goes through
// send_inline even from +ampi-direct-min: to another PE of this host, not oversubscribed,
// the data is copied once by UCX through shared memory (fragments of a vector send) and the
// send waits for that alone; a zero-copy transfer waits for the receiver's matching receive
// and is a CMA rendezvous there (1 MiB one-way 75 against 114 us on the development VM).
// Not with more ranks than PEs: the vector send holds the PE while UCX copies, where a
// transfer lets the PE's other ranks run (+vp 8 Allreduce of 1 MiB 1.6x slower).
bool blocking_from_buffer(int dest_world);
// The largest message sent from the user's buffer (CmiSyncVectorSend counts its parts in
// int); with more ranks than PEs, kVectorSendShared: a larger one would hold the PE, and
// its other ranks, while UCX copies it out (+vp 8 Allreduce of 1 MiB 1.2x slower).
inline constexpr std::size_t kVectorSendMax = std::size_t{1} << 30, kVectorSendShared = 64 * 1024;
// Nonblocking sends from this size go from the user's buffer (the machine layer's eager
// size, 32 KiB by default: CmiVectorSendNoCopy takes only larger messages).
inline constexpr std::size_t kNoCopySendMin = 32 * 1024;
// Whether send_inline may take a blocking send of `count` items of a type with facts `f`
// from `buf` to rank `dest` of c.
inline bool inline_send_ok(const void* buf, int count, const TypeFacts& f, const Comm& c, int dest) {
  if (!f.contiguous) return false;
  const std::size_t bytes = static_cast<std::size_t>(count) * f.size;
  if (bytes && is_device(buf)) return false;
  return direct_min() == 0 || bytes < direct_min() ||
         (bytes <= kVectorSendMax && blocking_from_buffer(c.members[static_cast<std::size_t>(dest)]));
}
// The calling thread waits until request h completes.
void wait_one(P2p& p, MPI_Request h);
// The runtime's point-to-point (internal.h) with t's facts given.
int isend_with(Rank* r, const void* buf, int count, MPI_Datatype t, const TypeFacts& f, int dest, int tag, Comm& c,
               Ctx ctx, MPI_Request* req);
int send_with(Rank* r, const void* buf, int count, MPI_Datatype t, const TypeFacts& f, int dest, int tag, Comm& c,
              Ctx ctx);
// `matched`: a message MPI_Mprobe took (MPI_Mrecv): received as is, no matching. `quiet`:
// the request of a blocking call (Request::quiet).
int irecv_with(Rank* r, void* buf, int count, MPI_Datatype t, const TypeFacts& f, int src, int tag, Comm& c,
               Ctx ctx, MPI_Request* req, void* matched = nullptr, bool quiet = false);
// A blocking receive: its status into *st (when not null); returns the status's error.
int recv_with(Rank* r, void* buf, int count, MPI_Datatype t, const TypeFacts& f, int src, int tag, Comm& c, Ctx ctx,
              MPI_Status* st);

// ---- persistent.cpp ----------------------------------------------------------------------------
// A round of persistent request h (made active by the caller) on c's context `ctx`: the send
// of its buffer, or the receive posted (or matched with a message already here).
void start_persistent_send(Rank* r, MPI_Request h, Comm& c, Ctx ctx);
void start_persistent_recv(Rank* r, MPI_Request h, Comm& c, Ctx ctx);

// ---- send.cpp: argument checks; MPI_SUCCESS or the error's return ---------------------------
// The communicator (c: comm's, nullptr when invalid), count, datatype and buffer; `f`: the
// facts of t, for the call to use.
int check_buffer(MPI_Comm comm, const char* fn, Comm* c, const void* buf, int count, MPI_Datatype t, TypeFacts& f);
int check_send(const char* fn, const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
               Comm*& c, TypeFacts& f);
int check_recv(const char* fn, const void* buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm,
               Comm*& c, TypeFacts& f);

// ---- completion.cpp ----------------------------------------------------------------------------
// The error a completed request's status reports, through the communicator's handler.
int status_error(const char* fn, MPI_Comm comm, const MPI_Status& st);
// Finishes a completed request for Wait/Test: status out, request freed (or made inactive).
// Returns the request's error class (MPI_SUCCESS normally).
int finish(P2p& p, MPI_Request* h, MPI_Status* st);
// MPI_REQUEST_NULL or a persistent request not started.
bool inactive(P2p& p, MPI_Request h);
int check_request(P2p& p, MPI_Request h, const char* fn);
int check_requests(P2p& p, int n, const MPI_Request* reqs, const char* fn);

}  // namespace pt2pt
}  // namespace ampi
