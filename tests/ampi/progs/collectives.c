/* Every collective against a serial reference that each rank computes locally: the input of
 * rank r is a function of r, so any rank can compute what every other rank contributed.
 * Values are integers or sums of halves, so floating-point results are exact in any order. */
#include "check.h"

static int ival(int r, int i) { return ((r * 7 + i * 3) % 11) - 5; }
static double dval(int r, int i) { return r * 0.5 + i - 3.0; }
static long long llval(int r, int i) { return (long long)(r + 1) * 1000000007LL * ((i % 3) - 1) + i; }
static int pval(int r, int i) { return 1 + (r + i) % 3; }   /* small: products stay in range */
static double pdval(int r, int i) { return ((r + i) % 3 + 1) * 0.5; }

static void test_barrier(struct tctx* t) {
  t->section = "barrier";
  /* No rank leaves a barrier before every rank entered it: messages sent after the barrier
   * cannot be there before rank 0 entered. */
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  if (t->rank == 0) {
    for (int i = 0; i < 50; i++) {
      int flag = 1;
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE);
      CHECK(t, flag == 0, "a message sent after the barrier arrived before rank 0 entered it");
    }
  }
  CHECK_MPI(t, MPI_Barrier(comm));
  if (t->rank != 0) {
    MPI_Send(NULL, 0, MPI_BYTE, 0, 1, comm);
  } else {
    for (int r = 1; r < t->size; r++) MPI_Recv(NULL, 0, MPI_BYTE, MPI_ANY_SOURCE, 1, comm, MPI_STATUS_IGNORE);
  }
  for (int i = 0; i < 5; i++) CHECK_MPI(t, MPI_Barrier(comm));
  MPI_Comm_free(&comm);
}

static void test_bcast(struct tctx* t) {
  t->section = "bcast";
  static const int counts[] = {1, 1000, 100000, 0};
  int roots[3] = {0, t->size - 1, t->size / 2};
  int* buf = malloc(100000 * sizeof(int));
  for (int ri = 0; ri < 3; ri++) {
    for (int ci = 0; ci < 4; ci++) {
      int root = roots[ri], n = counts[ci];
      for (int i = 0; i < n; i++) buf[i] = t->rank == root ? root * 31 + i : -1;
      CHECK_MPI(t, MPI_Bcast(buf, n, MPI_INT, root, MPI_COMM_WORLD));
      int bad = 0;
      for (int i = 0; i < n; i++) bad += buf[i] != root * 31 + i;
      CHECK(t, bad == 0, "Bcast root %d count %d: %d ints differ", root, n, bad);
    }
  }
  double d[3] = {0, 0, 0};
  if (t->rank == t->size - 1) d[0] = 1.5, d[1] = -2.25, d[2] = 1e300;
  MPI_Bcast(d, 3, MPI_DOUBLE, t->size - 1, MPI_COMM_WORLD);
  CHECK(t, d[0] == 1.5 && d[1] == -2.25 && d[2] == 1e300, "double Bcast");
  free(buf);
}

