/* CHECK(cond, fmt, ...) for the thread tests: prints the rank (a `rank` variable the program
 * keeps) and the message, then MPI_Abort: a failed check in any thread stops the job. */
#ifndef AMPI_THREADS_ABORT_CHECK_H
#define AMPI_THREADS_ABORT_CHECK_H
#include <mpi.h>
#include <stdio.h>

#define CHECK(cond, ...)                  \
  do {                                    \
    if (!(cond)) {                        \
      fprintf(stderr, "rank %d: ", rank); \
      fprintf(stderr, __VA_ARGS__);       \
      fprintf(stderr, "\n");              \
      MPI_Abort(MPI_COMM_WORLD, 1);       \
    }                                     \
  } while (0)

#endif
