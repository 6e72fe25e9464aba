/* The matching shortcuts of issue 20 (runtime/ampi/pt2pt/queues.cpp): the one receive posted
 * while no other is, and the one unexpected message held while no other is, stay out of the
 * hash table; a second one puts them in first. Each case checks MPI's rules across that edge:
 *   1. posted before arrival: a specific receive alone, then a wildcard posted behind it (the
 *      first posted wins), and a wildcard alone with a specific one behind it
 *   2. a lone posted receive cancelled: the message goes to the next receive
 *   3. arrival before post: one unexpected message, then a second (order kept; ANY_TAG and
 *      ANY_SOURCE receives take the first arrival; Iprobe sees it)
 *   4. order across sizes (8 B to 512 KiB: inline and direct transfers), receives posted
 *      before, after and in between the arrivals, with ANY_TAG receives mixed in
 *   5. with rank migration: the rank packs its state (AMPIX_Roundtrip_p2p_state, found with
 *      dlsym) holding a lone posted receive and a lone unexpected message, and (argument
 *      `move`; not in sanitizer builds, whose ranks cannot move) moves to another PE
 *      (AMPI_Migrate_to_pe) between rounds of 4.
 * Ranks work in pairs (2k, 2k+1); an odd last rank only takes part in the final count. */
#include "check.h"

#include <dlfcn.h>

enum { kA = 11, kB = 12, kStream = 13, kSync = 14, kMsgs = 24 };

/* Message k of the stream: its size in ints (8 B to 512 KiB) and its words. */
static int stream_ints(int k) { return k % 6 == 5 ? 131072 : k % 6 == 4 ? 4096 : (k % 4) + 2; }
static int word(int k, int i) { return k * 100003 + i; }

/* Both sides of the pair are at the same point: the partner's earlier messages have left. */
static void pair_sync(int partner) {
  int x = 0, y = 0;
  MPI_Sendrecv(&x, 1, MPI_INT, partner, kSync, &y, 1, MPI_INT, partner, kSync, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* Waits until a message (partner, tag) is here (unexpected). */
static void await_arrival(MPI_Comm c, int partner, int tag) {
  int flag = 0;
  while (!flag) MPI_Iprobe(partner, tag, c, &flag, MPI_STATUS_IGNORE);
}

static void posted_first(struct tctx* t, MPI_Comm c, int me, int partner, int sender) {
  t->section = "posted before arrival";
  int a = -1, b = -1, one = 1, two = 2;
  MPI_Request r[2];
  MPI_Status st[2];
  if (me == sender) {
    pair_sync(partner); /* the receives are posted */
    MPI_Send(&one, 1, MPI_INT, partner, kA, c);
    MPI_Send(&two, 1, MPI_INT, partner, kB, c);
    pair_sync(partner);
    MPI_Send(&one, 1, MPI_INT, partner, kA, c);
    MPI_Send(&two, 1, MPI_INT, partner, kA, c);
    return;
  }
  /* specific alone, then a wildcard behind it */
  MPI_Irecv(&a, 1, MPI_INT, partner, kA, c, &r[0]);
  MPI_Irecv(&b, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &r[1]);
  pair_sync(partner);
  MPI_Waitall(2, r, st);
  CHECK_EQ(t, a, 1);
  CHECK_EQ(t, b, 2);
  CHECK_EQ(t, st[1].MPI_TAG, kB);
  /* a wildcard alone, then a specific one behind it: the wildcard, posted first, wins */
  MPI_Irecv(&a, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &r[0]);
  MPI_Irecv(&b, 1, MPI_INT, partner, kA, c, &r[1]);
  pair_sync(partner);
  MPI_Waitall(2, r, st);
  CHECK_EQ(t, a, 1);
  CHECK_EQ(t, b, 2);
  CHECK_EQ(t, st[0].MPI_SOURCE, partner);
}

static void cancelled(struct tctx* t, MPI_Comm c, int me, int partner, int sender) {
  t->section = "cancelled lone receive";
  int v = 7, got = -1;
  if (me == sender) {
    pair_sync(partner);
    MPI_Send(&v, 1, MPI_INT, partner, kA, c);
    return;
  }
  MPI_Request r;
  MPI_Status st;
  int flag = 0;
  MPI_Irecv(&got, 1, MPI_INT, partner, kA, c, &r);
  MPI_Cancel(&r);
  MPI_Wait(&r, &st);
  MPI_Test_cancelled(&st, &flag);
  CHECK(t, flag, "a posted, unmatched receive was not cancelled");
  pair_sync(partner);
  MPI_Recv(&got, 1, MPI_INT, partner, kA, c, MPI_STATUS_IGNORE);
  CHECK_EQ(t, got, 7);
}

static void arrived_first(struct tctx* t, MPI_Comm c, int me, int partner, int sender) {
  t->section = "arrival before post";
  int one = 1, two = 2, three = 3, v = -1;
  MPI_Status st;
  if (me == sender) {
    MPI_Send(&one, 1, MPI_INT, partner, kA, c);
    pair_sync(partner); /* the first is held alone */
    MPI_Send(&two, 1, MPI_INT, partner, kB, c);
    MPI_Send(&three, 1, MPI_INT, partner, kA, c);
    pair_sync(partner);
    MPI_Send(&one, 1, MPI_INT, partner, kB, c);
    return;
  }
  await_arrival(c, partner, kA);
  pair_sync(partner);
  await_arrival(c, partner, kB);
  await_arrival(c, partner, kA);
  /* three held: kA 1, kB 2, kA 3. ANY_TAG takes the first arrival, kA the next of its tag */
  MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &st);
  CHECK_EQ(t, v, 1);
  CHECK_EQ(t, st.MPI_TAG, kA);
  MPI_Recv(&v, 1, MPI_INT, partner, kA, c, MPI_STATUS_IGNORE);
  CHECK_EQ(t, v, 3);
  MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, kB, c, MPI_STATUS_IGNORE);
  CHECK_EQ(t, v, 2);
  pair_sync(partner);
  /* one held alone; a receive of another tag does not take it, then its own does */
  await_arrival(c, partner, kB);
  int flag = 1;
  MPI_Iprobe(partner, kA, c, &flag, MPI_STATUS_IGNORE);
  CHECK(t, !flag, "Iprobe of tag %d found the message of tag %d", kA, kB);
  MPI_Recv(&v, 1, MPI_INT, partner, MPI_ANY_TAG, c, &st);
  CHECK_EQ(t, v, 1);
  CHECK_EQ(t, st.MPI_TAG, kB);
}

