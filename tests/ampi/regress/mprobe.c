/* Matched probes (MPI_Mprobe / MPI_Improbe / MPI_Mrecv / MPI_Imrecv): each rank sends three
 * messages of different sizes and tags to the next rank; the receiver probes each with a
 * wildcard, sizes its buffer from the status, and receives exactly the probed message
 * even though a wildcard receive is posted between the probe and the receive. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int rank, size, bad = 0, any_bad;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  int data[3][40];
  MPI_Request sends[3];
  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < 40; i++) data[k][i] = rank * 1000 + k * 100 + i;
    MPI_Isend(data[k], 10 * (k + 1), MPI_INT, next, 7 + k, MPI_COMM_WORLD, &sends[k]);
  }
  /* 1. Mprobe the first (tag 7, from any source), then post a wildcard receive, then Mrecv:
   *    the wildcard receive must get the second message, not the probed one. */
  MPI_Message m;
  MPI_Status st;
  MPI_Mprobe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &m, &st);
  int n;
  MPI_Get_count(&st, MPI_INT, &n);
  if (st.MPI_SOURCE != prev || st.MPI_TAG != 7 || n != 10) bad |= 1;
  int other[40];
  MPI_Request r;
  MPI_Irecv(other, 40, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r);
  int* buf = malloc(sizeof(int) * (size_t)n);
  MPI_Mrecv(buf, n, MPI_INT, &m, &st);
  if (m != MPI_MESSAGE_NULL || st.MPI_TAG != 7) bad |= 2;
  for (int i = 0; i < n; i++)
    if (buf[i] != prev * 1000 + i) bad |= 4;
  MPI_Wait(&r, &st);
  if (st.MPI_TAG != 8 || other[0] != prev * 1000 + 100) bad |= 8;
  free(buf);
  /* 2. Improbe until the third arrives, then Imrecv. */
  int flag = 0;
  while (!flag) MPI_Improbe(prev, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &m, &st);
  MPI_Get_count(&st, MPI_INT, &n);
  if (st.MPI_TAG != 9 || n != 30) bad |= 16;
  int third[30];
  MPI_Imrecv(third, 30, MPI_INT, &m, &r);
  MPI_Wait(&r, &st);
  if (third[29] != prev * 1000 + 229) bad |= 32;
  /* 3. MPI_PROC_NULL: a "no process" message, received with an empty status. */
  MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &m, &st);
  if (m != MPI_MESSAGE_NO_PROC) bad |= 64;
  MPI_Mrecv(NULL, 0, MPI_INT, &m, &st);
  if (m != MPI_MESSAGE_NULL || st.MPI_SOURCE != MPI_PROC_NULL) bad |= 128;
  MPI_Waitall(3, sends, MPI_STATUSES_IGNORE);
  if (bad) printf("mprobe: rank %d failed checks 0x%x\n", rank, bad);
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
  if (rank == 0 && !any_bad) printf("mprobe: ok\n");
  MPI_Finalize();
  return any_bad != 0;
}
