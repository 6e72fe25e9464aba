// The blocking collectives: each runs its shared implementation (entry.cpp) at once.

#include "coll/coll.h"

using namespace ampi;
using namespace ampi::coll;

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Barrier(MPI_Comm comm) {
  return barrier_call({comm, "MPI_Barrier"});
}

int PMPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return bcast_call({comm, "MPI_Bcast"}, buffer, count, datatype, root);
}

int PMPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                MPI_Comm comm) {
  return reduce_call({comm, "MPI_Reduce"}, sendbuf, recvbuf, count, datatype, op, root);
}

int PMPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return allreduce_call({comm, "MPI_Allreduce"}, sendbuf, recvbuf, count, datatype, op);
}

int PMPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return gather_call({comm, "MPI_Gather"}, sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr, nullptr, recvtype, root, false);
}

int PMPI_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                 const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return gather_call({comm, "MPI_Gatherv"}, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs, recvtype, root, true);
}

int PMPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return scatter_call({comm, "MPI_Scatter"}, sendbuf, sendcount, nullptr, nullptr, sendtype, recvbuf, recvcount, recvtype, root, false);
}

int PMPI_Scatterv(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                  void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return scatter_call({comm, "MPI_Scatterv"}, sendbuf, 0, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, true);
}

int PMPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm) {
  return allgather_call({comm, "MPI_Allgather"}, sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr, nullptr, recvtype, false);
}

int PMPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                    const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  return allgather_call({comm, "MPI_Allgatherv"}, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs, recvtype, true);
}

int PMPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm) {
  return alltoall_call({comm, "MPI_Alltoall"}, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
}

int PMPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  return alltoallvw_call({comm, "MPI_Alltoallv"}, sendbuf, sendcounts, sdispls, sendtype, nullptr, recvbuf, recvcounts, rdispls, recvtype, nullptr, false);
}

int PMPI_Alltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[],
                   void* recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[],
                   MPI_Comm comm) {
  return alltoallvw_call({comm, "MPI_Alltoallw"}, sendbuf, sendcounts, sdispls, MPI_DATATYPE_NULL, sendtypes, recvbuf, recvcounts, rdispls, MPI_DATATYPE_NULL, recvtypes, true);
}

int PMPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                        MPI_Comm comm) {
  return reduce_scatter_call({comm, "MPI_Reduce_scatter"}, sendbuf, recvbuf, recvcounts, 0, datatype, op);
}

int PMPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm comm) {
  return reduce_scatter_call({comm, "MPI_Reduce_scatter_block"}, sendbuf, recvbuf, nullptr, recvcount, datatype, op);
}

int PMPI_Scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return scan_call({comm, "MPI_Scan"}, sendbuf, recvbuf, count, datatype, op, false);
}

int PMPI_Exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return scan_call({comm, "MPI_Exscan"}, sendbuf, recvbuf, count, datatype, op, true);
}

}  // extern "C"
#pragma GCC visibility pop
