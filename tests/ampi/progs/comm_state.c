/* A rank's communicator-side MPI state survives being packed and unpacked (AMPI rank
 * migration, issue 18): each rank builds rich state — a dup'd and a split communicator with
 * names, attributes with copy/delete callbacks, Cartesian, graph and distributed graph
 * topologies, an intercommunicator,
 * groups, info, an error handler, a user error class, derived datatypes (vector, struct,
 * indexed, resized, dup with an attribute, one freed while a pending receive holds it) and
 * a user op — describes every query's answer, calls AMPIX_Roundtrip_comm_state (ucharm's
 * AMPI only, found with dlsym: it packs the rank's state, replaces its table with a fresh
 * one and unpacks into it, as a move does), describes again and compares; then uses it all:
 * dup (copy callbacks run), free (delete callbacks run), messages with the derived types,
 * the pending receive, a reduction with the user op, the error handler, the topology and
 * the intercommunicator. Without the hook (another MPI) the same checks run unmoved.
 * Argument "twice": round trip twice in a row. */
#include <dlfcn.h>
#include <stdint.h>

#include "check.h"

struct counts {
  int copies, deletes;
};

static int copy_cb(MPI_Comm comm, int keyval, void* extra, void* in, void* out, int* flag) {
  (void)comm;
  (void)keyval;
  ((struct counts*)extra)->copies++;
  *(void**)out = (char*)in + 1; /* the copy's value: one past, so the test sees it was copied */
  *flag = 1;
  return MPI_SUCCESS;
}

static int delete_cb(MPI_Comm comm, int keyval, void* value, void* extra) {
  (void)comm;
  (void)keyval;
  (void)value;
  ((struct counts*)extra)->deletes++;
  return MPI_SUCCESS;
}

static int type_copy_cb(MPI_Datatype t, int keyval, void* extra, void* in, void* out, int* flag) {
  (void)t;
  (void)keyval;
  ((struct counts*)extra)->copies++;
  *(void**)out = in;
  *flag = 1;
  return MPI_SUCCESS;
}

/* Shows it ran by renaming the communicator (no globals: ranks share a process). */
static void handler(MPI_Comm* comm, int* code, ...) {
  char name[MPI_MAX_OBJECT_NAME];
  snprintf(name, sizeof name, "handled %d", *code);
  MPI_Comm_set_name(*comm, name);
}

/* inout = in + inout + 1: commutative and associative. */
static void plus_one(void* in, void* inout, int* len, MPI_Datatype* t) {
  (void)t;
  for (int i = 0; i < *len; i++) ((int*)inout)[i] += ((int*)in)[i] + 1;
}

struct state {
  MPI_Comm dup, split, cart, inter, graph, dgraph;
  MPI_Group grp;
  MPI_Info info;
  MPI_Errhandler eh;
  int kv, kv2, tkv, err_class, err_code;
  MPI_Datatype vec, st, idx, res, tdup;
  MPI_Op op;
  struct counts cnt, tcnt;
  int payload[4];
};

