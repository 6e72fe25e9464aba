// Rank migration, the point-to-point side: what a rank must finish before it moves
// (p2p_prepare_to_move), its P2p packed and rebuilt (pup_p2p_state), and a test hook that
// packs and rebuilds the calling rank's P2p in place (AMPIX_Roundtrip_p2p_state).
//
// The packed form has no process-local pointers: requests, queue links and free lists are
// handles and indices; messages (unexpected, Mprobe'd, early) travel as their payload bytes
// and are rebuilt as new Converse messages; a generalized request's functions and
// extra_state, a request's buffer and the array a Waitany last scanned are addresses in the
// program, which sits at the same addresses after the move (isomalloc), so they travel as
// address bits. What cannot be packed (a thread waiting on a request, data still arriving
// by a direct transfer) is finished by p2p_prepare_to_move; packing finds none or stops.
#include "pt2pt/pt2pt.h"
#include "pt2pt/wire.h"
#include "errhan/grequest.h"
#include "heap.h"
#include "rank.h"

#include <cstdint>
#include <new>
#include <typeinfo>
#include <vector>

namespace ampi {
using namespace pt2pt;

namespace {

[[noreturn]] void not_ready(const char* what) {
  CkAbort("AMPI: a rank's point-to-point state was packed with %s (p2p_prepare_to_move must run first)", what);
}

// A message: its payload (the Converse header is rebuilt on unpacking).
void pup_msg(PUP::er& p, void*& m) {
  std::uint64_t len = 0;
  if (!p.isUnpacking()) {
    if (wire(m).flags & kDevice) not_ready("a message whose data is still a direct transfer");
    len = payload_length(m);
  }
  p | len;
  if (p.isUnpacking()) {
    p.check_length(len, 1, typeid(WireHeader));
    if (len < sizeof(WireHeader)) CkAbort("AMPI: a packed message of %llu bytes has no header", static_cast<unsigned long long>(len));
    m = wire_alloc(len);
  }
  p.bytes(payload(m), len);
}

// A message slot that may be empty (free unexpected nodes, used Mprobe handles).
void pup_opt_msg(PUP::er& p, void*& m) {
  bool has = m != nullptr;
  p | has;
  if (has) pup_msg(p, m);
  else m = nullptr;
}

template <class... T>
void pup_all(PUP::er& p, T&... v) {
  ((p | v), ...);
}

template <class T>
void pup_bits(PUP::er& p, T*& ptr) {  // an address in the program (the same after a move)
  auto v = reinterpret_cast<std::uintptr_t>(ptr);
  p | v;
  ptr = reinterpret_cast<T*>(v);
}

void pup_request(PUP::er& p, Request& q) {
  p | q.kind;
  if (q.kind == ReqKind::Free) return;  // nothing of it is read before alloc() fills it again
  pup_all(p, q.complete, q.persistent, q.active, q.user_freed, q.sync, q.matched, q.device, q.holds_type, q.buffered, q.on_device, q.quiet);
  if (!p.isUnpacking() && q.waiter) not_ready("a thread waiting on a request");
  if (!p.isUnpacking() && q.device_stage) not_ready("a device transfer landing");
  q.waiter = nullptr;
  q.device_stage = nullptr;
  if (q.kind == ReqKind::Generalized) grequest_pup(p, q);
  else pup_bits(p, q.buf);
  pup_bits(p, q.sbuf);
  pup_all(p, q.count, q.type, q.facts.size, q.facts.lb, q.facts.contiguous);
  pup_all(p, q.peer, q.tag, q.comm, q.context);
  p.bytes(&q.status, sizeof q.status);
  pup_all(p, q.prev, q.next, q.seq, q.pattern, q.listed, q.rprev, q.rnext, q.stamp, q.slot);
  pup_all(p, q.ack_world, q.ack_req);
  p | q.ext_kind;
  if (q.ext_kind == ReqExtKind::PersistentColl) pcoll_pup(p, q);
  else if (q.ext_kind == ReqExtKind::Partitioned) part_pup(p, q);
  else q.ext = nullptr;
}

}  // namespace

void QueueTable::pup(PUP::er& p) {
  std::uint64_t n = slots_.size();
  p | n;
  if (p.isUnpacking()) {
    p.check_length(n, 1, typeid(QueueTable));
    if (n & (n - 1)) CkAbort("AMPI: a packed queue table of %llu slots (not a power of two)", static_cast<unsigned long long>(n));
    slots_.assign(n, Slot{});
  }
  p | used_;
  for (Slot& s : slots_) {
    p | s.used;
    if (!s.used) continue;
    pup_all(p, s.key.context, s.key.src, s.key.tag, s.key.pattern, s.ends.head, s.ends.tail);
  }
}

void pup_p2p_state(PUP::er& p, P2p& q) {
  if (!p.isUnpacking()) {
    if (q.tasks) not_ready("nonblocking-collective tasks running");
    if (q.direct_out || q.direct_in) not_ready("direct transfers pending");
    if (q.any_waiter || q.probe_waiter || q.move_waiter) not_ready("a thread waiting");
    q.spill_solo();  // the lone posted receive and unexpected message travel in the table
  }
  // the request table, by handle
  std::uint64_t n = q.n_reqs_;
  p | n;
  if (p.isUnpacking()) {
    p.check_length(n, 1, typeid(Request));
    q.chunks_.clear();
    for (std::uint64_t i = 0; i < n; i += P2p::kChunk) q.chunks_.push_back(std::make_unique<Request[]>(P2p::kChunk));
    q.n_reqs_ = static_cast<std::size_t>(n);
  }
  for (std::size_t i = 0; i < q.n_reqs_; ++i) pup_request(p, q.req(static_cast<MPI_Request>(i + 1)));
  p | q.free_reqs_;
  std::uint64_t npairs = q.part_pairs.size();
  p | npairs;
  if (p.isUnpacking()) {
    p.check_length(npairs, 1, typeid(P2p::PartKey));
    for (std::uint64_t i = 0; i < npairs; ++i) {
      P2p::PartKey k{};
      std::uint16_t n = 0;
      pup_all(p, k.context, k.peer, k.tag, k.send, n);
      q.part_pairs[k] = n;
    }
  } else {
    for (auto& [k0, n0] : q.part_pairs) {
      P2p::PartKey k = k0;
      std::uint16_t n = n0;
      pup_all(p, k.context, k.peer, k.tag, k.send, n);
    }
  }
  // posted receives and unexpected messages
  q.queues_.pup(p);
  p | q.post_seq_;
  p(q.posted_by_pattern_, 4);
  std::uint64_t nu = q.unexpected_.size();
  p | nu;
  if (p.isUnpacking()) {
    p.check_length(nu, 1, typeid(Unexpected));
    q.unexpected_.assign(nu, Unexpected{});
  }
  for (Unexpected& u : q.unexpected_) {
    pup_opt_msg(p, u.msg);
    p(u.next, 4);
    p(u.prev, 4);
  }
  p | q.unexp_free_;
  if (p.isUnpacking()) {
    q.solo_ = 0;
    q.unexp_solo_ = 0;
    q.posted_in_table_ = q.posted_by_pattern_[0] + q.posted_by_pattern_[1] + q.posted_by_pattern_[2] + q.posted_by_pattern_[3];
    q.n_unexp_ = 0;
    for (const Unexpected& u : q.unexpected_) q.n_unexp_ += u.msg ? 1 : 0;
  }
  // completed requests, the last scanned array (an address in the program)
  pup_all(p, q.ready_.head, q.ready_.tail, q.parked_.head, q.parked_.tail);
  pup_bits(p, q.wait_set.reqs);
  pup_all(p, q.wait_set.n, q.wait_set.gen, q.wait_set.active);
  // Mprobe'd messages, by handle
  std::uint64_t nm = q.matched_.size();
  p | nm;
  if (p.isUnpacking()) {
    p.check_length(nm, 1, typeid(P2p::Matched));
    q.matched_.assign(nm, P2p::Matched{});
  }
  for (P2p::Matched& m : q.matched_) {
    pup_opt_msg(p, m.msg);
    p | m.comm;
  }
  // order: the pair numbers and what came early
  pup_all(p, q.send_seq, q.recv_seq, q.moves);
  std::uint64_t ne = q.early.size();
  p | ne;
  if (p.isUnpacking()) {
    p.check_length(ne, 1, typeid(WireHeader));
    q.early.assign(ne, nullptr);
  }
  for (void*& m : q.early) pup_msg(p, m);
}

void p2p_prepare_to_move(P2p& q) {
  Rank* r = current_rank();
  // Direct messages already here: their data is pulled now, in place (the rank owns it
  // then, and the senders' requests complete); those that come from now on are pulled
  // before they reach the rank (on_wire, while `moving`).
  q.moving = true;
  q.for_each_held([r](void*& m) {
    if (wire(m).flags & kDevice) m = pull_for_move(r, m);
  });
  CthThread self = CthSelf();
  rank_wait([&] {
    if (q.tasks == 0 && q.direct_out == 0 && q.direct_in == 0) return true;
    q.move_waiter = self;  // note_progress wakes it
    return false;
  });
  q.move_waiter = nullptr;
  // Device memory does not move with the rank (a later step decides what CUDA state may).
  int on_device = 0;
  for (std::size_t i = 1; i <= q.request_count(); ++i) {
    const auto h = static_cast<MPI_Request>(i);
    if (!q.valid(h)) continue;
    const Request& x = q.req(h);
    const bool pending = !x.complete && (!x.persistent || x.active);
    if (pending && ((x.kind == ReqKind::Recv && x.device) || (x.kind == ReqKind::Send && x.on_device))) ++on_device;
  }
  if (on_device)
    CkAbort("AMPI_Migrate: rank %d has %d pending request(s) on GPU (device) memory, which does not move with "
            "the rank; complete them (MPI_Wait) before AMPI_Migrate",
            r->world_rank(), on_device);
}

void p2p_move_done(P2p& q) { q.moving = false; }

}  // namespace ampi

