/* fork() in a rank: the child is a plain process. Every rank runs system() (status 0 and 7),
 * popen() (reads the child's output; pclose gives its status), fork() + exit(3) in the child
 * (waitpid: status 3; the child's printf reaches the output), fork() + return 4 from main in
 * the child, and after MPI_Finalize fork() + exit(5). Under +vp the ranks of a PE do this
 * while the others of the PE wait in MPI calls. Standard MPI: run_openmpi.sh runs it under
 * a system MPI. Prints "fork_vp: ok (N ranks)" from rank 0 before MPI_Finalize, and "fork_vp:
 * rank R done" from every rank after the last check. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../progs/check.h"

static int child_status(pid_t pid) {
  int st = 0;
  if (waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

int main(int argc, char** argv) {
  struct tctx t;
  MPI_Init(&argc, &argv);
  tctx_init(&t, "fork_vp");

  t.section = "system";
  int st = system("true");
  CHECK(&t, WIFEXITED(st) && WEXITSTATUS(st) == 0, "system(true) gave %#x", st);
  st = system("exit 7");
  CHECK(&t, WIFEXITED(st) && WEXITSTATUS(st) == 7, "system(exit 7) gave %#x", st);
  MPI_Barrier(MPI_COMM_WORLD);

  t.section = "popen";
  char cmd[64], line[64] = "", want[64];
  snprintf(cmd, sizeof cmd, "echo popen $((%d * 6))", t.rank);
  snprintf(want, sizeof want, "popen %d\n", t.rank * 6);
  FILE* f = popen(cmd, "r");
  CHECK(&t, f != NULL, "popen failed");
  if (f) {
    if (!fgets(line, sizeof line, f)) line[0] = 0;
    st = pclose(f);
    CHECK(&t, strcmp(line, want) == 0, "read '%s'", line);
    CHECK(&t, WIFEXITED(st) && WEXITSTATUS(st) == 0, "pclose gave %#x", st);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  t.section = "fork+exit";
  pid_t pid = fork();
  if (pid == 0) {
    printf("fork_vp: child of rank %d exits with 3\n", t.rank);
    exit(3);
  }
  CHECK(&t, pid > 0, "fork failed");
  st = child_status(pid);
  CHECK(&t, st == 3, "the child's status is %d", st);
  MPI_Barrier(MPI_COMM_WORLD);

  t.section = "fork+return";
  pid = fork();
  if (pid == 0) return 4;
  CHECK(&t, pid > 0, "fork failed");
  st = child_status(pid);
  CHECK(&t, st == 4, "the child's status is %d", st);

  const int rc = tctx_finish(&t);

  t.section = "after MPI_Finalize";
  pid = fork();
  if (pid == 0) exit(5);
  st = child_status(pid);
  CHECK(&t, st == 5, "the child's status is %d", st);
  if (t.fails == 0) printf("fork_vp: rank %d done\n", t.rank);
  return t.fails == 0 ? rc : 1;
}