/* Appends a description of everything the queries answer about the state to out. */
static void describe(struct state* s, char* out, size_t cap) {
  size_t n = 0;
#define ADD(...) n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, __VA_ARGS__)
  MPI_Comm comms[7] = {MPI_COMM_WORLD, s->dup, s->split, s->cart, s->inter, s->graph, s->dgraph};
  for (int i = 0; i < 7; i++) {
    if (comms[i] == MPI_COMM_NULL) continue;
    int size, rank, inter, len, flag;
    char name[MPI_MAX_OBJECT_NAME];
    MPI_Comm_size(comms[i], &size);
    MPI_Comm_rank(comms[i], &rank);
    MPI_Comm_test_inter(comms[i], &inter);
    MPI_Comm_get_name(comms[i], name, &len);
    ADD("comm%d size %d rank %d inter %d name '%s'", i, size, rank, inter, name);
    void* v;
    MPI_Comm_get_attr(comms[i], s->kv, &v, &flag);
    ADD(" kv %d %p", flag, flag ? v : NULL);
    MPI_Comm_get_attr(comms[i], s->kv2, &v, &flag);
    ADD(" kv2 %d %p", flag, flag ? v : NULL);
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(comms[i], &eh);
    ADD(" eh %d", eh == s->eh);
    MPI_Errhandler_free(&eh);
    int topo;
    MPI_Topo_test(comms[i], &topo);
    ADD(" topo %d", topo);
    if (inter) {
      int rsize;
      MPI_Comm_remote_size(comms[i], &rsize);
      ADD(" remote %d", rsize);
    }
    ADD("\n");
  }
  if (s->cart != MPI_COMM_NULL) {
    int dims[2], periods[2], coords[2], src, dst, rank;
    MPI_Cart_get(s->cart, 2, dims, periods, coords);
    MPI_Cart_shift(s->cart, 0, 1, &src, &dst);
    MPI_Cart_rank(s->cart, coords, &rank);
    ADD("cart %dx%d per %d%d at %d,%d shift %d %d rank %d\n", dims[0], dims[1], periods[0], periods[1], coords[0],
        coords[1], src, dst, rank);
  }
  {
    int nnodes, nedges, me, nn, nb[4];
    MPI_Graphdims_get(s->graph, &nnodes, &nedges);
    MPI_Comm_rank(s->graph, &me);
    MPI_Graph_neighbors_count(s->graph, me, &nn);
    MPI_Graph_neighbors(s->graph, me, 4, nb);
    ADD("graph %d nodes %d edges, %d:", nnodes, nedges, nn);
    for (int k = 0; k < nn && k < 4; k++) ADD(" %d", nb[k]);
    int indeg, outdeg, weighted, srcs[2], sw[2], dsts[2], dw[2];
    MPI_Dist_graph_neighbors_count(s->dgraph, &indeg, &outdeg, &weighted);
    MPI_Dist_graph_neighbors(s->dgraph, 2, srcs, sw, 2, dsts, dw);
    ADD("\ndistgraph in %d out %d weighted %d:", indeg, outdeg, weighted);
    for (int k = 0; k < indeg && k < 2; k++) ADD(" <%d/%d", srcs[k], sw[k]);
    for (int k = 0; k < outdeg && k < 2; k++) ADD(" >%d/%d", dsts[k], dw[k]);
    ADD("\n");
  }
  int gsize, grank, r0 = 0, t0;
  MPI_Group world_group;
  MPI_Group_size(s->grp, &gsize);
  MPI_Group_rank(s->grp, &grank);
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Group_translate_ranks(s->grp, 1, &r0, world_group, &t0);
  MPI_Group_free(&world_group);
  ADD("group size %d rank %d first %d\n", gsize, grank, t0);
  int nkeys;
  MPI_Info_get_nkeys(s->info, &nkeys);
  for (int i = 0; i < nkeys; i++) {
    char key[MPI_MAX_INFO_KEY], val[64];
    int flag;
    MPI_Info_get_nthkey(s->info, i, key);
    MPI_Info_get(s->info, key, 63, val, &flag);
    ADD("info %s=%s\n", key, val);
  }
  char text[MPI_MAX_ERROR_STRING];
  int len, cls, last, flag;
  void* lastp;
  MPI_Error_string(s->err_code, text, &len);
  MPI_Error_class(s->err_code, &cls);
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &lastp, &flag);
  last = *(int*)lastp;
  ADD("error %d '%s' class %d=%d last %d\n", s->err_code, text, cls, s->err_class, last);
  MPI_Datatype types[5] = {s->vec, s->st, s->idx, s->res, s->tdup};
  for (int i = 0; i < 5; i++) {
    int size, ni, na, nd, comb;
    MPI_Aint lb, ext, tlb, text_;
    char name[MPI_MAX_OBJECT_NAME];
    MPI_Type_size(types[i], &size);
    MPI_Type_get_extent(types[i], &lb, &ext);
    MPI_Type_get_true_extent(types[i], &tlb, &text_);
    MPI_Type_get_envelope(types[i], &ni, &na, &nd, &comb);
    MPI_Type_get_name(types[i], name, &len);
    ADD("type%d %d size %d lb %ld ext %ld true %ld %ld env %d %d %d comb %d name '%s'", i, types[i], size, (long)lb,
        (long)ext, (long)tlb, (long)text_, ni, na, nd, comb, name);
    int ints[16];
    MPI_Aint addrs[16];
    MPI_Datatype inner[16];
    if (ni <= 16 && na <= 16 && nd <= 16) {
      MPI_Type_get_contents(types[i], 16, 16, 16, ints, addrs, inner);
      for (int k = 0; k < ni; k++) ADD(" i%d", ints[k]);
      for (int k = 0; k < na; k++) ADD(" a%ld", (long)addrs[k]);
      for (int k = 0; k < nd; k++) {
        int isize, nni, nna, nnd, ncomb;
        MPI_Type_size(inner[k], &isize);
        MPI_Type_get_envelope(inner[k], &nni, &nna, &nnd, &ncomb);
        ADD(" t(size %d comb %d)", isize, ncomb);
        if (ncomb != MPI_COMBINER_NAMED) MPI_Type_free(&inner[k]);
      }
    }
    void* v;
    MPI_Type_get_attr(types[i], s->tkv, &v, &flag);
    ADD(" tkv %d %p\n", flag, flag ? v : NULL);
  }
  int commute;
  MPI_Op_commutative(s->op, &commute);
  ADD("op %d commute %d\n", s->op, commute);
  ADD("counts %d %d types %d %d\n", s->cnt.copies, s->cnt.deletes, s->tcnt.copies, s->tcnt.deletes);
