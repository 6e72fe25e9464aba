/* Nonblocking point-to-point: Wait/Waitall/Waitany/Waitsome, Test (poll loop)/Testall/
 * Testany/Testsome, MPI_REQUEST_NULL in arrays, Request_free on a send, Cancel of an
 * unmatched Irecv, STATUSES_IGNORE; persistent requests in a section of their own.
 *   p2p_nonblocking [section...]   sections: wait test null free cancel persistent
 * (default: all; arguments starting with '+' are ignored). */
#include "check.h"

enum { kK = 8 };

static int val(int src, int k, int i) { return src * 10000 + k * 100 + i; }
static int len_of(int k) { return (k % 4 == 3) ? 20000 : k + 1; } /* some large ones */

/* Posts kK Irecvs from left (tag 10+k, length len_of(k)) into bufs and kK Isends to right. */
static void post(struct tctx* t, MPI_Comm comm, int left, int right, int** rbufs, int** sbufs,
                 MPI_Request* rr, MPI_Request* sr) {
  for (int k = 0; k < kK; k++) {
    rbufs[k] = malloc(len_of(k) * sizeof(int));
    sbufs[k] = malloc(len_of(k) * sizeof(int));
    for (int i = 0; i < len_of(k); i++) sbufs[k][i] = val(t->rank, k, i), rbufs[k][i] = -1;
    CHECK_MPI(t, MPI_Irecv(rbufs[k], len_of(k), MPI_INT, left, 10 + k, comm, &rr[k]));
  }
  /* Sent in reverse order: completions need not follow posting order. */
  for (int k = kK - 1; k >= 0; k--)
    CHECK_MPI(t, MPI_Isend(sbufs[k], len_of(k), MPI_INT, right, 10 + k, comm, &sr[k]));
}

static void check_recv(struct tctx* t, int left, int k, const int* buf, const MPI_Status* st) {
  int bad = 0;
  for (int i = 0; i < len_of(k); i++) bad += buf[i] != val(left, k, i);
  CHECK(t, bad == 0, "message %d: %d ints differ", k, bad);
  if (st) {
    CHECK_EQ(t, st->MPI_SOURCE, left);
    CHECK_EQ(t, st->MPI_TAG, 10 + k);
    int c = -1;
    MPI_Get_count(st, MPI_INT, &c);
    CHECK_EQ(t, c, len_of(k));
  }
}

static void release(int** rbufs, int** sbufs) {
  for (int k = 0; k < kK; k++) free(rbufs[k]), free(sbufs[k]);
}

static void check_empty_status(struct tctx* t, const MPI_Status* st, const char* what) {
  CHECK(t, st->MPI_SOURCE == MPI_ANY_SOURCE, "%s: empty status source %d", what, st->MPI_SOURCE);
  CHECK(t, st->MPI_TAG == MPI_ANY_TAG, "%s: empty status tag %d", what, st->MPI_TAG);
  int c = -1;
  MPI_Get_count(st, MPI_INT, &c);
  CHECK(t, c == 0, "%s: empty status count %d", what, c);
}

/* Section `section`: posts the exchange, then calls Waitsome or Testsome (`some`, called
 * `name`) until each of the kK receives has completed once, checking each; then a call over
 * the (now null) requests must give MPI_UNDEFINED. Waitsome completes at least `min_out` (1)
 * a call, Testsome 0. */
typedef int (*some_fn)(int, MPI_Request*, int*, int*, MPI_Status*);
static void section_some(struct tctx* t, const char* section, MPI_Comm comm, int left, int right, some_fn some,
                         const char* name, int min_out) {
  int *rb[kK], *sb[kK];
  MPI_Request rr[kK], sr[kK];
  MPI_Status sts[kK];
  t->section = section;
  post(t, comm, left, right, rb, sb, rr, sr);
  int seen[kK] = {0}, got = 0;
  while (got < kK) {
    int out = -1, idx[kK];
    CHECK_MPI(t, some(kK, rr, &out, idx, sts));
    CHECK(t, out >= min_out && out <= kK - got, "%s outcount %d with %d left", name, out, kK - got);
    if (out < min_out || out > kK - got) break;
    for (int j = 0; j < out; j++) {
      CHECK(t, idx[j] >= 0 && idx[j] < kK, "%s index %d", name, idx[j]);
      if (idx[j] < 0 || idx[j] >= kK) continue;
      seen[idx[j]]++;
      check_recv(t, left, idx[j], rb[idx[j]], &sts[j]);
    }
    got += out;
  }
  for (int k = 0; k < kK; k++) CHECK(t, seen[k] == 1, "%s returned %d %d times", name, k, seen[k]);
  int out = 3, idx[kK];
  CHECK_MPI(t, some(kK, rr, &out, idx, sts));
  CHECK(t, out == MPI_UNDEFINED, "%s over null requests: outcount %d, expected MPI_UNDEFINED", name, out);
  CHECK_MPI(t, MPI_Waitall(kK, sr, MPI_STATUSES_IGNORE));
  release(rb, sb);
}

