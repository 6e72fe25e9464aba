/* Two MPI_Comm_create_group calls in a row, same parent and tag (legal), over groups with
 * their members in opposite orders; repeated. Each new communicator works: ranks in the
 * group's order, an Allreduce over it. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int rank, size, bad = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Group world, up, down;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  int* ranks = malloc(sizeof(int) * (size_t)size);
  for (int i = 0; i < size; i++) ranks[i] = size - 1 - i;
  MPI_Group_incl(world, size, ranks, &down);
  up = world;
  for (int round = 0; round < 5; round++) {
    MPI_Comm cu, cd;
    MPI_Comm_create_group(MPI_COMM_WORLD, up, 7, &cu);
    MPI_Comm_create_group(MPI_COMM_WORLD, down, 7, &cd);
    int ru, rd, su = 0, sd = 0;
    MPI_Comm_rank(cu, &ru);
    MPI_Comm_rank(cd, &rd);
    if (ru != rank || rd != size - 1 - rank) bad = 1;
    MPI_Allreduce(&ru, &su, 1, MPI_INT, MPI_SUM, cu);
    MPI_Allreduce(&rd, &sd, 1, MPI_INT, MPI_SUM, cd);
    if (su != size * (size - 1) / 2 || sd != su) bad = 1;
    MPI_Comm_free(&cu);
    MPI_Comm_free(&cd);
  }
  MPI_Group_free(&down);
  MPI_Group_free(&world);
  free(ranks);
  int any_bad;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
  if (rank == 0 && !any_bad) printf("create_group_twice: ok (%d ranks)\n", size);
  MPI_Finalize();
  return any_bad;
}
