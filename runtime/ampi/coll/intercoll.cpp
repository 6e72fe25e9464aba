// Collectives on intercommunicators (MPI-3.1 §5.2.2 and each collective's intercommunicator
// paragraph). Data crosses between the groups on the intercommunicator's collective
// context; work inside one group runs the intracommunicator algorithms on the local side
// (Comm::inter->local, its own context). Rooted collectives: the root passes MPI_ROOT, the
// rest of its group MPI_PROC_NULL, the other group the root's rank in the root's group.
// A reduction is reduced in its group first (at local rank 0), so a non-commutative op sees
// the group's contributions in rank order. MPI_IN_PLACE is not defined on intercommunicators.
#include "coll/intercoll.h"

#include <numeric>

namespace ampi::coll {

namespace {

using std::size_t;
size_t u(int i) { return static_cast<size_t>(i); }
std::vector<int> copy_of(const int* a, int n) { return a ? std::vector<int>(a, a + n) : std::vector<int>{}; }

bool is_root(int root) { return root == MPI_ROOT; }
bool sends_nothing(int root) { return root == MPI_PROC_NULL; }

int check_inter_root(const Call& k, const Comm& c, int root) {
  if (root == MPI_ROOT || root == MPI_PROC_NULL || (root >= 0 && root < c.size())) return MPI_SUCCESS;
  return error(k.comm, MPI_ERR_ROOT, k.fn,
               "root %d is not MPI_ROOT, MPI_PROC_NULL or a rank of the remote group [0, %d) (intercommunicator)",
               root, c.size());
}

int check_side(const Call& k, const char* buf_name, const void* buf, const char* count_name, int count,
               const char* type_name_, MPI_Datatype t) {
  if (int e = no_in_place(k.comm, k.fn, buf_name, buf)) return e;
  if (int e = check_count(k.comm, k.fn, count_name, count)) return e;
  return check_committed(k.comm, k.fn, type_name_, t);
}

// The type and op of a reduction: refused here on every member alike (an op not defined on
// the type), not midway through the algorithm where the others would wait.
int check_reduction(const Call& k, MPI_Datatype t, MPI_Op op) {
  if (int e = check_committed(k.comm, k.fn, "datatype", t)) return e;
  if (int e = check_op(k.comm, k.fn, op)) return e;
  if (!op_defined_on(op, t))
    return error(k.comm, MPI_ERR_OP, k.fn, "the operation is not defined on %s", type_name(t).c_str());
  return MPI_SUCCESS;
}

// Block i of a side: `one` elements each (counts null), or counts[i] at displs[i] elements
// (v), or counts[i] of types[i] at displs[i] bytes (w).
struct Side {
  const char* buf;
  int one;
  std::vector<int> counts, displs;
  MPI_Datatype type;
  std::vector<MPI_Datatype> types;
  Block at(int i) const {
    if (counts.empty()) return {buf + static_cast<std::ptrdiff_t>(i) * one * type_extent(type), one, type};
    if (!types.empty()) return {buf + displs[u(i)], counts[u(i)], types[u(i)]};
    return {buf + static_cast<std::ptrdiff_t>(displs[u(i)]) * type_extent(type), counts[u(i)], type};
  }
};

// Every member sends block i of `s` to remote rank i and receives block i of `r` from it;
// a null side moves nothing (the root of a gather only receives, of a scatter only sends).
int exchange(const Side* s, const Side* r, Comm& c, int tag) {
  const int n = c.size();
  Requests q((s ? u(n) : 0) + (r ? u(n) : 0));
  int e = MPI_SUCCESS;
  for (int i = 0; r && i < n && !e; ++i) {
    Block b = r->at(i);
    e = irecv(const_cast<char*>(b.ptr), b.count, b.type, i, tag, c, Ctx::Coll, q.next());
  }
  for (int i = 0; s && i < n && !e; ++i) {
    Block b = s->at(i);
    e = isend(b.ptr, b.count, b.type, i, tag, c, Ctx::Coll, q.next());
  }
  const int w = q.wait();
  return e ? e : w;
}

// The leaders (local rank 0) send `out` to each other and receive into `in`.
int leaders_swap(const void* out, void* in, int count, MPI_Datatype t, Comm& c, int tag) {
  if (c.inter->local.rank != 0) return MPI_SUCCESS;
  MPI_Request q[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int e = irecv(in, count, t, 0, tag, c, Ctx::Coll, &q[0]);
  if (!e) e = isend(out, count, t, 0, tag, c, Ctx::Coll, &q[1]);
  const int w = wait_all(2, q, nullptr);
  return e ? e : w;
}

}  // namespace

int inter_barrier(const Call& k, Comm& c) {
  return launch(
      k, c, MPI_OP_NULL, MPI_DATATYPE_NULL,
      [](Comm& cc, int tag) {
        Comm& l = cc.inter->local;
        int mine = 0, theirs = 0;
        int e = barrier_alg(l, tag);
        if (!e) e = leaders_swap(&mine, &theirs, 1, MPI_INT, cc, tag);
        if (!e) e = bcast_alg(&theirs, 1, MPI_INT, 0, l, next_tag(tag));
        return e;
      },
      1);
}

int inter_bcast(const Call& k, Comm& c, void* buffer, int count, MPI_Datatype t, int root) {
  if (int e = check_inter_root(k, c, root)) return e;
  if (!sends_nothing(root)) {
    if (int e = check_side(k, "buffer", buffer, "count", count, "datatype", t)) return e;
  }
  return launch(k, c, MPI_OP_NULL, t, [=](Comm& cc, int tag) {
    if (sends_nothing(root)) return MPI_SUCCESS;
    if (is_root(root)) return send(buffer, count, t, 0, tag, cc, Ctx::Coll);
    Comm& l = cc.inter->local;
    if (l.rank == 0) {
      if (int e = recv(buffer, count, t, root, tag, cc, Ctx::Coll, nullptr)) return e;
    }
    return bcast_alg(buffer, count, t, 0, l, tag);
  });
}

int inter_reduce(const Call& k, Comm& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op,
                 int root) {
  if (int e = check_inter_root(k, c, root)) return e;
  if (!sends_nothing(root)) {  // MPI_PROC_NULL: the other arguments mean nothing
    if (int e = check_count(k.comm, k.fn, "count", count)) return e;
    if (int e = check_reduction(k, t, op)) return e;
    if (int e = no_in_place(k.comm, k.fn, is_root(root) ? "recvbuf" : "sendbuf", is_root(root) ? recvbuf : sendbuf))
      return e;
  }
  const bool idle = sends_nothing(root);
  return launch(k, c, idle ? MPI_OP_NULL : op, idle ? MPI_DATATYPE_NULL : t, [=](Comm& cc, int tag) {
    if (idle) return MPI_SUCCESS;
    if (is_root(root)) return recv(recvbuf, count, t, 0, tag, cc, Ctx::Coll, nullptr);
    Comm& l = cc.inter->local;
    Scratch part(l.rank == 0 ? count : 0, t);
    int e = reduce_run(sendbuf, part.get(), count, t, op, 0, l, tag);
    if (!e && l.rank == 0) e = send(part.get(), count, t, root, tag, cc, Ctx::Coll);
    return e;
  });
}

// Each group's reduction reaches every member of the other group.
int inter_allreduce(const Call& k, Comm& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype t,
                    MPI_Op op) {
  if (int e = check_count(k.comm, k.fn, "count", count)) return e;
  if (int e = check_reduction(k, t, op)) return e;
  if (int e = no_in_place(k.comm, k.fn, "sendbuf", sendbuf)) return e;
  if (int e = no_in_place(k.comm, k.fn, "recvbuf", recvbuf)) return e;
  return launch(
      k, c, op, t,
      [=](Comm& cc, int tag) {
        Comm& l = cc.inter->local;
        Scratch part(l.rank == 0 ? count : 0, t);
        int e = reduce_run(sendbuf, part.get(), count, t, op, 0, l, tag);
        if (!e) e = leaders_swap(part.get(), recvbuf, count, t, cc, tag);
        if (!e) e = bcast_alg(recvbuf, count, t, 0, l, next_tag(tag));
        return e;
      },
      1);
}

int inter_gather(const Call& k, Comm& c, const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf,
                 int rcount, const int* rcounts, const int* displs, MPI_Datatype rtype, int root, bool vector) {
  if (int e = check_inter_root(k, c, root)) return e;
  const int n = c.size();
  if (is_root(root)) {
    if (int e = check_blocks(k.comm, k.fn, kRecvSide, recvbuf, rcount, rcounts, displs, rtype, n, vector)) return e;
  } else if (!sends_nothing(root)) {
    if (int e = check_side(k, "sendbuf", sendbuf, "sendcount", scount, "sendtype", stype)) return e;
  }
  const bool keep = vector && is_root(root);
  return launch(k, c, MPI_OP_NULL, rtype,
                [=, rc = copy_of(keep ? rcounts : nullptr, n), dp = copy_of(keep ? displs : nullptr, n)](
                    Comm& cc, int tag) {
                  if (sends_nothing(root)) return MPI_SUCCESS;
                  if (!is_root(root)) return send(sendbuf, scount, stype, root, tag, cc, Ctx::Coll);
                  const Side r{static_cast<const char*>(recvbuf), rcount, rc, dp, rtype, {}};
                  return exchange(nullptr, &r, cc, tag);
                },
                0, Hold(is_root(root) || sends_nothing(root) ? MPI_DATATYPE_NULL : stype));
}

int inter_scatter(const Call& k, Comm& c, const void* sendbuf, int scount, const int* scounts, const int* displs,
                  MPI_Datatype stype, void* recvbuf, int rcount, MPI_Datatype rtype, int root, bool vector) {
  if (int e = check_inter_root(k, c, root)) return e;
  const int n = c.size();
  if (is_root(root)) {
    if (int e = check_blocks(k.comm, k.fn, kSendSide, sendbuf, scount, scounts, displs, stype, n, vector)) return e;
  } else if (!sends_nothing(root)) {
    if (int e = check_side(k, "recvbuf", recvbuf, "recvcount", rcount, "recvtype", rtype)) return e;
  }
  const bool keep = vector && is_root(root);
  return launch(k, c, MPI_OP_NULL, stype,
                [=, sc = copy_of(keep ? scounts : nullptr, n), dp = copy_of(keep ? displs : nullptr, n)](
                    Comm& cc, int tag) {
                  if (sends_nothing(root)) return MPI_SUCCESS;
                  if (!is_root(root)) return recv(recvbuf, rcount, rtype, root, tag, cc, Ctx::Coll, nullptr);
                  const Side s{static_cast<const char*>(sendbuf), scount, sc, dp, stype, {}};
                  return exchange(&s, nullptr, cc, tag);
                },
                0, Hold(is_root(root) || sends_nothing(root) ? MPI_DATATYPE_NULL : rtype));
}

// Every member's block goes to every member of the other group.
int inter_allgather(const Call& k, Comm& c, const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf,
                    int rcount, const int* rcounts, const int* displs, MPI_Datatype rtype, bool vector) {
  const int n = c.size();
  if (int e = check_side(k, "sendbuf", sendbuf, "sendcount", scount, "sendtype", stype)) return e;
  if (int e = check_blocks(k.comm, k.fn, kRecvSide, recvbuf, rcount, rcounts, displs, rtype, n, vector)) return e;
  return launch(k, c, MPI_OP_NULL, rtype,
                [=, rc = copy_of(vector ? rcounts : nullptr, n), dp = copy_of(vector ? displs : nullptr, n)](
                    Comm& cc, int tag) {
                  // The same block to everyone: a side whose every block is sendbuf.
                  const Side s{static_cast<const char*>(sendbuf), 0, std::vector<int>(u(cc.size()), scount),
                               std::vector<int>(u(cc.size()), 0), stype, {}};
                  const Side r{static_cast<const char*>(recvbuf), rcount, rc, dp, rtype, {}};
                  return exchange(&s, &r, cc, tag);
                },
                0, Hold(stype));
}

int inter_alltoall(const Call& k, Comm& c, const void* sendbuf, int scount, const int* sendcounts,
                   const int* sdispls, MPI_Datatype sendtype, const MPI_Datatype* sendtypes, void* recvbuf,
                   int rcount, const int* recvcounts, const int* rdispls, MPI_Datatype recvtype,
                   const MPI_Datatype* recvtypes, bool w) {
  const int n = c.size();
  if (int e = no_in_place(k.comm, k.fn, "sendbuf", sendbuf)) return e;
  if (int e = no_in_place(k.comm, k.fn, "recvbuf", recvbuf)) return e;
  const bool vector = sendcounts || w;
  if (vector) {
    if (int e = check_side_vw(k.comm, k.fn, true, n, sendcounts, sdispls, sendtype, sendtypes, w)) return e;
    if (int e = check_side_vw(k.comm, k.fn, false, n, recvcounts, rdispls, recvtype, recvtypes, w)) return e;
  } else {
    if (int e = check_side(k, "sendbuf", sendbuf, "sendcount", scount, "sendtype", sendtype)) return e;
    if (int e = check_side(k, "recvbuf", recvbuf, "recvcount", rcount, "recvtype", recvtype)) return e;
  }
  Side s{static_cast<const char*>(sendbuf), scount, copy_of(sendcounts, n), copy_of(sdispls, n), sendtype, {}};
  Side r{static_cast<const char*>(recvbuf), rcount, copy_of(recvcounts, n), copy_of(rdispls, n), recvtype, {}};
  // The types a nonblocking body uses besides recvtype (which launch holds).
  std::vector<MPI_Datatype> used{sendtype};
  if (w) {
    s.types.assign(sendtypes, sendtypes + n);
    r.types.assign(recvtypes, recvtypes + n);
    used = s.types;
    used.insert(used.end(), r.types.begin(), r.types.end());
  }
  return launch(
      k, c, MPI_OP_NULL, w ? MPI_DATATYPE_NULL : recvtype,
      [s = std::move(s), r = std::move(r)](Comm& cc, int tag) { return exchange(&s, &r, cc, tag); }, 0,
      Hold(std::move(used)));
}

// Each group's reduction of sum(recvcounts) elements, scattered over the other group by the
// other group's recvcounts (both groups' sums must agree).
int inter_reduce_scatter(const Call& k, Comm& c, const void* sendbuf, void* recvbuf, const int* recvcounts,
                         int recvcount, MPI_Datatype t, MPI_Op op) {
  const int n = c.inter->local.size();
  if (recvcounts) {
    if (int e = check_counts(k.comm, k.fn, "recvcounts", recvcounts, n)) return e;
  } else if (int e = check_count(k.comm, k.fn, "recvcount", recvcount)) {
    return e;
  }
  if (int e = check_reduction(k, t, op)) return e;
  if (int e = no_in_place(k.comm, k.fn, "sendbuf", sendbuf)) return e;
  std::vector<int> counts = recvcounts ? copy_of(recvcounts, n) : std::vector<int>(u(n), recvcount);
  std::vector<int> displs(counts.size());
  long long total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    displs[i] = static_cast<int>(total);
    total += counts[i];
  }
  if (total > 0x7fffffff) return error(k.comm, MPI_ERR_COUNT, k.fn, "the total count (%lld) is too large", total);
  const int count = static_cast<int>(total);
  return launch(
      k, c, op, t,
      [=, counts = std::move(counts), displs = std::move(displs)](Comm& cc, int tag) {
        Comm& l = cc.inter->local;
        const int m = l.rank == 0 ? count : 0;
        Scratch part(m, t), other(m, t);
        int e = reduce_run(sendbuf, part.get(), count, t, op, 0, l, tag);
        if (!e) e = leaders_swap(part.get(), other.get(), count, t, cc, tag);
        if (!e)
          e = scatter_alg(other.get(), 0, counts.data(), displs.data(), t, recvbuf, counts[u(l.rank)], t, 0, l,
                          next_tag(tag));
        return e;
      },
      1);
}

}  // namespace ampi::coll
