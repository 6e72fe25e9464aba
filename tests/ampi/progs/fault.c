/* How a job ends when one rank fails while the others block (in a Recv from it, or in a
 * Barrier it never reaches). The failing rank is the last one (needs 2 ranks or more).
 *   fault abort      MPI_Abort(MPI_COMM_WORLD, 3) while the others block in Recv: exit code 3
 *   fault segv       raise(SIGSEGV) while the others block in Recv: exit code 139 (128 + 11)
 *   fault exit       exit(4) before MPI_Finalize while the others block in Barrier: exit code 4
 *   fault exit0      exit(0) there: exit code 1 (OpenMPI: "exiting improperly")
 *   fault coll_segv  raise(SIGSEGV) in the middle of back-to-back collectives: 139
 *   fault coll_abort MPI_Abort(MPI_COMM_WORLD, 3) there: exit code 3
 *   fault truncate   an MPI_ERR_TRUNCATE (fatal) on one rank while the others block: non-zero
 *                    (ucharm: 1)
 *   fault abort_all  every rank calls MPI_Abort(MPI_COMM_WORLD, 3) at once: exit code 3
 *   fault abort_sub  MPI_Abort(c, 3) on a communicator holding the failing rank only: 3
 *   fault big_segv   raise(SIGSEGV) with 400 KB messages in flight around a ring: 139
 *   fault big_exit   exit(4) there: exit code 4
 *   fault big_abort  MPI_Abort(MPI_COMM_WORLD, 3) there: exit code 3
 *   fault nofin_recv returns 0 from main without MPI_Finalize while the others block in
 *                    Recv: exit code 1 (OpenMPI: "exited without calling finalize")
 *   fault nofin_barrier   the same, the others in a Barrier
 *   fault nofin_return5   returns 5 without MPI_Finalize, the others in Recv: exit code 5
 *   fault nofin_all  every rank returns 0 without MPI_Finalize: exit code 1
 *   fault return6    every rank calls MPI_Finalize, the failing rank returns 6: exit code 6
 *   fault storm_abort     every rank floods the others, then the failing rank aborts with
 *                    code 3 while the others are receiving: exit code 3
 * The others print nothing after blocking: a line "fault: survived" means the job went on. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* mode = "";
  for (int i = 1; i < argc; i++)
    if (argv[i][0] != '+') mode = argv[i];
  const int failing = size - 1;
  int v = 0;
  /* Everyone is up and has communicated before the fault. */
  MPI_Allreduce(&rank, &v, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (v != size * (size - 1) / 2) {
    fprintf(stderr, "fault: Allreduce gave %d\n", v);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0) {
    printf("fault: %s by rank %d of %d\n", mode, failing, size);
    fflush(stdout);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (strcmp(mode, "abort") == 0) {
    if (rank == failing) MPI_Abort(MPI_COMM_WORLD, 3);
    MPI_Recv(&v, 1, MPI_INT, failing, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (strcmp(mode, "segv") == 0) {
    if (rank == failing) raise(SIGSEGV);
    MPI_Recv(&v, 1, MPI_INT, failing, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (strcmp(mode, "exit") == 0 || strcmp(mode, "exit0") == 0) {
    if (rank == failing) exit(strcmp(mode, "exit") == 0 ? 4 : 0);
    MPI_Barrier(MPI_COMM_WORLD);
  } else if (strcmp(mode, "nofin_recv") == 0 || strcmp(mode, "nofin_return5") == 0) {
    if (rank == failing) return strcmp(mode, "nofin_recv") == 0 ? 0 : 5;
    MPI_Recv(&v, 1, MPI_INT, failing, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (strcmp(mode, "nofin_all") == 0) {
    return 0; /* every rank: OpenMPI still fails the job (code 1) */
  } else if (strcmp(mode, "nofin_barrier") == 0) {
    if (rank == failing) return 0;
    MPI_Barrier(MPI_COMM_WORLD);
  } else if (strcmp(mode, "return6") == 0) {
    MPI_Finalize();
    return rank == failing ? 6 : 0;
  } else if (strcmp(mode, "coll_segv") == 0 || strcmp(mode, "coll_abort") == 0) {
    /* Back-to-back collectives; the failing rank fails in iteration 50. */
    for (int it = 0; it < 100; it++) {
      if (rank == failing && it == 50) {
        if (mode[5] == 's') raise(SIGSEGV);
        MPI_Abort(MPI_COMM_WORLD, 3);
      }
      int x = it, y = -1;
      MPI_Bcast(&x, 1, MPI_INT, it % size, MPI_COMM_WORLD);
      MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      if (y != it * size) {
        fprintf(stderr, "fault: Allreduce gave %d\n", y);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
  } else if (strcmp(mode, "truncate") == 0) {
    /* An MPI error (MPI_ERRORS_ARE_FATAL) on one rank while the others block. */
    if (rank == failing) {
      int big[4] = {1, 2, 3, 4};
      MPI_Request q;
      MPI_Isend(big, 4, MPI_INT, rank, 5, MPI_COMM_WORLD, &q);
      MPI_Recv(&v, 1, MPI_INT, rank, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Recv(&v, 1, MPI_INT, failing, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (strcmp(mode, "abort_all") == 0) {
    MPI_Abort(MPI_COMM_WORLD, 3); /* every rank at once */
  } else if (strcmp(mode, "abort_sub") == 0) {
    /* MPI_Abort on a communicator of the failing rank alone still ends the whole job. */
    MPI_Comm self_comm;
    MPI_Comm_split(MPI_COMM_WORLD, rank == failing, 0, &self_comm);
    if (rank == failing) MPI_Abort(self_comm, 3);
    MPI_Recv(&v, 1, MPI_INT, failing, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (strcmp(mode, "big_segv") == 0 || strcmp(mode, "big_exit") == 0 || strcmp(mode, "big_abort") == 0) {
    /* Large (zero-copy) messages in flight both ways when the failing rank dies. */
    enum { kN = 400 * 1024 };
    char* out = calloc(kN, 1);
    char* in = calloc(kN, 1);
    MPI_Request q[2];
    int peer = (rank + 1) % size, from = (rank + size - 1) % size;
    for (int it = 0; it < 20; it++) {
      if (rank == failing && it == 10) {
        MPI_Isend(out, kN, MPI_BYTE, peer, it, MPI_COMM_WORLD, &q[0]);
        if (mode[4] == 's') raise(SIGSEGV);
        if (mode[4] == 'a') MPI_Abort(MPI_COMM_WORLD, 3);
        exit(4);
      }
      MPI_Irecv(in, kN, MPI_BYTE, from, it, MPI_COMM_WORLD, &q[0]);
      MPI_Isend(out, kN, MPI_BYTE, peer, it, MPI_COMM_WORLD, &q[1]);
      MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    }
  } else if (strcmp(mode, "storm_abort") == 0) {
    /* 100 messages to every rank, then receive; the failing rank aborts half-way. */
    enum { kMsgs = 100 };
    MPI_Request* reqs = malloc(sizeof(MPI_Request) * kMsgs * size);
    int* out = malloc(sizeof(int) * kMsgs * size);
    for (int i = 0; i < kMsgs; i++)
      for (int d = 0; d < size; d++) {
        out[i * size + d] = i;
        MPI_Isend(&out[i * size + d], 1, MPI_INT, d, i % 4, MPI_COMM_WORLD, &reqs[i * size + d]);
      }
    for (int i = 0; i < kMsgs * size; i++) {
      if (rank == failing && i == kMsgs * size / 2) MPI_Abort(MPI_COMM_WORLD, 3);
      MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Waitall(kMsgs * size, reqs, MPI_STATUSES_IGNORE);
    /* Blocks: the failing rank never gets here. */
    MPI_Recv(&v, 1, MPI_INT, failing, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    if (rank == 0) fprintf(stderr, "fault: unknown mode '%s'\n", mode);
    MPI_Finalize();
    return 2;
  }
  printf("fault: survived on rank %d\n", rank);
  MPI_Finalize();
  return 0;
}
