/* Distributed graph topologies and neighbourhood collectives (MPI-3.1 7.5.4-7.6):
 * Dist_graph_create_adjacent (weighted) and Dist_graph_create (one rank names every edge;
 * each rank names its own), Dist_graph_neighbors(_count), Topo_test; Neighbor_allgather(v)
 * and Neighbor_alltoall(v,w), blocking and nonblocking, on Cartesian (MPI_PROC_NULL edges,
 * a periodic ring, also of 1 and 2 ranks), graph and distributed graph topologies. Any rank
 * count. */
#include "check.h"

/* MPI_UNWEIGHTED is a small constant pointer that GCC takes for an array of size 0. */
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#pragma GCC diagnostic ignored "-Wstringop-overread"

#define MAXN 8

static int mod(int a, int n) { return ((a % n) + n) % n; }

/* A 2-D non-periodic grid: neighbours off the edge are MPI_PROC_NULL (blocks untouched). */
static void test_cart(struct tctx* t) {
  t->section = "cart";
  int dims[2] = {0, 0}, periods[2] = {0, 0};
  MPI_Dims_create(t->size, 2, dims);
  MPI_Comm cart;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
  int nb[4];
  for (int d = 0; d < 2; d++) MPI_Cart_shift(cart, d, 1, &nb[2 * d], &nb[2 * d + 1]);
  int sb[4], rb[4], one = t->rank;
  for (int i = 0; i < 4; i++) {
    sb[i] = t->rank * 100 + i;
    rb[i] = -1;
  }
  CHECK_MPI(t, MPI_Neighbor_allgather(&one, 1, MPI_INT, rb, 1, MPI_INT, cart));
  for (int i = 0; i < 4; i++) CHECK_EQ(t, rb[i], nb[i] == MPI_PROC_NULL ? -1 : nb[i]);
  for (int i = 0; i < 4; i++) rb[i] = -1;
  CHECK_MPI(t, MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, cart));
  /* Block 2d comes from the neighbour below, which sent it its block 2d+1 (upwards). */
  for (int d = 0; d < 2; d++) {
    CHECK_EQ(t, rb[2 * d], nb[2 * d] == MPI_PROC_NULL ? -1 : nb[2 * d] * 100 + 2 * d + 1);
    CHECK_EQ(t, rb[2 * d + 1], nb[2 * d + 1] == MPI_PROC_NULL ? -1 : nb[2 * d + 1] * 100 + 2 * d);
  }
  MPI_Request rq;
  for (int i = 0; i < 4; i++) rb[i] = -1;
  CHECK_MPI(t, MPI_Ineighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, cart, &rq));
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  for (int d = 0; d < 2; d++)
    CHECK_EQ(t, rb[2 * d], nb[2 * d] == MPI_PROC_NULL ? -1 : nb[2 * d] * 100 + 2 * d + 1);
  MPI_Comm_free(&cart);

  /* A periodic ring; of 1 or 2 ranks too, where one rank is the neighbour on both sides:
   * what it sent upwards comes in from below. */
  {
    t->section = "cart_ring";
    int n = t->size, p = 1;
    MPI_Cart_create(MPI_COMM_WORLD, 1, &n, &p, 0, &cart);
    CHECK_MPI(t, MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, cart));
    CHECK_EQ(t, rb[0], mod(t->rank - 1, n) * 100 + 1);
    CHECK_EQ(t, rb[1], mod(t->rank + 1, n) * 100 + 0);
    MPI_Comm_free(&cart);
  }
}

