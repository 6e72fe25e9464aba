// Point-to-point state of one rank: requests, the posted-receive queue and the queue of
// unexpected messages. Private to runtime/ampi.
#pragma once

#include "internal.h"

#include <ucharm/charm.h>

#include <deque>

namespace ampi {

// What travels in front of every message's data (a Converse message's payload; see
// "routing" in transfer.cpp).
enum MsgFlag : std::uint32_t {
  kSync = 1u << 0,     // Ssend: the receiver acknowledges the match (ext.sender_req)
  kSyncAck = 1u << 1,  // the acknowledgement: completes request ext.sender_req here
  kDevice = 1u << 2,   // the data comes as a device transfer (ext.device_tag), not inline
};
struct WireHeader {
  std::uint32_t context;
  std::int32_t src;  // the sender's rank in the communicator
  std::int32_t tag;
  std::uint32_t flags;
  std::int32_t dest;  // the receiving rank (world): it picks the rank on the destination PE
  std::uint32_t reserved;
};
// Present when flags has kSync, kSyncAck or kDevice.
struct WireExt {
  std::uint64_t bytes;        // the data's size (kDevice: it is not in the message)
  std::uint64_t device_tag;   // kDevice: the tag of the device transfer
  std::int32_t sender_world;  // kSync: who to acknowledge
  std::int32_t sender_req;    // kSync / kSyncAck: the sender's request
};
static_assert(sizeof(WireHeader) == 24 && sizeof(WireExt) == 24);

// Generalized: MPI_Grequest_start's (errhan/grequest.cpp; `buf` holds its functions).
enum class ReqKind : std::uint8_t { Free, Send, Recv, Task, Generalized };

struct Request {
  ReqKind kind = ReqKind::Free;
  bool complete = false;
  bool persistent = false;     // Send_init / Recv_init: survives Wait, restarted by Start
  bool active = false;         // persistent: started and not yet waited for
  bool user_freed = false;     // MPI_Request_free before completion: release when done
  bool sync = false;           // persistent Ssend_init
  bool matched = false;        // a receive that has its message (it can no longer be cancelled)
  bool device = false;         // a receive into device memory
  bool holds_type = false;     // `type` is retained (type_retain) until the request is released
  bool buffered = false;       // persistent Bsend_init: copied out at Start, complete at once
  CthThread waiter = nullptr;  // the thread blocked until this completes
  // the operation (receives; and persistent sends, to restart them)
  void* buf = nullptr;
  const void* sbuf = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  TypeFacts facts;  // of `type`, looked up when the receive is posted
  int peer = 0;  // source (receives, may be MPI_ANY_SOURCE) or destination (sends)
  int tag = 0;
  MPI_Comm comm = MPI_COMM_NULL;
  std::uint32_t context = 0;
  MPI_Status status{};
  // queue links (posted receives), as request handles; 0: none
  MPI_Request prev = 0, next = 0;
  void* device_stage = nullptr;  // a host copy of device data being received (staging)
  int ack_world = -1;            // a matched Ssend to acknowledge when the data is in
  MPI_Request ack_req = 0;
};

// A message that arrived before its receive was posted.
struct Unexpected {
  void* msg = nullptr;
  std::int32_t next = -1, prev = -1;
};

class P2p {
 public:
  Request& req(MPI_Request h) { return reqs_[static_cast<std::size_t>(h - 1)]; }
  bool valid(MPI_Request h) const {
    return h > 0 && static_cast<std::size_t>(h) <= reqs_.size() && reqs_[static_cast<std::size_t>(h - 1)].kind != ReqKind::Free;
  }
  MPI_Request alloc(ReqKind k);
  void release(MPI_Request h);
  void complete(MPI_Request h);  // marks it complete and wakes its waiter

  // posted receives, in posting order
  void post(MPI_Request h);
  void unpost(MPI_Request h);
  MPI_Request match_posted(std::uint32_t context, int src, int tag);

  // unexpected messages, in arrival order
  void push_unexpected(void* msg);
  // The first unexpected message matching; -1 when none. take() removes it.
  std::int32_t find_unexpected(std::uint32_t context, int src, int tag) const;
  void* unexpected_msg(std::int32_t i) const { return unexpected_[static_cast<std::size_t>(i)].msg; }
  void* take_unexpected(std::int32_t i);

  CthThread probe_waiter = nullptr;  // a thread in MPI_Probe, woken by every new arrival

  // Messages taken by MPI_Mprobe/Improbe until MPI_Mrecv/Imrecv: handles from 2 up (0 is
  // MPI_MESSAGE_NULL, 1 MPI_MESSAGE_NO_PROC).
  MPI_Message keep_matched(void* msg, MPI_Comm comm);
  // The message and its communicator; nullptr when `m` names none.
  void* take_matched(MPI_Message m, MPI_Comm* comm);

 private:
  std::deque<Request> reqs_;  // stable addresses; handle = index + 1
  std::vector<MPI_Request> free_reqs_;
  MPI_Request posted_head_ = 0, posted_tail_ = 0;
  std::vector<Unexpected> unexpected_;  // nodes; a free list through `next`
  std::int32_t unexp_head_ = -1, unexp_tail_ = -1, unexp_free_ = -1;
  struct Matched {
    void* msg = nullptr;
    MPI_Comm comm = MPI_COMM_NULL;
  };
  std::vector<Matched> matched_;  // by handle - 2; free ones have msg == nullptr
};

// Receives every MPI message of rank r.
void on_message(Rank* r, void* msg);

// Routing (transfer.cpp): point-to-point messages go straight to the destination rank's PE as
// Converse messages with their own handler, past the core's entry path. A rank registers
// itself on its PE when it is built (messages that came before are delivered then).
void route_add(Rank* r);

}  // namespace ampi