/* A stream of kMsgs messages of mixed sizes; the receiver posts some receives ahead, takes
 * some late (after a pause), some with ANY_TAG, and checks order and data. `roundtrip`:
 * the receiver packs its state in the middle, holding one posted receive or one message. */
static void stream(struct tctx* t, MPI_Comm c, int me, int partner, int sender, int* buf, int (*roundtrip)(void)) {
  t->section = "order across sizes";
  if (me == sender) {
    for (int k = 0; k < kMsgs; k++) {
      const int n = stream_ints(k);
      for (int i = 0; i < n; i++) buf[i] = word(k, i);
      if (k % 8 == 3) pair_sync(partner); /* the receive is posted */
      MPI_Send(buf, n, MPI_INT, partner, kStream, c);
      if (k % 8 == 7) pair_sync(partner);
    }
    return;
  }
  for (int k = 0; k < kMsgs; k++) {
    MPI_Status st;
    const int n = stream_ints(k);
    if (k % 8 == 3) { /* a lone posted receive (packed with the rank, when asked) */
      MPI_Request r;
      MPI_Irecv(buf, 131072, MPI_INT, partner, kStream, c, &r);
      if (roundtrip) CHECK_EQ(t, roundtrip(), MPI_SUCCESS);
      pair_sync(partner);
      MPI_Wait(&r, &st);
    } else if (k % 8 == 6) { /* a lone unexpected message (packed with the rank, when asked) */
      await_arrival(c, partner, kStream);
      if (roundtrip) CHECK_EQ(t, roundtrip(), MPI_SUCCESS);
      MPI_Recv(buf, 131072, MPI_INT, partner, MPI_ANY_TAG, c, &st);
    } else {
      MPI_Recv(buf, 131072, MPI_INT, k % 2 ? MPI_ANY_SOURCE : partner, kStream, c, &st);
    }
    int got = -1;
    MPI_Get_count(&st, MPI_INT, &got);
    CHECK(t, got == n, "message %d: %d ints, expected %d", k, got, n);
    for (int i = 0; i < n && i < got; i++)
      if (buf[i] != word(k, i)) {
        CHECK(t, 0, "message %d, int %d: got %d (message %d?): order or data lost", k, i, buf[i], buf[i] / 100003);
        break;
      }
    if (k % 8 == 7) pair_sync(partner);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "p2p_fastpath");
  const int me = t.rank, partner = me ^ 1;
  int* buf = malloc(131072 * sizeof(int));
  int (*roundtrip)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "AMPIX_Roundtrip_p2p_state");
  CHECK(&t, roundtrip != NULL, "AMPIX_Roundtrip_p2p_state not found");
  const int move = argc > 1 && strcmp(argv[1], "move") == 0;
  int moved = 0;
  MPI_Comm c; /* the tests' traffic: ANY_TAG receives never see pair_sync's messages */
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  if (partner < t.size) {
    for (int sender = me & ~1; sender <= (me | 1); sender++) { /* each side sends once */
      posted_first(&t, c, me, partner, sender);
      cancelled(&t, c, me, partner, sender);
      arrived_first(&t, c, me, partner, sender);
      stream(&t, c, me, partner, sender, buf, NULL);
      stream(&t, c, me, partner, sender, buf, roundtrip);
      /* the receiver moves to the next PE, then another stream */
      if (move && me != sender) {
        const int pe = AMPI_My_pe();
        AMPI_Migrate_to_pe((pe + 1) % AMPI_Num_pes());
        moved += AMPI_My_pe() != pe;
      }
      stream(&t, c, me, partner, sender, buf, NULL);
    }
  }
  MPI_Comm_free(&c);
  free(buf);
  if (move && AMPI_Num_pes() > 1 && partner < t.size) CHECK_EQ(&t, moved, 1);
  return tctx_finish(&t);
}
