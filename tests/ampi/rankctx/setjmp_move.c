/* setjmp/longjmp in ranks, and across a move to another process. Every rank: setjmp and
 * longjmp in place, out of nested calls; under AMPI (unless the argument is "nomove") it
 * calls setjmp, moves to the next PE (AMPI_Migrate_to_pe) and longjmps there, then
 * sigsetjmp with SIGUSR1 blocked, unblocks it, moves back and siglongjmps (the mask comes
 * back), all while the other ranks of the PE do the same. "foreign" (AMPI only): rank 1
 * sends its jmp_buf to rank 0, which longjmps to it: the job stops naming both ranks.
 * Standard MPI otherwise: run_openmpi.sh runs it under a system MPI. Prints
 * "setjmp_move: ok (N ranks)" from rank 0. */
#include <mpi.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "../progs/check.h"

static void deep(jmp_buf* jb, int n) {
  volatile char pad[256];
  if (n < 0) return;
  pad[0] = (char)n;
  if (n == 0) longjmp(*jb, 3);
  deep(jb, n - 1);
  (void)pad[0];
}

static int blocked(int sig) {
  sigset_t now;
  sigprocmask(SIG_BLOCK, NULL, &now);
  return sigismember(&now, sig);
}

int main(int argc, char** argv) {
  struct tctx t;
  MPI_Init(&argc, &argv);
  tctx_init(&t, "setjmp_move");
  const char* mode = argc > 1 ? argv[1] : "move";
  jmp_buf jb;
  volatile int count = 0;

  t.section = "in place";
  for (int round = 0; round < 3; ++round) {
    count = 0;
    int v = setjmp(jb);
    if (v == 0) {
      ++count;
      MPI_Barrier(MPI_COMM_WORLD);  /* the other ranks of the PE run their setjmp meanwhile */
      deep(&jb, 20);
    }
    CHECK(&t, v == 3 && count == 1, "setjmp returned %d after %d calls", v, count);
  }

#ifdef AMPI
  if (strcmp(mode, "foreign") == 0 && t.size > 1) {
    if (t.rank == 1) {
      if (setjmp(jb) == 0) MPI_Send(&jb, sizeof jb, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
    } else if (t.rank == 0) {
      jmp_buf theirs;
      MPI_Recv(&theirs, sizeof theirs, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      longjmp(theirs, 1); /* not ours: the job stops here */
    } else {
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
  const int pes = AMPI_Num_pes();
  if (strcmp(mode, "move") == 0 && pes > 1) {
    t.section = "move";
    const int from = AMPI_My_pe(), to = (from + 1) % pes;
    volatile int local = 1000 + t.rank;
    count = 0;
    int v = setjmp(jb);
    if (v == 0) {
      ++count;
      AMPI_Migrate_to_pe(to);
      MPI_Barrier(MPI_COMM_WORLD);
      CHECK(&t, AMPI_My_pe() == to, "on PE %d", AMPI_My_pe());
      deep(&jb, 5);
    }
    CHECK(&t, v == 3 && count == 1, "setjmp returned %d after %d calls", v, count);
    CHECK(&t, local == 1000 + t.rank && AMPI_My_pe() == to, "local %d, PE %d", local, AMPI_My_pe());

    t.section = "sigsetjmp";
    sigjmp_buf sjb;
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, NULL);
    count = 0;
    v = sigsetjmp(sjb, 1);
    if (v == 0) {
      ++count;
      sigprocmask(SIG_UNBLOCK, &usr1, NULL);
      AMPI_Migrate_to_pe(from);
      CHECK(&t, AMPI_My_pe() == from, "on PE %d", AMPI_My_pe());
      siglongjmp(sjb, 8);
    }
    const int was_blocked = blocked(SIGUSR1);
    sigprocmask(SIG_UNBLOCK, &usr1, NULL);
    CHECK(&t, v == 8 && count == 1, "sigsetjmp returned %d after %d calls", v, count);
    CHECK(&t, was_blocked, "siglongjmp did not restore the signal mask");
    CHECK(&t, AMPI_My_pe() == from, "on PE %d", AMPI_My_pe());
    MPI_Barrier(MPI_COMM_WORLD);
  }
#else
  (void)mode;
  (void)blocked;
#endif
  return tctx_finish(&t);
}
