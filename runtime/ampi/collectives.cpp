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
#include "internal.h"

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

namespace {

// --- device buffers ------------------------------------------------------------------------
// HOST STAGING: is_device (p2p.cpp) finds device buffers; the memory-type query is
// cached and cheap for host memory. Device data reaches the host temporaries, and the
// results go back, as messages to this rank itself (self_copy): the point-to-point layer
// moves device memory, so no CUDA call is needed here.
bool on_device(const void* p) { return p != MPI_IN_PLACE && is_device(p); }

// --- layout temporaries --------------------------------------------------------------------
// Bytes spanned by `count` elements of t, and where they start relative to the buffer.
struct Span {
  std::ptrdiff_t lo = 0;
  std::size_t bytes = 0;
};
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

// Room for `count` elements of t laid out as the datatype says; get() is the buffer address
// to pass with (count, t). Small ones live inline (an 8-byte Allreduce allocates nothing).
class Scratch {
 public:
  Scratch() = default;
  Scratch(int count, MPI_Datatype t) { reset(count, t); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void reset(int count, MPI_Datatype t) {
    const Span s = layout_span(count, t);
    char* mem = inline_;
    if (s.bytes > sizeof(inline_)) {
      heap_.reset(new char[s.bytes]);
      mem = heap_.get();
    }
    base_ = mem - s.lo;
  }
  void* get() const { return base_; }

 private:
  alignas(16) char inline_[128];
  std::unique_ptr<char[]> heap_;
  char* base_ = inline_;
};

char* elem(void* buf, std::ptrdiff_t i, MPI_Datatype t) { return static_cast<char*>(buf) + i * type_extent(t); }
const char* elem(const void* buf, std::ptrdiff_t i, MPI_Datatype t) {
  return static_cast<const char*>(buf) + i * type_extent(t);
}

// Copies scount elements of stype at src into rcount elements of rtype at dst (the type
// signatures agree, as MPI requires; the receive side may be longer).
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

// A request slot array: small collectives need no allocation.
class Requests {
 public:
  explicit Requests(std::size_t n) {
    if (n > kInline) heap_.resize(n);
    data_ = n > kInline ? heap_.data() : inline_;
  }
  Requests(const Requests&) = delete;
  Requests& operator=(const Requests&) = delete;
  MPI_Request* next() { return &data_[used_++]; }
  int wait() {
    const int rc = wait_all(used_, data_, nullptr);
    used_ = 0;
    return rc;
  }

