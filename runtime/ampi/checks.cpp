// The argument checks of every MPI entry point (checks.h).
#include "checks.h"

namespace ampi {

int bad_comm(MPI_Comm comm, const char* fn) {
  if (comm == MPI_COMM_NULL) return error(comm, MPI_ERR_COMM, fn, "the communicator is MPI_COMM_NULL");
  return error(comm, MPI_ERR_COMM, fn, "invalid communicator %d", comm);
}

int null_arg(MPI_Comm comm, const char* fn, const char* what) {
  return error(comm, MPI_ERR_ARG, fn, "%s is NULL", what);
}

int check_ptr(MPI_Comm comm, const char* fn, const char* what, const void* p) {
  return p ? MPI_SUCCESS : null_arg(comm, fn, what);
}

int check_count(MPI_Comm comm, const char* fn, const char* what, int count) {
  if (count < 0) return error(comm, MPI_ERR_COUNT, fn, "%s is negative (%d)", what, count);
  return MPI_SUCCESS;
}

int check_counts(MPI_Comm comm, const char* fn, const char* what, const int* counts, int n) {
  if (n > 0 && !counts) return null_arg(comm, fn, what);
  for (int i = 0; i < n; ++i)
    if (counts[i] < 0) return error(comm, MPI_ERR_COUNT, fn, "%s[%d] is negative (%d)", what, i, counts[i]);
  return MPI_SUCCESS;
}

int bad_type(MPI_Comm comm, const char* fn, const char* what, MPI_Datatype t) {
  if (t == MPI_DATATYPE_NULL) return error(comm, MPI_ERR_TYPE, fn, "%s is MPI_DATATYPE_NULL", what);
  if (type_freed(t)) return error(comm, MPI_ERR_TYPE, fn, "%s %d was freed with MPI_Type_free", what, t);
  return error(comm, MPI_ERR_TYPE, fn, "%s %d is not a datatype", what, t);
}

int check_type(MPI_Comm comm, const char* fn, const char* what, MPI_Datatype t) {
  return type_valid(t) ? MPI_SUCCESS : bad_type(comm, fn, what, t);
}

int check_committed(MPI_Comm comm, const char* fn, const char* what, MPI_Datatype t) {
  if (!type_valid(t)) return bad_type(comm, fn, what, t);
  if (t == MPI_UB || t == MPI_LB)
    return error(comm, MPI_ERR_TYPE, fn, "%s is a bound marker (%s), not a datatype for data", what,
                 type_name(t).c_str());
  if (!type_committed(t))
    return error(comm, MPI_ERR_TYPE, fn, "%s (%s) is not committed: call MPI_Type_commit first", what,
                 type_name(t).c_str());
  return MPI_SUCCESS;
}

int check_op(MPI_Comm comm, const char* fn, MPI_Op op) {
  if (!op_valid(op)) return error(comm, MPI_ERR_OP, fn, "invalid reduction operation %d", op);
  return MPI_SUCCESS;
}

int check_root(MPI_Comm comm, const char* fn, const Comm& c, int root) {
  if (root < 0 || root >= c.size())
    return error(comm, MPI_ERR_ROOT, fn, "root %d is out of range (communicator size %d)", root, c.size());
  return MPI_SUCCESS;
}

}  // namespace ampi
