// Routing of AMPI's point-to-point messages, and MPI's order when ranks move.
//
// Point-to-point traffic is AMPI's hot path: its messages skip the core's entry-method
// layer (envelope, collection and element lookup) and go as Converse messages with one
// handler (on_wire), the destination rank in the header. Each PE has a table of where every
// rank is (the rank array's map at first; p2p_rank_moved after a move) and which ranks it
// holds itself.
//
// After a move, a message may reach a PE its rank has left: that PE sends it on to where its
// table says (CmiForwardAndFree), or keeps it while its table says the rank is coming here;
// nothing is dropped. A message whose data went to that PE as a direct transfer (kDevice)
// takes its data along: the PE pulls it into an inline message first (pull_direct).
//
// Order: MPI's non-overtaking rule is per (sender, receiver, communicator); the links keep
// the messages of a pair of PEs in order, but a forwarded message is slower than one sent
// straight to the new PE. So every message carries the next 16-bit number of its pair of
// world ranks (sender -> dest; the sender's counters and the receiver's expected numbers are
// the ranks' own and move with them: P2p::send_seq, recv_seq). The receiver matches a
// message when its number is the one expected and keeps one that came early (P2p::early)
// until those before it arrived. Cost on the path: an increment when sending, a compare
// and an increment when receiving. Acknowledgements and completions (kSyncAck) need no
// order and carry no number.
#include "pt2pt/pt2pt.h"
#include "pt2pt/wire.h"
#include "heap.h"
#include "rank.h"

#include <cstring>
#include <utility>
#include <vector>

