/* Charm++'s AMPI extensions as Charm++'s own programs use them. usage: charm_ext SECTION...
 *   status     MPI_Status's MPI_COMM and MPI_LENGTH after Recv, Wait, Probe, Iprobe, Mprobe
 *   attrs      AMPI_MY_WTH, AMPI_NUM_WTHS, AMPI_MY_PROCESS, AMPI_NUM_PROCESSES, AMPI_MY_HOME_WTH
 *              (on any communicator; AMPI_MY_WTH follows AMPI_Migrate_to_pe)
 *   iget       AMPI_Iget / Iget_wait / Iget_data / Iget_free outside any epoch, strided
 *              target types, errors
 *   suspend    AMPI_Suspend / AMPI_Resume (a resume that comes first is kept)
 *   callbacks  AMPI_Register_about_to_migrate / just_migrated around AMPI_Migrate_to_pe and
 *              a balancer's moves (run with +balancer RotateLB): they run on the rank's own
 *              thread (their locals on its stack) and may call MPI, blocking calls included
 *   args       prints argc and argv (what the runtime left of the command line)
 *   placement  prints each rank's PE (rank 0: "placement: PE PE ...")
 * Rank 0 prints "charm_ext: ok (N ranks)". Uses ampi.h and charm-api.h as Charm++'s programs
 * do; PRId64 comes through mpi.h (Charm++'s includes <inttypes.h>). */
#include "ampi.h"
#include "charm-api.h"
#include "../progs/check.h"

#ifndef AMPI
#error "mpi.h defines AMPI, as Charm++'s does"
#endif

#include <stdint.h>

CLINKAGE int charm_ext_linkage(void);
CLINKAGE int charm_ext_linkage(void) { return 1; }
#define helper_fn FTN_NAME(HELPER_FN, helper_fn)
CLINKAGE int helper_fn(void);
CLINKAGE int helper_fn(void) { return 2; }

