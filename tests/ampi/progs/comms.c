/* Communicators, groups, environment: Comm_dup isolation, Comm_split (colours, reversing
 * keys, MPI_UNDEFINED), Comm_create / Comm_create_group, groups, Comm_compare, Comm_free,
 * MPI_COMM_SELF, MPI_TAG_UB, processor name, version, Wtime/Wtick, Initialized/Finalized,
 * Cartesian topologies and Dims_create. */
#include "check.h"

static void test_dup(struct tctx* t, int left, int right) {
  t->section = "comm_dup";
  MPI_Comm dup;
  CHECK_MPI(t, MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  int sz = 0, rk = -1;
  MPI_Comm_size(dup, &sz);
  MPI_Comm_rank(dup, &rk);
  CHECK_EQ(t, sz, t->size);
  CHECK_EQ(t, rk, t->rank);
  /* Same source, destination and tag on both: the dup's message, sent first, must not match
   * a receive on MPI_COMM_WORLD. */
  int a = 1000 + t->rank, b = 2000 + t->rank, x = -1, y = -1;
  MPI_Request r[2];
  MPI_Isend(&a, 1, MPI_INT, right, 5, dup, &r[0]);
  MPI_Isend(&b, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &r[1]);
  MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Recv(&y, 1, MPI_INT, left, 5, dup, MPI_STATUS_IGNORE);
  CHECK(t, x == 2000 + left, "receive on MPI_COMM_WORLD got %d (a message sent on the dup?)", x);
  CHECK_EQ(t, y, 1000 + left);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  int res = -1;
  MPI_Comm_compare(MPI_COMM_WORLD, dup, &res);
  CHECK(t, res == MPI_CONGRUENT, "compare(world, dup) = %d, expected MPI_CONGRUENT", res);
  MPI_Comm dup2;
  MPI_Comm_dup(dup, &dup2);
  MPI_Comm_compare(dup2, dup, &res);
  CHECK(t, res == MPI_CONGRUENT, "compare(dup, dup of dup) = %d", res);
  MPI_Comm_compare(dup, dup, &res);
  CHECK(t, res == MPI_IDENT, "compare(dup, dup) = %d", res);
  CHECK_MPI(t, MPI_Comm_free(&dup2));
  CHECK_MPI(t, MPI_Comm_free(&dup));
  CHECK(t, dup == MPI_COMM_NULL, "Comm_free did not set MPI_COMM_NULL");
}

static void test_split(struct tctx* t) {
  t->section = "comm_split";
  int n = t->size, me = t->rank;
  int last_out = n > 1;  /* the last rank (when not alone) takes no part */
  int color = (last_out && me == n - 1) ? MPI_UNDEFINED : me % 3;
  MPI_Comm c;
  CHECK_MPI(t, MPI_Comm_split(MPI_COMM_WORLD, color, -me, &c));
  if (color == MPI_UNDEFINED) {
    CHECK(t, c == MPI_COMM_NULL, "MPI_UNDEFINED colour did not give MPI_COMM_NULL");
  } else {
    int members = 0, above = 0;
    for (int r = 0; r < n; r++) {
      if (last_out && r == n - 1) continue;
      if (r % 3 == color) members++, above += r > me;
    }
    int sz = -1, rk = -1;
    MPI_Comm_size(c, &sz);
    MPI_Comm_rank(c, &rk);
    CHECK_EQ(t, sz, members);
    CHECK_EQ(t, rk, above); /* key -rank: reversed order */
    /* Translate every member's rank back to world ranks. */
    MPI_Group wg, cg;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Comm_group(c, &cg);
    int* in = malloc(sz * sizeof(int));
    int* out = malloc(sz * sizeof(int));
    for (int i = 0; i < sz; i++) in[i] = i;
    MPI_Group_translate_ranks(cg, sz, in, wg, out);
    int expect_r = n - 1;
    for (int i = 0; i < sz; i++) {
      while (expect_r >= 0 && ((last_out && expect_r == n - 1) || expect_r % 3 != color)) expect_r--;
      CHECK(t, out[i] == expect_r, "sub rank %d is world rank %d, expected %d", i, out[i], expect_r);
      expect_r--;
    }
    /* Messages in the split communicator use its ranks. */
    int right = (rk + 1) % sz, left = (rk + sz - 1) % sz, got = -1;
    MPI_Sendrecv(&me, 1, MPI_INT, right, 0, &got, 1, MPI_INT, left, 0, c, MPI_STATUS_IGNORE);
    CHECK_EQ(t, got, out[left]);
    int res = -1;
    MPI_Comm_compare(MPI_COMM_WORLD, c, &res);
    if (sz == n) CHECK(t, res == MPI_IDENT || res == MPI_CONGRUENT || res == MPI_SIMILAR, "compare %d", res);
    else CHECK(t, res == MPI_UNEQUAL, "compare(world, split) = %d, expected MPI_UNEQUAL", res);
    free(in);
    free(out);
    MPI_Group_free(&wg);
    MPI_Group_free(&cg);
    MPI_Comm_free(&c);
  }
  /* All in one colour: key = rank gives a congruent communicator, key = -rank a similar one. */
  MPI_Comm same, rev;
  MPI_Comm_split(MPI_COMM_WORLD, 0, me, &same);
  MPI_Comm_split(MPI_COMM_WORLD, 7, n - me, &rev);
  int res = -1, rk = -1;
  MPI_Comm_compare(MPI_COMM_WORLD, same, &res);
  CHECK(t, res == MPI_CONGRUENT, "compare(world, split same order) = %d, expected MPI_CONGRUENT", res);
  MPI_Comm_compare(MPI_COMM_WORLD, rev, &res);
  CHECK(t, res == (n > 1 ? MPI_SIMILAR : MPI_CONGRUENT), "compare(world, split reversed) = %d", res);
  MPI_Comm_rank(rev, &rk);
  CHECK_EQ(t, rk, n - 1 - me);
  MPI_Comm_free(&same);
  MPI_Comm_free(&rev);
}

static void test_groups_create(struct tctx* t) {
  t->section = "groups";
  int n = t->size, me = t->rank;
  MPI_Group wg, evens, odds, uni, inter;
  CHECK_MPI(t, MPI_Comm_group(MPI_COMM_WORLD, &wg));
  int gs = -1, gr = -1;
  MPI_Group_size(wg, &gs);
  MPI_Group_rank(wg, &gr);
  CHECK_EQ(t, gs, n);
  CHECK_EQ(t, gr, me);
  int ne = (n + 1) / 2, no = n / 2;
  int* ev = malloc(ne * sizeof(int));
  int* od = malloc((no + 1) * sizeof(int));
  for (int i = 0; i < ne; i++) ev[i] = 2 * i;
  for (int i = 0; i < no; i++) od[i] = 2 * i + 1;
  CHECK_MPI(t, MPI_Group_incl(wg, ne, ev, &evens));
  CHECK_MPI(t, MPI_Group_excl(wg, ne, ev, &odds));
  MPI_Group_size(evens, &gs);
  CHECK_EQ(t, gs, ne);
  MPI_Group_size(odds, &gs);
  CHECK_EQ(t, gs, no);
  MPI_Group_rank(evens, &gr);
  CHECK(t, gr == (me % 2 == 0 ? me / 2 : MPI_UNDEFINED), "rank in the evens group: %d", gr);
  MPI_Group_rank(odds, &gr);
  CHECK(t, gr == (me % 2 == 1 ? me / 2 : MPI_UNDEFINED), "rank in the odds group: %d", gr);
  int* all = malloc(n * sizeof(int));
  int* tr = malloc(n * sizeof(int));
  for (int i = 0; i < n; i++) all[i] = i;
  MPI_Group_translate_ranks(wg, n, all, evens, tr);
  for (int i = 0; i < n; i++) CHECK(t, tr[i] == (i % 2 == 0 ? i / 2 : MPI_UNDEFINED), "translate %d -> %d", i, tr[i]);
  CHECK_MPI(t, MPI_Group_union(evens, odds, &uni));
  MPI_Group_size(uni, &gs);
  CHECK_EQ(t, gs, n);
  int res = -1;
  MPI_Group_compare(uni, wg, &res);
  CHECK(t, res == (n <= 2 ? MPI_IDENT : MPI_SIMILAR), "compare(evens+odds, world) = %d", res);
  MPI_Group_compare(wg, wg, &res);
  CHECK_EQ(t, res, MPI_IDENT);
  MPI_Group_compare(evens, odds, &res);
  CHECK_EQ(t, res, MPI_UNEQUAL);
  MPI_Group_intersection(evens, odds, &inter);
  MPI_Group_size(inter, &gs);
  CHECK_EQ(t, gs, 0);
  MPI_Group_compare(inter, MPI_GROUP_EMPTY, &res);
  CHECK_EQ(t, res, MPI_IDENT);

  /* Comm_create over MPI_COMM_WORLD from the evens group: odd ranks get MPI_COMM_NULL. */
  t->section = "comm_create";
  MPI_Comm ce;
  CHECK_MPI(t, MPI_Comm_create(MPI_COMM_WORLD, evens, &ce));
  if (me % 2 == 1) {
    CHECK(t, ce == MPI_COMM_NULL, "non-member got a communicator");
  } else {
    int sz = -1, rk = -1, sum = 0;
    MPI_Comm_size(ce, &sz);
    MPI_Comm_rank(ce, &rk);
    CHECK_EQ(t, sz, ne);
    CHECK_EQ(t, rk, me / 2);
    MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, ce);
    CHECK_EQ(t, sum, ne * (ne - 1)); /* 0 + 2 + ... + 2(ne-1) */
    MPI_Comm_free(&ce);
  }
  /* Comm_create_group: only the members (the first half, in reverse order) call it. */
  t->section = "comm_create_group";
  int nh = (n + 1) / 2;
  int* half = malloc(nh * sizeof(int));
  for (int i = 0; i < nh; i++) half[i] = nh - 1 - i;
  MPI_Group hg;
  MPI_Group_incl(wg, nh, half, &hg);
  if (me < nh) {
    MPI_Comm ch;
    CHECK_MPI(t, MPI_Comm_create_group(MPI_COMM_WORLD, hg, 9, &ch));
    int sz = -1, rk = -1, mx = -1;
    MPI_Comm_size(ch, &sz);
    MPI_Comm_rank(ch, &rk);
    CHECK_EQ(t, sz, nh);
    CHECK_EQ(t, rk, nh - 1 - me);
    int v = rk == 0 ? me : -1;
    MPI_Bcast(&v, 1, MPI_INT, 0, ch);
    CHECK_EQ(t, v, nh - 1);
    MPI_Allreduce(&me, &mx, 1, MPI_INT, MPI_MAX, ch);
    CHECK_EQ(t, mx, nh - 1);
    MPI_Comm_free(&ch);
  }
  /* Non-members skip it; then everyone meets. */
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Group_free(&hg);
  CHECK(t, hg == MPI_GROUP_NULL, "Group_free did not set MPI_GROUP_NULL");
  MPI_Group_free(&inter);
  MPI_Group_free(&uni);
  MPI_Group_free(&odds);
  MPI_Group_free(&evens);
  MPI_Group_free(&wg);
  free(ev), free(od), free(all), free(tr), free(half);
}

