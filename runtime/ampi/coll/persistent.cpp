// Persistent collectives (MPI-4.0 §6.13): MPI_Barrier_init ... MPI_Neighbor_alltoallw_init.
// The init call checks the arguments as the blocking call would and takes the collective's
// tags (every member inits in the same order; they may start in different orders, so the
// tags are the init's, not the start's); it keeps the arguments in a record (`Args`, the
// count, displacement and type arrays copied) on an inactive persistent request of kind
// Task. Each MPI_Start runs the collective's shared body (entry.cpp, neighbor.cpp) as a task
// of the rank that completes that request; Wait/Test make it inactive again, Request_free
// drops the record. The record is plain data (buffers are addresses in the program, the
// same after a move), packed with the request when the rank moves between rounds.
#include "coll/coll.h"
#include "pt2pt/pt2pt.h"
#include "rank.h"

#include <vector>

namespace ampi::coll {
namespace {

enum class Kind : std::uint8_t {
  Barrier, Bcast, Reduce, Allreduce, Gather, Gatherv, Scatter, Scatterv, Allgather, Allgatherv, Alltoall,
  Alltoallv, Alltoallw, ReduceScatter, ReduceScatterBlock, Scan, Exscan, NAllgather, NAllgatherv, NAlltoall,
  NAlltoallv, NAlltoallw
};

constexpr const char* kNames[] = {
    "MPI_Barrier_init", "MPI_Bcast_init", "MPI_Reduce_init", "MPI_Allreduce_init", "MPI_Gather_init",
    "MPI_Gatherv_init", "MPI_Scatter_init", "MPI_Scatterv_init", "MPI_Allgather_init", "MPI_Allgatherv_init",
    "MPI_Alltoall_init", "MPI_Alltoallv_init", "MPI_Alltoallw_init", "MPI_Reduce_scatter_init",
    "MPI_Reduce_scatter_block_init", "MPI_Scan_init", "MPI_Exscan_init", "MPI_Neighbor_allgather_init",
    "MPI_Neighbor_allgatherv_init", "MPI_Neighbor_alltoall_init", "MPI_Neighbor_alltoallv_init",
    "MPI_Neighbor_alltoallw_init"};

struct Args {
  Kind kind = Kind::Barrier;
  MPI_Comm comm = MPI_COMM_NULL;
  int tag = 0;
  const void* sbuf = nullptr;
  void* rbuf = nullptr;
  int scount = 0, rcount = 0, root = 0;
  MPI_Datatype stype = MPI_DATATYPE_NULL, rtype = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
  // The arrays (empty where the call has none); `has_*`: the program passed one (a null
  // array stays null, for the checks to report or ignore as the blocking call does).
  std::vector<int> scounts, sdispls, rcounts, rdispls;
  std::vector<MPI_Aint> sadispls, radispls;
  std::vector<MPI_Datatype> stypes, rtypes;
  std::uint8_t has = 0;  // bits: 1 scounts, 2 sdispls, 4 rcounts, 8 rdispls, 16 stypes, 32 rtypes
};
enum : std::uint8_t { kSC = 1, kSD = 2, kRC = 4, kRD = 8, kST = 16, kRT = 32 };

template <class T>
void keep(std::vector<T>& v, const T* a, int n, std::uint8_t bit, std::uint8_t& has) {
  if (!a) return;
  has |= bit;
  if (n > 0) v.assign(a, a + n);
}
template <class T>
const T* arr(const std::vector<T>& v, std::uint8_t bit, std::uint8_t has) {
  if (!(has & bit)) return nullptr;
  static const T empty{};
  return v.empty() ? &empty : v.data();  // a non-null array of no entries (0 ranks)
}

// The collective's shared body, as its entry points call it.
int run(const Call& k, const Args& a) {
  const std::uint8_t h = a.has;
  switch (a.kind) {
    case Kind::Barrier: return barrier_call(k);
    case Kind::Bcast: return bcast_call(k, a.rbuf, a.rcount, a.rtype, a.root);
    case Kind::Reduce: return reduce_call(k, a.sbuf, a.rbuf, a.rcount, a.rtype, a.op, a.root);
    case Kind::Allreduce: return allreduce_call(k, a.sbuf, a.rbuf, a.rcount, a.rtype, a.op);
    case Kind::Gather:
      return gather_call(k, a.sbuf, a.scount, a.stype, a.rbuf, a.rcount, nullptr, nullptr, a.rtype, a.root, false);
    case Kind::Gatherv:
      return gather_call(k, a.sbuf, a.scount, a.stype, a.rbuf, 0, arr(a.rcounts, kRC, h), arr(a.rdispls, kRD, h),
                         a.rtype, a.root, true);
    case Kind::Scatter:
      return scatter_call(k, a.sbuf, a.scount, nullptr, nullptr, a.stype, a.rbuf, a.rcount, a.rtype, a.root, false);
    case Kind::Scatterv:
      return scatter_call(k, a.sbuf, 0, arr(a.scounts, kSC, h), arr(a.sdispls, kSD, h), a.stype, a.rbuf, a.rcount,
                          a.rtype, a.root, true);
    case Kind::Allgather:
      return allgather_call(k, a.sbuf, a.scount, a.stype, a.rbuf, a.rcount, nullptr, nullptr, a.rtype, false);
    case Kind::Allgatherv:
      return allgather_call(k, a.sbuf, a.scount, a.stype, a.rbuf, 0, arr(a.rcounts, kRC, h), arr(a.rdispls, kRD, h),
                            a.rtype, true);
    case Kind::Alltoall: return alltoall_call(k, a.sbuf, a.scount, a.stype, a.rbuf, a.rcount, a.rtype);
    case Kind::Alltoallv:
      return alltoallvw_call(k, a.sbuf, arr(a.scounts, kSC, h), arr(a.sdispls, kSD, h), a.stype, nullptr, a.rbuf,
                             arr(a.rcounts, kRC, h), arr(a.rdispls, kRD, h), a.rtype, nullptr, false);
    case Kind::Alltoallw:
      return alltoallvw_call(k, a.sbuf, arr(a.scounts, kSC, h), arr(a.sdispls, kSD, h), MPI_DATATYPE_NULL,
                             arr(a.stypes, kST, h), a.rbuf, arr(a.rcounts, kRC, h), arr(a.rdispls, kRD, h),
                             MPI_DATATYPE_NULL, arr(a.rtypes, kRT, h), true);
    case Kind::ReduceScatter:
      return reduce_scatter_call(k, a.sbuf, a.rbuf, arr(a.rcounts, kRC, h), 0, a.rtype, a.op);
    case Kind::ReduceScatterBlock: return reduce_scatter_call(k, a.sbuf, a.rbuf, nullptr, a.rcount, a.rtype, a.op);
    case Kind::Scan: return scan_call(k, a.sbuf, a.rbuf, a.rcount, a.rtype, a.op, false);
    case Kind::Exscan: return scan_call(k, a.sbuf, a.rbuf, a.rcount, a.rtype, a.op, true);
    case Kind::NAllgather:
      return neighbor_allgather(k, a.sbuf, a.scount, a.stype, a.rbuf, a.rcount, a.rtype);
    case Kind::NAllgatherv:
      return neighbor_allgatherv(k, a.sbuf, a.scount, a.stype, a.rbuf, arr(a.rcounts, kRC, h),
                                 arr(a.rdispls, kRD, h), a.rtype);
    case Kind::NAlltoall: return neighbor_alltoall(k, a.sbuf, a.scount, a.stype, a.rbuf, a.rcount, a.rtype);
    case Kind::NAlltoallv:
      return neighbor_alltoallv(k, a.sbuf, arr(a.scounts, kSC, h), arr(a.sdispls, kSD, h), a.stype, a.rbuf,
                                arr(a.rcounts, kRC, h), arr(a.rdispls, kRD, h), a.rtype);
    case Kind::NAlltoallw:
      return neighbor_alltoallw(k, a.sbuf, arr(a.scounts, kSC, h), arr(a.sadispls, kSD, h), arr(a.stypes, kST, h),
                                a.rbuf, arr(a.rcounts, kRC, h), arr(a.radispls, kRD, h), arr(a.rtypes, kRT, h));
  }
  return MPI_ERR_INTERN;
}

bool is_neighbor(Kind k) { return k >= Kind::NAllgather; }

// How many entries the arrays of each side have: the members (the remote group on an
// intercommunicator; the local one for Reduce_scatter's recvcounts), or the neighbours.
void array_sizes(const Args& a, int* nsend, int* nrecv) {
  *nsend = *nrecv = 0;
  Comm* c = comm_get(a.comm);
  if (!c) return;
  if (is_neighbor(a.kind)) {
    std::vector<int> sources, destinations;
    int kind = MPI_UNDEFINED;
    PMPI_Topo_test(a.comm, &kind);
    if (kind == MPI_UNDEFINED) return;  // the call's checks report it
    if (topo_neighbors(a.comm, kNames[static_cast<int>(a.kind)], &sources, &destinations)) return;
    *nsend = static_cast<int>(destinations.size());
    *nrecv = static_cast<int>(sources.size());
    return;
  }
  *nsend = *nrecv = c->size();
  if (a.kind == Kind::ReduceScatter && c->inter) *nrecv = c->inter->local.size();
}

// The record's own duplicates of the derived types (the program may free its handles after
// the init, and each Start checks the arguments again), and a reference to the user op.
// Dropping the record frees the duplicates. A move packs them with the rank's types.
void own_types(Args& a) {
  auto dup = [](MPI_Datatype& t) {
    if (t >= UCHARM_MPI_PREDEFINED_TYPES) PMPI_Type_dup(t, &t);
  };
  dup(a.stype);
  dup(a.rtype);
  for (MPI_Datatype& t : a.stypes) dup(t);
  for (MPI_Datatype& t : a.rtypes) dup(t);
  op_retain(a.op);
}
void drop_types(Args& a) {
  auto drop = [](MPI_Datatype t) {
    if (t >= UCHARM_MPI_PREDEFINED_TYPES) PMPI_Type_free(&t);
  };
  drop(a.stype);
  drop(a.rtype);
  for (MPI_Datatype t : a.stypes) drop(t);
  for (MPI_Datatype t : a.rtypes) drop(t);
  op_release(a.op);
}

int init(Args&& a, MPI_Request* request) {
  const char* fn = kNames[static_cast<int>(a.kind)];
  Call k{a.comm, fn, request, true, &a.tag};
  if (int e = run(k, a)) return e;
  P2p& p = current_rank()->p2p();
  const MPI_Request h = p.alloc(ReqKind::Task);
  Request& q = p.req(h);
  q.persistent = true;
  q.comm = a.comm;
  pt2pt::empty_status(&q.status);
  own_types(a);
  q.ext_kind = ReqExtKind::PersistentColl;
  q.ext = new Args(std::move(a));
  *request = h;
  return MPI_SUCCESS;
}

// Copies the arrays of a call (their lengths from the communicator or the topology).
Args with_arrays(Args a, const int* scounts, const int* sdispls, const MPI_Aint* sadispls, const MPI_Datatype* stypes,
                 const int* rcounts, const int* rdispls, const MPI_Aint* radispls, const MPI_Datatype* rtypes) {
  int ns = 0, nr = 0;
  array_sizes(a, &ns, &nr);
  keep(a.scounts, scounts, ns, kSC, a.has);
  keep(a.sdispls, sdispls, ns, kSD, a.has);
  keep(a.sadispls, sadispls, ns, kSD, a.has);
  keep(a.stypes, stypes, ns, kST, a.has);
  keep(a.rcounts, rcounts, nr, kRC, a.has);
  keep(a.rdispls, rdispls, nr, kRD, a.has);
  keep(a.radispls, radispls, nr, kRD, a.has);
  keep(a.rtypes, rtypes, nr, kRT, a.has);
  return a;
}

Args base(Kind k, MPI_Comm comm, const void* sbuf, int scount, MPI_Datatype stype, void* rbuf, int rcount,
          MPI_Datatype rtype, MPI_Op op = MPI_OP_NULL, int root = 0) {
  Args a;
  a.kind = k;
  a.comm = comm;
  a.sbuf = sbuf;
  a.scount = scount;
  a.stype = stype;
  a.rbuf = rbuf;
  a.rcount = rcount;
  a.rtype = rtype;
  a.op = op;
  a.root = root;
  return a;
}

}  // namespace
}  // namespace ampi::coll

