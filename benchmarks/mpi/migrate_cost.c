/* What moving an AMPI rank costs, against sending the same bytes. usage: migrate_cost
 * [MiB (default 10)] [moves (default 20)], 2 ranks on 2 PEs (ucharmrun -n 2).
 * Rank 0 holds MiB of heap (touched) and moves back and forth between PE 0 and PE 1 with
 * AMPI_Migrate_to_pe; each move is timed from the call to its return on the other PE. In
 * the same run, the two ranks ping-pong a message of MiB (one way = half the round trip).
 * Prints the medians and their ratio (the target: a move <= 2x a send). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}
static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const size_t bytes = (size_t)(argc > 1 ? atoi(argv[1]) : 10) << 20;
  const int moves = argc > 2 ? atoi(argv[2]) : 20;
  if (size != 2 || AMPI_Num_pes() != 2) {
    if (rank == 0) fprintf(stderr, "migrate_cost: run 2 ranks on 2 PEs\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char* buf = malloc(bytes);
  memset(buf, rank + 1, bytes);
  /* The peer: a plain send of the same bytes (ping-pong; one way = half). */
  double* sends = malloc(sizeof(double) * (size_t)moves);
  for (int i = -2; i < moves; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    if (rank == 0) {
      MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
    if (i >= 0) sends[i] = (MPI_Wtime() - t0) / 2;
  }
  /* Rank 0 moves; rank 1 waits at the barrier. */
  double* times = malloc(sizeof(double) * (size_t)moves);
  for (int i = -2; i < moves; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      const int to = 1 - AMPI_My_pe();
      const double t0 = MPI_Wtime();
      AMPI_Migrate_to_pe(to);
      const double t = MPI_Wtime() - t0;
      if (AMPI_My_pe() != to) {
        fprintf(stderr, "migrate_cost: rank 0 did not reach PE %d\n", to);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      if (i >= 0) times[i] = t;
    }
  }
  if (rank == 0) {
    const double m = median(times, moves), s = median(sends, moves);
    printf("migrate_cost: %zu MiB of heap, %d moves: median move %.3f ms, median send %.3f ms, move/send %.2f\n",
           bytes >> 20, moves, m * 1e3, s * 1e3, m / s);
  }
  free(times);
  free(sends);
  free(buf);
  MPI_Finalize();
  return 0;
}
