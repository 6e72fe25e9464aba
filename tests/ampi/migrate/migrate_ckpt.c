/* AMPI checkpoint and restart. usage: migrate_ckpt DIR STEPS [--every K] [--crash-at S]
 * [--stop-after S]. Each step every rank updates state in its heap and its globals, passes
 * a value around a ring and joins an Allreduce; every K steps all ranks call AMPI_Migrate
 * with ampi_checkpoint=to_file=DIR (a run started with +restart DIR goes on from there).
 * --crash-at S: in the first attempt (UCHARM_RESTART_ATTEMPT unset or 0) the last rank
 * kills its process with SIGKILL at step S. --stop-after S: the job ends after the
 * checkpoint of step S, unless MIGRATE_CKPT_CONTINUE is set (the restarted run). Rank 0
 * prints "restarted: no|yes" after each checkpoint and "result HASH" at the end: the same for
 * an uninterrupted and a restarted run, on any PE count. */
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_hash = 1469598103934665603ull;
static int g_steps_done;

static void mix(uint64_t v) { g_hash = (g_hash ^ v) * 1099511628211ull; }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 3) {
    if (rank == 0) fprintf(stderr, "usage: migrate_ckpt DIR STEPS [--every K] [--crash-at S] [--stop-after S]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const char* dir = argv[1];
  const int steps = atoi(argv[2]);
  int every = 4, crash_at = -1, stop_after = -1;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--every")) every = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--crash-at")) crash_at = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--stop-after")) stop_after = atoi(argv[i + 1]);
  }
  const size_t n = 4096 + 512 * (size_t)rank;
  uint64_t* state = malloc(n * sizeof *state);
  for (size_t i = 0; i < n; ++i) state[i] = i * 31 + (uint64_t)rank;
  char hints_value[4096];
  snprintf(hints_value, sizeof hints_value, "to_file=%s", dir);
  MPI_Info hints;
  MPI_Info_create(&hints);
  MPI_Info_set(hints, "ampi_checkpoint", hints_value);
  MPI_Info_set(hints, "ampi_load_balance", "false");
  for (int s = g_steps_done; s < steps; ++s) {
    const char* attempt = getenv("UCHARM_RESTART_ATTEMPT");
    if (s == crash_at && rank == size - 1 && (!attempt || !strcmp(attempt, "0"))) {
      fflush(stdout);
      raise(SIGKILL);
    }
    uint64_t local = 0;
    for (size_t i = 0; i < n; ++i) {
      state[i] = (state[i] * 6364136223846793005ull + (uint64_t)s) ^ (state[i] >> 29);
      local += state[i];
    }
    uint64_t from_left = 0;
    MPI_Sendrecv(&local, 1, MPI_UINT64_T, (rank + 1) % size, s, &from_left, 1, MPI_UINT64_T, (rank + size - 1) % size, s,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    uint64_t total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    mix(total);
    mix(from_left);
    g_steps_done = s + 1;
    if (every > 0 && g_steps_done % every == 0 && g_steps_done < steps) {
      AMPI_Migrate(hints);
      /* Here after writing the checkpoint, and here again in a run restarted from it. */
      if (rank == 0) {
        printf("checkpoint at step %d, restarted: %s\n", g_steps_done, getenv("MIGRATE_CKPT_CONTINUE") ? "yes" : "no");
        fflush(stdout);
      }
      if (g_steps_done == stop_after && !getenv("MIGRATE_CKPT_CONTINUE")) {
        if (rank == 0) printf("stopped at step %d\n", g_steps_done);
        MPI_Info_free(&hints);
        MPI_Finalize();
        return 0;
      }
    }
  }
  uint64_t all = 0, mine = g_hash;
  MPI_Allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_BXOR, MPI_COMM_WORLD);
  if (rank == 0) printf("result %016llx (%d ranks)\n", (unsigned long long)all, size);
  MPI_Info_free(&hints);
  free(state);
  MPI_Finalize();
  return 0;
}
