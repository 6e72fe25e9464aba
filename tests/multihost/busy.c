/* busy: every rank talks to every other once (so each holds a connection to each), prints
 * "busy: rank R pid P on HOST ready", then exchanges with all others until the job is
 * stopped. tests/multihost kills one rank with SIGKILL once all are ready.
 * Any number of ranks >= 2; never ends by itself. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int out = rank, in = -1;
  for (int d = 1; d < size; ++d)
    MPI_Sendrecv(&out, 1, MPI_INT, (rank + d) % size, 0, &in, 1, MPI_INT,
                 (rank - d + size) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Barrier(MPI_COMM_WORLD);
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  printf("busy: rank %d pid %d on %s ready\n", rank, (int)getpid(), host);
  fflush(stdout);
  for (;;) {
    int sum = 0;
    MPI_Allreduce(&out, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    usleep(1000);
  }
}
