/* MPI_Op_free while a nonblocking reduction still uses the op: the reduction completes with
 * the op (MPI 3.1 §5.9.5: the op is freed once pending operations are done). */
#include <mpi.h>
#include <stdio.h>

static void my_sum(void* in, void* inout, int* len, MPI_Datatype* t) {
  (void)t;
  for (int i = 0; i < *len; i++) ((int*)inout)[i] += ((int*)in)[i];
}

int main(int argc, char** argv) {
  int rank, size, bad = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int round = 0; round < 3; round++) {
    MPI_Op op;
    MPI_Op_create(my_sum, 1, &op);
    int in[2] = {rank, 1}, out[2] = {0, 0};
    MPI_Request r;
    MPI_Iallreduce(in, out, 2, MPI_INT, op, MPI_COMM_WORLD, &r);
    MPI_Op_free(&op);
    if (op != MPI_OP_NULL) bad = 1;
    int rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || out[0] != size * (size - 1) / 2 || out[1] != size) bad = 1;
  }
  int any_bad;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
  if (rank == 0 && !any_bad) printf("op_free_pending: ok (%d ranks)\n", size);
  MPI_Finalize();
  return any_bad;
}
