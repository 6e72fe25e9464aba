// Handle conversion between C and Fortran (handles are ints, the same in both), address
// arithmetic, and MPI_Get_elements_x.
#include "checks.h"

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

// Kept here, not in datatype/: the datatype unit test links those files without pt2pt/.
int PMPI_Get_elements_x(const MPI_Status* status, MPI_Datatype datatype, MPI_Count* count) {
  if (!count) return null_arg(MPI_COMM_WORLD, "MPI_Get_elements_x", "count");
  int n = 0;
  if (int rc = PMPI_Get_elements(status, datatype, &n)) return rc;
  *count = n;
  return MPI_SUCCESS;
}

// Addresses are plain byte addresses (MPI_Get_address returns the pointer's value).
MPI_Aint PMPI_Aint_add(MPI_Aint base, MPI_Aint disp) { return base + disp; }
MPI_Aint PMPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2) { return addr1 - addr2; }
}  // extern "C"
#pragma GCC visibility pop
