/* MPI-4.0 persistent collectives (runtime/ampi/coll/persistent.cpp): every *_init form made
 * once and run for several rounds with new data each round (Start / Startall, Wait / Test /
 * Waitall), then freed; two requests started in different orders on different ranks; the
 * rules on inactive and active requests (Wait of an inactive one returns at once with an
 * empty status, Start of an active one fails, Request_free of an inactive one); the types
 * freed after the init. Argument `move`: each rank moves to the next PE (AMPI_Migrate_to_pe)
 * between rounds, its persistent requests inactive. */
#include "check.h"

#include <ampi.h>

enum { kRounds = 4, kN = 5 };

static int val(int round, int rank, int i) { return round * 1000 + rank * 10 + i; }

static void maybe_move(int move) {
  if (!move) return;
  AMPI_Migrate_to_pe((AMPI_My_pe() + 1) % AMPI_Num_pes());
}

/* Barrier, Bcast, Reduce, Allreduce, Scan, Exscan, Reduce_scatter_block, Reduce_scatter. */
static void rooted_and_reductions(struct tctx* t, int move) {
  t->section = "reductions";
  const int n = t->size, me = t->rank;
  int bc[kN], rsend[kN], rred[kN], rall[kN], rscan[kN], rex[kN];
  int* rsb_send = malloc(sizeof(int) * (size_t)n * 2);
  int rsb_recv[2], rs_recv[3];
  int* rs_counts = malloc(sizeof(int) * (size_t)n);
  int* rs_send = malloc(sizeof(int) * 3 * (size_t)n);
  for (int r = 0; r < n; ++r) rs_counts[r] = 1 + r % 3;
  int rs_total = 0;
  for (int r = 0; r < n; ++r) rs_total += rs_counts[r];
  MPI_Datatype pair; /* freed right after the inits: the requests keep it */
  MPI_Type_contiguous(1, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  const int root = n - 1;
  MPI_Request q[8];
  CHECK_MPI(t, MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]));
  CHECK_MPI(t, MPI_Bcast_init(bc, kN, pair, root, MPI_COMM_WORLD, MPI_INFO_NULL, &q[1]));
  CHECK_MPI(t, MPI_Reduce_init(rsend, rred, kN, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &q[2]));
  CHECK_MPI(t, MPI_Allreduce_init(rsend, rall, kN, MPI_INT, MPI_MAX, MPI_COMM_WORLD, MPI_INFO_NULL, &q[3]));
  CHECK_MPI(t, MPI_Scan_init(rsend, rscan, kN, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &q[4]));
  CHECK_MPI(t, MPI_Exscan_init(rsend, rex, kN, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &q[5]));
  CHECK_MPI(t, MPI_Reduce_scatter_block_init(rsb_send, rsb_recv, 2, pair, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                                             &q[6]));
  CHECK_MPI(t, MPI_Reduce_scatter_init(rs_send, rs_recv, rs_counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                       MPI_INFO_NULL, &q[7]));
  MPI_Type_free(&pair);
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kN; ++i) {
      bc[i] = me == root ? val(round, root, i) : -1;
      rsend[i] = val(round, me, i);
      rred[i] = rall[i] = rscan[i] = rex[i] = -1;
    }
    for (int i = 0; i < 2 * n; ++i) rsb_send[i] = round + me + i;
    for (int i = 0; i < rs_total; ++i) rs_send[i] = round * 7 + me + i;
    rsb_recv[0] = rsb_recv[1] = rs_recv[0] = rs_recv[1] = rs_recv[2] = -1;
    if (round % 2 == 0) {
      CHECK_MPI(t, MPI_Startall(8, q));
      CHECK_MPI(t, MPI_Waitall(8, q, MPI_STATUSES_IGNORE));
    } else {
      for (int k = 7; k >= 0; --k) CHECK_MPI(t, MPI_Start(&q[k]));
      for (int k = 0; k < 8; ++k) {
        int flag = 0;
        while (!flag) CHECK_MPI(t, MPI_Test(&q[k], &flag, MPI_STATUS_IGNORE));
      }
    }
    for (int k = 0; k < 8; ++k) CHECK(t, q[k] != MPI_REQUEST_NULL, "request %d was freed by its completion", k);
    for (int i = 0; i < kN; ++i) {
      CHECK_EQ(t, bc[i], val(round, root, i));
      long long sum = 0, pre = 0;
      for (int r = 0; r < n; ++r) {
        sum += val(round, r, i);
        if (r < me) pre += val(round, r, i);
      }
      if (me == 0) CHECK_EQ(t, rred[i], sum);
      CHECK_EQ(t, rall[i], val(round, n - 1, i));
      CHECK_EQ(t, rscan[i], pre + val(round, me, i));
      if (me > 0) CHECK_EQ(t, rex[i], pre);
    }
    for (int j = 0; j < 2; ++j) {
      long long s = 0;
      for (int r = 0; r < n; ++r) s += round + r + me * 2 + j;
      CHECK_EQ(t, rsb_recv[j], s);
    }
    int off = 0;
    for (int r = 0; r < me; ++r) off += rs_counts[r];
    for (int j = 0; j < rs_counts[me]; ++j) {
      long long s = 0;
      for (int r = 0; r < n; ++r) s += round * 7 + r + off + j;
      CHECK_EQ(t, rs_recv[j], s);
    }
    maybe_move(move);
  }
  for (int k = 0; k < 8; ++k) {
    CHECK_MPI(t, MPI_Request_free(&q[k]));
    CHECK(t, q[k] == MPI_REQUEST_NULL);
  }
  free(rsb_send);
  free(rs_counts);
  free(rs_send);
}

