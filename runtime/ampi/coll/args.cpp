// The argument checks of the collectives, each shared by a blocking collective and its
// nonblocking twin (coll.h); the checks of single arguments are the common ones (checks.h).
#include "coll/coll.h"

namespace ampi::coll {

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


// --- argument checks shared by a blocking collective and its nonblocking twin -------------
int args_bcast(MPI_Comm comm, const char* fn, Comm*& c, int count, MPI_Datatype t, int root) {
  if (!(c = comm_get(comm))) return bad_comm(comm, fn);
  if (int e = check_count(comm, fn, "count", count)) return e;
  if (int e = check_committed(comm, fn, "datatype", t)) return e;
  return check_root(comm, fn, *c, root);
}

int args_reduce(MPI_Comm comm, const char* fn, Comm*& c, const void* sendbuf, void* recvbuf, int count,
                MPI_Datatype t, MPI_Op op, int root, bool rooted) {
  if (!(c = comm_get(comm))) return bad_comm(comm, fn);
  if (int e = check_count(comm, fn, "count", count)) return e;
  if (int e = check_committed(comm, fn, "datatype", t)) return e;
  if (int e = check_op(comm, fn, op)) return e;
  if (!op_defined_on(op, t))  // here, not in the algorithm: where it failed on some members only, others waited
    return error(comm, MPI_ERR_OP, fn, "the operation is not defined on %s", type_name(t).c_str());
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

// The side of a rank's own block (the send side of a gather, the receive side of a scatter).
int check_block(MPI_Comm comm, const char* fn, const SideNames& n, int count, MPI_Datatype t) {
  if (int e = check_count(comm, fn, n.count, count)) return e;
  return check_committed(comm, fn, n.type, t);
}

int check_blocks(MPI_Comm comm, const char* fn, const SideNames& n, const void* buf, int count, const int* counts,
                 const int* displs, MPI_Datatype t, int size, bool vector) {
  if (int e = no_in_place(comm, fn, n.buf, buf)) return e;
  if (vector) {
    if (int e = check_counts(comm, fn, n.counts, counts, size)) return e;
    if (int e = check_ptr(comm, fn, "displs", displs)) return e;
  } else if (int e = check_count(comm, fn, n.count, count)) {
    return e;
  }
  return check_committed(comm, fn, n.type, t);
}

// Gather and scatter are mirror images: `one` is the side of a rank's own block, which the
// root may pass as MPI_IN_PLACE; `all` the root's side of a block per rank.
int args_rooted(MPI_Comm comm, const char* fn, Comm*& c, int root, bool vector, const SideNames& one,
                const void* one_buf, int one_count, MPI_Datatype one_type, const SideNames& all, const void* all_buf,
                int all_count, const int* all_counts, const int* displs, MPI_Datatype all_type) {
  if (!(c = comm_get(comm))) return bad_comm(comm, fn);
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
  if (!(c = comm_get(comm))) return bad_comm(comm, fn);
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
  if (!w) return check_committed(comm, fn, send ? "sendtype" : "recvtype", t);
  if (int e = check_ptr(comm, fn, send ? "sendtypes" : "recvtypes", types)) return e;
  for (int i = 0; i < n; ++i)
    if (int e = check_committed(comm, fn, send ? "sendtypes[i]" : "recvtypes[i]", types[i])) return e;
  return MPI_SUCCESS;
}


}  // namespace ampi::coll
