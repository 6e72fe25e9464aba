/* MPI-3 functions that public programs (OSU micro-benchmarks 7, MPICH tests) use and that
 * mpi.h lacked: the nonblocking v/w collectives, Iscan/Iexscan, Ireduce_scatter(_block),
 * Comm_idup, Comm_dup_with_info, Aint_add/diff, Type_create_hindexed_block, the _x extents.
 * Every result is checked; the program prints "mpi3_nonblocking_v: ok" on success. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int errors = 0;
#define CHECK(cond, ...)               \
  do {                                 \
    if (!(cond)) {                     \
      ++errors;                        \
      fprintf(stderr, __VA_ARGS__);    \
      fputc('\n', stderr);             \
    }                                  \
  } while (0)

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  int* counts = malloc(sizeof(int) * n);
  int* displs = malloc(sizeof(int) * n);
  int total = 0;
  for (int i = 0; i < n; ++i) {
    counts[i] = i + 1;
    displs[i] = total;
    total += i + 1;
  }
  int* mine = malloc(sizeof(int) * (rank + 1));
  for (int k = 0; k <= rank; ++k) mine[k] = 100 * rank + k;
  int* all = malloc(sizeof(int) * total);
  MPI_Request rq[8];

  /* Iallgatherv and Igatherv (root n-1) of rank+1 ints each. */
  int* gat = malloc(sizeof(int) * total);
  MPI_Iallgatherv(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD, &rq[0]);
  MPI_Igatherv(mine, rank + 1, MPI_INT, gat, counts, displs, MPI_INT, n - 1, MPI_COMM_WORLD, &rq[1]);
  /* Iscan and Iexscan of rank+1. */
  int v = rank + 1, scan = -1, exscan = -1;
  MPI_Iscan(&v, &scan, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[2]);
  MPI_Iexscan(&v, &exscan, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[3]);
  MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k <= i; ++k) {
      CHECK(all[displs[i] + k] == 100 * i + k, "Iallgatherv: rank %d got %d at %d.%d", rank, all[displs[i] + k], i, k);
      if (rank == n - 1) CHECK(gat[displs[i] + k] == 100 * i + k, "Igatherv: wrong %d at %d.%d", gat[displs[i] + k], i, k);
    }
  CHECK(scan == (rank + 1) * (rank + 2) / 2, "Iscan: rank %d got %d", rank, scan);
  if (rank > 0) CHECK(exscan == rank * (rank + 1) / 2, "Iexscan: rank %d got %d", rank, exscan);

  /* Iscatterv from root 0: rank i gets counts[i] ints starting at displs[i]. */
  int* src = malloc(sizeof(int) * total);
  for (int i = 0; i < total; ++i) src[i] = 7 * i;
  int* part = malloc(sizeof(int) * (rank + 1));
  MPI_Iscatterv(src, counts, displs, MPI_INT, part, rank + 1, MPI_INT, 0, MPI_COMM_WORLD, &rq[0]);
  MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
  for (int k = 0; k <= rank; ++k) CHECK(part[k] == 7 * (displs[rank] + k), "Iscatterv: rank %d got %d", rank, part[k]);

  /* Ialltoallv: rank r sends j+1 copies of r to rank j, so receives r+1 copies of i from i. */
  int* sc = malloc(sizeof(int) * n);
  int* sd = malloc(sizeof(int) * n);
  int* rc = malloc(sizeof(int) * n);
  int* rd = malloc(sizeof(int) * n);
  int stotal = 0, rtotal = 0;
  for (int j = 0; j < n; ++j) {
    sc[j] = j + 1;
    sd[j] = stotal;
    stotal += j + 1;
    rc[j] = rank + 1;
    rd[j] = rtotal;
    rtotal += rank + 1;
  }
  int* sbuf = malloc(sizeof(int) * stotal);
  int* rbuf = malloc(sizeof(int) * rtotal);
  for (int i = 0; i < stotal; ++i) sbuf[i] = rank;
  MPI_Ialltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, MPI_COMM_WORLD, &rq[0]);
  /* Ialltoallw of one int each, byte displacements. */
  int* wsend = malloc(sizeof(int) * n);
  int* wrecv = malloc(sizeof(int) * n);
  int* ones = malloc(sizeof(int) * n);
  int* bdis = malloc(sizeof(int) * n);
  MPI_Datatype* types = malloc(sizeof(MPI_Datatype) * n);
  for (int j = 0; j < n; ++j) {
    wsend[j] = 1000 * rank + j;
    ones[j] = 1;
    bdis[j] = j * (int)sizeof(int);
    types[j] = MPI_INT;
  }
  MPI_Ialltoallw(wsend, ones, bdis, types, wrecv, ones, bdis, types, MPI_COMM_WORLD, &rq[1]);
  /* Ireduce_scatter (rank i gets counts[i] sums) and Ireduce_scatter_block (2 each). */
  int* rsin = malloc(sizeof(int) * total);
  for (int i = 0; i < total; ++i) rsin[i] = i;
  int* rsout = malloc(sizeof(int) * (rank + 1));
  MPI_Ireduce_scatter(rsin, rsout, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[2]);
  int* bin = malloc(sizeof(int) * 2 * n);
  for (int i = 0; i < 2 * n; ++i) bin[i] = i + rank;
  int bout[2] = {-1, -1};
  MPI_Ireduce_scatter_block(bin, bout, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rq[3]);
  MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
  for (int i = 0; i < rtotal; ++i) CHECK(rbuf[i] == i / (rank + 1), "Ialltoallv: rank %d got %d at %d", rank, rbuf[i], i);
  for (int j = 0; j < n; ++j) CHECK(wrecv[j] == 1000 * j + rank, "Ialltoallw: rank %d got %d from %d", rank, wrecv[j], j);
  for (int k = 0; k <= rank; ++k)
    CHECK(rsout[k] == n * (displs[rank] + k), "Ireduce_scatter: rank %d got %d", rank, rsout[k]);
  for (int k = 0; k < 2; ++k)
    CHECK(bout[k] == 2 * rank + k + n - 1, "Ireduce_scatter_block: rank %d got %d", rank, bout[k]);

  /* Comm_idup and Comm_dup_with_info give working communicators. */
  MPI_Comm dup, dup2;
  MPI_Comm_idup(MPI_COMM_WORLD, &dup, &rq[0]);
  MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
  MPI_Comm_dup_with_info(dup, MPI_INFO_NULL, &dup2);
  int sum = 0;
  MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, dup2);
  CHECK(sum == n * (n + 1) / 2, "Comm_idup/Comm_dup_with_info: sum %d", sum);
  MPI_Comm_free(&dup2);
  MPI_Comm_free(&dup);

  /* Aint arithmetic, hindexed_block and the _x extents. */
  double d[4];
  MPI_Aint a0, a2;
  MPI_Get_address(&d[0], &a0);
  MPI_Get_address(&d[2], &a2);
  CHECK(MPI_Aint_diff(a2, a0) == 2 * (MPI_Aint)sizeof(double), "MPI_Aint_diff");
  CHECK(MPI_Aint_add(a0, 2 * sizeof(double)) == a2, "MPI_Aint_add");
  MPI_Aint hd[2] = {0, 2 * sizeof(double)};
  MPI_Datatype hb;
  MPI_Type_create_hindexed_block(2, 1, hd, MPI_DOUBLE, &hb);
  MPI_Type_commit(&hb);
  MPI_Count lb = -1, ext = -1, sz = -1;
  MPI_Type_get_extent_x(hb, &lb, &ext);
  MPI_Type_size_x(hb, &sz);
  CHECK(lb == 0 && ext == 3 * (MPI_Count)sizeof(double) && sz == 2 * (MPI_Count)sizeof(double),
        "hindexed_block: lb %lld extent %lld size %lld", lb, ext, sz);
  int ni, na, nt, comb;
  MPI_Type_get_envelope(hb, &ni, &na, &nt, &comb);
  CHECK(comb == MPI_COMBINER_HINDEXED_BLOCK && ni == 2 && na == 2 && nt == 1, "hindexed_block envelope");
  MPI_Type_free(&hb);

  int all_errors = 0;
  MPI_Reduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf(all_errors ? "mpi3_nonblocking_v: %d errors\n" : "mpi3_nonblocking_v: ok\n", all_errors);
  MPI_Finalize();
  return all_errors != 0;
}
