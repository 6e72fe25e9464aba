/* Matching order with wildcards (MPI's non-overtaking rule), and the any/some completion
 * calls on arrays that change between calls:
 *   posted      receives of every pattern (exact, ANY_TAG, ANY_SOURCE, both) posted before
 *               the messages come: each message goes to the first-posted matching receive;
 *               a cancelled wildcard in the middle takes nothing
 *   unexpected  messages queued first, received with every pattern, Probe and Mprobe: each
 *               receive takes the first-sent matching message (probes leave MPI_ERROR alone)
 *   many        2000 receives with a wildcard every 50 posted, messages in reverse tag order
 *   window      Waitany over a window into pre-posted requests, refilled with requests that
 *               may have completed already; Testsome over an array whose slots are reposted
 * Any number of ranks >= 1; each rank receives from its left neighbour on a ring. */
#include "check.h"

static void test_posted(struct tctx* t, int left, int right, MPI_Comm comm) {
  t->section = "posted";
  enum { kRecvs = 7 };
  int v[kRecvs];
  MPI_Request r[kRecvs];
  for (int i = 0; i < kRecvs; i++) v[i] = -1;
  MPI_Irecv(&v[0], 1, MPI_INT, left, 5, comm, &r[0]);
  MPI_Irecv(&v[1], 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &r[1]);
  MPI_Irecv(&v[2], 1, MPI_INT, left, MPI_ANY_TAG, comm, &r[2]);
  MPI_Irecv(&v[3], 1, MPI_INT, MPI_ANY_SOURCE, 5, comm, &r[3]);
  MPI_Irecv(&v[4], 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &r[4]);  /* cancelled */
  MPI_Irecv(&v[5], 1, MPI_INT, left, 5, comm, &r[5]);
  MPI_Irecv(&v[6], 1, MPI_INT, MPI_ANY_SOURCE, 5, comm, &r[6]);
  MPI_Cancel(&r[4]);
  MPI_Status st;
  MPI_Wait(&r[4], &st);
  int cancelled = 0;
  MPI_Test_cancelled(&st, &cancelled);
  CHECK(t, cancelled, "the wildcard receive was not cancelled");
  MPI_Barrier(comm); /* every receive is posted before any message is sent */
  for (int k = 0; k < 6; k++) MPI_Send(&k, 1, MPI_INT, right, 5, comm);
  MPI_Status sts[kRecvs];
  CHECK_MPI(t, MPI_Waitall(kRecvs, r, sts));
  const int want[kRecvs] = {0, 1, 2, 3, -1, 4, 5};
  for (int i = 0; i < kRecvs; i++) {
    CHECK(t, v[i] == want[i], "receive %d (posted %d-th) got message %d, expected %d", i, i, v[i], want[i]);
    if (i != 4) {
      CHECK_EQ(t, sts[i].MPI_SOURCE, left);
      CHECK_EQ(t, sts[i].MPI_TAG, 5);
    }
  }
}

static void test_unexpected(struct tctx* t, int left, int right, MPI_Comm comm) {
  t->section = "unexpected";
  const int tags[5] = {7, 8, 7, 9, 7};
  for (int k = 0; k < 5; k++) MPI_Send(&k, 1, MPI_INT, right, tags[k], comm);
  MPI_Barrier(comm);
  MPI_Status st;
  st.MPI_ERROR = MPI_ERR_DIMS; /* single-completion calls leave MPI_ERROR alone (MPI 3.1 3.2.5) */
  CHECK_MPI(t, MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st));
  CHECK_EQ(t, st.MPI_TAG, 7);
  CHECK_EQ(t, st.MPI_ERROR, MPI_ERR_DIMS);
  MPI_Message m;
  CHECK_MPI(t, MPI_Mprobe(MPI_ANY_SOURCE, 8, comm, &m, &st));
  CHECK_EQ(t, st.MPI_TAG, 8);
  CHECK_EQ(t, st.MPI_ERROR, MPI_ERR_DIMS);
  int v = -1;
  MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st);
  CHECK(t, v == 0 && st.MPI_TAG == 7, "(any, any) got message %d tag %d, expected 0 tag 7", v, st.MPI_TAG);
  MPI_Recv(&v, 1, MPI_INT, left, 9, comm, &st);
  CHECK(t, v == 3, "(left, 9) got message %d, expected 3", v);
  MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 7, comm, &st);
  CHECK(t, v == 2, "(any, 7) got message %d, expected 2", v);
  int flag = 0;
  CHECK_MPI(t, MPI_Iprobe(left, MPI_ANY_TAG, comm, &flag, &st));
  CHECK(t, flag && st.MPI_TAG == 7, "Iprobe(left, any): flag %d tag %d, expected message 4 (tag 7)", flag, st.MPI_TAG);
  MPI_Mrecv(&v, 1, MPI_INT, &m, &st);
  CHECK(t, v == 1 && st.MPI_TAG == 8, "Mrecv got message %d tag %d, expected 1 tag 8", v, st.MPI_TAG);
  MPI_Recv(&v, 1, MPI_INT, left, MPI_ANY_TAG, comm, &st);
  CHECK(t, v == 4, "(left, any) got message %d, expected 4", v);
  CHECK_MPI(t, MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &st));
  CHECK(t, !flag, "a message is left over");
}

/* Receive i has tag i, or ANY_TAG when i % 50 == 0. Messages come in reverse tag order: the
 * first-posted wildcards take the first 40 (tags 1999..1960); the exact receives of those
 * tags take a second round of them (value tag + 100000); the tags 0, 50, ... found no receive
 * and wait as unexpected messages until received at the end. */
