// Collectives, blocking and nonblocking, over the runtime's point-to-point (internal.h).
// Every message travels on the communicator's collective context (Ctx::Coll), never the
// user's, with a tag from coll_tag: one per collective call, the same on every member, so
// a nonblocking collective still in flight never matches the next one's messages.
//
// Algorithms (n members):
//   Barrier          dissemination: ceil(log2 n) rounds of one zero-byte message each way
//   Bcast            binomial tree rooted at root
//   Reduce           binomial tree; a non-commutative op combines in rank order on a tree
//                    rooted at 0, which then sends the result to root
//   Allreduce        recursive doubling; n not a power of two: the first 2*(n - 2^k) ranks
//                    pair up first (the even one hands its data to the odd one and gets the
//                    result at the end); combines lower ranks' data on the left, so
//                    non-commutative ops are right
//   Gather(v), Scatter(v), Allgather(v), Alltoall(v,w)   direct: every message posted at once
//   Reduce_scatter(_block)   Reduce to rank 0, then Scatterv
//   Scan, Exscan     recursive doubling (partial results of aligned rank blocks)
// Nonblocking collectives run the blocking algorithm in a user-level thread of the rank
// (start_task) with a copy of the communicator, so a Comm_free meanwhile does no harm.
//
// Reductions work on temporaries laid out as the datatype says (what op_apply reads);
// the point-to-point layer packs and unpacks. Device (CUDA) buffers: data moves through the
// point-to-point layer, which handles device memory; reductions compute on the host, so
// Reduce/Allreduce stage device buffers through host temporaries (see `on_device`).
#include "coll/coll.h"

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
int reduce_alg(const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op, int root, Comm& c, int tag) {
  const int n = c.size(), r = c.rank;
  if (n == 1) {
    copy_elems(sendbuf, recvbuf, count, t);
    return MPI_SUCCESS;
  }
  const bool commutative = op_commutative(op);
  const int troot = commutative ? root : 0;  // rank order needs a tree whose blocks are rank ranges
  const int vr = (r - troot + n) % n;
  Scratch sa(count, t), sb(count, t);
  void* acc = sa.get();
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
    copy_elems(acc, recvbuf, count, t);
    return MPI_SUCCESS;
  }
  return send(acc, count, t, root, tag, c, Ctx::Coll);
}

int reduce_root_recv(void* recvbuf, int count, MPI_Datatype t, MPI_Op op, int root, Comm& c, int tag) {
  // A non-commutative op reduces on a tree rooted at 0; a root elsewhere receives from 0.
  if (op_commutative(op) || root == 0 || c.rank != root || c.size() == 1) return MPI_SUCCESS;
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
  const bool commutative = op_commutative(op);
  int pof2 = 1;
  while (pof2 * 2 <= n) pof2 *= 2;
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
      MPI_Request q[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
      e = irecv(tmp, count, t, dst, tag, c, Ctx::Coll, &q[0]);
      if (!e) e = isend(acc, count, t, dst, tag, c, Ctx::Coll, &q[1]);
      const int w = wait_all(2, q, nullptr);
      if (e || (e = w)) return e;
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
    MPI_Request q[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int e = irecv(nullptr, 0, MPI_BYTE, (r - d % n + n) % n, tag, c, Ctx::Coll, &q[0]);
    if (!e) e = isend(nullptr, 0, MPI_BYTE, (r + d) % n, tag, c, Ctx::Coll, &q[1]);
    const int w = wait_all(2, q, nullptr);
    if (e || (e = w)) return e;
  }
  return MPI_SUCCESS;
}

int bcast_alg(void* buf, int count, MPI_Datatype t, int root, Comm& c, int tag) {
  const int n = c.size();
  if (n == 1 || count == 0) return MPI_SUCCESS;
  const int vr = (c.rank - root + n) % n;
  int mask = 1;
  for (; mask < n; mask <<= 1) {
    if (vr & mask) {
      if (int e = recv(buf, count, t, (vr - mask + root) % n, tag, c, Ctx::Coll, nullptr)) return e;
      break;
    }
  }
  Requests q(32);
  int e = MPI_SUCCESS;
  for (mask >>= 1; mask > 0 && !e; mask >>= 1)
    if (vr + mask < n) e = isend(buf, count, t, (vr + mask + root) % n, tag, c, Ctx::Coll, q.next());
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

// Allgather(v): every member sends its block to every other; all posted at once.
int allgather_alg(const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf, int rcount, const int* rcounts,
                  const int* displs, MPI_Datatype rtype, Comm& c, int tag) {
  const int n = c.size(), r = c.rank;
  auto block = [&](int i) { return elem(recvbuf, displs ? displs[i] : static_cast<std::ptrdiff_t>(i) * rcount, rtype); };
  auto count_of = [&](int i) { return rcounts ? rcounts[i] : rcount; };
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const void* mine = in_place ? block(r) : sendbuf;
  const int mine_count = in_place ? count_of(r) : scount;
  const MPI_Datatype mine_type = in_place ? rtype : stype;
  Requests q(2 * static_cast<std::size_t>(n));
  int e = MPI_SUCCESS;
  for (int i = 0; i < n && !e; ++i)
    if (i != r) e = irecv(block(i), count_of(i), rtype, i, tag, c, Ctx::Coll, q.next());
  // Send to r+1, r+2, ... so that not everyone sends to rank 0 first.
  for (int k = 1; k < n && !e; ++k)
    e = isend(mine, mine_count, mine_type, (r + k) % n, tag, c, Ctx::Coll, q.next());
  if (!e && !in_place) copy_typed(sendbuf, scount, stype, block(r), count_of(r), rtype);
  const int w = q.wait();
  return e ? e : w;
}


int alltoall_plain(const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf, int rcount, MPI_Datatype rtype,
                   Comm& c, int tag) {
  return alltoall_alg(
      sendbuf == MPI_IN_PLACE,
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
    MPI_Request q[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    e = irecv(tmp, count, t, dst, tag, c, Ctx::Coll, &q[0]);
    if (!e) e = isend(partial, count, t, dst, tag, c, Ctx::Coll, &q[1]);
    const int w = wait_all(2, q, nullptr);
    if (e || (e = w)) return e;
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
