/* Intercommunicators (MPI-3.1 6.6 and 5.2.2): Intercomm_create between the even and the odd
 * world ranks, the queries, point-to-point across, every collective (blocking and
 * nonblocking; MPI_ROOT / MPI_PROC_NULL for the rooted ones), Intercomm_merge, and
 * Comm_dup / idup / split / create / compare of an intercommunicator; Comm_get_parent is
 * MPI_COMM_NULL (not spawned). One rank: nothing to test (prints ok). */
#include "check.h"

struct ic {
  MPI_Comm local, inter;
  int color;              /* 0: even world ranks (group A), 1: odd (group B) */
  int lrank, lsize, rsize;
  int remote_world[64];   /* world rank of each remote rank */
};

/* World rank of rank r of the group of color c (even or odd world ranks). */
static int world_of(int c, int r) { return 2 * r + c; }

static void test_queries(struct tctx* t, struct ic* x) {
  t->section = "queries";
  int flag = 0, n = 0, rk = -1;
  CHECK_MPI(t, MPI_Comm_test_inter(x->inter, &flag));
  CHECK(t, flag, "Comm_test_inter says not an intercommunicator");
  MPI_Comm_test_inter(MPI_COMM_WORLD, &flag);
  CHECK(t, !flag, "MPI_COMM_WORLD is an intercommunicator?");
  MPI_Comm parent = MPI_COMM_WORLD;
  CHECK_MPI(t, MPI_Comm_get_parent(&parent));
  CHECK(t, parent == MPI_COMM_NULL, "a parent, without MPI_Comm_spawn");
  MPI_Comm_size(x->inter, &n);
  CHECK_EQ(t, n, x->lsize);
  MPI_Comm_rank(x->inter, &rk);
  CHECK_EQ(t, rk, x->lrank);
  CHECK_MPI(t, MPI_Comm_remote_size(x->inter, &n));
  CHECK_EQ(t, n, x->rsize);
  MPI_Group rg, wg, lg;
  CHECK_MPI(t, MPI_Comm_remote_group(x->inter, &rg));
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  int ranks[64], out[64];
  for (int i = 0; i < x->rsize; i++) ranks[i] = i;
  MPI_Group_translate_ranks(rg, x->rsize, ranks, wg, out);
  for (int i = 0; i < x->rsize; i++) CHECK_EQ(t, out[i], world_of(1 - x->color, i));
  MPI_Comm_group(x->inter, &lg);
  MPI_Group_size(lg, &n);
  CHECK_EQ(t, n, x->lsize);
  MPI_Group_translate_ranks(lg, 1, &x->lrank, wg, out);
  CHECK_EQ(t, out[0], t->rank);
  MPI_Group_free(&rg);
  MPI_Group_free(&wg);
  MPI_Group_free(&lg);
  for (int i = 0; i < x->rsize; i++) x->remote_world[i] = world_of(1 - x->color, i);
}

/* Rank i sends its world rank to remote rank i % rsize; each receives with MPI_ANY_SOURCE
 * and finds the sender's local rank as the source. */
static void test_p2p(struct tctx* t, struct ic* x) {
  t->section = "p2p";
  int mine = t->rank;
  MPI_Request rq;
  MPI_Isend(&mine, 1, MPI_INT, x->lrank % x->rsize, 11, x->inter, &rq);
  int expect = 0;
  for (int i = 0; i < x->rsize; i++)
    if (i % x->lsize == x->lrank) expect++;
  for (int k = 0; k < expect; k++) {
    int v = -1;
    MPI_Status st;
    MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 11, x->inter, &st);
    CHECK(t, st.MPI_SOURCE >= 0 && st.MPI_SOURCE < x->rsize, "source %d", st.MPI_SOURCE);
    CHECK_EQ(t, v, world_of(1 - x->color, st.MPI_SOURCE));
  }
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  /* Sendrecv with the same-numbered remote rank, where it exists on both sides. */
  if (x->lrank < x->rsize) {
    int got = -1;
    MPI_Sendrecv(&mine, 1, MPI_INT, x->lrank, 12, &got, 1, MPI_INT, x->lrank, 12, x->inter, MPI_STATUS_IGNORE);
    CHECK_EQ(t, got, world_of(1 - x->color, x->lrank));
  }
}