/* Gather(v), Scatter(v), Allgather(v), Alltoall(v, w). */
static void data_movement(struct tctx* t, int move) {
  t->section = "data movement";
  const int n = t->size, me = t->rank, root = 0;
  const size_t un = (size_t)n;
  int sb[3], g[2 * 64], gv[3 * 64], sc_send[2 * 64], sc[2], scv_send[3 * 64], scv[3], ag[2 * 64], agv[3 * 64];
  int a2a_send[64], a2a[64], a2av_send[3 * 64], a2av[3 * 64], a2aw_send[64], a2aw[64];
  if (n > 64) return;
  int *counts = malloc(sizeof(int) * un), *displs = malloc(sizeof(int) * un), *ones = malloc(sizeof(int) * un),
      *step = malloc(sizeof(int) * un), *bytes = malloc(sizeof(int) * un);
  MPI_Datatype* types = malloc(sizeof(MPI_Datatype) * un);
  int total = 0;
  for (int r = 0; r < n; ++r) {
    counts[r] = 1 + r % 3;
    displs[r] = total;
    total += counts[r];
    ones[r] = 1;
    step[r] = r;
    bytes[r] = r * (int)sizeof(int);
    types[r] = MPI_INT;
  }
  MPI_Request q[10];
  CHECK_MPI(t, MPI_Gather_init(sb, 2, MPI_INT, g, 2, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]));
  CHECK_MPI(t, MPI_Gatherv_init(sb, counts[me], MPI_INT, gv, counts, displs, MPI_INT, root, MPI_COMM_WORLD,
                                MPI_INFO_NULL, &q[1]));
  CHECK_MPI(t, MPI_Scatter_init(sc_send, 2, MPI_INT, sc, 2, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &q[2]));
  CHECK_MPI(t, MPI_Scatterv_init(scv_send, counts, displs, MPI_INT, scv, counts[me], MPI_INT, root, MPI_COMM_WORLD,
                                 MPI_INFO_NULL, &q[3]));
  CHECK_MPI(t, MPI_Allgather_init(sb, 2, MPI_INT, ag, 2, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &q[4]));
  CHECK_MPI(t, MPI_Allgatherv_init(sb, counts[me], MPI_INT, agv, counts, displs, MPI_INT, MPI_COMM_WORLD,
                                   MPI_INFO_NULL, &q[5]));
  CHECK_MPI(t, MPI_Alltoall_init(a2a_send, 1, MPI_INT, a2a, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &q[6]));
  CHECK_MPI(t, MPI_Alltoallv_init(a2av_send, ones, step, MPI_INT, a2av, ones, step, MPI_INT, MPI_COMM_WORLD,
                                  MPI_INFO_NULL, &q[7]));
  CHECK_MPI(t, MPI_Alltoallw_init(a2aw_send, ones, bytes, types, a2aw, ones, bytes, types, MPI_COMM_WORLD,
                                  MPI_INFO_NULL, &q[8]));
  /* the arrays may change after the init: the requests copied them */
  for (int r = 0; r < n; ++r) ones[r] = step[r] = bytes[r] = -7;
  CHECK_MPI(t, MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &q[9]));
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < 3; ++i) sb[i] = val(round, me, i);
    for (int i = 0; i < 2 * n; ++i) sc_send[i] = me == root ? val(round, i / 2, i % 2) : -1;
    for (int i = 0; i < 3 * n; ++i) {
      scv_send[i] = me == root ? round * 100 + i : -1;
      a2av_send[i] = -1;
    }
    for (int r = 0; r < n; ++r) {
      a2a_send[r] = val(round, me, r);
      a2av_send[r] = val(round, me, r) + 1;
      a2aw_send[r] = val(round, me, r) + 2;
    }
    memset(g, 0xff, sizeof g);
    memset(gv, 0xff, sizeof gv);
    memset(ag, 0xff, sizeof ag);
    memset(agv, 0xff, sizeof agv);
    sc[0] = sc[1] = scv[0] = scv[1] = scv[2] = -1;
    CHECK_MPI(t, MPI_Startall(10, q));
    CHECK_MPI(t, MPI_Waitall(10, q, MPI_STATUSES_IGNORE));
    for (int r = 0; r < n; ++r) {
      if (me == root) {
        CHECK_EQ(t, g[2 * r], val(round, r, 0));
        CHECK_EQ(t, g[2 * r + 1], val(round, r, 1));
        for (int j = 0; j < counts[r]; ++j) CHECK_EQ(t, gv[displs[r] + j], val(round, r, j));
      }
      CHECK_EQ(t, ag[2 * r + 1], val(round, r, 1));
      for (int j = 0; j < counts[r]; ++j) CHECK_EQ(t, agv[displs[r] + j], val(round, r, j));
      CHECK_EQ(t, a2a[r], val(round, r, me));
      CHECK_EQ(t, a2av[r], val(round, r, me) + 1);
      CHECK_EQ(t, a2aw[r], val(round, r, me) + 2);
    }
    CHECK_EQ(t, sc[0], val(round, me, 0));
    CHECK_EQ(t, sc[1], val(round, me, 1));
    for (int j = 0; j < counts[me]; ++j) CHECK_EQ(t, scv[j], round * 100 + displs[me] + j);
    maybe_move(move);
  }
  for (int k = 0; k < 10; ++k) CHECK_MPI(t, MPI_Request_free(&q[k]));
  free(counts);
  free(displs);
  free(ones);
  free(step);
  free(bytes);
  free(types);
}