static void section_wait(struct tctx* t, MPI_Comm comm, int left, int right) {
  int *rb[kK], *sb[kK];
  MPI_Request rr[kK], sr[kK];
  MPI_Status sts[kK];
  t->section = "wait";
  post(t, comm, left, right, rb, sb, rr, sr);
  for (int k = 0; k < kK; k++) {
    MPI_Status st;
    CHECK_MPI(t, MPI_Wait(&rr[k], &st));
    CHECK(t, rr[k] == MPI_REQUEST_NULL, "Wait did not free the request");
    check_recv(t, left, k, rb[k], &st);
  }
  CHECK_MPI(t, MPI_Waitall(kK, sr, MPI_STATUSES_IGNORE));
  release(rb, sb);

  t->section = "waitall";
  post(t, comm, left, right, rb, sb, rr, sr);
  CHECK_MPI(t, MPI_Waitall(kK, rr, sts));
  for (int k = 0; k < kK; k++) {
    check_recv(t, left, k, rb[k], &sts[k]);
    CHECK(t, rr[k] == MPI_REQUEST_NULL, "Waitall did not free request %d", k);
  }
  CHECK_MPI(t, MPI_Waitall(kK, sr, sts));
  release(rb, sb);

  t->section = "waitany";
  post(t, comm, left, right, rb, sb, rr, sr);
  int seen[kK] = {0};
  for (int n = 0; n < kK; n++) {
    int idx = -1;
    MPI_Status st;
    CHECK_MPI(t, MPI_Waitany(kK, rr, &idx, &st));
    CHECK(t, idx >= 0 && idx < kK, "Waitany index %d", idx);
    if (idx < 0 || idx >= kK) break;
    CHECK(t, rr[idx] == MPI_REQUEST_NULL, "Waitany did not free request %d", idx);
    seen[idx]++;
    check_recv(t, left, idx, rb[idx], &st);
  }
  for (int k = 0; k < kK; k++) CHECK(t, seen[k] == 1, "Waitany returned %d %d times", k, seen[k]);
  {
    int idx = 5;
    MPI_Status st;
    CHECK_MPI(t, MPI_Waitany(kK, rr, &idx, &st));
    CHECK(t, idx == MPI_UNDEFINED, "Waitany over null requests: index %d, expected MPI_UNDEFINED", idx);
    check_empty_status(t, &st, "Waitany over null requests");
    CHECK_MPI(t, MPI_Waitany(0, NULL, &idx, &st));
    CHECK(t, idx == MPI_UNDEFINED, "Waitany(0): index %d", idx);
  }
  CHECK_MPI(t, MPI_Waitall(kK, sr, MPI_STATUSES_IGNORE));
  release(rb, sb);

  section_some(t, "waitsome", comm, left, right, MPI_Waitsome, "Waitsome", 1);
}