static void test_reduce(struct tctx* t) {
  t->section = "reduce";
  enum { kN = 5 };
  for (int root = 0; root < t->size; root++) {
    int in[kN], out[kN], ref[kN];
    for (int i = 0; i < kN; i++) {
      in[i] = ival(t->rank, i), out[i] = -999, ref[i] = 0;
      for (int r = 0; r < t->size; r++) ref[i] += ival(r, i);
    }
    CHECK_MPI(t, MPI_Reduce(in, out, kN, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
    if (t->rank == root)
      for (int i = 0; i < kN; i++) CHECK(t, out[i] == ref[i], "Reduce SUM root %d [%d]: %d, expected %d", root, i, out[i], ref[i]);
    else
      CHECK(t, out[0] == -999, "Reduce wrote the receive buffer of non-root %d", t->rank);
    /* MPI_IN_PLACE at the root. */
    double d[kN], dref[kN];
    for (int i = 0; i < kN; i++) {
      d[i] = dval(t->rank, i), dref[i] = dval(0, i);
      for (int r = 1; r < t->size; r++) dref[i] = dval(r, i) > dref[i] ? dval(r, i) : dref[i];
    }
    if (t->rank == root)
      CHECK_MPI(t, MPI_Reduce(MPI_IN_PLACE, d, kN, MPI_DOUBLE, MPI_MAX, root, MPI_COMM_WORLD));
    else
      CHECK_MPI(t, MPI_Reduce(d, NULL, kN, MPI_DOUBLE, MPI_MAX, root, MPI_COMM_WORLD));
    if (t->rank == root)
      for (int i = 0; i < kN; i++) CHECK(t, d[i] == dref[i], "Reduce MAX IN_PLACE root %d [%d]: %g, expected %g", root, i, d[i], dref[i]);
  }
}

#define ALLREDUCE_CASE(T, MPIT, OPNAME, OP, GEN, COMBINE)                                     \
  do {                                                                                      \
    enum { kN = 7 };                                                                        \
    T in[kN], out[kN], ref[kN];                                                             \
    for (int i = 0; i < kN; i++) {                                                          \
      in[i] = GEN(t->rank, i);                                                              \
      ref[i] = GEN(0, i);                                                                   \
      for (int r = 1; r < t->size; r++) {                                                   \
        T a = ref[i], b = GEN(r, i);                                                        \
        ref[i] = COMBINE;                                                                   \
      }                                                                                     \
    }                                                                                       \
    CHECK_MPI(t, MPI_Allreduce(in, out, kN, MPIT, OP, MPI_COMM_WORLD));                     \
    for (int i = 0; i < kN; i++)                                                            \
      CHECK(t, out[i] == ref[i], "Allreduce " #OPNAME " " #T " [%d]: %.17g, expected %.17g", i, \
            (double)out[i], (double)ref[i]);                                                \
    CHECK_MPI(t, MPI_Allreduce(MPI_IN_PLACE, in, kN, MPIT, OP, MPI_COMM_WORLD));            \
    for (int i = 0; i < kN; i++)                                                            \
      CHECK(t, in[i] == ref[i], "Allreduce IN_PLACE " #OPNAME " " #T " [%d]: %.17g, expected %.17g", \
            i, (double)in[i], (double)ref[i]);                                              \
  } while (0)

struct dint { double v; int i; };

static void test_allreduce(struct tctx* t) {
  t->section = "allreduce";
  ALLREDUCE_CASE(int, MPI_INT, SUM, MPI_SUM, ival, a + b);
  ALLREDUCE_CASE(int, MPI_INT, MAX, MPI_MAX, ival, a > b ? a : b);
  ALLREDUCE_CASE(int, MPI_INT, MIN, MPI_MIN, ival, a < b ? a : b);
  ALLREDUCE_CASE(int, MPI_INT, PROD, MPI_PROD, pval, a * b);
  ALLREDUCE_CASE(double, MPI_DOUBLE, SUM, MPI_SUM, dval, a + b);
  ALLREDUCE_CASE(double, MPI_DOUBLE, MAX, MPI_MAX, dval, a > b ? a : b);
  ALLREDUCE_CASE(double, MPI_DOUBLE, MIN, MPI_MIN, dval, a < b ? a : b);
  ALLREDUCE_CASE(double, MPI_DOUBLE, PROD, MPI_PROD, pdval, a * b);
  ALLREDUCE_CASE(long long, MPI_LONG_LONG, SUM, MPI_SUM, llval, a + b);
  ALLREDUCE_CASE(long long, MPI_LONG_LONG, MAX, MPI_MAX, llval, a > b ? a : b);
  ALLREDUCE_CASE(long long, MPI_LONG_LONG, MIN, MPI_MIN, llval, a < b ? a : b);
  ALLREDUCE_CASE(long long, MPI_LONG_LONG, PROD, MPI_PROD, pval, a * b);

  /* MINLOC / MAXLOC on MPI_DOUBLE_INT, values with ties: the lowest index wins a tie. */
  t->section = "minloc_maxloc";
  enum { kN = 6 };
  struct dint in[kN], mn[kN], mx[kN];
  for (int i = 0; i < kN; i++) in[i].v = (double)((t->rank + i) % 3), in[i].i = t->rank * 10;
  CHECK_MPI(t, MPI_Allreduce(in, mn, kN, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD));
  CHECK_MPI(t, MPI_Allreduce(in, mx, kN, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD));
  for (int i = 0; i < kN; i++) {
    double vmin = 1e9, vmax = -1e9;
    int imin = -1, imax = -1;
    for (int r = 0; r < t->size; r++) {
      double v = (double)((r + i) % 3);
      if (v < vmin) vmin = v, imin = r * 10;
      if (v > vmax) vmax = v, imax = r * 10;
    }
    CHECK(t, mn[i].v == vmin && mn[i].i == imin, "MINLOC [%d]: (%g,%d), expected (%g,%d)", i, mn[i].v, mn[i].i, vmin, imin);
    CHECK(t, mx[i].v == vmax && mx[i].i == imax, "MAXLOC [%d]: (%g,%d), expected (%g,%d)", i, mx[i].v, mx[i].i, vmax, imax);
  }
  /* IN_PLACE MAXLOC, and MPI_2INT MINLOC. */
  CHECK_MPI(t, MPI_Allreduce(MPI_IN_PLACE, in, kN, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD));
  for (int i = 0; i < kN; i++) CHECK(t, in[i].v == mx[i].v && in[i].i == mx[i].i, "IN_PLACE MAXLOC [%d]", i);
  int two[2] = {t->rank % 2, t->rank}, two_out[2];
  MPI_Allreduce(two, two_out, 1, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD);
  CHECK(t, two_out[0] == 0 && two_out[1] == 0, "MPI_2INT MINLOC: (%d,%d)", two_out[0], two_out[1]);
  /* Logical and bitwise ops. */
  t->section = "logical_bitwise";
  int lb[4] = {t->rank != 0, 1, 1 << (t->rank % 31), t->rank == 0};
  int land, lor, bor, lxor;
  MPI_Allreduce(&lb[0], &land, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  MPI_Allreduce(&lb[1], &lor, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  MPI_Allreduce(&lb[2], &bor, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
  MPI_Allreduce(&lb[3], &lxor, 1, MPI_INT, MPI_LXOR, MPI_COMM_WORLD);
  int bref = 0;
  for (int r = 0; r < t->size; r++) bref |= 1 << (r % 31);
  CHECK(t, (land != 0) == 0, "LAND %d", land);  /* rank 0 contributes 0 */
  CHECK(t, lor != 0, "LOR %d", lor);
  CHECK_EQ(t, bor, bref);
  CHECK(t, (lxor != 0) == 1, "LXOR %d", lxor);  /* only rank 0 contributes true */
}

static void test_scan(struct tctx* t) {
  t->section = "scan_exscan";
  enum { kN = 4 };
  int in[kN], out[kN], ex[kN];
  for (int i = 0; i < kN; i++) in[i] = ival(t->rank, i) + 10, ex[i] = -12345;
  CHECK_MPI(t, MPI_Scan(in, out, kN, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  CHECK_MPI(t, MPI_Exscan(in, ex, kN, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  for (int i = 0; i < kN; i++) {
    int ref = 0;
    for (int r = 0; r <= t->rank; r++) ref += ival(r, i) + 10;
    CHECK(t, out[i] == ref, "Scan [%d]: %d, expected %d", i, out[i], ref);
    int exref = ref - in[i];
    if (t->rank > 0) CHECK(t, ex[i] == exref, "Exscan [%d]: %d, expected %d", i, ex[i], exref);
  }
  double d = t->rank + 1.0, dmax = 0;
  MPI_Scan(&d, &dmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  CHECK(t, dmax == t->rank + 1.0, "Scan MAX %g", dmax);
  /* IN_PLACE scan. */
  for (int i = 0; i < kN; i++) in[i] = 1;
  MPI_Scan(MPI_IN_PLACE, in, kN, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK_EQ(t, in[kN - 1], t->rank + 1);
}

static void test_reduce_scatter(struct tctx* t) {
  t->section = "reduce_scatter";
  int n = t->size;
  enum { kB = 3 };
  int* in = malloc(n * kB * sizeof(int));
  int out[kB];
  for (int i = 0; i < n * kB; i++) in[i] = ival(t->rank, i);
  CHECK_MPI(t, MPI_Reduce_scatter_block(in, out, kB, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  for (int j = 0; j < kB; j++) {
    int ref = 0, i = t->rank * kB + j;
    for (int r = 0; r < n; r++) ref += ival(r, i);
    CHECK(t, out[j] == ref, "Reduce_scatter_block [%d]: %d, expected %d", j, out[j], ref);
  }
  free(in);
  /* Varying counts, some zero. */
  int* counts = malloc(n * sizeof(int));
  int total = 0, mystart = 0;
  for (int r = 0; r < n; r++) {
    counts[r] = (r % 3 == 1) ? 0 : r % 4 + 1;
    if (r < t->rank) mystart += counts[r];
    total += counts[r];
  }
  double* din = malloc((total + 1) * sizeof(double));
  double* dout = malloc((counts[t->rank] + 1) * sizeof(double));
  for (int i = 0; i < total; i++) din[i] = dval(t->rank, i);
  CHECK_MPI(t, MPI_Reduce_scatter(din, dout, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
  for (int j = 0; j < counts[t->rank]; j++) {
    double ref = 0;
    for (int r = 0; r < n; r++) ref += dval(r, mystart + j);
    CHECK(t, dout[j] == ref, "Reduce_scatter [%d]: %g, expected %g", j, dout[j], ref);
  }
  free(counts);
  free(din);
  free(dout);
}

static void test_scatter_gather(struct tctx* t) {
  int n = t->size, me = t->rank;
  enum { kB = 3 };
  for (int root = 0; root < n; root += (n > 3 ? n / 3 : 1)) {
    t->section = "scatter";
    int* all = malloc(n * kB * sizeof(int));
    int part[kB];
    for (int i = 0; i < n * kB; i++) all[i] = me == root ? root * 1000 + i : -1;
    CHECK_MPI(t, MPI_Scatter(all, kB, MPI_INT, part, kB, MPI_INT, root, MPI_COMM_WORLD));
    for (int j = 0; j < kB; j++) CHECK_EQ(t, part[j], root * 1000 + me * kB + j);

    t->section = "gather";
    for (int j = 0; j < kB; j++) part[j] = me * 10 + j;
    for (int i = 0; i < n * kB; i++) all[i] = -1;
    CHECK_MPI(t, MPI_Gather(part, kB, MPI_INT, all, kB, MPI_INT, root, MPI_COMM_WORLD));
    if (me == root)
      for (int i = 0; i < n * kB; i++) CHECK(t, all[i] == (i / kB) * 10 + i % kB, "Gather root %d [%d]: %d", root, i, all[i]);
    /* Gather with MPI_IN_PLACE at the root. */
    if (me == root) {
      for (int i = 0; i < n * kB; i++) all[i] = (i / kB == root) ? root * 10 + i % kB : -1;
      MPI_Gather(MPI_IN_PLACE, kB, MPI_INT, all, kB, MPI_INT, root, MPI_COMM_WORLD);
      for (int i = 0; i < n * kB; i++) CHECK(t, all[i] == (i / kB) * 10 + i % kB, "Gather IN_PLACE [%d]: %d", i, all[i]);
    } else {
      MPI_Gather(part, kB, MPI_INT, NULL, 0, MPI_INT, root, MPI_COMM_WORLD);
    }
    free(all);

    /* Scatterv / Gatherv: rank r gets r % 4 + 1 elements, with a gap of 2 between blocks. */
    t->section = "scatterv";
    int* counts = malloc(n * sizeof(int));
    int* displs = malloc(n * sizeof(int));
    int span = 0;
    for (int r = 0; r < n; r++) {
      counts[r] = r % 4 + 1;
      displs[r] = span;
      span += counts[r] + 2;
    }
    int* big = malloc(span * sizeof(int));
    int mine[4] = {-1, -1, -1, -1};
    for (int i = 0; i < span; i++) big[i] = me == root ? 7 * i + root : -1;
    CHECK_MPI(t, MPI_Scatterv(big, counts, displs, MPI_INT, mine, counts[me], MPI_INT, root, MPI_COMM_WORLD));
    for (int j = 0; j < counts[me]; j++) CHECK_EQ(t, mine[j], 7 * (displs[me] + j) + root);
    if (counts[me] < 4) CHECK(t, mine[counts[me]] == -1, "Scatterv wrote past the count");

    t->section = "gatherv";
    for (int j = 0; j < 4; j++) mine[j] = me * 100 + j;
    for (int i = 0; i < span; i++) big[i] = -7;
    CHECK_MPI(t, MPI_Gatherv(mine, counts[me], MPI_INT, big, counts, displs, MPI_INT, root, MPI_COMM_WORLD));
    if (me == root) {
      for (int r = 0; r < n; r++) {
        for (int j = 0; j < counts[r]; j++) CHECK_EQ(t, big[displs[r] + j], r * 100 + j);
        CHECK(t, big[displs[r] + counts[r]] == -7 && big[displs[r] + counts[r] + 1] == -7, "Gatherv wrote into a gap");
      }
    }
    free(big);
    free(counts);
    free(displs);
  }
}

static void test_allgather_alltoall(struct tctx* t) {
  int n = t->size, me = t->rank;
  t->section = "allgather";
  int* all = malloc(n * 2 * sizeof(int));
  int two[2] = {me, -me};
  CHECK_MPI(t, MPI_Allgather(two, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD));
  for (int r = 0; r < n; r++) CHECK(t, all[2 * r] == r && all[2 * r + 1] == -r, "Allgather block %d", r);
  for (int i = 0; i < 2 * n; i++) all[i] = (i / 2 == me) ? (i % 2 ? -me : me) : 12345;
  CHECK_MPI(t, MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 2, MPI_INT, MPI_COMM_WORLD));
  for (int r = 0; r < n; r++) CHECK(t, all[2 * r] == r && all[2 * r + 1] == -r, "Allgather IN_PLACE block %d", r);
  free(all);

  t->section = "allgatherv";
  int* counts = malloc(n * sizeof(int));
  int* displs = malloc(n * sizeof(int));
  int span = 0;
  for (int r = 0; r < n; r++) counts[r] = (r * 5) % 3, displs[r] = span + 1, span += counts[r] + 1;
  double* dall = malloc((span + 1) * sizeof(double));
  double mine[3];
  for (int j = 0; j < 3; j++) mine[j] = me + j * 0.5;
  for (int i = 0; i <= span; i++) dall[i] = -1;
  CHECK_MPI(t, MPI_Allgatherv(mine, counts[me], MPI_DOUBLE, dall, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD));
  for (int r = 0; r < n; r++) {
    for (int j = 0; j < counts[r]; j++) CHECK(t, dall[displs[r] + j] == r + j * 0.5, "Allgatherv block %d [%d]", r, j);
    CHECK(t, dall[displs[r] - 1] == -1, "Allgatherv wrote into a gap");
  }
  free(dall);

  t->section = "alltoall";
  int* sb = malloc(n * 3 * sizeof(int));
  int* rb = malloc(n * 3 * sizeof(int));
  for (int r = 0; r < n; r++)
    for (int j = 0; j < 3; j++) sb[r * 3 + j] = me * 10000 + r * 10 + j;
  CHECK_MPI(t, MPI_Alltoall(sb, 3, MPI_INT, rb, 3, MPI_INT, MPI_COMM_WORLD));
  for (int r = 0; r < n; r++)
    for (int j = 0; j < 3; j++) CHECK_EQ(t, rb[r * 3 + j], r * 10000 + me * 10 + j);
  free(sb);
  free(rb);

  t->section = "alltoallv";
  /* Rank a sends (a + b) % 3 elements to rank b, packed in reverse rank order. */
  int *sc = malloc(n * sizeof(int)), *sd = malloc(n * sizeof(int));
  int *rc = malloc(n * sizeof(int)), *rd = malloc(n * sizeof(int));
  int stot = 0, rtot = 0;
  for (int r = n - 1; r >= 0; r--) sc[r] = (me + r) % 3, sd[r] = stot, stot += sc[r];
  for (int r = 0; r < n; r++) rc[r] = (r + me) % 3, rd[r] = rtot, rtot += rc[r] + 1;
  int* sv = malloc((stot + 1) * sizeof(int));
  int* rv = malloc((rtot + 1) * sizeof(int));
  for (int r = 0; r < n; r++)
    for (int j = 0; j < sc[r]; j++) sv[sd[r] + j] = me * 1000 + r * 10 + j;
  for (int i = 0; i <= rtot; i++) rv[i] = -1;
  CHECK_MPI(t, MPI_Alltoallv(sv, sc, sd, MPI_INT, rv, rc, rd, MPI_INT, MPI_COMM_WORLD));
  for (int r = 0; r < n; r++) {
    for (int j = 0; j < rc[r]; j++) CHECK_EQ(t, rv[rd[r] + j], r * 1000 + me * 10 + j);
    CHECK(t, rv[rd[r] + rc[r]] == -1, "Alltoallv wrote into a gap");
  }
  free(sc), free(sd), free(rc), free(rd), free(sv), free(rv);
  free(counts);
  free(displs);
}

static void test_nonblocking(struct tctx* t) {
  t->section = "nonblocking_collectives";
  int n = t->size, me = t->rank;
  int right = (me + 1) % n, left = (me + n - 1) % n;
  enum { kN = 50000 };
  int* bc = malloc(kN * sizeof(int));
  for (int i = 0; i < kN; i++) bc[i] = me == n - 1 ? i * 3 : -1;
  double ar_in[4], ar_out[4];
  for (int i = 0; i < 4; i++) ar_in[i] = dval(me, i);
  MPI_Request reqs[3];
  CHECK_MPI(t, MPI_Ibcast(bc, kN, MPI_INT, n - 1, MPI_COMM_WORLD, &reqs[0]));
  CHECK_MPI(t, MPI_Iallreduce(ar_in, ar_out, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &reqs[1]));
  CHECK_MPI(t, MPI_Ibarrier(MPI_COMM_WORLD, &reqs[2]));
  /* Other work while they are in flight: a ring exchange on a tag of its own. */
  int x = me, y = -1;
  MPI_Sendrecv(&x, 1, MPI_INT, right, 77, &y, 1, MPI_INT, left, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CHECK_EQ(t, y, left);
  int flag = 0;
  long polls = 0;
  while (!flag) {
    CHECK_MPI(t, MPI_Testall(3, reqs, &flag, MPI_STATUSES_IGNORE));
    polls++;
  }
  int bad = 0;
  for (int i = 0; i < kN; i++) bad += bc[i] != i * 3;
  CHECK(t, bad == 0, "Ibcast: %d ints differ", bad);
  for (int i = 0; i < 4; i++) {
    double ref = 0;
    for (int r = 0; r < n; r++) ref += dval(r, i);
    CHECK(t, ar_out[i] == ref, "Iallreduce [%d]: %g, expected %g", i, ar_out[i], ref);
  }
  /* Several outstanding Iallreduces at once, completed in reverse with Wait. */
  enum { kM = 4 };
  long long v[kM], s[kM];
  MPI_Request rq[kM];
  for (int k = 0; k < kM; k++) {
    v[k] = (long long)(me + 1) * (k + 1);
    MPI_Iallreduce(&v[k], &s[k], 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, &rq[k]);
  }
  for (int k = kM - 1; k >= 0; k--) {
    MPI_Wait(&rq[k], MPI_STATUS_IGNORE);
    CHECK_EQ(t, s[k], (long long)n * (n + 1) / 2 * (k + 1));
  }
  /* An Ibarrier completed by a Test loop. */
  MPI_Request br;
  MPI_Ibarrier(MPI_COMM_WORLD, &br);
  flag = 0;
  while (!flag) MPI_Test(&br, &flag, MPI_STATUS_IGNORE);
  CHECK(t, br == MPI_REQUEST_NULL, "Test did not free the completed Ibarrier");
  free(bc);
}

/* 2x2 matrices of ints modulo kP, row major: product is associative, not commutative. */
enum { kP = 10007 };
static void matmul_op(void* invec, void* inoutvec, int* len, MPI_Datatype* type) {
  (void)type;
  const int* a = invec;
  int* b = inoutvec;
  for (int k = 0; k < *len; k++, a += 4, b += 4) {
    int c0 = (a[0] * b[0] + a[1] * b[2]) % kP, c1 = (a[0] * b[1] + a[1] * b[3]) % kP;
    int c2 = (a[2] * b[0] + a[3] * b[2]) % kP, c3 = (a[2] * b[1] + a[3] * b[3]) % kP;
    b[0] = c0, b[1] = c1, b[2] = c2, b[3] = c3;  /* b = a * b: a holds the lower ranks */
  }
}
static void mat_of(int r, int k, int m[4]) {
  m[0] = 1 + r, m[1] = 2 + k, m[2] = 3 * r + 1, m[3] = 5 + r + k;
}
static void mat_ref(int upto, int k, int out[4]) { /* M_0 * M_1 * ... * M_upto */
  int acc[4];
  mat_of(0, k, acc);
  for (int r = 1; r <= upto; r++) {
    int m[4], len = 1;
    mat_of(r, k, m);
    matmul_op(acc, m, &len, NULL);
    memcpy(acc, m, sizeof acc);
  }
  memcpy(out, acc, sizeof acc);
}

static void test_user_op(struct tctx* t) {
  t->section = "user_op";
  int n = t->size, me = t->rank;
  MPI_Datatype mat;
  MPI_Type_contiguous(4, MPI_INT, &mat);
  MPI_Type_commit(&mat);
  MPI_Op op;
  CHECK_MPI(t, MPI_Op_create(matmul_op, 0, &op));
  int commute = 1;
  MPI_Op_commutative(op, &commute);
  CHECK_EQ(t, commute, 0);
  enum { kM = 3 };
  int in[kM][4], out[kM][4], ref[kM][4];
  for (int k = 0; k < kM; k++) mat_of(me, k, in[k]), mat_ref(n - 1, k, ref[k]);
  for (int root = 0; root < n; root += (n > 2 ? n - 1 : 1)) {
    memset(out, 0, sizeof out);
    CHECK_MPI(t, MPI_Reduce(in, out, kM, mat, op, root, MPI_COMM_WORLD));
    if (me == root)
      for (int k = 0; k < kM; k++)
        CHECK(t, memcmp(out[k], ref[k], sizeof ref[k]) == 0,
              "Reduce of matrices (root %d) [%d]: {%d %d %d %d}, expected {%d %d %d %d} (operands out of rank order?)",
              root, k, out[k][0], out[k][1], out[k][2], out[k][3], ref[k][0], ref[k][1], ref[k][2], ref[k][3]);
  }
  memset(out, 0, sizeof out);
  CHECK_MPI(t, MPI_Allreduce(in, out, kM, mat, op, MPI_COMM_WORLD));
  for (int k = 0; k < kM; k++)
    CHECK(t, memcmp(out[k], ref[k], sizeof ref[k]) == 0, "Allreduce of matrices [%d]: {%d %d %d %d}, expected {%d %d %d %d}",
          k, out[k][0], out[k][1], out[k][2], out[k][3], ref[k][0], ref[k][1], ref[k][2], ref[k][3]);
  CHECK_MPI(t, MPI_Scan(in, out, kM, mat, op, MPI_COMM_WORLD));
  for (int k = 0; k < kM; k++) {
    int pref[4];
    mat_ref(me, k, pref);
    CHECK(t, memcmp(out[k], pref, sizeof pref) == 0, "Scan of matrices [%d]", k);
  }
  CHECK_MPI(t, MPI_Op_free(&op));
  CHECK(t, op == MPI_OP_NULL, "Op_free did not set MPI_OP_NULL");
  MPI_Type_free(&mat);
}

static void test_subcomm(struct tctx* t) {
  t->section = "subcomm";
  int n = t->size, me = t->rank;
  MPI_Comm sub;
  int color = me % 2;
  CHECK_MPI(t, MPI_Comm_split(MPI_COMM_WORLD, color, -me, &sub)); /* reversed order */
  int ssize = 0, srank = -1;
  MPI_Comm_size(sub, &ssize);
  MPI_Comm_rank(sub, &srank);
  int members = 0, above = 0;
  for (int r = 0; r < n; r++)
    if (r % 2 == color) members++, above += r > me;
  CHECK_EQ(t, ssize, members);
  CHECK_EQ(t, srank, above);
  int sum = 0, ref = 0;
  for (int r = 0; r < n; r++)
    if (r % 2 == color) ref += r;
  MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, sub);
  CHECK_EQ(t, sum, ref);
  /* Bcast from sub-rank 0 (the highest world rank of the colour). */
  int top = me;
  MPI_Bcast(&top, 1, MPI_INT, 0, sub);
  int topref = -1;
  for (int r = 0; r < n; r++)
    if (r % 2 == color) topref = r;
  CHECK_EQ(t, top, topref);
  int* g = malloc(ssize * sizeof(int));
  MPI_Allgather(&me, 1, MPI_INT, g, 1, MPI_INT, sub);
  for (int i = 0; i < ssize; i++) CHECK_EQ(t, g[i], topref - 2 * i);
  free(g);
  int sc = 0;
  MPI_Scan(&me, &sc, 1, MPI_INT, MPI_SUM, sub);
  int scref = 0;
  for (int r = me; r < n; r++)
    if (r % 2 == color) scref += r;
  CHECK_EQ(t, sc, scref);
  MPI_Barrier(sub);
  MPI_Comm_free(&sub);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "collectives");
  test_barrier(&t);
  test_bcast(&t);
  test_reduce(&t);
  test_allreduce(&t);
  test_scan(&t);
  test_reduce_scatter(&t);
  test_scatter_gather(&t);
  test_allgather_alltoall(&t);
  test_nonblocking(&t);
  test_user_op(&t);
  test_subcomm(&t);
  return tctx_finish(&t);
}