 private:
  static constexpr std::size_t kInline = 64;
  MPI_Request inline_[kInline];
  std::vector<MPI_Request> heap_;
  MPI_Request* data_;
  int used_ = 0;
};

// Moves count elements between two buffers of the calling rank through the point-to-point
// layer (which knows device memory): the host staging of device buffers.
int self_copy(const void* src, void* dst, int count, MPI_Datatype t, Comm& c, int tag) {
  if (count <= 0) return MPI_SUCCESS;
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

// Alltoall(v,w): block i of the send side goes to member i, block i of the receive side
// comes from member i. Offsets in bytes. MPI_IN_PLACE: the send blocks are copies of the
// receive blocks, taken before anything arrives.
struct Block {
  const char* ptr;
  int count;
  MPI_Datatype type;
};
template <class SendOf, class RecvOf>
int alltoall_alg(bool in_place, SendOf send_of, RecvOf recv_of, Comm& c, int tag) {
  const int n = c.size(), r = c.rank;
  std::vector<std::unique_ptr<Scratch>> copies;
  if (in_place) copies.resize(static_cast<std::size_t>(n));
  auto sblock = [&](int i) -> Block {
    if (!in_place) return send_of(i);
    Block b = recv_of(i);
    return {static_cast<const char*>(copies[static_cast<std::size_t>(i)]->get()), b.count, b.type};
  };
  if (in_place) {
    for (int i = 0; i < n; ++i) {
      if (i == r) continue;
      Block b = recv_of(i);
      copies[static_cast<std::size_t>(i)] = std::make_unique<Scratch>(b.count, b.type);
      copy_elems(b.ptr, copies[static_cast<std::size_t>(i)]->get(), b.count, b.type);
    }
  }
  Requests q(2 * static_cast<std::size_t>(n));
  int e = MPI_SUCCESS;
  for (int k = 1; k < n && !e; ++k) {
    const int i = (r - k + n) % n;
    Block b = recv_of(i);
    e = irecv(const_cast<char*>(b.ptr), b.count, b.type, i, tag, c, Ctx::Coll, q.next());
  }
  for (int k = 1; k < n && !e; ++k) {
    const int i = (r + k) % n;
    Block b = sblock(i);
    e = isend(b.ptr, b.count, b.type, i, tag, c, Ctx::Coll, q.next());
  }
  if (!e && !in_place) {
    Block s = send_of(r), d = recv_of(r);
    copy_typed(s.ptr, s.count, s.type, const_cast<char*>(d.ptr), d.count, d.type);
  }
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

// --- argument checks -----------------------------------------------------------------------
int check_count(MPI_Comm comm, const char* fn, const char* what, int count) {
  if (count < 0) return error(comm, MPI_ERR_COUNT, fn, "%s is negative (%d)", what, count);
  return MPI_SUCCESS;
}
int check_type(MPI_Comm comm, const char* fn, const char* what, MPI_Datatype t) {
  if (!type_valid(t)) return error(comm, MPI_ERR_TYPE, fn, "%s is not a valid datatype (%d)", what, t);
  if (!type_committed(t))
    return error(comm, MPI_ERR_TYPE, fn, "%s (%s) is not committed", what, type_name(t).c_str());
  return MPI_SUCCESS;
}
int check_op(MPI_Comm comm, const char* fn, MPI_Op op) {
  if (!op_valid(op)) return error(comm, MPI_ERR_OP, fn, "invalid reduction operation %d", op);
  return MPI_SUCCESS;
}
int check_root(MPI_Comm comm, const char* fn, const Comm& c, int root) {
  if (root < 0 || root >= c.size())
    return error(comm, MPI_ERR_ROOT, fn, "root %d is out of range (communicator size %d)", root, c.size());
  return MPI_SUCCESS;
}
int check_counts(MPI_Comm comm, const char* fn, const char* what, const int* counts, int n) {
  if (n > 0 && !counts) return error(comm, MPI_ERR_ARG, fn, "%s is NULL", what);
  for (int i = 0; i < n; ++i)
    if (counts[i] < 0) return error(comm, MPI_ERR_COUNT, fn, "%s[%d] is negative (%d)", what, i, counts[i]);
  return MPI_SUCCESS;
}
int check_ptr(MPI_Comm comm, const char* fn, const char* what, const void* p) {
  if (!p) return error(comm, MPI_ERR_ARG, fn, "%s is NULL", what);
  return MPI_SUCCESS;
}
int no_in_place(MPI_Comm comm, const char* fn, const char* what, const void* p) {
  if (p == MPI_IN_PLACE) return error(comm, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE is not allowed as %s here", what);
  return MPI_SUCCESS;
}
int check_alias(MPI_Comm comm, const char* fn, const void* sendbuf, const void* recvbuf, int count) {
  if (count > 0 && sendbuf == recvbuf && sendbuf != MPI_BOTTOM)
    return error(comm, MPI_ERR_BUFFER, fn, "sendbuf and recvbuf are the same buffer (pass MPI_IN_PLACE as sendbuf)");
  return MPI_SUCCESS;
}
// Reports an error the algorithm returned.
int failed(MPI_Comm comm, const char* fn, int e, MPI_Op op, MPI_Datatype t) {
  if (e == MPI_SUCCESS) return e;
  if (e == MPI_ERR_OP)
    return error(comm, e, fn, "reduction operation %d is not defined for datatype %s", op, type_name(t).c_str());
  return error(comm, e, fn, "the collective's communication failed");
}

Comm* comm_or_null(MPI_Comm comm) { return comm_get(comm); }
int bad_comm(MPI_Comm comm, const char* fn) {
  if (comm == MPI_COMM_NULL) return error(comm, MPI_ERR_COMM, fn, "the communicator is MPI_COMM_NULL");
  return error(comm, MPI_ERR_COMM, fn, "invalid communicator %d", comm);
}
int check_request(MPI_Comm comm, const char* fn, MPI_Request* req) { return check_ptr(comm, fn, "request", req); }

// Runs `f` (a callable returning an MPI code) as a nonblocking collective's task.
template <class F>
MPI_Request spawn(F f) {
  auto* p = new F(std::move(f));
  return start_task(+[](void* arg) -> int {
    std::unique_ptr<F> g(static_cast<F*>(arg));
    return (*g)();
  }, p);
}

// --- argument checks shared by a blocking collective and its nonblocking twin -------------
int args_bcast(MPI_Comm comm, const char* fn, Comm*& c, int count, MPI_Datatype t, int root) {
  if (!(c = comm_or_null(comm))) return bad_comm(comm, fn);
  if (int e = check_count(comm, fn, "count", count)) return e;
  if (int e = check_type(comm, fn, "datatype", t)) return e;
  return check_root(comm, fn, *c, root);
}

int args_reduce(MPI_Comm comm, const char* fn, Comm*& c, const void* sendbuf, void* recvbuf, int count,
                MPI_Datatype t, MPI_Op op, int root, bool rooted) {
  if (!(c = comm_or_null(comm))) return bad_comm(comm, fn);
  if (int e = check_count(comm, fn, "count", count)) return e;
  if (int e = check_type(comm, fn, "datatype", t)) return e;
  if (int e = check_op(comm, fn, op)) return e;
  if (rooted) {
    if (int e = check_root(comm, fn, *c, root)) return e;
    if (c->rank != root) {
      if (int e = no_in_place(comm, fn, "sendbuf on a rank other than the root", sendbuf)) return e;
      return MPI_SUCCESS;
    }
  }
  if (int e = no_in_place(comm, fn, "recvbuf", recvbuf)) return e;
  return check_alias(comm, fn, sendbuf, recvbuf, count);
}

// The names that messages give one side's arguments.
struct SideNames {
  const char* buf;
  const char* buf_off_root;
  const char* count;
  const char* counts;
  const char* type;
};
constexpr SideNames kSendSide{"sendbuf", "sendbuf on a rank other than the root", "sendcount", "sendcounts",
                              "sendtype"};
constexpr SideNames kRecvSide{"recvbuf", "recvbuf on a rank other than the root", "recvcount", "recvcounts",
                              "recvtype"};

// The side of a rank's own block (the send side of a gather, the receive side of a scatter).
int check_block(MPI_Comm comm, const char* fn, const SideNames& n, int count, MPI_Datatype t) {
  if (int e = check_count(comm, fn, n.count, count)) return e;
  return check_type(comm, fn, n.type, t);
}

// The side of a block per rank (`size` of them): counts and displs (`vector`) or one count.
int check_blocks(MPI_Comm comm, const char* fn, const SideNames& n, const void* buf, int count, const int* counts,
                 const int* displs, MPI_Datatype t, int size, bool vector) {
  if (int e = no_in_place(comm, fn, n.buf, buf)) return e;
  if (vector) {
    if (int e = check_counts(comm, fn, n.counts, counts, size)) return e;
    if (int e = check_ptr(comm, fn, "displs", displs)) return e;
  } else if (int e = check_count(comm, fn, n.count, count)) {
    return e;
  }
  return check_type(comm, fn, n.type, t);
}

// Gather and scatter are mirror images: `one` is the side of a rank's own block, which the
// root may pass as MPI_IN_PLACE; `all` the root's side of a block per rank.
int args_rooted(MPI_Comm comm, const char* fn, Comm*& c, int root, bool vector, const SideNames& one,
                const void* one_buf, int one_count, MPI_Datatype one_type, const SideNames& all, const void* all_buf,
                int all_count, const int* all_counts, const int* displs, MPI_Datatype all_type) {
  if (!(c = comm_or_null(comm))) return bad_comm(comm, fn);
  if (int e = check_root(comm, fn, *c, root)) return e;
  const bool is_root = c->rank == root;
  if (!is_root || one_buf != MPI_IN_PLACE) {
    if (int e = no_in_place(comm, fn, one.buf_off_root, is_root ? nullptr : one_buf)) return e;
    if (int e = check_block(comm, fn, one, one_count, one_type)) return e;
  }
  if (!is_root) return MPI_SUCCESS;
  return check_blocks(comm, fn, all, all_buf, all_count, all_counts, displs, all_type, c->size(), vector);
}

int args_gather(MPI_Comm comm, const char* fn, Comm*& c, const void* sendbuf, int scount, MPI_Datatype stype,
                void* recvbuf, int rcount, const int* rcounts, const int* displs, MPI_Datatype rtype, int root,
                bool vector) {
  return args_rooted(comm, fn, c, root, vector, kSendSide, sendbuf, scount, stype, kRecvSide, recvbuf, rcount,
                     rcounts, displs, rtype);
}

int args_scatter(MPI_Comm comm, const char* fn, Comm*& c, const void* sendbuf, int scount, const int* scounts,
                 const int* displs, MPI_Datatype stype, void* recvbuf, int rcount, MPI_Datatype rtype, int root,
                 bool vector) {
  return args_rooted(comm, fn, c, root, vector, kRecvSide, recvbuf, rcount, rtype, kSendSide, sendbuf, scount,
                     scounts, displs, stype);
}

int args_allgather(MPI_Comm comm, const char* fn, Comm*& c, const void* sendbuf, int scount, MPI_Datatype stype,
                   void* recvbuf, int rcount, const int* rcounts, const int* displs, MPI_Datatype rtype,
                   bool vector) {
  if (!(c = comm_or_null(comm))) return bad_comm(comm, fn);
  if (sendbuf != MPI_IN_PLACE) {
    if (int e = check_block(comm, fn, kSendSide, scount, stype)) return e;
  }
  return check_blocks(comm, fn, kRecvSide, recvbuf, rcount, rcounts, displs, rtype, c->size(), vector);
}

// Alltoall checks what Allgather does.
int args_alltoall(MPI_Comm comm, const char* fn, Comm*& c, const void* sendbuf, int scount, MPI_Datatype stype,
                  void* recvbuf, int rcount, MPI_Datatype rtype) {
  return args_allgather(comm, fn, c, sendbuf, scount, stype, recvbuf, rcount, nullptr, nullptr, rtype, false);
}

// One side (`send` or receive) of Alltoallv and Alltoallw: counts and displacements per rank
// and one type (v) or a type per rank (w).
int check_side_vw(MPI_Comm comm, const char* fn, bool send, int n, const int* counts, const int* displs,
                  MPI_Datatype t, const MPI_Datatype* types, bool w) {
  if (int e = check_counts(comm, fn, send ? "sendcounts" : "recvcounts", counts, n)) return e;
  if (int e = check_ptr(comm, fn, send ? "sdispls" : "rdispls", displs)) return e;
  if (!w) return check_type(comm, fn, send ? "sendtype" : "recvtype", t);
  if (int e = check_ptr(comm, fn, send ? "sendtypes" : "recvtypes", types)) return e;
  for (int i = 0; i < n; ++i)
    if (int e = check_type(comm, fn, send ? "sendtypes[i]" : "recvtypes[i]", types[i])) return e;
  return MPI_SUCCESS;
}

// Reduce_scatter(_block) after the checks: the reduction of `count` elements to rank 0, then
// a scatter of recvcounts[i] elements (or recvcount each, when recvcounts is null).
int reduce_scatter_run(MPI_Comm comm, const char* fn, Comm& c, const void* sendbuf, void* recvbuf, int count,
                       int recvcount, const int* recvcounts, const int* displs, MPI_Datatype datatype, MPI_Op op) {
  if (int e = check_alias(comm, fn, sendbuf, recvbuf, count)) return e;
  const int tag_reduce = coll_tag(c), tag_scatter = coll_tag(c);
  const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  Scratch full(c.rank == 0 ? count : 0, datatype);
  int e = reduce_host(in, full.get(), count, datatype, op, 0, c, tag_reduce);
  if (!e)
    e = scatter_alg(full.get(), recvcount, recvcounts, displs, datatype, recvbuf,
                    recvcounts ? recvcounts[c.rank] : recvcount, datatype, 0, c, tag_scatter);
  return failed(comm, fn, e, op, datatype);
}

// The blocking Gather(v), Scatter(v) and Allgather(v) (`vector`: the v variant).
int gather_call(MPI_Comm comm, const char* fn, const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf,
                int rcount, const int* rcounts, const int* displs, MPI_Datatype rtype, int root, bool vector) {
  Comm* c = nullptr;
  if (int e = args_gather(comm, fn, c, sendbuf, scount, stype, recvbuf, rcount, rcounts, displs, rtype, root, vector))
    return e;
  const int e = gather_alg(sendbuf, scount, stype, recvbuf, rcount, rcounts, displs, rtype, root, *c, coll_tag(*c));
  return failed(comm, fn, e, MPI_OP_NULL, rtype);
}
int scatter_call(MPI_Comm comm, const char* fn, const void* sendbuf, int scount, const int* scounts, const int* displs,
                 MPI_Datatype stype, void* recvbuf, int rcount, MPI_Datatype rtype, int root, bool vector) {
  Comm* c = nullptr;
  if (int e = args_scatter(comm, fn, c, sendbuf, scount, scounts, displs, stype, recvbuf, rcount, rtype, root, vector))
    return e;
  const int e = scatter_alg(sendbuf, scount, scounts, displs, stype, recvbuf, rcount, rtype, root, *c, coll_tag(*c));
  return failed(comm, fn, e, MPI_OP_NULL, stype);
}
int allgather_call(MPI_Comm comm, const char* fn, const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf,
                   int rcount, const int* rcounts, const int* displs, MPI_Datatype rtype, bool vector) {
  Comm* c = nullptr;
  if (int e = args_allgather(comm, fn, c, sendbuf, scount, stype, recvbuf, rcount, rcounts, displs, rtype, vector))
    return e;
  const int e = allgather_alg(sendbuf, scount, stype, recvbuf, rcount, rcounts, displs, rtype, *c, coll_tag(*c));
  return failed(comm, fn, e, MPI_OP_NULL, rtype);
}

// Scan and Exscan (`exclusive`).
int scan_run(MPI_Comm comm, const char* fn, const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
             MPI_Op op, bool exclusive) {
  Comm* c = nullptr;
  if (int e = args_reduce(comm, fn, c, sendbuf, recvbuf, count, datatype, op, 0, false)) return e;
  if (on_device(sendbuf) || on_device(recvbuf))  // scan_alg computes on the buffers themselves
    return error(comm, MPI_ERR_BUFFER, fn, "device (CUDA) buffers are not supported by %s yet", fn);
  const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  // Exscan in place: the input must survive until it is sent; scan_alg copies it first.
  const int e = scan_alg(in, recvbuf, count, datatype, op, exclusive, *c, coll_tag(*c));
  return failed(comm, fn, e, op, datatype);
}

}  // namespace

// --- the runtime's own uses (comm.cpp) ----------------------------------------------------
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

using namespace ampi;

#pragma GCC visibility push(default)
extern "C" {

// ---- blocking ----------------------------------------------------------------------------
int PMPI_Barrier(MPI_Comm comm) {
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, "MPI_Barrier");
  return failed(comm, "MPI_Barrier", barrier_alg(*c, coll_tag(*c)), MPI_OP_NULL, MPI_DATATYPE_NULL);
}

int PMPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  Comm* c = nullptr;
  if (int e = args_bcast(comm, "MPI_Bcast", c, count, datatype, root)) return e;
  if (int e = no_in_place(comm, "MPI_Bcast", "buffer", buffer)) return e;
  return failed(comm, "MPI_Bcast", bcast_alg(buffer, count, datatype, root, *c, coll_tag(*c)), MPI_OP_NULL, datatype);
}

int PMPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                MPI_Comm comm) {
  Comm* c = nullptr;
  if (int e = args_reduce(comm, "MPI_Reduce", c, sendbuf, recvbuf, count, datatype, op, root, true)) return e;
  const int e = reduce_run(sendbuf, recvbuf, count, datatype, op, root, *c, coll_tag(*c));
  return failed(comm, "MPI_Reduce", e, op, datatype);
}

int PMPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  Comm* c = nullptr;
  if (int e = args_reduce(comm, "MPI_Allreduce", c, sendbuf, recvbuf, count, datatype, op, 0, false)) return e;
  const int e = allreduce_run(sendbuf, recvbuf, count, datatype, op, *c, coll_tag(*c));
  return failed(comm, "MPI_Allreduce", e, op, datatype);
}

int PMPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return gather_call(comm, "MPI_Gather", sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr, nullptr, recvtype,
                     root, false);
}

