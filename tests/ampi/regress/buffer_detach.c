/* MPI_Buffer_detach returns the buffer MPI_Buffer_attach was given, and its size; a buffer
 * can be attached again afterwards, and buffered sends work throughout. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int rank, size, bad = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int to = (rank + 1) % size, from = (rank + size - 1) % size;
  for (int round = 0; round < 2; round++) {
    int bsize = 1000 + round * 24 + MPI_BSEND_OVERHEAD;
    char* mem = malloc((size_t)bsize);
    MPI_Buffer_attach(mem, bsize);
    int x = rank + round, y = -1;
    MPI_Bsend(&x, 1, MPI_INT, to, round, MPI_COMM_WORLD);
    MPI_Recv(&y, 1, MPI_INT, from, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (y != from + round) bad = 1;
    void* back = NULL;
    int back_size = -1;
    MPI_Buffer_detach(&back, &back_size);
    if (back != mem || back_size != bsize) bad = 1;
    free(mem);
  }
  int any_bad;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
  if (bad) fprintf(stderr, "buffer_detach: rank %d failed\n", rank);
  if (rank == 0 && !any_bad) printf("buffer_detach: ok (%d ranks)\n", size);
  MPI_Finalize();
  return any_bad;
}
