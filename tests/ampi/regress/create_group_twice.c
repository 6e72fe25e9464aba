/* Two MPI_Comm_create_group calls in a row, same parent and tag (legal):
 * 1. over groups {0, 1} and then {0, 2}, where rank 1 is late to the first and rank 2 has
 *    made communicators of its own before (so its contexts differ): rank 2's message of the
 *    second call must not be taken for rank 1's in the first (both are "rank 1" of their
 *    group). Each new communicator works (an Allreduce over it).
 * 2. over all ranks in order and reversed, repeated. */
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
  if (size >= 3) {
    MPI_Comm selfs[5];
    if (rank == 2)
      for (int i = 0; i < 5; i++) MPI_Comm_dup(MPI_COMM_SELF, &selfs[i]);
    int ga[2] = {0, 1}, gb[2] = {0, 2};
    MPI_Group a, b;
    MPI_Group_incl(world, 2, ga, &a);
    MPI_Group_incl(world, 2, gb, &b);
    MPI_Comm ca = MPI_COMM_NULL, cb = MPI_COMM_NULL;
    /* Rank 1 is late: it starts once rank 2 is about to call, and lets 0.2 s pass polling
     * (so its PE takes in what arrives), so rank 2's message reaches rank 0 first. */
    int go = 0, flag;
    if (rank == 2) MPI_Send(&go, 1, MPI_INT, 1, 77, MPI_COMM_WORLD);
    if (rank == 1) {
      MPI_Recv(&go, 1, MPI_INT, 2, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      double t0 = MPI_Wtime();
      while (MPI_Wtime() - t0 < 0.2) MPI_Iprobe(MPI_ANY_SOURCE, 78, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
    if (rank == 0 || rank == 1) MPI_Comm_create_group(MPI_COMM_WORLD, a, 5, &ca);
    if (rank == 0 || rank == 2) MPI_Comm_create_group(MPI_COMM_WORLD, b, 5, &cb);
    int one = 1, n = 0;
    if (ca != MPI_COMM_NULL) {
      MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, ca);
      if (n != 2) bad = 1;
      MPI_Comm_free(&ca);
    }
    if (cb != MPI_COMM_NULL) {
      MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, cb);
      if (n != 2) bad = 1;
      MPI_Comm_free(&cb);
    }
    if (rank == 2)
      for (int i = 0; i < 5; i++) MPI_Comm_free(&selfs[i]);
    MPI_Group_free(&a);
    MPI_Group_free(&b);
  }
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