int PMPI_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                 const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return gather_call(comm, "MPI_Gatherv", sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs, recvtype, root,
                     true);
}

int PMPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return scatter_call(comm, "MPI_Scatter", sendbuf, sendcount, nullptr, nullptr, sendtype, recvbuf, recvcount, recvtype,
                      root, false);
}

int PMPI_Scatterv(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                  void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return scatter_call(comm, "MPI_Scatterv", sendbuf, 0, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
                      root, true);
}

int PMPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm) {
  return allgather_call(comm, "MPI_Allgather", sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr, nullptr,
                        recvtype, false);
}

int PMPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                    const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  return allgather_call(comm, "MPI_Allgatherv", sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs,
                        recvtype, true);
}

int PMPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  Comm* c = nullptr;
  if (int e = args_alltoall(comm, "MPI_Alltoall", c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype))
    return e;
  const int e = alltoall_plain(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, *c, coll_tag(*c));
  return failed(comm, "MPI_Alltoall", e, MPI_OP_NULL, recvtype);
}

int PMPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  const char* fn = "MPI_Alltoallv";
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (!in_place) {
    if (int e = check_side_vw(comm, fn, true, c->size(), sendcounts, sdispls, sendtype, nullptr, false)) return e;
  }
  if (int e = no_in_place(comm, fn, "recvbuf", recvbuf)) return e;
  if (int e = check_side_vw(comm, fn, false, c->size(), recvcounts, rdispls, recvtype, nullptr, false)) return e;
  const int e = alltoall_alg(
      in_place, [&](int i) { return Block{elem(sendbuf, sdispls[i], sendtype), sendcounts[i], sendtype}; },
      [&](int i) { return Block{elem(recvbuf, rdispls[i], recvtype), recvcounts[i], recvtype}; }, *c, coll_tag(*c));
  return failed(comm, fn, e, MPI_OP_NULL, recvtype);
}

