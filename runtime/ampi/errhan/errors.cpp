// Errors: the error handlers' decision (fatal, return, user function), error classes and
// their strings, and the failing body of every function not implemented.
#include "internal.h"
#include "heap.h"

#include <ucharm/charm.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace ampi {

namespace {
struct ErrorClass {
  const char* name;
  const char* text;
};
constexpr ErrorClass kClasses[] = {
    {"MPI_SUCCESS", "no error"},
    {"MPI_ERR_BUFFER", "invalid buffer pointer"},
    {"MPI_ERR_COUNT", "invalid count argument"},
    {"MPI_ERR_TYPE", "invalid datatype"},
    {"MPI_ERR_TAG", "invalid tag"},
    {"MPI_ERR_COMM", "invalid communicator"},
    {"MPI_ERR_RANK", "invalid rank"},
    {"MPI_ERR_REQUEST", "invalid request"},
    {"MPI_ERR_ROOT", "invalid root"},
    {"MPI_ERR_GROUP", "invalid group"},
    {"MPI_ERR_OP", "invalid reduction operation"},
    {"MPI_ERR_TOPOLOGY", "invalid topology"},
    {"MPI_ERR_DIMS", "invalid dimension argument"},
    {"MPI_ERR_ARG", "invalid argument"},
    {"MPI_ERR_UNKNOWN", "unknown error"},
    {"MPI_ERR_TRUNCATE", "message truncated: the receive buffer is too small"},
    {"MPI_ERR_OTHER", "other error"},
    {"MPI_ERR_INTERN", "internal error"},
    {"MPI_ERR_IN_STATUS", "error code is in status"},
    {"MPI_ERR_PENDING", "pending request"},
    {"MPI_ERR_KEYVAL", "invalid keyval"},
    {"MPI_ERR_NO_MEM", "out of memory"},
    {"MPI_ERR_BASE", "invalid base"},
    {"MPI_ERR_INFO_KEY", "invalid info key"},
    {"MPI_ERR_INFO_VALUE", "invalid info value"},
    {"MPI_ERR_INFO_NOKEY", "no such info key"},
    {"MPI_ERR_SPAWN", "spawn error"},
    {"MPI_ERR_PORT", "invalid port"},
    {"MPI_ERR_SERVICE", "invalid service"},
    {"MPI_ERR_NAME", "invalid name"},
    {"MPI_ERR_WIN", "invalid window"},
    {"MPI_ERR_SIZE", "invalid size"},
    {"MPI_ERR_DISP", "invalid displacement"},
    {"MPI_ERR_INFO", "invalid info"},
    {"MPI_ERR_LOCKTYPE", "invalid lock type"},
    {"MPI_ERR_ASSERT", "invalid assert"},
    {"MPI_ERR_RMA_CONFLICT", "conflicting RMA accesses"},
    {"MPI_ERR_RMA_SYNC", "wrong RMA synchronization"},
    {"MPI_ERR_FILE", "invalid file"},
    {"MPI_ERR_NOT_SAME", "collective arguments not identical"},
    {"MPI_ERR_AMODE", "invalid access mode"},
    {"MPI_ERR_UNSUPPORTED_DATAREP", "unsupported data representation"},
    {"MPI_ERR_UNSUPPORTED_OPERATION", "unsupported operation"},
    {"MPI_ERR_NO_SUCH_FILE", "no such file"},
    {"MPI_ERR_FILE_EXISTS", "file exists"},
    {"MPI_ERR_BAD_FILE", "invalid file name"},
    {"MPI_ERR_ACCESS", "permission denied"},
    {"MPI_ERR_NO_SPACE", "no space left"},
    {"MPI_ERR_QUOTA", "quota exceeded"},
    {"MPI_ERR_READ_ONLY", "read-only file"},
    {"MPI_ERR_FILE_IN_USE", "file in use"},
    {"MPI_ERR_DUP_DATAREP", "duplicate data representation"},
    {"MPI_ERR_CONVERSION", "conversion error"},
    {"MPI_ERR_IO", "I/O error"},
    {"MPI_ERR_RMA_RANGE", "RMA target out of range"},
    {"MPI_ERR_RMA_ATTACH", "RMA attach failed"},
    {"MPI_ERR_RMA_SHARED", "RMA shared memory failed"},
    {"MPI_ERR_RMA_FLAVOR", "wrong RMA window flavor"},
    {"MPI_T_ERR_INVALID", "invalid MPI_T use"},
};
static_assert(sizeof kClasses / sizeof kClasses[0] == MPI_ERR_LASTCODE);
}  // namespace

const char* error_class_name(int code) {
  if (user_error(code, nullptr, nullptr)) return "an error code the program added";
  return code >= 0 && code < MPI_ERR_LASTCODE ? kClasses[code].name : "unknown error code";
}

int error(MPI_Comm comm, int code, const char* fn, const char* fmt, ...) {
  char what[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  Comm* c = comm_get(comm);
  if (!c) c = comm_get(MPI_COMM_WORLD);
  const MPI_Errhandler h = c ? c->errhandler : MPI_ERRORS_ARE_FATAL;
  if (h == MPI_ERRORS_RETURN) return code;
  if (MPI_Comm_errhandler_function* f = errhandler_function(h)) {
    MPI_Comm handle = c->handle;
    int err = code;
    {
      heap::UserScope user(nullptr);  // the program's code: its allocations are the rank's
      f(&handle, &err);
    }
    return code;
  }
  CkAbort("%s: %s (%s), on MPI rank %d", fn, what, error_class_name(code), world_rank());
}

void not_implemented(const char* fn) {
  CkAbort("%s is not implemented by ucharm's AMPI (see docs/user-guide.md, \"AMPI: what is not "
          "supported yet\")",
          fn);
}

}  // namespace ampi

using namespace ampi;

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Error_string(int errorcode, char* string, int* resultlen) {
  int user_class = 0;
  const char* user_text = nullptr;
  if (user_error(errorcode, &user_class, &user_text))
    std::snprintf(string, MPI_MAX_ERROR_STRING, "%s", user_text);
  else if (errorcode < 0 || errorcode >= MPI_ERR_LASTCODE)
    std::snprintf(string, MPI_MAX_ERROR_STRING, "unknown error code %d", errorcode);
  else
    std::snprintf(string, MPI_MAX_ERROR_STRING, "%s: %s", kClasses[errorcode].name, kClasses[errorcode].text);
  *resultlen = static_cast<int>(std::strlen(string));
  return MPI_SUCCESS;
}

int PMPI_Error_class(int errorcode, int* errorclass) {
  if (user_error(errorcode, errorclass, nullptr)) return MPI_SUCCESS;
  if (errorcode < 0 || errorcode >= MPI_ERR_LASTCODE)
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Error_class", "unknown error code %d", errorcode);
  *errorclass = errorcode;
  return MPI_SUCCESS;
}

}
#pragma GCC visibility pop
