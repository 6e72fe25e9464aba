/* MPI-4.0 large counts (runtime/ampi/large.h, gen_mpi.py's _c adapters): element counts
 * beyond 2^31 in statuses and datatype queries (the int queries answer MPI_UNDEFINED), and
 * the _c routines of point-to-point, collectives (blocking, nonblocking, persistent), user ops
 * (MPI_Op_create_c), pack and datatype constructors on ordinary sizes, checked against their
 * int twins; a count beyond an int made a type of (a zero-size type in a Sendrecv_c: no data
 * moves); the
 * error of a constructor count beyond an int. `big`: also 2^31 + 8 bytes sent and broadcast
 * (needs about 9 GiB; not run by CTest). Also MPI-4.0's MPI_Info_get_string. */
#include "check.h"

#include <limits.h>
#include <stdint.h>

static const MPI_Count kBeyond = (MPI_Count)INT_MAX + 13;

static void statuses(struct tctx* t) {
  t->section = "statuses and type queries";
  MPI_Status st;
  CHECK_MPI(t, MPI_Status_set_elements_x(&st, MPI_BYTE, kBeyond));
  int n = 0;
  MPI_Count c = 0;
  CHECK_MPI(t, MPI_Get_elements(&st, MPI_BYTE, &n));
  CHECK_EQ(t, n, MPI_UNDEFINED);
  CHECK_MPI(t, MPI_Get_count(&st, MPI_BYTE, &n));
  CHECK_EQ(t, n, MPI_UNDEFINED);
  CHECK_MPI(t, MPI_Get_elements_x(&st, MPI_BYTE, &c));
  CHECK_EQ(t, c, kBeyond);
  CHECK_MPI(t, MPI_Get_elements_c(&st, MPI_BYTE, &c));
  CHECK_EQ(t, c, kBeyond);
  CHECK_MPI(t, MPI_Get_count_c(&st, MPI_BYTE, &c));
  CHECK_EQ(t, c, kBeyond);
  CHECK_MPI(t, MPI_Status_set_elements_c(&st, MPI_INT, 2 * kBeyond));
  CHECK_MPI(t, MPI_Get_count_c(&st, MPI_INT, &c));
  CHECK_EQ(t, c, 2 * kBeyond);
  CHECK_MPI(t, MPI_Get_count(&st, MPI_INT, &n));
  CHECK_EQ(t, n, MPI_UNDEFINED);
  /* a type of 3 GiB */
  MPI_Datatype mib, big;
  MPI_Type_contiguous(1 << 20, MPI_BYTE, &mib);
  MPI_Type_contiguous(3072, mib, &big);
  MPI_Type_commit(&big);
  CHECK_MPI(t, MPI_Type_size(big, &n));
  CHECK_EQ(t, n, MPI_UNDEFINED);
  CHECK_MPI(t, MPI_Type_size_c(big, &c));
  CHECK_EQ(t, c, 3LL << 30);
  MPI_Count lb = -1, extent = 0;
  CHECK_MPI(t, MPI_Type_get_extent_c(big, &lb, &extent));
  CHECK_EQ(t, lb, 0);
  CHECK_EQ(t, extent, 3LL << 30);
  CHECK_MPI(t, MPI_Type_get_true_extent_c(big, &lb, &extent));
  CHECK_EQ(t, extent, 3LL << 30);
  MPI_Type_free(&big);
  MPI_Type_free(&mib);
}

static void user_sum(void* in, void* inout, MPI_Count* len, MPI_Datatype* type) {
  (void)type;
  for (MPI_Count i = 0; i < *len; ++i) ((long long*)inout)[i] += ((long long*)in)[i];
}

