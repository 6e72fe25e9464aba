/* MPI_Status_set_elements(_x) counts basic elements (MPI 3.1 §13.3): with t =
 * contiguous(3, MPI_DOUBLE), setting 3 elements of t means 3 doubles (Get_elements 3,
 * Get_count 1); 4 gives Get_count MPI_UNDEFINED; 9 gives Get_count 3. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  int rank, size, bad = 0, n;
  MPI_Count nx;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Datatype t;
  MPI_Type_contiguous(3, MPI_DOUBLE, &t);
  MPI_Type_commit(&t);
  MPI_Status st;
  MPI_Status_set_elements(&st, t, 3);
  MPI_Get_elements(&st, t, &n);
  if (n != 3) bad |= 1;
  MPI_Get_count(&st, t, &n);
  if (n != 1) bad |= 2;
  MPI_Get_elements(&st, MPI_DOUBLE, &n);
  if (n != 3) bad |= 4;
  MPI_Status_set_elements_x(&st, t, 4);
  MPI_Get_elements_x(&st, t, &nx);
  if (nx != 4) bad |= 8;
  MPI_Get_count(&st, t, &n);
  if (n != MPI_UNDEFINED) bad |= 16;
  MPI_Status_set_elements(&st, t, 9);
  MPI_Get_count(&st, t, &n);
  if (n != 3) bad |= 32;
  MPI_Status_set_elements(&st, MPI_INT, 5);
  MPI_Get_count(&st, MPI_INT, &n);
  if (n != 5) bad |= 64;
  MPI_Type_free(&t);
  int any_bad;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
  if (bad) fprintf(stderr, "status_elements: rank %d failed (mask %d)\n", rank, bad);
  if (rank == 0 && !any_bad) printf("status_elements: ok (%d ranks)\n", size);
  MPI_Finalize();
  return any_bad;
}
