/* Point-to-point matching and ordering: non-overtaking of mixed-size messages (eager and
 * large), wildcards with status fields, tags, Sendrecv(_replace), Ssend/Rsend, MPI_PROC_NULL,
 * zero-byte messages, MPI_ERR_TRUNCATE under MPI_ERRORS_RETURN, Get_count, messages to self.
 * Any number of ranks >= 1; neighbours form a ring (with one rank, the ring is the rank itself). */
#include "check.h"

enum { kOrderMsgs = 60 };

static int order_size(int i) {
  static const int sizes[] = {0, 8, 1000, 65536 + 8, 4, 300000, 70000, 1};
  return sizes[i % 8];
}

static void test_ordering(struct tctx* t, int left, int right, MPI_Comm wcomm) {
  t->section = "ordering";
  /* kOrderMsgs messages of mixed sizes to the right, one tag: they must arrive in order. */
  MPI_Request reqs[kOrderMsgs];
  unsigned char* bufs[kOrderMsgs];
  for (int i = 0; i < kOrderMsgs; i++) {
    int n = order_size(i);
    bufs[i] = malloc(n + 1);
    for (int k = 0; k < n; k++) bufs[i][k] = pattern_byte(t->rank, i, k);
    MPI_Isend(bufs[i], n, MPI_BYTE, right, 11, MPI_COMM_WORLD, &reqs[i]);
  }
  unsigned char* rbuf = malloc(300000);
  for (int i = 0; i < kOrderMsgs; i++) {
    MPI_Status st;
    CHECK_MPI(t, MPI_Recv(rbuf, 300000, MPI_BYTE, left, 11, MPI_COMM_WORLD, &st));
    int count = -1;
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(t, count == order_size(i), "message %d from %d: %d bytes, expected %d (overtaken?)", i, left,
          count, order_size(i));
    CHECK_EQ(t, st.MPI_SOURCE, left);
    CHECK_EQ(t, st.MPI_TAG, 11);
    if (count == order_size(i)) {
      int bad = 0;
      for (int k = 0; k < count; k++) bad += rbuf[k] != pattern_byte(left, i, k);
      CHECK(t, bad == 0, "message %d: %d bytes differ", i, bad);
    }
  }
  MPI_Waitall(kOrderMsgs, reqs, MPI_STATUSES_IGNORE);
  for (int i = 0; i < kOrderMsgs; i++) free(bufs[i]);

  /* The same through MPI_ANY_SOURCE from a single sender (rank 0 to all, then the receive
   * order must be the send order even with a wildcard source and tag). On a communicator of
   * its own: the wildcards would match other sections' messages on MPI_COMM_WORLD. */
  if (t->rank == 0) {
    for (int i = 0; i < kOrderMsgs; i++) {
      int n = order_size(i);
      bufs[i] = malloc(n + 1);
      for (int k = 0; k < n; k++) bufs[i][k] = pattern_byte(0, i, k);
    }
  }
  for (int r = 0; r < t->size; r++) {
    if (t->rank == 0) {
      for (int i = 0; i < kOrderMsgs; i++)
        MPI_Isend(bufs[i], order_size(i), MPI_BYTE, r, 12 + (i % 3), wcomm, &reqs[i]);
    }
    if (t->rank == r) {
      for (int i = 0; i < kOrderMsgs; i++) {
        MPI_Status st;
        CHECK_MPI(t, MPI_Recv(rbuf, 300000, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, wcomm, &st));
        int count = -1;
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(t, count == order_size(i), "wildcard message %d: %d bytes, expected %d", i, count, order_size(i));
        CHECK_EQ(t, st.MPI_SOURCE, 0);
        CHECK_EQ(t, st.MPI_TAG, 12 + (i % 3));
        if (count == order_size(i)) {
          int bad = 0;
          for (int k = 0; k < count; k++) bad += rbuf[k] != pattern_byte(0, i, k);
          CHECK(t, bad == 0, "wildcard message %d: %d bytes differ", i, bad);
        }
      }
    }
    if (t->rank == 0) MPI_Waitall(kOrderMsgs, reqs, MPI_STATUSES_IGNORE);
  }
  if (t->rank == 0)
    for (int i = 0; i < kOrderMsgs; i++) free(bufs[i]);
  free(rbuf);
}

