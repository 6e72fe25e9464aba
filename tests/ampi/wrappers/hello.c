/* A program built with ampicc and Charm++ charmc options (wrappers.sh): the options that mean
 * something reached the compiler; it runs under ucharmrun. */
#include <mpi.h>
#include <stdio.h>

#if !defined(CC_OPTION) || CC_OPTION != 3 || !defined(CPP_OPTION) || CPP_OPTION != 4
#error "-cc-option / -cpp-option did not reach the compiler"
#endif

int main(int argc, char** argv) {
  int rank, size, one = 1, sum = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("hello: %s (%d ranks)\n", sum == size ? "ok" : "FAILED", size);
  MPI_Finalize();
  return sum == size ? 0 : 1;
}
