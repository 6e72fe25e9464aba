/* Churn: communicators created and freed in a loop (Comm_dup, Comm_split, Comm_create) with
 * traffic on each, many nonblocking collectives outstanding at once (completed in a seeded
 * order, some with Test loops), and persistent requests restarted many times.
 *   churn_storm [ITERS]   default 60
 * Any number of ranks >= 1. */
#include "check.h"

enum { kOutstanding = 24 };

static void test_comm_churn(struct tctx* t, int iters) {
  t->section = "comm_churn";
  for (int it = 0; it < iters; it++) {
    MPI_Comm c;
    int kind = it % 3;
    if (kind == 0) {
      CHECK_MPI(t, MPI_Comm_dup(MPI_COMM_WORLD, &c));
    } else if (kind == 1) {
      CHECK_MPI(t, MPI_Comm_split(MPI_COMM_WORLD, (t->rank + it) % 3, -t->rank, &c));
    } else {
      /* A group of every rank but one (all ranks when alone): the left-out rank gets COMM_NULL. */
      MPI_Group wg, g;
      MPI_Comm_group(MPI_COMM_WORLD, &wg);
      int out = it % t->size;
      if (t->size > 1) MPI_Group_excl(wg, 1, &out, &g);
      else MPI_Group_incl(wg, 1, &out, &g);
      CHECK_MPI(t, MPI_Comm_create(MPI_COMM_WORLD, g, &c));
      MPI_Group_free(&g);
      MPI_Group_free(&wg);
      if (t->size > 1) CHECK(t, (c == MPI_COMM_NULL) == (t->rank == out), "Comm_create: iteration %d", it);
    }
    if (c == MPI_COMM_NULL) continue;
    int n, r;
    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &r);
    /* A message around the ring (nonblocking, then freed right after), and an Allreduce. */
    int right = (r + 1) % n, left = (r + n - 1) % n, in = -1, out = r * 1000 + it;
    MPI_Request q[2];
    MPI_Irecv(&in, 1, MPI_INT, left, it, c, &q[0]);
    MPI_Isend(&out, 1, MPI_INT, right, it, c, &q[1]);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    CHECK(t, in == left * 1000 + it, "iteration %d: ring gave %d", it, in);
    int sum = 0;
    CHECK_MPI(t, MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(t, sum == n * (n - 1) / 2, "iteration %d: Allreduce %d on %d ranks", it, sum, n);
    /* A message left in flight on c when it is freed is still received (freed later). */
    CHECK_MPI(t, MPI_Comm_free(&c));
    CHECK(t, c == MPI_COMM_NULL, "Comm_free did not set MPI_COMM_NULL");
  }
}

static void test_many_nonblocking(struct tctx* t, int rounds) {
  t->section = "many_nonblocking";
  int n = t->size, r = t->rank;
  for (int round = 0; round < rounds; round++) {
    MPI_Request q[kOutstanding];
    int in[kOutstanding], out[kOutstanding], bc[kOutstanding];
    for (int k = 0; k < kOutstanding; k++) {
      in[k] = r + k + round;
      out[k] = -1;
      switch (k % 3) {
        case 0: CHECK_MPI(t, MPI_Iallreduce(&in[k], &out[k], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q[k])); break;
        case 1:
          bc[k] = r == k % n ? k * 7 + round : -1;
          CHECK_MPI(t, MPI_Ibcast(&bc[k], 1, MPI_INT, k % n, MPI_COMM_WORLD, &q[k]));
          break;
        default: CHECK_MPI(t, MPI_Ibarrier(MPI_COMM_WORLD, &q[k])); break;
      }
    }
    /* Complete in an order that differs per rank and round: from a rotating start, with
     * MPI_Test loops for odd ranks. */
    for (int j = 0; j < kOutstanding; j++) {
      int k = (j * 7 + r + round) % kOutstanding;
      if (r % 2) {
        int flag = 0;
        while (!flag) CHECK_MPI(t, MPI_Test(&q[k], &flag, MPI_STATUS_IGNORE));
      } else {
        CHECK_MPI(t, MPI_Wait(&q[k], MPI_STATUS_IGNORE));
      }
    }
    for (int k = 0; k < kOutstanding; k++) {
      if (k % 3 == 0) {
        int want = n * (k + round) + n * (n - 1) / 2;
        CHECK(t, out[k] == want, "round %d: Iallreduce %d gave %d, expected %d", round, k, out[k], want);
      } else if (k % 3 == 1) {
        CHECK(t, bc[k] == k * 7 + round, "round %d: Ibcast %d gave %d", round, k, bc[k]);
      }
    }
  }
}

static void test_persistent(struct tctx* t, int iters) {
  t->section = "persistent";
  int n = t->size, r = t->rank;
  int right = (r + 1) % n, left = (r + n - 1) % n;
  enum { kBig = 70000 }; /* ints: 280 KB, zero-copy under ucharm's default */
  int* sb = malloc(sizeof(int) * kBig);
  int* rb = malloc(sizeof(int) * kBig);
  int s1 = 0, r1 = -1;
  MPI_Request q[4];
  MPI_Send_init(&s1, 1, MPI_INT, right, 1, MPI_COMM_WORLD, &q[0]);
  MPI_Recv_init(&r1, 1, MPI_INT, left, 1, MPI_COMM_WORLD, &q[1]);
  MPI_Send_init(sb, kBig, MPI_INT, left, 2, MPI_COMM_WORLD, &q[2]);
  MPI_Recv_init(rb, kBig, MPI_INT, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &q[3]);
  for (int it = 0; it < iters; it++) {
    s1 = r * 100 + it;
    int big = it % 10 == 0;
    for (int k = 0; k < (big ? kBig : 1); k++) sb[k] = r + it + k;
    MPI_Startall(big ? 4 : 2, q);
    MPI_Waitall(big ? 4 : 2, q, MPI_STATUSES_IGNORE);
    CHECK(t, r1 == left * 100 + it, "iteration %d: got %d", it, r1);
    if (big) {
      int bad = 0;
      for (int k = 0; k < kBig; k++) bad += rb[k] != right + it + k;
      CHECK(t, bad == 0, "iteration %d: %d ints differ", it, bad);
    }
  }
  for (int k = 0; k < 4; k++) MPI_Request_free(&q[k]);
  free(sb);
  free(rb);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "churn_storm");
  int iters = 60;
  for (int i = 1; i < argc; i++)
    if (argv[i][0] >= '0' && argv[i][0] <= '9') iters = atoi(argv[i]);
  test_comm_churn(&t, iters);
  test_many_nonblocking(&t, iters / 10 + 1);
  test_persistent(&t, iters);
  return tctx_finish(&t);
}
