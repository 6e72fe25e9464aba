/* What a program can get wrong with threads, each answered with an error class and a
 * message, never a hang:
 *   funneled    - a thread other than the main one calls MPI under MPI_THREAD_FUNNELED
 *   serialized  - a thread calls MPI while the main thread is in an MPI call, under
 *                 MPI_THREAD_SERIALIZED (and a thread alone in MPI works there)
 *   norank      - a thread that belongs to no rank (one glibc starts for a timer) calls MPI
 * The errors come back (MPI_ERRORS_RETURN on MPI_COMM_WORLD). */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank, size;
static atomic_int result = -1;

#include "abort_check.h"

static int error_class(int rc) {
  int c = rc;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &c);
  return c;
}

static void* call_mpi(void* arg) {
  (void)arg;
  int r = -1;
  result = error_class(MPI_Comm_rank(MPI_COMM_WORLD, &r));
  return NULL;
}

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;

/* Calls MPI holding `held` (the main thread waits for it meanwhile). */
static void* call_mpi_holding(void* arg) {
  (void)arg;
  pthread_mutex_lock(&held);
  int r = -1;
  const int rc = error_class(MPI_Comm_rank(MPI_COMM_WORLD, &r));
  usleep(2000);
  result = rc;
  pthread_mutex_unlock(&held);
  return NULL;
}

static void on_timer(union sigval v) {
  (void)v;
  int r = -1;
  result = MPI_Comm_rank(MPI_COMM_WORLD, &r);  /* no rank: no error handler either */
}

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "funneled";
  const int want = strcmp(what, "funneled") == 0 ? MPI_THREAD_FUNNELED : MPI_THREAD_SERIALIZED;
  int provided = -1;
  MPI_Init_thread(&argc, &argv, want, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  CHECK(provided == want, "provided %d, asked %d", provided, want);
  pthread_t t;
  if (strcmp(what, "funneled") == 0) {
    pthread_create(&t, NULL, call_mpi, NULL);
    pthread_join(t, NULL);
    CHECK(result == MPI_ERR_OTHER, "funneled: the thread's call gave class %d", result);
  } else if (strcmp(what, "serialized") == 0) {
    /* Alone in MPI: fine. */
    pthread_create(&t, NULL, call_mpi, NULL);
    pthread_join(t, NULL);
    CHECK(result == MPI_SUCCESS, "serialized: a lone thread's call gave class %d", result);
    /* The main thread waits for a mutex the thread holds while it calls MPI: one thread in
     * MPI at a time, fine. */
    result = -1;
    pthread_mutex_lock(&held);
    pthread_create(&t, NULL, call_mpi_holding, NULL);
    pthread_mutex_unlock(&held);
    while (result == -1) {
      pthread_mutex_lock(&held);
      pthread_mutex_unlock(&held);
    }
    pthread_join(t, NULL);
    CHECK(result == MPI_SUCCESS, "serialized: a call while the main thread waits for a lock gave class %d", result);
    /* While the main thread polls in MPI_Test: two threads in MPI. */
    result = -1;
    int v = 0;
    MPI_Request req;
    MPI_Irecv(&v, 1, MPI_INT, rank, 5, MPI_COMM_WORLD, &req);
    pthread_create(&t, NULL, call_mpi, NULL);
    int done = 0;
    while (result == -1) MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    pthread_join(t, NULL);
    CHECK(result == MPI_ERR_OTHER, "serialized: the concurrent call gave class %d", result);
    int one = 1;
    MPI_Send(&one, 1, MPI_INT, rank, 5, MPI_COMM_WORLD);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(v == 1, "serialized: received %d", v);
  } else {
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD;
    ev.sigev_notify_function = on_timer;
    timer_t timer;
    CHECK(timer_create(CLOCK_MONOTONIC, &ev, &timer) == 0, "timer_create");
    struct itimerspec when;
    memset(&when, 0, sizeof when);
    when.it_value.tv_nsec = 1000000;
    timer_settime(timer, 0, &when, NULL);
    for (int i = 0; i < 5000 && result == -1; ++i) usleep(1000);
    timer_delete(timer);
    CHECK(result == MPI_ERR_OTHER, "norank: the timer thread's call gave %d", result);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("thread_errors %s: ok (%d ranks)\n", what, size);
  MPI_Finalize();
  return 0;
}
