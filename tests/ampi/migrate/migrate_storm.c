/* Ranks move in the middle of point-to-point traffic and nonblocking collectives: each round,
 * every rank posts wildcard and specific receives, sends to several ranks (small, 40 KiB and
 * 300 KiB messages, which go zero-copy), starts an Iallreduce and an Ibarrier, then calls
 * AMPI_Migrate (run with +balancer RotateLB: every rank moves), sends more, and completes
 * everything. Checks: every message arrives once, with its contents, in each sender's order
 * per tag; the collectives' results. Prints "migrate_storm: ok (N ranks)". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../progs/check.h"

enum { kRounds = 4, kPerPeer = 3 };
static const int kSizes[kPerPeer] = {8, 40 << 10, 300 << 10};

static void fill(unsigned char* b, int n, int src, int seq) {
  for (int i = 0; i < n; ++i) b[i] = pattern_byte(src, seq, i);
}

static void check_msg(struct tctx* t, const unsigned char* b, int n, int src, int seq) {
  int bad = 0;
  for (int i = 0; i < n; ++i) bad += b[i] != pattern_byte(src, seq, i);
  CHECK(t, bad == 0, "message %d from %d: %d bytes differ", seq, src, bad);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "migrate_storm");
  const int n = t.size;
  int* sent_seq = calloc((size_t)n, sizeof(int));
  /* The storm runs on a duplicate of MPI_COMM_WORLD (moved with the ranks): its wildcard
   * receives must not catch tctx_finish's messages on MPI_COMM_WORLD from ranks done early. */
  MPI_Comm storm;
  MPI_Comm_dup(MPI_COMM_WORLD, &storm);
  MPI_Info hints;
  MPI_Info_create(&hints);
  MPI_Info_set(hints, "ampi_load_balance", "sync");
  for (int round = 0; round < kRounds; ++round) {
    t.section = "round";
    /* Two messages of each size to each peer (right and left neighbours and self): one before
     * the move, one after. Received with ANY_SOURCE on the tag of its size. */
    const int peers[3] = {(t.rank + 1) % n, (t.rank + n - 1) % n, t.rank};
    const int npeers = n == 1 ? 1 : (n == 2 ? 2 : 3);
    const int nrecv = 2 * kPerPeer * npeers;
    unsigned char** rbuf = malloc(sizeof(unsigned char*) * (size_t)nrecv);
    MPI_Request* reqs = malloc(sizeof(MPI_Request) * (size_t)(nrecv + 2 * kPerPeer * npeers + 2));
    MPI_Status* st = malloc(sizeof(MPI_Status) * (size_t)(nrecv + 2 * kPerPeer * npeers + 2));
    int nr = 0;
    const int largest = kSizes[kPerPeer - 1] + 8;
    for (int k = 0; k < nrecv; ++k) {
      rbuf[k] = malloc((size_t)largest);
      /* First one ANY_SOURCE receive per (peer, tag), then as many on both wildcards: every
       * receive gets a message whatever the arrival order. */
      MPI_Irecv(rbuf[k], largest, MPI_BYTE, MPI_ANY_SOURCE, k < nrecv / 2 ? k % kPerPeer : MPI_ANY_TAG,
                storm, &reqs[nr++]);
    }
    unsigned char** sbuf = malloc(sizeof(unsigned char*) * (size_t)(2 * kPerPeer * npeers));
    int ns = 0;
    for (int half = 0; half < 2; ++half) {
      for (int p = 0; p < npeers; ++p)
        for (int s = 0; s < kPerPeer; ++s) {
          const int size = kSizes[s];
          const int seq = sent_seq[peers[p]]++;
          sbuf[ns] = malloc((size_t)size + 8);
          memcpy(sbuf[ns], &seq, sizeof seq);
          fill(sbuf[ns] + 8, size, t.rank, seq);
          MPI_Isend(sbuf[ns], size + 8, MPI_BYTE, peers[p], s, storm, &reqs[nr++]);
          ++ns;
        }
      if (half == 0) {
        /* Nonblocking collectives pending across the move. */
        long contrib = t.rank + round, sum = -1;
        MPI_Request coll[2];
        MPI_Iallreduce(&contrib, &sum, 1, MPI_LONG, MPI_SUM, storm, &coll[0]);
        MPI_Ibarrier(MPI_COMM_WORLD, &coll[1]);
        const int before = AMPI_My_pe();
        AMPI_Migrate(hints);
        if (AMPI_Num_pes() > 1) CHECK(&t, AMPI_My_pe() != before, "round %d: still on PE %d", round, before);
        MPI_Waitall(2, coll, MPI_STATUSES_IGNORE);
        CHECK_EQ(&t, sum, (long)n * (n - 1) / 2 + (long)n * round);
      }
    }
    MPI_Waitall(nr, reqs, st);
    /* Order per (source, tag): along the receives' posting order, the sequence numbers of
     * one source's messages on one tag increase (MPI's non-overtaking rule). */
    int* last = malloc(sizeof(int) * (size_t)(n * kPerPeer));
    for (int k = 0; k < n * kPerPeer; ++k) last[k] = -1;
    int got = 0;
    for (int k = 0; k < nrecv; ++k) {
      int count = 0, seq = -1;
      MPI_Get_count(&st[k], MPI_BYTE, &count);
      const int src = st[k].MPI_SOURCE, tag = st[k].MPI_TAG;
      memcpy(&seq, rbuf[k], sizeof seq);
      CHECK(&t, tag >= 0 && tag < kPerPeer && count == kSizes[tag] + 8, "message of %d bytes, tag %d", count, tag);
      if (tag >= 0 && tag < kPerPeer && count == kSizes[tag] + 8 && src >= 0 && src < n) {
        check_msg(&t, rbuf[k] + 8, kSizes[tag], src, seq);
        CHECK(&t, seq > last[src * kPerPeer + tag], "from %d on tag %d: message %d after %d", src, tag, seq,
              last[src * kPerPeer + tag]);
        last[src * kPerPeer + tag] = seq;
        ++got;
      }
      free(rbuf[k]);
    }
    CHECK_EQ(&t, got, nrecv);
    free(last);
    for (int k = 0; k < ns; ++k) free(sbuf[k]);
    free(sbuf);
    free(rbuf);
    free(reqs);
    free(st);
    /* The next round only when every rank is done with this one: a wildcard receive of this
     * round may otherwise take a neighbour's next-round message (MPI allows it), leaving this
     * round's own message, a direct transfer whose send completes only when it is received,
     * unmatched: the sender waits for it while the neighbour waits in AMPI_Migrate. */
    MPI_Barrier(storm);
  }
  MPI_Info_free(&hints);
  MPI_Comm_free(&storm);
  free(sent_seq);
  return tctx_finish(&t);
}
