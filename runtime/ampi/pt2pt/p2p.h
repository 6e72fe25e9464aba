// Point-to-point state of one rank: requests, the posted-receive queue and the queue of
// unexpected messages. Private to runtime/ampi.
#pragma once

#include "internal.h"

#include <ucharm/charm.h>

#include <map>
#include <memory>
#include <vector>

namespace ampi {

// What travels in front of every message's data (a Converse message's payload; see
// "routing" in transfer.cpp).
enum MsgFlag : std::uint16_t {
  kSync = 1u << 0,     // Ssend: the receiver acknowledges the match (ext.sender_req)
  kSyncAck = 1u << 1,  // the acknowledgement: completes request ext.sender_req here
  kDevice = 1u << 2,   // the data comes as a device transfer (ext.device_tag), not inline
  kSendDone = 1u << 3, // with kSyncAck: a direct send's data has left (ext.sender_req: 0 or its request)
  kPulled = 1u << 4,   // with kSyncAck: a direct message's data was pulled for a move (migrate.cpp)
  kPlaced = 1u << 5,   // set on arrival: the data went into the matched receive (`tag`: its request)
};
// `seq` and `sender` keep MPI's order when ranks move (route.cpp): each message of the
// pair (sender, dest) of world ranks has the next number of that pair; the receiver
// matches them in that order, whatever path they took (a forwarded message is slower).
struct WireHeader {
  std::uint32_t context;
  std::int32_t src;  // the sender's rank in the communicator
  std::int32_t tag;
  std::uint16_t flags;
  std::uint16_t seq;     // the pair's number (not for kSyncAck messages)
  std::int32_t dest;     // the receiving rank (world): it picks the rank on the destination PE
  std::int32_t sender;   // the sending rank (world)
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
enum class ReqExtKind : std::uint8_t { None, PersistentColl, Partitioned };

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
  bool quiet = false;          // a blocking call's own request (the program never sees it): its
                               // completion wakes its waiter only (no ready list, no Waitany)
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
  std::uint64_t seq = 0;      // posted receives: the rank's posting order (P2p::post)
  std::uint8_t pattern = 0;   // posted receives: which wildcards (kAnyTag | kAnySource)
  // The ready list (complete, not yet waited for) or the parked list: see P2p::mark_complete.
  std::uint8_t listed = 0;    // 0: on neither, 1: ready, 2: parked
  MPI_Request rprev = 0, rnext = 0;
  // Where the last scan of a Waitany/Waitsome/Testany/Testsome array saw it (WaitSet).
  std::uint32_t stamp = 0;    // the scan's generation; 0: none
  std::int32_t slot = -1;     // its index in that array; -1: not in it
  void* device_stage = nullptr;  // a host copy of device data being received (staging)
  int ack_world = -1;            // a matched Ssend to acknowledge when the data is in
  MPI_Request ack_req = 0;
  bool on_device = false;        // a send from device memory (a move refuses it while pending)
  // What a persistent collective (a Task request; coll/persistent.cpp) or a partitioned
  // request (a Send or Recv request; pt2pt/partitioned.cpp) keeps besides: owned, dropped by
  // P2p::release, packed with the request.
  ReqExtKind ext_kind = ReqExtKind::None;
  void* ext = nullptr;
};

// Matching (queues.cpp). Every queue is a FIFO list found by its key in one hash table
// (open addressing, no allocation per message): a posted receive sits in the list of its
// pattern, (context, source, tag) with the wildcards left out of the key; an unexpected
// message sits in four lists at once, one per pattern it matches: exact, any tag, any
// source, both. An arriving message looks at the heads of the (at most four) posted lists
// it matches and takes the one posted first (the lowest sequence number): MPI's
// non-overtaking order across wildcard and specific receives. A receive looks at the one
// unexpected list of its own pattern, whose head is the first matching arrival. O(1) both.
enum Pattern : std::uint32_t { kAnyTag = 1, kAnySource = 2, kUnexpected = 4 };
struct QueueKey {
  std::uint32_t context;
  std::int32_t src;  // 0 when the pattern has kAnySource
  std::int32_t tag;  // 0 when the pattern has kAnyTag
  std::uint32_t pattern;
  bool operator==(const QueueKey&) const = default;
};
struct QueueEnds {
  std::int32_t head = 0, tail = 0;  // node ids (request handles, or unexpected ids); 0: none
};
class QueueTable {
 public:
  QueueEnds* find(const QueueKey& k);  // nullptr: no such list (it is empty)
  QueueEnds& get(const QueueKey& k);   // the list, created empty if need be
  void erase(const QueueKey& k);       // drops an emptied list
  void pup(PUP::er& p);                // packs or unpacks the lists (migrate.cpp)
 private:
  struct Slot {
    QueueKey key{};
    QueueEnds ends;
    bool used = false;
  };
  std::size_t home(const QueueKey& k) const;
  void grow();
  std::vector<Slot> slots_;  // a power of two, at most half full
  std::size_t used_ = 0;
};

// A message that arrived before its receive was posted: in the four lists of its patterns.
struct Unexpected {
  void* msg = nullptr;
  std::int32_t next[4] = {0, 0, 0, 0}, prev[4] = {0, 0, 0, 0};  // unexpected ids (index + 1); 0: none
};

class P2p {
 public:
  P2p() = default;
  ~P2p();  // frees the messages it holds (unexpected, matched, early) and generalized requests' records
  P2p(const P2p&) = delete;
  P2p& operator=(const P2p&) = delete;

