// Collectives on intercommunicators (MPI-3.1 §5.2.2), private to coll/: entry.cpp hands a
// collective here when its communicator is an intercommunicator, for the blocking call and
// its nonblocking twin alike (`c`: the intercommunicator, already looked up).
#pragma once

#include "coll/coll.h"

namespace ampi::coll {

// comm's communicator when it is an intercommunicator; nullptr otherwise (also when invalid).
inline Comm* inter_of(MPI_Comm comm) {
  Comm* c = comm_get(comm);
  return c && c->inter ? c : nullptr;
}

int inter_barrier(const Call& k, Comm& c);
int inter_bcast(const Call& k, Comm& c, void* buffer, int count, MPI_Datatype t, int root);
int inter_reduce(const Call& k, Comm& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op,
                 int root);
int inter_allreduce(const Call& k, Comm& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype t,
                    MPI_Op op);
int inter_gather(const Call& k, Comm& c, const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf,
                 int rcount, const int* rcounts, const int* displs, MPI_Datatype rtype, int root, bool vector);
int inter_scatter(const Call& k, Comm& c, const void* sendbuf, int scount, const int* scounts, const int* displs,
                  MPI_Datatype stype, void* recvbuf, int rcount, MPI_Datatype rtype, int root, bool vector);
int inter_allgather(const Call& k, Comm& c, const void* sendbuf, int scount, MPI_Datatype stype, void* recvbuf,
                    int rcount, const int* rcounts, const int* displs, MPI_Datatype rtype, bool vector);
// Alltoall (counts and displacements null), Alltoallv and Alltoallw (types non-null).
int inter_alltoall(const Call& k, Comm& c, const void* sendbuf, int scount, const int* sendcounts,
                   const int* sdispls, MPI_Datatype sendtype, const MPI_Datatype* sendtypes, void* recvbuf,
                   int rcount, const int* recvcounts, const int* rdispls, MPI_Datatype recvtype,
                   const MPI_Datatype* recvtypes, bool w);
int inter_reduce_scatter(const Call& k, Comm& c, const void* sendbuf, void* recvbuf, const int* recvcounts,
                         int recvcount, MPI_Datatype t, MPI_Op op);

}  // namespace ampi::coll
