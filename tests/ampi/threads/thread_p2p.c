/* MPI_THREAD_MULTIPLE: every rank starts threads that all call MPI at once. Thread t of a
 * rank streams messages to thread t of the next rank (its own tag on its own duplicate of
 * MPI_COMM_WORLD, plus a second stream on a shared communicator told apart by tag), then runs
 * collectives on its communicator, while the rank's main thread keeps exchanging with its
 * neighbours on MPI_COMM_WORLD. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { kThreads = 4, kMessages = 200, kWindow = 16 };

static int rank, size;
static MPI_Comm comms[kThreads], shared;

#include "abort_check.h"

static void* worker(void* arg) {
  const int t = (int)(long)arg;
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  int level = -1, is_main = 1;
  MPI_Query_thread(&level);
  MPI_Is_thread_main(&is_main);
  CHECK(level == MPI_THREAD_MULTIPLE && !is_main, "thread %d: level %d, main %d", t, level, is_main);
  /* A storm in windows: kWindow receives and sends in flight per round. */
  for (int base = 0; base < kMessages; base += kWindow) {
    int in[kWindow], in2[kWindow], out[kWindow], out2[kWindow];
    MPI_Request reqs[4 * kWindow];
    for (int i = 0; i < kWindow; ++i) {
      MPI_Irecv(&in[i], 1, MPI_INT, prev, 7, comms[t], &reqs[i]);
      MPI_Irecv(&in2[i], 1, MPI_INT, prev, 100 + t, shared, &reqs[kWindow + i]);
    }
    for (int i = 0; i < kWindow; ++i) {
      out[i] = rank * 100000 + t * 1000 + base + i;
      out2[i] = -out[i];
      MPI_Isend(&out[i], 1, MPI_INT, next, 7, comms[t], &reqs[2 * kWindow + i]);
      MPI_Isend(&out2[i], 1, MPI_INT, next, 100 + t, shared, &reqs[3 * kWindow + i]);
    }
    MPI_Waitall(4 * kWindow, reqs, MPI_STATUSES_IGNORE);
    for (int i = 0; i < kWindow; ++i) {
      const int want = prev * 100000 + t * 1000 + base + i;
      CHECK(in[i] == want && in2[i] == -want, "thread %d: message %d is %d/%d, expected %d", t, base + i, in[i],
            in2[i], want);
    }
  }
  /* Collectives on the thread's own communicator. */
  int sum = 0, mine = rank + t;
  MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, comms[t]);
  CHECK(sum == size * (size - 1) / 2 + size * t, "thread %d: allreduce %d", t, sum);
  int root_value = t == 0 ? 0 : -1;
  if (rank == 0) root_value = 4242 + t;
  MPI_Bcast(&root_value, 1, MPI_INT, 0, comms[t]);
  CHECK(root_value == 4242 + t, "thread %d: bcast %d", t, root_value);
  MPI_Barrier(comms[t]);
  /* Blocking send/receive by a thread (the PE runs the others meanwhile). */
  int token = rank, got = -1;
  MPI_Sendrecv(&token, 1, MPI_INT, next, 9, &got, 1, MPI_INT, prev, 9, comms[t], MPI_STATUS_IGNORE);
  CHECK(got == prev, "thread %d: sendrecv %d", t, got);
  return NULL;
}

int main(int argc, char** argv) {
  int provided = -1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
  int is_main = 0;
  MPI_Is_thread_main(&is_main);
  CHECK(is_main, "the main thread is not main");
  for (int t = 0; t < kThreads; ++t) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
  MPI_Comm_dup(MPI_COMM_WORLD, &shared);
  pthread_t th[kThreads];
  for (int t = 0; t < kThreads; ++t) CHECK(pthread_create(&th[t], NULL, worker, (void*)(long)t) == 0, "create");
  /* The main thread communicates meanwhile. */
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  for (int i = 0; i < 50; ++i) {
    int out = rank * 1000 + i, in = -1;
    MPI_Sendrecv(&out, 1, MPI_INT, next, 1, &in, 1, MPI_INT, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(in == prev * 1000 + i, "main: %d", in);
  }
  for (int t = 0; t < kThreads; ++t) pthread_join(th[t], NULL);
  for (int t = 0; t < kThreads; ++t) MPI_Comm_free(&comms[t]);
  MPI_Comm_free(&shared);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("thread_p2p: ok (%d ranks)\n", size);
  MPI_Finalize();
  return 0;
}
