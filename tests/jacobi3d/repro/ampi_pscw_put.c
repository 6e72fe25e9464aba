/* Reproducer (helper H7, issue 19 part 6) for AMPI RMA: post/start + MPI_Put + complete/wait
 * between neighbouring ranks on different PEs, Jacobi3D --mode rma's pattern, hung in
 * MPI_Win_complete of the first epoch with the tree of 2026-11-26 ~15:40 (runtime/ampi/rma
 * with uncommitted edits over e88b4ce); it passes at 259e14d. Kept as a small check of that
 * path. The hang was gone with the direct path off (UCHARM_AMPI_RMA_DIRECT_MIN=0), with
 * fence instead of PSCW (argument 2), with PSCW and no Put (argument 1), and with both ranks
 * on one PE (+vp 2 on -n 1). Not built by CMake:
 *   build/runtime/ampi/bin/ampicc -O1 -o /tmp/pscw tests/jacobi3d/repro/ampi_pscw_put.c
 *   build/tools/ucharmrun/ucharmrun -n 2 --timeout 15 /tmp/pscw 64 0     # "ok" twice (hung before)
 *   UCHARM_AMPI_RMA_DIRECT_MIN=0 build/tools/ucharmrun/ucharmrun -n 2 /tmp/pscw 64 0   # ok
 * Arguments: doubles per put (64), synchronization (0 PSCW + Put, 1 PSCW only, 2 fence + Put).
 * Under OpenMPI (mpicc; mpirun -np 2) every form prints "ok". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = argc > 1 ? atoi(argv[1]) : 64, iters = 5;
  const int sync = argc > 2 ? atoi(argv[2]) : 0; /* 0 PSCW + Put, 1 PSCW without Put, 2 fence + Put */
  double* buf = calloc(2 * n, sizeof(double));
  double* src = calloc(n, sizeof(double));
  MPI_Win win;
  MPI_Win_create(buf, 2 * n * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  fprintf(stderr, "rank %d: window created\n", rank);
  int nb[2], k = 0;
  if (rank > 0) nb[k++] = rank - 1;
  if (rank < size - 1) nb[k++] = rank + 1;
  MPI_Group world, g;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  MPI_Group_incl(world, k, nb, &g);
  int bad = 0;
  for (int it = 0; it < iters; ++it) {
    for (int i = 0; i < n; ++i) src[i] = rank * 1000 + it;
    if (sync == 2) MPI_Win_fence(0, win);
    else { MPI_Win_post(g, 0, win); MPI_Win_start(g, 0, win); }
    fprintf(stderr, "rank %d it %d: post+start done\n", rank, it);
    for (int j = 0; j < k && sync != 1; ++j) /* to the lower rank: my data goes in its upper half, and back */
      MPI_Put(src, n, MPI_DOUBLE, nb[j], nb[j] < rank ? n : 0, n, MPI_DOUBLE, win);
    if (sync == 2) MPI_Win_fence(0, win);
    else MPI_Win_complete(win);
    fprintf(stderr, "rank %d it %d: complete done\n", rank, it);
    if (sync != 2) MPI_Win_wait(win);
    fprintf(stderr, "rank %d it %d: wait done\n", rank, it);
    if (sync == 1) continue;
    if (rank > 0 && buf[0] != (rank - 1) * 1000 + it) ++bad;
    if (rank < size - 1 && buf[n] != (rank + 1) * 1000 + it) ++bad;
  }
  MPI_Group_free(&g);
  MPI_Group_free(&world);
  MPI_Win_free(&win);
  printf("rank %d: %s\n", rank, bad ? "WRONG" : "ok");
  free(buf);
  free(src);
  MPI_Finalize();
  return bad;
}