static void test_self_and_env(struct tctx* t) {
  t->section = "comm_self";
  int sz = -1, rk = -1;
  MPI_Comm_size(MPI_COMM_SELF, &sz);
  MPI_Comm_rank(MPI_COMM_SELF, &rk);
  CHECK_EQ(t, sz, 1);
  CHECK_EQ(t, rk, 0);
  int x = 41 + t->rank, y = -1;
  MPI_Status st;
  MPI_Sendrecv(&x, 1, MPI_INT, 0, 3, &y, 1, MPI_INT, 0, 3, MPI_COMM_SELF, &st);
  CHECK_EQ(t, y, 41 + t->rank);
  CHECK_EQ(t, st.MPI_SOURCE, 0);
  int sum = 0;
  MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
  CHECK_EQ(t, sum, x);
  int res = -1;
  MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_SELF, &res);
  CHECK(t, res == (t->size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL), "compare(world, self) = %d", res);

  t->section = "environment";
  int* tag_ub = NULL;
  int flag = 0;
  CHECK_MPI(t, MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag));
  CHECK(t, flag == 1 && tag_ub != NULL, "MPI_TAG_UB attribute missing");
  if (flag && tag_ub) {
    CHECK(t, *tag_ub >= 32767, "MPI_TAG_UB %d < 32767", *tag_ub);
    /* The largest tag works. */
    int v = 5, w = 0;
    MPI_Sendrecv(&v, 1, MPI_INT, t->rank, *tag_ub, &w, 1, MPI_INT, t->rank, *tag_ub, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK_EQ(t, w, 5);
  }
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = -1;
  CHECK_MPI(t, MPI_Get_processor_name(name, &len));
  CHECK(t, len > 0 && len < MPI_MAX_PROCESSOR_NAME && (int)strlen(name) == len, "processor name length %d", len);
  int ver = 0, sub = -1;
  CHECK_MPI(t, MPI_Get_version(&ver, &sub));
  CHECK(t, ver == MPI_VERSION && sub == MPI_SUBVERSION, "Get_version %d.%d, mpi.h says %d.%d", ver, sub,
        MPI_VERSION, MPI_SUBVERSION);
  CHECK(t, ver >= 3, "MPI version %d", ver);
  double prev = MPI_Wtime(), first = prev;
  int back = 0;
  for (int i = 0; i < 10000; i++) {
    double now = MPI_Wtime();
    back += now < prev;
    prev = now;
  }
  CHECK(t, back == 0, "MPI_Wtime went back %d times", back);
  CHECK(t, prev >= first, "MPI_Wtime");
  double tick = MPI_Wtick();
  CHECK(t, tick > 0 && tick < 1, "MPI_Wtick %g", tick);
  flag = 0;
  MPI_Initialized(&flag);
  CHECK_EQ(t, flag, 1);
  flag = 1;
  MPI_Finalized(&flag);
  CHECK_EQ(t, flag, 0);
}

