/* Each rank keeps its rank in a mutable global and a static, then checks them after every
 * rank has set its own: a token goes around the ranks twice (MPI_Send/MPI_Recv), so by the
 * second round all ranks have written. Ranks sharing a process (+vp) with shared globals
 * would all read the last writer's rank. */
#include <mpi.h>
#include <stdio.h>

int my_rank = -1;
static int my_rank_static = -1;

static int pass_token(int rank, int size) {
  int token = 0;
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  if (rank == 0) {
    MPI_Send(&token, 1, MPI_INT, next, 0, MPI_COMM_WORLD);
    MPI_Recv(&token, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(&token, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(&token, 1, MPI_INT, next, 0, MPI_COMM_WORLD);
  }
  return token;
}

int main(int argc, char** argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  my_rank = rank;
  my_rank_static = rank;
  pass_token(rank, size); /* every rank has written its globals */
  pass_token(rank, size);
  int ok = my_rank == rank && my_rank_static == rank;
  if (ok)
    printf("rank %d of %d: globals hold my rank\n", rank, size);
  else
    printf("rank %d of %d: globals hold %d and %d\n", rank, size, my_rank, my_rank_static);
  MPI_Finalize();
  return ok ? 0 : 1;
}
