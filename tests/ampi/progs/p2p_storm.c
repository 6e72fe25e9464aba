/* Point-to-point storms: every rank floods every rank (itself included) with many messages
 * before anyone receives, then receives them all with a seeded mix of specific and wildcard
 * sources and tags, blocking and nonblocking (Waitsome, Testany, Waitany), with Probe; checks
 * the non-overtaking order per (source, tag, communicator), statuses and exact contents.
 * Sizes cross the eager limit: 8 bytes, 40 KiB and 300 KiB (zero-copy at >= 256 KiB under
 * ucharm by default). Then rounds of exchanges with seeded random partners and sizes.
 *   p2p_storm [MSGS]   MSGS: messages each rank sends in the flood (default 2000), spread
 *                      over the ranks; at least 8 to each.
 * Any number of ranks >= 1. */
#include "check.h"

#include <stdint.h>

enum { kTags = 9, kMid = 40 * 1024, kBig = 300 * 1024 };

/* Seeded generator (xorshift64*): the same sequence under every MPI. */
struct rng {
  uint64_t s;
};
static uint32_t rng_next(struct rng* g) {
  g->s ^= g->s >> 12;
  g->s ^= g->s << 25;
  g->s ^= g->s >> 27;
  return (uint32_t)((g->s * 2685821657736338717ULL) >> 32);
}
static int rng_below(struct rng* g, int n) { return (int)(rng_next(g) % (uint32_t)n); }

/* Message i from src to dst in the flood: its tag, size in bytes, and whether it is an Issend. */
static int msg_tag(int src, int i) { return (i * 5 + src) % kTags; }
static int msg_size(int src, int dst, int i, int per) {
  if (i == per / 2 && (src + dst) % 3 == 0) return kBig;
  if (i % 61 == 7) return kMid;
  return 8;
}
static int msg_sync(int i) { return i % 97 == 13; }

/* Contents: ints {src, i} then a pattern (big messages), so a message proves where it came from. */
static void fill(unsigned char* b, int src, int dst, int i, int n) {
  int hdr[2] = {src * 100000 + dst, i};
  memcpy(b, hdr, sizeof hdr);
  for (int k = 8; k < n; k++) b[k] = pattern_byte(src + dst, i, k);
}

struct flood {
  int per;                 /* messages from each source */
  int size;
  unsigned char** done;    /* done[src][i]: received or claimed by a posted receive */
  int* first;              /* first[src]: no index below it is open */
  int* left_tag;           /* left_tag[src * kTags + tag]: open messages */
  int* left_src;           /* left_src[src]: open messages */
  int left;
};

/* The earliest open message from src with tag (MPI_ANY_TAG: any tag), or -1. */
static int earliest(const struct flood* f, int src, int tag) {
  for (int i = f->first[src]; i < f->per; i++)
    if (!f->done[src][i] && (tag == MPI_ANY_TAG || msg_tag(src, i) == tag)) return i;
  return -1;
}
static void claim(struct flood* f, int src, int i) {
  f->done[src][i] = 1;
  f->left_tag[src * kTags + msg_tag(src, i)]--;
  f->left_src[src]--;
  f->left--;
  while (f->first[src] < f->per && f->done[src][f->first[src]]) f->first[src]++;
}

/* Checks a received message against message i from src. */
static void check_msg(struct tctx* t, const unsigned char* buf, const MPI_Status* st, int src, int i,
                      const char* how) {
  CHECK(t, st->MPI_SOURCE == src, "%s: source %d, expected %d", how, st->MPI_SOURCE, src);
  CHECK(t, st->MPI_TAG == msg_tag(src, i), "%s: tag %d, expected %d (message %d from %d)", how, st->MPI_TAG,
        msg_tag(src, i), i, src);
  int hdr[2];
  memcpy(hdr, buf, sizeof hdr);
  CHECK(t, hdr[0] == src * 100000 + t->rank && hdr[1] == i,
        "%s: got message %d from %d, expected message %d from %d (overtaken?)", how, hdr[1], hdr[0] / 100000, i,
        src);
}

static void check_body(struct tctx* t, const unsigned char* buf, const MPI_Status* st, int src, int i, int per,
                       const char* how) {
  int n = -1;
  MPI_Get_count(st, MPI_BYTE, &n);
  int want = msg_size(src, t->rank, i, per);
  CHECK(t, n == want, "%s: message %d from %d has %d bytes, expected %d", how, i, src, n, want);
  if (n != want) return;
  int bad = 0;
  for (int k = 8; k < n; k++) bad += buf[k] != pattern_byte(src + t->rank, i, k);
  CHECK(t, bad == 0, "%s: message %d from %d: %d bytes differ", how, i, src, bad);
}

