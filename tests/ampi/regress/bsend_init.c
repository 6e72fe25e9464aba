/* MPI_Bsend_init is buffered: two ranks that Bsend_init 1 MiB to each other, Start and
 * Wait, then Recv, complete (a buffered send completes locally, with the attached buffer). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { N = 1 << 18 }; /* ints: 1 MiB */

int main(int argc, char** argv) {
  int rank, size, bad = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int peer = rank ^ 1;
  if (peer < size) {
    int bsize = 2 * (N * (int)sizeof(int) + MPI_BSEND_OVERHEAD); /* room for two messages in flight */
    void* attached = malloc((size_t)bsize);
    MPI_Buffer_attach(attached, bsize);
    int* out = malloc(N * sizeof(int));
    int* in = malloc(N * sizeof(int));
    for (int i = 0; i < N; i++) out[i] = rank * 7 + i;
    /* (A fresh request each round: OpenMPI 4.1 delivers zeros when a persistent buffered
     * send is started a second time.) */
    for (int round = 0; round < 2; round++) {
      MPI_Request r;
      MPI_Bsend_init(out, N, MPI_INT, peer, 5, MPI_COMM_WORLD, &r);
      MPI_Start(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE); /* before the peer receives */
      MPI_Recv(in, N, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Request_free(&r);
      for (int i = 0; i < N; i++)
        if (in[i] != peer * 7 + i) bad = 1;
    }
    void* back;
    int back_size;
    MPI_Buffer_detach(&back, &back_size);
    free(attached);
    free(out);
    free(in);
  }
  int any_bad;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
  if (rank == 0 && !any_bad) printf("bsend_init: ok (%d ranks)\n", size);
  MPI_Finalize();
  return any_bad;
}