  Request& req(MPI_Request h) {
    const auto i = static_cast<std::size_t>(h - 1);
    return chunks_[i / kChunk][i % kChunk];
  }
  std::size_t request_count() const { return n_reqs_; }  // handles 1..count exist (free or not)
  bool valid(MPI_Request h) const {
    if (h <= 0 || static_cast<std::size_t>(h) > n_reqs_) return false;
    const auto i = static_cast<std::size_t>(h - 1);
    return chunks_[i / kChunk][i % kChunk].kind != ReqKind::Free;
  }
  MPI_Request alloc(ReqKind k);
  void release(MPI_Request h);  // also takes it off the ready or parked list
  // Every completion goes through one of these: the request is then on the ready list.
  void mark_complete(MPI_Request h);  // complete; wakes nobody (the caller is the waiter)
  void complete(MPI_Request h);       // complete; wakes the thread waiting for it, or for any
  void deactivate(MPI_Request h);     // a persistent request waited for: inactive, off the lists

  // posted receives: each gets the rank's next sequence number. The one receive posted
  // while no other is (a blocking receive, the common case) stays out of the hash table
  // (`solo_`): an arrival compares it directly, no hashing; a second post puts it in the
  // table first, in its place. Likewise the one unexpected message held while no other is
  // (`unexp_solo_`). Only an order-free shortcut: each is the head of every list it would
  // be in. Packing (migrate.cpp) spills both first.
  void post(MPI_Request h);
  void unpost(MPI_Request h);  // a posted receive taken back (MPI_Cancel)
  // The first-posted receive matching a message, taken off its queue; 0 when none.
  MPI_Request take_posted(std::uint32_t context, int src, int tag);
  // The same, left on its queue.
  MPI_Request find_posted(std::uint32_t context, int src, int tag);

  // unexpected messages, in arrival order
  void push_unexpected(void* msg);
  // The first unexpected message matching (src, tag may be wildcards); -1 when none.
  // take_unexpected removes it.
  std::int32_t find_unexpected(std::uint32_t context, int src, int tag);
  bool any_unexpected() const { return n_unexp_ != 0; }
  void* unexpected_msg(std::int32_t i) const { return unexpected_[static_cast<std::size_t>(i)].msg; }
  void* take_unexpected(std::int32_t i);

  // ---- completed requests (completion.cpp reads them) ----
  // The ready list holds every complete request not yet waited for, in completion order;
  // the parked list those a scan found outside the array being waited on (so that later
  // calls on that array skip them). Waitany & co. look at the ready list only: their cost
  // is what completed, not what is pending.
  MPI_Request ready_head() const { return ready_.head; }
  bool any_parked() const { return parked_.head != 0; }
  void park(MPI_Request h);
  void unpark_all();  // back to the ready list (a new scan may find them in its array)
  // The last array a scan looked at: its requests carry stamp == gen and their slot.
  struct WaitSet {
    const MPI_Request* reqs = nullptr;
    int n = -1;
    std::uint32_t gen = 0;
    int active = 0;  // its active requests at the scan, less those finished since
  } wait_set;
  CthThread any_waiter = nullptr;  // a thread in Waitany/Waitsome, woken by every completion
  CthThread probe_waiter = nullptr;  // a thread in MPI_Probe, woken by every new arrival
  // Further threads of the rank waiting so at the same time (calls of its other OS threads:
  // MPI_THREAD_MULTIPLE), woken with the first; the first's slot keeps the common path one
  // load. add_waiter/remove_waiter keep the first slot filled while any waits.
  std::vector<CthThread> more_any_waiters, more_probe_waiters;
  static void add_waiter(CthThread& first, std::vector<CthThread>& more, CthThread t);
  static void remove_waiter(CthThread& first, std::vector<CthThread>& more, CthThread t);
  static void wake_more(std::vector<CthThread>& more);  // all of them (they look again)

  // Messages taken by MPI_Mprobe/Improbe until MPI_Mrecv/Imrecv: handles from 2 up (0 is
  // MPI_MESSAGE_NULL, 1 MPI_MESSAGE_NO_PROC).
  MPI_Message keep_matched(void* msg, MPI_Comm comm);
  // The message and its communicator; nullptr when `m` names none.
  void* take_matched(MPI_Message m, MPI_Comm* comm);

