// Private to runtime/ampi: the pieces the sources share. One job per source file:
//   rank.cpp        start-up, the rank chare array, options (+vp), Init/Finalize/Abort, exit codes
//   errors.cpp      error handlers, error classes and strings, not-implemented functions
//   p2p.cpp         messages, matching, requests, wait/test, probe, cancel, GPU buffers
//   comm.cpp        communicators, groups, attributes, error handlers, topologies, info
//   collectives.cpp collectives (blocking and nonblocking) over the internal point-to-point
//   datatypes.cpp   the datatype table, pack/unpack, MPI_Type_*, MPI_Pack
//   ops.cpp         predefined and user reduction operations
//   loader.cpp      the program loader: one private copy of the program per rank (ampicc)
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ampi {

// ---- errors (errors.cpp) -----------------------------------------------------------------
// Stops the job: "MPI_X is not implemented by ucharm's AMPI".
[[noreturn]] void not_implemented(const char* fn);
// An error in MPI call `fn` (e.g. "MPI_Send") on `comm`: under MPI_ERRORS_ARE_FATAL (the
// default) prints "<fn>: <message> (<error class name>)" and ends the job with a non-zero
// exit code; under MPI_ERRORS_RETURN (or a user handler that returns) returns `code`.
// MPI_COMM_NULL / an invalid comm: MPI_COMM_WORLD's handler decides.
int error(MPI_Comm comm, int code, const char* fn, const char* fmt, ...) __attribute__((format(printf, 4, 5)));
// The name of an error class ("MPI_ERR_RANK").
const char* error_class_name(int code);

// ---- datatypes (datatypes.cpp) ------------------------------------------------------------
// A valid handle: predefined, or created and not yet freed (committed or not).
bool type_valid(MPI_Datatype t);
// Valid and usable for communication (predefined or committed).
bool type_committed(MPI_Datatype t);
// Bytes of data in one element (MPI_Type_size), and the extent (ub - lb).
std::size_t type_size(MPI_Datatype t);
std::ptrdiff_t type_extent(MPI_Datatype t);
std::ptrdiff_t type_lb(MPI_Datatype t);
// True when `count` elements are one contiguous block of count*type_size bytes at buf + lb
// (the fast path: no pack/unpack needed).
bool type_contiguous(MPI_Datatype t);
// Packs `count` elements at `buf` into `out` (count * type_size bytes, dense).
void type_pack(const void* buf, int count, MPI_Datatype t, void* out);
// Unpacks `bytes` (at most count * type_size, a whole number of basic elements) from `in`
// into `count` elements at `buf`.
void type_unpack(const void* in, std::size_t bytes, void* buf, int count, MPI_Datatype t);
// A name for messages ("MPI_DOUBLE", "derived datatype 45").
std::string type_name(MPI_Datatype t);
// Number of basic elements in `bytes` of packed data of type t (MPI_Get_elements);
// -1 (MPI_UNDEFINED) when bytes is not a whole number of them.
long long type_basic_elements(MPI_Datatype t, std::size_t bytes);

// ---- reduction operations (ops.cpp) --------------------------------------------------------
bool op_valid(MPI_Op op);
bool op_commutative(MPI_Op op);
// inout[i] = in[i] op inout[i] for `count` elements of type t laid out as the datatype says
// (MPI's user-function convention: `in` holds the lower ranks' contribution). Returns
// MPI_SUCCESS, or MPI_ERR_OP when the op is not defined on the type (a predefined op on a
// type it does not support, e.g. MPI_BAND on MPI_DOUBLE).
int op_apply(MPI_Op op, const void* in, void* inout, int count, MPI_Datatype t);

// ---- program start (rank.cpp; called by the program's loader) -----------------------------
// What the loader gives the runtime: where each rank's main is.
using MainFn = int (*)(int, char**);
struct Program {
  void* context = nullptr;
  // The main of rank `rank`: of a private copy of the program for this rank when
  // `privatized`, else the one shared main. Called on the PE that runs the rank, in the
  // rank's thread, before its main starts; nullptr (after printing why) stops the job.
  MainFn (*main_for)(void* context, int rank) = nullptr;
  // False: one copy of the program's globals per process, so the runtime refuses to put
  // more than one rank on a PE (a clear error naming +vp), never shares them silently.
  bool privatized = false;
  const char* how = "";  // the method, for messages ("one dlopen'ed copy per rank")
};

}  // namespace ampi

// The loader's entry: parses and removes AMPI's options (+vp N, ...) from argv, starts the
// runtime and returns the job's exit code on this process.
extern "C" __attribute__((visibility("default"))) int ucharm_ampi_start(int argc, char** argv,
                                                                      const ampi::Program* program);
