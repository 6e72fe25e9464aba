/* mpi.h under a language standard (wrappers.sh compiles this as C89..C17 and as C++98..C++23,
 * with -Wall -Wextra -Werror): the handles, constants, types and callbacks a program uses. */
#include <mpi.h>

static int copy_fn(MPI_Comm comm, int keyval, void* extra, void* in, void* out, int* flag) {
  (void)comm;
  (void)keyval;
  (void)extra;
  *(void**)out = in;
  *flag = 1;
  return MPI_SUCCESS;
}

static void sum_fn(void* in, void* inout, int* len, MPI_Datatype* type) {
  int i;
  (void)type;
  for (i = 0; i < *len; i++) ((int*)inout)[i] += ((int*)in)[i];
}

int mpih_use(int argc, char** argv);
int mpih_use(int argc, char** argv) {
  MPI_Status status;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Aint extent = 0;
  MPI_Offset offset = 0;
  MPI_Count count = 0;
  MPI_Fint fint = 0;
  MPI_Op op = MPI_OP_NULL;
  MPI_Win win = MPI_WIN_NULL;
  MPI_Info info = MPI_INFO_NULL;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Group group = MPI_GROUP_NULL;
  MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
  char name[MPI_MAX_PROCESSOR_NAME];
  int keyval = MPI_KEYVAL_INVALID, flag = 0, len = 0, x = 1, y = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Comm_create_keyval(copy_fn, MPI_COMM_NULL_DELETE_FN, &keyval, NULL);
  MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &keyval, NULL);
  MPI_Op_create(sum_fn, 1, &op);
  MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, op, comm);
  MPI_Reduce(&x, &y, 1, MPI_DOUBLE_INT, MPI_MAXLOC, 0, comm);
  MPI_Isend(MPI_BOTTOM, 0, MPI_BYTE, MPI_PROC_NULL, MPI_ANY_TAG, comm, &request);
  MPI_Wait(&request, &status);
  MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, MPI_STATUS_IGNORE);
  MPI_Waitall(1, &request, MPI_STATUSES_IGNORE);
  MPI_Type_get_extent(MPI_LONG_LONG, &extent, &extent);
  MPI_Get_elements_x(&status, MPI_CHAR, &count);
  MPI_Get_processor_name(name, &len);
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &x, &flag);
  MPI_Win_create(NULL, 0, 1, MPI_INFO_NULL, comm, &win);
  fint = MPI_Comm_c2f(comm);
  (void)offset, (void)info, (void)type, (void)group, (void)eh;
  return status.MPI_SOURCE + status.MPI_TAG + status.MPI_ERROR + (int)fint + MPI_VERSION + MPI_SUBVERSION +
         (MPI_UNDEFINED < 0) + MPI_THREAD_FUNNELED + MPI_Finalize();
}