// The test hook (tests/ampi/progs/p2p_migrate_state.c finds it with dlsym): the calling
// rank's P2p goes through what a move does to it, in place: p2p_prepare_to_move, packed,
// destroyed (its messages freed), a new one built, unpacked, registered again. Returns
// MPI_SUCCESS; errors stop the job.
extern "C" __attribute__((visibility("default"))) int AMPIX_Roundtrip_p2p_state(void) {
  using namespace ampi;
  heap::RuntimeScope scope;  // called by the program (not a generated PMPI_X): the runtime's heap
  Rank* r = current_rank();
  P2p& q = r->p2p();
  p2p_prepare_to_move(q);
  PUP::er sizer = PUP::er::sizer();
  pup_p2p_state(sizer, q);
  std::vector<char> buf(sizer.size());
  PUP::er packer = PUP::er::packer(buf.data(), buf.size());
  pup_p2p_state(packer, q);
  q.~P2p();
  new (&q) P2p();
  PUP::er unpacker = PUP::er::unpacker(buf.data(), buf.size());
  pup_p2p_state(unpacker, q);
  if (unpacker.remaining() != 0)
    CkAbort("AMPI: the point-to-point state of rank %d left %zu of %zu bytes unread", r->world_rank(),
            unpacker.remaining(), buf.size());
  route_add(r);
  p2p_move_done(q);
  return MPI_SUCCESS;
}