/* Rooted collectives with the root at rank `rr` of group `rc`. */
static void test_rooted(struct tctx* t, struct ic* x, int rc, int rr) {
  const int in_root_group = x->color == rc, me_root = in_root_group && x->lrank == rr;
  const int root = in_root_group ? (me_root ? MPI_ROOT : MPI_PROC_NULL) : rr;
  int buf[4];
  t->section = "bcast";
  for (int i = 0; i < 4; i++) buf[i] = me_root ? 100 + i : -1;
  CHECK_MPI(t, MPI_Bcast(buf, 4, MPI_INT, root, x->inter));
  if (!in_root_group)
    for (int i = 0; i < 4; i++) CHECK_EQ(t, buf[i], 100 + i);
  if (in_root_group && !me_root) CHECK_EQ(t, buf[0], -1);

  t->section = "reduce";
  int v[2] = {t->rank, 1}, r[2] = {-1, -1};
  CHECK_MPI(t, MPI_Reduce(v, r, 2, MPI_INT, MPI_SUM, root, x->inter));
  if (me_root) {
    int s = 0;
    for (int i = 0; i < x->rsize; i++) s += x->remote_world[i];
    CHECK_EQ(t, r[0], s);
    CHECK_EQ(t, r[1], x->rsize);
  }

  t->section = "gather";
  int all[128];
  for (int i = 0; i < 128; i++) all[i] = -1;
  int two[2] = {t->rank, 7};
  CHECK_MPI(t, MPI_Gather(two, 2, MPI_INT, all, 2, MPI_INT, root, x->inter));
  if (me_root)
    for (int i = 0; i < x->rsize; i++) {
      CHECK_EQ(t, all[2 * i], x->remote_world[i]);
      CHECK_EQ(t, all[2 * i + 1], 7);
    }

  t->section = "gatherv";
  int counts[64], displs[64];
  for (int i = 0; i < x->rsize; i++) {
    counts[i] = 1;
    displs[i] = x->rsize - 1 - i;
  }
  for (int i = 0; i < 128; i++) all[i] = -1;
  CHECK_MPI(t, MPI_Gatherv(&t->rank, 1, MPI_INT, all, counts, displs, MPI_INT, root, x->inter));
  if (me_root)
    for (int i = 0; i < x->rsize; i++) CHECK_EQ(t, all[x->rsize - 1 - i], x->remote_world[i]);

  t->section = "scatter";
  for (int i = 0; i < 128; i++) all[i] = me_root ? 1000 + i : -1;
  int one = -1;
  CHECK_MPI(t, MPI_Scatter(all, 1, MPI_INT, &one, 1, MPI_INT, root, x->inter));
  if (!in_root_group) CHECK_EQ(t, one, 1000 + x->lrank);

  t->section = "scatterv";
  one = -1;
  CHECK_MPI(t, MPI_Scatterv(all, counts, displs, MPI_INT, &one, 1, MPI_INT, root, x->inter));
  if (!in_root_group) CHECK_EQ(t, one, 1000 + x->lsize - 1 - x->lrank);
}

