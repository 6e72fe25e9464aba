/* MPI_Comm_idup does not block: every even rank calls it, then exchanges messages with its
 * odd neighbour, which receives before its own idup, then waits. A blocking idup deadlocks.
 * Then a blocking MPI_Comm_dup, and an MPI_Comm_split, while another idup is pending: the
 * communicators have distinct contexts (same-tag messages on each arrive on their own). */
#include <mpi.h>
#include <stdio.h>

/* Same-tag messages around a ring on each of three communicators, received in the
 * opposite order: each must arrive on its own communicator. */
static int distinct(MPI_Comm a, MPI_Comm b, MPI_Comm c, int rank, int size) {
  int to = (rank + 1) % size, from = (rank + size - 1) % size;
  int s[3] = {100 + rank, 200 + rank, 300 + rank}, g[3] = {-1, -1, -1};
  MPI_Request q[6];
  MPI_Irecv(&g[2], 1, MPI_INT, from, 9, c, &q[0]);
  MPI_Irecv(&g[1], 1, MPI_INT, from, 9, b, &q[1]);
  MPI_Irecv(&g[0], 1, MPI_INT, from, 9, a, &q[2]);
  MPI_Isend(&s[0], 1, MPI_INT, to, 9, a, &q[3]);
  MPI_Isend(&s[1], 1, MPI_INT, to, 9, b, &q[4]);
  MPI_Isend(&s[2], 1, MPI_INT, to, 9, c, &q[5]);
  MPI_Waitall(6, q, MPI_STATUSES_IGNORE);
  return g[0] == 100 + from && g[1] == 200 + from && g[2] == 300 + from;
}

int main(int argc, char** argv) {
  int rank, size, bad = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int peer = rank ^ 1, x = rank, y = -1;
  MPI_Comm a = MPI_COMM_NULL, b = MPI_COMM_NULL, c = MPI_COMM_NULL;
  MPI_Request r;
  if (peer >= size) {
    MPI_Comm_idup(MPI_COMM_WORLD, &a, &r);
  } else if (rank % 2 == 0) {
    MPI_Comm_idup(MPI_COMM_WORLD, &a, &r);
    MPI_Send(&x, 1, MPI_INT, peer, 1, MPI_COMM_WORLD);
    MPI_Recv(&y, 1, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(&y, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Comm_idup(MPI_COMM_WORLD, &a, &r);
    MPI_Send(&x, 1, MPI_INT, peer, 2, MPI_COMM_WORLD);
  }
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  if (peer < size && y != peer) bad |= 1;
  int result;
  MPI_Comm_compare(a, MPI_COMM_WORLD, &result);
  if (result != MPI_CONGRUENT) bad |= 2;
  int sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, a);
  if (sum != size * (size - 1) / 2) bad |= 4;

  /* idup b pending while c = dup: contexts must differ from each other and from a's. */
  MPI_Comm_idup(a, &b, &r);
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  if (!distinct(a, b, c, rank, size)) bad |= 8;
  MPI_Comm d, e;
  MPI_Comm_idup(c, &d, &r);
  MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &e);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  if (!distinct(d, e, b, rank, size)) bad |= 16;
  MPI_Comm_free(&a);
  MPI_Comm_free(&b);
  MPI_Comm_free(&c);
  MPI_Comm_free(&d);
  MPI_Comm_free(&e);
  int any_bad;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
  if (bad) fprintf(stderr, "comm_idup: rank %d failed (mask %d)\n", rank, bad);
  if (rank == 0 && !any_bad) printf("comm_idup: ok (%d ranks)\n", size);
  MPI_Finalize();
  return any_bad;
}
