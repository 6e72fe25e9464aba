/* MPI_Comm_create with a bad group on one member (rank 0 passes MPI_GROUP_NULL) under
 * MPI_ERRORS_RETURN: every member returns an error instead of the others waiting forever.
 * (ucharm only: MPI leaves the other members' outcome to the implementation.) */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  int rank, size, bad = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  MPI_Group g;
  MPI_Comm_group(c, &g);
  MPI_Comm out = MPI_COMM_WORLD;
  int rc = MPI_Comm_create(c, rank == 0 ? MPI_GROUP_NULL : g, &out);
  if (rc == MPI_SUCCESS || out != MPI_COMM_NULL) bad = 1;
  /* the communicator still works afterwards */
  int sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, c);
  if (sum != size * (size - 1) / 2) bad = 1;
  MPI_Group_free(&g);
  MPI_Comm_free(&c);
  int any_bad;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
  if (rank == 0 && !any_bad) printf("comm_create_error: ok (%d ranks)\n", size);
  MPI_Finalize();
  return any_bad;
}