static void test_all(struct tctx* t, struct ic* x) {
  int rsum = 0;
  for (int i = 0; i < x->rsize; i++) rsum += x->remote_world[i];
  t->section = "barrier";
  CHECK_MPI(t, MPI_Barrier(x->inter));

  t->section = "allreduce";
  int v = t->rank, s = -1;
  CHECK_MPI(t, MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, x->inter));
  CHECK_EQ(t, s, rsum);

  t->section = "allgather";
  int all[128];
  CHECK_MPI(t, MPI_Allgather(&v, 1, MPI_INT, all, 1, MPI_INT, x->inter));
  for (int i = 0; i < x->rsize; i++) CHECK_EQ(t, all[i], x->remote_world[i]);

  t->section = "allgatherv";
  int counts[64], displs[64];
  for (int i = 0; i < x->rsize; i++) {
    counts[i] = 1;
    displs[i] = 2 * i;
  }
  for (int i = 0; i < 128; i++) all[i] = -1;
  CHECK_MPI(t, MPI_Allgatherv(&v, 1, MPI_INT, all, counts, displs, MPI_INT, x->inter));
  for (int i = 0; i < x->rsize; i++) {
    CHECK_EQ(t, all[2 * i], x->remote_world[i]);
    CHECK_EQ(t, all[2 * i + 1], -1);
  }

  t->section = "alltoall";
  int sb[64], rb[64];
  for (int i = 0; i < x->rsize; i++) sb[i] = t->rank * 100 + i;
  CHECK_MPI(t, MPI_Alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, x->inter));
  for (int i = 0; i < x->rsize; i++) CHECK_EQ(t, rb[i], x->remote_world[i] * 100 + x->lrank);

  t->section = "alltoallv";
  for (int i = 0; i < x->rsize; i++) {
    counts[i] = 1;
    displs[i] = x->rsize - 1 - i;
    rb[i] = -1;
  }
  CHECK_MPI(t, MPI_Alltoallv(sb, counts, displs, MPI_INT, rb, counts, displs, MPI_INT, x->inter));
  for (int i = 0; i < x->rsize; i++)
    CHECK_EQ(t, rb[x->rsize - 1 - i], x->remote_world[i] * 100 + (x->lsize - 1 - x->lrank));

  t->section = "alltoallw";
  MPI_Datatype types[64];
  for (int i = 0; i < x->rsize; i++) {
    types[i] = MPI_INT;
    displs[i] = (int)sizeof(int) * i;
    rb[i] = -1;
  }
  CHECK_MPI(t, MPI_Alltoallw(sb, counts, displs, types, rb, counts, displs, types, x->inter));
  for (int i = 0; i < x->rsize; i++) CHECK_EQ(t, rb[i], x->remote_world[i] * 100 + x->lrank);

  /* Both groups reduce lsize * rsize elements: each group's block per member differs. */
  t->section = "reduce_scatter_block";
  const int total = x->lsize * x->rsize, per = total / x->lsize;
  int in[4096], res[64];
  for (int k = 0; k < total; k++) in[k] = t->rank + k;
  CHECK_MPI(t, MPI_Reduce_scatter_block(in, res, per, MPI_INT, MPI_SUM, x->inter));
  for (int j = 0; j < per; j++) {
    const int k = x->lrank * per + j;
    CHECK_EQ(t, res[j], rsum + k * x->rsize);
  }
  t->section = "reduce_scatter";
  for (int i = 0; i < x->lsize; i++) counts[i] = per;
  for (int j = 0; j < per; j++) res[j] = -1;
  CHECK_MPI(t, MPI_Reduce_scatter(in, res, counts, MPI_INT, MPI_SUM, x->inter));
  for (int j = 0; j < per; j++) CHECK_EQ(t, res[j], rsum + (x->lrank * per + j) * x->rsize);
}

static void test_nonblocking(struct tctx* t, struct ic* x) {
  t->section = "nonblocking";
  int rsum = 0;
  for (int i = 0; i < x->rsize; i++) rsum += x->remote_world[i];
  MPI_Request rq[4];
  int v = t->rank, s = -1, b = x->color == 0 && x->lrank == 0 ? 55 : -1, all[64], sb[64], rb[64];
  const int root = x->color == 0 ? (x->lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
  for (int i = 0; i < x->rsize; i++) sb[i] = t->rank * 100 + i;
  CHECK_MPI(t, MPI_Iallreduce(&v, &s, 1, MPI_INT, MPI_SUM, x->inter, &rq[0]));
  CHECK_MPI(t, MPI_Ibcast(&b, 1, MPI_INT, root, x->inter, &rq[1]));
  CHECK_MPI(t, MPI_Iallgather(&v, 1, MPI_INT, all, 1, MPI_INT, x->inter, &rq[2]));
  CHECK_MPI(t, MPI_Ialltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, x->inter, &rq[3]));
  MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
  CHECK_EQ(t, s, rsum);
  if (x->color == 1) CHECK_EQ(t, b, 55);
  for (int i = 0; i < x->rsize; i++) {
    CHECK_EQ(t, all[i], x->remote_world[i]);
    CHECK_EQ(t, rb[i], x->remote_world[i] * 100 + x->lrank);
  }
  MPI_Request br;
  CHECK_MPI(t, MPI_Ibarrier(x->inter, &br));
  MPI_Wait(&br, MPI_STATUS_IGNORE);
}

