// What the sources of coll/ share (private to coll/): temporaries laid out as a datatype
// says, request arrays, the algorithms (algorithms.cpp), the argument checks shared by a
// blocking collective and its nonblocking twin (args.cpp), and how an entry point ends:
// the blocking call runs the algorithm now, the nonblocking one in a task (launch).
#pragma once

#include "checks.h"
#include "refs.h"

#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace ampi::coll {

// --- device buffers ------------------------------------------------------------------------
// HOST STAGING: is_device (pt2pt/transfer.cpp) finds device buffers; the memory-type query is
// cached and cheap for host memory. Device data reaches the host temporaries, and the
// results go back, as messages to this rank itself (self_copy): the point-to-point layer
// moves device memory, so no CUDA call is needed here.
inline bool on_device(const void* p) { return p != MPI_IN_PLACE && is_device(p); }

// --- layout temporaries --------------------------------------------------------------------
// Bytes spanned by `count` elements of t, and where they start relative to the buffer.
struct Span {
  std::ptrdiff_t lo = 0;
  std::size_t bytes = 0;
};
Span layout_span(int count, MPI_Datatype t);

// Heap room for the collectives' temporaries: from the calling rank's kept buffers
// (Rank::coll_scratch) when one is large enough, else new; given back to be kept (up to
// kScratchKeep in all per rank, none larger than kScratchKeepEach) or freed. Fresh memory
// each call cost Reduce of 1 MiB at 2 ranks 7x the time (230,000 page faults in 300 calls
// against 8,700).
inline constexpr std::size_t kScratchKeep = 16u << 20, kScratchKeepEach = 8u << 20;
char* scratch_take(std::size_t bytes, std::size_t& cap);
void scratch_give(char* mem, std::size_t cap);

