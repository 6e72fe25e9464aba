// Each collective once, for its blocking entry point and its nonblocking twin alike
// (blocking.cpp, nonblocking.cpp): the argument checks (args.cpp), then launch (coll.h),
// which runs the body now or in a task. Bodies copy the count, displacement and type
// arrays they use: a nonblocking body runs after the call has returned.
#include "coll/coll.h"
#include "coll/intercoll.h"

#include <vector>

namespace ampi::coll {

namespace {
std::vector<int> copy_of(const int* a, int n) { return a ? std::vector<int>(a, a + n) : std::vector<int>{}; }
const int* data_or_null(const std::vector<int>& v) { return v.empty() ? nullptr : v.data(); }
}  // namespace

int barrier_call(const Call& k) {
  if (Comm* ic = inter_of(k.comm)) return inter_barrier(k, *ic);
  Comm* c = comm_get(k.comm);
  if (!c) return bad_comm(k.comm, k.fn);
  return launch(k, *c, MPI_OP_NULL, MPI_DATATYPE_NULL, [](Comm& cc, int tag) { return barrier_alg(cc, tag); });
}

int bcast_call(const Call& k, void* buffer, int count, MPI_Datatype datatype, int root) {
  if (Comm* ic = inter_of(k.comm)) return inter_bcast(k, *ic, buffer, count, datatype, root);
  Comm* c = nullptr;
  if (int e = args_bcast(k.comm, k.fn, c, count, datatype, root)) return e;
  if (int e = no_in_place(k.comm, k.fn, "buffer", buffer)) return e;
  return launch(k, *c, MPI_OP_NULL, datatype,
                [=](Comm& cc, int tag) { return bcast_alg(buffer, count, datatype, root, cc, tag); });
}

int reduce_call(const Call& k, const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                int root) {
  if (Comm* ic = inter_of(k.comm)) return inter_reduce(k, *ic, sendbuf, recvbuf, count, datatype, op, root);
  Comm* c = nullptr;
  if (int e = args_reduce(k.comm, k.fn, c, sendbuf, recvbuf, count, datatype, op, root, true)) return e;
  return launch(k, *c, op, datatype, [=](Comm& cc, int tag) {
    return reduce_run(sendbuf, recvbuf, count, datatype, op, root, cc, tag);
  });
}

int allreduce_call(const Call& k, const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op) {
  if (Comm* ic = inter_of(k.comm)) return inter_allreduce(k, *ic, sendbuf, recvbuf, count, datatype, op);
  Comm* c = nullptr;
  if (int e = args_reduce(k.comm, k.fn, c, sendbuf, recvbuf, count, datatype, op, 0, false)) return e;
  return launch(k, *c, op, datatype, [=](Comm& cc, int tag) {
    return allreduce_run(sendbuf, recvbuf, count, datatype, op, cc, tag);
  });
}

int gather_call(const Call& k, const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf, int rcount,
                const int* rcounts, const int* displs, MPI_Datatype rtype, int root, bool vector) {
  if (Comm* ic = inter_of(k.comm))
    return inter_gather(k, *ic, sendbuf, scount, stype, recvbuf, rcount, rcounts, displs, rtype, root, vector);
  Comm* c = nullptr;
  if (int e = args_gather(k.comm, k.fn, c, sendbuf, scount, stype, recvbuf, rcount, rcounts, displs, rtype, root,
                          vector))
    return e;
  const bool keep = vector && c->rank == root;  // only the root's arrays are read
  return launch(k, *c, MPI_OP_NULL, rtype,
                [=, rc = copy_of(keep ? rcounts : nullptr, c->size()),
                 dp = copy_of(keep ? displs : nullptr, c->size())](Comm& cc, int tag) {
                  return gather_alg(sendbuf, scount, stype, recvbuf, rcount, data_or_null(rc), data_or_null(dp),
                                    rtype, root, cc, tag);
                },
                0, Hold(stype));
}

int scatter_call(const Call& k, const void* sendbuf, int scount, const int* scounts, const int* displs,
                 MPI_Datatype stype, void* recvbuf, int rcount, MPI_Datatype rtype, int root, bool vector) {
  if (Comm* ic = inter_of(k.comm))
    return inter_scatter(k, *ic, sendbuf, scount, scounts, displs, stype, recvbuf, rcount, rtype, root, vector);
  Comm* c = nullptr;
  if (int e = args_scatter(k.comm, k.fn, c, sendbuf, scount, scounts, displs, stype, recvbuf, rcount, rtype, root,
                           vector))
    return e;
  const bool keep = vector && c->rank == root;
  return launch(k, *c, MPI_OP_NULL, stype,
                [=, sc = copy_of(keep ? scounts : nullptr, c->size()),
                 dp = copy_of(keep ? displs : nullptr, c->size())](Comm& cc, int tag) {
                  return scatter_alg(sendbuf, scount, data_or_null(sc), data_or_null(dp), stype, recvbuf, rcount,
                                     rtype, root, cc, tag);
                },
                0, Hold(rtype));
}

int allgather_call(const Call& k, const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf, int rcount,
                   const int* rcounts, const int* displs, MPI_Datatype rtype, bool vector) {
  if (Comm* ic = inter_of(k.comm))
    return inter_allgather(k, *ic, sendbuf, scount, stype, recvbuf, rcount, rcounts, displs, rtype, vector);
  Comm* c = nullptr;
  if (int e = args_allgather(k.comm, k.fn, c, sendbuf, scount, stype, recvbuf, rcount, rcounts, displs, rtype,
                             vector))
    return e;
  return launch(k, *c, MPI_OP_NULL, rtype,
                [=, rc = copy_of(vector ? rcounts : nullptr, c->size()),
                 dp = copy_of(vector ? displs : nullptr, c->size())](Comm& cc, int tag) {
                  return allgather_alg(sendbuf, scount, stype, recvbuf, rcount, data_or_null(rc), data_or_null(dp),
                                       rtype, cc, tag);
                },
                0, Hold(stype));
}

int alltoall_call(const Call& k, const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf, int rcount,
                  MPI_Datatype rtype) {
  if (Comm* ic = inter_of(k.comm))
    return inter_alltoall(k, *ic, sendbuf, scount, nullptr, nullptr, stype, nullptr, recvbuf, rcount, nullptr, nullptr,
                          rtype, nullptr, false);
  Comm* c = nullptr;
  if (int e = args_alltoall(k.comm, k.fn, c, sendbuf, scount, stype, recvbuf, rcount, rtype)) return e;
  return launch(
      k, *c, MPI_OP_NULL, rtype,
      [=](Comm& cc, int tag) { return alltoall_plain(sendbuf, scount, stype, recvbuf, rcount, rtype, cc, tag); }, 0,
      Hold(stype));
}

// Alltoallv (`types` null: one type per side) and Alltoallw (a type per rank; displacements
// in bytes).
int alltoallvw_call(const Call& k, const void* sendbuf, const int* sendcounts, const int* sdispls,
                    MPI_Datatype sendtype, const MPI_Datatype* sendtypes, void* recvbuf, const int* recvcounts,
                    const int* rdispls, MPI_Datatype recvtype, const MPI_Datatype* recvtypes, bool w) {
  if (Comm* ic = inter_of(k.comm))
    return inter_alltoall(k, *ic, sendbuf, 0, sendcounts, sdispls, sendtype, sendtypes, recvbuf, 0, recvcounts,
                          rdispls, recvtype, recvtypes, w);
  Comm* c = comm_get(k.comm);
  if (!c) return bad_comm(k.comm, k.fn);
  const int n = c->size();
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (!in_place) {
    if (int e = check_side_vw(k.comm, k.fn, true, n, sendcounts, sdispls, sendtype, sendtypes, w)) return e;
  }
  if (int e = no_in_place(k.comm, k.fn, "recvbuf", recvbuf)) return e;
  if (int e = check_side_vw(k.comm, k.fn, false, n, recvcounts, rdispls, recvtype, recvtypes, w)) return e;
  const auto u = [](int i) { return static_cast<std::size_t>(i); };
  std::vector<int> sc, sd, rc(recvcounts, recvcounts + n), rd(rdispls, rdispls + n);
  // One type per rank on each side: the w types, or the v type n times.
  std::vector<MPI_Datatype> st, rt = w ? std::vector<MPI_Datatype>(recvtypes, recvtypes + n)
                                       : std::vector<MPI_Datatype>(u(n), recvtype);
  if (!in_place) {
    sc.assign(sendcounts, sendcounts + n);
    sd.assign(sdispls, sdispls + n);
    st = w ? std::vector<MPI_Datatype>(sendtypes, sendtypes + n) : std::vector<MPI_Datatype>(u(n), sendtype);
  }
  // The types a nonblocking body uses besides recvtype (which launch holds).
  std::vector<MPI_Datatype> used = st;
  if (w) used.insert(used.end(), rt.begin(), rt.end());
  else used.assign(in_place ? 0 : 1, sendtype);
  return launch(k, *c, MPI_OP_NULL, w ? MPI_DATATYPE_NULL : recvtype,
                [=, sc = std::move(sc), sd = std::move(sd), st = std::move(st), rc = std::move(rc),
                 rd = std::move(rd), rt = std::move(rt)](Comm& cc, int tag) {
                  // v: displacements in elements of the type; w: in bytes.
                  const auto at = [w](const void* buf, int disp, MPI_Datatype t) {
                    return w ? static_cast<const char*>(buf) + disp : elem(buf, disp, t);
                  };
                  return alltoall_alg(
                      in_place, false, [&](int i) { return Block{at(sendbuf, sd[u(i)], st[u(i)]), sc[u(i)], st[u(i)]}; },
                      [&](int i) { return Block{at(recvbuf, rd[u(i)], rt[u(i)]), rc[u(i)], rt[u(i)]}; }, cc, tag);
                },
                0, Hold(std::move(used)));
}

// Reduce_scatter (recvcounts) and Reduce_scatter_block (recvcounts null: recvcount each):
// the reduction to rank 0, then a scatter.
int reduce_scatter_call(const Call& k, const void* sendbuf, void* recvbuf, const int* recvcounts, int recvcount,
                        MPI_Datatype datatype, MPI_Op op) {
  if (Comm* ic = inter_of(k.comm))
    return inter_reduce_scatter(k, *ic, sendbuf, recvbuf, recvcounts, recvcount, datatype, op);
  Comm* c = comm_get(k.comm);
  if (!c) return bad_comm(k.comm, k.fn);
  const int n = c->size();
  if (recvcounts) {
    if (int e = check_counts(k.comm, k.fn, "recvcounts", recvcounts, n)) return e;
  } else if (int e = check_count(k.comm, k.fn, "recvcount", recvcount)) {
    return e;
  }
  if (int e = check_committed(k.comm, k.fn, "datatype", datatype)) return e;
  if (int e = check_op(k.comm, k.fn, op)) return e;
  if (int e = no_in_place(k.comm, k.fn, "recvbuf", recvbuf)) return e;
  std::vector<int> counts = recvcounts ? std::vector<int>(recvcounts, recvcounts + n)
                                       : std::vector<int>(static_cast<std::size_t>(n), recvcount);
  std::vector<int> displs(counts.size());
  long long total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    displs[i] = static_cast<int>(total);
    total += counts[i];
  }
  if (total > 0x7fffffff)
    return error(k.comm, MPI_ERR_COUNT, k.fn, "%s (%lld) is too large",
                 recvcounts ? "the sum of recvcounts" : "recvcount * size", total);
  const int count = static_cast<int>(total);
  if (int e = check_alias(k.comm, k.fn, sendbuf, recvbuf, count)) return e;
  return launch(
      k, *c, op, datatype,
      [=, counts = std::move(counts), displs = std::move(displs)](Comm& cc, int tag) {
        const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
        Scratch full(cc.rank == 0 ? count : 0, datatype);
        int e = reduce_host(in, full.get(), count, datatype, op, 0, cc, tag);
        if (!e)
          e = scatter_alg(full.get(), 0, counts.data(), displs.data(), datatype, recvbuf,
                          counts[static_cast<std::size_t>(cc.rank)], datatype, 0, cc, next_tag(tag));
        return e;
      },
      1);
}

// Scan and Exscan (`exclusive`).
int scan_call(const Call& k, const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              bool exclusive) {
  if (inter_of(k.comm))
    return error(k.comm, MPI_ERR_COMM, k.fn, "%s is not defined on intercommunicators (MPI-3.1 5.11)", k.fn);
  Comm* c = nullptr;
  if (int e = args_reduce(k.comm, k.fn, c, sendbuf, recvbuf, count, datatype, op, 0, false)) return e;
  if (on_device(sendbuf) || on_device(recvbuf))  // scan_alg computes on the buffers themselves
    return error(k.comm, MPI_ERR_BUFFER, k.fn, "device (CUDA) buffers are not supported by %s yet", k.fn);
  // Exscan in place: the input must survive until it is sent; scan_alg copies it first.
  const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  return launch(k, *c, op, datatype, [=](Comm& cc, int tag) {
    return scan_alg(in, recvbuf, count, datatype, op, exclusive, cc, tag);
  });
}

}  // namespace ampi::coll