static void test_wildcards(struct tctx* t, MPI_Comm comm, MPI_Comm comm2) {
  t->section = "wildcards";
  /* Everyone (rank 0 included) sends its rank to rank 0 with tag 100 + rank. */
  MPI_Request req;
  int mine = t->rank;
  MPI_Isend(&mine, 1, MPI_INT, 0, 100 + t->rank, comm, &req);
  if (t->rank == 0) {
    int* seen = calloc(t->size, sizeof(int));
    for (int i = 0; i < t->size; i++) {
      MPI_Status st;
      int v = -1;
      st.MPI_SOURCE = st.MPI_TAG = -77;
      CHECK_MPI(t, MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st));
      CHECK(t, v >= 0 && v < t->size, "value %d", v);
      CHECK_EQ(t, st.MPI_SOURCE, v);
      CHECK_EQ(t, st.MPI_TAG, 100 + v);
      int count = -1;
      MPI_Get_count(&st, MPI_INT, &count);
      CHECK_EQ(t, count, 1);
      if (v >= 0 && v < t->size) seen[v]++;
    }
    for (int r = 0; r < t->size; r++) CHECK(t, seen[r] == 1, "source %d seen %d times", r, seen[r]);
    free(seen);
  }
  MPI_Wait(&req, MPI_STATUS_IGNORE);

  /* ANY_TAG from a given source, ANY_SOURCE with a given tag (on another communicator: a
   * neighbour may already be here while rank 0 still receives with wildcards above). */
  comm = comm2;
  int right = (t->rank + 1) % t->size, left = (t->rank + t->size - 1) % t->size;
  MPI_Request r2[2];
  int a = 1000 + t->rank, b = 2000 + t->rank;
  MPI_Isend(&a, 1, MPI_INT, right, 201, comm, &r2[0]);
  MPI_Isend(&b, 1, MPI_INT, right, 202, comm, &r2[1]);
  MPI_Status st;
  int v = -1;
  MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 202, comm, &st);
  CHECK_EQ(t, v, 2000 + left);
  CHECK_EQ(t, st.MPI_SOURCE, left);
  CHECK_EQ(t, st.MPI_TAG, 202);
  MPI_Recv(&v, 1, MPI_INT, left, MPI_ANY_TAG, comm, &st);
  CHECK_EQ(t, v, 1000 + left);
  CHECK_EQ(t, st.MPI_SOURCE, left);
  CHECK_EQ(t, st.MPI_TAG, 201);
  MPI_Waitall(2, r2, MPI_STATUSES_IGNORE);
}