  // ---- order and migration (route.cpp, migrate.cpp) ----
  // Message numbers by world rank: the next one this rank sends to it, and the next one it
  // expects from it (sized to the world by route_add; they travel with the rank).
  std::vector<std::uint16_t> send_seq, recv_seq;
  std::uint32_t moves = 0;  // moves so far: orders the news of where it is (route.cpp)
  // Messages that came ahead of an earlier one of their sender (after a move), in arrival order.
  std::vector<void*> early;
  // What a move waits for (p2p_prepare_to_move): the rank's running nonblocking-collective
  // tasks, its direct sends whose data has not left, and direct receives not yet landed.
  int tasks = 0, direct_out = 0, direct_in = 0;
  bool moving = false;                 // in AMPI_Migrate: direct messages are pulled as they come (on_wire)
  CthThread move_waiter = nullptr;     // the rank's thread in p2p_prepare_to_move
  void note_progress();                // a counter above went down: wakes move_waiter
  // Every unexpected message (pull_unexpected_direct) and Mprobe'd one, for the move.
  template <class Fn>
  void for_each_held(Fn&& fn) {
    for (Unexpected& u : unexpected_)
      if (u.msg) fn(u.msg);
    for (Matched& m : matched_)
      if (m.msg) fn(m.msg);
    for (void*& m : early) fn(m);
  }
  // Partitioned requests (partitioned.cpp): how many of each (communicator context, peer,
  // tag's low bits, direction) this rank has made, which pairs them with the peer's.
  struct PartKey {
    std::uint32_t context;
    std::int32_t peer, tag;
    bool send;
    auto operator<=>(const PartKey&) const = default;
  };
  std::map<PartKey, std::uint16_t> part_pairs;
  friend void pup_p2p_state(PUP::er& p, P2p& q);

 private:
  // Requests in chunks: stable addresses, and one small, hot table of chunks (a deque would
  // put each ~200-byte request in a block of its own). Handle = index + 1.
  static constexpr std::size_t kChunk = 64;
  std::vector<std::unique_ptr<Request[]>> chunks_;
  std::size_t n_reqs_ = 0;
  std::vector<MPI_Request> free_reqs_;
  QueueTable queues_;  // posted and unexpected lists
  std::uint64_t post_seq_ = 0;
  int posted_by_pattern_[4] = {0, 0, 0, 0};  // posted receives of each pattern: skips empty lookups
  int posted_in_table_ = 0;                   // their sum
  MPI_Request solo_ = 0;                      // the only posted receive, not in the table; 0: none
  std::int32_t unexp_solo_ = 0;               // the only unexpected message's id, not in the table; 0: none
  std::int32_t n_unexp_ = 0;                  // unexpected messages held
  void spill_solo();                          // both solos into the table (a second one comes; packing)
  void table_post(MPI_Request h);
  void table_unpost(MPI_Request h);
  void link_unexpected(std::int32_t id);
  std::vector<Unexpected> unexpected_;  // nodes; a free list through next[0]
  std::int32_t unexp_free_ = 0;         // unexpected id; 0: none
  struct RList {
    MPI_Request head = 0, tail = 0;
  };
  RList ready_, parked_;
  void link(RList& l, std::uint8_t which, MPI_Request h);
  void unlink(MPI_Request h);
  struct Matched {
    void* msg = nullptr;
    MPI_Comm comm = MPI_COMM_NULL;
  };
  std::vector<Matched> matched_;  // by handle - 2; free ones have msg == nullptr
};

// Receives every MPI message of rank r.
void on_message(Rank* r, void* msg);

// Routing (route.cpp): point-to-point messages go straight to the destination rank's PE as
// Converse messages with their own handler, past the core's entry path. A rank registers
// itself on its PE when it is built or arrives (messages held for it are delivered then;
// the PE's table then names this PE for it).
void route_add(Rank* r);
// Rank migration: world rank `world_rank` leaves this PE for `new_pe`. Call it on the PE it
// leaves, before the Rank is destroyed (ckAboutToMigrate): it stops delivering there and
// tells `new_pe` first; route_add on arrival tells every other PE (numbered by the rank's
// move count, so that older news never undoes newer). Calls on other PEs are ignored. A
// message that reaches a PE where its rank is not goes on to where that PE's table says
// (CmiForwardAndFree: nothing is dropped); one for a rank that the table puts on this PE
// waits there for it. Order holds by the pair numbers (WireHeader::seq), whatever path
// each message took.
void p2p_rank_moved(int world_rank, int new_pe);
// The PE this PE's table names for `world_rank` (-1 before any rank was built here).
int p2p_route_of(int world_rank);
// Runs in the rank's thread when AMPI_Migrate returns, moved or not: direct messages reach
// it as they are again (from p2p_prepare_to_move on, their data is pulled on arrival).
void p2p_move_done(P2p& q);

}  // namespace ampi
