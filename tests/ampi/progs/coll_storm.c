/* Collective storms: many back-to-back collectives of every kind (Bcast, Reduce, Allreduce,
 * Alltoallv, Allgatherv, Gather, Scatter, Scan, Exscan, Reduce_scatter_block, Barrier) on
 * MPI_COMM_WORLD, a dup, and two splits (one reversing the order), with roots, counts and
 * sizes changing every iteration (some above the zero-copy size); nonblocking collectives
 * (Ibarrier, Iallreduce, Ibcast) overlapped with point-to-point and with blocking collectives
 * on the same communicator. Every result is checked against a serial computation.
 *   coll_storm [ITERS]   default 20
 * Any number of ranks >= 1. */
#include "check.h"

enum { kBigInts = 80000 }; /* 320 KB: zero-copy under ucharm's default */

/* Rank r's contribution k in iteration it (small, so sums of 64 ranks fit in an int). */
static int val(int r, int it, int k) { return (r * 7 + it * 3 + k) % 101 - 50; }

static void storm_on(struct tctx* t, MPI_Comm comm, const char* name, int it, int* big, int* big2) {
  int n, r;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &r);
  t->section = name;

  /* Bcast: root and size change; every 7th is large. */
  {
    int root = it % n, count = it % 7 == 3 ? kBigInts : it % 5 + 1;
    for (int k = 0; k < count; k++) big[k] = r == root ? val(root, it, k) * 3 + k : -999;
    CHECK_MPI(t, MPI_Bcast(big, count, MPI_INT, root, comm));
    int bad = 0;
    for (int k = 0; k < count; k++) bad += big[k] != val(root, it, k) * 3 + k;
    CHECK(t, bad == 0, "iteration %d: Bcast of %d ints from %d: %d differ", it, count, root, bad);
  }
  /* Reduce: sum of ints and max of doubles at a moving root. */
  {
    int root = (it * 3 + 1) % n, in[3], out[3] = {-1, -1, -1};
    double din = val(r, it, 9) + 0.5, dout = -1e9;
    for (int k = 0; k < 3; k++) in[k] = val(r, it, k);
    CHECK_MPI(t, MPI_Reduce(in, out, 3, MPI_INT, MPI_SUM, root, comm));
    CHECK_MPI(t, MPI_Reduce(&din, &dout, 1, MPI_DOUBLE, MPI_MAX, root, comm));
    if (r == root) {
      double dmax = -1e9;
      for (int k = 0; k < 3; k++) {
        int s = 0;
        for (int q = 0; q < n; q++) s += val(q, it, k);
        CHECK(t, out[k] == s, "iteration %d: Reduce sum[%d] %d, expected %d", it, k, out[k], s);
      }
      for (int q = 0; q < n; q++)
        if (val(q, it, 9) + 0.5 > dmax) dmax = val(q, it, 9) + 0.5;
      CHECK(t, dout == dmax, "iteration %d: Reduce max %g, expected %g", it, dout, dmax);
    }
  }
  /* Allreduce: long long sums of 1, 100 or 20000 elements, in place every other time; MIN. */
  {
    int counts[3] = {1, 100, 20000}, count = counts[it % 3];
    long long* a = (long long*)big2;
    long long* b = malloc(sizeof(long long) * count);
    for (int k = 0; k < count; k++) a[k] = (long long)val(r, it, k) * 1000003LL + r;
    if (it % 2) {
      CHECK_MPI(t, MPI_Allreduce(MPI_IN_PLACE, a, count, MPI_LONG_LONG, MPI_SUM, comm));
      memcpy(b, a, sizeof(long long) * count);
    } else {
      CHECK_MPI(t, MPI_Allreduce(a, b, count, MPI_LONG_LONG, MPI_SUM, comm));
    }
    int bad = 0;
    for (int k = 0; k < count; k++) {
      long long s = 0;
      for (int q = 0; q < n; q++) s += (long long)val(q, it, k) * 1000003LL + q;
      bad += b[k] != s;
    }
    CHECK(t, bad == 0, "iteration %d: Allreduce of %d long longs: %d differ", it, count, bad);
    free(b);
    int mn = val(r, it, 4), got = 99;
    CHECK_MPI(t, MPI_Allreduce(&mn, &got, 1, MPI_INT, MPI_MIN, comm));
    int want = 1000;
    for (int q = 0; q < n; q++)
      if (val(q, it, 4) < want) want = val(q, it, 4);
    CHECK(t, got == want, "iteration %d: Allreduce min %d, expected %d", it, got, want);
  }
  /* Alltoallv: rank r sends (r + j + it) % 4 ints to rank j, some empty; Allgatherv. */
  {
    int *sc = malloc(sizeof(int) * n * 4), *sd = sc + n, *rc = sc + 2 * n, *rd = sc + 3 * n;
    int ns = 0, nr = 0;
    for (int j = 0; j < n; j++) {
      sc[j] = (r + j + it) % 4;
      sd[j] = ns;
      ns += sc[j];
      rc[j] = (j + r + it) % 4;
      rd[j] = nr + 1; /* a gap before each block */
      nr += rc[j] + 1;
    }
    int* sb = malloc(sizeof(int) * (ns + 1));
    int* rb = malloc(sizeof(int) * (nr + 1));
    for (int j = 0; j < n; j++)
      for (int k = 0; k < sc[j]; k++) sb[sd[j] + k] = r * 10000 + j * 100 + k + it;
    for (int k = 0; k <= nr; k++) rb[k] = -7;
    CHECK_MPI(t, MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, comm));
    int bad = 0;
    for (int j = 0; j < n; j++) {
      for (int k = 0; k < rc[j]; k++) bad += rb[rd[j] + k] != j * 10000 + r * 100 + k + it;
      bad += rb[rd[j] - 1] != -7;
    }
    CHECK(t, bad == 0, "iteration %d: Alltoallv: %d ints wrong", it, bad);
    free(sb);
    free(rb);
    /* Allgatherv: rank j contributes (j + it) % 3 + 1 ints. */
    int total = 0;
    for (int j = 0; j < n; j++) {
      rc[j] = (j + it) % 3 + 1;
      rd[j] = total;
      total += rc[j];
    }
    int mine[3];
    for (int k = 0; k < rc[r]; k++) mine[k] = r * 31 + k + it;
    int* all = malloc(sizeof(int) * total);
    CHECK_MPI(t, MPI_Allgatherv(mine, rc[r], MPI_INT, all, rc, rd, MPI_INT, comm));
    bad = 0;
    for (int j = 0; j < n; j++)
      for (int k = 0; k < rc[j]; k++) bad += all[rd[j] + k] != j * 31 + k + it;
    CHECK(t, bad == 0, "iteration %d: Allgatherv: %d ints wrong", it, bad);
    free(all);
    free(sc);
  }
  /* Gather and Scatter at a moving root; Scan and Exscan; Reduce_scatter_block. */
  {
    int root = (it + 2) % n, x = val(r, it, 1), y = -1;
    int* all = malloc(sizeof(int) * n * 2);
    CHECK_MPI(t, MPI_Gather(&x, 1, MPI_INT, all, 1, MPI_INT, root, comm));
    if (r == root) {
      int bad = 0;
      for (int q = 0; q < n; q++) bad += all[q] != val(q, it, 1);
      CHECK(t, bad == 0, "iteration %d: Gather: %d wrong", it, bad);
      for (int q = 0; q < n; q++) all[q] = q * 5 + it;
    }
    CHECK_MPI(t, MPI_Scatter(all, 1, MPI_INT, &y, 1, MPI_INT, root, comm));
    CHECK(t, y == r * 5 + it, "iteration %d: Scatter gave %d", it, y);
    int s = -1, e = -12345, ws = 0;
    CHECK_MPI(t, MPI_Scan(&x, &s, 1, MPI_INT, MPI_SUM, comm));
    CHECK_MPI(t, MPI_Exscan(&x, &e, 1, MPI_INT, MPI_SUM, comm));
    for (int q = 0; q < r; q++) ws += val(q, it, 1);
    CHECK(t, s == ws + x, "iteration %d: Scan %d, expected %d", it, s, ws + x);
    if (r > 0) CHECK(t, e == ws, "iteration %d: Exscan %d, expected %d", it, e, ws);
    for (int q = 0; q < 2 * n; q++) all[q] = val(r, it, q);
    int two[2] = {0, 0};
    CHECK_MPI(t, MPI_Reduce_scatter_block(all, two, 2, MPI_INT, MPI_SUM, comm));
    for (int k = 0; k < 2; k++) {
      int want = 0;
      for (int q = 0; q < n; q++) want += val(q, it, 2 * r + k);
      CHECK(t, two[k] == want, "iteration %d: Reduce_scatter_block[%d] %d, expected %d", it, k, two[k], want);
    }
    free(all);
  }
  CHECK_MPI(t, MPI_Barrier(comm));
  /* Nonblocking collectives overlapped: Iallreduce and Ibcast started, then a blocking
   * Allreduce and point-to-point around a ring on the same communicator, then an Ibarrier;
   * completed in reverse order. */
  {
    int a = val(r, it, 5), asum = -1, b[4] = {0, 0, 0, 0}, root = (it * 5) % n;
    if (r == root)
      for (int k = 0; k < 4; k++) b[k] = it * 10 + k;
    MPI_Request q[3];
    CHECK_MPI(t, MPI_Iallreduce(&a, &asum, 1, MPI_INT, MPI_SUM, comm, &q[0]));
    CHECK_MPI(t, MPI_Ibcast(b, 4, MPI_INT, root, comm, &q[1]));
    int c = r + 1, csum = 0;
    CHECK_MPI(t, MPI_Allreduce(&c, &csum, 1, MPI_INT, MPI_SUM, comm));
    CHECK(t, csum == n * (n + 1) / 2, "iteration %d: Allreduce during Iallreduce: %d", it, csum);
    int right = (r + 1) % n, left = (r + n - 1) % n, in = -1, out = r * 3 + it;
    CHECK_MPI(t, MPI_Sendrecv(&out, 1, MPI_INT, right, it, &in, 1, MPI_INT, left, it, comm, MPI_STATUS_IGNORE));
    CHECK(t, in == left * 3 + it, "iteration %d: ring during Iallreduce: %d", it, in);
    CHECK_MPI(t, MPI_Ibarrier(comm, &q[2]));
    /* The ring again while the barrier may be pending. */
    CHECK_MPI(t, MPI_Sendrecv(&out, 1, MPI_INT, left, it + 1, &in, 1, MPI_INT, right, it + 1, comm,
                              MPI_STATUS_IGNORE));
    CHECK(t, in == right * 3 + it, "iteration %d: ring during Ibarrier: %d", it, in);
    CHECK_MPI(t, MPI_Wait(&q[2], MPI_STATUS_IGNORE));
    int flag = 0;
    while (!flag) CHECK_MPI(t, MPI_Test(&q[1], &flag, MPI_STATUS_IGNORE));
    CHECK_MPI(t, MPI_Wait(&q[0], MPI_STATUS_IGNORE));
    int want = 0;
    for (int k = 0; k < n; k++) want += val(k, it, 5);
    CHECK(t, asum == want, "iteration %d: Iallreduce %d, expected %d", it, asum, want);
    for (int k = 0; k < 4; k++) CHECK(t, b[k] == it * 10 + k, "iteration %d: Ibcast[%d] %d", it, k, b[k]);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "coll_storm");
  int iters = 20;
  for (int i = 1; i < argc; i++)
    if (argv[i][0] >= '0' && argv[i][0] <= '9') iters = atoi(argv[i]);
  MPI_Comm dup, parity, thirds;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  /* Even and odd ranks, in reverse order; and rank % 3, in order. */
  MPI_Comm_split(MPI_COMM_WORLD, t.rank % 2, -t.rank, &parity);
  MPI_Comm_split(dup, t.rank % 3, t.rank, &thirds);
  {
    t.section = "split";
    int pr, ps, tr, ts, want_pr = 0, want_ps = 0, want_ts = 0;
    MPI_Comm_rank(parity, &pr);
    MPI_Comm_size(parity, &ps);
    MPI_Comm_rank(thirds, &tr);
    MPI_Comm_size(thirds, &ts);
    for (int q = 0; q < t.size; q++) {
      if (q % 2 == t.rank % 2) want_ps++;
      if (q % 2 == t.rank % 2 && q > t.rank) want_pr++;
      if (q % 3 == t.rank % 3) want_ts++;
    }
    CHECK(&t, pr == want_pr && ps == want_ps, "parity split: rank %d of %d, expected %d of %d", pr, ps, want_pr,
          want_ps);
    CHECK(&t, tr == t.rank / 3 && ts == want_ts, "thirds split: rank %d of %d, expected %d of %d", tr, ts,
          t.rank / 3, want_ts);
  }
  int* big = malloc(sizeof(int) * kBigInts);
  int* big2 = malloc(sizeof(long long) * 20000);
  for (int it = 0; it < iters; it++) {
    storm_on(&t, MPI_COMM_WORLD, "world", it, big, big2);
    storm_on(&t, parity, "parity", it, big, big2);
    storm_on(&t, dup, "dup", it, big, big2);
    storm_on(&t, thirds, "thirds", it, big, big2);
  }
  free(big);
  free(big2);
  MPI_Comm_free(&dup);
  MPI_Comm_free(&parity);
  MPI_Comm_free(&thirds);
  return tctx_finish(&t);
}
