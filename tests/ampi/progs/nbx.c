/* Sparse dynamic data exchange (the "NBX" algorithm): every rank Issends to seeded random
 * targets (none knows how many messages it will get), then loops: MPI_Iprobe(MPI_ANY_SOURCE)
 * and receive; once its own Issends have all completed (matched: synchronous mode) it starts
 * an MPI_Ibarrier, and it stops when the barrier completes. Correct only if an Issend
 * completes when its receive has matched and the Ibarrier progresses while polled. Checked:
 * every rank got exactly the messages meant for it (counts from an Allreduce, contents).
 * Several rounds on MPI_COMM_WORLD and a split.
 *   nbx [ROUNDS]   default 20
 * Any number of ranks >= 1. */
#include "check.h"

#include <stdint.h>

enum { kMaxTargets = 12, kBigEvery = 5, kBig = 300 * 1024 };

static uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

/* The size of the message from src in round `round` (its k-th). */
static int msg_len(int round, int src, int k) { return (round + src + k) % kBigEvery == 0 ? kBig : 16; }

static void nbx_round(struct tctx* t, MPI_Comm comm, int round) {
  int n, r;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &r);
  int ntarget = (int)(mix((uint32_t)(round * 7919 + r)) % (kMaxTargets + 1));
  MPI_Request sreq[kMaxTargets];
  unsigned char* sbuf[kMaxTargets];
  int* sent_to = calloc(n, sizeof(int));
  for (int k = 0; k < ntarget; k++) {
    int dest = (int)(mix((uint32_t)(round * 104729 + r * 31 + k)) % (uint32_t)n);
    int len = msg_len(round, r, k);
    unsigned char* b0 = malloc(len);
    int hdr[3] = {r, k, round};
    memcpy(b0, hdr, sizeof hdr);
    for (long b = 12; b < len; b++) b0[b] = pattern_byte(r, k + round, b);
    sbuf[k] = b0;
    CHECK_MPI(t, MPI_Issend(sbuf[k], len, MPI_BYTE, dest, round, comm, &sreq[k]));
    sent_to[dest]++;
  }
  unsigned char* rbuf = malloc(kBig);
  int got = 0, barrier_started = 0, done = 0;
  MPI_Request barrier = MPI_REQUEST_NULL;
  while (!done) {
    int flag = 0;
    MPI_Status st;
    CHECK_MPI(t, MPI_Iprobe(MPI_ANY_SOURCE, round, comm, &flag, &st));
    if (flag) {
      int len = -1;
      MPI_Get_count(&st, MPI_BYTE, &len);
      CHECK_MPI(t, MPI_Recv(rbuf, kBig, MPI_BYTE, st.MPI_SOURCE, round, comm, &st));
      int hdr[3];
      memcpy(hdr, rbuf, sizeof hdr);
      CHECK(t, hdr[0] == st.MPI_SOURCE && hdr[2] == round && len == msg_len(round, hdr[0], hdr[1]),
            "round %d: message {%d, %d, %d} of %d bytes from %d", round, hdr[0], hdr[1], hdr[2], len,
            st.MPI_SOURCE);
      if (len == msg_len(round, hdr[0], hdr[1])) {
        int bad = 0;
        for (int b = 12; b < len; b++) bad += rbuf[b] != pattern_byte(hdr[0], hdr[1] + round, b);
        CHECK(t, bad == 0, "round %d: %d bytes differ", round, bad);
      }
      got++;
    }
    if (!barrier_started) {
      int all = 0;
      CHECK_MPI(t, MPI_Testall(ntarget, sreq, &all, MPI_STATUSES_IGNORE));
      if (all) {
        CHECK_MPI(t, MPI_Ibarrier(comm, &barrier));
        barrier_started = 1;
      }
    } else {
      CHECK_MPI(t, MPI_Test(&barrier, &done, MPI_STATUS_IGNORE));
    }
  }
  /* Everyone got what was sent to it. */
  int* want = calloc(n, sizeof(int));
  CHECK_MPI(t, MPI_Allreduce(sent_to, want, n, MPI_INT, MPI_SUM, comm));
  CHECK(t, got == want[r], "round %d: received %d messages, %d were sent here", round, got, want[r]);
  for (int k = 0; k < ntarget; k++) free(sbuf[k]);
  free(sent_to);
  free(want);
  free(rbuf);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "nbx");
  int rounds = 20;
  for (int i = 1; i < argc; i++)
    if (argv[i][0] >= '0' && argv[i][0] <= '9') rounds = atoi(argv[i]);
  MPI_Comm comm, half;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_split(MPI_COMM_WORLD, t.rank % 2, t.rank, &half);
  for (int round = 0; round < rounds; round++) {
    t.section = "world";
    nbx_round(&t, comm, round);
    t.section = "split";
    nbx_round(&t, half, round);
  }
  MPI_Comm_free(&comm);
  MPI_Comm_free(&half);
  return tctx_finish(&t);
}
