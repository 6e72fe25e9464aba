/* MPI-IO (MPI 3.1 chapter 13), plain standard MPI C. Each argument runs one part; the files
 * live in a fresh directory under $TMPDIR (or /tmp) that rank 0 makes and removes.
 *   open        open/close modes and their errors, delete, size, amode, group, hints,
 *               errhandlers
 *   view        noncontiguous filetypes and memory types, get_view, byte offsets, seek
 *   access      explicit offsets, individual pointers, _all forms, reads at the end of file
 *   shared      shared file pointer, ordered, seek_shared, get_position_shared
 *   nonblocking iread/iwrite (_at, _shared, _all, _at_all) with Wait/Test/Waitall; split
 *   external32  a round trip in "external32" (big-endian bytes on disk) and its refusals
 *   atomic      atomic mode: overlapping concurrent writes are never mixed
 *   collective  an interleaved array written and read with _all, checked byte by byte;
 *               a write-only file whose holes between the written pieces keep their bytes */
#include "../progs/check.h"

#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

struct env {
  struct tctx t;
  char dir[256];
};

static void path_of(struct env* e, const char* name, char* out) { snprintf(out, 512, "%s/%s", e->dir, name); }

static int err_class(int code) {
  int c = -1;
  MPI_Error_class(code, &c);
  return c;
}

static void test_open(struct env* e) {
  struct tctx* t = &e->t;
  t->section = "open";
  char p[512], q[512];
  path_of(e, "open.dat", p);
  MPI_File fh;
  /* Errors go to MPI_FILE_NULL's handler: MPI_ERRORS_RETURN by default. */
  CHECK_EQ(t, err_class(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh)), MPI_ERR_NO_SUCH_FILE);
  CHECK_EQ(t, err_class(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh)),
           MPI_ERR_AMODE);
  CHECK_EQ(t, err_class(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDWR | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh)),
           MPI_ERR_AMODE);
  CHECK_EQ(t, err_class(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh)),
           MPI_ERR_AMODE);
  path_of(e, "no/such/dir/x", q);
  CHECK_EQ(t, err_class(MPI_File_open(MPI_COMM_WORLD, q, MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh)),
           MPI_ERR_NO_SUCH_FILE);

  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "cb_buffer_size", "65536");
  MPI_Info_set(info, "my_hint", "kept");
  CHECK_MPI(t, MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL, info, &fh));
  MPI_Info_free(&info);
  int amode = 0;
  CHECK_MPI(t, MPI_File_get_amode(fh, &amode));
  CHECK_EQ(t, amode, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL);
  MPI_Group g, wg;
  int cmp = -1;
  CHECK_MPI(t, MPI_File_get_group(fh, &g));
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  MPI_Group_compare(g, wg, &cmp);
  CHECK_EQ(t, cmp, MPI_IDENT);
  MPI_Group_free(&g);
  MPI_Group_free(&wg);
  MPI_Info used;
  char val[MPI_MAX_INFO_VAL + 1];
  int flag = 0;
  CHECK_MPI(t, MPI_File_get_info(fh, &used));
  MPI_Info_get(used, "cb_buffer_size", MPI_MAX_INFO_VAL, val, &flag);
  CHECK(t, flag && !strcmp(val, "65536"));
  MPI_Info_get(used, "my_hint", MPI_MAX_INFO_VAL, val, &flag);
  CHECK(t, flag && !strcmp(val, "kept"));
  MPI_Info_free(&used);
  MPI_Errhandler eh;
  CHECK_MPI(t, MPI_File_get_errhandler(fh, &eh));
  CHECK(t, eh == MPI_ERRORS_RETURN, "files default to MPI_ERRORS_RETURN");
  MPI_Errhandler_free(&eh);
  CHECK_MPI(t, MPI_File_set_size(fh, 1000));
  MPI_Offset size = -1;
  CHECK_MPI(t, MPI_File_get_size(fh, &size));
  CHECK_EQ(t, size, 1000);
  MPI_Barrier(MPI_COMM_WORLD); /* before the next change of the size */
  CHECK_MPI(t, MPI_File_preallocate(fh, 4096));
  CHECK_MPI(t, MPI_File_get_size(fh, &size));
  CHECK_EQ(t, size, 4096);
  MPI_Barrier(MPI_COMM_WORLD); /* before the next change of the size */
  CHECK_MPI(t, MPI_File_set_size(fh, 10));
  CHECK_MPI(t, MPI_File_get_size(fh, &size));
  CHECK_EQ(t, size, 10);
  CHECK_EQ(t, MPI_File_c2f(fh) != 0, 1);
  CHECK(t, MPI_File_f2c(MPI_File_c2f(fh)) == fh);
  CHECK_MPI(t, MPI_File_sync(fh));
  CHECK_MPI(t, MPI_File_close(&fh));
  CHECK(t, fh == MPI_FILE_NULL);
  /* MPI_MODE_EXCL on an existing file. */
  CHECK_EQ(t, err_class(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL,
                                      MPI_INFO_NULL, &fh)),
           MPI_ERR_FILE_EXISTS);
  /* Read-only: writes fail with MPI_ERR_READ_ONLY; write-only: reads with MPI_ERR_ACCESS. */
  int x = 7;
  CHECK_MPI(t, MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
  CHECK_EQ(t, err_class(MPI_File_write_at(fh, 0, &x, 1, MPI_INT, MPI_STATUS_IGNORE)), MPI_ERR_READ_ONLY);
  CHECK_MPI(t, MPI_File_close(&fh));
  CHECK_MPI(t, MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_WRONLY | MPI_MODE_UNIQUE_OPEN, MPI_INFO_NULL, &fh));
  CHECK_EQ(t, err_class(MPI_File_read_at(fh, 0, &x, 1, MPI_INT, MPI_STATUS_IGNORE)), MPI_ERR_ACCESS);
  CHECK_EQ(t, err_class(MPI_File_write_at(fh, -1, &x, 1, MPI_INT, MPI_STATUS_IGNORE)), MPI_ERR_ARG);
  CHECK_EQ(t, err_class(MPI_File_write_at(fh, 0, &x, -1, MPI_INT, MPI_STATUS_IGNORE)), MPI_ERR_COUNT);
  CHECK_MPI(t, MPI_File_close(&fh));
  CHECK_EQ(t, err_class(MPI_File_close(&fh)), MPI_ERR_FILE);
  /* APPEND: the pointers start at the end. */
  CHECK_MPI(t, MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDWR | MPI_MODE_APPEND, MPI_INFO_NULL, &fh));
  MPI_Offset pos = -1;
  CHECK_MPI(t, MPI_File_get_position(fh, &pos));
  CHECK_EQ(t, pos, 10);
  CHECK_MPI(t, MPI_File_get_position_shared(fh, &pos));
  CHECK_EQ(t, pos, 10);
  CHECK_MPI(t, MPI_File_close(&fh));
  MPI_Barrier(MPI_COMM_WORLD);
  if (t->rank == 0) {
    CHECK_MPI(t, MPI_File_delete(p, MPI_INFO_NULL));
    CHECK_EQ(t, err_class(MPI_File_delete(p, MPI_INFO_NULL)), MPI_ERR_NO_SUCH_FILE);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  /* DELETE_ON_CLOSE. */
  path_of(e, "doc.dat", q);
  CHECK_MPI(t, MPI_File_open(MPI_COMM_WORLD, q, MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                             MPI_INFO_NULL, &fh));
  CHECK_MPI(t, MPI_File_close(&fh));
  struct stat sb;
  CHECK(t, stat(q, &sb) != 0 && errno == ENOENT, "MPI_MODE_DELETE_ON_CLOSE removes the file");
  /* SEQUENTIAL: no explicit offsets. */
  path_of(e, "seq.dat", q);
  CHECK_MPI(t, MPI_File_open(MPI_COMM_WORLD, q, MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_SEQUENTIAL |
                                                   MPI_MODE_DELETE_ON_CLOSE,
                             MPI_INFO_NULL, &fh));
  CHECK_EQ(t, err_class(MPI_File_write_at(fh, 0, &x, 1, MPI_INT, MPI_STATUS_IGNORE)), MPI_ERR_UNSUPPORTED_OPERATION);
  CHECK_MPI(t, MPI_File_write_ordered(fh, &x, 1, MPI_INT, MPI_STATUS_IGNORE));
  CHECK_MPI(t, MPI_File_close(&fh));
  /* A user error handler on MPI_FILE_NULL gets open's errors. */
  CHECK_MPI(t, MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));
  CHECK_EQ(t, err_class(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh)), MPI_ERR_NO_SUCH_FILE);
}

