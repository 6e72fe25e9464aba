/* Errors under MPI_ERRORS_RETURN: each bad call returns its error class and the program goes
 * on communicating normally. Expected: exit code 0 and "err_return: ok". */
#include "check.h"

static void expect_class(struct tctx* t, int rc, int want, const char* what) {
  int cls = -1;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  CHECK(t, rc != MPI_SUCCESS && cls == want, "%s: returned %d (class %d), expected class %d", what, rc, cls, want);
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    CHECK(t, len > 0 && (int)strlen(msg) == len, "%s: error string of length %d", what, len);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "err_return");
  t.section = "errors_return";
  CHECK_MPI(&t, MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
  CHECK(&t, eh == MPI_ERRORS_RETURN, "Comm_get_errhandler did not give MPI_ERRORS_RETURN");
  int x = 1, buf[10];
  expect_class(&t, MPI_Send(&x, 1, MPI_INT, 9999, 0, MPI_COMM_WORLD), MPI_ERR_RANK, "MPI_Send to rank 9999");
  expect_class(&t, MPI_Send(&x, 1, MPI_INT, -7, 0, MPI_COMM_WORLD), MPI_ERR_RANK, "MPI_Send to rank -7");
  expect_class(&t, MPI_Recv(buf, 1, MPI_INT, t.size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_RANK,
               "MPI_Recv from rank size");
  expect_class(&t, MPI_Send(&x, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE,
               "MPI_Send with MPI_DATATYPE_NULL");
  expect_class(&t, MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM, "MPI_Send on MPI_COMM_NULL");
  expect_class(&t, MPI_Send(&x, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "MPI_Send of count -1");
  expect_class(&t, MPI_Send(&x, 1, MPI_INT, 0, -5, MPI_COMM_WORLD), MPI_ERR_TAG, "MPI_Send with tag -5");
  expect_class(&t, MPI_Bcast(&x, 1, MPI_INT, t.size + 3, MPI_COMM_WORLD), MPI_ERR_ROOT, "MPI_Bcast from root size+3");
  {
    /* Truncation on a receive from self. */
    MPI_Request r;
    int out[10] = {0};
    MPI_Isend(out, 10, MPI_INT, t.rank, 1, MPI_COMM_WORLD, &r);
    expect_class(&t, MPI_Recv(buf, 5, MPI_INT, t.rank, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_TRUNCATE,
                 "MPI_Recv of 10 ints into 5");
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  /* Still working. */
  t.section = "after_errors";
  int right = (t.rank + 1) % t.size, left = (t.rank + t.size - 1) % t.size, got = -1;
  CHECK_MPI(&t, MPI_Sendrecv(&t.rank, 1, MPI_INT, right, 2, &got, 1, MPI_INT, left, 2, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE));
  CHECK_EQ(&t, got, left);
  int sum = 0;
  CHECK_MPI(&t, MPI_Allreduce(&t.rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  CHECK_EQ(&t, sum, t.size * (t.size - 1) / 2);
  return tctx_finish(&t);
}