static void test_tags(struct tctx* t, int left, int right) {
  t->section = "tags";
  /* Three tags sent in order 1, 2, 3 (last one large); received 3, 1, 2. */
  enum { kBig = 100000 };
  int* big = malloc(kBig * sizeof(int));
  int* rbig = malloc(kBig * sizeof(int));
  for (int i = 0; i < kBig; i++) big[i] = t->rank * 7 + i;
  int x = 10 + t->rank, y = 20 + t->rank;
  MPI_Request r[3];
  MPI_Isend(&x, 1, MPI_INT, right, 1, MPI_COMM_WORLD, &r[0]);
  MPI_Isend(&y, 1, MPI_INT, right, 2, MPI_COMM_WORLD, &r[1]);
  MPI_Isend(big, kBig, MPI_INT, right, 3, MPI_COMM_WORLD, &r[2]);
  int v = -1;
  MPI_Recv(rbig, kBig, MPI_INT, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  int bad = 0;
  for (int i = 0; i < kBig; i++) bad += rbig[i] != left * 7 + i;
  CHECK(t, bad == 0, "tag 3: %d ints differ", bad);
  MPI_Recv(&v, 1, MPI_INT, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CHECK_EQ(t, v, 10 + left);
  MPI_Recv(&v, 1, MPI_INT, left, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CHECK_EQ(t, v, 20 + left);
  MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
  free(big);
  free(rbig);
}

static void test_sendrecv(struct tctx* t, int left, int right) {
  t->section = "sendrecv";
  int out = 500 + t->rank, in = -1;
  MPI_Status st;
  CHECK_MPI(t, MPI_Sendrecv(&out, 1, MPI_INT, right, 31, &in, 1, MPI_INT, left, 31, MPI_COMM_WORLD, &st));
  CHECK_EQ(t, in, 500 + left);
  CHECK_EQ(t, st.MPI_SOURCE, left);
  CHECK_EQ(t, st.MPI_TAG, 31);

  /* Replace, large (rendezvous-sized) and small, wildcard source. */
  enum { kN = 40000 };
  int* buf = malloc(kN * sizeof(int));
  for (int i = 0; i < kN; i++) buf[i] = t->rank * 100000 + i;
  CHECK_MPI(t, MPI_Sendrecv_replace(buf, kN, MPI_INT, right, 32, MPI_ANY_SOURCE, 32, MPI_COMM_WORLD, &st));
  int bad = 0;
  for (int i = 0; i < kN; i++) bad += buf[i] != left * 100000 + i;
  CHECK(t, bad == 0, "Sendrecv_replace: %d ints differ", bad);
  CHECK_EQ(t, st.MPI_SOURCE, left);
  int count = -1;
  MPI_Get_count(&st, MPI_INT, &count);
  CHECK_EQ(t, count, kN);
  double d = t->rank + 0.5;
  CHECK_MPI(t, MPI_Sendrecv_replace(&d, 1, MPI_DOUBLE, left, 33, right, 33, MPI_COMM_WORLD, &st));
  CHECK(t, d == right + 0.5, "got %g", d);
  free(buf);
}

static void test_sync_ready(struct tctx* t, int left, int right) {
  t->section = "ssend_rsend";
  /* Ssend: the receive is posted first, so a ring of Ssends cannot deadlock. */
  int in = -1, out = 40 + t->rank;
  MPI_Request r;
  MPI_Irecv(&in, 1, MPI_INT, left, 41, MPI_COMM_WORLD, &r);
  CHECK_MPI(t, MPI_Ssend(&out, 1, MPI_INT, right, 41, MPI_COMM_WORLD));
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  CHECK_EQ(t, in, 40 + left);
  /* A large Ssend too. */
  enum { kN = 30000 };
  double* a = malloc(kN * sizeof(double));
  double* b = malloc(kN * sizeof(double));
  for (int i = 0; i < kN; i++) a[i] = t->rank + i * 0.25;
  MPI_Irecv(b, kN, MPI_DOUBLE, left, 42, MPI_COMM_WORLD, &r);
  CHECK_MPI(t, MPI_Ssend(a, kN, MPI_DOUBLE, right, 42, MPI_COMM_WORLD));
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  int bad = 0;
  for (int i = 0; i < kN; i++) bad += b[i] != left + i * 0.25;
  CHECK(t, bad == 0, "large Ssend: %d doubles differ", bad);
  free(a);
  free(b);

  /* Rsend: post the receive, tell the left neighbour (its sender) it is posted, wait for
   * the right neighbour's word, then Rsend to it. */
  in = -1;
  MPI_Irecv(&in, 1, MPI_INT, left, 43, MPI_COMM_WORLD, &r);
  MPI_Request ready;
  MPI_Isend(NULL, 0, MPI_BYTE, left, 44, MPI_COMM_WORLD, &ready);
  MPI_Recv(NULL, 0, MPI_BYTE, right, 44, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  out = 70 + t->rank;
  CHECK_MPI(t, MPI_Rsend(&out, 1, MPI_INT, right, 43, MPI_COMM_WORLD));
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  MPI_Wait(&ready, MPI_STATUS_IGNORE);
  CHECK_EQ(t, in, 70 + left);
}

static void check_null_status(struct tctx* t, const MPI_Status* st, const char* what) {
  CHECK(t, st->MPI_SOURCE == MPI_PROC_NULL, "%s: source %d", what, st->MPI_SOURCE);
  CHECK(t, st->MPI_TAG == MPI_ANY_TAG, "%s: tag %d", what, st->MPI_TAG);
  int count = -1;
  MPI_Get_count(st, MPI_INT, &count);
  CHECK(t, count == 0, "%s: count %d", what, count);
}

static void test_proc_null(struct tctx* t) {
  t->section = "proc_null";
  int buf[4] = {1, 2, 3, 4};
  CHECK_MPI(t, MPI_Send(buf, 4, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD));
  CHECK_MPI(t, MPI_Ssend(buf, 4, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD));
  MPI_Status st;
  st.MPI_SOURCE = st.MPI_TAG = 1234;
  CHECK_MPI(t, MPI_Recv(buf, 4, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &st));
  check_null_status(t, &st, "Recv(PROC_NULL)");
  CHECK(t, buf[0] == 1 && buf[3] == 4, "receive from MPI_PROC_NULL changed the buffer");
  MPI_Request r[2];
  CHECK_MPI(t, MPI_Isend(buf, 4, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &r[0]));
  CHECK_MPI(t, MPI_Irecv(buf, 4, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &r[1]));
  MPI_Status sts[2];
  sts[1].MPI_SOURCE = sts[1].MPI_TAG = 1234;
  CHECK_MPI(t, MPI_Waitall(2, r, sts));
  check_null_status(t, &sts[1], "Irecv(PROC_NULL)");
  CHECK(t, r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL, "requests not freed");
  st.MPI_SOURCE = st.MPI_TAG = 1234;
  CHECK_MPI(t, MPI_Sendrecv(buf, 4, MPI_INT, MPI_PROC_NULL, 6, buf, 4, MPI_INT, MPI_PROC_NULL, 6,
                            MPI_COMM_WORLD, &st));
  check_null_status(t, &st, "Sendrecv(PROC_NULL)");
}

static void test_zero_bytes(struct tctx* t, int left, int right) {
  t->section = "zero_bytes";
  MPI_Request r[3];
  int dummy = 5;
  MPI_Isend(NULL, 0, MPI_INT, right, 51, MPI_COMM_WORLD, &r[0]);
  MPI_Isend(&dummy, 0, MPI_DOUBLE, right, 52, MPI_COMM_WORLD, &r[1]);
  MPI_Isend(&dummy, 1, MPI_INT, right, 53, MPI_COMM_WORLD, &r[2]);
  MPI_Status st;
  int big[100];
  big[0] = -3;
  CHECK_MPI(t, MPI_Recv(big, 100, MPI_INT, left, 51, MPI_COMM_WORLD, &st));
  int count = -1;
  MPI_Get_count(&st, MPI_INT, &count);
  CHECK_EQ(t, count, 0);
  CHECK_EQ(t, st.MPI_SOURCE, left);
  CHECK_EQ(t, st.MPI_TAG, 51);
  CHECK(t, big[0] == -3, "a zero-byte message wrote into the buffer");
  CHECK_MPI(t, MPI_Recv(NULL, 0, MPI_DOUBLE, left, 52, MPI_COMM_WORLD, &st));
  MPI_Get_count(&st, MPI_DOUBLE, &count);
  CHECK_EQ(t, count, 0);
  CHECK_MPI(t, MPI_Recv(big, 1, MPI_INT, left, 53, MPI_COMM_WORLD, &st));
  CHECK_EQ(t, big[0], 5);
  MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
}

static void test_truncate(struct tctx* t, int left, int right) {
  t->section = "truncate";
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int out[10], in[10];
  for (int i = 0; i < 10; i++) out[i] = t->rank * 10 + i;
  MPI_Request sr[3];
  MPI_Isend(out, 10, MPI_INT, right, 61, comm, &sr[0]);
  MPI_Isend(out, 10, MPI_INT, right, 62, comm, &sr[1]);
  MPI_Isend(out, 3, MPI_INT, right, 63, comm, &sr[2]);
  /* Blocking receive into 5 ints: the call returns an error of class MPI_ERR_TRUNCATE. */
  MPI_Status st;
  int rc = MPI_Recv(in, 5, MPI_INT, left, 61, comm, &st);
  int cls = -1;
  MPI_Error_class(rc, &cls);
  CHECK(t, rc != MPI_SUCCESS && cls == MPI_ERR_TRUNCATE, "MPI_Recv of 10 ints into 5: rc %d class %d", rc, cls);
  /* Irecv + Waitall: MPI_ERR_IN_STATUS and the status' MPI_ERROR says truncation. */
  MPI_Request r;
  MPI_Status sts[1];
  sts[0].MPI_ERROR = -5;
  MPI_Irecv(in, 4, MPI_INT, left, 62, comm, &r);
  rc = MPI_Waitall(1, &r, sts);
  MPI_Error_class(rc, &cls);
  CHECK(t, cls == MPI_ERR_IN_STATUS, "Waitall with a truncated receive: rc %d class %d", rc, cls);
  MPI_Error_class(sts[0].MPI_ERROR, &cls);
  CHECK(t, cls == MPI_ERR_TRUNCATE, "status.MPI_ERROR %d class %d", sts[0].MPI_ERROR, cls);
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  CHECK_MPI(t, MPI_Error_string(sts[0].MPI_ERROR, msg, &len));
  CHECK(t, len > 0 && len < MPI_MAX_ERROR_STRING && (int)strlen(msg) == len, "error string length %d", len);
  /* The pair still works afterwards. */
  CHECK_MPI(t, MPI_Recv(in, 10, MPI_INT, left, 63, comm, &st));
  int count = -1;
  MPI_Get_count(&st, MPI_INT, &count);
  CHECK_EQ(t, count, 3);
  CHECK_EQ(t, in[2], left * 10 + 2);
  MPI_Waitall(3, sr, MPI_STATUSES_IGNORE);
  MPI_Comm_free(&comm);
}

static void test_get_count(struct tctx* t, int left, int right) {
  t->section = "get_count";
  double d[7] = {0, 1, 2, 3, 4, 5, 6}, rd[10];
  char bytes[5] = {1, 2, 3, 4, 5};
  MPI_Request r[3];
  MPI_Isend(d, 7, MPI_DOUBLE, right, 71, MPI_COMM_WORLD, &r[0]);
  MPI_Isend(bytes, 5, MPI_CHAR, right, 72, MPI_COMM_WORLD, &r[1]);
  MPI_Isend(d, 6, MPI_DOUBLE, right, 73, MPI_COMM_WORLD, &r[2]);
  MPI_Status st;
  MPI_Recv(rd, 10, MPI_DOUBLE, left, 71, MPI_COMM_WORLD, &st);
  int c = -1;
  MPI_Get_count(&st, MPI_DOUBLE, &c);
  CHECK_EQ(t, c, 7);
  MPI_Get_count(&st, MPI_BYTE, &c);
  CHECK_EQ(t, c, 7 * (int)sizeof(double));
  MPI_Get_count(&st, MPI_INT, &c);
  CHECK_EQ(t, c, 7 * (int)(sizeof(double) / sizeof(int)));
  CHECK(t, rd[6] == 6.0, "content");
  char rb[16];
  MPI_Recv(rb, 16, MPI_CHAR, left, 72, MPI_COMM_WORLD, &st);
  MPI_Get_count(&st, MPI_CHAR, &c);
  CHECK_EQ(t, c, 5);
  MPI_Get_count(&st, MPI_INT, &c);
  CHECK(t, c == MPI_UNDEFINED, "5 bytes as MPI_INT: count %d, expected MPI_UNDEFINED", c);
  /* A derived type of 3 doubles: 6 doubles are 2 of them. */
  MPI_Datatype three;
  MPI_Type_contiguous(3, MPI_DOUBLE, &three);
  MPI_Type_commit(&three);
  MPI_Recv(rd, 3, three, left, 73, MPI_COMM_WORLD, &st);
  MPI_Get_count(&st, three, &c);
  CHECK_EQ(t, c, 2);
  MPI_Type_free(&three);
  MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
}

static void test_self(struct tctx* t) {
  t->section = "self";
  enum { kN = 50000 };
  int* a = malloc(kN * sizeof(int));
  int* b = malloc(kN * sizeof(int));
  for (int i = 0; i < kN; i++) a[i] = i ^ t->rank;
  MPI_Request r[2];
  MPI_Isend(a, kN, MPI_INT, t->rank, 81, MPI_COMM_WORLD, &r[0]);
  MPI_Isend(a, 3, MPI_INT, t->rank, 82, MPI_COMM_WORLD, &r[1]);
  MPI_Status st;
  int small[3] = {0, 0, 0};
  MPI_Recv(small, 3, MPI_INT, t->rank, 82, MPI_COMM_WORLD, &st);
  CHECK(t, small[2] == (2 ^ t->rank), "small self message");
  MPI_Recv(b, kN, MPI_INT, MPI_ANY_SOURCE, 81, MPI_COMM_WORLD, &st);
  CHECK_EQ(t, st.MPI_SOURCE, t->rank);
  int bad = 0;
  for (int i = 0; i < kN; i++) bad += b[i] != (i ^ t->rank);
  CHECK(t, bad == 0, "large self message: %d ints differ", bad);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  /* Sendrecv with self, and a blocking receive posted before the matching send. */
  int x = 9 + t->rank, y = 0;
  MPI_Sendrecv(&x, 1, MPI_INT, t->rank, 83, &y, 1, MPI_INT, t->rank, 83, MPI_COMM_WORLD, &st);
  CHECK_EQ(t, y, 9 + t->rank);
  MPI_Irecv(&y, 1, MPI_INT, t->rank, 84, MPI_COMM_WORLD, &r[0]);
  x = 99;
  MPI_Send(&x, 1, MPI_INT, t->rank, 84, MPI_COMM_WORLD);
  MPI_Wait(&r[0], &st);
  CHECK_EQ(t, y, 99);
  free(a);
  free(b);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "p2p_match");
  int right = (t.rank + 1) % t.size, left = (t.rank + t.size - 1) % t.size;
  /* Sections with wildcard receives get communicators of their own. */
  MPI_Comm wc1, wc2, wc3;
  MPI_Comm_dup(MPI_COMM_WORLD, &wc1);
  MPI_Comm_dup(MPI_COMM_WORLD, &wc2);
  MPI_Comm_dup(MPI_COMM_WORLD, &wc3);
  test_ordering(&t, left, right, wc1);
  test_wildcards(&t, wc2, wc3);
  MPI_Comm_free(&wc1);
  MPI_Comm_free(&wc2);
  MPI_Comm_free(&wc3);
  test_tags(&t, left, right);
  test_sendrecv(&t, left, right);
  test_sync_ready(&t, left, right);
  test_proc_null(&t);
  test_zero_bytes(&t, left, right);
  test_truncate(&t, left, right);
  test_get_count(&t, left, right);
  test_self(&t);
  return tctx_finish(&t);
}
