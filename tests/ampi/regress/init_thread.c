/* MPI_Init_thread provides a level no higher than asked, MPI_Query_thread returns it, and
 * the main thread is the main thread. argv[1]: the level asked (single, funneled,
 * serialized, multiple; default funneled). ucharm provides the level asked for. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  int required = MPI_THREAD_FUNNELED;
  if (argc > 1 && strcmp(argv[1], "single") == 0) required = MPI_THREAD_SINGLE;
  if (argc > 1 && strcmp(argv[1], "serialized") == 0) required = MPI_THREAD_SERIALIZED;
  if (argc > 1 && strcmp(argv[1], "multiple") == 0) required = MPI_THREAD_MULTIPLE;
  int provided = -1, queried = -1, main_thread = 0, rank, size, bad = 0;
  MPI_Init_thread(&argc, &argv, required, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Query_thread(&queried);
  MPI_Is_thread_main(&main_thread);
  if (queried != provided || !main_thread || provided < MPI_THREAD_SINGLE || provided > MPI_THREAD_MULTIPLE) bad = 1;
  if (required <= MPI_THREAD_FUNNELED && provided != required) bad = 1;
  int any_bad;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
  if (bad) fprintf(stderr, "init_thread: rank %d: required %d provided %d queried %d\n", rank, required, provided, queried);
  if (rank == 0 && !any_bad) printf("init_thread: ok (required %d, provided %d, %d ranks)\n", required, provided, size);
  MPI_Finalize();
  return any_bad;
}
