// Neighbourhood collectives (MPI-3.1 §7.6), blocking and nonblocking, on Cartesian, graph
// and distributed graph topologies: receive block i comes from source i, send block j goes
// to destination j (topo_neighbors gives both lists). MPI_PROC_NULL neighbours (off a
// non-periodic Cartesian edge) keep their block but exchange nothing. Where a rank is a
// neighbour twice, its messages match in list order (the sends and receives are posted in
// that order). On a Cartesian topology the direction is in the tag besides: what a rank
// sends upwards (block 2d+1) arrives in its upper neighbour's block 2d, from below, also
// where both neighbours are one rank (a periodic dimension of size 1 or 2; MPICH's and
// OpenMPI's answer too).
#include "coll/coll.h"

#include <cstdint>
#include <vector>

namespace ampi::coll {
namespace {

using std::size_t;
size_t u(int i) { return static_cast<size_t>(i); }

struct Blocks {
  std::vector<int> ranks;
  std::vector<Block> blocks;
  std::vector<std::uint8_t> up;  // Cartesian: sent upwards (the call's second tag)
};

// The exchange itself: every receive posted, then every send, then the wait.
int neighbor_exchange(const Blocks& in, const Blocks& out, Comm& c, int tag) {
  const auto tag_of = [tag](const Blocks& b, size_t i) { return b.up.empty() || !b.up[i] ? tag : next_tag(tag); };
  Requests q(in.ranks.size() + out.ranks.size());
  int e = MPI_SUCCESS;
  for (size_t i = 0; i < in.ranks.size() && !e; ++i)
    if (in.ranks[i] != MPI_PROC_NULL) {
      const Block& b = in.blocks[i];
      e = irecv(const_cast<char*>(b.ptr), b.count, b.type, in.ranks[i], tag_of(in, i), c, Ctx::Coll, q.next());
    }
  for (size_t j = 0; j < out.ranks.size() && !e; ++j)
    if (out.ranks[j] != MPI_PROC_NULL) {
      const Block& b = out.blocks[j];
      e = isend(b.ptr, b.count, b.type, out.ranks[j], tag_of(out, j), c, Ctx::Coll, q.next());
    }
  const int w = q.wait();
  return e ? e : w;
}

// One side of a call: block i is `count` (or counts[i]) elements of `type` (or types[i]) at
// displacement i * count (or displs[i]) elements of type, or adispls[i] bytes (w).
struct SideArgs {
  const char* name;  // "send" or "recv"
  const void* buf;
  int count;
  const int* counts;
  const int* displs;
  const MPI_Aint* adispls;
  MPI_Datatype type;
  const MPI_Datatype* types;
  bool same_block;  // allgather's send side: the one buffer to every neighbour
};

int make_side(const Call& k, const SideArgs& a, const std::vector<int>& ranks, Blocks* out) {
  const int n = static_cast<int>(ranks.size());
  const bool recv = a.name[0] == 'r';
  if (a.buf == MPI_IN_PLACE)
    return error(k.comm, MPI_ERR_BUFFER, k.fn, "MPI_IN_PLACE is not allowed in neighbourhood collectives");
  if (a.counts) {
    if (int e = check_counts(k.comm, k.fn, recv ? "recvcounts" : "sendcounts", a.counts, n)) return e;
    if (n > 0 && !a.displs && !a.adispls) return null_arg(k.comm, k.fn, recv ? "rdispls" : "sdispls");
  } else if (int e = check_count(k.comm, k.fn, recv ? "recvcount" : "sendcount", a.count)) {
    return e;
  }
  if (a.types) {
    for (int i = 0; i < n; ++i)
      if (int e = check_committed(k.comm, k.fn, recv ? "recvtypes[i]" : "sendtypes[i]", a.types[i])) return e;
  } else if (n > 0 || !a.counts) {
    if (int e = check_committed(k.comm, k.fn, recv ? "recvtype" : "sendtype", a.type)) return e;
  }
  out->ranks = ranks;
  out->blocks.resize(u(n));
  const char* base = static_cast<const char*>(a.buf);
  for (int i = 0; i < n; ++i) {
    const MPI_Datatype t = a.types ? a.types[i] : a.type;
    const int cnt = a.counts ? a.counts[i] : a.count;
    const char* p = a.same_block  ? base
                    : a.adispls   ? base + a.adispls[i]
                    : a.displs    ? elem(base, a.displs[i], t)
                                  : elem(base, static_cast<std::ptrdiff_t>(i) * cnt, t);
    out->blocks[u(i)] = Block{p, cnt, t};
  }
  return MPI_SUCCESS;
}

int neighbor_call(const Call& k, const SideArgs& s, const SideArgs& r) {
  Comm* c = comm_get(k.comm);
  if (!c) return bad_comm(k.comm, k.fn);
  std::vector<int> sources, destinations;
  if (int e = topo_neighbors(k.comm, k.fn, &sources, &destinations)) return e;
  Blocks in, out;
  if (int e = make_side(k, s, destinations, &out)) return e;
  if (int e = make_side(k, r, sources, &in)) return e;
  int kind = MPI_UNDEFINED;
  PMPI_Topo_test(k.comm, &kind);
  if (kind == MPI_CART) {
    // Block 2d goes down and 2d+1 up; block 2d comes from below, so it was sent up.
    for (size_t j = 0; j < out.ranks.size(); ++j) out.up.push_back(j % 2 == 1);
    for (size_t i = 0; i < in.ranks.size(); ++i) in.up.push_back(i % 2 == 0);
  }
  // The types a nonblocking body uses besides the receive type (which launch holds).
  std::vector<MPI_Datatype> used;
  if (s.types) used.assign(s.types, s.types + out.ranks.size());
  else used.push_back(s.type);
  if (r.types) used.insert(used.end(), r.types, r.types + in.ranks.size());
  return launch(
      k, *c, MPI_OP_NULL, r.types ? MPI_DATATYPE_NULL : r.type,
      [in = std::move(in), out = std::move(out)](Comm& cc, int tag) { return neighbor_exchange(in, out, cc, tag); },
      1, Hold(std::move(used)));
}

SideArgs one(const char* name, const void* buf, int count, MPI_Datatype t, bool same = false) {
  return {name, buf, count, nullptr, nullptr, nullptr, t, nullptr, same};
}
SideArgs vec(const char* name, const void* buf, const int* counts, const int* displs, MPI_Datatype t) {
  return {name, buf, 0, counts, displs, nullptr, t, nullptr, false};
}
SideArgs wvec(const char* name, const void* buf, const int* counts, const MPI_Aint* displs, const MPI_Datatype* ts) {
  return {name, buf, 0, counts, nullptr, displs, MPI_DATATYPE_NULL, ts, false};
}

}  // namespace

// Each neighbourhood collective once, for its blocking, nonblocking and persistent entry points.
int neighbor_allgather(const Call& k, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
              int recvcount, MPI_Datatype recvtype) {
  return neighbor_call(k, one("send", sendbuf, sendcount, sendtype, true), one("recv", recvbuf, recvcount, recvtype));
}
int neighbor_allgatherv(const Call& k, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               const int* recvcounts, const int* displs, MPI_Datatype recvtype) {
  if (!recvcounts) return null_arg(k.comm, k.fn, "recvcounts");
  return neighbor_call(k, one("send", sendbuf, sendcount, sendtype, true),
                       vec("recv", recvbuf, recvcounts, displs, recvtype));
}
int neighbor_alltoall(const Call& k, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
             int recvcount, MPI_Datatype recvtype) {
  return neighbor_call(k, one("send", sendbuf, sendcount, sendtype), one("recv", recvbuf, recvcount, recvtype));
}
int neighbor_alltoallv(const Call& k, const void* sendbuf, const int* sendcounts, const int* sdispls, MPI_Datatype sendtype,
              void* recvbuf, const int* recvcounts, const int* rdispls, MPI_Datatype recvtype) {
  if (!sendcounts || !recvcounts) return null_arg(k.comm, k.fn, "sendcounts or recvcounts");
  return neighbor_call(k, vec("send", sendbuf, sendcounts, sdispls, sendtype),
                       vec("recv", recvbuf, recvcounts, rdispls, recvtype));
}
int neighbor_alltoallw(const Call& k, const void* sendbuf, const int* sendcounts, const MPI_Aint* sdispls,
              const MPI_Datatype* sendtypes, void* recvbuf, const int* recvcounts, const MPI_Aint* rdispls,
              const MPI_Datatype* recvtypes) {
  if (!sendcounts || !recvcounts) return null_arg(k.comm, k.fn, "sendcounts or recvcounts");
  if (!sendtypes || !recvtypes) return null_arg(k.comm, k.fn, "sendtypes or recvtypes");
  return neighbor_call(k, wvec("send", sendbuf, sendcounts, sdispls, sendtypes),
                       wvec("recv", recvbuf, recvcounts, rdispls, recvtypes));
}

}  // namespace ampi::coll