static void test_merge(struct tctx* t, struct ic* x) {
  t->section = "merge";
  MPI_Comm m;
  /* Group B (odd world ranks) asks to go first. */
  CHECK_MPI(t, MPI_Intercomm_merge(x->inter, x->color == 0, &m));
  int n = 0, rk = -1, flag = 1;
  MPI_Comm_size(m, &n);
  MPI_Comm_rank(m, &rk);
  MPI_Comm_test_inter(m, &flag);
  CHECK(t, !flag, "the merged communicator is an intercommunicator");
  CHECK_EQ(t, n, t->size);
  CHECK_EQ(t, rk, x->color == 1 ? x->lrank : x->rsize + x->lrank);
  int w[128];
  MPI_Allgather(&t->rank, 1, MPI_INT, w, 1, MPI_INT, m);
  const int nb = x->color == 1 ? x->lsize : x->rsize; /* group B's size: it comes first */
  for (int i = 0; i < n; i++) CHECK_EQ(t, w[i], i < nb ? world_of(1, i) : world_of(0, i - nb));
  MPI_Comm_free(&m);
  /* Both pass the same high: some order, each group contiguous. */
  CHECK_MPI(t, MPI_Intercomm_merge(x->inter, 0, &m));
  MPI_Comm_size(m, &n);
  CHECK_EQ(t, n, t->size);
  MPI_Allgather(&t->rank, 1, MPI_INT, w, 1, MPI_INT, m);
  int changes = 0;
  for (int i = 1; i < n; i++) changes += (w[i] % 2) != (w[i - 1] % 2);
  CHECK(t, changes == 1, "the groups are not contiguous in the merged communicator");
  MPI_Comm_free(&m);
}

static void test_constructors(struct tctx* t, struct ic* x) {
  t->section = "dup";
  MPI_Comm d;
  CHECK_MPI(t, MPI_Comm_dup(x->inter, &d));
  int flag = 0, n = 0, res = -1;
  MPI_Comm_test_inter(d, &flag);
  CHECK(t, flag, "the dup is not an intercommunicator");
  MPI_Comm_remote_size(d, &n);
  CHECK_EQ(t, n, x->rsize);
  MPI_Comm_compare(x->inter, d, &res);
  CHECK(t, res == MPI_CONGRUENT, "compare(inter, dup) = %d", res);
  MPI_Comm_compare(x->inter, MPI_COMM_WORLD, &res);
  CHECK(t, res == MPI_UNEQUAL, "compare(inter, world) = %d", res);
  /* The dup's messages do not match receives on the original. */
  if (x->lrank == 0) {
    int a = 1, b = 2, got = -1;
    MPI_Request r[2];
    MPI_Isend(&a, 1, MPI_INT, 0, 3, d, &r[0]);
    MPI_Isend(&b, 1, MPI_INT, 0, 3, x->inter, &r[1]);
    MPI_Recv(&got, 1, MPI_INT, 0, 3, x->inter, MPI_STATUS_IGNORE);
    CHECK_EQ(t, got, 2);
    MPI_Recv(&got, 1, MPI_INT, 0, 3, d, MPI_STATUS_IGNORE);
    CHECK_EQ(t, got, 1);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  }
  int v = 1, s = 0;
  MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, d);
  CHECK_EQ(t, s, x->rsize);
  MPI_Comm_free(&d);

  /* Nonblocking: the others start theirs, then Ssend to remote rank 0, which receives all
   * before it starts its own (a blocking idup deadlocks here). */
  t->section = "idup";
  MPI_Request rq;
  if (x->lrank == 0) {
    for (int i = 1; i < x->rsize; i++) MPI_Recv(&v, 1, MPI_INT, i, 8, x->inter, MPI_STATUS_IGNORE);
    CHECK_MPI(t, MPI_Comm_idup(x->inter, &d, &rq));
  } else {
    CHECK_MPI(t, MPI_Comm_idup(x->inter, &d, &rq));
    MPI_Ssend(&x->lrank, 1, MPI_INT, 0, 8, x->inter);
  }
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  MPI_Comm_remote_size(d, &n);
  CHECK_EQ(t, n, x->rsize);
  MPI_Comm_free(&d);

  t->section = "split";
  /* Colour by local rank parity, key reversing the order. */
  MPI_Comm sp;
  const int c = x->lrank % 2;
  CHECK_MPI(t, MPI_Comm_split(x->inter, c, -x->lrank, &sp));
  const int lcount = (x->lsize + 1 - c) / 2, rcount = (x->rsize + 1 - c) / 2;
  if (rcount == 0) {
    CHECK(t, sp == MPI_COMM_NULL, "split: no remote member of colour %d, yet a communicator", c);
  } else {
    CHECK(t, sp != MPI_COMM_NULL, "split gave MPI_COMM_NULL");
    if (sp != MPI_COMM_NULL) {
      int rk = -1;
      MPI_Comm_size(sp, &n);
      CHECK_EQ(t, n, lcount);
      MPI_Comm_remote_size(sp, &n);
      CHECK_EQ(t, n, rcount);
      MPI_Comm_rank(sp, &rk);
      CHECK_EQ(t, rk, lcount - 1 - x->lrank / 2);
      MPI_Allreduce(&t->rank, &s, 1, MPI_INT, MPI_MAX, sp);
      /* The remote members of colour c, highest key (lowest local rank) last: the max world rank is of remote rank c. */
      CHECK_EQ(t, s, world_of(1 - x->color, (rcount - 1) * 2 + c));
      MPI_Comm_free(&sp);
    }
  }

  t->section = "create";
  MPI_Group lg, half;
  MPI_Comm_group(x->inter, &lg);
  int ranks[64], nh = (x->lsize + 1) / 2;
  for (int i = 0; i < nh; i++) ranks[i] = i;
  MPI_Group_incl(lg, nh, ranks, &half);
  MPI_Comm cr;
  CHECK_MPI(t, MPI_Comm_create(x->inter, half, &cr));
  if (x->lrank < nh) {
    CHECK(t, cr != MPI_COMM_NULL, "create gave MPI_COMM_NULL to a member");
    if (cr != MPI_COMM_NULL) {
      MPI_Comm_size(cr, &n);
      CHECK_EQ(t, n, nh);
      MPI_Comm_remote_size(cr, &n);
      CHECK_EQ(t, n, (x->rsize + 1) / 2);
      MPI_Barrier(cr);
      MPI_Comm_free(&cr);
    }
  } else {
    CHECK(t, cr == MPI_COMM_NULL, "create gave a communicator to a non-member");
  }
  MPI_Group_free(&half);
  MPI_Group_free(&lg);
}

