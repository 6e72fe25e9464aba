/* MPI_Finalize first deletes MPI_COMM_SELF's attributes (MPI 3.1 §8.7.1): the delete
 * callbacks run in the reverse order the attributes were set (not by keyval), also for a
 * keyval freed before MPI_Finalize, and MPI is still usable in them (MPI_Finalized says 0). */
#include <mpi.h>
#include <stdio.h>

static int order[8], ncalls = 0, finalized_in_callback = 1;

static int on_delete(MPI_Comm comm, int keyval, void* value, void* extra) {
  (void)keyval;
  (void)extra;
  if (comm != MPI_COMM_SELF) return MPI_ERR_OTHER;
  if (ncalls < 8) order[ncalls] = *(int*)value;
  ++ncalls;
  MPI_Finalized(&finalized_in_callback);
  return MPI_SUCCESS;
}

int main(int argc, char** argv) {
  int rank, size;
  static int one = 1, two = 2, three = 3, four = 4;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int k1, k2, k3, k4;
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_delete, &k1, NULL);
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_delete, &k2, NULL);
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_delete, &k3, NULL);
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_delete, &k4, NULL);
  /* Set in the order k3, k1, k4, k2: deletion must be k2, k4, k1, k3 (values 2, 4, 1, 3). */
  MPI_Comm_set_attr(MPI_COMM_SELF, k3, &three);
  MPI_Comm_set_attr(MPI_COMM_SELF, k1, &one);
  MPI_Comm_set_attr(MPI_COMM_SELF, k4, &four);
  MPI_Comm_set_attr(MPI_COMM_SELF, k2, &two);
  MPI_Comm_free_keyval(&k2); /* its attribute stays until MPI_Finalize deletes it */
  MPI_Comm_free_keyval(&k3);
  MPI_Finalize();
  const int want[4] = {2, 4, 1, 3};
  int bad = ncalls != 4 || finalized_in_callback != 0;
  for (int i = 0; i < 4 && i < ncalls; ++i) bad |= order[i] != want[i];
  if (bad) {
    fprintf(stderr, "finalize_self_attr: rank %d: %d callbacks (want 4), order", rank, ncalls);
    for (int i = 0; i < ncalls && i < 8; ++i) fprintf(stderr, " %d", order[i]);
    fprintf(stderr, " (want 2 4 1 3), finalized %d\n", finalized_in_callback);
    return 1;
  }
  if (rank == 0) printf("finalize_self_attr: ok (%d ranks)\n", size);
  return 0;
}
