/* Each collective algorithm at the sizes that select it (runtime/ampi/README.md, "Collective
 * algorithms"): binomial and Rabenseifner Reduce and Allreduce (commutative, a
 * non-commutative user op, a strided datatype, in place), binomial and scatter + ring Bcast,
 * Bruck's and the ring Allgather(v), direct and pairwise Alltoall, and the nonblocking
 * twins of each, two in flight at once. Every rank computes the expected result itself.
 * Run at 1, 2, 3, 4, 5 and 8 ranks, and with +vp. */
#include "check.h"

static int ival(int r, long i) { return (int)((r * 7 + i * 3) % 11) - 5; }

/* Counts of ints: 1 and 7 stay binomial / recursive doubling (Reduce: flat at 3 and 4
 * ranks on crowded cores); 600 (2400 B) takes Rabenseifner's where the op commutes, the odd
 * 70001 Rabenseifner's Allreduce and the segmented Reduce, 300001 (1.2 MB) the pipelined
 * halves of Allreduce at 2 ranks. */
static const int kRedCounts[] = {1, 7, 600, 70001, 300001};
enum { kNRed = 5, kRedMax = 300001 };

static void test_allreduce_reduce(struct tctx* t) {
  const int n = t->size, me = t->rank;
  int* in = malloc(kRedMax * sizeof(int));
  int* out = malloc(kRedMax * sizeof(int));
  for (int ci = 0; ci < kNRed; ci++) {
    const int cnt = kRedCounts[ci];
    for (int i = 0; i < cnt; i++) in[i] = ival(me, i);
    t->section = "allreduce";
    CHECK_MPI(t, MPI_Allreduce(in, out, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    int bad = 0;
    for (int i = 0; i < cnt; i++) {
      int want = 0;
      for (int r = 0; r < n; r++) want += ival(r, i);
      bad += out[i] != want;
    }
    CHECK(t, bad == 0, "Allreduce SUM count %d: %d ints differ", cnt, bad);
    t->section = "allreduce in place";
    for (int i = 0; i < cnt; i++) out[i] = ival(me, i);
    CHECK_MPI(t, MPI_Allreduce(MPI_IN_PLACE, out, cnt, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    bad = 0;
    for (int i = 0; i < cnt; i++) {
      int want = ival(0, i);
      for (int r = 1; r < n; r++) want = ival(r, i) > want ? ival(r, i) : want;
      bad += out[i] != want;
    }
    CHECK(t, bad == 0, "Allreduce MAX in place count %d: %d ints differ", cnt, bad);
    t->section = "reduce";
    const int roots[3] = {0, n - 1, n / 2};
    for (int ri = 0; ri < 3; ri++) {
      const int root = roots[ri];
      const int in_place = ri == 2 && me == root;
      for (int i = 0; i < cnt; i++) out[i] = in_place ? ival(me, i) : -99;
      CHECK_MPI(t, MPI_Reduce(in_place ? MPI_IN_PLACE : in, out, cnt, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
      if (me == root) {
        bad = 0;
        for (int i = 0; i < cnt; i++) {
          int want = 0;
          for (int r = 0; r < n; r++) want += ival(r, i);
          bad += out[i] != want;
        }
        CHECK(t, bad == 0, "Reduce root %d count %d%s: %d ints differ", root, cnt, in_place ? " in place" : "", bad);
      } else {
        CHECK(t, out[0] == -99, "Reduce wrote the receive buffer of a rank other than the root");
      }
    }
  }
  free(in);
  free(out);
}

/* Non-commutative: x -> a x + b maps (unsigned pairs), composed in rank order. */
static void affine(void* invec, void* inoutvec, int* len, MPI_Datatype* dt) {
  (void)dt;
  unsigned* x = invec;
  unsigned* y = inoutvec;
  for (int i = 0; i < *len; i++) {  /* y = x then y */
    unsigned a = x[2 * i] * y[2 * i], b = y[2 * i] * x[2 * i + 1] + y[2 * i + 1];
    y[2 * i] = a;
    y[2 * i + 1] = b;
  }
}
static unsigned aval(int r, int i) { return (unsigned)(r * 2 + i % 5 + 1); }
static unsigned bval(int r, int i) { return (unsigned)(r * 13 + i); }

static void test_noncommutative(struct tctx* t) {
  t->section = "non-commutative";
  const int n = t->size, me = t->rank;
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_UNSIGNED, &pair);
  MPI_Type_commit(&pair);
  MPI_Op op;
  MPI_Op_create(affine, 0, &op);
  static const int counts[] = {3, 2000, 140000}; /* 140000 pairs (1.1 MB): the pipelined halves at 2 ranks */
  for (int ci = 0; ci < 3; ci++) {
    const int cnt = counts[ci];
    unsigned* in = malloc(2 * cnt * sizeof(unsigned));
    unsigned* out = malloc(2 * cnt * sizeof(unsigned));
    for (int i = 0; i < cnt; i++) in[2 * i] = aval(me, i), in[2 * i + 1] = bval(me, i);
    int bad = 0;
    CHECK_MPI(t, MPI_Allreduce(in, out, cnt, pair, op, MPI_COMM_WORLD));
    for (int i = 0; i < cnt; i++) {
      unsigned a = aval(0, i), b = bval(0, i);
      for (int r = 1; r < n; r++) b = aval(r, i) * b + bval(r, i), a = a * aval(r, i);
      bad += out[2 * i] != a || out[2 * i + 1] != b;
    }
    CHECK(t, bad == 0, "Allreduce non-commutative count %d: %d pairs differ", cnt, bad);
    const int root = n - 1;
    CHECK_MPI(t, MPI_Reduce(in, out, cnt, pair, op, root, MPI_COMM_WORLD));
    if (me == root) {
      bad = 0;
      for (int i = 0; i < cnt; i++) {
        unsigned a = aval(0, i), b = bval(0, i);
        for (int r = 1; r < n; r++) b = aval(r, i) * b + bval(r, i), a = a * aval(r, i);
        bad += out[2 * i] != a || out[2 * i + 1] != b;
      }
      CHECK(t, bad == 0, "Reduce non-commutative count %d: %d pairs differ", cnt, bad);
    }
    free(in);
    free(out);
  }
  MPI_Op_free(&op);
  MPI_Type_free(&pair);
}

/* A strided type (an int every 8 bytes) and a commutative user op on it: Rabenseifner's
 * blocks start at element offsets of the type's extent. */
static void strided_sum(void* invec, void* inoutvec, int* len, MPI_Datatype* dt) {
  (void)dt;
  int* x = invec;
  int* y = inoutvec;
  for (int i = 0; i < *len; i++) y[2 * i] += x[2 * i];
}

static void test_strided(struct tctx* t) {
  t->section = "strided";
  const int n = t->size, me = t->rank, cnt = 1000;
  MPI_Datatype st;
  MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &st);
  MPI_Type_commit(&st);
  MPI_Op op;
  MPI_Op_create(strided_sum, 1, &op);
  int* in = malloc(2 * cnt * sizeof(int));
  int* out = malloc(2 * cnt * sizeof(int));
  for (int i = 0; i < cnt; i++) in[2 * i] = ival(me, i), in[2 * i + 1] = -1, out[2 * i] = 0, out[2 * i + 1] = -7;
  CHECK_MPI(t, MPI_Allreduce(in, out, cnt, st, op, MPI_COMM_WORLD));
  int bad = 0;
  for (int i = 0; i < cnt; i++) {
    int want = 0;
    for (int r = 0; r < n; r++) want += ival(r, i);
    bad += out[2 * i] != want || out[2 * i + 1] != -7;
  }
  CHECK(t, bad == 0, "Allreduce on a strided type: %d elements differ or gaps written", bad);
  /* Reduce of a long strided vector: the segmented tree's segments start at element offsets. */
  const int lcnt = 40000, root = n / 2;
  int* lin = malloc(2 * lcnt * sizeof(int));
  int* lout = malloc(2 * lcnt * sizeof(int));
  for (int i = 0; i < lcnt; i++) lin[2 * i] = ival(me, i), lin[2 * i + 1] = -1, lout[2 * i] = 0, lout[2 * i + 1] = -7;
  CHECK_MPI(t, MPI_Reduce(lin, lout, lcnt, st, op, root, MPI_COMM_WORLD));
  if (me == root) {
    bad = 0;
    for (int i = 0; i < lcnt; i++) {
      int want = 0;
      for (int r = 0; r < n; r++) want += ival(r, i);
      bad += lout[2 * i] != want || lout[2 * i + 1] != -7;
    }
    CHECK(t, bad == 0, "Reduce of %d strided elements: %d differ or gaps written", lcnt, bad);
  }
  free(lin);
  free(lout);
  /* Allgather of strided blocks (Bruck's unpacks into them). */
  int* all = malloc(2 * 4 * n * sizeof(int));
  for (int i = 0; i < 8 * n; i++) all[i] = -7;
  int mine[4] = {me * 10, me * 10 + 1, me * 10 + 2, me * 10 + 3};
  CHECK_MPI(t, MPI_Allgather(mine, 4, MPI_INT, all, 4, st, MPI_COMM_WORLD));
  bad = 0;
  for (int r = 0; r < n; r++)
    for (int j = 0; j < 4; j++) bad += all[2 * (4 * r + j)] != r * 10 + j || all[2 * (4 * r + j) + 1] != -7;
  CHECK(t, bad == 0, "Allgather into a strided type: %d elements differ", bad);
  /* Alltoall into strided blocks (Bruck's unpacks into them at 8 ranks and more). */
  int* sbuf = malloc(2 * n * sizeof(int));
  for (int i = 0; i < 2 * n; i++) sbuf[i] = me * 1000 + i;
  for (int i = 0; i < 8 * n; i++) all[i] = -7;
  CHECK_MPI(t, MPI_Alltoall(sbuf, 2, MPI_INT, all, 2, st, MPI_COMM_WORLD));
  bad = 0;
  for (int src = 0; src < n; src++)
    for (int j = 0; j < 2; j++) bad += all[2 * (2 * src + j)] != src * 1000 + 2 * me + j || all[2 * (2 * src + j) + 1] != -7;
  CHECK(t, bad == 0, "Alltoall into a strided type: %d elements differ", bad);
  free(sbuf);
  free(all);
  free(in);
  free(out);
  MPI_Op_free(&op);
  MPI_Type_free(&st);
}

static void test_bcast(struct tctx* t) {
  t->section = "bcast";
  const int n = t->size, me = t->rank;
  static const int counts[] = {2, 5000, 150001}; /* 8 B, 20000 B, 600004 B */
  int* buf = malloc(150001 * sizeof(int));
  const int roots[3] = {0, n - 1, n / 2};
  for (int ci = 0; ci < 3; ci++)
    for (int ri = 0; ri < 3; ri++) {
      const int cnt = counts[ci], root = roots[ri];
      for (int i = 0; i < cnt; i++) buf[i] = me == root ? root * 31 + i : -1;
      CHECK_MPI(t, MPI_Bcast(buf, cnt, MPI_INT, root, MPI_COMM_WORLD));
      int bad = 0;
      for (int i = 0; i < cnt; i++) bad += buf[i] != root * 31 + i;
      CHECK(t, bad == 0, "Bcast root %d count %d: %d ints differ", root, cnt, bad);
    }
  free(buf);
}

static void test_allgather(struct tctx* t) {
  t->section = "allgather";
  const int n = t->size, me = t->rank;
  static const int counts[] = {1, 3, 30000}; /* Bruck's below 80 KiB in all, ring above */
  for (int ci = 0; ci < 3; ci++)
    for (int in_place = 0; in_place < 2; in_place++) {
      const int cnt = counts[ci];
      int* mine = malloc(cnt * sizeof(int));
      int* all = malloc((size_t)cnt * n * sizeof(int));
      for (int i = 0; i < cnt; i++) mine[i] = me * 1000 + i;
      for (long i = 0; i < (long)cnt * n; i++) all[i] = in_place && i / cnt == me ? me * 1000 + i % cnt : -1;
      CHECK_MPI(t, MPI_Allgather(in_place ? MPI_IN_PLACE : mine, cnt, MPI_INT, all, cnt, MPI_INT, MPI_COMM_WORLD));
      int bad = 0;
      for (long i = 0; i < (long)cnt * n; i++) bad += all[i] != (int)(i / cnt) * 1000 + (int)(i % cnt);
      CHECK(t, bad == 0, "Allgather count %d%s: %d ints differ", cnt, in_place ? " in place" : "", bad);
      free(mine);
      free(all);
    }
  /* Allgatherv (ring): counts differ, some zero, gaps between blocks stay untouched. */
  t->section = "allgatherv";
  int* counts_v = malloc(n * sizeof(int));
  int* displs = malloc(n * sizeof(int));
  int span = 0;
  for (int r = 0; r < n; r++) counts_v[r] = (r % 3) * 7000, displs[r] = span + 1, span += counts_v[r] + 1;
  int* all = malloc((span + 1) * sizeof(int));
  int* mine = malloc((counts_v[me] + 1) * sizeof(int));
  for (int i = 0; i < counts_v[me]; i++) mine[i] = me * 100000 + i;
  for (int i = 0; i <= span; i++) all[i] = -3;
  CHECK_MPI(t, MPI_Allgatherv(mine, counts_v[me], MPI_INT, all, counts_v, displs, MPI_INT, MPI_COMM_WORLD));
  int bad = 0;
  for (int r = 0; r < n; r++) {
    for (int i = 0; i < counts_v[r]; i++) bad += all[displs[r] + i] != r * 100000 + i;
    bad += all[displs[r] - 1] != -3;
  }
  CHECK(t, bad == 0, "Allgatherv: %d ints differ", bad);
  free(all);
  free(mine);
  free(counts_v);
  free(displs);
}

static void test_alltoall(struct tctx* t) {
  t->section = "alltoall";
  const int n = t->size, me = t->rank;
  /* 8 B blocks: Bruck's at 8 ranks or more; 400 B posted at once; 36000 B pairwise. */
  static const int counts[] = {2, 100, 9000};
  for (int ci = 0; ci < 3; ci++)
    for (int in_place = 0; in_place < 2; in_place++) {
      const int cnt = counts[ci];
      int* s = malloc((size_t)cnt * n * sizeof(int));
      int* r = malloc((size_t)cnt * n * sizeof(int));
      for (long i = 0; i < (long)cnt * n; i++) s[i] = me * 1000000 + (int)i, r[i] = in_place ? s[i] : -1;
      CHECK_MPI(t, MPI_Alltoall(in_place ? MPI_IN_PLACE : s, cnt, MPI_INT, r, cnt, MPI_INT, MPI_COMM_WORLD));
      int bad = 0;
      for (int src = 0; src < n; src++)
        for (int i = 0; i < cnt; i++) bad += r[(long)src * cnt + i] != src * 1000000 + me * cnt + i;
      CHECK(t, bad == 0, "Alltoall count %d%s: %d ints differ", cnt, in_place ? " in place" : "", bad);
      free(s);
      free(r);
    }
}

/* The nonblocking twins, two in flight at once (their tasks interleave). */
static void test_nonblocking(struct tctx* t) {
  t->section = "nonblocking";
  const int n = t->size, me = t->rank, cnt = 5000;
  int* a = malloc(cnt * sizeof(int));
  int* b = malloc(cnt * sizeof(int));
  int* c = malloc(cnt * sizeof(int));
  int* g = malloc((size_t)cnt * n * sizeof(int));
  for (int i = 0; i < cnt; i++) a[i] = ival(me, i), c[i] = me == 0 ? i * 3 : -1;
  MPI_Request q[4];
  CHECK_MPI(t, MPI_Iallreduce(a, b, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[0]));
  CHECK_MPI(t, MPI_Ibcast(c, cnt, MPI_INT, 0, MPI_COMM_WORLD, &q[1]));
  CHECK_MPI(t, MPI_Iallgather(a, cnt, MPI_INT, g, cnt, MPI_INT, MPI_COMM_WORLD, &q[2]));
  int* red = malloc(cnt * sizeof(int));
  CHECK_MPI(t, MPI_Ireduce(a, red, cnt, MPI_INT, MPI_SUM, n - 1, MPI_COMM_WORLD, &q[3]));
  CHECK_MPI(t, MPI_Waitall(4, q, MPI_STATUSES_IGNORE));
  int bad = 0;
  for (int i = 0; i < cnt; i++) {
    int want = 0;
    for (int r = 0; r < n; r++) want += ival(r, i);
    bad += b[i] != want || c[i] != i * 3 || (me == n - 1 && red[i] != want);
    for (int r = 0; r < n; r++) bad += g[(long)r * cnt + i] != ival(r, i);
  }
  CHECK(t, bad == 0, "nonblocking collectives: %d values differ", bad);
  free(a);
  free(b);
  free(c);
  free(g);
  free(red);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "coll_algorithms");
  test_allreduce_reduce(&t);
  test_noncommutative(&t);
  test_strided(&t);
  test_bcast(&t);
  test_allgather(&t);
  test_alltoall(&t);
  test_nonblocking(&t);
  return tctx_finish(&t);
}
