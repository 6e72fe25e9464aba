/* Master/worker: rank 0 hands out tasks one at a time to whichever worker asks (polling
 * with MPI_Iprobe(MPI_ANY_SOURCE) and receiving what it found), workers poll their next task
 * with MPI_Test; results come back tagged with the task, some as large messages; then a stop
 * message to every worker. Checks that every task ran exactly once and every result.
 *   master_worker [TASKS]   default 3000
 * Any number of ranks >= 1 (alone, rank 0 does the tasks itself). */
#include "check.h"

enum { kTagAsk = 1, kTagTask = 2, kTagResult = 3, kTagStop = 4, kBigEvery = 97, kBigInts = 70000 };

static long long task_value(int task) { return (long long)task * task % 1000003; }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "master_worker");
  int tasks = 3000;
  for (int i = 1; i < argc; i++)
    if (argv[i][0] >= '0' && argv[i][0] <= '9') tasks = atoi(argv[i]);
  t.section = "master_worker";
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  int* big = malloc(sizeof(int) * kBigInts);
  if (t.size == 1) {
    long long sum = 0;
    for (int k = 0; k < tasks; k++) sum += task_value(k);
    CHECK(&t, sum >= 0, "sum");
  } else if (t.rank == 0) {
    char* done = calloc(tasks, 1);
    int next = 0, stopped = 0, results = 0;
    while (stopped < t.size - 1) {
      int flag = 0;
      MPI_Status st;
      while (!flag) CHECK_MPI(&t, MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &st));
      int src = st.MPI_SOURCE;
      if (st.MPI_TAG == kTagAsk) {
        int dummy;
        CHECK_MPI(&t, MPI_Recv(&dummy, 1, MPI_INT, src, kTagAsk, comm, MPI_STATUS_IGNORE));
        if (next < tasks) {
          CHECK_MPI(&t, MPI_Send(&next, 1, MPI_INT, src, kTagTask, comm));
          next++;
        } else {
          CHECK_MPI(&t, MPI_Send(&next, 1, MPI_INT, src, kTagStop, comm));
          stopped++;
        }
      } else if (st.MPI_TAG == kTagResult) {
        int count = 0;
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK_MPI(&t, MPI_Recv(big, kBigInts, MPI_INT, src, kTagResult, comm, MPI_STATUS_IGNORE));
        int task = big[0];
        long long v;
        memcpy(&v, &big[1], sizeof v);
        CHECK(&t, task >= 0 && task < tasks && !done[task], "result for task %d (from %d) unexpected", task, src);
        CHECK(&t, v == task_value(task), "task %d: result %lld", task, v);
        int want = task % kBigEvery == 0 ? kBigInts : 3;
        CHECK(&t, count == want, "task %d: %d ints, expected %d", task, count, want);
        if (count == kBigInts) {
          int bad = 0;
          for (int k = 3; k < kBigInts; k++) bad += big[k] != task + k;
          CHECK(&t, bad == 0, "task %d: %d ints differ", task, bad);
        }
        if (task >= 0 && task < tasks) done[task] = 1;
        results++;
      } else {
        CHECK(&t, 0, "unexpected tag %d from %d", st.MPI_TAG, src);
        break;
      }
    }
    CHECK(&t, results == tasks, "%d results for %d tasks", results, tasks);
    free(done);
  } else {
    int mine = 0;
    for (;;) {
      int ask = t.rank, task = -1;
      MPI_Request q;
      MPI_Status st;
      CHECK_MPI(&t, MPI_Send(&ask, 1, MPI_INT, 0, kTagAsk, comm));
      CHECK_MPI(&t, MPI_Irecv(&task, 1, MPI_INT, 0, MPI_ANY_TAG, comm, &q));
      int flag = 0;
      while (!flag) CHECK_MPI(&t, MPI_Test(&q, &flag, &st));
      if (st.MPI_TAG == kTagStop) break;
      CHECK(&t, st.MPI_TAG == kTagTask && task >= 0 && task < tasks, "task %d tag %d", task, st.MPI_TAG);
      long long v = task_value(task);
      int n = task % kBigEvery == 0 ? kBigInts : 3;
      big[0] = task;
      memcpy(&big[1], &v, sizeof v);
      for (int k = 3; k < n; k++) big[k] = task + k;
      CHECK_MPI(&t, MPI_Send(big, n, MPI_INT, 0, kTagResult, comm));
      mine++;
    }
  }
  free(big);
  MPI_Comm_free(&comm);
  return tctx_finish(&t);
}
