/* MPI_Type_create_darray and MPI_Type_create_subarray (MPI-3.1 4.1.3-4.1.4): for grids of
 * several shapes, distributions (block, cyclic(k), none, default and explicit dargs) and both
 * orders, every process's type selects exactly the elements the HPF rules give it (found by
 * packing a global array whose elements are their own indices, checked against a brute-force
 * ownership test), has lb 0 and the whole array's extent, and describes itself through
 * Type_get_envelope/contents. The types also carry data between ranks. */
#include "check.h"

#define MAXE 4096

/* Owner coordinate of global index i in one dimension, and whether `coord` owns it. */
static int owns(int i, int g, int distrib, int darg, int p, int coord) {
  if (distrib == MPI_DISTRIBUTE_NONE) return 1;
  if (distrib == MPI_DISTRIBUTE_BLOCK) {
    int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : darg;
    return i / b == coord;
  }
  int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
  return (i / b) % p == coord;
}

/* The elements (global linear indices, in memory order) rank `r` owns, brute force. */
static int expected(int r, int nd, const int* g, const int* dist, const int* darg, const int* ps, int order, int* out) {
  int coords[8], n = 0, total = 1;
  for (int d = nd - 1, x = r; d >= 0; d--) {
    coords[d] = x % ps[d];
    x /= ps[d];
  }
  for (int d = 0; d < nd; d++) total *= g[d];
  for (int lin = 0; lin < total; lin++) {
    /* Index of each dimension from the linear memory position. */
    int idx[8], x = lin, ok = 1;
    for (int k = 0; k < nd; k++) {
      int d = order == MPI_ORDER_C ? nd - 1 - k : k;
      idx[d] = x % g[d];
      x /= g[d];
    }
    for (int d = 0; d < nd && ok; d++) ok = owns(idx[d], g[d], dist[d], darg[d], ps[d], coords[d]);
    if (ok) out[n++] = lin;
  }
  return n;
}

static void check_type_selects(struct tctx* t, MPI_Datatype dt, int total, const int* want, int nwant) {
  int global[MAXE], packed[MAXE], pos = 0, size = 0;
  for (int i = 0; i < total; i++) global[i] = i;
  MPI_Aint lb = -1, ext = -1;
  MPI_Type_get_extent(dt, &lb, &ext);
  CHECK_EQ(t, lb, 0);
  CHECK_EQ(t, ext, (MPI_Aint)total * (MPI_Aint)sizeof(int));
  MPI_Type_size(dt, &size);
  CHECK_EQ(t, size, nwant * (int)sizeof(int));
  MPI_Pack(global, 1, dt, packed, (int)sizeof packed, &pos, MPI_COMM_SELF);
  CHECK_EQ(t, pos, nwant * (int)sizeof(int));
  for (int i = 0; i < nwant && i < pos / (int)sizeof(int); i++) CHECK_EQ(t, packed[i], want[i]);
}

struct dcase {
  int nd, g[3], dist[3], darg[3], ps[3];
};

static void test_darray(struct tctx* t) {
  const int B = MPI_DISTRIBUTE_BLOCK, C = MPI_DISTRIBUTE_CYCLIC, N = MPI_DISTRIBUTE_NONE, D = MPI_DISTRIBUTE_DFLT_DARG;
  const struct dcase cases[] = {
      {1, {10}, {B}, {D}, {3}},
      {1, {10}, {C}, {D}, {4}},
      {1, {17}, {C}, {3}, {2}},
      {1, {9}, {B}, {5}, {2}},
      {2, {6, 7}, {B, C}, {D, 2}, {2, 3}},
      {2, {5, 8}, {N, B}, {D, D}, {1, 4}},
      {3, {4, 5, 6}, {C, B, C}, {1, D, 2}, {2, 1, 3}},
      {2, {12, 3}, {C, C}, {5, D}, {3, 2}},
  };
  int want[MAXE];
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const struct dcase* k = &cases[c];
    int procs = 1, total = 1;
    for (int d = 0; d < k->nd; d++) {
      procs *= k->ps[d];
      total *= k->g[d];
    }
    for (int order = 0; order < 2; order++) {
      const int ord = order ? MPI_ORDER_FORTRAN : MPI_ORDER_C;
      /* This rank checks the grid ranks r = rank, rank + size, ... */
      for (int r = t->rank; r < procs; r += t->size) {
        t->section = "darray";
        MPI_Datatype dt;
        CHECK_MPI(t, MPI_Type_create_darray(procs, r, k->nd, k->g, k->dist, k->darg, k->ps, ord, MPI_INT, &dt));
        MPI_Type_commit(&dt);
        const int n = expected(r, k->nd, k->g, k->dist, k->darg, k->ps, ord, want);
        check_type_selects(t, dt, total, want, n);
        int ni = -1, na = -1, nt = -1, comb = -1;
        MPI_Type_get_envelope(dt, &ni, &na, &nt, &comb);
        CHECK_EQ(t, comb, MPI_COMBINER_DARRAY);
        CHECK_EQ(t, ni, 4 * k->nd + 4);
        CHECK_EQ(t, na, 0);
        CHECK_EQ(t, nt, 1);
        int ints[32];
        MPI_Datatype old;
        MPI_Type_get_contents(dt, 32, 0, 1, ints, NULL, &old);
        CHECK_EQ(t, ints[0], procs);
        CHECK_EQ(t, ints[1], r);
        CHECK_EQ(t, ints[2], k->nd);
        CHECK_EQ(t, ints[3 + k->nd], k->dist[0]);
        CHECK_EQ(t, ints[4 * k->nd + 3], ord);
        CHECK(t, old == MPI_INT, "contents: oldtype is not MPI_INT");
        MPI_Type_free(&dt);
      }
    }
  }
}

