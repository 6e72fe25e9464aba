/* A thread that blocks in MPI does not block its PE: each rank starts a thread that waits in
 * MPI_Recv (and one in MPI_Probe) for messages its own main thread sends only after it has
 * computed and exchanged with its neighbours (which needs the PE: other ranks of the PE, and
 * the rank itself, keep running). Main and threads also wait in MPI_Probe and MPI_Waitany at
 * the same time. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, size;

#include "abort_check.h"

static void* receiver(void* arg) {
  (void)arg;
  int v = -1;
  MPI_Status st;
  MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &st);
  CHECK(v == st.MPI_SOURCE * 7 + 1, "receiver got %d from %d", v, st.MPI_SOURCE);
  return (void*)(long)v;
}

static void* prober(void* arg) {
  (void)arg;
  MPI_Status st;
  MPI_Probe(MPI_ANY_SOURCE, 98, MPI_COMM_WORLD, &st);
  int v = -1;
  MPI_Recv(&v, 1, MPI_INT, st.MPI_SOURCE, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CHECK(v == 5000 + st.MPI_SOURCE, "prober got %d", v);
  /* Waitany beside the main thread's. */
  int a = -1, b = -1, idx = -1;
  MPI_Request r[2];
  MPI_Irecv(&a, 1, MPI_INT, MPI_ANY_SOURCE, 96, MPI_COMM_WORLD, &r[0]);
  MPI_Irecv(&b, 1, MPI_INT, MPI_ANY_SOURCE, 95, MPI_COMM_WORLD, &r[1]);
  MPI_Waitany(2, r, &idx, MPI_STATUS_IGNORE);
  MPI_Waitany(2, r, &idx, MPI_STATUS_IGNORE);
  CHECK(a == 96 && b == 95, "prober's waitany %d %d", a, b);
  return NULL;
}

static double compute(int n) {
  double x = 0;
  for (int i = 1; i <= n; ++i) x += 1.0 / i;
  return x;
}

static void one_round(void) {
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  pthread_t rt, pt;
  pthread_create(&rt, NULL, receiver, NULL);
  /* The receiver waits while the main thread computes and exchanges with its neighbours. */
  double acc = 0;
  for (int i = 0; i < 20; ++i) {
    acc += compute(20000);
    int out = rank + i, in = -1;
    MPI_Sendrecv(&out, 1, MPI_INT, next, 1, &in, 1, MPI_INT, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(in == prev + i, "main's exchange %d", in);
  }
  CHECK(acc > 0, "compute");
  pthread_create(&pt, NULL, prober, NULL);
  /* The main thread waits in MPI_Probe too, for another tag, while the thread probes. */
  int v = 3000 + rank;
  MPI_Send(&v, 1, MPI_INT, next, 97, MPI_COMM_WORLD);
  MPI_Status st;
  MPI_Probe(prev, 97, MPI_COMM_WORLD, &st);
  MPI_Recv(&v, 1, MPI_INT, prev, 97, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CHECK(v == 3000 + prev, "main's probe %d", v);
  v = 5000 + rank;
  MPI_Send(&v, 1, MPI_INT, next, 98, MPI_COMM_WORLD);
  int a = 96, b = 95;
  MPI_Send(&a, 1, MPI_INT, next, 96, MPI_COMM_WORLD);
  MPI_Send(&b, 1, MPI_INT, next, 95, MPI_COMM_WORLD);
  pthread_join(pt, NULL);
  v = rank * 7 + 1;
  MPI_Send(&v, 1, MPI_INT, next, 99, MPI_COMM_WORLD);
  void* got = NULL;
  pthread_join(rt, &got);
  CHECK((long)got == prev * 7 + 1, "receiver returned %ld", (long)got);
}

int main(int argc, char** argv) {
  int provided = -1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
  for (int i = 0; i < 3; ++i) one_round();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("thread_block: ok (%d ranks)\n", size);
  MPI_Finalize();
  return 0;
}
