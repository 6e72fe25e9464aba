/* MPI_Finalize first deletes MPI_COMM_SELF's attributes (MPI 3.1 §8.7.1): the delete
 * callbacks run, also for a keyval freed before MPI_Finalize, and MPI is still usable in
 * them (MPI_Finalized says 0). */
#include <mpi.h>
#include <stdio.h>

static int deleted = 0, finalized_in_callback = 1;

static int on_delete(MPI_Comm comm, int keyval, void* value, void* extra) {
  (void)keyval;
  (void)extra;
  if (comm != MPI_COMM_SELF) return MPI_ERR_OTHER;
  deleted |= *(int*)value;
  MPI_Finalized(&finalized_in_callback);
  return MPI_SUCCESS;
}

int main(int argc, char** argv) {
  int rank, size;
  static int one = 1, two = 2;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int k1, k2;
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_delete, &k1, NULL);
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_delete, &k2, NULL);
  MPI_Comm_set_attr(MPI_COMM_SELF, k1, &one);
  MPI_Comm_set_attr(MPI_COMM_SELF, k2, &two);
  MPI_Comm_free_keyval(&k2); /* its attribute stays until MPI_Finalize deletes it */
  MPI_Finalize();
  if (deleted != 3 || finalized_in_callback != 0) {
    fprintf(stderr, "finalize_self_attr: rank %d: callbacks ran for %d (want 3), finalized %d\n", rank, deleted,
            finalized_in_callback);
    return 1;
  }
  if (rank == 0) printf("finalize_self_attr: ok (%d ranks)\n", size);
  return 0;
}