/* Intercomm_create while an MPI_Comm_idup of MPI_COMM_WORLD is still in flight: the two must
 * get different contexts. Every rank sends on the new intercommunicator to remote rank 0;
 * once one has arrived there, a probe of the dup must not see it. */
static void test_create_beside_idup(struct tctx* t, struct ic* x) {
  t->section = "create_beside_idup";
  MPI_Comm d, ic2;
  MPI_Request rq, sq;
  MPI_Comm_idup(MPI_COMM_WORLD, &d, &rq);
  CHECK_MPI(t, MPI_Intercomm_create(x->local, 0, MPI_COMM_WORLD, 1 - x->color, 77, &ic2));
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  int v = t->rank, got = -1, flag = 1;
  MPI_Isend(&v, 1, MPI_INT, 0, 9, ic2, &sq);
  if (x->lrank == 0) {
    MPI_Probe(MPI_ANY_SOURCE, 9, ic2, MPI_STATUS_IGNORE);
    MPI_Iprobe(MPI_ANY_SOURCE, 9, d, &flag, MPI_STATUS_IGNORE);
    CHECK(t, !flag, "a message sent on the intercommunicator shows on the dup (one context for both)");
    for (int i = 0; i < x->rsize; i++) {
      MPI_Status st;
      MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 9, ic2, &st);
      CHECK_EQ(t, got, world_of(1 - x->color, st.MPI_SOURCE));
    }
  }
  MPI_Wait(&sq, MPI_STATUS_IGNORE);
  MPI_Comm_free(&ic2);
  MPI_Comm_free(&d);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "intercomm");
  if (t.size >= 2 && t.size <= 128) {
    struct ic x;
    x.color = t.rank % 2;
    MPI_Comm_split(MPI_COMM_WORLD, x.color, t.rank, &x.local);
    MPI_Comm_rank(x.local, &x.lrank);
    MPI_Comm_size(x.local, &x.lsize);
    t.section = "create";
    /* Leaders: world ranks 0 and 1; the peer communicator a dup of MPI_COMM_WORLD. */
    MPI_Comm peer;
    MPI_Comm_dup(MPI_COMM_WORLD, &peer);
    CHECK_MPI(&t, MPI_Intercomm_create(x.local, 0, peer, 1 - x.color, 99, &x.inter));
    x.rsize = x.color == 0 ? t.size / 2 : (t.size + 1) / 2;
    test_queries(&t, &x);
    test_p2p(&t, &x);
    test_rooted(&t, &x, 0, 0);
    test_rooted(&t, &x, 1, x.color == 1 ? x.lsize - 1 : x.rsize - 1);
    test_all(&t, &x);
    test_nonblocking(&t, &x);
    test_merge(&t, &x);
    test_constructors(&t, &x);
    test_create_beside_idup(&t, &x);
    MPI_Comm_free(&x.inter);
    MPI_Comm_free(&peer);
    MPI_Comm_free(&x.local);
  }
  return tctx_finish(&t);
}
