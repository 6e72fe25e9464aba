/* Probe and Iprobe: wildcards, the count from a probed status then a receive of exactly that,
 * a probe does not consume, Iprobe is false when nothing is there, Iprobe polling. */
#include "check.h"

static int probe_len(int src) { return (src % 5 == 4) ? 20000 + src : 1 + src * 3; } /* ints */

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "p2p_probe");
  int right = (t.rank + 1) % t.size, left = (t.rank + t.size - 1) % t.size;
  /* Each section has its own communicator: wildcard probes would see other sections' messages. */
  MPI_Comm c_empty, c_probe, c_poll, c_keep;
  MPI_Comm_dup(MPI_COMM_WORLD, &c_empty);
  MPI_Comm_dup(MPI_COMM_WORLD, &c_probe);
  MPI_Comm_dup(MPI_COMM_WORLD, &c_poll);
  MPI_Comm_dup(MPI_COMM_WORLD, &c_keep);

  /* Nothing is ever sent on c_empty, nor with tag 999 on MPI_COMM_WORLD. */
  t.section = "iprobe_empty";
  for (int i = 0; i < 10; i++) {
    int flag = 1;
    MPI_Status st;
    CHECK_MPI(&t, MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c_empty, &flag, &st));
    CHECK(&t, flag == 0, "Iprobe(ANY_SOURCE, ANY_TAG) on an unused communicator found a message");
    flag = 1;
    CHECK_MPI(&t, MPI_Iprobe(left, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
    CHECK(&t, flag == 0, "Iprobe(left, 999) found a message");
  }

  /* Everyone sends rank 0 a message of its own length and tag; rank 0 probes with
   * wildcards, sizes a buffer from the status and receives exactly that. */
  t.section = "probe_count";
  int n = probe_len(t.rank);
  int* mine = malloc(n * sizeof(int));
  for (int i = 0; i < n; i++) mine[i] = t.rank * 1000003 + i;
  MPI_Request req;
  MPI_Isend(mine, n, MPI_INT, 0, 50 + t.rank, c_probe, &req);
  if (t.rank == 0) {
    int* seen = calloc(t.size, sizeof(int));
    for (int k = 0; k < t.size; k++) {
      MPI_Status st;
      CHECK_MPI(&t, MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, c_probe, &st));
      int src = st.MPI_SOURCE;
      CHECK(&t, src >= 0 && src < t.size, "probed source %d", src);
      if (src < 0 || src >= t.size) break;
      CHECK_EQ(&t, st.MPI_TAG, 50 + src);
      int count = -1;
      MPI_Get_count(&st, MPI_INT, &count);
      CHECK_EQ(&t, count, probe_len(src));
      if (count < 0) break;
      int* buf = malloc((count + 1) * sizeof(int));
      MPI_Status rs;
      CHECK_MPI(&t, MPI_Recv(buf, count, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, c_probe, &rs));
      int rcount = -1;
      MPI_Get_count(&rs, MPI_INT, &rcount);
      CHECK_EQ(&t, rcount, count);
      CHECK_EQ(&t, rs.MPI_SOURCE, src);
      int bad = 0;
      for (int i = 0; i < count; i++) bad += buf[i] != src * 1000003 + i;
      CHECK(&t, bad == 0, "message from %d: %d ints differ", src, bad);
      seen[src]++;
      free(buf);
    }
    for (int r = 0; r < t.size; r++) CHECK(&t, seen[r] == 1, "source %d seen %d times", r, seen[r]);
    free(seen);
  }
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  free(mine);

  /* A probe does not consume: two probes see the same (first) message; between two
   * messages of one source and tag, the first sent is the one probed. */
  t.section = "probe_keeps";
  {
    int a[3] = {t.rank, 1, 2};
    int b[7] = {t.rank, 0, 0, 0, 0, 0, 7};
    MPI_Request r2[2];
    MPI_Isend(a, 3, MPI_INT, right, 5, c_keep, &r2[0]);
    MPI_Isend(b, 7, MPI_INT, right, 5, c_keep, &r2[1]);
    MPI_Status s1, s2;
    CHECK_MPI(&t, MPI_Probe(left, MPI_ANY_TAG, c_keep, &s1));
    CHECK_MPI(&t, MPI_Probe(MPI_ANY_SOURCE, 5, c_keep, &s2));
    int c1 = -1, c2 = -1;
    MPI_Get_count(&s1, MPI_INT, &c1);
    MPI_Get_count(&s2, MPI_INT, &c2);
    CHECK_EQ(&t, c1, 3);
    CHECK_EQ(&t, c2, 3);
    CHECK_EQ(&t, s1.MPI_SOURCE, left);
    CHECK_EQ(&t, s2.MPI_TAG, 5);
    int buf[7] = {0};
    MPI_Recv(buf, 7, MPI_INT, left, 5, c_keep, &s1);
    MPI_Get_count(&s1, MPI_INT, &c1);
    CHECK_EQ(&t, c1, 3);
    CHECK_EQ(&t, buf[0], left);
    int flag = 0;
    /* The second message is (or soon will be) there: Iprobe until found. */
    while (!flag) CHECK_MPI(&t, MPI_Iprobe(left, 5, c_keep, &flag, &s2));
    MPI_Get_count(&s2, MPI_INT, &c2);
    CHECK_EQ(&t, c2, 7);
    MPI_Recv(buf, 7, MPI_INT, left, 5, c_keep, &s1);
    CHECK_EQ(&t, buf[6], 7);
    MPI_Waitall(2, r2, MPI_STATUSES_IGNORE);
    flag = 1;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c_keep, &flag, MPI_STATUS_IGNORE);
    CHECK(&t, flag == 0, "Iprobe found a message after both were received");
  }

  /* Iprobe polling: the left neighbour's message arrives while we poll (it sends only after
   * our token reached it, so the first Iprobes may well find nothing). */
  t.section = "iprobe_poll";
  {
    MPI_Request tok;
    MPI_Isend(NULL, 0, MPI_BYTE, left, 1, c_poll, &tok);
    int flag = 0;
    MPI_Status st;
    long polls = 0;
    MPI_Recv(NULL, 0, MPI_BYTE, right, 1, c_poll, MPI_STATUS_IGNORE);
    double v = t.rank + 0.25;
    MPI_Request sr;
    MPI_Isend(&v, 1, MPI_DOUBLE, right, 2, c_poll, &sr);
    while (!flag) {
      CHECK_MPI(&t, MPI_Iprobe(MPI_ANY_SOURCE, 2, c_poll, &flag, &st));
      polls++;
    }
    CHECK_EQ(&t, st.MPI_SOURCE, left);
    CHECK_EQ(&t, st.MPI_TAG, 2);
    int count = -1;
    MPI_Get_count(&st, MPI_DOUBLE, &count);
    CHECK_EQ(&t, count, 1);
    double got = -1;
    MPI_Recv(&got, 1, MPI_DOUBLE, st.MPI_SOURCE, st.MPI_TAG, c_poll, MPI_STATUS_IGNORE);
    CHECK(&t, got == left + 0.25, "got %g", got);
    CHECK(&t, polls >= 1, "polls %ld", polls);
    MPI_Wait(&sr, MPI_STATUS_IGNORE);
    MPI_Wait(&tok, MPI_STATUS_IGNORE);
  }

  /* Probe on MPI_PROC_NULL returns at once with the null status. */
  t.section = "probe_proc_null";
  {
    MPI_Status st;
    int flag = 0;
    CHECK_MPI(&t, MPI_Probe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st));
    CHECK_EQ(&t, st.MPI_SOURCE, MPI_PROC_NULL);
    CHECK_EQ(&t, st.MPI_TAG, MPI_ANY_TAG);
    CHECK_MPI(&t, MPI_Iprobe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &flag, &st));
    CHECK(&t, flag == 1, "Iprobe(MPI_PROC_NULL) flag %d", flag);
    CHECK_EQ(&t, st.MPI_SOURCE, MPI_PROC_NULL);
  }

  MPI_Comm_free(&c_empty);
  MPI_Comm_free(&c_probe);
  MPI_Comm_free(&c_poll);
  MPI_Comm_free(&c_keep);
  return tctx_finish(&t);
}