/* Subarray: a 3-D box inside a 5x6x7 array in both orders. */
static void test_subarray(struct tctx* t) {
  t->section = "subarray";
  int sizes[3] = {5, 6, 7}, subs[3] = {2, 3, 4}, starts[3] = {1, 2, 3}, want[MAXE];
  for (int order = 0; order < 2; order++) {
    const int ord = order ? MPI_ORDER_FORTRAN : MPI_ORDER_C;
    MPI_Datatype dt;
    CHECK_MPI(t, MPI_Type_create_subarray(3, sizes, subs, starts, ord, MPI_INT, &dt));
    MPI_Type_commit(&dt);
    int n = 0;
    for (int lin = 0; lin < 5 * 6 * 7; lin++) {
      int idx[3], x = lin, ok = 1;
      for (int k = 0; k < 3; k++) {
        int d = ord == MPI_ORDER_C ? 2 - k : k;
        idx[d] = x % sizes[d];
        x /= sizes[d];
      }
      for (int d = 0; d < 3; d++) ok = ok && idx[d] >= starts[d] && idx[d] < starts[d] + subs[d];
      if (ok) want[n++] = lin;
    }
    check_type_selects(t, dt, 5 * 6 * 7, want, n);
    MPI_Aint tlb = -1, text = -1;
    MPI_Type_get_true_extent(dt, &tlb, &text);
    CHECK_EQ(t, tlb, (MPI_Aint)want[0] * (MPI_Aint)sizeof(int));
    CHECK_EQ(t, text, (MPI_Aint)(want[n - 1] - want[0] + 1) * (MPI_Aint)sizeof(int));
    MPI_Type_free(&dt);
  }
}

/* Block distribution of a 1-D array over all ranks: each rank receives its part from rank
 * 0, which sends the global array with each rank's darray type. */
static void test_transfer(struct tctx* t) {
  t->section = "transfer";
  const int g = 3 * t->size + 1, dist = MPI_DISTRIBUTE_CYCLIC, darg = 2;
  int global[MAXE], part[MAXE], want[MAXE];
  if (g > MAXE) return;
  for (int i = 0; i < g; i++) global[i] = 1000 + i;
  const int n = expected(t->rank, 1, &g, &dist, &darg, &t->size, MPI_ORDER_C, want);
  if (t->rank == 0) {
    for (int r = 0; r < t->size; r++) {
      MPI_Datatype dt;
      MPI_Type_create_darray(t->size, r, 1, &g, &dist, &darg, &t->size, MPI_ORDER_C, MPI_INT, &dt);
      MPI_Type_commit(&dt);
      MPI_Request rq;
      MPI_Isend(global, 1, dt, r, 4, MPI_COMM_WORLD, &rq);
      MPI_Type_free(&dt);
      if (r == 0) {
        MPI_Recv(part, MAXE, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
    }
  } else {
    MPI_Recv(part, MAXE, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  for (int i = 0; i < n; i++) CHECK_EQ(t, part[i], 1000 + want[i]);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "darray");
  test_darray(&t);
  test_subarray(&t);
  test_transfer(&t);
  return tctx_finish(&t);
}