/* ---- status ---------------------------------------------------------------------------------- */
static void test_status(struct tctx* t) {
  t->section = "status";
  MPI_Comm dup;
  CHECK_MPI(t, MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  const int right = (t->rank + 1) % t->size, left = (t->rank + t->size - 1) % t->size;
  int out[5] = {1, 2, 3, 4, 5}, in[8];
  MPI_Status st;
  memset(&st, 0x5a, sizeof st);
  CHECK_MPI(t, MPI_Sendrecv(out, 5, MPI_INT, right, 7, in, 8, MPI_INT, left, 7, dup, &st));
  CHECK_EQ(t, st.MPI_COMM, dup);
  CHECK_EQ(t, st.MPI_LENGTH, 5 * (int)sizeof(int));
  CHECK_EQ(t, st.MPI_SOURCE, left);
  int count = -1;
  MPI_Get_count(&st, MPI_INT, &count);
  CHECK_EQ(t, count, 5);

  MPI_Request r;
  CHECK_MPI(t, MPI_Irecv(in, 8, MPI_INT, left, 8, MPI_COMM_WORLD, &r));
  CHECK_MPI(t, MPI_Send(out, 3, MPI_INT, right, 8, MPI_COMM_WORLD));
  CHECK_MPI(t, MPI_Wait(&r, &st));
  CHECK_EQ(t, st.MPI_COMM, MPI_COMM_WORLD);
  CHECK_EQ(t, st.MPI_LENGTH, 3 * (int)sizeof(int));

  CHECK_MPI(t, MPI_Send(out, 2, MPI_INT, right, 9, dup));
  CHECK_MPI(t, MPI_Probe(left, 9, dup, &st));
  CHECK_EQ(t, st.MPI_COMM, dup);
  CHECK_EQ(t, st.MPI_LENGTH, 2 * (int)sizeof(int));
  int flag = 0;
  while (!flag) CHECK_MPI(t, MPI_Iprobe(left, 9, dup, &flag, &st));
  CHECK_EQ(t, st.MPI_LENGTH, 2 * (int)sizeof(int));
  MPI_Message m;
  CHECK_MPI(t, MPI_Mprobe(left, 9, dup, &m, &st));
  CHECK_EQ(t, st.MPI_COMM, dup);
  CHECK_MPI(t, MPI_Mrecv(in, 8, MPI_INT, &m, &st));
  CHECK_EQ(t, st.MPI_LENGTH, 2 * (int)sizeof(int));
  MPI_Comm_free(&dup);
  /* PRId64 from <inttypes.h>, which mpi.h includes */
  char buf[32];
  snprintf(buf, sizeof buf, "%" PRId64, (int64_t)42);
  CHECK(t, strcmp(buf, "42") == 0);
  CHECK_EQ(t, charm_ext_linkage() + helper_fn(), 3);
}

/* ---- attrs ----------------------------------------------------------------------------------- */
static int attr(struct tctx* t, MPI_Comm c, int key) {
  int* v = NULL;
  int flag = 0;
  CHECK_MPI(t, MPI_Comm_get_attr(c, key, &v, &flag));
  CHECK(t, flag == 1, "keyval %d", key);
  return flag && v ? *v : -1;
}

static void test_attrs(struct tctx* t) {
  t->section = "attrs";
  int npes = AMPI_Num_pes();
  CHECK_EQ(t, attr(t, MPI_COMM_WORLD, AMPI_NUM_WTHS), npes);
  CHECK_EQ(t, attr(t, MPI_COMM_WORLD, AMPI_NUM_PROCESSES), npes);
  CHECK_EQ(t, attr(t, MPI_COMM_SELF, AMPI_MY_WTH), AMPI_My_pe());
  CHECK_EQ(t, attr(t, MPI_COMM_WORLD, AMPI_MY_PROCESS), AMPI_My_pe());
  const int home = attr(t, MPI_COMM_WORLD, AMPI_MY_HOME_WTH);
  CHECK_EQ(t, home, AMPI_My_pe()); /* nothing moved yet */
  /* predefined: cannot be set */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int v = 3;
  CHECK(t, MPI_Comm_set_attr(MPI_COMM_WORLD, AMPI_MY_WTH, &v) != MPI_SUCCESS);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  /* a keyval the program creates is not one of them */
  int key;
  CHECK_MPI(t, MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &key, NULL));
  CHECK(t, key > AMPI_MY_HOME_WTH, "keyval %d", key);
  MPI_Comm_free_keyval(&key);
  /* rank 0 moves to the last PE: the attribute says where it runs now, the home stays */
  if (npes > 1 && t->rank == 0) {
    CHECK_MPI(t, AMPI_Migrate_to_pe(npes - 1));
    CHECK_EQ(t, attr(t, MPI_COMM_WORLD, AMPI_MY_WTH), npes - 1);
    CHECK_EQ(t, attr(t, MPI_COMM_WORLD, AMPI_MY_HOME_WTH), home);
    CHECK_MPI(t, AMPI_Migrate_to_pe(home));
    CHECK_EQ(t, attr(t, MPI_COMM_WORLD, AMPI_MY_WTH), home);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- iget ------------------------------------------------------------------------------------ */
enum { kRows = 6, kCols = 5 };
static void test_iget(struct tctx* t) {
  t->section = "iget";
  double mem[kRows * kCols];
  for (int i = 0; i < kRows * kCols; i++) mem[i] = t->rank * 1000 + i;
  MPI_Win win;
  CHECK_MPI(t, MPI_Win_create(mem, sizeof mem, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
  MPI_Barrier(MPI_COMM_WORLD); /* every window holds its values: no epoch for AMPI_Iget */
  const int peer = (t->rank + 1) % t->size;
  MPI_Datatype column;
  CHECK_MPI(t, MPI_Type_vector(kRows, 1, kCols, MPI_DOUBLE, &column));
  CHECK_MPI(t, MPI_Type_commit(&column));
  MPI_Request rrow, rcol, rself;
  /* row 2 of the peer; column 3 of the peer (strided at the target); the first 4 of mine,
   * landing 16 bytes into the buffer */
  CHECK_MPI(t, AMPI_Iget(0, kCols, MPI_DOUBLE, peer, 2 * kCols, kCols, MPI_DOUBLE, win, &rrow));
  CHECK_MPI(t, AMPI_Iget(0, kRows, MPI_DOUBLE, peer, 3, 1, column, win, &rcol));
  CHECK_MPI(t, AMPI_Iget(16, 4, MPI_DOUBLE, t->rank, 0, 4, MPI_DOUBLE, win, &rself));
  MPI_Status srow, scol, sself;
  CHECK_MPI(t, AMPI_Iget_wait(&rcol, &scol, win)); /* in any order */
  CHECK_MPI(t, AMPI_Iget_wait(&rrow, &srow, win));
  CHECK_MPI(t, AMPI_Iget_wait(&rself, &sself, win));
  CHECK_EQ(t, srow.MPI_SOURCE, peer);
  CHECK_EQ(t, srow.MPI_LENGTH, kCols * (int)sizeof(double));
  CHECK_EQ(t, scol.MPI_LENGTH, kRows * (int)sizeof(double));
  int n = 0;
  MPI_Get_count(&scol, MPI_DOUBLE, &n);
  CHECK_EQ(t, n, kRows);
  double *row = NULL, *col = NULL;
  char* self = NULL;
  CHECK_MPI(t, AMPI_Iget_data(&row, srow));
  CHECK_MPI(t, AMPI_Iget_data(&col, scol));
  CHECK_MPI(t, AMPI_Iget_data(&self, sself));
  for (int i = 0; i < kCols; i++) CHECK_EQ(t, row[i], peer * 1000 + 2 * kCols + i);
  for (int i = 0; i < kRows; i++) CHECK_EQ(t, col[i], peer * 1000 + i * kCols + 3);
  for (int i = 0; i < 4; i++) CHECK_EQ(t, ((double*)(self + 16))[i], t->rank * 1000 + i);
  CHECK(t, row != col);
  CHECK_MPI(t, AMPI_Iget_free(&rrow, &srow, win));
  CHECK_MPI(t, AMPI_Iget_free(&rcol, &scol, win));
  /* freed without a wait first: AMPI_Iget_free waits */
  MPI_Request r2;
  MPI_Status s2;
  CHECK_MPI(t, AMPI_Iget(0, 1, MPI_DOUBLE, peer, 7, 1, MPI_DOUBLE, win, &r2));
  CHECK_MPI(t, AMPI_Iget_free(&r2, &s2, win));
  CHECK_EQ(t, r2, MPI_REQUEST_NULL);
  /* errors, returned */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  CHECK(t, AMPI_Iget_data(NULL, sself) != MPI_SUCCESS); /* NULL data */
  CHECK(t, AMPI_Iget_data(&row, srow) != MPI_SUCCESS);  /* already freed */
  CHECK(t, AMPI_Iget(0, 1, MPI_DOUBLE, t->size + 3, 0, 1, MPI_DOUBLE, win, &r2) != MPI_SUCCESS);
  CHECK(t, AMPI_Iget(0, 1, MPI_DOUBLE, peer, kRows * kCols, 1, MPI_DOUBLE, win, &r2) != MPI_SUCCESS);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  CHECK_MPI(t, AMPI_Iget_free(NULL, &sself, win));
  MPI_Type_free(&column);
  MPI_Barrier(MPI_COMM_WORLD); /* no one frees the window under another's get */
  CHECK_MPI(t, MPI_Win_free(&win));
}

/* ---- suspend --------------------------------------------------------------------------------- */
/* Rank 0 suspends; rank 1 resumes it and then sends: rank 0 receives after its suspend
 * returned. Then rank 1 resumes rank 0 before rank 0 suspends (kept: the suspend returns). */
static void test_suspend(struct tctx* t) {
  t->section = "suspend";
  if (t->size < 2) return;
  int v = 0;
  if (t->rank == 0) {
    CHECK_MPI(t, AMPI_Suspend());
    CHECK_MPI(t, MPI_Recv(&v, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_EQ(t, v, 11);
    CHECK_MPI(t, MPI_Recv(&v, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE)); /* after its resume */
    CHECK_MPI(t, AMPI_Suspend());
  } else if (t->rank == 1) {
    v = 11;
    CHECK_MPI(t, AMPI_Resume(0, MPI_COMM_WORLD));
    CHECK_MPI(t, MPI_Send(&v, 1, MPI_INT, 0, 3, MPI_COMM_WORLD));
    CHECK_MPI(t, AMPI_Resume(0, MPI_COMM_WORLD));
    CHECK_MPI(t, MPI_Send(&v, 1, MPI_INT, 0, 4, MPI_COMM_WORLD));
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  CHECK(t, AMPI_Resume(t->size + 2, MPI_COMM_WORLD) != MPI_SUCCESS);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- callbacks ------------------------------------------------------------------------------- */
/* Globals: each rank has its own copy of the program (privatized), and they move with it. */
static char* g_main_local;  /* a local of main's frame: where the rank's stack is */
static int g_about, g_just, g_bad_stack, g_bad_rank, g_rank, g_blocking_ok;

static int on_rank_stack(const char* p) {
  const long d = (long)(p - g_main_local);
  return d > -(16L << 20) && d < (16L << 20);
}

static void about_to_migrate(void) {
  char here;
  int r = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  g_about++;
  if (r != g_rank) g_bad_rank++;
  if (!on_rank_stack(&here)) g_bad_stack++;
}

static void just_migrated(void) {
  char here;
  int r = -1, in = -1, out = g_rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  g_just++;
  if (r != g_rank) g_bad_rank++;
  if (!on_rank_stack(&here)) g_bad_stack++;
  /* a blocking call: a message to itself */
  if (MPI_Sendrecv(&out, 1, MPI_INT, 0, 5, &in, 1, MPI_INT, 0, 5, MPI_COMM_SELF, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
      in == g_rank)
    g_blocking_ok++;
}

static void test_callbacks(struct tctx* t, char* main_local) {
  t->section = "callbacks";
  g_main_local = main_local;
  g_rank = t->rank;
  CHECK_MPI(t, AMPI_Register_about_to_migrate(about_to_migrate));
  CHECK_MPI(t, AMPI_Register_just_migrated(just_migrated));
  const int npes = AMPI_Num_pes();
  if (npes < 2) return;
  /* a move the rank asks for */
  const int from = AMPI_My_pe();
  CHECK_MPI(t, AMPI_Migrate_to_pe((from + 1) % npes));
  CHECK_EQ(t, g_about, 1);
  CHECK_EQ(t, g_just, 1);
  CHECK_MPI(t, AMPI_Migrate_to_pe(from));
  CHECK_EQ(t, g_about, 2);
  CHECK_EQ(t, g_just, 2);
  /* the balancer's moves (RotateLB moves every rank one PE on) */
  CHECK_MPI(t, AMPI_Migrate(AMPI_INFO_LB_SYNC));
  CHECK_EQ(t, AMPI_My_pe(), (from + 1) % npes);
  CHECK_EQ(t, g_about, 3);
  CHECK_EQ(t, g_just, 3);
  CHECK_EQ(t, g_bad_rank, 0);
  CHECK_EQ(t, g_bad_stack, 0);
  CHECK_EQ(t, g_blocking_ok, 3);
}

int main(int argc, char** argv) {
  char main_local = 0;
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "charm_ext");
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "status")) test_status(&t);
    else if (!strcmp(argv[i], "attrs")) test_attrs(&t);
    else if (!strcmp(argv[i], "iget")) test_iget(&t);
    else if (!strcmp(argv[i], "suspend")) test_suspend(&t);
    else if (!strcmp(argv[i], "callbacks")) test_callbacks(&t, &main_local);
    else if (!strcmp(argv[i], "args")) {
      if (t.rank == 0) {
        printf("args: %d", argc);
        for (int j = 1; j < argc; j++) printf(" [%s]", argv[j]);
        printf("\n");
      }
    } else if (!strcmp(argv[i], "placement")) {
      int pe = AMPI_My_pe(), all[1024];
      MPI_Gather(&pe, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
      if (t.rank == 0) {
        printf("placement:");
        for (int r = 0; r < t.size && r < 1024; r++) printf(" %d", all[r]);
        printf("\n");
      }
    } else {
      if (t.rank == 0) fprintf(stderr, "charm_ext: unknown section %s\n", argv[i]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  return tctx_finish(&t);
}
