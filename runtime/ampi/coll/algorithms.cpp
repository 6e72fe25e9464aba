// Collectives, blocking and nonblocking, over the runtime's point-to-point (internal.h).
// Every message travels on the communicator's collective context (Ctx::Coll), never the
// user's, with a tag from coll_tag: one per collective call, the same on every member, so
// a nonblocking collective still in flight never matches the next one's messages.
//
// Algorithms (n members), chosen by size and n (thresholds in coll.h; the table and the
// reasons in runtime/ampi/README.md, "Collective algorithms"):
//   Barrier          dissemination: ceil(log2 n) rounds of one zero-byte message each way
//   Bcast            binomial tree rooted at root; long vectors: scatter + ring allgather;
//                    3-4 crowded members and short vectors: flat (the root to all)
//   Reduce           binomial tree; a non-commutative op combines in rank order on a tree
//                    rooted at 0, which then sends the result to root; 3-4 crowded members
//                    and short vectors: flat (all to the root); medium vectors and
//                    commutative ops, members not crowded: Rabenseifner (reduce-scatter
//                    by recursive halving, binomial gather of the blocks); long ones: a
//                    segmented binomial tree
//   Allreduce        recursive doubling; n not a power of two: the first 2*(n - 2^k) ranks
//                    pair up first (the even one hands its data to the odd one and gets the
//                    result at the end); combines lower ranks' data on the left, so
//                    non-commutative ops are right; larger vectors (crowded: from 16 KiB)
//                    and commutative ops: Rabenseifner (reduce-scatter, then allgather by
//                    recursive doubling);
//                    two members and long vectors: the halves pipelined in segments
//   Allgather(v)     Bruck's for small equal blocks (3-4 crowded members: all at once),
//                    else a ring
//   Alltoall         Bruck's for small blocks at n >= 8, pairwise for large blocks, else
//                    every message posted at once
//   Gather(v), Scatter(v), Alltoall(v,w)   direct: every message posted at once
//   Reduce_scatter(_block)   Reduce to rank 0, then Scatterv
//   Scan, Exscan     recursive doubling (partial results of aligned rank blocks)
// Every member must run the same algorithm: the choice depends on n, the datatype and the
// counts, never on a member's own buffer memory.
// Nonblocking collectives run the blocking algorithm in a user-level thread of the rank
// (start_task) with a copy of the communicator, so a Comm_free meanwhile does no harm.
//
// Reductions work on temporaries laid out as the datatype says (what op_apply reads);
// the point-to-point layer packs and unpacks. Device (CUDA) buffers: data moves through the
// point-to-point layer, which handles device memory; reductions compute on the host, so
// Reduce/Allreduce stage device buffers through host temporaries (see `on_device`).
#include "coll/coll.h"
#include "pt2pt/pt2pt.h"
#include "rank.h"

#include <ucharm/converse.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>


