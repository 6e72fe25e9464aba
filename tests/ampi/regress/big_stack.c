/* 400 KB of locals in main and in a function it calls, with ranks sharing a process: each
   rank's stack must hold them (the default +ampi-stacksize), and the data must survive the
   rank's waits while other ranks run on their own stacks. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int fill_and_sum(int rank) {
  volatile char deep[200 * 1024];
  for (size_t i = 0; i < sizeof deep; i += 512) deep[i] = (char)(rank + 1);
  MPI_Barrier(MPI_COMM_WORLD);
  int sum = 0;
  for (size_t i = 0; i < sizeof deep; i += 512) sum += deep[i];
  return sum;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char local[400 * 1024];
  memset(local, rank + 1, sizeof local);
  MPI_Barrier(MPI_COMM_WORLD);
  int bad = 0;
  for (size_t i = 0; i < sizeof local; ++i) bad |= local[i] != (char)(rank + 1);
  const int expect = (int)(200 * 1024 / 512) * (rank + 1);
  bad |= fill_and_sum(rank) != expect;
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  if (rank == 0) printf("big_stack: %s (%d ranks)\n", any ? "FAILED" : "ok", size);
  MPI_Finalize();
  return any;
}
