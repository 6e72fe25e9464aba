/* A derived datatype freed (MPI_Type_free) while operations still use it stays valid for
 * them (MPI 3.1 §4.1.9): a pending Irecv, persistent send and receive requests, and a
 * nonblocking collective all complete with the right data. Between the free and the
 * completion the receiver creates and frees 1,100 other types, so a handle reused too early
 * would unpack with another layout. Ranks pair up (0-1, 2-3, ...); an odd last rank only
 * joins the collectives. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static void churn_types(void) {
  for (int i = 0; i < 1100; i++) {
    MPI_Datatype t;
    MPI_Type_contiguous(2 + i % 3, MPI_INT, &t);
    MPI_Type_commit(&t);
    MPI_Type_free(&t);
  }
}

/* every other int of 8: a vector of 4 blocks of 1, stride 2 */
static MPI_Datatype every_other(void) {
  MPI_Datatype t;
  MPI_Type_vector(4, 1, 2, MPI_INT, &t);
  MPI_Type_commit(&t);
  return t;
}

static int check_every_other(const int* buf, int base) {
  for (int i = 0; i < 8; i++)
    if (buf[i] != (i % 2 == 0 ? base + i / 2 : 0)) return 1;
  return 0;
}

int main(int argc, char** argv) {
  int rank, size, bad = 0, any_bad;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int peer = rank ^ 1;
  int paired = peer < size;
  int data[4] = {10, 11, 12, 13};

  /* 1. Irecv with a derived type, the type freed at once. */
  int buf[8];
  memset(buf, 0, sizeof buf);
  MPI_Request r = MPI_REQUEST_NULL;
  if (paired && rank % 2 == 1) {
    MPI_Datatype t = every_other();
    MPI_Irecv(buf, 1, t, peer, 1, MPI_COMM_WORLD, &r);
    MPI_Type_free(&t);
    churn_types();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (paired && rank % 2 == 0) MPI_Send(data, 4, MPI_INT, peer, 1, MPI_COMM_WORLD);
  if (paired && rank % 2 == 1) {
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    if (check_every_other(buf, 10)) bad |= 1;
  }

  /* 2. Persistent requests whose types are freed before Start. */
  if (paired) {
    MPI_Datatype t = every_other();
    int src[8] = {20, -1, 21, -1, 22, -1, 23, -1};
    memset(buf, 0, sizeof buf);
    MPI_Request p;
    if (rank % 2 == 0) MPI_Send_init(src, 1, t, peer, 2, MPI_COMM_WORLD, &p);
    else MPI_Recv_init(buf, 1, t, peer, 2, MPI_COMM_WORLD, &p);
    MPI_Type_free(&t);
    churn_types();
    for (int round = 0; round < 2; round++) {
      memset(buf, 0, sizeof buf);
      MPI_Start(&p);
      MPI_Wait(&p, MPI_STATUS_IGNORE);
      if (rank % 2 == 1 && check_every_other(buf, 20)) bad |= 2;
    }
    MPI_Request_free(&p);
  }

  /* 3. A nonblocking collective (Ibcast from rank 0) whose type is freed before Wait. */
  {
    MPI_Datatype t = every_other();
    int b[8] = {0};
    if (rank == 0) b[0] = 30, b[2] = 31, b[4] = 32, b[6] = 33;
    MPI_Request q;
    MPI_Ibcast(b, 1, t, 0, MPI_COMM_WORLD, &q);
    MPI_Type_free(&t);
    churn_types();
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    if (check_every_other(b, 30)) bad |= 4;
  }

  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
  if (bad) fprintf(stderr, "type_free_pending: rank %d failed (mask %d)\n", rank, bad);
  if (rank == 0 && !any_bad) printf("type_free_pending: ok (%d ranks)\n", size);
  MPI_Finalize();
  return any_bad ? 1 : 0;
}