namespace ampi {
namespace {

// Where a rank is, as the PE it moved to announces it: `moves` orders the announcements
// (broadcasts take different paths, so an older one may come after a newer one; it is
// then ignored).
struct Where {
  std::int32_t rank, pe;
  std::uint32_t moves;
};

struct Local {
  Rank* rank = nullptr;
  const P2p* q = nullptr;  // its P2p: ~P2p takes the entry out (route_forget)
};
struct Routes {
  std::vector<int> pe;       // by world rank: the PE that holds it, as far as this PE knows
  std::vector<Local> local;  // by world rank: the rank, if it is on this PE
  // Messages for ranks not here yet that the table puts here (not built yet, or arriving),
  // in arrival order.
  std::vector<void*> held;
  std::vector<std::uint32_t> moves;  // by world rank: the move count `pe` is from (see Where)
  std::vector<Where> early_moves;        // news of moves before the table existed
  long long forwarded = 0, kept_early = 0, placed = 0;  // what the test hooks report
  void* spare = nullptr;  // the last message freed through wire_free; at least spare_size bytes
  std::size_t spare_size = 0;
};
Routes g_routes;  // this PE's (non-SMP: one PE per process)

// Routes every held message again (the table changed or a rank arrived), in their order.
void release_held() {
  std::vector<void*> held;
  held.swap(g_routes.held);
  for (void* m : held) pt2pt::on_wire(m);
}

// A message for a rank that is not on this PE.
void absent(void* msg) {
  Routes& t = g_routes;
  const auto dest = static_cast<std::size_t>(pt2pt::wire(msg).dest);
  if (pt2pt::wire(msg).flags & kPlaced)  // its rank could not move before the data was in
    CkAbort("AMPI: the data of a message to rank %zu was placed, but the rank is not on PE %d (a bug)", dest,
            CmiMyPe());
  if (t.pe.empty() || t.pe[dest] == CmiMyPe()) {  // not built yet, or on its way here
    t.held.push_back(msg);
    return;
  }
  if (pt2pt::wire(msg).flags & kDevice) {  // its data came to this PE: it follows inline
    ++t.forwarded;
    pt2pt::pull_direct(msg, nullptr);      // on_wire runs again when the data is in
    return;
  }
  ++t.forwarded;
  CmiForwardAndFree(t.pe[dest], msg);
}

// A message that overtook an earlier one of its sender (it came straight while the earlier
// one was forwarded): kept until the earlier ones are matched.
void keep_early(Rank* r, void* msg) {
  ++g_routes.kept_early;
  r->p2p().early.push_back(msg);
}

// The kept messages that are next now, one at a time (each may release another).
void drain_early(Rank* r) {
  P2p& p = r->p2p();
  for (bool again = true; again;) {
    again = false;
    for (std::size_t i = 0; i < p.early.size(); ++i) {
      void* m = p.early[i];
      const WireHeader& h = pt2pt::wire(m);
      std::uint16_t& next = p.recv_seq[static_cast<std::size_t>(h.sender)];
      if (h.seq != next) continue;
      ++next;
      p.early.erase(p.early.begin() + static_cast<std::ptrdiff_t>(i));
      on_message(r, m);
      again = true;
      break;
    }
  }
}

// on_wire's placement (CmiRegisterPlacement): a large message from the user's buffer
// (wire_send_vector), next on its link and on this PE, is matched before its data comes,
// so that a posted receive takes the data straight into its buffer (no copy out of a
// Converse message). Only where the match is certain now: the rank is here and staying,
// and the message is next in its pair's order.
void* place_wire(void* head, std::size_t head_bytes) {
  const WireHeader& h = pt2pt::wire(head);
  if (head_bytes != CmiMsgHeaderSizeBytes + sizeof(WireHeader) || h.flags != 0) return nullptr;
  const auto dest = static_cast<std::size_t>(h.dest);
  Rank* r = dest < g_routes.local.size() ? g_routes.local[dest].rank : nullptr;
  if (!r) return nullptr;
  P2p& p = r->p2p();
  const auto sender = static_cast<std::size_t>(h.sender);
  if (p.moving || !p.early.empty() || sender >= p.recv_seq.size() || h.seq != p.recv_seq[sender]) return nullptr;
  MPI_Request req = 0;
  char* at = pt2pt::place(r, h, CmiMsgSize(head) - head_bytes, &req);
  if (!at) return nullptr;
  ++p.recv_seq[sender];  // matched: on_wire completes it without taking a number
  WireHeader& w = pt2pt::wire(head);
  w.flags = kPlaced;
  w.tag = req;
  ++g_routes.placed;
  return at;
}

}  // namespace

namespace pt2pt {

void on_wire(void* msg) {
  const WireHeader& h = wire(msg);
  const auto dest = static_cast<std::size_t>(h.dest);
  Rank* r = dest < g_routes.local.size() ? g_routes.local[dest].rank : nullptr;
  if (!r) [[unlikely]] {
    absent(msg);
    return;
  }
  P2p& p = r->p2p();
  if (h.flags & (kSyncAck | kDevice | kPlaced)) [[unlikely]] {
    if (h.flags & kPlaced) {  // its data is in its receive's buffer (place_wire)
      const MPI_Request req = h.tag;
      CmiFree(msg);  // not wire_free: the block holds the head only
      placed_arrived(r, req);
      return;
    }
    if (h.flags & kSyncAck) {  // acknowledgements and completions: no order
      on_message(r, msg);
      return;
    }
    // A direct message for a rank that is about to move: its data comes here first (the
    // sender's buffer is freed, and nothing of the rank waits for it); the message comes
    // back to on_wire then, inline, and takes its place in its sender's order.
    if (p.moving) {
      pull_direct(msg, nullptr);
      return;
    }
  }
  std::uint16_t& next = p.recv_seq[static_cast<std::size_t>(h.sender)];
  if (h.seq != next) [[unlikely]] {
    if (static_cast<std::int16_t>(h.seq - next) > 0) {
      keep_early(r, msg);
      return;
    }
    CkAbort("AMPI: message %u from rank %d to rank %d came after number %u (a number used twice: a bug)",
            static_cast<unsigned>(h.seq), h.sender, h.dest, static_cast<unsigned>(next));
  }
  ++next;
  on_message(r, msg);
  if (!p.early.empty()) [[unlikely]] drain_early(r);
}

void* wire_alloc(std::size_t len) {
  Routes& t = g_routes;
  const std::size_t size = CmiMsgHeaderSizeBytes + len;
  void* m;
  if (t.spare && t.spare_size >= size) {
    m = std::exchange(t.spare, nullptr);
    *CmiMsgHeaderOf(m) = CmiMsgHeader{0, 0, 0, static_cast<std::uint32_t>(size), 0};  // as CmiAlloc leaves it
  } else {
    m = CmiAlloc(size);
  }
  CmiSetHandler(m, WireHandler::handler());
  return m;
}

void wire_free(void* msg) {
  Routes& t = g_routes;
  if (CmiGetReference(msg) != 1) [[unlikely]] {  // not ours alone
    CmiFree(msg);
    return;
  }
  if (t.spare) CmiFree(t.spare);
  t.spare = msg;
  t.spare_size = CmiMsgSize(msg);
}

void wire_send(Rank* r, int dest_world, void* msg) {
  const auto d = static_cast<std::size_t>(dest_world);
  WireHeader& h = wire(msg);
  h.sender = r->world_rank();
  h.seq = r->p2p().send_seq[d]++;
  CmiSyncSendAndFree(g_routes.pe[d], CmiMsgSize(msg), msg);
}

void wire_head(WireHead& head, const WireHeader& h) {
  *CmiMsgHeaderOf(head.bytes) = CmiMsgHeader{0, 0, 0, 0, 0};
  CmiSetHandler(head.bytes, WireHandler::handler());
  wire(head.bytes) = h;
}

void wire_send_vector(Rank* r, int dest_world, WireHead& head, const void* data, std::size_t bytes) {
  const auto d = static_cast<std::size_t>(dest_world);
  WireHeader& h = wire(head.bytes);
  h.sender = r->world_rank();
  h.seq = r->p2p().send_seq[d]++;
  const int sizes[2] = {static_cast<int>(sizeof head.bytes), static_cast<int>(bytes)};
  char* const comps[2] = {head.bytes, static_cast<char*>(const_cast<void*>(data))};
  CmiSyncVectorSend(g_routes.pe[d], 2, sizes, comps);
}

bool wire_send_nocopy(Rank* r, int dest_world, WireHead& head, const void* data, std::size_t bytes, void* done) {
  const auto d = static_cast<std::size_t>(dest_world);
  WireHeader& h = wire(head.bytes);
  h.sender = r->world_rank();
  h.seq = r->p2p().send_seq[d];
  const int sizes[2] = {static_cast<int>(sizeof head.bytes), static_cast<int>(bytes)};
  char* const comps[2] = {head.bytes, static_cast<char*>(const_cast<void*>(data))};
  if (!CmiVectorSendNoCopy(g_routes.pe[d], sizes, comps, done)) return false;
  ++r->p2p().send_seq[d];
  return true;
}

void wire_send_unordered(int dest_world, void* msg) {
  CmiSyncSendAndFree(g_routes.pe[static_cast<std::size_t>(dest_world)], CmiMsgSize(msg), msg);
}

int route_pe(int dest_world) { return g_routes.pe[static_cast<std::size_t>(dest_world)]; }

void* pull_direct(void* msg, void* done) {
  const WireHeader h = wire(msg);
  const WireExt x = ext(msg);
  const auto flags = static_cast<std::uint16_t>(h.flags & ~kDevice);
  void* m = wire_alloc(data_offset(flags) + x.bytes);
  wire(m) = h;
  wire(m).flags = flags;
  if (has_ext(flags)) ext(m) = x;  // an Ssend's: acknowledged when matched, as any inline one
  CmiFree(msg);
  CmiRecvDevice(data_of(m), x.bytes, x.device_tag, done ? done : m);
  return m;
}

void* pull_for_move(Rank* r, void* msg) {
  ++r->p2p().direct_in;
  void* done = wire_alloc(sizeof(WireHeader) + sizeof(WireExt));
  wire(done) = WireHeader{0, 0, 0, static_cast<std::uint16_t>(kSyncAck | kPulled), 0, r->world_rank(), 0};
  ext(done) = WireExt{0, 0, r->world_rank(), 0};
  return pull_direct(msg, done);
}

}  // namespace pt2pt

namespace {

// This PE's entry for rank w becomes (pe, moves) unless it knows of a later move.
void apply(const Where& x) {
  Routes& t = g_routes;
  if (t.pe.empty()) {  // no rank was built here yet: applied when the table is
    t.early_moves.push_back(x);
    return;
  }
  const auto w = static_cast<std::size_t>(x.rank);
  if (w >= t.pe.size() || x.pe < 0 || x.pe >= CmiNumPes())
    CkAbort("AMPI: rank %d moved to PE %d: no such rank or PE (%zu ranks, %d PEs)", x.rank, x.pe, t.pe.size(),
            CmiNumPes());
  if (t.local[w].rank || static_cast<std::int32_t>(x.moves - t.moves[w]) <= 0) return;  // older news
  t.pe[w] = x.pe;
  t.moves[w] = x.moves;
  if (!t.held.empty()) release_held();
}

void where_handler(void* msg) {
  Where x;
  std::memcpy(&x, CmiMsgPayload(msg), sizeof x);
  CmiFree(msg);
  apply(x);
}

void* where_msg(const Where& x) {
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(Where));
  std::memcpy(CmiMsgPayload(m), &x, sizeof x);
  CmiSetHandler(m, ck::ConverseHandler<&where_handler>::handler());
  return m;
}

}  // namespace