// Room for `count` elements of t laid out as the datatype says; get() is the buffer address
// to pass with (count, t). Small ones live inline (an 8-byte Allreduce allocates nothing).
class Scratch {
 public:
  Scratch() = default;
  Scratch(int count, MPI_Datatype t) { reset(count, t); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { release(); }
  void reset(int count, MPI_Datatype t) {
    release();
    const Span s = layout_span(count, t);
    char* mem = inline_;
    if (s.bytes > sizeof(inline_)) mem = heap_ = scratch_take(s.bytes, cap_);
    base_ = mem - s.lo;
  }
  void* get() const { return base_; }

 private:
  void release() {
    if (heap_) scratch_give(heap_, cap_);
    heap_ = nullptr;
  }
  alignas(16) char inline_[128];
  char* heap_ = nullptr;
  std::size_t cap_ = 0;
  char* base_ = inline_;
};

inline char* elem(void* buf, std::ptrdiff_t i, MPI_Datatype t) { return static_cast<char*>(buf) + i * type_extent(t); }
inline const char* elem(const void* buf, std::ptrdiff_t i, MPI_Datatype t) {
  return static_cast<const char*>(buf) + i * type_extent(t);
}

// Copies scount elements of stype at src into rcount elements of rtype at dst (the type
// signatures agree, as MPI requires; the receive side may be longer).
void copy_typed(const void* src, int scount, MPI_Datatype stype, void* dst, int rcount, MPI_Datatype rtype);
void copy_elems(const void* src, void* dst, int count, MPI_Datatype t);
// The same where either buffer may be device memory (of a contiguous type), and packing to
// and from dense bytes likewise.
void copy_typed_any(const void* src, int scount, MPI_Datatype stype, void* dst, int rcount, MPI_Datatype rtype);
void pack_any(const void* src, int count, MPI_Datatype t, void* out);
void unpack_any(const void* in, std::size_t bytes, void* dst, int count, MPI_Datatype t);

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

// --- algorithm choice (algorithms.cpp; runtime/ampi/README.md "Collective algorithms") ---
// Bytes are those of one rank's vector (Reduce, Allreduce, Bcast), of the gathered whole
// (Allgather) or of one block (Alltoall). Below a threshold latency rules (fewest steps);
// above it bandwidth does (each byte moved and combined as few times as possible).
// Reduce and Allreduce, commutative ops with count >= the power of two below n:
// Rabenseifner (reduce-scatter by recursive halving, then a gather or an allgather).
inline constexpr std::size_t kReduceScatterGatherMin = 2048;
// The same with crowded cores (more ranks than PEs, or more PEs than cores), where each of
// Rabenseifner's extra steps waits for a PE to be scheduled (IMB, 2-core VM: Reduce of
// 4-64 KiB at 4 PEs 1.5-2x faster, at +vp 8 4-5x, by a binomial tree; Allreduce of 2-4 KiB
// 2x faster at 4 PEs by recursive doubling, 64 KiB slower at +vp 8). Reduce: the tree up
// to the segmented form.
inline constexpr std::size_t kReduceScatterGatherCrowdedMin = 128 * 1024;
inline constexpr std::size_t kAllreduceRsgCrowdedMin = 16 * 1024;
// Two members: Rabenseifner's two half-size steps against one whole exchange (IMB, 2-core
// VM, 2 PEs): Reduce by the tree 1.2-2x faster at 2-64 KiB (the tree up to the segmented
// form), Allreduce by recursive doubling 1.3-1.5x faster at 2-8 KiB, the same at 16-128 KiB,
// slower from 256 KiB.
inline constexpr std::size_t kAllreduceRsgPairMin = 32 * 1024;
// Reduce of commutative ops from this size: a segmented binomial tree, segments of
// kReduceSegment bytes (kept below +ampi-direct-min).
inline constexpr std::size_t kReduceSegmentedMin = 128 * 1024;
inline constexpr std::size_t kReduceSegment = 64 * 1024, kReduceSegmentFloor = 8 * 1024;
// Segments per synchronous send (flow control). With the other segments sent blocking from
// the buffer, 32 against 8 copied by nonblocking sends, IMB Reduce of 1 MiB (2-core VM,
// alternating runs, medians): 2 ranks 125 -> 82 us, 4 ranks 334 -> 179 us.
inline constexpr int kReduceWindow = 32;
// Allreduce of two members from this size: the halves pipelined in segments of
// kAllreducePairSegment bytes (allreduce_pair).
inline constexpr std::size_t kAllreducePairMin = 1024 * 1024, kAllreducePairSegment = 256 * 1024;
// Reduce and Bcast of at most kFlatMaxBytes (Allgather: in all) among 3..kFlatMaxRanks
// members whose cores are crowded: flat, one hop (every member to the root; the root to
// every member; every member to every other).
inline constexpr int kFlatMaxRanks = 4;
inline constexpr std::size_t kFlatMaxBytes = 2048;
// Bcast with n >= 4 members (n >= 8 from the medium size): scatter, then a ring allgather.
inline constexpr std::size_t kBcastScatterMedium = 12288;
inline constexpr std::size_t kBcastScatterLong = 512 * 1024;
// Allgather of n > 2 members below this total: Bruck's (ceil(log2 n) steps, any n); above
// it, and Allgatherv always: a ring (n - 1 steps, each block passed on once).
inline constexpr std::size_t kAllgatherRingMin = 80 * 1024;
// Alltoall blocks of this size or more: pairwise exchange (one peer at a time) instead of
// every message posted at once.
inline constexpr std::size_t kAlltoallPairwiseMin = 32 * 1024;
// Alltoall of n >= 8 members with blocks of at most 256 bytes: Bruck's (log2 n messages).
inline constexpr std::size_t kAlltoallBruckMax = 256;
inline constexpr int kAlltoallBruckMinRanks = 8;

// Moves count elements between two buffers of the calling rank through the point-to-point
// --- algorithms (algorithms.cpp): host or device buffers, arguments checked, on c's
// collective context with the given tag; MPI error codes ------------------------------------
int self_copy(const void* src, void* dst, int count, MPI_Datatype t, Comm& c, int tag);
int combine(MPI_Op op, bool commutative, void*& acc, void*& tmp, bool tmp_is_lower, int count, MPI_Datatype t);
int reduce_alg(const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op, int root, Comm& c, int tag);
int reduce_root_recv(void* recvbuf, int count, MPI_Datatype t, MPI_Op op, int root, Comm& c, int tag);
int reduce_host(const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op, int root, Comm& c, int tag);
int allreduce_host(const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op, Comm& c, int tag);
int allreduce_run(const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op, Comm& c, int tag);
int reduce_run(const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op, int root, Comm& c, int tag);
int barrier_alg(Comm& c, int tag);
int bcast_alg(void* buf, int count, MPI_Datatype t, int root, Comm& c, int tag);
int gather_alg(const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf, int rcount, const int* rcounts,
               const int* displs, MPI_Datatype rtype, int root, Comm& c, int tag);
int scatter_alg(const void* sendbuf, int scount, const int* scounts, const int* displs, MPI_Datatype stype,
                void* recvbuf, int rcount, MPI_Datatype rtype, int root, Comm& c, int tag);
int allgather_alg(const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf, int rcount, const int* rcounts,
                  const int* displs, MPI_Datatype rtype, Comm& c, int tag);
int alltoall_plain(const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf, int rcount, MPI_Datatype rtype,
                   Comm& c, int tag);
int scan_alg(const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op, bool exclusive, Comm& c,
             int tag);

// Alltoall(v,w): block i of the send side goes to member i, block i of the receive side
// comes from member i. Offsets in bytes. MPI_IN_PLACE: the send blocks are copies of the
// receive blocks, taken before anything arrives.
struct Block {
  const char* ptr;
  int count;
  MPI_Datatype type;
};
// `pairwise`: one peer at a time (step k: to r + k, from r - k), for large blocks; else every
// message posted at once.
template <class SendOf, class RecvOf>
int alltoall_alg(bool in_place, bool pairwise, SendOf send_of, RecvOf recv_of, Comm& c, int tag) {
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
      copy_typed_any(b.ptr, b.count, b.type, copies[static_cast<std::size_t>(i)]->get(), b.count, b.type);
    }
  }
  int e = MPI_SUCCESS;
  // The rank's own block is copied once its messages are out: the peers take theirs meanwhile.
  auto own = [&] {
    if (in_place) return;
    Block s = send_of(r), d = recv_of(r);
    copy_typed_any(s.ptr, s.count, s.type, const_cast<char*>(d.ptr), d.count, d.type);
  };
  if (pairwise) {  // an error (a truncated block) does not stop the steps the others wait for
    for (int k = 1; k < n; ++k) {
      const int to = (r + k) % n, from = (r - k + n) % n;
      Block rb = recv_of(from), sb = sblock(to);
      MPI_Request q[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
      int s = irecv(const_cast<char*>(rb.ptr), rb.count, rb.type, from, tag, c, Ctx::Coll, &q[0]);
      if (!s) s = isend(sb.ptr, sb.count, sb.type, to, tag, c, Ctx::Coll, &q[1]);
      if (k == 1) own();
      const int w = wait_all(2, q, nullptr);
      if (!e) e = s ? s : w;
    }
    if (n == 1) own();
    return e;
  }
  Requests q(2 * static_cast<std::size_t>(n));
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
  own();
  const int w = q.wait();
  return e ? e : w;
}

