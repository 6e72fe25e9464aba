/* Rank migration refuses pending requests on GPU memory (device memory does not move with a
 * rank): device transfers that completed before the move are fine (a device send and
 * receive are waited for, then AMPIX_Roundtrip_p2p_state, ucharm's test hook, packs and
 * rebuilds the state), but a receive into device memory still pending at the move stops
 * the job with an error naming the rank. Prints "SKIP: no CUDA device" and exits 77 without
 * one. 2 ranks or more: rank 0 holds the pending receive, which no one fills. */
#include <cuda_runtime.h>
#include <dlfcn.h>

#include "check.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "p2p_migrate_cuda");
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    if (t.rank == 0) printf("SKIP: no CUDA device\n");
    MPI_Finalize();
    return 77;
  }
  int (*roundtrip)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "AMPIX_Roundtrip_p2p_state");
  CHECK(&t, roundtrip != NULL, "AMPIX_Roundtrip_p2p_state not found");
  cudaSetDevice(t.rank % ndev);
  const int right = (t.rank + 1) % t.size, left = (t.rank + t.size - 1) % t.size;
  int *dsend = NULL, *drecv = NULL, h[4] = {t.rank, 1, 2, 3}, back[4] = {0, 0, 0, 0};
  cudaMalloc((void**)&dsend, sizeof h);
  cudaMalloc((void**)&drecv, sizeof h);
  cudaMemcpy(dsend, h, sizeof h, cudaMemcpyHostToDevice);
  MPI_Request r[2];
  MPI_Irecv(drecv, 4, MPI_INT, left, 1, MPI_COMM_WORLD, &r[0]);
  MPI_Isend(dsend, 4, MPI_INT, right, 1, MPI_COMM_WORLD, &r[1]);
  CHECK_MPI(&t, MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
  cudaMemcpy(back, drecv, sizeof back, cudaMemcpyDeviceToHost);
  CHECK_EQ(&t, back[0], left);
  if (roundtrip) CHECK_MPI(&t, roundtrip()); /* completed device requests: fine */
  MPI_Barrier(MPI_COMM_WORLD);
  if (t.rank == 0) {
    printf("p2p_migrate_cuda: completed device transfers moved; now a pending one\n");
    fflush(stdout);
    MPI_Request pending;
    MPI_Irecv(drecv, 4, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &pending);
    if (roundtrip) roundtrip(); /* stops the job */
    printf("p2p_migrate_cuda: the move was not refused\n");
    return 3;
  }
  MPI_Barrier(MPI_COMM_WORLD); /* never reached by rank 0: the job ends first */
  return tctx_finish(&t);
}