namespace ampi {
using namespace coll;

int pcoll_start(MPI_Request h) {
  P2p& p = current_rank()->p2p();
  Request& q = p.req(h);
  const Args& a = *static_cast<const Args*>(q.ext);
  q.active = true;
  q.complete = false;
  pt2pt::empty_status(&q.status);
  MPI_Request unused = h;
  Call k{a.comm, "MPI_Start", &unused, true, nullptr, a.tag, h};
  const int tasks = p.tasks;
  const int e = run(k, a);
  // An error (the communicator was freed, say), or a call with nothing to do that returned
  // before its task: the round is complete now.
  if (e || p.tasks == tasks) {
    Request& done = p.req(h);
    done.status.MPI_ERROR = e;
    p.mark_complete(h);
  }
  return e;
}

void pcoll_drop(Request& q, bool release_refs) {
  auto* a = static_cast<Args*>(q.ext);
  if (release_refs) drop_types(*a);
  delete a;
}

void pcoll_pup(PUP::er& p, Request& q) {
  if (p.isUnpacking()) q.ext = new Args;
  Args& a = *static_cast<Args*>(q.ext);
  p | a.kind;
  p | a.comm;
  p | a.tag;
  auto s = reinterpret_cast<std::uintptr_t>(a.sbuf), r = reinterpret_cast<std::uintptr_t>(a.rbuf);
  p | s;
  p | r;
  a.sbuf = reinterpret_cast<const void*>(s);
  a.rbuf = reinterpret_cast<void*>(r);
  p | a.scount;
  p | a.rcount;
  p | a.root;
  p | a.stype;
  p | a.rtype;
  p | a.op;
  p | a.scounts;
  p | a.sdispls;
  p | a.rcounts;
  p | a.rdispls;
  p | a.sadispls;
  p | a.radispls;
  p | a.stypes;
  p | a.rtypes;
  p | a.has;
}

}  // namespace ampi