// --- argument checks (args.cpp): MPI_SUCCESS or the error's return; `c` gets comm's
// communicator -----------------------------------------------------------------------------
int no_in_place(MPI_Comm comm, const char* fn, const char* what, const void* p);
int check_alias(MPI_Comm comm, const char* fn, const void* sendbuf, const void* recvbuf, int count);
int failed(MPI_Comm comm, const char* fn, int e, MPI_Op op, MPI_Datatype t);
int args_bcast(MPI_Comm comm, const char* fn, Comm*& c, int count, MPI_Datatype t, int root);
int args_reduce(MPI_Comm comm, const char* fn, Comm*& c, const void* sendbuf, void* recvbuf, int count,
                MPI_Datatype t, MPI_Op op, int root, bool rooted);
int args_gather(MPI_Comm comm, const char* fn, Comm*& c, const void* sendbuf, int scount, MPI_Datatype stype,
                void* recvbuf, int rcount, const int* rcounts, const int* displs, MPI_Datatype rtype, int root,
                bool vector);
int args_scatter(MPI_Comm comm, const char* fn, Comm*& c, const void* sendbuf, int scount, const int* scounts,
                 const int* displs, MPI_Datatype stype, void* recvbuf, int rcount, MPI_Datatype rtype, int root,
                 bool vector);
int args_allgather(MPI_Comm comm, const char* fn, Comm*& c, const void* sendbuf, int scount, MPI_Datatype stype,
                   void* recvbuf, int rcount, const int* rcounts, const int* displs, MPI_Datatype rtype,
                   bool vector);
int args_alltoall(MPI_Comm comm, const char* fn, Comm*& c, const void* sendbuf, int scount, MPI_Datatype stype,
                  void* recvbuf, int rcount, MPI_Datatype rtype);
int check_side_vw(MPI_Comm comm, const char* fn, bool send, int n, const int* counts, const int* displs,
                  MPI_Datatype t, const MPI_Datatype* types, bool w);
// The names that messages give one side's arguments.
struct SideNames {
  const char* buf;
  const char* buf_off_root;
  const char* count;
  const char* counts;
  const char* type;
};
inline constexpr SideNames kSendSide{"sendbuf", "sendbuf on a rank other than the root", "sendcount", "sendcounts",
                                     "sendtype"};
inline constexpr SideNames kRecvSide{"recvbuf", "recvbuf on a rank other than the root", "recvcount", "recvcounts",
                                     "recvtype"};
// The side of a block per rank (`size` of them): counts and displs (`vector`) or one count
// (the root's side of a gather or scatter, the receive side of an allgather; also on
// intercommunicators).
int check_blocks(MPI_Comm comm, const char* fn, const SideNames& n, const void* buf, int count, const int* counts,
                 const int* displs, MPI_Datatype t, int size, bool vector);