int PMPI_Alltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[],
                   void* recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[],
                   MPI_Comm comm) {
  const char* fn = "MPI_Alltoallw";
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  const int n = c->size();
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (!in_place) {
    if (int e = check_side_vw(comm, fn, true, n, sendcounts, sdispls, MPI_DATATYPE_NULL, sendtypes, true)) return e;
  }
  if (int e = no_in_place(comm, fn, "recvbuf", recvbuf)) return e;
  if (int e = check_side_vw(comm, fn, false, n, recvcounts, rdispls, MPI_DATATYPE_NULL, recvtypes, true)) return e;
  // Displacements are in bytes.
  const int e = alltoall_alg(
      in_place,
      [&](int i) { return Block{static_cast<const char*>(sendbuf) + sdispls[i], sendcounts[i], sendtypes[i]}; },
      [&](int i) { return Block{static_cast<const char*>(recvbuf) + rdispls[i], recvcounts[i], recvtypes[i]}; }, *c,
      coll_tag(*c));
  return failed(comm, fn, e, MPI_OP_NULL, MPI_DATATYPE_NULL);
}

int PMPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                        MPI_Comm comm) {
  const char* fn = "MPI_Reduce_scatter";
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  const int n = c->size();
  if (int e = check_counts(comm, fn, "recvcounts", recvcounts, n)) return e;
  if (int e = check_type(comm, fn, "datatype", datatype)) return e;
  if (int e = check_op(comm, fn, op)) return e;
  if (int e = no_in_place(comm, fn, "recvbuf", recvbuf)) return e;
  std::vector<int> displs(static_cast<std::size_t>(n));
  long long total = 0;
  for (int i = 0; i < n; ++i) {
    displs[static_cast<std::size_t>(i)] = static_cast<int>(total);
    total += recvcounts[i];
  }
  if (total > 0x7fffffff) return error(comm, MPI_ERR_COUNT, fn, "the sum of recvcounts (%lld) is too large", total);
  return reduce_scatter_run(comm, fn, *c, sendbuf, recvbuf, static_cast<int>(total), 0, recvcounts, displs.data(),
                            datatype, op);
}

int PMPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm comm) {
  const char* fn = "MPI_Reduce_scatter_block";
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  const int n = c->size();
  if (int e = check_count(comm, fn, "recvcount", recvcount)) return e;
  if (int e = check_type(comm, fn, "datatype", datatype)) return e;
  if (int e = check_op(comm, fn, op)) return e;
  if (int e = no_in_place(comm, fn, "recvbuf", recvbuf)) return e;
  const long long total = static_cast<long long>(recvcount) * n;
  if (total > 0x7fffffff) return error(comm, MPI_ERR_COUNT, fn, "recvcount * size (%lld) is too large", total);
  return reduce_scatter_run(comm, fn, *c, sendbuf, recvbuf, static_cast<int>(total), recvcount, nullptr, nullptr,
                            datatype, op);
}

int PMPI_Scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return scan_run(comm, "MPI_Scan", sendbuf, recvbuf, count, datatype, op, false);
}

int PMPI_Exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return scan_run(comm, "MPI_Exscan", sendbuf, recvbuf, count, datatype, op, true);
}

// ---- nonblocking: the blocking algorithm in a thread of the rank -------------------------
int PMPI_Ibarrier(MPI_Comm comm, MPI_Request* request) {
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, "MPI_Ibarrier");
  if (int e = check_request(comm, "MPI_Ibarrier", request)) return e;
  *request = spawn([cc = *c, tag = coll_tag(*c)]() mutable { return barrier_alg(cc, tag); });
  return MPI_SUCCESS;
}