void route_add(Rank* r) {
  Routes& t = g_routes;
  const auto n = static_cast<std::size_t>(r->world_size());
  if (t.pe.size() != n) {
    t.pe.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      t.pe[i] = ck::ElementProxy<Rank>(r->array_ref(), ck::index(static_cast<int>(i))).home_pe();
    t.local.assign(n, Local{});
    t.moves.assign(n, 0);
    CmiRegisterPlacement(pt2pt::WireHandler::handler(), place_wire);
    for (const Where& x : std::exchange(t.early_moves, {})) apply(x);
  }
  const auto w = static_cast<std::size_t>(r->world_rank());
  P2p& p = r->p2p();
  t.local[w] = Local{r, &p};
  t.pe[w] = CmiMyPe();
  t.moves[w] = p.moves;
  if (p.send_seq.size() != n) {  // a new rank (one that moved brings its numbers)
    p.send_seq.assign(n, 0);
    p.recv_seq.assign(n, 0);
  }
  if (p.moves > 0) {  // it moved here: every other PE learns it (the older news it overtakes is ignored)
    void* m = where_msg(Where{r->world_rank(), CmiMyPe(), p.moves});
    CmiSyncBroadcastAndFree(CmiMsgHeaderSizeBytes + sizeof(Where), m);
  }
  release_held();  // what came for it before it was here, in arrival order
}

