// Errors the program defines and raises (MPI-3.1 §8.4-8.5): MPI_Add_error_class,
// MPI_Add_error_code, MPI_Add_error_string, MPI_Comm_call_errhandler.
//
// Each rank has its own codes (a rank is a process to MPI, and adding one is a local call):
// they follow MPI_ERR_LASTCODE, a class being a code of itself, and MPI_LASTUSEDCODE (an
// attribute of MPI_COMM_WORLD) follows the largest.
#include "comm/comms.h"
#include "checks.h"

#include <cstring>

namespace ampi {

bool user_error(int code, int* error_class, const char** text) {
  if (!g_running.rank || code <= MPI_ERR_LASTCODE) return false;
  const auto& all = my_comms().user_errors;
  const auto i = static_cast<std::size_t>(code - MPI_ERR_LASTCODE - 1);
  if (i >= all.size()) return false;
  if (error_class) *error_class = all[i].first;
  if (text) *text = all[i].second.c_str();
  return true;
}

namespace {
// A new code of class `cls` (-1: a new class, its own).
int add_code(int cls) {
  CommTable& t = my_comms();
  const int code = MPI_ERR_LASTCODE + 1 + static_cast<int>(t.user_errors.size());
  t.user_errors.emplace_back(cls < 0 ? code : cls, std::string());
  t.attr_values[MPI_LASTUSEDCODE] = code;
  return code;
}
}  // namespace

}  // namespace ampi

using namespace ampi;

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Add_error_class(int* errorclass) {
  if (int e = check_ptr(MPI_COMM_WORLD, "MPI_Add_error_class", "errorclass", errorclass)) return e;
  *errorclass = add_code(-1);
  return MPI_SUCCESS;
}

int PMPI_Add_error_code(int errorclass, int* errorcode) {
  const char* fn = "MPI_Add_error_code";
  if (int e = check_ptr(MPI_COMM_WORLD, fn, "errorcode", errorcode)) return e;
  int cls = 0;
  // A class: predefined, or one the program added (a code that is its own class).
  const bool predefined = errorclass >= 0 && errorclass < MPI_ERR_LASTCODE;
  if (!predefined && !(user_error(errorclass, &cls, nullptr) && cls == errorclass))
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "%d is not an error class", errorclass);
  *errorcode = add_code(errorclass);
  return MPI_SUCCESS;
}

int PMPI_Add_error_string(int errorcode, const char* string) {
  const char* fn = "MPI_Add_error_string";
  if (int e = check_ptr(MPI_COMM_WORLD, fn, "string", string)) return e;
  if (!user_error(errorcode, nullptr, nullptr))
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn,
                 "%d is not an error code or class the program added (predefined strings cannot change)", errorcode);
  if (std::strlen(string) >= MPI_MAX_ERROR_STRING)
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "the string is longer than MPI_MAX_ERROR_STRING - 1 (%d)",
                 MPI_MAX_ERROR_STRING - 1);
  my_comms().user_errors[static_cast<std::size_t>(errorcode - MPI_ERR_LASTCODE - 1)].second = string;
  return MPI_SUCCESS;
}

// The communicator's handler decides, as for an error of MPI's own: fatal ends the job, a
// user function is called; MPI_SUCCESS once the handler returns (also MPI_ERRORS_RETURN's,
// as OpenMPI does: the standard's "if the error handler was successfully called").
int PMPI_Comm_call_errhandler(MPI_Comm comm, int errorcode) {
  const char* fn = "MPI_Comm_call_errhandler";
  if (!comm_get(comm)) return bad_comm(comm, fn);
  const char* text = nullptr;
  user_error(errorcode, nullptr, &text);
  error(comm, errorcode, fn, "the program raised error code %d%s%s", errorcode, text && *text ? ": " : "",
        text ? text : "");
  return MPI_SUCCESS;
}

}  // extern "C"
#pragma GCC visibility pop
