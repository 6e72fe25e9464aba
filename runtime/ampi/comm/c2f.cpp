// Handle conversion between C and Fortran (handles are ints, the same in both), address
// arithmetic, and MPI_Get_elements_x.
#include "checks.h"
#include "heap.h"

#include <cstring>

using namespace ampi;

#pragma GCC visibility push(default)
extern "C" {

// Handles are ints, the same in C and Fortran.
int PMPI_Comm_c2f(MPI_Comm comm) { return comm; }
MPI_Comm PMPI_Comm_f2c(int comm) { return comm; }
int PMPI_Type_c2f(MPI_Datatype datatype) { return datatype; }
MPI_Datatype PMPI_Type_f2c(int datatype) { return datatype; }
int PMPI_Group_c2f(MPI_Group group) { return group; }
MPI_Group PMPI_Group_f2c(int group) { return group; }
int PMPI_Request_c2f(MPI_Request request) { return request; }
MPI_Request PMPI_Request_f2c(int request) { return request; }
int PMPI_Op_c2f(MPI_Op op) { return op; }
MPI_Op PMPI_Op_f2c(int op) { return op; }
int PMPI_Info_c2f(MPI_Info info) { return info; }
MPI_Info PMPI_Info_f2c(int info) { return info; }
int PMPI_Errhandler_c2f(MPI_Errhandler errhandler) { return errhandler; }
MPI_Errhandler PMPI_Errhandler_f2c(int errhandler) { return errhandler; }
int PMPI_Win_c2f(MPI_Win win) { return win; }
MPI_Win PMPI_Win_f2c(int win) { return win; }
int PMPI_File_c2f(MPI_File file) { return file; }
MPI_File PMPI_File_f2c(int file) { return file; }
int PMPI_Message_c2f(MPI_Message message) { return message; }
MPI_Message PMPI_Message_f2c(int message) { return message; }

// A Fortran status is MPI_STATUS_SIZE integers laid out as MPI_Status (fortran_bindings.c
// relies on it), so the conversion copies the bytes.
static_assert(sizeof(MPI_Status) % sizeof(MPI_Fint) == 0);
int PMPI_Status_c2f(const MPI_Status* c_status, MPI_Fint* f_status) {
  if (!c_status) return null_arg(MPI_COMM_WORLD, "MPI_Status_c2f", "c_status");
  if (!f_status) return null_arg(MPI_COMM_WORLD, "MPI_Status_c2f", "f_status");
  std::memcpy(f_status, c_status, sizeof *c_status);
  return MPI_SUCCESS;
}
int PMPI_Status_f2c(const MPI_Fint* f_status, MPI_Status* c_status) {
  if (!f_status) return null_arg(MPI_COMM_WORLD, "MPI_Status_f2c", "f_status");
  if (!c_status) return null_arg(MPI_COMM_WORLD, "MPI_Status_f2c", "c_status");
  std::memcpy(c_status, f_status, sizeof *c_status);
  return MPI_SUCCESS;
}

// An error the Fortran binding finds itself (fortran_bindings.c, linked into the program):
// MPI_COMM_WORLD's error handler decides, as for the C functions.
int ucharm_ampi_fortran_error(int code, const char* fn, const char* message) {
  ampi::heap::RuntimeScope scope;
  return error(MPI_COMM_WORLD, code, fn, "%s", message);
}

// Kept here, not in datatype/: the datatype unit test links those files without pt2pt/.
int PMPI_Get_elements_x(const MPI_Status* status, MPI_Datatype datatype, MPI_Count* count) {
  if (!count) return null_arg(MPI_COMM_WORLD, "MPI_Get_elements_x", "count");
  // The full 64-bit count: an access through a type above 2 GiB (HDF5 writes such
  // datasets with one element of a struct of contiguous types) moves more elements than
  // an int holds, and MPI_Get_elements would give MPI_UNDEFINED.
  if (int rc = check_committed(MPI_COMM_WORLD, "MPI_Get_elements_x", "datatype", datatype)) return rc;
  const long long n = type_basic_elements(datatype, static_cast<std::size_t>(status->ucharm_bytes));
  *count = n < 0 ? MPI_UNDEFINED : static_cast<MPI_Count>(n);
  return MPI_SUCCESS;
}

// Addresses are plain byte addresses (MPI_Get_address returns the pointer's value).
MPI_Aint PMPI_Aint_add(MPI_Aint base, MPI_Aint disp) { return base + disp; }
MPI_Aint PMPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2) { return addr1 - addr2; }
}  // extern "C"
#pragma GCC visibility pop