static void section_test(struct tctx* t, MPI_Comm comm, int left, int right) {
  int *rb[kK], *sb[kK];
  MPI_Request rr[kK], sr[kK];
  MPI_Status sts[kK];

  t->section = "test";
  post(t, comm, left, right, rb, sb, rr, sr);
  for (int k = 0; k < kK; k++) {
    int flag = 0;
    MPI_Status st;
    while (!flag) CHECK_MPI(t, MPI_Test(&rr[k], &flag, &st));
    CHECK(t, rr[k] == MPI_REQUEST_NULL, "Test did not free a completed request");
    check_recv(t, left, k, rb[k], &st);
  }
  for (int k = 0; k < kK; k++) {
    int flag = 0;
    while (!flag) CHECK_MPI(t, MPI_Test(&sr[k], &flag, MPI_STATUS_IGNORE));
  }
  {
    /* Test on MPI_REQUEST_NULL: flag true, empty status. */
    MPI_Request nr = MPI_REQUEST_NULL;
    int flag = 0;
    MPI_Status st;
    CHECK_MPI(t, MPI_Test(&nr, &flag, &st));
    CHECK(t, flag == 1, "Test(MPI_REQUEST_NULL) flag %d", flag);
    check_empty_status(t, &st, "Test(MPI_REQUEST_NULL)");
  }
  release(rb, sb);

  t->section = "testall";
  post(t, comm, left, right, rb, sb, rr, sr);
  {
    int flag = 0;
    while (!flag) CHECK_MPI(t, MPI_Testall(kK, rr, &flag, sts));
    for (int k = 0; k < kK; k++) check_recv(t, left, k, rb[k], &sts[k]);
    flag = 0;
    while (!flag) CHECK_MPI(t, MPI_Testall(kK, sr, &flag, MPI_STATUSES_IGNORE));
    for (int k = 0; k < kK; k++) CHECK(t, sr[k] == MPI_REQUEST_NULL, "Testall did not free send %d", k);
  }
  release(rb, sb);

  t->section = "testany";
  post(t, comm, left, right, rb, sb, rr, sr);
  {
    int seen[kK] = {0}, got = 0;
    while (got < kK) {
      int idx = -1, flag = 0;
      MPI_Status st;
      CHECK_MPI(t, MPI_Testany(kK, rr, &idx, &flag, &st));
      if (!flag) {
        CHECK(t, idx == MPI_UNDEFINED, "Testany with nothing complete: index %d", idx);
        continue;
      }
      CHECK(t, idx >= 0 && idx < kK, "Testany index %d", idx);
      if (idx < 0 || idx >= kK) break;
      seen[idx]++;
      got++;
      check_recv(t, left, idx, rb[idx], &st);
    }
    for (int k = 0; k < kK; k++) CHECK(t, seen[k] == 1, "Testany returned %d %d times", k, seen[k]);
    int idx = 4, flag = 0;
    MPI_Status st;
    CHECK_MPI(t, MPI_Testany(kK, rr, &idx, &flag, &st));
    CHECK(t, flag == 1 && idx == MPI_UNDEFINED, "Testany over null requests: flag %d index %d", flag, idx);
    check_empty_status(t, &st, "Testany over null requests");
  }
  CHECK_MPI(t, MPI_Waitall(kK, sr, MPI_STATUSES_IGNORE));
  release(rb, sb);

  section_some(t, "testsome", comm, left, right, MPI_Testsome, "Testsome", 0);
}

static void section_null(struct tctx* t, MPI_Comm comm, int left, int right) {
  t->section = "null_in_arrays";
  /* Arrays mixing MPI_REQUEST_NULL with live requests. */
  int a = 0, b = 0, x = t->rank + 1, y = t->rank + 2;
  MPI_Request r[6] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL,
                      MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  MPI_Irecv(&a, 1, MPI_INT, left, 1, comm, &r[1]);
  MPI_Irecv(&b, 1, MPI_INT, left, 2, comm, &r[4]);
  MPI_Isend(&x, 1, MPI_INT, right, 1, comm, &r[2]);
  MPI_Isend(&y, 1, MPI_INT, right, 2, comm, &r[5]);
  MPI_Status sts[6];
  for (int i = 0; i < 6; i++) sts[i].MPI_SOURCE = 4321, sts[i].MPI_TAG = 4321;
  CHECK_MPI(t, MPI_Waitall(6, r, sts));
  CHECK_EQ(t, a, left + 1);
  CHECK_EQ(t, b, left + 2);
  CHECK_EQ(t, sts[1].MPI_TAG, 1);
  CHECK_EQ(t, sts[4].MPI_TAG, 2);
  check_empty_status(t, &sts[0], "Waitall entry that was MPI_REQUEST_NULL");
  check_empty_status(t, &sts[3], "Waitall entry that was MPI_REQUEST_NULL");
  for (int i = 0; i < 6; i++) CHECK(t, r[i] == MPI_REQUEST_NULL, "request %d not null after Waitall", i);
  /* Waitany skips the null entries. */
  MPI_Irecv(&a, 1, MPI_INT, left, 3, comm, &r[3]);
  MPI_Isend(&x, 1, MPI_INT, right, 3, comm, &r[5]);
  int idx = -1, seen3 = 0, seen5 = 0;
  for (int n = 0; n < 2; n++) {
    CHECK_MPI(t, MPI_Waitany(6, r, &idx, MPI_STATUS_IGNORE));
    CHECK(t, idx == 3 || idx == 5, "Waitany index %d: only 3 and 5 are live", idx);
    seen3 += idx == 3;
    seen5 += idx == 5;
  }
  CHECK(t, seen3 == 1 && seen5 == 1, "Waitany: 3 seen %d times, 5 seen %d times", seen3, seen5);
  CHECK_MPI(t, MPI_Wait(&r[0], MPI_STATUS_IGNORE)); /* Wait on MPI_REQUEST_NULL returns at once */
  CHECK_MPI(t, MPI_Waitall(0, NULL, MPI_STATUSES_IGNORE));
}