static void same_as_int(struct tctx* t) {
  t->section = "_c routines on ordinary counts";
  const int n = t->size, me = t->rank, next = (me + 1) % n, prev = (me + n - 1) % n;
  long long a[8], b[8];
  for (int i = 0; i < 8; ++i) a[i] = me * 100 + i, b[i] = -1;
  MPI_Status st;
  CHECK_MPI(t, MPI_Sendrecv_c(a, 8, MPI_LONG_LONG, next, 1, b, 8, MPI_LONG_LONG, prev, 1, MPI_COMM_WORLD, &st));
  MPI_Count c = 0;
  CHECK_MPI(t, MPI_Get_count_c(&st, MPI_LONG_LONG, &c));
  CHECK_EQ(t, c, 8);
  for (int i = 0; i < 8; ++i) CHECK_EQ(t, b[i], prev * 100 + i);
  MPI_Request r[2];
  CHECK_MPI(t, MPI_Irecv_c(b, 8, MPI_LONG_LONG, prev, 2, MPI_COMM_WORLD, &r[0]));
  CHECK_MPI(t, MPI_Isend_c(a, 8, MPI_LONG_LONG, next, 2, MPI_COMM_WORLD, &r[1]));
  CHECK_MPI(t, MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
  CHECK_EQ(t, b[7], prev * 100 + 7);
  if (me == 0 && n > 1) CHECK_MPI(t, MPI_Send_c(a, 3, MPI_LONG_LONG, 1, 3, MPI_COMM_WORLD));
  if (me == 1) {
    CHECK_MPI(t, MPI_Recv_c(b, 8, MPI_LONG_LONG, 0, 3, MPI_COMM_WORLD, &st));
    CHECK_MPI(t, MPI_Get_elements_c(&st, MPI_LONG_LONG, &c));
    CHECK_EQ(t, c, 3);
  }
  /* collectives */
  long long s[8], sum[8];
  for (int i = 0; i < 8; ++i) s[i] = me + i;
  CHECK_MPI(t, MPI_Allreduce_c(s, sum, 8, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  for (int i = 0; i < 8; ++i) CHECK_EQ(t, sum[i], (long long)n * (n - 1) / 2 + (long long)n * i);
  MPI_Op op;
  CHECK_MPI(t, MPI_Op_create_c(user_sum, 1, &op));
  memset(sum, 0, sizeof sum);
  MPI_Request q;
  CHECK_MPI(t, MPI_Iallreduce_c(s, sum, 8, MPI_LONG_LONG, op, MPI_COMM_WORLD, &q));
  CHECK_MPI(t, MPI_Wait(&q, MPI_STATUS_IGNORE));
  for (int i = 0; i < 8; ++i) CHECK_EQ(t, sum[i], (long long)n * (n - 1) / 2 + (long long)n * i);
  MPI_Op_free(&op);
  long long v = me == 0 ? 77 : 0;
  CHECK_MPI(t, MPI_Bcast_init_c(&v, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &q));
  CHECK_MPI(t, MPI_Start(&q));
  CHECK_MPI(t, MPI_Wait(&q, MPI_STATUS_IGNORE));
  CHECK_EQ(t, v, 77);
  CHECK_MPI(t, MPI_Request_free(&q));
  MPI_Count* counts = malloc(sizeof(MPI_Count) * (size_t)n);
  MPI_Aint* displs = malloc(sizeof(MPI_Aint) * (size_t)n);
  long long* all = malloc(sizeof(long long) * 2 * (size_t)n);
  for (int r = 0; r < n; ++r) counts[r] = 2, displs[r] = 2 * (n - 1 - r);
  long long mine[2] = {me, -me};
  CHECK_MPI(t, MPI_Allgatherv_c(mine, 2, MPI_LONG_LONG, all, counts, displs, MPI_LONG_LONG, MPI_COMM_WORLD));
  for (int r = 0; r < n; ++r) {
    CHECK_EQ(t, all[2 * (n - 1 - r)], r);
    CHECK_EQ(t, all[2 * (n - 1 - r) + 1], -r);
  }
  free(counts);
  free(displs);
  free(all);
  /* pack */
  char packed[256];
  MPI_Count pos = 0, size = 0;
  CHECK_MPI(t, MPI_Pack_size_c(8, MPI_LONG_LONG, MPI_COMM_WORLD, &size));
  CHECK(t, size >= 64, "Pack_size_c gave %lld", (long long)size);
  CHECK_MPI(t, MPI_Pack_c(a, 8, MPI_LONG_LONG, packed, sizeof packed, &pos, MPI_COMM_WORLD));
  CHECK_EQ(t, pos, 64);
  memset(b, 0, sizeof b);
  pos = 0;
  CHECK_MPI(t, MPI_Unpack_c(packed, sizeof packed, &pos, b, 8, MPI_LONG_LONG, MPI_COMM_WORLD));
  CHECK_EQ(t, b[5], me * 100 + 5);
  /* constructors */
  MPI_Datatype vec;
  CHECK_MPI(t, MPI_Type_vector_c(2, 2, 4, MPI_INT, &vec));
  MPI_Count ts = 0;
  MPI_Type_size_c(vec, &ts);
  CHECK_EQ(t, ts, 4 * sizeof(int));
  MPI_Type_free(&vec);
}

/* A count beyond an int: the _c routine makes a type of it (here of a zero-size type: no
 * data) and the int body takes one of those. */
static void beyond_int(struct tctx* t) {
  t->section = "counts beyond an int";
  MPI_Datatype empty;
  MPI_Type_contiguous(0, MPI_INT, &empty);
  MPI_Type_commit(&empty);
  const int n = t->size, me = t->rank, next = (me + 1) % n, prev = (me + n - 1) % n;
  int x = 0;
  MPI_Status st;
  CHECK_MPI(t, MPI_Sendrecv_c(&x, kBeyond, empty, next, 4, &x, kBeyond, empty, prev, 4, MPI_COMM_WORLD, &st));
  MPI_Count c = -1;
  CHECK_MPI(t, MPI_Get_count_c(&st, empty, &c));
  CHECK_EQ(t, c, 0); /* no bytes came: 0 elements of a zero-size type */
  MPI_Type_free(&empty);
  /* what a constructor cannot take */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Datatype v;
  CHECK(t, MPI_Type_vector_c(kBeyond, 1, 1, MPI_INT, &v) == MPI_ERR_COUNT, "a vector of 2^31 + 12 blocks was taken");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* 2^31 + 8 bytes sent and broadcast (by hand: about 9 GiB of memory at 2 ranks). */
static void big(struct tctx* t) {
  t->section = "2^31 + 8 bytes";
  const MPI_Count n = (MPI_Count)INT_MAX + 9;
  unsigned char* buf = malloc((size_t)n);
  CHECK(t, buf != NULL);
  if (!buf) return;
  for (MPI_Count i = 0; i < n; i += 4096) buf[i] = t->rank == 0 ? (unsigned char)(i / 4096) : 0;
  buf[n - 1] = t->rank == 0 ? 0xab : 0;
  if (t->size > 1) {
    if (t->rank == 0) CHECK_MPI(t, MPI_Send_c(buf, n, MPI_BYTE, 1, 9, MPI_COMM_WORLD));
    if (t->rank == 1) {
      MPI_Status st;
      CHECK_MPI(t, MPI_Recv_c(buf, n, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &st));
      MPI_Count c = 0;
      MPI_Get_count_c(&st, MPI_BYTE, &c);
      CHECK_EQ(t, c, n);
      int ci = 0;
      MPI_Get_count(&st, MPI_BYTE, &ci);
      CHECK_EQ(t, ci, MPI_UNDEFINED);
      CHECK_EQ(t, buf[n - 1], 0xab);
      CHECK_EQ(t, buf[4096 * 1000], (1000 & 0xff));
      memset(buf, 0, (size_t)n);
    }
  }
  CHECK_MPI(t, MPI_Bcast_c(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD));
  CHECK_EQ(t, buf[n - 1], 0xab);
  CHECK_EQ(t, buf[4096 * 77], 77);
  free(buf);
}

static void info_string(struct tctx* t) {
  t->section = "MPI_Info_get_string";
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "color", "ultramarine");
  char v[32];
  int len = sizeof v, flag = 0;
  CHECK_MPI(t, MPI_Info_get_string(info, "color", &len, v, &flag));
  CHECK_EQ(t, flag, 1);
  CHECK_EQ(t, len, 12);
  CHECK(t, strcmp(v, "ultramarine") == 0, "got \"%s\"", v);
  len = 5; /* too short: cut, and the length needed comes back */
  CHECK_MPI(t, MPI_Info_get_string(info, "color", &len, v, &flag));
  CHECK_EQ(t, len, 12);
  CHECK(t, strcmp(v, "ultr") == 0, "got \"%s\"", v);
  len = 0;
  CHECK_MPI(t, MPI_Info_get_string(info, "color", &len, NULL, &flag));
  CHECK_EQ(t, len, 12);
  CHECK_MPI(t, MPI_Info_get_string(info, "shape", &len, v, &flag));
  CHECK_EQ(t, flag, 0);
  MPI_Info_free(&info);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "large_count");
  statuses(&t);
  same_as_int(&t);
  beyond_int(&t);
  info_string(&t);
  if (argc > 1 && strcmp(argv[1], "big") == 0) big(&t);
  return tctx_finish(&t);
}
