/* The point-to-point state of a rank packed and rebuilt in the middle of traffic (rank
 * migration, issue 18): every rank calls AMPIX_Roundtrip_p2p_state (ucharm's AMPI test hook,
 * found with dlsym: p2p_prepare_to_move, then its P2p packed, replaced by a new one and
 * unpacked) while it holds
 *   - posted receives with wildcards (ANY_SOURCE, ANY_TAG), one matched and not waited for,
 *     one still pending
 *   - unexpected messages from its left neighbour: eager ones and large ones (run with
 *     +ampi-direct-min=4096 they are direct transfers whose data the move pulls), an Issend
 *   - a message taken by MPI_Mprobe, not yet received
 *   - persistent requests: a receive started, a send not started
 *   - a generalized request not yet complete, a receive freed while pending
 *   - a completed Isend not waited for, a pending Ibarrier and Iallreduce
 * and its left neighbour sends more of each kind right after its own round trip. Then
 * everything completes: data, statuses and MPI's order (the tag-1 stream is numbered across
 * the round trip) are checked. Any number of ranks; each receives from its left on a ring. */
#include "check.h"

#include <dlfcn.h>

enum {
  kTagStream = 1, /* numbered stream, unexpected, sent before and after the round trip */
  kTagWild = 2,   /* for the wildcard receives */
  kTagMprobe = 3,
  kTagPersist = 4,
  kTagFreed = 5,  /* into a receive freed while pending */
  kTagLate = 6,   /* for the wildcard receive still pending at the round trip */
  kTagSync = 7,   /* an Issend of large data */
  kBefore = 12,   /* stream messages before the round trip (every third one large) */
  kAfter = 9,
  kLarge = 16384  /* ints: 64 KiB */
};

struct greq_state {
  int queried, freed, cancelled;
};
static int greq_query(void* extra, MPI_Status* st) {
  struct greq_state* g = (struct greq_state*)extra;
  g->queried++;
  MPI_Status_set_elements(st, MPI_BYTE, 42);
  MPI_Status_set_cancelled(st, 0);
  st->MPI_SOURCE = MPI_UNDEFINED;
  st->MPI_TAG = MPI_UNDEFINED;
  return MPI_SUCCESS;
}
static int greq_free(void* extra) {
  ((struct greq_state*)extra)->freed++;
  return MPI_SUCCESS;
}
static int greq_cancel(void* extra, int complete) {
  (void)complete;
  ((struct greq_state*)extra)->cancelled++;
  return MPI_SUCCESS;
}

/* Message k of the stream from `from`: large ones every third, their ints patterned. */
static int is_large(int k) { return k % 3 == 2; }
static int word(int from, int k, int i) { return from * 1000003 + k * 7919 + i; }
/* Isend: a large one may be a direct transfer, which leaves only when the receiver takes it
 * (a blocking send of it would wait for the receive, posted only after the round trip). */