namespace ampi {

int coll_tag(Comm& c) {
  const int tag = static_cast<int>(c.coll_seq & static_cast<std::uint32_t>(kCollTagFree - 1));
  ++c.coll_seq;
  return tag;
}

namespace coll {

char* scratch_take(std::size_t bytes, std::size_t& cap) {
  if (Rank* r = current_rank()) {
    auto& kept = r->coll_scratch;
    std::size_t best = kept.size();
    for (std::size_t i = 0; i < kept.size(); ++i)
      if (kept[i].cap >= bytes && (best == kept.size() || kept[i].cap < kept[best].cap)) best = i;
    if (best < kept.size()) {
      cap = kept[best].cap;
      char* mem = kept[best].mem.release();
      kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(best));
      return mem;
    }
  }
  cap = bytes;
  return new char[bytes];
}

void scratch_give(char* mem, std::size_t cap) {
  std::unique_ptr<char[]> owned(mem);
  Rank* r = current_rank();
  if (!r || cap > kScratchKeepEach) return;
  auto& kept = r->coll_scratch;
  std::size_t total = cap;
  for (const auto& k : kept) total += k.cap;
  // Over the budget: the smallest kept ones go first (a large one serves small calls too).
  while (total > kScratchKeep && !kept.empty()) {
    auto smallest = std::min_element(kept.begin(), kept.end(), [](auto& a, auto& b) { return a.cap < b.cap; });
    if (smallest->cap > cap) return;  // the newcomer is the smallest: free it
    total -= smallest->cap;
    kept.erase(smallest);
  }
  kept.push_back({cap, std::move(owned)});
}

Span layout_span(int count, MPI_Datatype t) {
  if (count <= 0) return {};
  if (type_contiguous(t)) return {type_lb(t), static_cast<std::size_t>(count) * type_size(t)};
  MPI_Aint tlb = 0, text = 0;
  PMPI_Type_get_true_extent(t, &tlb, &text);
  const std::ptrdiff_t step = static_cast<std::ptrdiff_t>(count - 1) * type_extent(t);
  const std::ptrdiff_t lo = tlb + std::min<std::ptrdiff_t>(0, step);
  const std::ptrdiff_t hi = tlb + text + std::max<std::ptrdiff_t>(0, step);
  return {lo, static_cast<std::size_t>(hi - lo)};
}

void copy_typed(const void* src, int scount, MPI_Datatype stype, void* dst, int rcount, MPI_Datatype rtype) {
  const std::size_t bytes = static_cast<std::size_t>(std::max(scount, 0)) * type_size(stype);
  if (bytes == 0 || (src == dst && stype == rtype)) return;
  if (type_contiguous(stype) && type_contiguous(rtype)) {
    std::memmove(static_cast<char*>(dst) + type_lb(rtype), static_cast<const char*>(src) + type_lb(stype), bytes);
    return;
  }
  std::unique_ptr<char[]> tmp(new char[bytes]);
  type_pack(src, scount, stype, tmp.get());
  type_unpack(tmp.get(), bytes, dst, rcount, rtype);
}
void copy_elems(const void* src, void* dst, int count, MPI_Datatype t) { copy_typed(src, count, t, dst, count, t); }

// Device buffers hold contiguous types only (the point-to-point refuses others): their
// bytes are copied as they are, host or device (copy_bytes_any); host ones as the types say.
void pack_any(const void* src, int count, MPI_Datatype t, void* out) {
  if (count > 0 && on_device(src) && type_contiguous(t)) {
    copy_bytes_any(out, static_cast<const char*>(src) + type_lb(t), static_cast<std::size_t>(count) * type_size(t));
    return;
  }
  type_pack(src, count, t, out);
}
void unpack_any(const void* in, std::size_t bytes, void* dst, int count, MPI_Datatype t) {
  if (count > 0 && on_device(dst) && type_contiguous(t)) {
    copy_bytes_any(static_cast<char*>(dst) + type_lb(t), in,
                   std::min(bytes, static_cast<std::size_t>(count) * type_size(t)));
    return;
  }
  type_unpack(in, bytes, dst, count, t);
}
void copy_typed_any(const void* src, int scount, MPI_Datatype stype, void* dst, int rcount, MPI_Datatype rtype) {
  if (scount > 0 && (on_device(src) || on_device(dst)) && type_contiguous(stype) && type_contiguous(rtype)) {
    copy_bytes_any(static_cast<char*>(dst) + type_lb(rtype), static_cast<const char*>(src) + type_lb(stype),
                   static_cast<std::size_t>(scount) * type_size(stype));
    return;
  }
  copy_typed(src, scount, stype, dst, rcount, rtype);
}

// Copies `count` elements of a rank from src to dst where either is device memory (the host
// staging of device buffers): contiguous types with one copy, others through the rank's
// point-to-point to itself, which packs and unpacks device data.
int self_copy(const void* src, void* dst, int count, MPI_Datatype t, Comm& c, int tag) {
  if (count <= 0) return MPI_SUCCESS;
  if (type_contiguous(t)) {  // one copy (cudaMemcpy): no transfer of the rank to itself
    const std::ptrdiff_t lb = type_lb(t);
    copy_bytes_any(static_cast<char*>(dst) + lb, static_cast<const char*>(src) + lb,
                   static_cast<std::size_t>(count) * type_size(t));
    return MPI_SUCCESS;
  }
  MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int e = irecv(dst, count, t, c.rank, tag, c, Ctx::Coll, &r[0]);
  if (!e) e = isend(src, count, t, c.rank, tag, c, Ctx::Coll, &r[1]);
  const int w = wait_all(2, r, nullptr);
  return e ? e : w;
}

// acc = lower op acc, where `lower` holds the contribution of lower ranks. When the other
// operand comes from higher ranks instead (hi_in_tmp), a non-commutative op needs
// acc op tmp: computed into tmp, and the two pointers swap.
int combine(MPI_Op op, bool commutative, void*& acc, void*& tmp, bool tmp_is_lower, int count, MPI_Datatype t) {
  if (tmp_is_lower || commutative) return op_apply(op, tmp, acc, count, t);
  const int e = op_apply(op, acc, tmp, count, t);
  std::swap(acc, tmp);
  return e;
}

// --- algorithms -------------------------------------------------------------------------
namespace {
// One step: the receive from `src` posted first, then the send to `dst` as a blocking one
// (a small one is copied into its message and needs no request; a direct transfer waits
// until the peer, whose receive is posted the same way, has taken it), then the receive
// waited for.
int exchange(const void* sbuf, int scount, MPI_Datatype stype, int dst, void* rbuf, int rcount, MPI_Datatype rtype,
             int src, Comm& c, int tag) {
  MPI_Request q = MPI_REQUEST_NULL;
  int e = irecv(rbuf, rcount, rtype, src, tag, c, Ctx::Coll, &q);
  if (!e) e = send(sbuf, scount, stype, dst, tag, c, Ctx::Coll);
  const int w = wait_all(1, &q, nullptr);
  return e ? e : w;
}

// Whether the ranks share cores: more ranks than PEs (+vp), or one host with more PEs than
// cores. There every step waits for its peer to be scheduled, so the algorithms of fewest
// steps win even for large messages (Bcast of 1 MiB at 8 ranks on 2 cores: binomial 3-12
// ms, scatter + ring 14-56 ms; Alltoall: all at once 15-78 ms, pairwise 26-138 ms). What
// every member knows alike: the world size, the PE count, and the host's state where the
// job has one host.
bool crowded() {
  if (const int set = coll_crowded_setting(); set >= 0) return set == 1;  // +ampi-coll-crowded
  const Rank* r = current_rank();
  return (r && r->world_size() > CmiNumPes()) || (CmiNumHosts() == 1 && CmiOversubscribed());
}

int pof2_below(int n) {  // the largest power of two <= n
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

// From which size Reduce and Allreduce take Rabenseifner's algorithm (reduce-scatter, then
// gather or allgather: twice the steps of a tree, half the bytes). On crowded cores every
// step waits for a PE to be scheduled, so fewer steps win longer (coll.h).
std::size_t reduce_rsg_min(int n) {
  return n == 2 || crowded() ? kReduceScatterGatherCrowdedMin : kReduceScatterGatherMin;
}
std::size_t allreduce_rsg_min(int n) {
  if (n == 2) return kAllreduceRsgPairMin;
  return crowded() ? kAllreduceRsgCrowdedMin : kReduceScatterGatherMin;
}

// Few members on crowded cores and a short message: Reduce, Bcast and Allgather in one hop
// (every member to the root, the root to every member, every member to every other), since
// each hop waits for a PE to be scheduled. What every member knows alike.
bool flat_chosen(int n, std::size_t bytes) {
  return n > 2 && n <= kFlatMaxRanks && bytes <= kFlatMaxBytes && crowded();
}

// `count` elements cut into `parts` blocks as even as they go (the first count % parts one
// longer); block i starts at element off(i).
struct Blocks {
  int count, parts;
  std::ptrdiff_t off(int i) const {
    const int base = count / parts, extra = count % parts;
    return static_cast<std::ptrdiff_t>(i) * base + std::min(i, extra);
  }
  int len(int lo, int hi) const { return static_cast<int>(off(hi) - off(lo)); }
};

// Rabenseifner's reduction, first half (commutative ops): the members fold to a power of two
// p (of members numbered from `root`, vr < 2 * (n - p): each odd one hands its data to the
// even one below and leaves), then reduce-scatter by recursive halving: at each step a
// member sends the half of its range that the partner keeps and combines the half it keeps,
// so that member `newrank` (0..p-1) ends with block `newrank` of p fully reduced in `acc`.
// Each member sends and combines about count * (1 - 1/p) elements instead of the whole
// vector log p times. Returns the member's newrank, -1 for one that left.
struct Folded {
  int n, p, rem, root;
  int real(int newrank) const { return ((newrank < rem ? newrank * 2 : newrank + rem) + root) % n; }
};
int reduce_scatter_halving(void* acc, void* tmp, int count, MPI_Datatype t, MPI_Op op, const Folded& f, Comm& c,
                           int tag, int& newrank) {
  const int vr = (c.rank - f.root + f.n) % f.n;
  int e = MPI_SUCCESS;
  newrank = vr - f.rem;
  if (vr < 2 * f.rem) {
    if (vr % 2) {
      newrank = -1;
      return send(acc, count, t, (vr - 1 + f.root) % f.n, tag, c, Ctx::Coll);
    }
    if ((e = recv(tmp, count, t, (vr + 1 + f.root) % f.n, tag, c, Ctx::Coll, nullptr))) return e;
    if ((e = op_apply(op, tmp, acc, count, t))) return e;
    newrank = vr / 2;
  }
  const Blocks b{count, f.p};
  int lo = 0, hi = f.p;
  for (int mask = f.p / 2; mask > 0; mask >>= 1) {
    const int mid = lo + mask;
    const bool upper = newrank & mask;
    const int klo = upper ? mid : lo, khi = upper ? hi : mid;  // kept
    const int slo = upper ? lo : mid, shi = upper ? mid : hi;  // sent
    const int peer = f.real(newrank ^ mask);
    if ((e = exchange(elem(acc, b.off(slo), t), b.len(slo, shi), t, peer, elem(tmp, b.off(klo), t),
                      b.len(klo, khi), t, peer, c, tag)))
      return e;
    if ((e = op_apply(op, elem(tmp, b.off(klo), t), elem(acc, b.off(klo), t), b.len(klo, khi), t))) return e;
    lo = klo;
    hi = khi;
  }
  return MPI_SUCCESS;
}

// Rabenseifner's Reduce: reduce_scatter_halving rooted at root (its newrank is 0), then a
// binomial gather of the blocks to it. Commutative ops, count >= the power of two.
int reduce_rabenseifner(const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op, int root, Comm& c,
                        int tag) {
  const int n = c.size();
  const int p = pof2_below(n);
  const Folded f{n, p, n - p, root};
  const bool is_root = c.rank == root;
  Scratch sacc(is_root ? 0 : count, t), st(count, t);
  void* acc = is_root ? recvbuf : sacc.get();
  copy_elems(sendbuf, acc, count, t);
  int newrank;
  int e = reduce_scatter_halving(acc, st.get(), count, t, op, f, c, tag, newrank);
  if (e || newrank < 0) return e;
  const Blocks b{count, p};
  for (int mask = 1; mask < p; mask <<= 1) {
    if (newrank & mask)  // my blocks [newrank, newrank + mask) go down the tree, and I am done
      return send(elem(acc, b.off(newrank), t), b.len(newrank, newrank + mask), t, f.real(newrank - mask), tag, c,
                  Ctx::Coll);
    const int from = newrank + mask;
    if ((e = recv(elem(acc, b.off(from), t), b.len(from, from + mask), t, f.real(from), tag, c, Ctx::Coll, nullptr)))
      return e;
  }
  return MPI_SUCCESS;
}

// Rabenseifner's Allreduce: reduce_scatter_halving, then an allgather by recursive doubling
// of the blocks, then the members that left get the result. On recvbuf (holding the input).
int allreduce_rabenseifner(void* recvbuf, int count, MPI_Datatype t, MPI_Op op, Comm& c, int tag) {
  const int n = c.size();
  const int p = pof2_below(n);
  const Folded f{n, p, n - p, 0};
  Scratch st(count, t);
  int newrank;
  int e = reduce_scatter_halving(recvbuf, st.get(), count, t, op, f, c, tag, newrank);
  if (e) return e;
  if (newrank >= 0) {
    const Blocks b{count, p};
    for (int mask = 1; mask < p; mask <<= 1) {
      const int mine = newrank & ~(mask - 1), theirs = (newrank ^ mask) & ~(mask - 1);
      const int peer = f.real(newrank ^ mask);
      if ((e = exchange(elem(recvbuf, b.off(mine), t), b.len(mine, mine + mask), t, peer,
                        elem(recvbuf, b.off(theirs), t), b.len(theirs, theirs + mask), t, peer, c, tag)))
        return e;
    }
  }
  const int r = c.rank;
  if (r < 2 * f.rem) {
    if (r % 2 == 0) return send(recvbuf, count, t, r + 1, tag, c, Ctx::Coll);
    return recv(recvbuf, count, t, r - 1, tag, c, Ctx::Coll, nullptr);
  }
  return MPI_SUCCESS;
}

// Flat Reduce (flat_chosen): every other member sends its input to the root, which
// combines them in rank order (x0 op x1 op ... op x(n-1): right for any op).
int reduce_flat(const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op, int root, Comm& c,
                int tag) {
  const int n = c.size();
  if (c.rank != root) return send(sendbuf, count, t, root, tag, c, Ctx::Coll);
  Scratch parts[kFlatMaxRanks];
  Requests q(static_cast<std::size_t>(n));
  int e = MPI_SUCCESS;
  for (int i = 0; i < n && !e; ++i) {
    parts[i].reset(count, t);
    if (i == root) copy_elems(sendbuf, parts[i].get(), count, t);  // sendbuf may be recvbuf (in place)
    else e = irecv(parts[i].get(), count, t, i, tag, c, Ctx::Coll, q.next());
  }
  const int w = q.wait();
  if (e || (e = w)) return e;
  copy_elems(parts[n - 1].get(), recvbuf, count, t);
  for (int i = n - 2; i >= 0 && !e; --i) e = op_apply(op, parts[i].get(), recvbuf, count, t);
  return e;
}

// Allreduce of two members, long vectors (any op): each keeps one half (rank 0 the lower),
// sends the other in segments, combines the partner's segments of its half as they come
// (rank 0's data on the left) and sends each result segment back at once; the partner's
// results land in recvbuf. Rabenseifner's at n = 2, pipelined: the combining overlaps the
// transfers, and the second half of the exchange starts with the first segment.
int allreduce_pair(void* recvbuf, int count, MPI_Datatype t, MPI_Op op, Comm& c, int tag) {
  const int r = c.rank, peer = 1 - r;
  const int per = static_cast<int>(std::max<std::size_t>(1, kAllreducePairSegment / type_size(t)));
  const int half = count / 2;
  const int mine_lo = r == 0 ? 0 : half, mine_n = r == 0 ? half : count - half;
  const int theirs_lo = r == 0 ? half : 0, theirs_n = count - mine_n;
  const int my_segs = (mine_n + per - 1) / per, their_segs = (theirs_n + per - 1) / per;
  auto seg = [&](int lo, int n, int s) { return std::pair<std::ptrdiff_t, int>{lo + static_cast<std::ptrdiff_t>(s) * per, std::min(per, n - s * per)}; };
  Scratch stmp(mine_n, t);
  char* tmp = static_cast<char*>(stmp.get());
  Requests out(static_cast<std::size_t>(2 * their_segs + my_segs));
  std::vector<MPI_Request> got(static_cast<std::size_t>(my_segs), MPI_REQUEST_NULL);
  int e = MPI_SUCCESS;
  for (int s = 0; s < my_segs && !e; ++s) {  // the partner's data for my half
    auto [o, n] = seg(0, mine_n, s);
    e = irecv(elem(tmp, o, t), n, t, peer, tag, c, Ctx::Coll, &got[static_cast<std::size_t>(s)]);
  }
  for (int s = 0; s < their_segs && !e; ++s) {  // my data for the partner's half
    auto [o, n] = seg(theirs_lo, theirs_n, s);
    e = isend(elem(recvbuf, o, t), n, t, peer, tag, c, Ctx::Coll, out.next());
  }
  for (int s = 0; s < their_segs && !e; ++s) {  // the partner's results (after my data, in pair order)
    auto [o, n] = seg(theirs_lo, theirs_n, s);
    e = irecv(elem(recvbuf, o, t), n, t, peer, tag, c, Ctx::Coll, out.next());
  }
  for (int s = 0; s < my_segs && !e; ++s) {
    auto [o, n] = seg(0, mine_n, s);
    if ((e = wait_all(1, &got[static_cast<std::size_t>(s)], nullptr))) break;
    void* theirs = elem(tmp, o, t);
    void* mine = elem(recvbuf, mine_lo + o, t);
    if (r == 1 || op_commutative(op)) {
      e = op_apply(op, theirs, mine, n, t);  // mine = theirs op mine
    } else if (!(e = op_apply(op, mine, theirs, n, t))) {  // theirs = mine op theirs
      copy_elems(theirs, mine, n, t);
    }
    if (!e) e = isend(mine, n, t, peer, tag, c, Ctx::Coll, out.next());
  }
  if (e) wait_all(my_segs, got.data(), nullptr);
  const int w = out.wait();
  return e ? e : w;
}

// Segmented binomial Reduce (commutative ops, long vectors): the vector goes up a binomial
// tree rooted at root in segments of about kReduceSegment bytes. A member combines segment s
// of its children into its own and sends it on at once, so the levels of the tree work on
// different segments at the same time; the segments stay below +ampi-direct-min, so each
// send is a blocking one that returns at once: from the buffer where the link takes it
// (the parent's receive, if posted, gets the data straight), else copied into its message.
// The root combines into
// recvbuf; a segment comes into a small temporary that stays in the cache. Each member
// sends the vector once and combines it once per child.
int reduce_segmented(const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op, int root, Comm& c,
                     int tag) {
  const int n = c.size();
  const int vr = (c.rank - root + n) % n;
  std::size_t seg_bytes = kReduceSegment;
  // Below +ampi-direct-min where it leaves room (a direct send waits for its receiver).
  if (const std::size_t dm = direct_min(); dm >= 2 * kReduceSegmentFloor && seg_bytes >= dm) seg_bytes = dm / 2;
  const int per = static_cast<int>(std::max<std::size_t>(1, seg_bytes / type_size(t)));
  const int segs = (count + per - 1) / per;
  auto off = [&](int s) { return static_cast<std::ptrdiff_t>(s) * per; };
  auto len = [&](int s) { return std::min(per, count - s * per); };
  int children[32];
  int nc = 0;
  for (int mask = 1; mask < n && !(vr & mask); mask <<= 1)
    if (vr + mask < n) children[nc++] = (vr + mask + root) % n;
  const int parent = vr ? (vr - (vr & -vr) + root) % n : -1;
  // Flow control: every kReduceWindow-th segment goes as a synchronous send, and the next
  // one waits until that one is matched, so at most about two windows of a member's
  // segments wait at its parent however long the vector.
  MPI_Request sync = MPI_REQUEST_NULL;
  auto up = [&](const void* p, int s) {
    if (s % kReduceWindow != kReduceWindow - 1) return send(p, len(s), t, parent, tag, c, Ctx::Coll);
    if (const int e = wait_all(1, &sync, nullptr)) return e;
    return issend(p, len(s), t, parent, tag, c, Ctx::Coll, &sync);
  };
  auto finish = [&](int e) {
    const int v = wait_all(1, &sync, nullptr);
    return e ? e : v;
  };
  int e = MPI_SUCCESS;
  if (nc == 0) {  // a leaf sends its input as it is
    for (int s = 0; s < segs && !e; ++s) e = up(elem(sendbuf, off(s), t), s);
    return finish(e);
  }
  const bool is_root = parent < 0;
  Scratch sacc(is_root ? 0 : count, t), stmp(per, t);
  void* acc = is_root ? recvbuf : sacc.get();
  void* tmp = stmp.get();
  for (int s = 0; s < segs && !e; ++s) {
    void* a = elem(acc, off(s), t);
    if (sendbuf != acc) copy_elems(elem(sendbuf, off(s), t), a, len(s), t);
    for (int k = 0; k < nc && !e; ++k) {
      if (!(e = recv(tmp, len(s), t, children[k], tag, c, Ctx::Coll, nullptr))) e = op_apply(op, tmp, a, len(s), t);
    }
    if (!is_root && !e) e = up(a, s);
  }
  return finish(e);
}
}  // namespace

// Binomial tree. Leaves send their input as it is; inner nodes combine into a temporary,
// the root of a commutative reduction into recvbuf itself.
int reduce_alg(const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op, int root, Comm& c, int tag) {
  const int n = c.size(), r = c.rank;
  if (n == 1) {
    copy_elems(sendbuf, recvbuf, count, t);
    return MPI_SUCCESS;
  }
  const bool commutative = op_commutative(op);
  const std::size_t bytes = static_cast<std::size_t>(count) * type_size(t);
  if (flat_chosen(n, bytes)) return reduce_flat(sendbuf, recvbuf, count, t, op, root, c, tag);
  if (commutative && bytes >= kReduceSegmentedMin)
    return reduce_segmented(sendbuf, recvbuf, count, t, op, root, c, tag);
  if (commutative && count >= pof2_below(n) && bytes >= reduce_rsg_min(n))
    return reduce_rabenseifner(sendbuf, recvbuf, count, t, op, root, c, tag);
  const int troot = commutative ? root : 0;  // rank order needs a tree whose blocks are rank ranges
  const int vr = (r - troot + n) % n;
  const bool leaf = (vr & 1) || vr == n - 1;
  if (leaf) return send(sendbuf, count, t, (vr - (vr & -vr) + troot) % n, tag, c, Ctx::Coll);
  // The root of a commutative reduction sums into recvbuf (its input is there already when
  // in place); non-commutative ones swap acc and tmp (combine), so both are temporaries.
  const bool into_recvbuf = r == root && commutative;
  Scratch sa(into_recvbuf ? 0 : count, t), sb(count, t);
  void* acc = into_recvbuf ? recvbuf : sa.get();
  void* tmp = sb.get();
  copy_elems(sendbuf, acc, count, t);
  int e = MPI_SUCCESS;
  for (int mask = 1; mask < n; mask <<= 1) {
    if ((vr & mask) == 0) {
      const int src = vr | mask;
      if (src >= n) continue;
      if ((e = recv(tmp, count, t, (src + troot) % n, tag, c, Ctx::Coll, nullptr))) return e;
      if ((e = combine(op, commutative, acc, tmp, false, count, t))) return e;
    } else {
      return send(acc, count, t, (vr - mask + troot) % n, tag, c, Ctx::Coll);
    }
  }
  // Here only troot is left: it holds the result.
  if (troot == root) {
    if (acc != recvbuf) copy_elems(acc, recvbuf, count, t);
    return MPI_SUCCESS;
  }
  return send(acc, count, t, root, tag, c, Ctx::Coll);
}

int reduce_root_recv(void* recvbuf, int count, MPI_Datatype t, MPI_Op op, int root, Comm& c, int tag) {
  // A non-commutative op reduces on a tree rooted at 0; a root elsewhere receives from 0.
  if (op_commutative(op) || root == 0 || c.rank != root || c.size() == 1 ||
      flat_chosen(c.size(), static_cast<std::size_t>(count) * type_size(t)))
    return MPI_SUCCESS;
  return recv(recvbuf, count, t, 0, tag, c, Ctx::Coll, nullptr);
}

int reduce_host(const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op, int root, Comm& c, int tag) {
  // The root of a non-commutative reduction other than 0 is a leaf or inner node of the
  // tree rooted at 0 (it sends its part) and then receives the result from 0.
  int e = reduce_alg(sendbuf, recvbuf, count, t, op, root, c, tag);
  if (!e) e = reduce_root_recv(recvbuf, count, t, op, root, c, tag);
  return e;
}

int allreduce_host(const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op, Comm& c, int tag) {
  const int n = c.size(), r = c.rank;
  if (sendbuf != recvbuf) copy_elems(sendbuf, recvbuf, count, t);
  if (n == 1) return MPI_SUCCESS;
  if (n == 2 && static_cast<std::size_t>(count) * type_size(t) >= kAllreducePairMin)
    return allreduce_pair(recvbuf, count, t, op, c, tag);
  const bool commutative = op_commutative(op);
  const int pof2 = pof2_below(n);
  if (commutative && count >= pof2 && static_cast<std::size_t>(count) * type_size(t) >= allreduce_rsg_min(n))
    return allreduce_rabenseifner(recvbuf, count, t, op, c, tag);
  const int rem = n - pof2;
  Scratch st(count, t);
  void* acc = recvbuf;
  void* tmp = st.get();
  int e = MPI_SUCCESS;
  int newrank;
  if (r < 2 * rem) {
    if (r % 2 == 0) {
      if ((e = send(acc, count, t, r + 1, tag, c, Ctx::Coll))) return e;
      newrank = -1;
    } else {
      if ((e = recv(tmp, count, t, r - 1, tag, c, Ctx::Coll, nullptr))) return e;
      if ((e = op_apply(op, tmp, acc, count, t))) return e;
      newrank = r / 2;
    }
  } else {
    newrank = r - rem;
  }
  if (newrank >= 0) {
    for (int mask = 1; mask < pof2; mask <<= 1) {
      const int newdst = newrank ^ mask;
      const int dst = newdst < rem ? newdst * 2 + 1 : newdst + rem;
      if ((e = exchange(acc, count, t, dst, tmp, count, t, dst, c, tag))) return e;
      if ((e = combine(op, commutative, acc, tmp, dst < r, count, t))) return e;
    }
    if (acc != recvbuf) copy_elems(acc, recvbuf, count, t);
  }
  if (r < 2 * rem) {
    if (r % 2) return send(recvbuf, count, t, r - 1, tag, c, Ctx::Coll);
    return recv(recvbuf, count, t, r + 1, tag, c, Ctx::Coll, nullptr);
  }
  return MPI_SUCCESS;
}

// Reductions compute on the host: device buffers go through host temporaries.
int allreduce_run(const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op, Comm& c, int tag) {
  const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  const bool dev_in = on_device(in), dev_out = on_device(recvbuf);
  if (!dev_in && !dev_out) return allreduce_host(in, recvbuf, count, t, op, c, tag);
  Scratch hin(count, t), hout(count, t);
  int e = dev_in ? self_copy(in, hin.get(), count, t, c, tag) : (copy_elems(in, hin.get(), count, t), 0);
  if (!e) e = allreduce_host(hin.get(), hout.get(), count, t, op, c, tag);
  if (e) return e;
  if (dev_out) return self_copy(hout.get(), recvbuf, count, t, c, tag);
  copy_elems(hout.get(), recvbuf, count, t);
  return MPI_SUCCESS;
}

int reduce_run(const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op, int root, Comm& c, int tag) {
  const bool is_root = c.rank == root;
  const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  const bool dev_in = on_device(in), dev_out = is_root && on_device(recvbuf);
  if (!dev_in && !dev_out) return reduce_host(in, recvbuf, count, t, op, root, c, tag);
  Scratch hin(count, t), hout(count, t);
  int e = dev_in ? self_copy(in, hin.get(), count, t, c, tag) : (copy_elems(in, hin.get(), count, t), 0);
  if (!e) e = reduce_host(hin.get(), hout.get(), count, t, op, root, c, tag);
  if (e || !is_root) return e;
  if (dev_out) return self_copy(hout.get(), recvbuf, count, t, c, tag);
  copy_elems(hout.get(), recvbuf, count, t);
  return MPI_SUCCESS;
}

int barrier_alg(Comm& c, int tag) {
  const int n = c.size(), r = c.rank;
  for (int d = 1; d < n; d <<= 1) {
    if (int e = exchange(nullptr, 0, MPI_BYTE, (r + d) % n, nullptr, 0, MPI_BYTE, (r - d % n + n) % n, c, tag))
      return e;
  }
  return MPI_SUCCESS;
}

namespace {
// Van de Geijn's broadcast of a long vector (contiguous type; host or device memory, moved
// by the point-to-point alone): the root
// scatters it in n blocks down a binomial tree, then a ring passes every block round
// (n - 1 steps). The root sends about 2 * bytes instead of bytes * log2 n. Messages of the
// two phases between one pair keep their order (one tag: the runtime's own tags have no
// next one).
int bcast_scatter_ring(void* buf, int count, MPI_Datatype t, int root, Comm& c, int tag) {
  const int n = c.size();
  const int vr = (c.rank - root + n) % n;
  char* base = static_cast<char*>(buf) + type_lb(t);
  const std::size_t bytes = static_cast<std::size_t>(count) * type_size(t);
  const std::size_t chunk = (bytes + static_cast<std::size_t>(n) - 1) / static_cast<std::size_t>(n);
  auto at = [&](int blk) { return std::min(static_cast<std::size_t>(blk) * chunk, bytes); };  // block blk's start
  auto len = [&](int lo, int hi) { return static_cast<int>(at(std::min(hi, n)) - at(lo)); };
  auto real = [&](int v) { return (v % n + root) % n; };
  int e = MPI_SUCCESS;
  // Scatter: a member receives its subtree's blocks [vr, vr + lowbit) from its parent.
  int mask = 1;
  for (; mask < n; mask <<= 1) {
    if (vr & mask) {
      if ((e = recv(base + at(vr), len(vr, vr + mask), MPI_BYTE, real(vr - mask), tag, c, Ctx::Coll, nullptr)))
        return e;
      break;
    }
  }
  {
    Requests q(32);
    for (mask >>= 1; mask > 0 && !e; mask >>= 1)
      if (vr + mask < n)
        e = isend(base + at(vr + mask), len(vr + mask, vr + 2 * mask), MPI_BYTE, real(vr + mask), tag, c, Ctx::Coll,
                  q.next());
    const int w = q.wait();
    if (e || (e = w)) return e;
  }
  // Ring: at step k a member passes block vr - k on to vr + 1 and gets block vr - k - 1.
  for (int k = 0; k < n - 1; ++k) {
    const int sb = (vr - k + n) % n, rb = (vr - k - 1 + n) % n;
    if ((e = exchange(base + at(sb), len(sb, sb + 1), MPI_BYTE, real(vr + 1), base + at(rb), len(rb, rb + 1),
                      MPI_BYTE, real(vr - 1 + n), c, tag)))
      return e;
  }
  return MPI_SUCCESS;
}
}  // namespace

int bcast_alg(void* buf, int count, MPI_Datatype t, int root, Comm& c, int tag) {
  const int n = c.size();
  if (n == 1 || count == 0) return MPI_SUCCESS;
  const std::size_t bytes = static_cast<std::size_t>(count) * type_size(t);
  // The choice depends on what every member knows alike (n, the type, the size), never on
  // its own buffer's memory: members may mix host and device buffers.
  if (n >= 4 && type_contiguous(t) && (bytes >= kBcastScatterLong || (n >= 8 && bytes >= kBcastScatterMedium)) &&
      !crowded())
    return bcast_scatter_ring(buf, count, t, root, c, tag);
  if (flat_chosen(n, bytes)) {  // crowded cores: every member hears from the root, one hop
    if (c.rank != root) return recv(buf, count, t, root, tag, c, Ctx::Coll, nullptr);
    Requests q(kFlatMaxRanks);
    int e = MPI_SUCCESS;
    for (int k = 1; k < n && !e; ++k) e = isend(buf, count, t, (root + k) % n, tag, c, Ctx::Coll, q.next());
    const int w = q.wait();
    return e ? e : w;
  }
  const int vr = (c.rank - root + n) % n;
  int mask = 1;
  for (; mask < n; mask <<= 1) {
    if (vr & mask) {
      if (int e = recv(buf, count, t, (vr - mask + root) % n, tag, c, Ctx::Coll, nullptr)) return e;
      break;
    }
  }
  // A child whose send returns at once gets a blocking one: from the buffer where it can,
  // straight into the child's posted receive (IMB at 2 ranks, 8 alternating runs, medians:
  // 1 MiB 54 against 90 us by isend's pulled transfer, 4 MiB 178 against 397).
  Requests q(32);
  int e = MPI_SUCCESS;
  for (mask >>= 1; mask > 0 && !e; mask >>= 1) {
    if (vr + mask >= n) continue;
    const int child = (vr + mask + root) % n;
    if (send_returns_at_once(buf, count, t, child, c)) e = send(buf, count, t, child, tag, c, Ctx::Coll);
    else e = isend(buf, count, t, child, tag, c, Ctx::Coll, q.next());
  }
  const int w = q.wait();
  return e ? e : w;
}

// Gatherv and Gather: counts/displs null means `rcount` each, at i * rcount.
int gather_alg(const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf, int rcount, const int* rcounts,
               const int* displs, MPI_Datatype rtype, int root, Comm& c, int tag) {
  const int n = c.size(), r = c.rank;
  if (r != root) return send(sendbuf, scount, stype, root, tag, c, Ctx::Coll);
  Requests q(static_cast<std::size_t>(n));
  int e = MPI_SUCCESS;
  for (int i = 0; i < n && !e; ++i) {
    const int cnt = rcounts ? rcounts[i] : rcount;
    char* at = elem(recvbuf, displs ? displs[i] : static_cast<std::ptrdiff_t>(i) * rcount, rtype);
    if (i == r) {
      if (sendbuf != MPI_IN_PLACE) copy_typed(sendbuf, scount, stype, at, cnt, rtype);
    } else {
      e = irecv(at, cnt, rtype, i, tag, c, Ctx::Coll, q.next());
    }
  }
  const int w = q.wait();
  return e ? e : w;
}

int scatter_alg(const void* sendbuf, int scount, const int* scounts, const int* displs, MPI_Datatype stype,
                void* recvbuf, int rcount, MPI_Datatype rtype, int root, Comm& c, int tag) {
  const int n = c.size(), r = c.rank;
  if (r != root) return recv(recvbuf, rcount, rtype, root, tag, c, Ctx::Coll, nullptr);
  Requests q(static_cast<std::size_t>(n));
  int e = MPI_SUCCESS;
  for (int i = 0; i < n && !e; ++i) {
    const int cnt = scounts ? scounts[i] : scount;
    const char* at = elem(sendbuf, displs ? displs[i] : static_cast<std::ptrdiff_t>(i) * scount, stype);
    if (i == r) {
      if (recvbuf != MPI_IN_PLACE) copy_typed(at, cnt, stype, recvbuf, rcount, rtype);
    } else {
      e = isend(at, cnt, stype, i, tag, c, Ctx::Coll, q.next());
    }
  }
  const int w = q.wait();
  return e ? e : w;
}

namespace {
// Bruck's allgather (equal blocks): the blocks are gathered packed in a temporary in the
// order r, r+1, ...; at the step of distance d a member sends what it has (min(d, n - d)
// blocks) to r - d and gets as many from r + d; then the blocks are unpacked to their
// places. ceil(log2 n) steps for any n.
// A send block longer than the receive blocks (the program's error) is cut to their size
// (MPI_ERR_TRUNCATE here; the other members go on undisturbed).
int allgather_bruck(const void* mine, int mine_count, MPI_Datatype mine_type, void* recvbuf, int rcount,
                    MPI_Datatype rtype, Comm& c, int tag) {
  const int n = c.size(), r = c.rank;
  const std::size_t bb = static_cast<std::size_t>(rcount) * type_size(rtype);
  if (bb == 0) return MPI_SUCCESS;
  Scratch tmp(static_cast<int>(bb) * n, MPI_BYTE);
  char* t = static_cast<char*>(tmp.get());
  const std::size_t mine_bytes = static_cast<std::size_t>(mine_count) * type_size(mine_type);
  int err = MPI_SUCCESS;
  if (mine_bytes > bb) {
    Scratch whole(static_cast<int>(mine_bytes), MPI_BYTE);
    pack_any(mine, mine_count, mine_type, whole.get());
    std::memcpy(t, whole.get(), bb);
    err = MPI_ERR_TRUNCATE;
  } else {
    pack_any(mine, mine_count, mine_type, t);
  }
  for (int d = 1; d < n; d <<= 1) {
    const int blocks = std::min(d, n - d);
    if (int e = exchange(t, static_cast<int>(bb) * blocks, MPI_BYTE, (r - d + n) % n, t + bb * d,
                         static_cast<int>(bb) * blocks, MPI_BYTE, (r + d) % n, c, tag))
      return e;
  }
  for (int i = 0; i < n; ++i) {
    const int owner = (r + i) % n;
    if (owner == r && mine == elem(recvbuf, static_cast<std::ptrdiff_t>(r) * rcount, rtype)) continue;  // in place
    unpack_any(t + bb * i, bb, elem(recvbuf, static_cast<std::ptrdiff_t>(owner) * rcount, rtype), rcount, rtype);
  }
  return err;
}
}  // namespace

// Allgather(v): a ring (each block passed on to the next member, n - 1 steps), Bruck's for
// small equal blocks (allgather_bruck), every message at once where ranks share cores. The choice depends on what every member knows
// alike (n, the receive blocks), never on its own buffers' memory.
int allgather_alg(const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf, int rcount, const int* rcounts,
                  const int* displs, MPI_Datatype rtype, Comm& c, int tag) {
  const int n = c.size(), r = c.rank;
  auto block = [&](int i) { return elem(recvbuf, displs ? displs[i] : static_cast<std::ptrdiff_t>(i) * rcount, rtype); };
  auto count_of = [&](int i) { return rcounts ? rcounts[i] : rcount; };
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const std::size_t total = static_cast<std::size_t>(rcount) * type_size(rtype) * static_cast<std::size_t>(n);
  if (!rcounts && n > 2 && total < kAllgatherRingMin && !flat_chosen(n, total))
    return allgather_bruck(in_place ? block(r) : sendbuf, in_place ? count_of(r) : scount, in_place ? rtype : stype,
                           recvbuf, rcount, rtype, c, tag);
  // The first step sends this rank's block from sendbuf as given, so that a block longer
  // than the receivers' (the program's error) is reported by them (MPI_ERR_TRUNCATE); its
  // own copy is then cut likewise. An error does not end the ring early: the others'
  // later steps need this rank's.
  int err = MPI_SUCCESS;
  if (!in_place) {
    if (static_cast<std::size_t>(scount) * type_size(stype) > static_cast<std::size_t>(count_of(r)) * type_size(rtype))
      err = MPI_ERR_TRUNCATE;
    else
      copy_typed_any(sendbuf, scount, stype, block(r), count_of(r), rtype);
  }
  if (crowded()) {  // ranks sharing cores: one step, every message posted at once
    const void* mine = in_place ? block(r) : sendbuf;
    const int mine_count = in_place ? count_of(r) : scount;
    const MPI_Datatype mine_type = in_place ? rtype : stype;
    Requests q(2 * static_cast<std::size_t>(n));
    int e = MPI_SUCCESS;
    for (int i = 0; i < n && !e; ++i)
      if (i != r) e = irecv(block(i), count_of(i), rtype, i, tag, c, Ctx::Coll, q.next());
    for (int k = 1; k < n && !e; ++k)  // to r+1, r+2, ...: not everyone to rank 0 first
      e = isend(mine, mine_count, mine_type, (r + k) % n, tag, c, Ctx::Coll, q.next());
    const int w = q.wait();
    return err ? err : e ? e : w;
  }
  for (int k = 0; k < n - 1; ++k) {
    const int sb = (r - k + n) % n, rb = (r - k - 1 + n) % n;
    const bool from_sendbuf = k == 0 && !in_place;
    const int e = exchange(from_sendbuf ? sendbuf : block(sb), from_sendbuf ? scount : count_of(sb),
                           from_sendbuf ? stype : rtype, (r + 1) % n, block(rb), count_of(rb), rtype, (r - 1 + n) % n,
                           c, tag);
    if (e && !err) err = e;
  }
  return err;
}


namespace {
// Bruck's all-to-all (equal blocks of `bb` bytes): the send blocks packed in a temporary,
// block i the one for member r + i; at the step of bit k every block whose index has bit k
// goes to r + k together (one message), and the blocks of r - k take their places; then
// block i is the one from member r - i. ceil(log2 n) messages instead of n - 1, each
// block moved up to log2 n times: for small blocks only.
int alltoall_bruck(const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf, int rcount, MPI_Datatype rtype,
                   std::size_t bb, Comm& c, int tag) {
  const int n = c.size(), r = c.rank;
  const bool in_place = sendbuf == MPI_IN_PLACE;
  Scratch all(static_cast<int>(bb) * n, MPI_BYTE), moving(static_cast<int>(bb) * ((n + 1) / 2), MPI_BYTE),
      coming(static_cast<int>(bb) * ((n + 1) / 2), MPI_BYTE);
  char* t = static_cast<char*>(all.get());
  char* out = static_cast<char*>(moving.get());
  char* in = static_cast<char*>(coming.get());
  int err = MPI_SUCCESS;
  for (int i = 0; i < n; ++i) {
    const int to = (r + i) % n;
    if (in_place) {
      pack_any(elem(recvbuf, static_cast<std::ptrdiff_t>(to) * rcount, rtype), rcount, rtype, t + bb * i);
    } else if (static_cast<std::size_t>(scount) * type_size(stype) > bb) {  // the program's error: cut
      Scratch whole(static_cast<int>(static_cast<std::size_t>(scount) * type_size(stype)), MPI_BYTE);
      pack_any(elem(sendbuf, static_cast<std::ptrdiff_t>(to) * scount, stype), scount, stype, whole.get());
      std::memcpy(t + bb * i, whole.get(), bb);
      err = MPI_ERR_TRUNCATE;
    } else {
      pack_any(elem(sendbuf, static_cast<std::ptrdiff_t>(to) * scount, stype), scount, stype, t + bb * i);
    }
  }
  for (int k = 1; k < n; k <<= 1) {
    int m = 0;
    for (int i = k; i < n; ++i)
      if (i & k) std::memcpy(out + bb * m++, t + bb * i, bb);
    if (int e = exchange(out, static_cast<int>(bb) * m, MPI_BYTE, (r + k) % n, in, static_cast<int>(bb) * m, MPI_BYTE,
                         (r - k + n) % n, c, tag))
      return e;
    m = 0;
    for (int i = k; i < n; ++i)
      if (i & k) std::memcpy(t + bb * i, in + bb * m++, bb);
  }
  for (int i = 0; i < n; ++i)
    unpack_any(t + bb * i, bb, elem(recvbuf, static_cast<std::ptrdiff_t>((r - i + n) % n) * rcount, rtype), rcount,
               rtype);
  return err;
}
}  // namespace

int alltoall_plain(const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf, int rcount, MPI_Datatype rtype,
                   Comm& c, int tag) {
  const int n = c.size();
  const std::size_t bb = static_cast<std::size_t>(rcount) * type_size(rtype);
  if (n >= kAlltoallBruckMinRanks && bb > 0 && bb <= kAlltoallBruckMax)  // what every member knows alike
    return alltoall_bruck(sendbuf, scount, stype, recvbuf, rcount, rtype, bb, c, tag);
  const bool pairwise = bb >= kAlltoallPairwiseMin && !crowded();
  return alltoall_alg(
      sendbuf == MPI_IN_PLACE, pairwise,
      [&](int i) { return Block{elem(sendbuf, static_cast<std::ptrdiff_t>(i) * scount, stype), scount, stype}; },
      [&](int i) { return Block{elem(recvbuf, static_cast<std::ptrdiff_t>(i) * rcount, rtype), rcount, rtype}; }, c,
      tag);
}

// Scan (exclusive: Exscan): recursive doubling. `partial` holds the reduction of this
// rank's aligned block of 2^k ranks, `result` that of the ranks up to this one.
int scan_alg(const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op, bool exclusive, Comm& c,
             int tag) {
  const int n = c.size(), r = c.rank;
  const bool commutative = op_commutative(op);
  Scratch sp(count, t), st(count, t);
  void* partial = sp.get();
  void* tmp = st.get();
  copy_elems(sendbuf, partial, count, t);
  bool have_result = !exclusive;
  if (!exclusive && sendbuf != recvbuf) copy_elems(sendbuf, recvbuf, count, t);
  int e = MPI_SUCCESS;
  for (int mask = 1; mask < n; mask <<= 1) {
    const int dst = r ^ mask;
    if (dst >= n) continue;
    if ((e = exchange(partial, count, t, dst, tmp, count, t, dst, c, tag))) return e;
    if (dst < r) {
      // tmp: the lower block, wholly before this rank.
      if (have_result) {
        if ((e = op_apply(op, tmp, recvbuf, count, t))) return e;
      } else {
        copy_elems(tmp, recvbuf, count, t);
        have_result = true;
      }
      if ((e = op_apply(op, tmp, partial, count, t))) return e;
    } else {
      if ((e = combine(op, commutative, partial, tmp, false, count, t))) return e;
    }
  }
  return MPI_SUCCESS;
}

}  // namespace coll

using namespace coll;

// --- the runtime's own uses (comm/) -------------------------------------------------------
int coll_barrier(Comm& c, int tag) { return barrier_alg(c, tag); }
int coll_bcast(void* buf, int count, MPI_Datatype t, int root, Comm& c, int tag) {
  return bcast_alg(buf, count, t, root, c, tag);
}
int coll_allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op, Comm& c, int tag) {
  return allreduce_host(sendbuf, recvbuf, count, t, op, c, tag);
}
int coll_allgather(const void* sendbuf, int count, MPI_Datatype t, void* recvbuf, Comm& c, int tag) {
  return allgather_alg(sendbuf, count, t, recvbuf, count, nullptr, nullptr, t, c, tag);
}

}  // namespace ampi