using namespace ampi;
using namespace ampi::coll;

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Neighbor_allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                            MPI_Datatype recvtype, MPI_Comm comm) {
  return neighbor_allgather({comm, "MPI_Neighbor_allgather"}, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
}
int PMPI_Ineighbor_allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                             MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return neighbor_allgather({comm, "MPI_Ineighbor_allgather", request, true}, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                   recvtype);
}

int PMPI_Neighbor_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                             const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  return neighbor_allgatherv({comm, "MPI_Neighbor_allgatherv"}, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                    recvtype);
}
int PMPI_Ineighbor_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                              const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                              MPI_Request* request) {
  return neighbor_allgatherv({comm, "MPI_Ineighbor_allgatherv", request, true}, sendbuf, sendcount, sendtype, recvbuf,
                    recvcounts, displs, recvtype);
}

int PMPI_Neighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm) {
  return neighbor_alltoall({comm, "MPI_Neighbor_alltoall"}, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
}
int PMPI_Ineighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                            MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return neighbor_alltoall({comm, "MPI_Ineighbor_alltoall", request, true}, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                  recvtype);
}

int PMPI_Neighbor_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                            void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                            MPI_Comm comm) {
  return neighbor_alltoallv({comm, "MPI_Neighbor_alltoallv"}, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                   rdispls, recvtype);
}
int PMPI_Ineighbor_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                             void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                             MPI_Comm comm, MPI_Request* request) {
  return neighbor_alltoallv({comm, "MPI_Ineighbor_alltoallv", request, true}, sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                   recvcounts, rdispls, recvtype);
}

int PMPI_Neighbor_alltoallw(const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                            const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                            const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  return neighbor_alltoallw({comm, "MPI_Neighbor_alltoallw"}, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                   rdispls, recvtypes);
}
int PMPI_Ineighbor_alltoallw(const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                             const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                             const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                             MPI_Request* request) {
  return neighbor_alltoallw({comm, "MPI_Ineighbor_alltoallw", request, true}, sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                   recvcounts, rdispls, recvtypes);
}

}  // extern "C"
#pragma GCC visibility pop