/* The flood on comm: sends, a barrier (every send is started before any receive), receives. */
static void test_flood(struct tctx* t, int total, MPI_Comm comm, MPI_Comm other, uint64_t seed) {
  t->section = "flood";
  const int size = t->size, me = t->rank;
  int per = total / size;
  if (per < 8) per = 8;
  struct flood f;
  f.per = per;
  f.size = size;
  f.done = malloc(sizeof(unsigned char*) * size);
  f.first = calloc(size, sizeof(int));
  f.left_tag = calloc((size_t)size * kTags, sizeof(int));
  f.left_src = calloc(size, sizeof(int));
  f.left = 0;
  for (int s = 0; s < size; s++) {
    f.done[s] = calloc(per, 1);
    for (int i = 0; i < per; i++) {
      f.left_tag[s * kTags + msg_tag(s, i)]++;
      f.left_src[s]++;
      f.left++;
    }
  }

  /* Sends, destinations interleaved: message i to every rank, then i + 1. Plus, on `other`,
   * the same tags (a wildcard receive on comm must never take them). */
  int nsend = per * size;
  MPI_Request* sreq = malloc(sizeof(MPI_Request) * (nsend + size));
  unsigned char** sbuf = malloc(sizeof(unsigned char*) * nsend);
  int other_val[1] = {me};
  for (int i = 0; i < per; i++)
    for (int d0 = 0; d0 < size; d0++) {
      int d = (me + d0) % size, k = i * size + d0;
      int n = msg_size(me, d, i, per);
      sbuf[k] = malloc(n);
      fill(sbuf[k], me, d, i, n);
      if (msg_sync(i))
        MPI_Issend(sbuf[k], n, MPI_BYTE, d, msg_tag(me, i), comm, &sreq[k]);
      else
        MPI_Isend(sbuf[k], n, MPI_BYTE, d, msg_tag(me, i), comm, &sreq[k]);
      if (i == per / 3) MPI_Isend(other_val, 1, MPI_INT, d, msg_tag(me, i), other, &sreq[nsend + d]);
    }
  MPI_Barrier(comm);

  struct rng g = {seed ^ (uint64_t)(me + 1) * 0x9E3779B97F4A7C15ULL};
  unsigned char* rbuf = malloc(kBig + 64);
  enum { kBatch = 6 };
  unsigned char* bbuf[kBatch];
  for (int b = 0; b < kBatch; b++) bbuf[b] = malloc(kBig + 64);
  int modes[8] = {0};
  while (f.left > 0) {
    int mode = rng_below(&g, 8);
    /* Pick an open (source, tag). */
    int s = rng_below(&g, size);
    while (f.left_src[s] == 0) s = (s + 1) % size;
    int tg = rng_below(&g, kTags);
    while (f.left_tag[s * kTags + tg] == 0) tg = (tg + 1) % kTags;
    MPI_Status st;
    modes[mode]++;
    if (mode == 0 || mode == 1) { /* specific source and tag */
      int i = earliest(&f, s, tg);
      claim(&f, s, i);
      CHECK_MPI(t, MPI_Recv(rbuf, kBig + 64, MPI_BYTE, s, tg, comm, &st));
      check_msg(t, rbuf, &st, s, i, "Recv(src, tag)");
      check_body(t, rbuf, &st, s, i, per, "Recv(src, tag)");
    } else if (mode == 2) { /* specific source, any tag */
      int i = earliest(&f, s, MPI_ANY_TAG);
      claim(&f, s, i);
      CHECK_MPI(t, MPI_Recv(rbuf, kBig + 64, MPI_BYTE, s, MPI_ANY_TAG, comm, &st));
      check_msg(t, rbuf, &st, s, i, "Recv(src, ANY_TAG)");
      check_body(t, rbuf, &st, s, i, per, "Recv(src, ANY_TAG)");
    } else if (mode == 3 || mode == 4) { /* any source: a given tag, or any tag */
      int tag = mode == 3 ? tg : MPI_ANY_TAG;
      CHECK_MPI(t, MPI_Recv(rbuf, kBig + 64, MPI_BYTE, MPI_ANY_SOURCE, tag, comm, &st));
      int src = st.MPI_SOURCE;
      CHECK(t, src >= 0 && src < size, "ANY_SOURCE: source %d", src);
      if (src < 0 || src >= size) break;
      int i = earliest(&f, src, tag);
      CHECK(t, i >= 0, "ANY_SOURCE: a message from %d with tag %d that was not open", src, st.MPI_TAG);
      if (i < 0) break;
      claim(&f, src, i);
      check_msg(t, rbuf, &st, src, i, mode == 3 ? "Recv(ANY_SOURCE, tag)" : "Recv(ANY_SOURCE, ANY_TAG)");
      check_body(t, rbuf, &st, src, i, per, "Recv(ANY_SOURCE)");
    } else if (mode == 5) { /* Probe with wildcards, then the receive the status names */
      MPI_Status ps;
      CHECK_MPI(t, MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &ps));
      int src = ps.MPI_SOURCE;
      CHECK(t, src >= 0 && src < size, "Probe: source %d", src);
      if (src < 0 || src >= size) break;
      int i = earliest(&f, src, MPI_ANY_TAG);
      int pn = -1;
      MPI_Get_count(&ps, MPI_BYTE, &pn);
      CHECK(t, i >= 0 && ps.MPI_TAG == msg_tag(src, i) && pn == msg_size(src, me, i, per),
            "Probe: tag %d size %d from %d, expected message %d", ps.MPI_TAG, pn, src, i);
      if (i < 0) break;
      claim(&f, src, i);
      CHECK_MPI(t, MPI_Recv(rbuf, kBig + 64, MPI_BYTE, src, ps.MPI_TAG, comm, &st));
      check_msg(t, rbuf, &st, src, i, "Recv after Probe");
      check_body(t, rbuf, &st, src, i, per, "Recv after Probe");
    } else { /* a batch of Irecvs with specific (source, tag), completed by Waitsome/Testany/Waitany */
      MPI_Request rq[kBatch];
      int bs[kBatch], bi[kBatch], nb = 0;
      for (int b = 0; b < kBatch && f.left > 0; b++) {
        int s2 = rng_below(&g, size);
        while (f.left_src[s2] == 0) s2 = (s2 + 1) % size;
        int t2 = rng_below(&g, kTags);
        while (f.left_tag[s2 * kTags + t2] == 0) t2 = (t2 + 1) % kTags;
        int i = earliest(&f, s2, t2);
        claim(&f, s2, i);
        bs[nb] = s2;
        bi[nb] = i;
        MPI_Irecv(bbuf[nb], kBig + 64, MPI_BYTE, s2, t2, comm, &rq[nb]);
        nb++;
      }
      int pending = nb;
      while (pending > 0) {
        int idx[kBatch], outc = 0;
        MPI_Status sts[kBatch];
        if (mode == 6) {
          CHECK_MPI(t, MPI_Waitsome(nb, rq, &outc, idx, sts));
        } else if (pending % 2 == 0) {
          int flag = 0, k = -1;
          /* Testany must let the others progress (under ucharm: other ranks of this PE). */
          while (!flag) CHECK_MPI(t, MPI_Testany(nb, rq, &k, &flag, &sts[0]));
          idx[0] = k;
          outc = k == MPI_UNDEFINED ? 0 : 1;
        } else {
          int k = -1;
          CHECK_MPI(t, MPI_Waitany(nb, rq, &k, &sts[0]));
          idx[0] = k;
          outc = 1;
        }
        CHECK(t, outc >= 1 && outc <= pending, "completion call: outcount %d with %d pending", outc, pending);
        if (outc < 1 || outc > pending) break;
        for (int o = 0; o < outc; o++) {
          int b = idx[o];
          CHECK(t, rq[b] == MPI_REQUEST_NULL, "a completed request was not set to MPI_REQUEST_NULL");
          check_msg(t, bbuf[b], &sts[o], bs[b], bi[b], "batch Irecv");
          check_body(t, bbuf[b], &sts[o], bs[b], bi[b], per, "batch Irecv");
        }
        pending -= outc;
      }
    }
    if (t->fails > 40) break;
  }
  MPI_Waitall(nsend, sreq, MPI_STATUSES_IGNORE);
  /* The messages on `other`: one from every rank, untouched by the wildcards above. */
  for (int s = 0; s < size; s++) {
    int v = -1;
    MPI_Status st;
    CHECK_MPI(t, MPI_Recv(&v, 1, MPI_INT, s, msg_tag(s, per / 3), other, &st));
    CHECK_EQ(t, v, s);
  }
  MPI_Waitall(size, sreq + nsend, MPI_STATUSES_IGNORE);
  for (int k = 0; k < nsend; k++) free(sbuf[k]);
  for (int b = 0; b < kBatch; b++) free(bbuf[b]);
  for (int s = 0; s < size; s++) free(f.done[s]);
  free(f.done);
  free(f.first);
  free(f.left_tag);
  free(f.left_src);
  free(sreq);
  free(sbuf);
  free(rbuf);
}

