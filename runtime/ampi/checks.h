// The argument checks of the MPI entry points, one set for all of runtime/ampi. Each
// returns MPI_SUCCESS or the error's return: error() (internal.h) with `comm`'s handler
// (MPI_COMM_WORLD's for calls without a communicator), the call `fn` and the argument's
// name `what` in the message.
#pragma once

#include "internal.h"

namespace ampi {

// Reports comm as invalid (naming MPI_COMM_NULL, the usual mistake).
int bad_comm(MPI_Comm comm, const char* fn);
// Reports the pointer argument `what` as NULL.
int null_arg(MPI_Comm comm, const char* fn, const char* what);
int check_ptr(MPI_Comm comm, const char* fn, const char* what, const void* p);
int check_count(MPI_Comm comm, const char* fn, const char* what, int count);
// `n` counts, at `counts` (not NULL when n > 0).
int check_counts(MPI_Comm comm, const char* fn, const char* what, const int* counts, int n);
// Reports t as not a datatype (MPI_DATATYPE_NULL, freed, or never one).
int bad_type(MPI_Comm comm, const char* fn, const char* what, MPI_Datatype t);
// t names a datatype (predefined, or created and not freed; committed or not).
int check_type(MPI_Comm comm, const char* fn, const char* what, MPI_Datatype t);
// t is usable for communication: a datatype, committed, not MPI_UB / MPI_LB.
int check_committed(MPI_Comm comm, const char* fn, const char* what, MPI_Datatype t);
int check_op(MPI_Comm comm, const char* fn, MPI_Op op);
// root is a rank of c.
int check_root(MPI_Comm comm, const char* fn, const Comm& c, int root);

}  // namespace ampi