static void test_many(struct tctx* t, int left, int right, MPI_Comm comm) {
  t->section = "many";
  enum { kN = 2000, kEvery = 50, kSecond = 100000 };
  int* v = malloc(kN * sizeof(int));
  MPI_Request* r = malloc(kN * sizeof(MPI_Request));
  for (int i = 0; i < kN; i++) {
    v[i] = -1;
    MPI_Irecv(&v[i], 1, MPI_INT, left, i % kEvery ? i : MPI_ANY_TAG, comm, &r[i]);
  }
  MPI_Barrier(comm);
  const int wild = kN / kEvery, first_exact_again = kN - wild;  /* 40 wildcards; tags 1960.. again */
  for (int tag = kN - 1; tag >= 0; tag--) MPI_Send(&tag, 1, MPI_INT, right, tag, comm);
  for (int tag = first_exact_again; tag < kN; tag++) {
    int x = tag + kSecond;
    MPI_Send(&x, 1, MPI_INT, right, tag, comm);
  }
  CHECK_MPI(t, MPI_Waitall(kN, r, MPI_STATUSES_IGNORE));
  int bad = 0;
  for (int i = 0; i < kN; i++) {
    int want = i % kEvery ? (i >= first_exact_again ? i + kSecond : i) : kN - 1 - i / kEvery;
    if (v[i] != want && bad++ < 5) CHECK(t, 0, "receive %d got %d, expected %d", i, v[i], want);
  }
  CHECK_EQ(t, bad, 0);
  for (int tag = 0; tag < first_exact_again; tag += kEvery) {
    int x = -1;
    MPI_Recv(&x, 1, MPI_INT, left, tag, comm, MPI_STATUS_IGNORE);
    CHECK(t, x == tag, "unexpected message of tag %d: %d", tag, x);
  }
  free(v);
  free(r);
}

static void test_window(struct tctx* t, int left, int right, MPI_Comm comm) {
  t->section = "window";
  enum { kAll = 32, kWin = 4 };
  int v[kAll], got[kAll];
  MPI_Request all[kAll], win[kWin];
  for (int i = 0; i < kAll; i++) {
    v[i] = -1;
    got[i] = 0;
    MPI_Irecv(&v[i], 1, MPI_INT, left, i, comm, &all[i]);
  }
  int owner[kWin]; /* which of all[] each window slot holds */
  for (int i = 0; i < kWin; i++) win[i] = all[i], owner[i] = i;
  MPI_Barrier(comm);
  for (int tag = kAll - 1; tag >= 0; tag--) MPI_Send(&tag, 1, MPI_INT, right, tag, comm);
  int next = kWin, done = 0;
  for (;;) {
    int i;
    MPI_Status st;
    CHECK_MPI(t, MPI_Waitany(kWin, win, &i, &st));
    if (i == MPI_UNDEFINED) break;
    CHECK(t, i >= 0 && i < kWin, "index %d", i);
    if (i < 0 || i >= kWin) break;
    CHECK(t, win[i] == MPI_REQUEST_NULL, "slot %d not freed", i);
    const int k = owner[i];
    CHECK(t, v[k] == k && st.MPI_TAG == k, "request %d: value %d, tag %d", k, v[k], st.MPI_TAG);
    got[k]++;
    done++;
    if (next < kAll) win[i] = all[next], owner[i] = next++;  /* an existing request, maybe complete */
  }
  CHECK_EQ(t, done, kAll);
  for (int k = 0; k < kAll; k++) CHECK(t, got[k] == 1, "request %d completed %d times", k, got[k]);

  /* Testsome over an array whose completed slots get new receives, until every message came. */
  enum { kSlots = 8, kMsgs = 40 };
  int slot_v[kSlots], received = 0, posted = 0, sum = 0;
  MPI_Request sr[kSlots];
  for (int i = 0; i < kSlots; i++) MPI_Irecv(&slot_v[i], 1, MPI_INT, left, 77, comm, &sr[i]), posted++;
  for (int k = 0; k < kMsgs; k++) MPI_Send(&k, 1, MPI_INT, right, 77, comm);
  while (received < kMsgs) {
    int outcount, idx[kSlots];
    CHECK_MPI(t, MPI_Testsome(kSlots, sr, &outcount, idx, MPI_STATUSES_IGNORE));
    if (outcount == MPI_UNDEFINED) break;
    for (int j = 0; j < outcount; j++) {
      sum += slot_v[idx[j]];
      received++;
      if (posted < kMsgs) MPI_Irecv(&slot_v[idx[j]], 1, MPI_INT, left, 77, comm, &sr[idx[j]]), posted++;
    }
  }
  CHECK_EQ(t, received, kMsgs);
  CHECK_EQ(t, sum, kMsgs * (kMsgs - 1) / 2);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "p2p_order");
  int right = (t.rank + 1) % t.size, left = (t.rank + t.size - 1) % t.size;
  MPI_Comm c[4];
  for (int i = 0; i < 4; i++) MPI_Comm_dup(MPI_COMM_WORLD, &c[i]);
  test_posted(&t, left, right, c[0]);
  test_unexpected(&t, left, right, c[1]);
  test_many(&t, left, right, c[2]);
  test_window(&t, left, right, c[3]);
  for (int i = 0; i < 4; i++) MPI_Comm_free(&c[i]);
  return tctx_finish(&t);
}