using namespace ampi;
using namespace ampi::coll;

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Barrier_init(MPI_Comm comm, MPI_Info, MPI_Request* request) {
  return init(base(Kind::Barrier, comm, nullptr, 0, MPI_DATATYPE_NULL, nullptr, 0, MPI_DATATYPE_NULL), request);
}
int PMPI_Bcast_init(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Info,
                    MPI_Request* request) {
  return init(base(Kind::Bcast, comm, nullptr, 0, MPI_DATATYPE_NULL, buffer, count, datatype, MPI_OP_NULL, root),
              request);
}
int PMPI_Reduce_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                     MPI_Comm comm, MPI_Info, MPI_Request* request) {
  return init(base(Kind::Reduce, comm, sendbuf, 0, MPI_DATATYPE_NULL, recvbuf, count, datatype, op, root), request);
}
int PMPI_Allreduce_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                        MPI_Comm comm, MPI_Info, MPI_Request* request) {
  return init(base(Kind::Allreduce, comm, sendbuf, 0, MPI_DATATYPE_NULL, recvbuf, count, datatype, op), request);
}
int PMPI_Reduce_scatter_block_init(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype,
                                   MPI_Op op, MPI_Comm comm, MPI_Info, MPI_Request* request) {
  return init(base(Kind::ReduceScatterBlock, comm, sendbuf, 0, MPI_DATATYPE_NULL, recvbuf, recvcount, datatype, op),
              request);
}
int PMPI_Reduce_scatter_init(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm, MPI_Info, MPI_Request* request) {
  return init(with_arrays(base(Kind::ReduceScatter, comm, sendbuf, 0, MPI_DATATYPE_NULL, recvbuf, 0, datatype, op),
                          nullptr, nullptr, nullptr, nullptr, recvcounts, nullptr, nullptr, nullptr),
              request);
}
int PMPI_Scan_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Info, MPI_Request* request) {
  return init(base(Kind::Scan, comm, sendbuf, 0, MPI_DATATYPE_NULL, recvbuf, count, datatype, op), request);
}
int PMPI_Exscan_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                     MPI_Info, MPI_Request* request) {
  return init(base(Kind::Exscan, comm, sendbuf, 0, MPI_DATATYPE_NULL, recvbuf, count, datatype, op), request);
}
int PMPI_Gather_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                     MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info, MPI_Request* request) {
  return init(base(Kind::Gather, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, MPI_OP_NULL, root),
              request);
}
int PMPI_Gatherv_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                      const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info,
                      MPI_Request* request) {
  return init(with_arrays(base(Kind::Gatherv, comm, sendbuf, sendcount, sendtype, recvbuf, 0, recvtype, MPI_OP_NULL,
                               root),
                          nullptr, nullptr, nullptr, nullptr, recvcounts, displs, nullptr, nullptr),
              request);
}
int PMPI_Scatter_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                      MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info, MPI_Request* request) {
  return init(base(Kind::Scatter, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, MPI_OP_NULL, root),
              request);
}
int PMPI_Scatterv_init(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                       void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info,
                       MPI_Request* request) {
  return init(with_arrays(base(Kind::Scatterv, comm, sendbuf, 0, sendtype, recvbuf, recvcount, recvtype, MPI_OP_NULL,
                               root),
                          sendcounts, displs, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
              request);
}
int PMPI_Allgather_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                        MPI_Datatype recvtype, MPI_Comm comm, MPI_Info, MPI_Request* request) {
  return init(base(Kind::Allgather, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype), request);
}
int PMPI_Allgatherv_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                         const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info,
                         MPI_Request* request) {
  return init(with_arrays(base(Kind::Allgatherv, comm, sendbuf, sendcount, sendtype, recvbuf, 0, recvtype), nullptr,
                          nullptr, nullptr, nullptr, recvcounts, displs, nullptr, nullptr),
              request);
}
int PMPI_Alltoall_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                       MPI_Datatype recvtype, MPI_Comm comm, MPI_Info, MPI_Request* request) {
  return init(base(Kind::Alltoall, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype), request);
}
int PMPI_Alltoallv_init(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                        void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                        MPI_Comm comm, MPI_Info, MPI_Request* request) {
  return init(with_arrays(base(Kind::Alltoallv, comm, sendbuf, 0, sendtype, recvbuf, 0, recvtype), sendcounts,
                          sdispls, nullptr, nullptr, recvcounts, rdispls, nullptr, nullptr),
              request);
}
int PMPI_Alltoallw_init(const void* sendbuf, const int sendcounts[], const int sdispls[],
                        const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[], const int rdispls[],
                        const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info, MPI_Request* request) {
  return init(with_arrays(base(Kind::Alltoallw, comm, sendbuf, 0, MPI_DATATYPE_NULL, recvbuf, 0, MPI_DATATYPE_NULL),
                          sendcounts, sdispls, nullptr, sendtypes, recvcounts, rdispls, nullptr, recvtypes),
              request);
}
int PMPI_Neighbor_allgather_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info, MPI_Request* request) {
  return init(base(Kind::NAllgather, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype), request);
}
int PMPI_Neighbor_allgatherv_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                  const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                                  MPI_Info, MPI_Request* request) {
  return init(with_arrays(base(Kind::NAllgatherv, comm, sendbuf, sendcount, sendtype, recvbuf, 0, recvtype), nullptr,
                          nullptr, nullptr, nullptr, recvcounts, displs, nullptr, nullptr),
              request);
}
int PMPI_Neighbor_alltoall_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                                int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info, MPI_Request* request) {
  return init(base(Kind::NAlltoall, comm, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype), request);
}
int PMPI_Neighbor_alltoallv_init(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                 MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
                                 MPI_Datatype recvtype, MPI_Comm comm, MPI_Info, MPI_Request* request) {
  return init(with_arrays(base(Kind::NAlltoallv, comm, sendbuf, 0, sendtype, recvbuf, 0, recvtype), sendcounts,
                          sdispls, nullptr, nullptr, recvcounts, rdispls, nullptr, nullptr),
              request);
}
int PMPI_Neighbor_alltoallw_init(const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                                 const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                                 const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info,
                                 MPI_Request* request) {
  return init(with_arrays(base(Kind::NAlltoallw, comm, sendbuf, 0, MPI_DATATYPE_NULL, recvbuf, 0, MPI_DATATYPE_NULL),
                          sendcounts, nullptr, sdispls, sendtypes, recvcounts, nullptr, rdispls, recvtypes),
              request);
}

}  // extern "C"
#pragma GCC visibility pop