/* The neighbourhood forms on a periodic ring. */
static void neighborhood(struct tctx* t, int move) {
  t->section = "neighbourhood";
  const int n = t->size, me = t->rank;
  int dims[1] = {n}, periods[1] = {1};
  MPI_Comm ring;
  CHECK_MPI(t, MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
  int left = (me + n - 1) % n, right = (me + 1) % n;
  int sb[2], ag[2], a2a_send[2], a2a[2], agv[2], a2av[2], a2aw[2];
  int ones[2] = {1, 1}, displs[2] = {0, 1};
  MPI_Aint adispls[2] = {0, sizeof(int)};
  MPI_Datatype types[2] = {MPI_INT, MPI_INT};
  MPI_Request q[5];
  CHECK_MPI(t, MPI_Neighbor_allgather_init(sb, 1, MPI_INT, ag, 1, MPI_INT, ring, MPI_INFO_NULL, &q[0]));
  CHECK_MPI(t, MPI_Neighbor_allgatherv_init(sb, 1, MPI_INT, agv, ones, displs, MPI_INT, ring, MPI_INFO_NULL, &q[1]));
  CHECK_MPI(t, MPI_Neighbor_alltoall_init(a2a_send, 1, MPI_INT, a2a, 1, MPI_INT, ring, MPI_INFO_NULL, &q[2]));
  CHECK_MPI(t, MPI_Neighbor_alltoallv_init(a2a_send, ones, displs, MPI_INT, a2av, ones, displs, MPI_INT, ring,
                                           MPI_INFO_NULL, &q[3]));
  CHECK_MPI(t, MPI_Neighbor_alltoallw_init(a2a_send, ones, adispls, types, a2aw, ones, adispls, types, ring,
                                           MPI_INFO_NULL, &q[4]));
  for (int round = 0; round < kRounds; ++round) {
    sb[0] = val(round, me, 0);
    a2a_send[0] = val(round, me, 1); /* to the left neighbour */
    a2a_send[1] = val(round, me, 2); /* to the right one */
    CHECK_MPI(t, MPI_Startall(5, q));
    CHECK_MPI(t, MPI_Waitall(5, q, MPI_STATUSES_IGNORE));
    if (n > 2 || n == 1) {
      CHECK_EQ(t, ag[0], val(round, left, 0));
      CHECK_EQ(t, ag[1], val(round, right, 0));
      CHECK_EQ(t, agv[1], val(round, right, 0));
      CHECK_EQ(t, a2a[0], val(round, left, 2));
      CHECK_EQ(t, a2a[1], val(round, right, 1));
      CHECK_EQ(t, a2av[0], val(round, left, 2));
      CHECK_EQ(t, a2aw[1], val(round, right, 1));
    }
    maybe_move(move);
  }
  for (int k = 0; k < 5; ++k) CHECK_MPI(t, MPI_Request_free(&q[k]));
  MPI_Comm_free(&ring);
}

/* Inactive and active requests; starts in different orders on different ranks. */
static void rules(struct tctx* t) {
  t->section = "rules";
  MPI_Comm c;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  int a = -1, b = 0;
  MPI_Request q[2];
  CHECK_MPI(t, MPI_Bcast_init(&a, 1, MPI_INT, 0, c, MPI_INFO_NULL, &q[0]));
  CHECK_MPI(t, MPI_Allreduce_init(MPI_IN_PLACE, &b, 1, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &q[1]));
  /* an inactive request: Wait and Test return at once with an empty status */
  MPI_Status st;
  st.MPI_TAG = 99;
  CHECK_MPI(t, MPI_Wait(&q[0], &st));
  CHECK_EQ(t, st.MPI_TAG, MPI_ANY_TAG);
  int flag = 0;
  CHECK_MPI(t, MPI_Test(&q[1], &flag, MPI_STATUS_IGNORE));
  CHECK_EQ(t, flag, 1);
  for (int round = 0; round < 3; ++round) {
    a = t->rank == 0 ? 42 + round : -1;
    b = 1;
    if (t->rank % 2 == 0) {
      CHECK_MPI(t, MPI_Start(&q[0]));
      CHECK_MPI(t, MPI_Start(&q[1]));
    } else {
      CHECK_MPI(t, MPI_Start(&q[1]));
      CHECK_MPI(t, MPI_Start(&q[0]));
    }
    if (round == 0) CHECK(t, MPI_Start(&q[0]) == MPI_ERR_REQUEST, "Start of an active request did not fail");
    CHECK_MPI(t, MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
    CHECK_EQ(t, a, 42 + round);
    CHECK_EQ(t, b, t->size);
  }
  CHECK(t, MPI_Bcast_init(&a, 1, MPI_INT, t->size, c, MPI_INFO_NULL, &q[0]) == MPI_ERR_ROOT,
        "a bad root was not refused at the init");
  CHECK_MPI(t, MPI_Request_free(&q[0]));
  CHECK_MPI(t, MPI_Request_free(&q[1]));
  MPI_Comm_free(&c);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "persistent_coll");
  const int move = argc > 1 && strcmp(argv[1], "move") == 0;
  rooted_and_reductions(&t, move);
  data_movement(&t, move);
  neighborhood(&t, move);
  rules(&t);
  return tctx_finish(&t);
}
