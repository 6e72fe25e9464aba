/* A program with libraries of its own, found through its RPATH's $ORIGIN (origin.sh): they
 * load wherever the program's copies come from, from any current directory. */
#include <mpi.h>
#include <stdio.h>

int own_value(void);
int named_value(void);

int main(int argc, char** argv) {
  int rank, size, good, all = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  good = own_value() == 42 && named_value() == 7;
  MPI_Allreduce(&good, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("origin: %s (%d ranks)\n", all == size ? "ok" : "FAILED", size);
  MPI_Finalize();
  return all == size ? 0 : 1;
}