static void send_stream(int* buf, int me, int k, int right, MPI_Request* r) {
  const int n = is_large(k) ? kLarge : 2;
  for (int i = 0; i < n; i++) buf[i] = word(me, k, i);
  MPI_Isend(buf, n, MPI_INT, right, kTagStream, MPI_COMM_WORLD, r);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "p2p_migrate_state");
  int (*roundtrip)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "AMPIX_Roundtrip_p2p_state");
  if (!roundtrip) {
    fprintf(stderr, "p2p_migrate_state: AMPIX_Roundtrip_p2p_state not found (%s)\n", dlerror());
    return 1;
  }
  const int me = t.rank, n = t.size;
  const int left = (me - 1 + n) % n, right = (me + 1) % n;
  enum { kStream = kBefore + kAfter };
  int* big = malloc(sizeof(int) * kLarge * kStream); /* message k's data at big + k * kLarge */
  MPI_Request stream_r[kStream];
  int* rbig = malloc(sizeof(int) * kLarge);
  int* sync_out = malloc(sizeof(int) * kLarge);
  int* sync_in = malloc(sizeof(int) * kLarge);

  /* ---- the state before the round trip ---- */
  t.section = "before";
  int wild[2] = {-1, -1}, late = -1, persist_in = -1, freed_in = -1;
  MPI_Request wild_r[2], late_r, freed_r, precv, psend, greq, ibar, iall, done_send, ssend;
  MPI_Irecv(&wild[0], 1, MPI_INT, MPI_ANY_SOURCE, kTagWild, MPI_COMM_WORLD, &wild_r[0]);
  MPI_Irecv(&wild[1], 1, MPI_INT, left, MPI_ANY_TAG, MPI_COMM_WORLD, &wild_r[1]);
  MPI_Irecv(&late, 1, MPI_INT, MPI_ANY_SOURCE, kTagLate, MPI_COMM_WORLD, &late_r);
  MPI_Irecv(&freed_in, 1, MPI_INT, left, kTagFreed, MPI_COMM_WORLD, &freed_r);
  MPI_Request_free(&freed_r);
  MPI_Recv_init(&persist_in, 1, MPI_INT, left, kTagPersist, MPI_COMM_WORLD, &precv);
  MPI_Start(&precv);
  int persist_out = 5000 + me;
  MPI_Send_init(&persist_out, 1, MPI_INT, right, kTagPersist, MPI_COMM_WORLD, &psend);
  struct greq_state gs = {0, 0, 0};
  MPI_Grequest_start(greq_query, greq_free, greq_cancel, &gs, &greq);
  MPI_Barrier(MPI_COMM_WORLD); /* every receive above is posted before anything is sent */

  int wild_out[2] = {100 + me, 200 + me};
  MPI_Send(&wild_out[0], 1, MPI_INT, right, kTagWild, MPI_COMM_WORLD);  /* -> wild[0] */
  MPI_Send(&wild_out[1], 1, MPI_INT, right, kTagWild, MPI_COMM_WORLD);  /* -> wild[1] */
  for (int k = 0; k < kBefore; k++) send_stream(big + k * kLarge, me, k, right, &stream_r[k]);
  for (int i = 0; i < kLarge; i++) sync_out[i] = word(me, -1, i);
  MPI_Issend(sync_out, kLarge, MPI_INT, right, kTagSync, MPI_COMM_WORLD, &ssend);
  int eager_out = 300 + me;
  MPI_Isend(&eager_out, 1, MPI_INT, right, kTagStream + 100, MPI_COMM_WORLD, &done_send);
  int mprobe_out = 400 + me;
  MPI_Send(&mprobe_out, 1, MPI_INT, right, kTagMprobe, MPI_COMM_WORLD);
  /* the message sent last by `left` is here: so are all its earlier ones (in order) */
  MPI_Message msg;
  MPI_Status st;
  MPI_Mprobe(left, kTagMprobe, MPI_COMM_WORLD, &msg, &st);
  CHECK_EQ(&t, st.MPI_SOURCE, left);
  int sum_in = me + 1, sum_out = -1;
  MPI_Ibarrier(MPI_COMM_WORLD, &ibar);
  MPI_Iallreduce(&sum_in, &sum_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &iall);

  /* ---- the round trip ---- */
  CHECK_MPI(&t, roundtrip());

  /* ---- traffic after it, then everything completes ---- */
  t.section = "after";
  for (int k = kBefore; k < kStream; k++) send_stream(big + k * kLarge, me, k, right, &stream_r[k]);
  int freed_out = 600 + me, late_out = 700 + me;
  MPI_Send(&freed_out, 1, MPI_INT, right, kTagFreed, MPI_COMM_WORLD);
  MPI_Start(&psend);
  MPI_Send(&late_out, 1, MPI_INT, right, kTagLate, MPI_COMM_WORLD);

  MPI_Status sts[2];
  CHECK_MPI(&t, MPI_Waitall(2, wild_r, sts));
  CHECK_EQ(&t, wild[0], 100 + left);
  CHECK_EQ(&t, wild[1], 200 + left);
  CHECK_EQ(&t, sts[0].MPI_SOURCE, left);
  CHECK_EQ(&t, sts[1].MPI_TAG, kTagWild);

  for (int k = 0; k < kStream; k++) { /* the stream, in order across the round trip */
    const int cnt = is_large(k) ? kLarge : 2;
    MPI_Recv(rbig, kLarge, MPI_INT, left, kTagStream, MPI_COMM_WORLD, &st);
    int got = 0;
    MPI_Get_count(&st, MPI_INT, &got);
    CHECK_EQ(&t, got, cnt);
    for (int i = 0; i < cnt && i < got; i++)
      if (rbig[i] != word(left, k, i)) {
        CHECK(&t, 0, "stream message %d, int %d: got %d, expected %d (order or data lost)", k, i, rbig[i],
              word(left, k, i));
        break;
      }
  }
  CHECK_MPI(&t, MPI_Waitall(kStream, stream_r, MPI_STATUSES_IGNORE));
  MPI_Recv(sync_in, kLarge, MPI_INT, left, kTagSync, MPI_COMM_WORLD, &st);
  for (int i = 0; i < kLarge; i++)
    if (sync_in[i] != word(left, -1, i)) {
      CHECK(&t, 0, "the Issend's int %d: got %d", i, sync_in[i]);
      break;
    }
  CHECK_MPI(&t, MPI_Wait(&ssend, MPI_STATUS_IGNORE));

  int mprobe_in = -1;
  CHECK_MPI(&t, MPI_Mrecv(&mprobe_in, 1, MPI_INT, &msg, &st));
  CHECK_EQ(&t, mprobe_in, 400 + left);
  int eager_in = -1;
  MPI_Recv(&eager_in, 1, MPI_INT, left, kTagStream + 100, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CHECK_EQ(&t, eager_in, 300 + left);
  int flag = 0;
  CHECK_MPI(&t, MPI_Test(&done_send, &flag, MPI_STATUS_IGNORE));
  CHECK(&t, flag, "the eager Isend did not stay complete");

  CHECK_MPI(&t, MPI_Wait(&precv, &st));
  CHECK_EQ(&t, persist_in, 5000 + left);
  CHECK_MPI(&t, MPI_Wait(&psend, MPI_STATUS_IGNORE));
  MPI_Request_free(&precv);
  MPI_Request_free(&psend);

  CHECK_MPI(&t, MPI_Wait(&late_r, &st));
  CHECK_EQ(&t, late, 700 + left);
  CHECK_EQ(&t, st.MPI_SOURCE, left);
  /* the freed receive got its message: it was sent before kTagLate's, which is here */
  CHECK_EQ(&t, freed_in, 600 + left);

  CHECK_EQ(&t, gs.queried + gs.freed, 0);
  MPI_Grequest_complete(greq);
  CHECK_MPI(&t, MPI_Wait(&greq, &st));
  int elems = 0;
  MPI_Get_elements(&st, MPI_BYTE, &elems);
  CHECK_EQ(&t, elems, 42);
  CHECK_EQ(&t, gs.queried, 1);
  CHECK_EQ(&t, gs.freed, 1);

  CHECK_MPI(&t, MPI_Wait(&ibar, MPI_STATUS_IGNORE));
  CHECK_MPI(&t, MPI_Wait(&iall, MPI_STATUS_IGNORE));
  CHECK_EQ(&t, sum_out, n * (n + 1) / 2);

  /* a second round trip with nothing pending, then traffic again */
  t.section = "again";
  CHECK_MPI(&t, roundtrip());
  int x = me, y = -1;
  MPI_Sendrecv(&x, 1, MPI_INT, right, 9, &y, 1, MPI_INT, left, 9, MPI_COMM_WORLD, &st);
  CHECK_EQ(&t, y, left);

  free(big);
  free(rbig);
  free(sync_out);
  free(sync_in);
  return tctx_finish(&t);
}
