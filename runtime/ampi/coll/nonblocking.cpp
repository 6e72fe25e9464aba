// The nonblocking collectives: each runs its blocking twin's checks and body (entry.cpp),
// the body in a task of the rank; the request completes when the body returns.

#include "coll/coll.h"

using namespace ampi;
using namespace ampi::coll;

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Ibarrier(MPI_Comm comm, MPI_Request* request) {
  return barrier_call({comm, "MPI_Ibarrier", request, true});
}

int PMPI_Ibcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request* request) {
  return bcast_call({comm, "MPI_Ibcast", request, true}, buffer, count, datatype, root);
}

int PMPI_Ireduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                 MPI_Comm comm, MPI_Request* request) {
  return reduce_call({comm, "MPI_Ireduce", request, true}, sendbuf, recvbuf, count, datatype, op, root);
}

int PMPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                    MPI_Request* request) {
  return allreduce_call({comm, "MPI_Iallreduce", request, true}, sendbuf, recvbuf, count, datatype, op);
}

int PMPI_Igather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
  return gather_call({comm, "MPI_Igather", request, true}, sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr, nullptr, recvtype, root, false);
}

int PMPI_Igatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                  const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
  return gather_call({comm, "MPI_Igatherv", request, true}, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs, recvtype, root, true);
}

int PMPI_Iscatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
  return scatter_call({comm, "MPI_Iscatter", request, true}, sendbuf, sendcount, nullptr, nullptr, sendtype, recvbuf, recvcount, recvtype, root, false);
}

int PMPI_Iscatterv(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                   void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
  return scatter_call({comm, "MPI_Iscatterv", request, true}, sendbuf, 0, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, true);
}

int PMPI_Iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return allgather_call({comm, "MPI_Iallgather", request, true}, sendbuf, sendcount, sendtype, recvbuf, recvcount, nullptr, nullptr, recvtype, false);
}

int PMPI_Iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                     const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return allgather_call({comm, "MPI_Iallgatherv", request, true}, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs, recvtype, true);
}

int PMPI_Ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return alltoall_call({comm, "MPI_Ialltoall", request, true}, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
}

int PMPI_Ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                    void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                    MPI_Request* request) {
  return alltoallvw_call({comm, "MPI_Ialltoallv", request, true}, sendbuf, sendcounts, sdispls, sendtype, nullptr, recvbuf, recvcounts, rdispls, recvtype, nullptr, false);
}

int PMPI_Ialltoallw(const void* sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[],
                    void* recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[],
                    MPI_Comm comm, MPI_Request* request) {
  return alltoallvw_call({comm, "MPI_Ialltoallw", request, true}, sendbuf, sendcounts, sdispls, MPI_DATATYPE_NULL, sendtypes, recvbuf, recvcounts, rdispls, MPI_DATATYPE_NULL, recvtypes, true);
}

int PMPI_Ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                         MPI_Comm comm, MPI_Request* request) {
  return reduce_scatter_call({comm, "MPI_Ireduce_scatter", request, true}, sendbuf, recvbuf, recvcounts, 0, datatype, op);
}

int PMPI_Ireduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                               MPI_Comm comm, MPI_Request* request) {
  return reduce_scatter_call({comm, "MPI_Ireduce_scatter_block", request, true}, sendbuf, recvbuf, nullptr, recvcount, datatype, op);
}

int PMPI_Iscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
               MPI_Request* request) {
  return scan_call({comm, "MPI_Iscan", request, true}, sendbuf, recvbuf, count, datatype, op, false);
}

int PMPI_Iexscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                 MPI_Request* request) {
  return scan_call({comm, "MPI_Iexscan", request, true}, sendbuf, recvbuf, count, datatype, op, true);
}

}  // extern "C"
#pragma GCC visibility pop
