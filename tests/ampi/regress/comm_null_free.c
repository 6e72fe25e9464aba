/* MPI_Comm_free of MPI_COMM_NULL (mpitutorial's groups.c does it on ranks outside the new
   communicator): a fatal error whose message names MPI_COMM_NULL. */
#include <mpi.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm c = MPI_COMM_NULL;
  MPI_Comm_free(&c);
  MPI_Finalize();
  return 0;
}
