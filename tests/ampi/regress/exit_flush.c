/* A normal end runs atexit handlers and static destructors and flushes every C stdio stream
 * on every rank. Each rank writes a line to a FILE* it never closes (argv[1].<rank>),
 * registers an atexit handler and has a destructor; both print a line naming the rank.
 * argv[2] says how the rank ends: "return" (MPI_Finalize, then return from main), "exit"
 * (MPI_Finalize, then exit(0)). The test driver (exit_flush.sh) checks the files and lines. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int my_rank = -1;
static FILE* never_closed;

static void at_exit(void) { printf("exit_flush: atexit handler of rank %d\n", my_rank); }

__attribute__((destructor)) static void destructor(void) {
  if (my_rank >= 0) printf("exit_flush: destructor of rank %d\n", my_rank);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc < 3) {
    fprintf(stderr, "usage: exit_flush PATH-PREFIX return|exit\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
  char path[4096];
  snprintf(path, sizeof path, "%s.%d", argv[1], my_rank);
  never_closed = fopen(path, "w");
  if (!never_closed) {
    perror(path);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  /* fully buffered, and short: it stays in the FILE's buffer until exit flushes it */
  fprintf(never_closed, "rank %d wrote this\n", my_rank);
  atexit(at_exit);
  MPI_Finalize();
  if (strcmp(argv[2], "exit") == 0) exit(0);
  return 0;
}
