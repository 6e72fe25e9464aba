/* MPI-3 one-sided communication (RMA): every window flavor, every operation, every kind of
 * synchronization, derived datatypes on both sides, attributes, names, info, error handlers.
 * Plain standard MPI (checked against OpenMPI by run_openmpi.sh); any rank count.
 *   rma [section...]  all sections (or those named); prints "rma: ok (N ranks)"
 *   rma migrate    (ucharm) a rank with an open window calls AMPI_Migrate_to_pe: the job
 *                  stops naming the window */
#include "check.h"

#include <stddef.h>
#include <stdint.h>

#define N 16

static int left_of(struct tctx* t) { return (t->rank + t->size - 1) % t->size; }
static int right_of(struct tctx* t) { return (t->rank + 1) % t->size; }

/* Put and Get with fences, contiguous and strided (vector) layouts on both sides. */
static void fence_put_get(struct tctx* t) {
  t->section = "fence";
  int* mem = calloc((size_t)N * t->size, sizeof(int));
  MPI_Win win;
  CHECK_MPI(t, MPI_Win_create(mem, (MPI_Aint)(N * t->size * sizeof(int)), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
  int src[N];
  for (int i = 0; i < N; i++) src[i] = t->rank * 1000 + i;
  CHECK_MPI(t, MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
  for (int r = 0; r < t->size; r++) MPI_Put(src, N, MPI_INT, r, t->rank * N, N, MPI_INT, win);
  CHECK_MPI(t, MPI_Win_fence(0, win));
  for (int r = 0; r < t->size; r++)
    for (int i = 0; i < N; i++) CHECK_EQ(t, mem[r * N + i], r * 1000 + i);
  /* Get the right neighbour's block of rank 0 into a strided origin layout. */
  MPI_Datatype every2;
  MPI_Type_vector(N / 2, 1, 2, MPI_INT, &every2);
  MPI_Type_commit(&every2);
  int got[N];
  for (int i = 0; i < N; i++) got[i] = -1;
  MPI_Get(got, 1, every2, right_of(t), 0, N / 2, MPI_INT, win);
  CHECK_MPI(t, MPI_Win_fence(0, win));
  for (int i = 0; i < N; i++) CHECK_EQ(t, got[i], i % 2 ? -1 : i / 2);
  /* Put into a strided target layout: every second int of my block at the left neighbour. */
  for (int i = 0; i < N / 2; i++) src[i] = -(t->rank + 1) * 100 - i;
  MPI_Put(src, N / 2, MPI_INT, left_of(t), t->rank * N, 1, every2, win);
  CHECK_MPI(t, MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
  const int from = right_of(t);
  for (int i = 0; i < N; i++)
    CHECK_EQ(t, mem[from * N + i], i % 2 ? from * 1000 + i : -(from + 1) * 100 - i / 2);
  MPI_Type_free(&every2);
  CHECK_MPI(t, MPI_Win_free(&win));
  CHECK(t, win == MPI_WIN_NULL);
  free(mem);
}

/* Accumulate with several predefined ops and types (fence), element-wise atomic. */
static void accumulate(struct tctx* t) {
  t->section = "accumulate";
  struct acc {
    long sum;
    double prod;
    int max;
    int band;
    int rep;
    int loc[2];
  } * m;
  MPI_Win win;
  CHECK_MPI(t, MPI_Win_allocate(sizeof *m, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &m, &win));
  m->sum = 0;
  m->prod = 1.0;
  m->max = -1;
  m->band = ~0;
  m->rep = -1;
  m->loc[0] = 1 << 30;
  m->loc[1] = -1;
  CHECK_MPI(t, MPI_Win_fence(0, win));
  const int root = t->size - 1;
  const long one = t->rank + 1;
  const double two = 2.0;
  const int r = t->rank, bit = ~(1 << (t->rank % 30));
  const int loc[2] = {t->rank % 3, t->rank};
  for (int k = 0; k < 10; k++) MPI_Accumulate(&one, 1, MPI_LONG, root, offsetof(struct acc, sum), 1, MPI_LONG, MPI_SUM, win);
  MPI_Accumulate(&two, 1, MPI_DOUBLE, root, offsetof(struct acc, prod), 1, MPI_DOUBLE, MPI_PROD, win);
  MPI_Accumulate(&r, 1, MPI_INT, root, offsetof(struct acc, max), 1, MPI_INT, MPI_MAX, win);
  MPI_Accumulate(&bit, 1, MPI_INT, root, offsetof(struct acc, band), 1, MPI_INT, MPI_BAND, win);
  if (t->rank == 0) MPI_Accumulate(&r, 1, MPI_INT, root, offsetof(struct acc, rep), 1, MPI_INT, MPI_REPLACE, win);
  MPI_Accumulate(loc, 1, MPI_2INT, root, offsetof(struct acc, loc), 1, MPI_2INT, MPI_MINLOC, win);
  CHECK_MPI(t, MPI_Win_fence(0, win));
  if (t->rank == root) {
    CHECK_EQ(t, m->sum, 10L * t->size * (t->size + 1) / 2);
    double want = 1.0;
    int band = ~0;
    for (int i = 0; i < t->size; i++) {
      want *= 2.0;
      band &= ~(1 << (i % 30));
    }
    CHECK(t, m->prod == want, "prod %g, want %g", m->prod, want);
    CHECK_EQ(t, m->max, t->size - 1);
    CHECK_EQ(t, m->band, band);
    CHECK_EQ(t, m->rep, 0);
    CHECK_EQ(t, m->loc[0], 0);
    CHECK_EQ(t, m->loc[1], 0);
  }
  CHECK_MPI(t, MPI_Win_free(&win));
}

/* Exclusive locks: a read-modify-write by Get and Put under the lock loses no update. */
static void locks(struct tctx* t) {
  t->section = "locks";
  long* mem;
  MPI_Win win;
  CHECK_MPI(t, MPI_Win_allocate(sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
  *mem = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const int target = 0, rounds = 20;
  for (int k = 0; k < rounds; k++) {
    long v = -1;
    CHECK_MPI(t, MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win));
    MPI_Get(&v, 1, MPI_LONG, target, 0, 1, MPI_LONG, win);
    CHECK_MPI(t, MPI_Win_flush(target, win));
    v++;
    MPI_Put(&v, 1, MPI_LONG, target, 0, 1, MPI_LONG, win);
    CHECK_MPI(t, MPI_Win_unlock(target, win));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (t->rank == target) {
    CHECK_MPI(t, MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win));
    CHECK_EQ(t, *mem, (long)rounds * t->size);
    CHECK_MPI(t, MPI_Win_unlock(target, win));
  }
  CHECK_MPI(t, MPI_Win_free(&win));
}

/* A shared counter as one slot per rank at rank 0: under the exclusive lock each rank adds
 * 1 to its own slot (Accumulate) and reads every other slot (two Gets, contiguous: the
 * direct path between PEs), then unlocks without a flush. Every value it computes must be
 * unique: a read still in flight when the lock passed on would see a later increment. */
static void counter(struct tctx* t) {
  t->section = "counter";
  enum { ROUNDS = 20 };
  int* slots = NULL;
  MPI_Win win;
  CHECK_MPI(t, MPI_Win_allocate(t->rank == 0 ? t->size * sizeof(int) : 0, sizeof(int), MPI_INFO_NULL,
                                MPI_COMM_WORLD, &slots, &win));
  if (t->rank == 0)
    for (int i = 0; i < t->size; i++) slots[i] = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  int* seen = calloc((size_t)t->size, sizeof(int));
  int values[ROUNDS], one = 1;
  for (int k = 0; k < ROUNDS; k++) {
    CHECK_MPI(t, MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
    MPI_Accumulate(&one, 1, MPI_INT, 0, t->rank, 1, MPI_INT, MPI_SUM, win);
    if (t->rank > 0) MPI_Get(seen, t->rank, MPI_INT, 0, 0, t->rank, MPI_INT, win);
    if (t->rank < t->size - 1)
      MPI_Get(seen + t->rank + 1, t->size - t->rank - 1, MPI_INT, 0, t->rank + 1, t->size - t->rank - 1, MPI_INT, win);
    CHECK_MPI(t, MPI_Win_unlock(0, win));
    values[k] = k;  /* my own slot: what I added before */
    for (int i = 0; i < t->size; i++)
      if (i != t->rank) values[k] += seen[i];
  }
  if (t->size <= 64) {
    int all[64 * ROUNDS];
    MPI_Gather(values, ROUNDS, MPI_INT, all, ROUNDS, MPI_INT, 0, MPI_COMM_WORLD);
    if (t->rank == 0) {
      char* hit = calloc((size_t)(ROUNDS * t->size), 1);
      for (int i = 0; i < ROUNDS * t->size; i++) {
        CHECK(t, all[i] >= 0 && all[i] < ROUNDS * t->size && !hit[all[i]], "value %d seen twice or out of range", all[i]);
        if (all[i] >= 0 && all[i] < ROUNDS * t->size) hit[all[i]] = 1;
      }
      free(hit);
    }
  }
  free(seen);
  CHECK_MPI(t, MPI_Win_free(&win));
}

/* Fetch_and_op, Compare_and_swap, Get_accumulate (NO_OP, REPLACE) under lock_all + flush. */
static void atomics(struct tctx* t) {
  t->section = "atomics";
  long long* mem;
  MPI_Win win;
  CHECK_MPI(t, MPI_Win_allocate(4 * sizeof(long long), sizeof(long long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
  for (int i = 0; i < 4; i++) mem[i] = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK_MPI(t, MPI_Win_lock_all(0, win));
  const int target = t->size / 2, rounds = 50;
  const long long one = 1;
  long long prev = -1;
  for (int k = 0; k < rounds; k++) {
    long long old = -1;
    MPI_Fetch_and_op(&one, &old, MPI_LONG_LONG, target, 0, MPI_SUM, win);
    CHECK_MPI(t, MPI_Win_flush(target, win));
    CHECK(t, old > prev && old < (long long)rounds * t->size, "fetched %lld after %lld", old, prev);
    prev = old;
  }
  /* A CAS spin lock guarding a plain Get/Put increment of word 2. */
  const long long me = t->rank + 1, zero = 0;
  for (int k = 0; k < 5; k++) {
    long long seen = -1;
    do {
      MPI_Compare_and_swap(&me, &zero, &seen, MPI_LONG_LONG, target, 1, win);
      CHECK_MPI(t, MPI_Win_flush(target, win));
    } while (seen != 0);
    long long v;
    MPI_Get(&v, 1, MPI_LONG_LONG, target, 2, 1, MPI_LONG_LONG, win);
    CHECK_MPI(t, MPI_Win_flush(target, win));
    v++;
    MPI_Put(&v, 1, MPI_LONG_LONG, target, 2, 1, MPI_LONG_LONG, win);
    CHECK_MPI(t, MPI_Win_flush(target, win));
    MPI_Compare_and_swap(&zero, &me, &seen, MPI_LONG_LONG, target, 1, win);
    CHECK_MPI(t, MPI_Win_flush(target, win));
    CHECK_EQ(t, seen, me);
  }
  /* Swap by Get_accumulate(REPLACE) on word 3: every old value is seen once. */
  long long old = -1, mine = t->rank + 100;
  MPI_Get_accumulate(&mine, 1, MPI_LONG_LONG, &old, 1, MPI_LONG_LONG, target, 3, 1, MPI_LONG_LONG, MPI_REPLACE, win);
  CHECK_MPI(t, MPI_Win_unlock_all(win));
  long long all[256];
  if (t->size <= 256) {
    MPI_Allgather(&old, 1, MPI_LONG_LONG, all, 1, MPI_LONG_LONG, MPI_COMM_WORLD);
    int zeros = 0;
    for (int i = 0; i < t->size; i++) zeros += all[i] == 0;
    CHECK_EQ(t, zeros, 1);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK_MPI(t, MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win));
  long long got[4];
  MPI_Get_accumulate(NULL, 0, MPI_LONG_LONG, got, 4, MPI_LONG_LONG, target, 0, 4, MPI_LONG_LONG, MPI_NO_OP, win);
  CHECK_MPI(t, MPI_Win_unlock(target, win));
  CHECK_EQ(t, got[0], (long long)rounds * t->size);
  CHECK_EQ(t, got[1], 0);
  CHECK_EQ(t, got[2], 5LL * t->size);
  CHECK(t, got[3] >= 100 && got[3] < 100 + t->size, "word 3 is %lld", got[3]);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK_MPI(t, MPI_Win_free(&win));
}

/* Post/start/complete/wait on a ring, and the request-based operations. */
static void pscw_and_requests(struct tctx* t) {
  t->section = "pscw";
  int* mem = calloc(N, sizeof(int));
  MPI_Win win;
  CHECK_MPI(t, MPI_Win_create(mem, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
  MPI_Group world, left, right;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  int l = left_of(t), r = right_of(t);
  MPI_Group_incl(world, 1, &l, &left);
  MPI_Group_incl(world, 1, &r, &right);
  for (int round = 0; round < 3; round++) {
    CHECK_MPI(t, MPI_Win_post(left, 0, win));
    CHECK_MPI(t, MPI_Win_start(right, 0, win));
    int v[N];
    for (int i = 0; i < N; i++) v[i] = t->rank * 10 + round + i;
    MPI_Put(v, N, MPI_INT, r, 0, N, MPI_INT, win);
    CHECK_MPI(t, MPI_Win_complete(win));
    if (round == 2) {
      int flag = 0;
      while (!flag) CHECK_MPI(t, MPI_Win_test(win, &flag));
    } else {
      CHECK_MPI(t, MPI_Win_wait(win));
    }
    for (int i = 0; i < N; i++) CHECK_EQ(t, mem[i], l * 10 + round + i);
  }
  t->section = "requests";
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK_MPI(t, MPI_Win_lock_all(0, win));
  MPI_Request reqs[4];
  int a[4] = {1, 2, 3, 4}, b[4] = {0}, c[4] = {0};
  const int ones[4] = {1, 1, 1, 1};
  CHECK_MPI(t, MPI_Rput(a, 4, MPI_INT, r, 4 + 4 * (t->rank % 2), 4, MPI_INT, win, &reqs[0]));
  CHECK_MPI(t, MPI_Raccumulate(ones, 4, MPI_INT, r, 12, 4, MPI_INT, MPI_SUM, win, &reqs[1]));
  CHECK_MPI(t, MPI_Rget(b, 4, MPI_INT, r, 0, 4, MPI_INT, win, &reqs[2]));
  CHECK_MPI(t, MPI_Rget_accumulate(NULL, 0, MPI_INT, c, 4, MPI_INT, r, 0, 4, MPI_INT, MPI_NO_OP, win, &reqs[3]));
  CHECK_MPI(t, MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE));
  for (int i = 0; i < 4; i++) {
    CHECK_EQ(t, b[i], t->rank * 10 + 2 + i);
    CHECK_EQ(t, c[i], t->rank * 10 + 2 + i);
  }
  CHECK_MPI(t, MPI_Win_unlock_all(win));
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK_EQ(t, mem[4 + 4 * (l % 2)], 1);
  CHECK_EQ(t, mem[12], l * 10 + 2 + 12 + 1);
  MPI_Group_free(&left);
  MPI_Group_free(&right);
  MPI_Group_free(&world);
  CHECK_MPI(t, MPI_Win_free(&win));
  free(mem);
}

/* Dynamic windows: memory attached after creation, addressed by MPI_Get_address. */
static void dynamic(struct tctx* t) {
  t->section = "dynamic";
  MPI_Win win;
  CHECK_MPI(t, MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
  int* buf = calloc(N, sizeof(int));
  CHECK_MPI(t, MPI_Win_attach(win, buf, N * sizeof(int)));
  MPI_Aint mine, theirs;
  MPI_Get_address(buf, &mine);
  MPI_Sendrecv(&mine, 1, MPI_AINT, left_of(t), 5, &theirs, 1, MPI_AINT, right_of(t), 5, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  CHECK_MPI(t, MPI_Win_lock_all(0, win));
  int v = t->rank + 7;
  MPI_Put(&v, 1, MPI_INT, right_of(t), theirs + 3 * (MPI_Aint)sizeof(int), 1, MPI_INT, win);
  MPI_Accumulate(&v, 1, MPI_INT, right_of(t), theirs, 1, MPI_INT, MPI_SUM, win);
  CHECK_MPI(t, MPI_Win_flush_all(win));
  CHECK_MPI(t, MPI_Win_unlock_all(win));
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK_EQ(t, buf[3], left_of(t) + 7);
  CHECK_EQ(t, buf[0], left_of(t) + 7);
  int flavor_flag = 0, *flavor = NULL;
  MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flavor_flag);
  CHECK(t, flavor_flag && *flavor == MPI_WIN_FLAVOR_DYNAMIC);
  CHECK_MPI(t, MPI_Win_detach(win, buf));
  CHECK_MPI(t, MPI_Win_free(&win));
  free(buf);
}

/* Shared-memory windows among the ranks that can share memory. */
static void shared(struct tctx* t) {
  t->section = "shared";
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, t->rank, MPI_INFO_NULL, &node);
  int nr, ns;
  MPI_Comm_rank(node, &nr);
  MPI_Comm_size(node, &ns);
  int* mine;
  MPI_Win win;
  CHECK_MPI(t, MPI_Win_allocate_shared(N * sizeof(int), sizeof(int), MPI_INFO_NULL, node, &mine, &win));
  CHECK_MPI(t, MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
  for (int i = 0; i < N; i++) mine[i] = nr * 100 + i;
  CHECK_MPI(t, MPI_Win_sync(win));
  MPI_Barrier(node);
  CHECK_MPI(t, MPI_Win_sync(win));
  for (int p = 0; p < ns; p++) {
    MPI_Aint size = 0;
    int unit = 0, *base = NULL;
    CHECK_MPI(t, MPI_Win_shared_query(win, p, &size, &unit, &base));
    CHECK_EQ(t, size, N * sizeof(int));
    CHECK_EQ(t, unit, sizeof(int));
    for (int i = 0; i < N; i++) CHECK_EQ(t, base[i], p * 100 + i);
  }
  CHECK_MPI(t, MPI_Win_unlock_all(win));
  CHECK_MPI(t, MPI_Win_free(&win));
  MPI_Comm_free(&node);
}

/* Counts into *extra (no globals: see check.h). */
static int count_delete(MPI_Win win, int keyval, void* value, void* extra) {
  (void)win, (void)keyval, (void)value;
  ++*(int*)extra;
  return MPI_SUCCESS;
}
/* Writes the code into the int the window's attribute `key` points to (the keyval is
 * found by its name: the window's name holds it). */
static void note_error(MPI_Win* win, int* code, ...) {
  char name[MPI_MAX_OBJECT_NAME];
  int len = 0, flag = 0, *slot = NULL;
  MPI_Win_get_name(*win, name, &len);
  MPI_Win_get_attr(*win, atoi(name), &slot, &flag);
  if (flag) *slot = *code;
}

/* Attributes, names, group, info, error handlers and reported errors. */
static void properties(struct tctx* t) {
  t->section = "properties";
  char mem[64];
  MPI_Win win;
  CHECK_MPI(t, MPI_Win_create(mem, sizeof mem, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
  void* base = NULL;
  MPI_Aint* size = NULL;
  int *unit = NULL, *flavor = NULL, *model = NULL, flag = 0;
  MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
  CHECK(t, flag && base == mem);
  MPI_Win_get_attr(win, MPI_WIN_SIZE, &size, &flag);
  CHECK(t, flag && *size == sizeof mem);
  MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &unit, &flag);
  CHECK(t, flag && *unit == 4);
  MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
  CHECK(t, flag && *flavor == MPI_WIN_FLAVOR_CREATE);
  MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
  CHECK(t, flag && (*model == MPI_WIN_UNIFIED || *model == MPI_WIN_SEPARATE));
  int key, deleted = 0, handled = 0;
  CHECK_MPI(t, MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, count_delete, &key, &deleted));
  CHECK_MPI(t, MPI_Win_set_attr(win, key, &handled));
  int* got = NULL;
  CHECK_MPI(t, MPI_Win_get_attr(win, key, &got, &flag));
  CHECK(t, flag && got == &handled);
  char name[MPI_MAX_OBJECT_NAME];
  int len;
  CHECK_MPI(t, MPI_Win_set_name(win, "rma-test"));
  CHECK_MPI(t, MPI_Win_get_name(win, name, &len));
  CHECK(t, strcmp(name, "rma-test") == 0 && len == 8, "name \"%s\"", name);
  snprintf(name, sizeof name, "%d", key);  /* for note_error */
  CHECK_MPI(t, MPI_Win_set_name(win, name));
  MPI_Group g, w;
  CHECK_MPI(t, MPI_Win_get_group(win, &g));
  MPI_Comm_group(MPI_COMM_WORLD, &w);
  int cmp;
  MPI_Group_compare(g, w, &cmp);
  CHECK_EQ(t, cmp, MPI_IDENT);
  MPI_Group_free(&g);
  MPI_Group_free(&w);
  MPI_Info info;
  CHECK_MPI(t, MPI_Win_get_info(win, &info));
  MPI_Info_free(&info);
  /* Errors come back under MPI_ERRORS_RETURN, and reach a user handler. */
  CHECK_MPI(t, MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
  int v = 0, cls = 0;
  CHECK_MPI(t, MPI_Win_fence(0, win));
  int rc = MPI_Put(&v, 1, MPI_INT, 0, 1000, 1, MPI_INT, win);
  MPI_Error_class(rc, &cls);
  CHECK_EQ(t, cls, MPI_ERR_RMA_RANGE);
  rc = MPI_Put(&v, 1, MPI_INT, t->size + 5, 0, 1, MPI_INT, win);
  MPI_Error_class(rc, &cls);
  CHECK_EQ(t, cls, MPI_ERR_RANK);
  CHECK_MPI(t, MPI_Win_fence(0, win));
  MPI_Errhandler eh;
  CHECK_MPI(t, MPI_Win_create_errhandler(note_error, &eh));
  CHECK_MPI(t, MPI_Win_set_errhandler(win, eh));
  CHECK_MPI(t, MPI_Errhandler_free(&eh));
  CHECK_MPI(t, MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
  CHECK_EQ(t, handled, MPI_ERR_OTHER);
  CHECK_EQ(t, MPI_Win_c2f(win) != 0, 1);
  CHECK(t, MPI_Win_f2c(MPI_Win_c2f(win)) == win);
  CHECK_MPI(t, MPI_Win_free_keyval(&key));  /* the attribute keeps it until the window goes */
  CHECK_MPI(t, MPI_Win_free(&win));
  CHECK_EQ(t, deleted, 1);
}

/* Passive target progresses while the target rank blocks in a receive. */
static void passive_progress(struct tctx* t) {
  t->section = "passive";
  int* mem;
  MPI_Win win;
  CHECK_MPI(t, MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
  *mem = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  if (t->size > 1) {
    if (t->rank == 0) {
      int token;
      MPI_Recv(&token, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      CHECK_EQ(t, *mem, 42);
    } else if (t->rank == 1) {
      int v = 42;
      CHECK_MPI(t, MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
      MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
      CHECK_MPI(t, MPI_Win_unlock(0, win));
      MPI_Send(&v, 1, MPI_INT, 0, 9, MPI_COMM_WORLD);
    }
  }
  CHECK_MPI(t, MPI_Win_free(&win));
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "rma");
  if (argc > 1 && strcmp(argv[1], "migrate") == 0) {
#ifdef AMPI
    int* mem;
    MPI_Win win;
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    MPI_Win_set_name(win, "halo");
    if (t.rank == 0) AMPI_Migrate_to_pe(AMPI_Num_pes() - 1);
    MPI_Win_free(&win);
#endif
    return tctx_finish(&t);
  }
  /* Every section, or those named on the command line. */
  static const struct {
    const char* name;
    void (*run)(struct tctx*);
  } sections[] = {{"fence", fence_put_get}, {"accumulate", accumulate}, {"locks", locks}, {"counter", counter},
                  {"atomics", atomics},     {"pscw", pscw_and_requests}, {"dynamic", dynamic},
                  {"shared", shared},       {"properties", properties}, {"passive", passive_progress}};
  for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
    int run = argc < 2;
    for (int a = 1; a < argc; a++) run = run || strcmp(argv[a], sections[i].name) == 0;
    if (run) sections[i].run(&t);
  }
  return tctx_finish(&t);
}
