/* A rank moves only when its threads are idle. While a thread it started still runs (here: it
 * waits in MPI_Recv), AMPI_Migrate_to_pe fails with MPI_ERR_OTHER naming the cause and
 * AMPI_Migrate (the balancer: run with +balancer RotateLB) leaves the rank where it is; inside
 * an OpenMP region the rank cannot move either. Once the thread is joined and no region is
 * active the rank moves (its OpenMP threads are let go and made anew where it lands), and
 * threads and regions that call MPI work there. */
#include <mpi.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>

static int rank, size;

#include "abort_check.h"

static void* waiter(void* arg) {
  int v = -1;
  MPI_Recv(&v, 1, MPI_INT, rank, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  *(int*)arg = v;
  return NULL;
}

/* Every thread of a region exchanges with the same thread of the neighbours. */
static int region_with_mpi(MPI_Comm* comms) {
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  int bad = 0;
#pragma omp parallel num_threads(2) reduction(+ : bad)
  {
    const int t = omp_get_thread_num();
    int out = rank * 10 + t, in = -1;
    MPI_Sendrecv(&out, 1, MPI_INT, next, 3, &in, 1, MPI_INT, prev, 3, comms[t], MPI_STATUS_IGNORE);
    if (in != prev * 10 + t) ++bad;
  }
  return bad;
}

int main(int argc, char** argv) {
  int provided = -1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm comms[2];
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
  const int npes = AMPI_Num_pes();
  CHECK(region_with_mpi(comms) == 0, "region before any move");

  /* A thread still running: no move. */
  int got = -1;
  pthread_t t;
  pthread_create(&t, NULL, waiter, &got);
  const int pe0 = AMPI_My_pe();
  int rc = AMPI_Migrate_to_pe((pe0 + 1) % npes);
  if (npes > 1) {
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OTHER, "AMPI_Migrate_to_pe with a thread running gave %d", rc);
  }
  CHECK(AMPI_My_pe() == pe0, "moved to PE %d with a thread running", AMPI_My_pe());
  CHECK(AMPI_Migrate(MPI_INFO_NULL) == MPI_SUCCESS, "AMPI_Migrate with a thread running failed");
  CHECK(AMPI_My_pe() == pe0, "the balancer moved it to PE %d with a thread running", AMPI_My_pe());
  int v = 77;
  MPI_Send(&v, 1, MPI_INT, rank, 50, MPI_COMM_WORLD);
  pthread_join(t, NULL);
  CHECK(got == 77, "the waiting thread got %d", got);

  /* Inside a region: no move. */
  int in_region_rc = MPI_SUCCESS;
#pragma omp parallel num_threads(2)
  {
#pragma omp master
    in_region_rc = AMPI_Migrate_to_pe((pe0 + 1) % npes);
  }
  if (npes > 1) CHECK(in_region_rc != MPI_SUCCESS, "AMPI_Migrate_to_pe inside a region succeeded");

  /* Idle threads: it moves, and threads and regions work where it lands. */
  CHECK(AMPI_Migrate_to_pe((pe0 + 1) % npes) == MPI_SUCCESS, "AMPI_Migrate_to_pe with idle threads failed");
  CHECK(AMPI_My_pe() == (pe0 + 1) % npes, "still on PE %d", AMPI_My_pe());
  CHECK(region_with_mpi(comms) == 0, "region after AMPI_Migrate_to_pe");
  const int pe1 = AMPI_My_pe();
  CHECK(AMPI_Migrate(MPI_INFO_NULL) == MPI_SUCCESS, "AMPI_Migrate failed");
  if (npes > 1) CHECK(AMPI_My_pe() != pe1, "the balancer left it on PE %d", pe1);
  CHECK(region_with_mpi(comms) == 0, "region after AMPI_Migrate");
  got = -1;
  pthread_create(&t, NULL, waiter, &got);
  v = 78;
  MPI_Send(&v, 1, MPI_INT, rank, 50, MPI_COMM_WORLD);
  pthread_join(t, NULL);
  CHECK(got == 78, "a thread after the moves got %d", got);
  MPI_Comm_free(&comms[0]);
  MPI_Comm_free(&comms[1]);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("thread_migrate: ok (%d ranks)\n", size);
  MPI_Finalize();
  return 0;
}
