/* Privatization: the rank lives in mutable globals (and a static local counter) set right
 * after MPI_Init. Under AMPI several ranks share a process (+vp 8 on 2 PEs: 4 per process),
 * so this passes only when each rank has its own copy of the program's globals.
 * After a barrier and messaging (every MPI call is a point where another rank of the same
 * process may run), each rank checks the globals still hold its own values. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int g_rank = -1;              /* a plain global */
static char g_name[32];       /* a static global array */
static const char* g_name_ptr; /* a pointer into it */
double g_values[4];

static int bump(void) {
  static int counter = 0;  /* static local: counts this rank's calls */
  return ++counter;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  g_rank = rank;
  snprintf(g_name, sizeof g_name, "rank-%d", rank);
  g_name_ptr = g_name;
  for (int i = 0; i < 4; i++) g_values[i] = rank * 10.0 + i;
  int fails = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  enum { kRounds = 20 };
  for (int i = 0; i < kRounds; i++) {
    int v = g_rank, got = -1;
    MPI_Sendrecv(&v, 1, MPI_INT, right, i, &got, 1, MPI_INT, left, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (got != left) {
      fprintf(stderr, "globals [rank %d]: round %d received %d from the left neighbour, expected %d\n", rank, i, got, left);
      fails++;
    }
    int c = bump();
    if (c != i + 1) {
      fprintf(stderr, "globals [rank %d]: static counter %d after %d calls (shared between ranks?)\n", rank, c, i + 1);
      fails++;
    }
    if (g_rank != rank) {
      fprintf(stderr, "globals [rank %d]: global g_rank holds %d after round %d (shared between ranks?)\n", rank, g_rank, i);
      fails++;
      g_rank = rank;
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  char want[32];
  snprintf(want, sizeof want, "rank-%d", rank);
  if (strcmp(g_name, want) != 0 || strcmp(g_name_ptr, want) != 0) {
    fprintf(stderr, "globals [rank %d]: global name is '%s' (pointer: '%s'), expected '%s'\n", rank, g_name, g_name_ptr, want);
    fails++;
  }
  for (int i = 0; i < 4; i++)
    if (g_values[i] != rank * 10.0 + i) {
      fprintf(stderr, "globals [rank %d]: g_values[%d] = %g\n", rank, i, g_values[i]);
      fails++;
    }
  int total = 0;
  MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  /* Every rank's sum of g_rank must be 0 + 1 + ... + size-1. */
  int sum = 0;
  MPI_Allreduce(&g_rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (sum != size * (size - 1) / 2) {
    if (rank == 0) fprintf(stderr, "globals: sum of the ranks' g_rank is %d, expected %d\n", sum, size * (size - 1) / 2);
    total++;
  }
  if (rank == 0) {
    if (total == 0) printf("globals: ok (%d ranks)\n", size);
    else printf("globals: FAILED, %d failed checks\n", total);
    fflush(stdout);
  }
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
