/* MPI_Wtime never goes back, also when a rank moves to another process, and it keeps
 * pace with the host's monotonic clock across the move; MPI_WTIME_IS_GLOBAL is the same on
 * every rank, and when it says the clocks are synchronized a message never arrives before
 * it was sent by them. Under AMPI (unless the argument is "nomove") every rank moves to the
 * next PE and back (both directions between each pair of processes). Standard MPI
 * otherwise: run_openmpi.sh runs it under a system MPI. Prints "wtime_move: ok (N ranks)"
 * from rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../progs/check.h"

static double host_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Reads the clocks around `move` (a PE, or -1: none). */
static void across(struct tctx* t, int move) {
  const double w0 = MPI_Wtime(), h0 = host_clock();
#ifdef AMPI
  if (move >= 0) AMPI_Migrate_to_pe(move);
#else
  (void)move;
#endif
  const double h1 = host_clock(), w1 = MPI_Wtime();
  CHECK(t, w1 >= w0, "MPI_Wtime went back from %.9f to %.9f", w0, w1);
  /* The host's clock is one clock for every process of the host (the test runs on one host,
     or on hosts emulated on one kernel: tests/multihost). */
  CHECK(t, (w1 - w0) >= (h1 - h0) - 1e-6, "MPI_Wtime advanced %.9f s, the host clock %.9f s", w1 - w0, h1 - h0);
}

int main(int argc, char** argv) {
  struct tctx t;
  MPI_Init(&argc, &argv);
  tctx_init(&t, "wtime_move");
  const int move = !(argc > 1 && strcmp(argv[1], "nomove") == 0);

  t.section = "attribute";
  int* global = NULL;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &global, &flag);
  CHECK(&t, flag && global && (*global == 0 || *global == 1), "flag %d", flag);
  const int g = flag && global ? *global : -1;
  int lo = 0, hi = 0;
  MPI_Allreduce(&g, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&g, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK(&t, lo == hi, "MPI_WTIME_IS_GLOBAL differs between ranks (%d..%d)", lo, hi);
  if (t.rank == 0) printf("wtime_move: MPI_WTIME_IS_GLOBAL %d\n", g);

  t.section = "moves";
  for (int round = 0; round < 3; ++round) {
#ifdef AMPI
    const int pes = AMPI_Num_pes(), from = AMPI_My_pe();
    if (move && pes > 1) {
      across(&t, (from + 1) % pes);
      across(&t, from);
    } else {
      across(&t, -1);
    }
#else
    across(&t, -1);
#endif
    MPI_Barrier(MPI_COMM_WORLD);
  }
  (void)move;

  t.section = "global";
  if (g == 1 && t.size > 1) {
    const int right = (t.rank + 1) % t.size, left = (t.rank + t.size - 1) % t.size;
    for (int i = 0; i < 20; ++i) {
      double sent = MPI_Wtime(), got = 0;
      MPI_Sendrecv(&sent, 1, MPI_DOUBLE, right, 3, &got, 1, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      const double now = MPI_Wtime();
      CHECK(&t, now >= got, "received at %.9f a time sent at %.9f", now, got);
    }
  }
  return tctx_finish(&t);
}