// How every collective entry point ends after its checks: the blocking call (`request`
// null) runs `body(c, tag)` now and reports its error through comm's handler; the
// nonblocking twin checks `request` and runs the body in a user-level thread of the rank
// (start_task) with a copy of the communicator, so a Comm_free meanwhile does no harm.
// `body` owns what it needs after the call returns (copies of count and type arrays).
// `extra_tags`: the body uses next_tag(tag) too.
// A persistent collective (coll/persistent.cpp) goes through the same entry twice: its
// `_init` call checks the arguments and takes the tags (`init_tag`: where the first goes;
// nothing runs), and each MPI_Start runs the body as a task under those tags (`fixed_tag`),
// completing the persistent request (`restart`) instead of a new one. The tags are the
// init's since the members may start their persistent collectives in different orders.
struct Call {
  MPI_Comm comm;
  const char* fn;
  MPI_Request* request = nullptr;
  bool nonblocking = false;
  int* init_tag = nullptr;
  int fixed_tag = -1;
  MPI_Request restart = MPI_REQUEST_NULL;
};
// `hold`: the other datatypes the body uses (t and op are held already): a nonblocking body
// keeps them alive while it runs, since the program may free them at once (refs.h).
template <class Body>
int launch(const Call& k, Comm& c, MPI_Op op, MPI_Datatype t, Body body, int extra_tags = 0, Hold hold = Hold()) {
  if (k.nonblocking) {
    if (int e = check_ptr(k.comm, k.fn, "request", k.request)) return e;
  }
  const int tag = k.fixed_tag >= 0 ? k.fixed_tag : coll_tag(c);
  if (k.fixed_tag < 0)
    for (int i = 0; i < extra_tags; ++i) coll_tag(c);
  if (k.init_tag) {
    *k.init_tag = tag;
    return MPI_SUCCESS;
  }
  if (!k.nonblocking) return failed(k.comm, k.fn, body(c, tag), op, t);
  auto* task = new auto([body = std::move(body), cc = c, tag, held = Hold(t, MPI_DATATYPE_NULL, op),
                         hold = std::move(hold)]() mutable { return body(cc, tag); });
  using Task = std::remove_pointer_t<decltype(task)>;
  *k.request = start_task(+[](void* arg) -> int {
    std::unique_ptr<Task> g(static_cast<Task*>(arg));
    return (*g)();
  }, task, k.restart);
  request_set_comm(*k.request, k.comm);  // its errors go to the communicator's handler
  return MPI_SUCCESS;
}

// --- each collective once, for both entry points (entry.cpp) -------------------------------
int barrier_call(const Call& k);
int bcast_call(const Call& k, void* buffer, int count, MPI_Datatype datatype, int root);
int reduce_call(const Call& k, const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                int root);
int allreduce_call(const Call& k, const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op);
int gather_call(const Call& k, const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf, int rcount,
                const int* rcounts, const int* displs, MPI_Datatype rtype, int root, bool vector);
int scatter_call(const Call& k, const void* sendbuf, int scount, const int* scounts, const int* displs,
                 MPI_Datatype stype, void* recvbuf, int rcount, MPI_Datatype rtype, int root, bool vector);
int allgather_call(const Call& k, const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf, int rcount,
                   const int* rcounts, const int* displs, MPI_Datatype rtype, bool vector);
int alltoall_call(const Call& k, const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf, int rcount,
                  MPI_Datatype rtype);
int alltoallvw_call(const Call& k, const void* sendbuf, const int* sendcounts, const int* sdispls,
                    MPI_Datatype sendtype, const MPI_Datatype* sendtypes, void* recvbuf, const int* recvcounts,
                    const int* rdispls, MPI_Datatype recvtype, const MPI_Datatype* recvtypes, bool w);
int reduce_scatter_call(const Call& k, const void* sendbuf, void* recvbuf, const int* recvcounts, int recvcount,
                        MPI_Datatype datatype, MPI_Op op);
int scan_call(const Call& k, const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              bool exclusive);

// The neighbourhood collectives (neighbor.cpp), for every entry point alike.
int neighbor_allgather(const Call& k, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype);
int neighbor_allgatherv(const Call& k, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        const int* recvcounts, const int* displs, MPI_Datatype recvtype);
int neighbor_alltoall(const Call& k, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                      int recvcount, MPI_Datatype recvtype);
int neighbor_alltoallv(const Call& k, const void* sendbuf, const int* sendcounts, const int* sdispls,
                       MPI_Datatype sendtype, void* recvbuf, const int* recvcounts, const int* rdispls,
                       MPI_Datatype recvtype);
int neighbor_alltoallw(const Call& k, const void* sendbuf, const int* sendcounts, const MPI_Aint* sdispls,
                       const MPI_Datatype* sendtypes, void* recvbuf, const int* recvcounts, const MPI_Aint* rdispls,
                       const MPI_Datatype* recvtypes);

// The tag after `tag`: a collective that took two tags with coll_tag (one call after the other).
inline int next_tag(int tag) { return (tag + 1) & (kCollTagFree - 1); }

}  // namespace ampi::coll