void route_forget(const P2p* q) {
  for (Local& l : g_routes.local)
    if (l.q == q) l = Local{};
}

void p2p_rank_moved(int world_rank, int new_pe) {
  Routes& t = g_routes;
  const auto w = static_cast<std::size_t>(world_rank);
  // Only the PE the rank leaves acts: the others learn from route_add's announcement, which
  // carries the move count (an unnumbered update could undo a newer one).
  // (The rank's own ckAboutToMigrate: it is here and the core is sending it to new_pe.)
  if (w >= t.local.size() || !t.local[w].rank || t.local[w].rank->ckLeavingTo() != new_pe) return;
  if (new_pe < 0 || new_pe >= CmiNumPes())
    CkAbort("AMPI: rank %d leaves for PE %d: no such PE (%d PEs)", world_rank, new_pe, CmiNumPes());
  P2p& p = t.local[w].rank->p2p();
  const Where x{world_rank, new_pe, ++p.moves};  // the count travels with the rank
  // The new PE first, ahead of the rank on the same link (Converse keeps a pair of PEs'
  // messages in order): it keeps what comes for the rank until the rank is there, rather
  // than sending it back along a table that still names this PE.
  CmiSyncSendAndFree(new_pe, CmiMsgHeaderSizeBytes + sizeof(Where), where_msg(x));
  t.local[w] = Local{};  // what comes for it from now on goes on
  t.pe[w] = new_pe;
  t.moves[w] = x.moves;
  if (!t.held.empty()) release_held();
}

int p2p_route_of(int world_rank) {
  const auto w = static_cast<std::size_t>(world_rank);
  return w < g_routes.pe.size() ? g_routes.pe[w] : -1;
}

}  // namespace ampi

// Test hooks (tests/ampi/progs/p2p_forward.c finds them with dlsym): this PE's table entry
// for a rank, set to a PE it is not on (messages then go there and are forwarded back) or
// back; what this PE forwarded and kept early so far, and how many messages' data went
// straight into their receive (place_wire). Not MPI: no checks beyond the ranges.
#pragma GCC visibility push(default)
extern "C" {
long long AMPIX_Placed_count(void) { return ampi::g_routes.placed; }
int AMPIX_Route_get(int world_rank) { return ampi::p2p_route_of(world_rank); }
int AMPIX_Route_set(int world_rank, int pe) {
  using namespace ampi;
  heap::RuntimeScope scope;  // called by the program: messages it forwards are the runtime's
  Routes& t = g_routes;
  const auto w = static_cast<std::size_t>(world_rank);
  if (w >= t.pe.size() || pe < 0 || pe >= CmiNumPes() || t.local[w].rank) return MPI_ERR_ARG;
  t.pe[w] = pe;
  if (!t.held.empty()) release_held();
  return MPI_SUCCESS;
}
// News of a move as route_add broadcasts it (`moves`: the rank's move count), applied on
// this PE: stale news (an older count) must change nothing.
int AMPIX_Route_news(int world_rank, int pe, unsigned moves) {
  using namespace ampi;
  heap::RuntimeScope scope;
  if (pe < 0 || pe >= CmiNumPes() || world_rank < 0 || static_cast<std::size_t>(world_rank) >= g_routes.pe.size())
    return MPI_ERR_ARG;
  apply(Where{world_rank, pe, moves});
  return MPI_SUCCESS;
}
void AMPIX_Route_stats(long long* forwarded, long long* kept_early) {
  *forwarded = ampi::g_routes.forwarded;
  *kept_early = ampi::g_routes.kept_early;
}
}
#pragma GCC visibility pop
