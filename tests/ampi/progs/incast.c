/* Incast while the receiver computes: every other rank sends rank 0 many small messages
 * (MPI_Send; small sends are buffered) while rank 0 computes, then rank 0 receives them all
 * with MPI_ANY_SOURCE and checks the order per source. With more ranks than cores, ranks
 * that wait must leave the cores to the one that computes: rank 0 times the same work
 * twice, once while the others wait in a barrier and once during the incast, and prints
 * both; benchmarks/run_time_bounds.sh judges them (at most 2.5x, +0.3 s), the tests do not (a
 * loaded machine slows the work too).
 *   incast [MSGS] [notime]   messages from each rank (default 2000); notime: a short
 *                            computation (the tests), too short to be timed
 * Any number of ranks >= 1. */
#include "check.h"

static double work(long n) {
  volatile double x = 0;
  for (long k = 0; k < n; k++) x += (double)k * 0.5;
  return x;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "incast");
  int msgs = 2000, timed = 1;
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] >= '0' && argv[i][0] <= '9') msgs = atoi(argv[i]);
    if (strcmp(argv[i], "notime") == 0) timed = 0;
  }
  const long kWork = (timed ? 120L : 20L) * 1000 * 1000;
  t.section = "incast";
  MPI_Comm comm; /* its own: the wildcard receives must not take tctx_finish's messages */
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  double quiet = 0, busy = 0;
  /* The work while the others wait in a barrier. */
  if (t.rank == 0) {
    double t0 = MPI_Wtime();
    work(kWork);
    quiet = MPI_Wtime() - t0;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  /* The same work while the others send. */
  if (t.rank != 0) {
    for (int i = 0; i < msgs; i++) {
      int v[2] = {t.rank, i};
      MPI_Send(v, 2, MPI_INT, 0, i % 3, comm);
    }
  } else {
    double t0 = MPI_Wtime();
    work(kWork);
    busy = MPI_Wtime() - t0;
    int* next = calloc(t.size, sizeof(int));
    for (long k = 0; k < (long)msgs * (t.size - 1); k++) {
      int v[2] = {-1, -1};
      MPI_Status st;
      CHECK_MPI(&t, MPI_Recv(v, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st));
      int s = st.MPI_SOURCE;
      if (s <= 0 || s >= t.size) {
        CHECK(&t, 0, "source %d", s);
        break;
      }
      CHECK(&t, v[0] == s && v[1] == next[s] && st.MPI_TAG == next[s] % 3,
            "from %d: message %d (tag %d), expected %d", s, v[1], st.MPI_TAG, next[s]);
      next[s]++;
    }
    free(next);
    printf("incast: work %.3f s alone, %.3f s during the incast\n", quiet, busy);
  }
  MPI_Comm_free(&comm);
  return tctx_finish(&t);
}