static void count_errors(MPI_File* f, int* code, ...) {
  (void)f;
  (void)code;
}

static void test_errhandler(struct env* e) {
  struct tctx* t = &e->t;
  t->section = "errhandler";
  char p[512];
  path_of(e, "eh.dat", p);
  MPI_File fh;
  MPI_Errhandler eh, got;
  CHECK_MPI(t, MPI_File_create_errhandler(count_errors, &eh));
  CHECK_MPI(t, MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                             MPI_INFO_NULL, &fh));
  CHECK_MPI(t, MPI_File_set_errhandler(fh, eh));
  CHECK_MPI(t, MPI_File_get_errhandler(fh, &got));
  CHECK(t, got == eh);
  MPI_Errhandler_free(&got);
  int x = 0;
  CHECK_EQ(t, err_class(MPI_File_read_at(fh, -5, &x, 1, MPI_INT, MPI_STATUS_IGNORE)), MPI_ERR_ARG);
  CHECK_MPI(t, MPI_File_call_errhandler(fh, MPI_ERR_OTHER));
  CHECK_MPI(t, MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN));
  MPI_Errhandler_free(&eh);
  CHECK_MPI(t, MPI_File_close(&fh));
}

/* A vector filetype: each rank owns blocks of `blk` ints interleaved by rank. */
static void test_view(struct env* e) {
  struct tctx* t = &e->t;
  t->section = "view";
  char p[512];
  path_of(e, "view.dat", p);
  const int n = t->size, blk = 3, reps = 5;
  MPI_File fh;
  CHECK_MPI(t, MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
  MPI_Datatype ftype, rtype, memtype;
  MPI_Type_vector(1, blk, blk * n, MPI_INT, &ftype);
  MPI_Type_create_resized(ftype, 0, (MPI_Aint)(blk * n * sizeof(int)), &rtype);
  MPI_Type_commit(&rtype);
  /* Memory: every other int of a buffer twice as long. */
  MPI_Type_vector(blk * reps, 1, 2, MPI_INT, &memtype);
  MPI_Type_commit(&memtype);
  int out[2 * 3 * 5], in[2 * 3 * 5];
  for (int i = 0; i < 2 * blk * reps; i++) out[i] = (i % 2) ? -1 : t->rank * 1000 + i / 2;
  const MPI_Offset disp = 16;
  CHECK_MPI(t, MPI_File_set_view(fh, disp + (MPI_Offset)(t->rank * blk * sizeof(int)), MPI_INT, rtype, "native",
                                 MPI_INFO_NULL));
  MPI_Status st;
  CHECK_MPI(t, MPI_File_write(fh, out, 1, memtype, &st));
  int cnt = -1;
  MPI_Get_count(&st, memtype, &cnt);
  CHECK_EQ(t, cnt, 1);
  MPI_Get_count(&st, MPI_INT, &cnt);
  CHECK_EQ(t, cnt, blk * reps);
  MPI_Offset pos = -1, byte = -1;
  CHECK_MPI(t, MPI_File_get_position(fh, &pos));
  CHECK_EQ(t, pos, blk * reps);
  CHECK_MPI(t, MPI_File_get_byte_offset(fh, 4, &byte));  /* element 4: second block, second int */
  CHECK_EQ(t, byte, disp + (t->rank * blk + (long long)blk * n + 1) * 4);
  CHECK_MPI(t, MPI_File_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  /* The whole file, through the default view, is the interleaving. */
  CHECK_MPI(t, MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  int whole[8 * 3 * 5];
  CHECK_MPI(t, MPI_File_read_at(fh, disp, whole, n * blk * reps, MPI_INT, &st));
  MPI_Get_count(&st, MPI_INT, &cnt);
  CHECK_EQ(t, cnt, n * blk * reps);
  for (int i = 0; i < n * blk * reps; i++) {
    const int r = (i / blk) % n, k = (i / (blk * n)) * blk + i % blk;
    CHECK_EQ(t, whole[i], r * 1000 + k);
  }
  /* Read back through the view into the strided memory type; seek. */
  CHECK_MPI(t, MPI_File_set_view(fh, disp + (MPI_Offset)(t->rank * blk * sizeof(int)), MPI_INT, rtype, "native",
                                 MPI_INFO_NULL));
  for (int i = 0; i < 2 * blk * reps; i++) in[i] = -2;
  CHECK_MPI(t, MPI_File_read(fh, in, 1, memtype, &st));
  for (int i = 0; i < 2 * blk * reps; i++) CHECK_EQ(t, in[i], (i % 2) ? -2 : out[i]);
  CHECK_MPI(t, MPI_File_seek(fh, 4, MPI_SEEK_SET));
  int v = -1;
  CHECK_MPI(t, MPI_File_read(fh, &v, 1, MPI_INT, &st));
  CHECK_EQ(t, v, t->rank * 1000 + 4);
  CHECK_MPI(t, MPI_File_seek(fh, -2, MPI_SEEK_CUR));
  CHECK_MPI(t, MPI_File_read(fh, &v, 1, MPI_INT, &st));
  CHECK_EQ(t, v, t->rank * 1000 + 3);
  CHECK_MPI(t, MPI_File_seek(fh, -1, MPI_SEEK_END));
  CHECK_MPI(t, MPI_File_get_position(fh, &pos));
  CHECK(t, pos >= blk * reps - 1 - blk && pos <= blk * reps - 1, "pos %lld", (long long)pos);
  CHECK_EQ(t, err_class(MPI_File_seek(fh, -100, MPI_SEEK_SET)), MPI_ERR_ARG);
  /* get_view hands back the view (derived types as new handles). */
  MPI_Offset d;
  MPI_Datatype et, ft;
  char rep[MPI_MAX_DATAREP_STRING];
  CHECK_MPI(t, MPI_File_get_view(fh, &d, &et, &ft, rep));
  CHECK_EQ(t, d, disp + t->rank * blk * 4);
  CHECK(t, et == MPI_INT && !strcmp(rep, "native"));
  MPI_Aint lb, ext;
  MPI_Type_get_extent(ft, &lb, &ext);
  CHECK_EQ(t, ext, blk * n * 4);
  MPI_Type_free(&ft);
  MPI_Aint fext = 0;
  CHECK_MPI(t, MPI_File_get_type_extent(fh, MPI_DOUBLE, &fext));
  CHECK_EQ(t, fext, 8);
  /* Errors: an unknown datarep, a filetype not made of etypes, a type freed meanwhile stays. */
  CHECK_EQ(t, err_class(MPI_File_set_view(fh, 0, MPI_INT, rtype, "nonesuch", MPI_INFO_NULL)),
           MPI_ERR_UNSUPPORTED_DATAREP);
  CHECK_EQ(t, err_class(MPI_File_set_view(fh, 0, MPI_DOUBLE, rtype, "native", MPI_INFO_NULL)), MPI_ERR_TYPE);
  CHECK_EQ(t, err_class(MPI_Register_datarep("mine", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, NULL, NULL)),
           MPI_ERR_UNSUPPORTED_DATAREP);
  MPI_Type_free(&rtype);
  MPI_Type_free(&ftype);
  CHECK_MPI(t, MPI_File_seek(fh, 0, MPI_SEEK_SET));
  CHECK_MPI(t, MPI_File_read(fh, &v, 1, MPI_INT, &st));
  CHECK_EQ(t, v, t->rank * 1000);
  MPI_Type_free(&memtype);
  CHECK_MPI(t, MPI_File_close(&fh));
  MPI_Barrier(MPI_COMM_WORLD);
  if (t->rank == 0) CHECK_MPI(t, MPI_File_delete(p, MPI_INFO_NULL));
}

static void test_access(struct env* e) {
  struct tctx* t = &e->t;
  t->section = "access";
  char p[512];
  path_of(e, "access.dat", p);
  MPI_File fh;
  CHECK_MPI(t, MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                             MPI_INFO_NULL, &fh));
  const int N = 100;
  double buf[100], got[100];
  for (int i = 0; i < N; i++) buf[i] = t->rank * 1e4 + i;
  MPI_Status st;
  int cnt;
  /* Explicit offsets, independent then collective. */
  CHECK_MPI(t, MPI_File_write_at(fh, (MPI_Offset)t->rank * N * 8, buf, N, MPI_DOUBLE, &st));
  MPI_Get_count(&st, MPI_DOUBLE, &cnt);
  CHECK_EQ(t, cnt, N);
  MPI_Barrier(MPI_COMM_WORLD);
  const int other = (t->rank + 1) % t->size;
  CHECK_MPI(t, MPI_File_read_at_all(fh, (MPI_Offset)other * N * 8, got, N, MPI_DOUBLE, &st));
  for (int i = 0; i < N; i++) CHECK(t, got[i] == other * 1e4 + i);
  /* Collective reads that overlap: every rank reads the same two ranks' data, and a range
   * running past the end of the file (zeros beyond it, the count says so). */
  {
    double both[200];
    CHECK_MPI(t, MPI_File_read_at_all(fh, 0, both, t->size >= 2 ? 2 * N : N, MPI_DOUBLE, &st));
    for (int i = 0; i < (t->size >= 2 ? 2 * N : N); i++) CHECK(t, both[i] == (i / N) * 1e4 + i % N);
    const MPI_Offset last = (MPI_Offset)(t->size - 1) * N * 8;
    for (int i = 0; i < 2 * N; i++) both[i] = -1;
    CHECK_MPI(t, MPI_File_read_at_all(fh, last, both, 2 * N, MPI_DOUBLE, &st));
    MPI_Get_count(&st, MPI_DOUBLE, &cnt);
    CHECK_EQ(t, cnt, N);
    for (int i = 0; i < N; i++) CHECK(t, both[i] == (t->size - 1) * 1e4 + i);
  }
  /* Reading past the end: the count says how much came. */
  MPI_Offset end = (MPI_Offset)t->size * N * 8;
  CHECK_MPI(t, MPI_File_read_at(fh, end - 3 * 8, got, 10, MPI_DOUBLE, &st));
  MPI_Get_count(&st, MPI_DOUBLE, &cnt);
  CHECK_EQ(t, cnt, 3);
  CHECK_MPI(t, MPI_File_read_at_all(fh, end - 2 * 8, got, 10, MPI_DOUBLE, &st));
  MPI_Get_count(&st, MPI_DOUBLE, &cnt);
  CHECK_EQ(t, cnt, 2);
  MPI_Barrier(MPI_COMM_WORLD);
  /* Individual pointers: a view per rank, write_all and read_all. */
  CHECK_MPI(t, MPI_File_set_view(fh, end + (MPI_Offset)t->rank * N * 8, MPI_DOUBLE, MPI_DOUBLE, "native", MPI_INFO_NULL));
  CHECK_MPI(t, MPI_File_write(fh, buf, N / 2, MPI_DOUBLE, &st));
  CHECK_MPI(t, MPI_File_write_all(fh, buf + N / 2, N / 2, MPI_DOUBLE, &st));
  MPI_Offset pos;
  CHECK_MPI(t, MPI_File_get_position(fh, &pos));
  CHECK_EQ(t, pos, N);
  CHECK_MPI(t, MPI_File_seek(fh, 0, MPI_SEEK_SET));
  memset(got, 0, sizeof got);
  CHECK_MPI(t, MPI_File_read_all(fh, got, N, MPI_DOUBLE, &st));
  for (int i = 0; i < N; i++) CHECK(t, got[i] == buf[i]);
  /* Zero-count collective calls on some ranks. */
  CHECK_MPI(t, MPI_File_write_at_all(fh, 0, buf, t->rank % 2 ? 0 : 1, MPI_DOUBLE, &st));
  CHECK_MPI(t, MPI_File_close(&fh));
}

static void test_shared(struct env* e) {
  struct tctx* t = &e->t;
  t->section = "shared";
  char p[512];
  path_of(e, "shared.dat", p);
  MPI_File fh;
  CHECK_MPI(t, MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                             MPI_INFO_NULL, &fh));
  CHECK_MPI(t, MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
  /* Every rank appends 4 records of (rank, k) through the shared pointer. */
  for (int k = 0; k < 4; k++) {
    int rec[2] = {t->rank, k};
    CHECK_MPI(t, MPI_File_write_shared(fh, rec, 2, MPI_INT, MPI_STATUS_IGNORE));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Offset pos;
  CHECK_MPI(t, MPI_File_get_position_shared(fh, &pos));
  CHECK_EQ(t, pos, 8 * t->size);
  int all[8 * 64];
  const int total = 8 * t->size;
  CHECK_MPI(t, MPI_File_read_at(fh, 0, all, total, MPI_INT, MPI_STATUS_IGNORE));
  int seen[64][4];
  memset(seen, 0, sizeof seen);
  for (int i = 0; i < total; i += 2)
    if (all[i] >= 0 && all[i] < t->size && all[i + 1] >= 0 && all[i + 1] < 4) seen[all[i]][all[i + 1]]++;
  for (int r = 0; r < t->size; r++)
    for (int k = 0; k < 4; k++) CHECK_EQ(t, seen[r][k], 1);
  /* Ordered: rank order, after what is there. */
  int mine[3] = {t->rank, t->rank, t->rank};
  CHECK_MPI(t, MPI_File_write_ordered(fh, mine, t->rank % 3 + 1, MPI_INT, MPI_STATUS_IGNORE));
  CHECK_MPI(t, MPI_File_get_position_shared(fh, &pos));
  int expect_len = 0;
  for (int r = 0; r < t->size; r++) expect_len += r % 3 + 1;
  CHECK_EQ(t, pos, total + expect_len);
  int ord[3 * 64];
  CHECK_MPI(t, MPI_File_read_at_all(fh, total, ord, expect_len, MPI_INT, MPI_STATUS_IGNORE));
  for (int r = 0, i = 0; r < t->size; r++)
    for (int k = 0; k < r % 3 + 1; k++, i++) CHECK_EQ(t, ord[i], r);
  /* Read ordered from the start of that part again. */
  CHECK_MPI(t, MPI_File_seek_shared(fh, total, MPI_SEEK_SET));
  int back[3] = {-1, -1, -1};
  MPI_Status st;
  CHECK_MPI(t, MPI_File_read_ordered(fh, back, t->rank % 3 + 1, MPI_INT, &st));
  for (int k = 0; k < t->rank % 3 + 1; k++) CHECK_EQ(t, back[k], t->rank);
  CHECK_MPI(t, MPI_File_seek_shared(fh, 0, MPI_SEEK_END));
  CHECK_MPI(t, MPI_File_get_position_shared(fh, &pos));
  CHECK_EQ(t, pos, total + expect_len);
  /* read_shared: each record read once across all ranks. */
  CHECK_MPI(t, MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
  int rec[2];
  int mine_count = 0;
  for (;;) {
    CHECK_MPI(t, MPI_File_read_shared(fh, rec, 2, MPI_INT, &st));
    int c;
    MPI_Get_count(&st, MPI_INT, &c);
    if (c < 2) break;
    mine_count++;
    if (mine_count > total) break;
  }
  int sum = 0;
  MPI_Allreduce(&mine_count, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK_EQ(t, sum, (total + expect_len) / 2);
  CHECK_MPI(t, MPI_File_close(&fh));
}

static void test_nonblocking(struct env* e) {
  struct tctx* t = &e->t;
  t->section = "nonblocking";
  char p[512];
  path_of(e, "nb.dat", p);
  MPI_File fh;
  CHECK_MPI(t, MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                             MPI_INFO_NULL, &fh));
  const int N = 64;
  int a[64], b[64], c[64];
  for (int i = 0; i < N; i++) a[i] = t->rank * 100000 + i;
  MPI_Request rq[4];
  MPI_Status sts[4];
  const MPI_Offset mine = (MPI_Offset)t->rank * N * 4 * 4;
  CHECK_MPI(t, MPI_File_iwrite_at(fh, mine, a, N, MPI_INT, &rq[0]));
  CHECK_MPI(t, MPI_File_iwrite_at_all(fh, mine + N * 4, a, N, MPI_INT, &rq[1]));
  CHECK_MPI(t, MPI_Waitall(2, rq, sts));
  int cnt;
  MPI_Get_count(&sts[1], MPI_INT, &cnt);
  CHECK_EQ(t, cnt, N);
  CHECK_MPI(t, MPI_File_seek(fh, mine + 2 * N * 4, MPI_SEEK_SET));
  CHECK_MPI(t, MPI_File_iwrite(fh, a, N, MPI_INT, &rq[0]));
  MPI_Offset pos;
  CHECK_MPI(t, MPI_File_get_position(fh, &pos));
  CHECK_EQ(t, pos, mine + 3 * N * 4); /* advanced at the call */
  CHECK_MPI(t, MPI_File_iwrite_all(fh, a, N, MPI_INT, &rq[1]));
  int flag = 0;
  while (!flag) CHECK_MPI(t, MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE));
  CHECK_MPI(t, MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
  MPI_Barrier(MPI_COMM_WORLD);
  for (int k = 0; k < 4; k++) {
    memset(b, 0, sizeof b);
    if (k % 2) CHECK_MPI(t, MPI_File_iread_at_all(fh, mine + k * N * 4, b, N, MPI_INT, &rq[0]));
    else CHECK_MPI(t, MPI_File_iread_at(fh, mine + k * N * 4, b, N, MPI_INT, &rq[0]));
    CHECK_MPI(t, MPI_Wait(&rq[0], &sts[0]));
    MPI_Get_count(&sts[0], MPI_INT, &cnt);
    CHECK_EQ(t, cnt, N);
    for (int i = 0; i < N; i++) CHECK_EQ(t, b[i], a[i]);
  }
  CHECK_MPI(t, MPI_File_seek(fh, mine, MPI_SEEK_SET));
  CHECK_MPI(t, MPI_File_iread(fh, b, N, MPI_INT, &rq[0]));
  CHECK_MPI(t, MPI_File_iread_all(fh, c, N, MPI_INT, &rq[1]));
  CHECK_MPI(t, MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
  for (int i = 0; i < N; i++) CHECK(t, b[i] == a[i] && c[i] == a[i]);
  /* Shared-pointer I-forms: each rank's block lands somewhere whole. */
  MPI_Offset end = (MPI_Offset)t->size * N * 16;
  CHECK_MPI(t, MPI_File_seek_shared(fh, end, MPI_SEEK_SET));
  CHECK_MPI(t, MPI_File_iwrite_shared(fh, a, N, MPI_INT, &rq[0]));
  CHECK_MPI(t, MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK_MPI(t, MPI_File_seek_shared(fh, end, MPI_SEEK_SET));
  CHECK_MPI(t, MPI_File_iread_shared(fh, b, N, MPI_INT, &rq[0]));
  CHECK_MPI(t, MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
  for (int i = 1; i < N; i++) CHECK_EQ(t, b[i], b[0] + i);
  /* Split collectives. */
  for (int i = 0; i < N; i++) a[i] = -i - t->rank;
  CHECK_MPI(t, MPI_File_write_at_all_begin(fh, mine, a, N, MPI_INT));
  CHECK_EQ(t, err_class(MPI_File_write_at_all_begin(fh, mine, a, N, MPI_INT)), MPI_ERR_OTHER);
  CHECK_MPI(t, MPI_File_write_at_all_end(fh, a, &sts[0]));
  MPI_Get_count(&sts[0], MPI_INT, &cnt);
  CHECK_EQ(t, cnt, N);
  CHECK_MPI(t, MPI_File_read_at_all_begin(fh, mine, b, N, MPI_INT));
  CHECK_MPI(t, MPI_File_read_at_all_end(fh, b, MPI_STATUS_IGNORE));
  for (int i = 0; i < N; i++) CHECK_EQ(t, b[i], a[i]);
  CHECK_MPI(t, MPI_File_seek(fh, mine, MPI_SEEK_SET));
  CHECK_MPI(t, MPI_File_read_all_begin(fh, c, N, MPI_INT));
  CHECK_MPI(t, MPI_File_read_all_end(fh, c, MPI_STATUS_IGNORE));
  for (int i = 0; i < N; i++) CHECK_EQ(t, c[i], a[i]);
  CHECK_MPI(t, MPI_File_write_all_begin(fh, a, N, MPI_INT));
  CHECK_MPI(t, MPI_File_write_all_end(fh, a, MPI_STATUS_IGNORE));
  CHECK_MPI(t, MPI_File_write_ordered_begin(fh, a, 1, MPI_INT));
  CHECK_MPI(t, MPI_File_write_ordered_end(fh, a, MPI_STATUS_IGNORE));
  CHECK_MPI(t, MPI_File_read_ordered_begin(fh, b, 1, MPI_INT));
  CHECK_MPI(t, MPI_File_read_ordered_end(fh, b, MPI_STATUS_IGNORE));
  CHECK_EQ(t, err_class(MPI_File_read_all_end(fh, b, MPI_STATUS_IGNORE)), MPI_ERR_OTHER);
  CHECK_MPI(t, MPI_File_close(&fh));
}

static void test_external32(struct env* e) {
  struct tctx* t = &e->t;
  t->section = "external32";
  char p[512];
  path_of(e, "ext.dat", p);
  MPI_File fh;
  CHECK_MPI(t, MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                             MPI_INFO_NULL, &fh));
  CHECK_MPI(t, MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL));
  MPI_Aint fext = 0;
  CHECK_MPI(t, MPI_File_get_type_extent(fh, MPI_LONG, &fext));
  CHECK_EQ(t, fext, 4); /* MPI_LONG is 4 bytes in external32 */
  int v[4] = {0x01020304, -2, t->rank, 0x7fffffff};
  CHECK_MPI(t, MPI_File_write_at(fh, t->rank * 4, v, 4, MPI_INT, MPI_STATUS_IGNORE));
  int back[4] = {0, 0, 0, 0};
  CHECK_MPI(t, MPI_File_read_at(fh, t->rank * 4, back, 4, MPI_INT, MPI_STATUS_IGNORE));
  for (int i = 0; i < 4; i++) CHECK_EQ(t, back[i], v[i]);
  /* On disk: big-endian. */
  CHECK_MPI(t, MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  unsigned char raw[4];
  CHECK_MPI(t, MPI_File_read_at(fh, t->rank * 16, raw, 4, MPI_BYTE, MPI_STATUS_IGNORE));
  CHECK(t, raw[0] == 1 && raw[1] == 2 && raw[2] == 3 && raw[3] == 4, "%02x %02x %02x %02x", raw[0], raw[1], raw[2], raw[3]);
  /* A double round trip, and a type whose external32 size differs is refused. */
  CHECK_MPI(t, MPI_File_set_view(fh, 4096, MPI_DOUBLE, MPI_DOUBLE, "external32", MPI_INFO_NULL));
  double d = 3.25 + t->rank, dd = 0;
  CHECK_MPI(t, MPI_File_write_at(fh, t->rank, &d, 1, MPI_DOUBLE, MPI_STATUS_IGNORE));
  CHECK_MPI(t, MPI_File_read_at(fh, t->rank, &dd, 1, MPI_DOUBLE, MPI_STATUS_IGNORE));
  CHECK(t, dd == d);
  CHECK_EQ(t, err_class(MPI_File_set_view(fh, 0, MPI_LONG, MPI_LONG, "external32", MPI_INFO_NULL)),
           MPI_ERR_UNSUPPORTED_DATAREP);
  CHECK_MPI(t, MPI_File_close(&fh));
}

/* Atomic mode: every rank writes a whole block of its own rank over the same range many
 * times; a reader never sees a mix. */
static void test_atomic(struct env* e) {
  struct tctx* t = &e->t;
  t->section = "atomic";
  char p[512];
  path_of(e, "atomic.dat", p);
  MPI_File fh;
  CHECK_MPI(t, MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                             MPI_INFO_NULL, &fh));
  CHECK_MPI(t, MPI_File_set_atomicity(fh, 1));
  int flag = 0;
  CHECK_MPI(t, MPI_File_get_atomicity(fh, &flag));
  CHECK_EQ(t, flag, 1);
  enum { N = 4096 };
  int* mine = malloc(sizeof(int) * N);
  int* got = malloc(sizeof(int) * N);
  for (int i = 0; i < N; i++) mine[i] = t->rank + 1;
  /* A strided filetype so that each write is several ranges (atomicity across them). */
  MPI_Datatype ft, rft;
  MPI_Type_vector(N / 64, 64, 128, MPI_INT, &ft);
  MPI_Type_create_resized(ft, 0, (MPI_Aint)(N / 64) * 128 * 4, &rft);
  MPI_Type_commit(&rft);
  CHECK_MPI(t, MPI_File_set_view(fh, 0, MPI_INT, rft, "native", MPI_INFO_NULL));
  for (int round = 0; round < 20; round++) {
    CHECK_MPI(t, MPI_File_write_at(fh, 0, mine, N, MPI_INT, MPI_STATUS_IGNORE));
    MPI_Status st;
    CHECK_MPI(t, MPI_File_read_at(fh, 0, got, N, MPI_INT, &st));
    int cnt;
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK_EQ(t, cnt, N);
    for (int i = 1; i < N; i++)
      if (got[i] != got[0]) {
        CHECK(t, 0, "round %d: a mixed block (%d at 0, %d at %d)", round, got[0], got[i], i);
        break;
      }
  }
  free(mine);
  free(got);
  MPI_Type_free(&rft);
  MPI_Type_free(&ft);
  CHECK_MPI(t, MPI_File_set_atomicity(fh, 0));
  CHECK_MPI(t, MPI_File_close(&fh));
}

/* Every rank owns every size-th block of `blk` doubles of a global array: written with
 * write_all through a view, then read back whole by every rank and checked byte by byte,
 * and read back with read_all through the view. With cb_nodes and a small cb_buffer_size
 * the aggregators work in several windows. */
static void test_collective(struct env* e, const char* cb_nodes, const char* cb_size, const char* name) {
  struct tctx* t = &e->t;
  t->section = name;
  char p[512];
  path_of(e, name, p);
  const int n = t->size, blk = 7, nblocks = 50;
  MPI_Info info;
  MPI_Info_create(&info);
  if (cb_nodes) MPI_Info_set(info, "cb_nodes", cb_nodes);
  if (cb_size) MPI_Info_set(info, "cb_buffer_size", cb_size);
  MPI_File fh;
  CHECK_MPI(t, MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE, info, &fh));
  MPI_Info_free(&info);
  MPI_Datatype ft, rft;
  MPI_Type_vector(1, blk, blk * n, MPI_DOUBLE, &ft);
  MPI_Type_create_resized(ft, 0, (MPI_Aint)(blk * n * 8), &rft);
  MPI_Type_commit(&rft);
  CHECK_MPI(t, MPI_File_set_view(fh, (MPI_Offset)t->rank * blk * 8, MPI_DOUBLE, rft, "native", MPI_INFO_NULL));
  double* mine = malloc(sizeof(double) * blk * nblocks);
  for (int i = 0; i < blk * nblocks; i++) mine[i] = (double)((i / blk) * blk * n + t->rank * blk + i % blk);
  MPI_Status st;
  CHECK_MPI(t, MPI_File_write_all(fh, mine, blk * nblocks, MPI_DOUBLE, &st));
  int cnt;
  MPI_Get_count(&st, MPI_DOUBLE, &cnt);
  CHECK_EQ(t, cnt, blk * nblocks);
  CHECK_MPI(t, MPI_File_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  /* The whole array, through plain POSIX: element i holds i. */
  const int total = blk * nblocks * n;
  double* whole = malloc(sizeof(double) * total);
  FILE* fp = fopen(p, "rb");
  CHECK(t, fp != NULL);
  if (fp) {
    CHECK_EQ(t, fread(whole, sizeof(double), total, fp), total);
    fclose(fp);
    int bad = 0;
    for (int i = 0; i < total && bad < 5; i++)
      if (whole[i] != (double)i) {
        CHECK(t, 0, "element %d holds %g", i, whole[i]);
        bad++;
      }
  }
  double* back = calloc(blk * nblocks, sizeof(double));
  CHECK_MPI(t, MPI_File_seek(fh, 0, MPI_SEEK_SET));
  CHECK_MPI(t, MPI_File_read_all(fh, back, blk * nblocks, MPI_DOUBLE, &st));
  CHECK(t, memcmp(back, mine, sizeof(double) * blk * nblocks) == 0, "read_all gives back what was written");
  free(back);
  free(whole);
  free(mine);
  MPI_Type_free(&rft);
  MPI_Type_free(&ft);
  CHECK_MPI(t, MPI_File_close(&fh));
}

/* Holes: a write-only file whose earlier bytes must survive a collective write that covers
 * only part of each window (the odd ranks write nothing): the aggregators fill the holes. */
static void test_holes(struct env* e) {
  struct tctx* t = &e->t;
  t->section = "holes";
  char p[512];
  path_of(e, "holes.dat", p);
  const int n = t->size, blk = 5, nblocks = 20, total = blk * n * nblocks;
  MPI_File fh;
  CHECK_MPI(t, MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
  if (t->rank == 0) {
    int* fill = malloc(sizeof(int) * total);
    for (int i = 0; i < total; i++) fill[i] = -7;
    CHECK_MPI(t, MPI_File_write_at(fh, 0, fill, total, MPI_INT, MPI_STATUS_IGNORE));
    free(fill);
  }
  CHECK_MPI(t, MPI_File_sync(fh));
  MPI_Datatype ft, rft;
  MPI_Type_vector(1, blk, blk * n, MPI_INT, &ft);
  MPI_Type_create_resized(ft, 0, (MPI_Aint)(blk * n * 4), &rft);
  MPI_Type_commit(&rft);
  CHECK_MPI(t, MPI_File_set_view(fh, (MPI_Offset)t->rank * blk * 4, MPI_INT, rft, "native", MPI_INFO_NULL));
  int* mine = malloc(sizeof(int) * blk * nblocks);
  for (int i = 0; i < blk * nblocks; i++) mine[i] = (i / blk) * blk * n + t->rank * blk + i % blk;
  CHECK_MPI(t, MPI_File_write_all(fh, mine, t->rank % 2 ? 0 : blk * nblocks, MPI_INT, MPI_STATUS_IGNORE));
  CHECK_MPI(t, MPI_File_close(&fh));
  MPI_Barrier(MPI_COMM_WORLD);
  int* whole = malloc(sizeof(int) * total);
  FILE* fp = fopen(p, "rb");
  CHECK(t, fp != NULL);
  if (fp) {
    CHECK_EQ(t, fread(whole, sizeof(int), total, fp), total);
    fclose(fp);
    int bad = 0;
    for (int i = 0; i < total && bad < 5; i++) {
      const int owner = (i / blk) % n, want = owner % 2 ? -7 : i;
      if (whole[i] != want) {
        CHECK(t, 0, "element %d holds %d, expected %d", i, whole[i], want);
        bad++;
      }
    }
  }
  free(whole);
  free(mine);
  MPI_Type_free(&rft);
  MPI_Type_free(&ft);
  MPI_Barrier(MPI_COMM_WORLD);
  if (t->rank == 0) CHECK_MPI(t, MPI_File_delete(p, MPI_INFO_NULL));
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct env e;
  tctx_init(&e.t, "io");
  if (e.t.rank == 0) {
    const char* tmp = getenv("TMPDIR");
    snprintf(e.dir, sizeof e.dir, "%s/ampi-io-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(e.dir)) {
      perror("mkdtemp");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  MPI_Bcast(e.dir, sizeof e.dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (!strcmp(a, "open")) test_open(&e), test_errhandler(&e);
    else if (!strcmp(a, "view")) test_view(&e);
    else if (!strcmp(a, "access")) test_access(&e);
    else if (!strcmp(a, "shared")) test_shared(&e);
    else if (!strcmp(a, "nonblocking")) test_nonblocking(&e);
    else if (!strcmp(a, "external32")) test_external32(&e);
    else if (!strcmp(a, "atomic")) test_atomic(&e);
    else if (!strcmp(a, "collective")) {
      test_collective(&e, NULL, NULL, "coll_default.dat");
      test_collective(&e, "2", "256", "coll_windows.dat");
      test_holes(&e);
    } else if (e.t.rank == 0) {
      fprintf(stderr, "io: unknown part %s\n", a);
      e.t.fails++;
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (e.t.rank == 0) {
    /* Every part removes its files (hidden shared-pointer files included). */
    if (rmdir(e.dir) != 0) {
      fprintf(stderr, "io: %s is not empty after the test: %s\n", e.dir, strerror(errno));
      e.t.fails++;
    }
  }
  return tctx_finish(&e.t);
}