/* A graph ring (at least 3 nodes): neighbours [r-1, r+1]. */
static void test_graph(struct tctx* t) {
  if (t->size < 3) return;
  t->section = "graph";
  const int n = t->size;
  int index[64], edges[128];
  for (int r = 0; r < n; r++) {
    index[r] = 2 * (r + 1);
    edges[2 * r] = mod(r - 1, n);
    edges[2 * r + 1] = mod(r + 1, n);
  }
  MPI_Comm g;
  MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 0, &g);
  int sb[2] = {t->rank * 100, t->rank * 100 + 1}, rb[2] = {-1, -1};
  CHECK_MPI(t, MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, g));
  CHECK_EQ(t, rb[0], mod(t->rank - 1, n) * 100 + 1);
  CHECK_EQ(t, rb[1], mod(t->rank + 1, n) * 100 + 0);
  int counts[2] = {1, 1}, displs[2] = {1, 0};
  rb[0] = rb[1] = -1;
  CHECK_MPI(t, MPI_Neighbor_allgatherv(&t->rank, 1, MPI_INT, rb, counts, displs, MPI_INT, g));
  CHECK_EQ(t, rb[1], mod(t->rank - 1, n));
  CHECK_EQ(t, rb[0], mod(t->rank + 1, n));
  MPI_Comm_free(&g);
}

/* Adjacent: destinations r+1, r+2; sources r-1, r-2 (weights 1 and 2). */
static void test_adjacent(struct tctx* t) {
  t->section = "dist_graph_adjacent";
  const int n = t->size, r = t->rank;
  int src[2] = {mod(r - 1, n), mod(r - 2, n)}, dst[2] = {mod(r + 1, n), mod(r + 2, n)}, w[2] = {1, 2};
  MPI_Comm g;
  CHECK_MPI(t, MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, w, 2, dst, w, MPI_INFO_NULL, 0, &g));
  int st = -1, indeg = -1, outdeg = -1, weighted = -1;
  MPI_Topo_test(g, &st);
  CHECK(t, st == MPI_DIST_GRAPH, "Topo_test gave %d", st);
  CHECK_MPI(t, MPI_Dist_graph_neighbors_count(g, &indeg, &outdeg, &weighted));
  CHECK_EQ(t, indeg, 2);
  CHECK_EQ(t, outdeg, 2);
  CHECK(t, weighted, "not weighted");
  int s2[2], sw[2], d2[2], dw[2];
  CHECK_MPI(t, MPI_Dist_graph_neighbors(g, 2, s2, sw, 2, d2, dw));
  for (int i = 0; i < 2; i++) {
    CHECK_EQ(t, s2[i], src[i]);
    CHECK_EQ(t, d2[i], dst[i]);
    CHECK_EQ(t, sw[i], w[i]);
    CHECK_EQ(t, dw[i], w[i]);
  }
  int sb[2] = {r * 100, r * 100 + 1}, rb[4] = {-1, -1, -1, -1};
  CHECK_MPI(t, MPI_Neighbor_alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, g));
  CHECK_EQ(t, rb[0], src[0] * 100 + 0);
  CHECK_EQ(t, rb[1], src[1] * 100 + 1);

  t->section = "alltoallv";
  int counts[2] = {1, 1}, displs[2] = {1, 0};
  rb[0] = rb[1] = -1;
  CHECK_MPI(t, MPI_Neighbor_alltoallv(sb, counts, displs, MPI_INT, rb, counts, displs, MPI_INT, g));
  /* Block 0 (sb[1]) went to r+1; block 0 here (rb[1]) is what r-1 sent as its block 0. */
  CHECK_EQ(t, rb[1], src[0] * 100 + 1);
  CHECK_EQ(t, rb[0], src[1] * 100 + 0);

  t->section = "alltoallw";
  MPI_Aint ad[2] = {0, sizeof(int)};
  MPI_Datatype ty[2] = {MPI_INT, MPI_INT};
  rb[0] = rb[1] = -1;
  CHECK_MPI(t, MPI_Neighbor_alltoallw(sb, counts, ad, ty, rb, counts, ad, ty, g));
  CHECK_EQ(t, rb[0], src[0] * 100 + 0);
  CHECK_EQ(t, rb[1], src[1] * 100 + 1);

  t->section = "ineighbor";
  MPI_Request rq[2];
  int ag[2] = {-1, -1};
  rb[0] = rb[1] = -1;
  CHECK_MPI(t, MPI_Ineighbor_allgather(&r, 1, MPI_INT, ag, 1, MPI_INT, g, &rq[0]));
  CHECK_MPI(t, MPI_Ineighbor_alltoallv(sb, counts, displs, MPI_INT, rb, counts, displs, MPI_INT, g, &rq[1]));
  MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
  CHECK_EQ(t, ag[0], src[0]);
  CHECK_EQ(t, ag[1], src[1]);
  CHECK_EQ(t, rb[1], src[0] * 100 + 1);

  /* A derived type freed while the nonblocking call still uses it (MPI 3.1 4.1.9). */
  t->section = "ineighbor_type_freed";
  MPI_Datatype one;
  MPI_Type_contiguous(1, MPI_INT, &one);
  MPI_Type_commit(&one);
  rb[0] = rb[1] = -1;
  CHECK_MPI(t, MPI_Ineighbor_alltoall(sb, 1, one, rb, 1, one, g, &rq[0]));
  MPI_Type_free(&one);
  MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
  CHECK_EQ(t, rb[0], src[0] * 100 + 0);
  CHECK_EQ(t, rb[1], src[1] * 100 + 1);
  MPI_Comm_free(&g);
}

