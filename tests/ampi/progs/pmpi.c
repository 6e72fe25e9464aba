/* The profiling interface: this program defines its own MPI_Send and MPI_Recv, which count
 * the calls and forward to PMPI_Send / PMPI_Recv. The counts must be exactly the program's own
 * calls: the library must not call the MPI_ names itself (a profiler would count those too).
 * The counters are indexed by world rank (not one global per process): under AMPI several
 * ranks share a process, and this test is about PMPI, not about privatized globals. */
#include "check.h"

enum { kMaxRanks = 4096 };
static long send_calls[kMaxRanks], recv_calls[kMaxRanks];
static long send_bytes[kMaxRanks];

static int world_rank(void) {
  int r = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  int r = world_rank(), size = 0;
  PMPI_Type_size(type, &size);
  send_calls[r]++;
  send_bytes[r] += (long)count * size;
  return PMPI_Send(buf, count, type, dest, tag, comm);
}

int MPI_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status) {
  recv_calls[world_rank()]++;
  return PMPI_Recv(buf, count, type, source, tag, comm, status);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "pmpi");
  t.section = "pmpi";
  if (t.size > kMaxRanks) {
    if (t.rank == 0) fprintf(stderr, "pmpi: at most %d ranks\n", kMaxRanks);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int right = (t.rank + 1) % t.size, left = (t.rank + t.size - 1) % t.size;
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  long s0 = send_calls[t.rank], r0 = recv_calls[t.rank], b0 = send_bytes[t.rank];
  enum { kRounds = 5 };
  for (int i = 0; i < kRounds; i++) {
    int v = t.rank * 100 + i, got = -1;
    /* Receives posted before the sends: also right for one rank (messages to itself). */
    {
      MPI_Request rq;
      MPI_Irecv(&got, 1, MPI_INT, left, i, comm, &rq);
      MPI_Send(&v, 1, MPI_INT, right, i, comm);
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
      int z = -1;
      MPI_Irecv(&z, 1, MPI_INT, left, 1000 + i, comm, &rq);
      MPI_Send(&v, 0, MPI_INT, right, 1000 + i, comm);
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
      /* A counted receive too. */
      MPI_Isend(&v, 1, MPI_INT, right, 2000 + i, comm, &rq);
      MPI_Recv(&z, 1, MPI_INT, left, 2000 + i, comm, MPI_STATUS_IGNORE);
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
      CHECK_EQ(&t, z, left * 100 + i);
    }
    CHECK_EQ(&t, got, left * 100 + i);
  }
  long ds = send_calls[t.rank] - s0, dr = recv_calls[t.rank] - r0, db = send_bytes[t.rank] - b0;
  CHECK(&t, ds == 2 * kRounds, "MPI_Send wrapper counted %ld calls, expected %d", ds, 2 * kRounds);
  CHECK(&t, dr == kRounds, "MPI_Recv wrapper counted %ld calls, expected %d", dr, kRounds);
  CHECK(&t, db == kRounds * (long)sizeof(int), "MPI_Send wrapper counted %ld bytes", db);
  MPI_Comm_free(&comm);
  return tctx_finish(&t); /* its own MPI_Send / MPI_Recv also go through the wrappers */
}
