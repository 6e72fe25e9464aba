/* Each rank parses its own argv with getopt, as many benchmarks do (OSU's before MPI_Init):
 * under +vp the ranks of a process share libc's optind/optarg, so before the fix only the
 * first rank of each process saw the options and the ranks disagreed on sizes (a hang in
 * OSU's collectives). Parses twice: before MPI_Init, and after it with a barrier inside
 * the getopt loop, so that the ranks of a PE switch in the middle of their parsing. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void parse(int argc, char** argv, int barrier, int* n, int* flags, int* seen) {
  int c;
  *n = 0, *flags = 0, *seen = 0;
  while ((c = getopt(argc, argv, "n:v")) != -1) {
    ++*seen;
    if (c == 'n') *n = atoi(optarg);
    else if (c == 'v') ++*flags;
    if (barrier) MPI_Barrier(MPI_COMM_WORLD);
  }
}

int main(int argc, char** argv) {
  int n1, f1, s1, n2, f2, s2, rank, bad = 0, any_bad;
  parse(argc, argv, 0, &n1, &f1, &s1);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  optind = 1;  /* parse again, switching ranks between options */
  parse(argc, argv, 1, &n2, &f2, &s2);
  /* run as: getopt_vp -n 5 -v -n 7 */
  if (n1 != 7 || f1 != 1 || s1 != 3 || n2 != 7 || f2 != 1 || s2 != 3) {
    printf("getopt_vp: rank %d parsed n=%d v=%d options=%d, then n=%d v=%d options=%d\n", rank, n1, f1, s1, n2, f2, s2);
    bad = 1;
  }
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && !any_bad) printf("getopt_vp: ok\n");
  MPI_Finalize();
  return any_bad;
}