int PMPI_Ibcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request* request) {
  Comm* c = nullptr;
  if (int e = args_bcast(comm, "MPI_Ibcast", c, count, datatype, root)) return e;
  if (int e = no_in_place(comm, "MPI_Ibcast", "buffer", buffer)) return e;
  if (int e = check_request(comm, "MPI_Ibcast", request)) return e;
  *request = spawn([=, cc = *c, tag = coll_tag(*c)]() mutable { return bcast_alg(buffer, count, datatype, root, cc, tag); });
  return MPI_SUCCESS;
}

int PMPI_Ireduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                 MPI_Comm comm, MPI_Request* request) {
  Comm* c = nullptr;
  if (int e = args_reduce(comm, "MPI_Ireduce", c, sendbuf, recvbuf, count, datatype, op, root, true)) return e;
  if (int e = check_request(comm, "MPI_Ireduce", request)) return e;
  *request = spawn([=, cc = *c, tag = coll_tag(*c)]() mutable {
    return reduce_run(sendbuf, recvbuf, count, datatype, op, root, cc, tag);
  });
  return MPI_SUCCESS;
}

int PMPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                    MPI_Request* request) {
  Comm* c = nullptr;
  if (int e = args_reduce(comm, "MPI_Iallreduce", c, sendbuf, recvbuf, count, datatype, op, 0, false)) return e;
  if (int e = check_request(comm, "MPI_Iallreduce", request)) return e;
  *request = spawn([=, cc = *c, tag = coll_tag(*c)]() mutable {
    return allreduce_run(sendbuf, recvbuf, count, datatype, op, cc, tag);
  });
  return MPI_SUCCESS;
}

int PMPI_Igather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
  Comm* c = nullptr;
  if (int e = args_gather(comm, "MPI_Igather", c, sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr, nullptr,
                          recvtype, root, false))
    return e;
  if (int e = check_request(comm, "MPI_Igather", request)) return e;
  *request = spawn([=, cc = *c, tag = coll_tag(*c)]() mutable {
    return gather_alg(sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr, nullptr, recvtype, root, cc, tag);
  });
  return MPI_SUCCESS;
}

int PMPI_Iscatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
  Comm* c = nullptr;
  if (int e = args_scatter(comm, "MPI_Iscatter", c, sendbuf, sendcount, nullptr, nullptr, sendtype, recvbuf,
                           recvcount, recvtype, root, false))
    return e;
  if (int e = check_request(comm, "MPI_Iscatter", request)) return e;
  *request = spawn([=, cc = *c, tag = coll_tag(*c)]() mutable {
    return scatter_alg(sendbuf, sendcount, nullptr, nullptr, sendtype, recvbuf, recvcount, recvtype, root, cc, tag);
  });
  return MPI_SUCCESS;
}

int PMPI_Iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  Comm* c = nullptr;
  if (int e = args_allgather(comm, "MPI_Iallgather", c, sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr,
                             nullptr, recvtype, false))
    return e;
  if (int e = check_request(comm, "MPI_Iallgather", request)) return e;
  *request = spawn([=, cc = *c, tag = coll_tag(*c)]() mutable {
    return allgather_alg(sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr, nullptr, recvtype, cc, tag);
  });
  return MPI_SUCCESS;
}