static void section_free(struct tctx* t, MPI_Comm comm, int left, int right) {
  t->section = "request_free";
  /* Isend then Request_free: the message still arrives. The receiver's acknowledgement tells
   * the sender its buffer is no longer in use. Large and small. */
  enum { kN = 50000 };
  int* big = malloc(kN * sizeof(int));
  int* rbig = malloc(kN * sizeof(int));
  for (int i = 0; i < kN; i++) big[i] = val(t->rank, 3, i);
  int small = 77 + t->rank, rsmall = -1;
  MPI_Request r;
  CHECK_MPI(t, MPI_Isend(big, kN, MPI_INT, right, 20, comm, &r));
  CHECK_MPI(t, MPI_Request_free(&r));
  CHECK(t, r == MPI_REQUEST_NULL, "Request_free did not set MPI_REQUEST_NULL");
  CHECK_MPI(t, MPI_Isend(&small, 1, MPI_INT, right, 21, comm, &r));
  CHECK_MPI(t, MPI_Request_free(&r));
  MPI_Recv(rbig, kN, MPI_INT, left, 20, comm, MPI_STATUS_IGNORE);
  MPI_Recv(&rsmall, 1, MPI_INT, left, 21, comm, MPI_STATUS_IGNORE);
  int bad = 0;
  for (int i = 0; i < kN; i++) bad += rbig[i] != val(left, 3, i);
  CHECK(t, bad == 0, "freed large send: %d ints differ", bad);
  CHECK_EQ(t, rsmall, 77 + left);
  MPI_Sendrecv(NULL, 0, MPI_BYTE, left, 22, NULL, 0, MPI_BYTE, right, 22, comm, MPI_STATUS_IGNORE);
  free(big);
  free(rbig);
}

static void section_cancel(struct tctx* t, MPI_Comm comm, int left, int right) {
  t->section = "cancel";
  /* An Irecv nobody will match (tag 999 is never sent), cancelled. */
  int buf = -1;
  MPI_Request r;
  CHECK_MPI(t, MPI_Irecv(&buf, 1, MPI_INT, MPI_ANY_SOURCE, 999, comm, &r));
  CHECK_MPI(t, MPI_Cancel(&r));
  MPI_Status st;
  CHECK_MPI(t, MPI_Wait(&r, &st));
  CHECK(t, r == MPI_REQUEST_NULL, "Wait on a cancelled request did not free it");
  int flag = 0;
  CHECK_MPI(t, MPI_Test_cancelled(&st, &flag));
  CHECK(t, flag == 1, "Test_cancelled says the unmatched receive was not cancelled");
  CHECK_EQ(t, buf, -1);
  /* Cancel then Test loop, and the communicator still works afterwards. */
  CHECK_MPI(t, MPI_Irecv(&buf, 1, MPI_INT, left, 998, comm, &r));
  CHECK_MPI(t, MPI_Cancel(&r));
  flag = 0;
  while (!flag) CHECK_MPI(t, MPI_Test(&r, &flag, &st));
  MPI_Test_cancelled(&st, &flag);
  CHECK(t, flag == 1, "cancelled (Test) receive not reported cancelled");
  /* A completed receive is not cancelled. */
  int x = t->rank;
  MPI_Sendrecv(&x, 1, MPI_INT, right, 997, &buf, 1, MPI_INT, left, 997, comm, &st);
  MPI_Test_cancelled(&st, &flag);
  CHECK(t, flag == 0, "a completed receive reported cancelled");
  CHECK_EQ(t, buf, left);
}

