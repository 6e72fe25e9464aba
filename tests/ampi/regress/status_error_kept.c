/* Single-completion calls (Recv, Wait, Test, Waitany, Testany, Mrecv, Sendrecv,
 * Request_get_status) leave status.MPI_ERROR alone (MPI 3.1 §3.2.5). */
#include <mpi.h>
#include <stdio.h>

enum { MARK = 12345 };

int main(int argc, char** argv) {
  int rank, size, bad = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int to = (rank + 1) % size, from = (rank + size - 1) % size, x = rank, y;
  MPI_Status st;
  MPI_Request r;
  int flag, idx;
  for (int step = 0; step < 8; step++) {
    st.MPI_ERROR = MARK;
    MPI_Request s;
    MPI_Isend(&x, 1, MPI_INT, to, step, MPI_COMM_WORLD, &s);
    switch (step) {
      case 0: MPI_Recv(&y, 1, MPI_INT, from, step, MPI_COMM_WORLD, &st); break;
      case 1:
        MPI_Irecv(&y, 1, MPI_INT, from, step, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, &st);
        break;
      case 2:
        MPI_Irecv(&y, 1, MPI_INT, from, step, MPI_COMM_WORLD, &r);
        do MPI_Test(&r, &flag, &st); while (!flag);
        break;
      case 3:
        MPI_Irecv(&y, 1, MPI_INT, from, step, MPI_COMM_WORLD, &r);
        MPI_Waitany(1, &r, &idx, &st);
        break;
      case 4:
        MPI_Irecv(&y, 1, MPI_INT, from, step, MPI_COMM_WORLD, &r);
        do MPI_Testany(1, &r, &idx, &flag, &st); while (!flag);
        break;
      case 5: {
        MPI_Message m;
        MPI_Status ps;
        MPI_Mprobe(from, step, MPI_COMM_WORLD, &m, &ps);
        MPI_Mrecv(&y, 1, MPI_INT, &m, &st);
        break;
      }
      case 6: {
        int z = x;
        MPI_Sendrecv(&z, 1, MPI_INT, to, 100, &y, 1, MPI_INT, from, 100, MPI_COMM_WORLD, &st);
        MPI_Recv(&y, 1, MPI_INT, from, step, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        break;
      }
      case 7:
        MPI_Irecv(&y, 1, MPI_INT, from, step, MPI_COMM_WORLD, &r);
        do MPI_Request_get_status(r, &flag, &st); while (!flag);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        break;
    }
    MPI_Wait(&s, MPI_STATUS_IGNORE);
    if (st.MPI_ERROR != MARK) {
      fprintf(stderr, "status_error_kept: rank %d: step %d set MPI_ERROR to %d\n", rank, step, st.MPI_ERROR);
      bad = 1;
    }
    if (y != from) bad = 1;
  }
  int any_bad;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
  if (rank == 0 && !any_bad) printf("status_error_kept: ok (%d ranks)\n", size);
  MPI_Finalize();
  return any_bad;
}
