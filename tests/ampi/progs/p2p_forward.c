/* Messages that reach a PE their rank is not on (rank migration, issue 18), without moving a
 * rank: ucharm's AMPI test hooks (found with dlsym) point the sender's PE's route for the
 * receiver D elsewhere:
 *   forwarded  to the PE of a rank V (not D's): V's PE forwards to D's PE. V is busy (no MPI
 *              call, so its PE handles nothing) while the sender then sends more straight to
 *              D: those overtake the forwarded ones, and D must still match them in the
 *              sender's order (the pair numbers; D's PE keeps the early ones). V stays busy
 *              until D's PE has kept one (D says so through a file: V makes no MPI call),
 *              however slow the machine, so that the overtaking always happens. Large messages
 *              (+ampi-direct-min=4096: direct transfers) are pulled by V's PE and go on inline.
 *   held       to the sender's own PE (where D is not): the PE keeps them until the route
 *              changes back, then sends them on, before what is sent after.
 * D receives with specific and ANY_SOURCE receives and checks data and order; an Ssend
 * through V's PE is acknowledged. Needs 3 ranks on 3 different PEs (else it says so and
 * passes: "ok (skipped)"). */
#include "check.h"

#include <dlfcn.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

enum { kTag = 1, kGo = 2, kSync = 3, kUnused = 4 /* probed only, to take messages in */, kLarge = 8192 /* ints */, kForwarded = 20, kStraight = 20, kHeld = 6 };

static int word(int k, int i) { return k * 7919 + i; }
static int is_large(int k) { return k % 4 == 3; }
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct hooks {
  int (*get)(int);
  int (*set)(int, int);
  void (*stats)(long long*, long long*);
};

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "p2p_forward");
  struct hooks h = {(int (*)(int))dlsym(RTLD_DEFAULT, "AMPIX_Route_get"),
                    (int (*)(int, int))dlsym(RTLD_DEFAULT, "AMPIX_Route_set"),
                    (void (*)(long long*, long long*))dlsym(RTLD_DEFAULT, "AMPIX_Route_stats")};
  if (!h.get || !h.set || !h.stats) {
    fprintf(stderr, "p2p_forward: the AMPIX_Route_* test hooks are missing\n");
    return 1;
  }
  const int me = t.rank, n = t.size;
  /* S = 0, D = the last rank, V = a rank on a third PE */
  const int S = 0, D = n - 1;
  int V = -1;
  for (int r = 1; r < n - 1 && V < 0; r++)
    if (h.get(r) != h.get(S) && h.get(r) != h.get(D)) V = r;
  if (V < 0 || h.get(S) == h.get(D)) {
    if (me == 0) printf("p2p_forward: ok (skipped: no 3 ranks on 3 PEs)\n");
    MPI_Finalize();
    return 0;
  }
  const int pe_v = h.get(V), pe_d = h.get(D);
  int* out = malloc(sizeof(int) * kLarge * (kForwarded + kStraight + kHeld));
  int* in = malloc(sizeof(int) * kLarge);
  MPI_Request reqs[kForwarded + kStraight + kHeld + 1];
  int nreq = 0;
  MPI_Barrier(MPI_COMM_WORLD);

  /* D tells V that a message overtook (V makes no MPI call meanwhile): a file named after
   * S's pid. */
  char flag[256];
  int job = me == S ? (int)getpid() : 0;
  MPI_Bcast(&job, 1, MPI_INT, S, MPI_COMM_WORLD);
  const char* tmp = getenv("TMPDIR");
  snprintf(flag, sizeof flag, "%s/ucharm-p2p-forward-%d", tmp && *tmp ? tmp : "/tmp", job);
  t.section = "forwarded";
  if (me == S) {
    const int go = 1;
    CHECK_MPI(&t, h.set(D, pe_v));
    MPI_Send(&go, 1, MPI_INT, V, kGo, MPI_COMM_WORLD); /* V stops handling messages */
    int k = 0;
    for (; k < kForwarded + kStraight + kHeld; k++) {
      if (k == kForwarded) CHECK_MPI(&t, h.set(D, pe_d)); /* straight from here on */
      if (k == kForwarded + kStraight) CHECK_MPI(&t, h.set(D, h.get(S))); /* kept here */
      const int cnt = is_large(k) ? kLarge : 3;
      int* b = out + (size_t)k * kLarge;
      for (int i = 0; i < cnt; i++) b[i] = word(k, i);
      MPI_Isend(b, cnt, MPI_INT, D, kTag, MPI_COMM_WORLD, &reqs[nreq++]);
      if (k == 2) MPI_Issend(b, cnt, MPI_INT, D, kSync, MPI_COMM_WORLD, &reqs[nreq++]); /* through V's PE */
    }
    CHECK_MPI(&t, h.set(D, pe_d)); /* the kept ones go on now, in order */
    CHECK_MPI(&t, MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
  } else if (me == V) {
    int go = 0;
    MPI_Recv(&go, 1, MPI_INT, S, kGo, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    /* Busy: this PE forwards nothing meanwhile, until D's PE kept a message that overtook
     * (a minute at most, so never a hang: the check below then fails). */
    const double until = now() + 60;
    while (access(flag, F_OK) != 0 && now() < until) {
    }
  } else if (me == D) {
    /* Takes messages in until one came straight past the forwarded ones. */
    long long fwd0 = 0, early0 = 0;
    const double until = now() + 60;
    for (;;) {
      int any = 0;
      h.stats(&fwd0, &early0);
      if (early0 > 0 || now() > until) break;
      MPI_Iprobe(S, kUnused, MPI_COMM_WORLD, &any, MPI_STATUS_IGNORE);
    }
    FILE* f = fopen(flag, "w");
    CHECK(&t, f != NULL, "cannot create %s", flag);
    if (f) fclose(f);
    for (int k = 0; k < kForwarded + kStraight + kHeld; k++) {
      MPI_Status st;
      const int cnt = is_large(k) ? kLarge : 3;
      /* every other one by ANY_SOURCE: it too must take the sender's next message */
      MPI_Recv(in, kLarge, MPI_INT, k % 2 ? MPI_ANY_SOURCE : S, kTag, MPI_COMM_WORLD, &st);
      int got = -1;
      MPI_Get_count(&st, MPI_INT, &got);
      CHECK_EQ(&t, st.MPI_SOURCE, S);
      CHECK_EQ(&t, got, cnt);
      for (int i = 0; i < cnt && i < got; i++)
        if (in[i] != word(k, i)) {
          CHECK(&t, 0, "message %d, int %d: got %d (message %d?), expected %d", k, i, in[i], in[i] / 7919, word(k, i));
          break;
        }
      if (k == 2) {
        MPI_Recv(in, kLarge, MPI_INT, S, kSync, MPI_COMM_WORLD, &st);
        CHECK_EQ(&t, in[0], word(2, 0));
      }
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  long long fwd = 0, early = 0;
  h.stats(&fwd, &early);
  if (me == V) CHECK(&t, fwd >= kForwarded, "V's PE forwarded %lld messages, expected at least %d", fwd, kForwarded);
  if (me == D) CHECK(&t, early > 0, "D's PE kept no message early: nothing overtook (V was not busy?)");
  if (me == D) printf("p2p_forward: D's PE kept %lld messages early\n", early);
  if (me == D) unlink(flag);
  free(out);
  free(in);
  return tctx_finish(&t);
}