int PMPI_Ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  Comm* c = nullptr;
  if (int e = args_alltoall(comm, "MPI_Ialltoall", c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype))
    return e;
  if (int e = check_request(comm, "MPI_Ialltoall", request)) return e;
  *request = spawn([=, cc = *c, tag = coll_tag(*c)]() mutable {
    return alltoall_plain(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, cc, tag);
  });
  return MPI_SUCCESS;
}


// The v and w variants copy their count, displacement and type arrays: the task may run
// after the call returns (MPI lets the caller reuse nothing before completion, but copies
// cost little next to the messages and keep the task independent of the caller's stack).
int PMPI_Igatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                  const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
  const char* fn = "MPI_Igatherv";
  Comm* c = nullptr;
  if (int e = args_gather(comm, fn, c, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs, recvtype, root,
                          true))
    return e;
  if (int e = check_request(comm, fn, request)) return e;
  std::vector<int> rc, dp;
  if (c->rank == root) {
    rc.assign(recvcounts, recvcounts + c->size());
    dp.assign(displs, displs + c->size());
  }
  *request = spawn([=, rc = std::move(rc), dp = std::move(dp), cc = *c, tag = coll_tag(*c)]() mutable {
    return gather_alg(sendbuf, sendcount, sendtype, recvbuf, 0, rc.empty() ? nullptr : rc.data(),
                      dp.empty() ? nullptr : dp.data(), recvtype, root, cc, tag);
  });
  return MPI_SUCCESS;
}

int PMPI_Iscatterv(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                   void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
  const char* fn = "MPI_Iscatterv";
  Comm* c = nullptr;
  if (int e = args_scatter(comm, fn, c, sendbuf, 0, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                           true))
    return e;
  if (int e = check_request(comm, fn, request)) return e;
  std::vector<int> sc, dp;
  if (c->rank == root) {
    sc.assign(sendcounts, sendcounts + c->size());
    dp.assign(displs, displs + c->size());
  }
  *request = spawn([=, sc = std::move(sc), dp = std::move(dp), cc = *c, tag = coll_tag(*c)]() mutable {
    return scatter_alg(sendbuf, 0, sc.empty() ? nullptr : sc.data(), dp.empty() ? nullptr : dp.data(), sendtype,
                       recvbuf, recvcount, recvtype, root, cc, tag);
  });
  return MPI_SUCCESS;
}

int PMPI_Iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                     const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  const char* fn = "MPI_Iallgatherv";
  Comm* c = nullptr;
  if (int e = args_allgather(comm, fn, c, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs, recvtype,
                             true))
    return e;
  if (int e = check_request(comm, fn, request)) return e;
  std::vector<int> rc(recvcounts, recvcounts + c->size()), dp(displs, displs + c->size());
  *request = spawn([=, rc = std::move(rc), dp = std::move(dp), cc = *c, tag = coll_tag(*c)]() mutable {
    return allgather_alg(sendbuf, sendcount, sendtype, recvbuf, 0, rc.data(), dp.data(), recvtype, cc, tag);
  });
  return MPI_SUCCESS;
}

int PMPI_Ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                    void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                    MPI_Request* request) {
  const char* fn = "MPI_Ialltoallv";
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  const int n = c->size();
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (!in_place) {
    if (int e = check_side_vw(comm, fn, true, n, sendcounts, sdispls, sendtype, nullptr, false)) return e;
  }
  if (int e = no_in_place(comm, fn, "recvbuf", recvbuf)) return e;
  if (int e = check_side_vw(comm, fn, false, n, recvcounts, rdispls, recvtype, nullptr, false)) return e;
  if (int e = check_request(comm, fn, request)) return e;
  std::vector<int> sc, sd, rc(recvcounts, recvcounts + n), rd(rdispls, rdispls + n);
  if (!in_place) {
    sc.assign(sendcounts, sendcounts + n);
    sd.assign(sdispls, sdispls + n);
  }
  *request = spawn([=, sc = std::move(sc), sd = std::move(sd), rc = std::move(rc), rd = std::move(rd), cc = *c,
                    tag = coll_tag(*c)]() mutable {
    const auto u = [](int i) { return static_cast<std::size_t>(i); };
    return alltoall_alg(
        in_place, [&](int i) { return Block{elem(sendbuf, sd[u(i)], sendtype), sc[u(i)], sendtype}; },
        [&](int i) { return Block{elem(recvbuf, rd[u(i)], recvtype), rc[u(i)], recvtype}; }, cc, tag);
  });
  return MPI_SUCCESS;
}

