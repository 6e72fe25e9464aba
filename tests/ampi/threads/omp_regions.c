/* OpenMP parallel regions in virtualized ranks (several ranks per PE, each with its own
 * team), with MPI calls inside the regions under MPI_THREAD_MULTIPLE: thread t of every rank
 * exchanges with thread t of the neighbouring ranks (its own duplicate communicator) while
 * the masters of other ranks of the PE wait in MPI inside their own regions; worksharing
 * loops (static and dynamic schedules), a reduction, sections, and a region on a rank whose
 * master blocks in MPI between regions of another rank of its PE. */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>

enum { kThreads = 3, kRounds = 4 };

static int rank, size;
static MPI_Comm comms[kThreads];

#include "abort_check.h"

int main(int argc, char** argv) {
  int provided = -1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
  for (int t = 0; t < kThreads; ++t) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  for (int round = 0; round < kRounds; ++round) {
    int team = 0, bad = 0;
#pragma omp parallel num_threads(kThreads) reduction(+ : bad)
    {
      const int t = omp_get_thread_num();
#pragma omp single
      team = omp_get_num_threads();
      int is_main = -1;
      MPI_Is_thread_main(&is_main);
      if (is_main != (t == 0)) ++bad;
      int out = rank * 100 + t * 10 + round, in = -1;
      MPI_Sendrecv(&out, 1, MPI_INT, next, round, &in, 1, MPI_INT, prev, round, comms[t], MPI_STATUS_IGNORE);
      if (in != prev * 100 + t * 10 + round) ++bad;
      int sum = 0;
      MPI_Allreduce(&t, &sum, 1, MPI_INT, MPI_SUM, comms[t]);
      if (sum != t * size) ++bad;
    }
    CHECK(team == kThreads, "round %d: a team of %d threads", round, team);
    CHECK(bad == 0, "round %d: %d wrong answers inside the region", round, bad);
    /* Worksharing without MPI: a static and a dynamic loop, sections. */
    long s1 = 0, s2 = 0;
#pragma omp parallel for num_threads(kThreads) reduction(+ : s1)
    for (int i = 0; i < 1000; ++i) s1 += i + rank;
#pragma omp parallel for schedule(dynamic, 7) num_threads(kThreads) reduction(+ : s2)
    for (int i = 0; i < 1000; ++i) s2 += i;
    int a = 0, b = 0;
#pragma omp parallel sections num_threads(2)
    {
#pragma omp section
      a = 1;
#pragma omp section
      b = 2;
    }
    CHECK(s1 == 499500 + 1000L * rank && s2 == 499500 && a == 1 && b == 2, "worksharing %ld %ld %d %d", s1, s2, a, b);
    /* A master that waits in MPI between regions: other ranks of the PE start theirs. */
    MPI_Barrier(MPI_COMM_WORLD);
  }
  for (int t = 0; t < kThreads; ++t) MPI_Comm_free(&comms[t]);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("omp_regions: ok (%d ranks)\n", size);
  MPI_Finalize();
  return 0;
}