#undef ADD
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "comm_state");
  const int twice = argc > 1 && strcmp(argv[1], "twice") == 0;
  const int me = t.rank, n = t.size;
  struct state s;
  memset(&s, 0, sizeof s);
  s.inter = s.cart = MPI_COMM_NULL;

  /* ---- build ---- */
  t.section = "build";
  CHECK_MPI(&t, MPI_Comm_dup(MPI_COMM_WORLD, &s.dup));
  CHECK_MPI(&t, MPI_Comm_set_name(s.dup, "the dup"));
  CHECK_MPI(&t, MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &s.split));
  CHECK_MPI(&t, MPI_Comm_set_name(s.split, me % 2 ? "odd" : "even"));
  CHECK_MPI(&t, MPI_Comm_create_keyval(copy_cb, delete_cb, &s.kv, &s.cnt));
  CHECK_MPI(&t, MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &s.kv2, NULL));
  CHECK_MPI(&t, MPI_Comm_set_attr(s.dup, s.kv, &s.payload[0]));
  CHECK_MPI(&t, MPI_Comm_set_attr(s.split, s.kv2, (void*)(intptr_t)(42 + me)));
  int dims[2] = {0, 0}, periods[2] = {1, 0};
  CHECK_MPI(&t, MPI_Dims_create(n, 2, dims));
  CHECK_MPI(&t, MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &s.cart));
  CHECK_MPI(&t, MPI_Comm_set_name(s.cart, "grid"));
  /* a ring as a graph and as a weighted distributed graph */
  int* index = malloc(sizeof(int) * (size_t)n);
  int* edges = malloc(sizeof(int) * 2 * (size_t)n);
  for (int r = 0; r < n; r++) {
    index[r] = 2 * (r + 1);
    edges[2 * r] = (r + n - 1) % n;
    edges[2 * r + 1] = (r + 1) % n;
  }
  CHECK_MPI(&t, MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 0, &s.graph));
  free(index);
  free(edges);
  int dsrc[1] = {(me + n - 1) % n}, dsw[1] = {me + 3}, ddst[1] = {(me + 1) % n}, ddw[1] = {me + 7};
  CHECK_MPI(&t, MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, dsrc, dsw, 1, ddst, ddw, MPI_INFO_NULL, 0,
                                               &s.dgraph));
  if (n >= 2) { /* even and odd ranks; a group's leader (its rank 0) is its highest world rank */
    const int remote_leader = (n - 1) % 2 != me % 2 ? n - 1 : n - 2;
    CHECK_MPI(&t, MPI_Intercomm_create(s.split, 0, MPI_COMM_WORLD, remote_leader, 7, &s.inter));
  }
  MPI_Group world_group;
  CHECK_MPI(&t, MPI_Comm_group(MPI_COMM_WORLD, &world_group));
  int ranges[1][3] = {{n - 1, 0, -1}};
  CHECK_MPI(&t, MPI_Group_range_incl(world_group, 1, ranges, &s.grp));
  CHECK_MPI(&t, MPI_Group_free(&world_group));
  CHECK_MPI(&t, MPI_Info_create(&s.info));
  CHECK_MPI(&t, MPI_Info_set(s.info, "first", "one"));
  CHECK_MPI(&t, MPI_Info_set(s.info, "second", "two"));
  CHECK_MPI(&t, MPI_Comm_create_errhandler(handler, &s.eh));
  CHECK_MPI(&t, MPI_Comm_set_errhandler(s.dup, s.eh));
  CHECK_MPI(&t, MPI_Add_error_class(&s.err_class));
  CHECK_MPI(&t, MPI_Add_error_code(s.err_class, &s.err_code));
  CHECK_MPI(&t, MPI_Add_error_string(s.err_code, "the rank's own error"));
  CHECK_MPI(&t, MPI_Type_vector(3, 2, 4, MPI_INT, &s.vec));
  struct pair {
    int i;
    double d;
  } pair;
  int blens[2] = {1, 1};
  MPI_Aint disps[2], base;
  MPI_Get_address(&pair, &base);
  MPI_Get_address(&pair.i, &disps[0]);
  MPI_Get_address(&pair.d, &disps[1]);
  disps[0] -= base;
  disps[1] -= base;
  MPI_Datatype members[2] = {MPI_INT, MPI_DOUBLE};
  CHECK_MPI(&t, MPI_Type_create_struct(2, blens, disps, members, &s.st));
  int iblens[3] = {2, 1, 3}, idisps[3] = {5, 0, 9};
  CHECK_MPI(&t, MPI_Type_indexed(3, iblens, idisps, MPI_INT, &s.idx));
  CHECK_MPI(&t, MPI_Type_create_resized(s.vec, -8, 64, &s.res));
  CHECK_MPI(&t, MPI_Type_create_keyval(type_copy_cb, MPI_TYPE_NULL_DELETE_FN, &s.tkv, &s.tcnt));
  CHECK_MPI(&t, MPI_Type_set_attr(s.st, s.tkv, &s.payload[2]));
  CHECK_MPI(&t, MPI_Type_dup(s.st, &s.tdup));
  CHECK_MPI(&t, MPI_Type_set_name(s.tdup, "pair dup"));
  MPI_Datatype all[5] = {s.vec, s.st, s.idx, s.res, s.tdup};
  for (int i = 0; i < 5; i++) CHECK_MPI(&t, MPI_Type_commit(&all[i]));
  CHECK_MPI(&t, MPI_Op_create(plus_one, 1, &s.op));
  /* A receive that waits over the round trip, its type freed meanwhile. */
  MPI_Datatype pending_type;
  CHECK_MPI(&t, MPI_Type_vector(4, 1, 3, MPI_INT, &pending_type));
  CHECK_MPI(&t, MPI_Type_commit(&pending_type));
  int pending_buf[12];
  for (int i = 0; i < 12; i++) pending_buf[i] = -1;
  MPI_Request pending;
  CHECK_MPI(&t, MPI_Irecv(pending_buf, 1, pending_type, (me + n - 1) % n, 5, s.dup, &pending));
  CHECK_MPI(&t, MPI_Type_free(&pending_type));

  /* ---- round trip ---- */
  t.section = "round trip";
  enum { kCap = 16384 };
  char* before = malloc(kCap);
  char* after = malloc(kCap);
  describe(&s, before, kCap);
  if (me == 0 && getenv("COMM_STATE_SHOW")) printf("%s", before); /* to read what is compared */
  int (*roundtrip)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "AMPIX_Roundtrip_comm_state");
  if (roundtrip) {
    CHECK_MPI(&t, roundtrip());
    if (twice) CHECK_MPI(&t, roundtrip());
  }
  describe(&s, after, kCap);
  if (strcmp(before, after) != 0) {
    CHECK(&t, 0, "the state changed:\n--- before\n%s--- after\n%s", before, after);
  }
  free(before);
  free(after);
  if (me == 0) {
    if (roundtrip) printf("comm_state: round trips %d\n", twice ? 2 : 1);
    else printf("comm_state: no AMPIX_Roundtrip_comm_state, checks without a move\n");
    fflush(stdout);
  }

  /* ---- use ---- */
  t.section = "use after";
  /* the pending receive, with its freed vector type */
  int send4[4] = {me * 10, me * 10 + 1, me * 10 + 2, me * 10 + 3};
  CHECK_MPI(&t, MPI_Send(send4, 4, MPI_INT, (me + 1) % n, 5, s.dup));
  MPI_Status st;
  CHECK_MPI(&t, MPI_Wait(&pending, &st));
  const int left = (me + n - 1) % n;
  for (int i = 0; i < 12; i++) CHECK_EQ(&t, pending_buf[i], i % 3 == 0 ? left * 10 + i / 3 : -1);
  /* dup: the copy callback runs, the copy's value is one past */
  MPI_Comm dup2;
  const int copies = s.cnt.copies;
  CHECK_MPI(&t, MPI_Comm_dup(s.dup, &dup2));
  CHECK_EQ(&t, s.cnt.copies, copies + 1);
  void* v;
  int flag = 0;
  CHECK_MPI(&t, MPI_Comm_get_attr(dup2, s.kv, &v, &flag));
  CHECK(&t, flag && v == (char*)&s.payload[0] + 1);
  char name[MPI_MAX_OBJECT_NAME];
  int len;
  CHECK_MPI(&t, MPI_Comm_get_name(s.dup, name, &len));
  CHECK(&t, strcmp(name, "the dup") == 0, "name '%s'", name);
  CHECK_MPI(&t, MPI_Comm_free(&dup2));
  CHECK_EQ(&t, s.cnt.deletes, 1);
  /* messages with the derived types on every communicator */
  int vbuf[12], vout[12];
  for (int i = 0; i < 12; i++) vbuf[i] = me * 100 + i, vout[i] = -1;
  CHECK_MPI(&t, MPI_Sendrecv(vbuf, 1, s.vec, (me + 1) % n, 9, vout, 1, s.vec, left, 9, MPI_COMM_WORLD, &st));
  for (int i = 0; i < 12; i++) CHECK_EQ(&t, vout[i], (i % 4) < 2 ? left * 100 + i : -1);
  struct pair pin = {me, me + 0.5}, pout = {-1, -1.0};
  CHECK_MPI(&t, MPI_Sendrecv(&pin, 1, s.tdup, (me + 1) % n, 10, &pout, 1, s.tdup, left, 10, s.cart, &st));
  CHECK_EQ(&t, pout.i, left);
  CHECK(&t, pout.d == left + 0.5);
  int ibuf[12], iout[12];
  for (int i = 0; i < 12; i++) ibuf[i] = i + me, iout[i] = -1;
  CHECK_MPI(&t, MPI_Sendrecv(ibuf, 1, s.idx, (me + 1) % n, 11, iout, 1, s.idx, left, 11, s.dup, &st));
  for (int i = 0; i < 12; i++) {
    const int in = (i >= 5 && i < 7) || i == 0 || (i >= 9 && i < 12);
    CHECK_EQ(&t, iout[i], in ? i + left : -1);
  }
  int count;
  CHECK_MPI(&t, MPI_Get_count(&st, s.idx, &count));
  CHECK_EQ(&t, count, 1);
  /* the user op */
  int mine = me + 1, total = 0;
  CHECK_MPI(&t, MPI_Allreduce(&mine, &total, 1, MPI_INT, s.op, MPI_COMM_WORLD));
  CHECK_EQ(&t, total, n * (n + 1) / 2 + (n - 1));
  CHECK_MPI(&t, MPI_Allreduce(&mine, &total, 1, MPI_INT, s.op, s.dup));
  CHECK_EQ(&t, total, n * (n + 1) / 2 + (n - 1));
  /* the error handler and the user error */
  CHECK_EQ(&t, MPI_Comm_call_errhandler(s.dup, s.err_code), MPI_SUCCESS);
  CHECK_MPI(&t, MPI_Comm_get_name(s.dup, name, &len));
  char want_name[MPI_MAX_OBJECT_NAME];
  snprintf(want_name, sizeof want_name, "handled %d", s.err_code);
  CHECK(&t, strcmp(name, want_name) == 0, "name '%s', expected '%s'", name, want_name);
  char text[MPI_MAX_ERROR_STRING];
  CHECK_MPI(&t, MPI_Error_string(s.err_code, text, &len));
  CHECK(&t, strcmp(text, "the rank's own error") == 0, "'%s'", text);
  /* the intercommunicator and the split */
  if (s.inter != MPI_COMM_NULL) {
    int rsize, x = me, y = -1;
    MPI_Comm_remote_size(s.inter, &rsize);
    CHECK_EQ(&t, rsize, me % 2 ? (n + 1) / 2 : n / 2);
    int lrank;
    MPI_Comm_rank(s.inter, &lrank);
    if (lrank < rsize) CHECK_MPI(&t, MPI_Send(&x, 1, MPI_INT, lrank, 3, s.inter));
    if (lrank < rsize) {
      CHECK_MPI(&t, MPI_Recv(&y, 1, MPI_INT, lrank, 3, s.inter, &st));
      CHECK_EQ(&t, y % 2, 1 - me % 2);
    }
    CHECK_MPI(&t, MPI_Barrier(s.inter));
    int sum = 0;
    CHECK_MPI(&t, MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, s.inter));
    int want = 0;
    for (int r = 0; r < n; r++)
      if (r % 2 != me % 2) want += r;
    CHECK_EQ(&t, sum, want);
  }
  int nval = me, ngot = -1; /* the distributed graph's neighbour lists still drive a collective */
  CHECK_MPI(&t, MPI_Neighbor_allgather(&nval, 1, MPI_INT, &ngot, 1, MPI_INT, s.dgraph));
  CHECK_EQ(&t, ngot, left);
  int ssum = 0, one = 1;
  CHECK_MPI(&t, MPI_Allreduce(&one, &ssum, 1, MPI_INT, MPI_SUM, s.split));
  CHECK_EQ(&t, ssum, me % 2 ? n / 2 : (n + 1) / 2);
  /* a new type after the move does not take a handle the rank still has */
  MPI_Datatype fresh;
  CHECK_MPI(&t, MPI_Type_contiguous(2, MPI_INT, &fresh));
  for (int i = 0; i < 5; i++) CHECK(&t, fresh != all[i]);
  CHECK_MPI(&t, MPI_Type_free(&fresh));
  /* freeing everything: delete callbacks once */
  CHECK_MPI(&t, MPI_Comm_free(&s.dup));
  CHECK_EQ(&t, s.cnt.deletes, 2);
  for (int i = 0; i < 5; i++) CHECK_MPI(&t, MPI_Type_free(&all[i]));
  CHECK_MPI(&t, MPI_Op_free(&s.op));
  CHECK_MPI(&t, MPI_Comm_free(&s.split));
  CHECK_MPI(&t, MPI_Comm_free(&s.cart));
  CHECK_MPI(&t, MPI_Comm_free(&s.graph));
  CHECK_MPI(&t, MPI_Comm_free(&s.dgraph));
  if (s.inter != MPI_COMM_NULL) CHECK_MPI(&t, MPI_Comm_free(&s.inter));
  CHECK_MPI(&t, MPI_Group_free(&s.grp));
  CHECK_MPI(&t, MPI_Info_free(&s.info));
  CHECK_MPI(&t, MPI_Errhandler_free(&s.eh));
  CHECK_MPI(&t, MPI_Comm_free_keyval(&s.kv));
  CHECK_MPI(&t, MPI_Comm_free_keyval(&s.kv2));
  CHECK_MPI(&t, MPI_Type_free_keyval(&s.tkv));
  return tctx_finish(&t);
}