/* Dist_graph_create: rank 0 names the ring r -> r+1 for everyone; then each rank names its
 * own edge r -> r+1 with weight r. */
static void test_create(struct tctx* t) {
  t->section = "dist_graph_create";
  const int n = t->size, r = t->rank;
  int srcs[64], deg[64], dst[64];
  for (int i = 0; i < n; i++) {
    srcs[i] = i;
    deg[i] = 1;
    dst[i] = mod(i + 1, n);
  }
  MPI_Comm g;
  CHECK_MPI(t, MPI_Dist_graph_create(MPI_COMM_WORLD, r == 0 ? n : 0, srcs, deg, dst, MPI_UNWEIGHTED, MPI_INFO_NULL,
                                     0, &g));
  int indeg = -1, outdeg = -1, weighted = -1, s = -1, d = -1;
  MPI_Dist_graph_neighbors_count(g, &indeg, &outdeg, &weighted);
  CHECK_EQ(t, indeg, 1);
  CHECK_EQ(t, outdeg, 1);
  CHECK(t, !weighted, "unweighted graph reported as weighted");
  MPI_Dist_graph_neighbors(g, 1, &s, MPI_UNWEIGHTED, 1, &d, MPI_UNWEIGHTED);
  CHECK_EQ(t, s, mod(r - 1, n));
  CHECK_EQ(t, d, mod(r + 1, n));
  int got = -1;
  CHECK_MPI(t, MPI_Neighbor_allgather(&r, 1, MPI_INT, &got, 1, MPI_INT, g));
  CHECK_EQ(t, got, mod(r - 1, n));
  MPI_Comm_free(&g);

  int me = r, one = 1, next = mod(r + 1, n), wt = r + 10;
  CHECK_MPI(t, MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &me, &one, &next, &wt, MPI_INFO_NULL, 0, &g));
  int sw = -1, dw = -1;
  MPI_Dist_graph_neighbors_count(g, &indeg, &outdeg, &weighted);
  CHECK(t, weighted && indeg == 1 && outdeg == 1, "in %d out %d weighted %d", indeg, outdeg, weighted);
  MPI_Dist_graph_neighbors(g, 1, &s, &sw, 1, &d, &dw);
  CHECK_EQ(t, s, mod(r - 1, n));
  CHECK_EQ(t, sw, mod(r - 1, n) + 10);
  CHECK_EQ(t, dw, r + 10);
  MPI_Comm_free(&g);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "neighbor");
  if (t.size <= 64) {
    test_cart(&t);
    test_graph(&t);
    test_adjacent(&t);
    test_create(&t);
  }
  return tctx_finish(&t);
}