/* Rounds of exchanges: in each, a seeded random permutation says whom every rank sends to, and
 * a seeded size (up to kBig). Receives alternate between the known source and ANY_SOURCE;
 * sends between Isend, Send after the receive is posted, and Sendrecv. */
static void test_random_partners(struct tctx* t, int rounds, MPI_Comm comm, uint64_t seed) {
  t->section = "random_partners";
  const int size = t->size, me = t->rank;
  int* perm = malloc(sizeof(int) * size);
  unsigned char* sb = malloc(kBig);
  unsigned char* rb = malloc(kBig);
  struct rng g = {seed}; /* the same on every rank */
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < size; i++) perm[i] = i;
    for (int i = size - 1; i > 0; i--) {
      int j = rng_below(&g, i + 1), x = perm[i];
      perm[i] = perm[j];
      perm[j] = x;
    }
    int sizes[4] = {0, 8, kMid + 3, kBig};
    int n = sizes[rng_below(&g, 4)];
    int how = rng_below(&g, 3);
    int dest = perm[me], src = -1;
    for (int i = 0; i < size; i++)
      if (perm[i] == me) src = i;
    for (int k = 0; k < n; k++) sb[k] = pattern_byte(me, r, k);
    MPI_Status st;
    int tag = r; /* one per round: a wildcard receive must not take a later round's message */
    if (how == 2) {
      CHECK_MPI(t, MPI_Sendrecv(sb, n, MPI_BYTE, dest, tag, rb, kBig, MPI_BYTE, r % 2 ? src : MPI_ANY_SOURCE, tag,
                                comm, &st));
    } else {
      MPI_Request rr, sr;
      MPI_Irecv(rb, kBig, MPI_BYTE, r % 2 ? src : MPI_ANY_SOURCE, tag, comm, &rr);
      if (how == 0) {
        MPI_Isend(sb, n, MPI_BYTE, dest, tag, comm, &sr);
        MPI_Wait(&sr, MPI_STATUS_IGNORE);
      } else {
        MPI_Send(sb, n, MPI_BYTE, dest, tag, comm);
      }
      MPI_Wait(&rr, &st);
    }
    int got = -1;
    MPI_Get_count(&st, MPI_BYTE, &got);
    CHECK(t, st.MPI_SOURCE == src && got == n, "round %d: %d bytes from %d, expected %d from %d", r, got,
          st.MPI_SOURCE, n, src);
    if (got == n && st.MPI_SOURCE == src) {
      int bad = 0;
      for (int k = 0; k < n; k++) bad += rb[k] != pattern_byte(src, r, k);
      CHECK(t, bad == 0, "round %d: %d bytes differ", r, bad);
    }
  }
  free(perm);
  free(sb);
  free(rb);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "p2p_storm");
  int total = 2000;
  for (int i = 1; i < argc; i++)
    if (argv[i][0] >= '0' && argv[i][0] <= '9') total = atoi(argv[i]);
  MPI_Comm comm, other, comm2, other2;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_dup(MPI_COMM_WORLD, &other);
  test_flood(&t, total, comm, other, 12345);
  /* Again on a split communicator (reversed order): ranks renumbered. */
  MPI_Comm_split(MPI_COMM_WORLD, 0, t.size - t.rank, &comm2);
  MPI_Comm_dup(comm2, &other2);
  {
    struct tctx t2 = t;
    MPI_Comm_rank(comm2, &t2.rank);
    t2.fails = 0;
    test_flood(&t2, total / 2, comm2, other2, 777);
    t.fails += t2.fails;
  }
  test_random_partners(&t, 60, comm, 4242);
  MPI_Comm_free(&comm);
  MPI_Comm_free(&other);
  MPI_Comm_free(&comm2);
  MPI_Comm_free(&other2);
  return tctx_finish(&t);
}
