// What the programs built both on ucharm's AMPI and on another MPI library share (this
// example and benchmarks/mpi/osu_mpi.cpp): which MPI they were built against, and the
// way out on an error that every rank detects alike. Header-only and without globals:
// under AMPI several ranks share one process.
#pragma once

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace mpi_common {

// Which MPI this was built against ("ampi", "ompi", else "mpi"); CSV mode columns use it.
inline const char* mpi_name() {
#if defined(UCHARM_AMPI)
  return "ampi";
#elif defined(OPEN_MPI)
  return "ompi";
#else
  return "mpi";
#endif
}

// An error every rank detects alike (bad options, say): rank 0 prints "prog: why", then
// all ranks abort with a non-zero code. The barrier lets rank 0 print first.
[[noreturn]] inline void fail_all(const char* prog, int rank, const std::string& why) {
  if (rank == 0) {
    std::fprintf(stderr, "%s: %s\n", prog, why.c_str());
    std::fflush(stderr);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

// Parses the command line that every rank got alike; rank 0 alone prints the message or the
// help. False: --help was asked for (the program ends with 0); a bad command line fails.
inline bool parse_args(CLI::App& app, int argc, char** argv, const char* prog, int rank) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = rank == 0 ? app.exit(e) : e.get_exit_code();
    if (code != 0) fail_all(prog, rank, "bad command line (see above)");
    return false;
  }
  return true;
}

}  // namespace mpi_common