static void test_cart(struct tctx* t) {
  t->section = "dims_create";
  int d2[2] = {0, 0};
  CHECK_MPI(t, MPI_Dims_create(12, 2, d2));
  CHECK(t, d2[0] == 4 && d2[1] == 3, "Dims_create(12, 2) = {%d, %d}", d2[0], d2[1]);
  d2[0] = d2[1] = 0;
  MPI_Dims_create(7, 2, d2);
  CHECK(t, d2[0] == 7 && d2[1] == 1, "Dims_create(7, 2) = {%d, %d}", d2[0], d2[1]);
  int d3[3] = {0, 2, 0};
  MPI_Dims_create(16, 3, d3);
  CHECK(t, d3[0] == 4 && d3[1] == 2 && d3[2] == 2, "Dims_create(16, {0,2,0}) = {%d, %d, %d}", d3[0], d3[1], d3[2]);
  int d1[3] = {0, 0, 0};
  MPI_Dims_create(1, 3, d1);
  CHECK(t, d1[0] == 1 && d1[1] == 1 && d1[2] == 1, "Dims_create(1, 3)");

  t->section = "cart";
  int n = t->size, me = t->rank;
  int dims[2] = {0, 0}, periods[2] = {1, 0};
  MPI_Dims_create(n, 2, dims);
  CHECK(t, dims[0] * dims[1] == n && dims[0] >= dims[1], "Dims_create(%d, 2) = {%d, %d}", n, dims[0], dims[1]);
  MPI_Comm cart;
  CHECK_MPI(t, MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
  int crank = -1, coords[2] = {-1, -1};
  MPI_Comm_rank(cart, &crank);
  CHECK_EQ(t, crank, me); /* reorder = 0 */
  MPI_Cart_coords(cart, crank, 2, coords);
  CHECK(t, coords[0] == me / dims[1] && coords[1] == me % dims[1], "coords of %d: (%d,%d)", me, coords[0], coords[1]);
  int back = -1;
  MPI_Cart_rank(cart, coords, &back);
  CHECK_EQ(t, back, crank);
  int topo = -1;
  MPI_Topo_test(cart, &topo);
  CHECK_EQ(t, topo, MPI_CART);
  /* Dimension 0 is periodic, dimension 1 is not. */
  int src = -5, dst = -5;
  MPI_Cart_shift(cart, 0, 1, &src, &dst);
  int up[2] = {(coords[0] + dims[0] - 1) % dims[0], coords[1]}, down[2] = {(coords[0] + 1) % dims[0], coords[1]};
  int rup, rdown;
  MPI_Cart_rank(cart, up, &rup);
  MPI_Cart_rank(cart, down, &rdown);
  CHECK_EQ(t, src, rup);
  CHECK_EQ(t, dst, rdown);
  int got = -1;
  MPI_Sendrecv(&crank, 1, MPI_INT, dst, 0, &got, 1, MPI_INT, src, 0, cart, MPI_STATUS_IGNORE);
  CHECK_EQ(t, got, src);
  MPI_Cart_shift(cart, 1, 1, &src, &dst);
  CHECK(t, src == (coords[1] == 0 ? MPI_PROC_NULL : crank - 1), "shift dim 1 source %d", src);
  CHECK(t, dst == (coords[1] == dims[1] - 1 ? MPI_PROC_NULL : crank + 1), "shift dim 1 dest %d", dst);
  got = -7;
  MPI_Sendrecv(&crank, 1, MPI_INT, dst, 1, &got, 1, MPI_INT, src, 1, cart, MPI_STATUS_IGNORE);
  CHECK_EQ(t, got, src == MPI_PROC_NULL ? -7 : src);
  int cd[2], cp[2], cc[2];
  MPI_Cart_get(cart, 2, cd, cp, cc);
  CHECK(t, cd[0] == dims[0] && cd[1] == dims[1] && cp[0] == 1 && cp[1] == 0 && cc[0] == coords[0] && cc[1] == coords[1],
        "Cart_get");
  MPI_Comm_free(&cart);
}

int main(int argc, char** argv) {
  int flag = 1;
  MPI_Initialized(&flag);
  int was_initialized = flag;
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "comms");
  t.section = "initialized";
  CHECK(&t, was_initialized == 0, "MPI_Initialized before MPI_Init gave %d", was_initialized);
  int right = (t.rank + 1) % t.size, left = (t.rank + t.size - 1) % t.size;
  test_dup(&t, left, right);
  test_split(&t);
  test_groups_create(&t);
  test_self_and_env(&t);
  test_cart(&t);
  int rc = tctx_finish(&t); /* calls MPI_Finalize */
  flag = 0;
  MPI_Finalized(&flag);
  if (!flag) {
    fprintf(stderr, "comms: MPI_Finalized after MPI_Finalize gave 0\n");
    rc = 1;
  }
  return rc;
}