static void section_persistent(struct tctx* t, MPI_Comm comm, int left, int right) {
  t->section = "persistent";
  enum { kN = 20000, kIters = 6 };
  int* sbig = malloc(kN * sizeof(int));
  int* rbig = malloc(kN * sizeof(int));
  int ssmall[2], rsmall[2];
  MPI_Request req[4];
  CHECK_MPI(t, MPI_Recv_init(rbig, kN, MPI_INT, left, 30, comm, &req[0]));
  CHECK_MPI(t, MPI_Recv_init(rsmall, 2, MPI_INT, MPI_ANY_SOURCE, 31, comm, &req[1]));
  CHECK_MPI(t, MPI_Send_init(sbig, kN, MPI_INT, right, 30, comm, &req[2]));
  CHECK_MPI(t, MPI_Send_init(ssmall, 2, MPI_INT, right, 31, comm, &req[3]));
  CHECK(t, req[0] != MPI_REQUEST_NULL, "Recv_init gave MPI_REQUEST_NULL");
  {
    /* An inactive persistent request completes at once with an empty status. */
    MPI_Status st;
    int flag = 0;
    CHECK_MPI(t, MPI_Wait(&req[0], &st));
    CHECK(t, req[0] != MPI_REQUEST_NULL, "Wait freed an inactive persistent request");
    check_empty_status(t, &st, "Wait on an inactive persistent request");
    CHECK_MPI(t, MPI_Test(&req[1], &flag, &st));
    CHECK(t, flag == 1, "Test on an inactive persistent request: flag %d", flag);
  }
  for (int it = 0; it < kIters; it++) {
    /* The send buffers change between starts: each start sends their current contents. */
    for (int i = 0; i < kN; i++) sbig[i] = val(t->rank, it, i), rbig[i] = -1;
    ssmall[0] = t->rank, ssmall[1] = it;
    MPI_Status sts[4];
    if (it % 2 == 0) {
      CHECK_MPI(t, MPI_Startall(4, req));
    } else {
      for (int k = 0; k < 4; k++) CHECK_MPI(t, MPI_Start(&req[k]));
    }
    if (it % 3 == 2) {
      int flag = 0;
      while (!flag) CHECK_MPI(t, MPI_Testall(4, req, &flag, sts));
    } else {
      CHECK_MPI(t, MPI_Waitall(4, req, sts));
    }
    for (int k = 0; k < 4; k++) CHECK(t, req[k] != MPI_REQUEST_NULL, "iteration %d: persistent request %d freed", it, k);
    int bad = 0;
    for (int i = 0; i < kN; i++) bad += rbig[i] != val(left, it, i);
    CHECK(t, bad == 0, "iteration %d: %d ints differ", it, bad);
    CHECK(t, rsmall[0] == left && rsmall[1] == it, "iteration %d: small message %d %d", it, rsmall[0], rsmall[1]);
    CHECK_EQ(t, sts[1].MPI_SOURCE, left);
    CHECK_EQ(t, sts[1].MPI_TAG, 31);
    int c = -1;
    MPI_Get_count(&sts[0], MPI_INT, &c);
    CHECK_EQ(t, c, kN);
  }
  for (int k = 0; k < 4; k++) {
    CHECK_MPI(t, MPI_Request_free(&req[k]));
    CHECK(t, req[k] == MPI_REQUEST_NULL, "Request_free of persistent request %d", k);
  }
  /* A persistent receive started and matched by a plain send. */
  MPI_Request pr;
  int got = -1, x = 5 + t->rank;
  MPI_Recv_init(&got, 1, MPI_INT, left, 32, comm, &pr);
  MPI_Start(&pr);
  MPI_Send(&x, 1, MPI_INT, right, 32, comm);
  MPI_Wait(&pr, MPI_STATUS_IGNORE);
  CHECK_EQ(t, got, 5 + left);
  MPI_Request_free(&pr);
  free(sbig);
  free(rbig);
}

static int wanted(int argc, char** argv, const char* name) {
  int any = 0;
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '+') continue;
    any = 1;
    if (strcmp(argv[i], name) == 0) return 1;
  }
  return !any;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "p2p_nonblocking");
  int right = (t.rank + 1) % t.size, left = (t.rank + t.size - 1) % t.size;
  static const char* const names[] = {"wait", "test", "null", "free", "cancel", "persistent"};
  void (*const fns[])(struct tctx*, MPI_Comm, int, int) = {section_wait, section_test, section_null,
                                                           section_free, section_cancel, section_persistent};
  for (int s = 0; s < 6; s++) {
    if (!wanted(argc, argv, names[s])) continue;
    MPI_Comm comm; /* one communicator per section: no section sees another's messages */
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    int before = t.fails;
    fns[s](&t, comm, left, right);
    if (t.fails != before)
      fprintf(stderr, "p2p_nonblocking [rank %d] section %s: %d failed checks\n", t.rank, names[s], t.fails - before);
    MPI_Comm_free(&comm);
  }
  return tctx_finish(&t);
}