int PMPI_Ialltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[],
                    void* recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[],
                    MPI_Comm comm, MPI_Request* request) {
  const char* fn = "MPI_Ialltoallw";
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  const int n = c->size();
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (!in_place) {
    if (int e = check_side_vw(comm, fn, true, n, sendcounts, sdispls, MPI_DATATYPE_NULL, sendtypes, true)) return e;
  }
  if (int e = no_in_place(comm, fn, "recvbuf", recvbuf)) return e;
  if (int e = check_side_vw(comm, fn, false, n, recvcounts, rdispls, MPI_DATATYPE_NULL, recvtypes, true)) return e;
  if (int e = check_request(comm, fn, request)) return e;
  std::vector<int> sc, sd, rc(recvcounts, recvcounts + n), rd(rdispls, rdispls + n);
  std::vector<MPI_Datatype> st, rt(recvtypes, recvtypes + n);
  if (!in_place) {
    sc.assign(sendcounts, sendcounts + n);
    sd.assign(sdispls, sdispls + n);
    st.assign(sendtypes, sendtypes + n);
  }
  *request = spawn([=, sc = std::move(sc), sd = std::move(sd), st = std::move(st), rc = std::move(rc),
                    rd = std::move(rd), rt = std::move(rt), cc = *c, tag = coll_tag(*c)]() mutable {
    const auto u = [](int i) { return static_cast<std::size_t>(i); };
    // Displacements are in bytes.
    return alltoall_alg(
        in_place, [&](int i) { return Block{static_cast<const char*>(sendbuf) + sd[u(i)], sc[u(i)], st[u(i)]}; },
        [&](int i) { return Block{static_cast<const char*>(recvbuf) + rd[u(i)], rc[u(i)], rt[u(i)]}; }, cc, tag);
  });
  return MPI_SUCCESS;
}

// Ireduce_scatter(_block): the blocking algorithm (reduce to rank 0, then scatter) in a task.
static int ireduce_scatter_start(MPI_Comm comm, const char* fn, Comm& c, const void* sendbuf, void* recvbuf,
                          std::vector<int> counts, MPI_Datatype datatype, MPI_Op op, MPI_Request* request) {
  if (int e = check_type(comm, fn, "datatype", datatype)) return e;
  if (int e = check_op(comm, fn, op)) return e;
  if (int e = no_in_place(comm, fn, "recvbuf", recvbuf)) return e;
  if (int e = check_request(comm, fn, request)) return e;
  std::vector<int> displs(counts.size());
  long long total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    displs[i] = static_cast<int>(total);
    total += counts[i];
  }
  if (total > 0x7fffffff) return error(comm, MPI_ERR_COUNT, fn, "the sum of the counts (%lld) is too large", total);
  if (int e = check_alias(comm, fn, sendbuf, recvbuf, static_cast<int>(total))) return e;
  const int tag_reduce = coll_tag(c), tag_scatter = coll_tag(c);
  *request = spawn([=, counts = std::move(counts), displs = std::move(displs), cc = c]() mutable {
    const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    Scratch full(cc.rank == 0 ? static_cast<int>(total) : 0, datatype);
    int e = reduce_host(in, full.get(), static_cast<int>(total), datatype, op, 0, cc, tag_reduce);
    if (!e)
      e = scatter_alg(full.get(), 0, counts.data(), displs.data(), datatype, recvbuf,
                      counts[static_cast<std::size_t>(cc.rank)], datatype, 0, cc, tag_scatter);
    return e;
  });
  return MPI_SUCCESS;
}

int PMPI_Ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                         MPI_Comm comm, MPI_Request* request) {
  const char* fn = "MPI_Ireduce_scatter";
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  if (int e = check_counts(comm, fn, "recvcounts", recvcounts, c->size())) return e;
  return ireduce_scatter_start(comm, fn, *c, sendbuf, recvbuf, std::vector<int>(recvcounts, recvcounts + c->size()),
                               datatype, op, request);
}

int PMPI_Ireduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                               MPI_Comm comm, MPI_Request* request) {
  const char* fn = "MPI_Ireduce_scatter_block";
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  if (int e = check_count(comm, fn, "recvcount", recvcount)) return e;
  return ireduce_scatter_start(comm, fn, *c, sendbuf, recvbuf,
                               std::vector<int>(static_cast<std::size_t>(c->size()), recvcount), datatype, op, request);
}

static int iscan_start(MPI_Comm comm, const char* fn, const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                MPI_Op op, bool exclusive, MPI_Request* request) {
  Comm* c = nullptr;
  if (int e = args_reduce(comm, fn, c, sendbuf, recvbuf, count, datatype, op, 0, false)) return e;
  if (int e = check_request(comm, fn, request)) return e;
  if (on_device(sendbuf) || on_device(recvbuf))
    return error(comm, MPI_ERR_BUFFER, fn, "device (CUDA) buffers are not supported by %s yet", fn);
  const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  *request = spawn([=, cc = *c, tag = coll_tag(*c)]() mutable {
    return scan_alg(in, recvbuf, count, datatype, op, exclusive, cc, tag);
  });
  return MPI_SUCCESS;
}

int PMPI_Iscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
               MPI_Request* request) {
  return iscan_start(comm, "MPI_Iscan", sendbuf, recvbuf, count, datatype, op, false, request);
}

int PMPI_Iexscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                 MPI_Request* request) {
  return iscan_start(comm, "MPI_Iexscan", sendbuf, recvbuf, count, datatype, op, true, request);
}

}  // extern "C"
#pragma GCC visibility pop
