/* Threads inside a rank share its memory: blocks the rank allocated are freed (and
 * resized) by threads it started and the other way round, while the rank and several
 * threads allocate at the same time; the same with OpenMP parallel regions. Every block
 * carries a pattern that is checked before it is freed.
 *   heap_threads [move]
 * move: between parallel regions every rank moves to the next PE (AMPI_Migrate_to_pe), so
 * a PE's OpenMP threads serve ranks that arrived after the ones that started them.
 * Worker threads are unpinned (ucharmrun binds each PE to a core): on a machine with two
 * cores or more they really run beside the rank. */
#define _GNU_SOURCE
#include "check.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

enum { kWorkers = 3, kBlocks = 6000, kRounds = 4 };

static void unpin(void) {
  cpu_set_t all;
  CPU_ZERO(&all);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  for (long i = 0; i < n && i < CPU_SETSIZE; ++i) CPU_SET((int)i, &all);
  (void)sched_setaffinity(0, sizeof all, &all);
}

static size_t size_of(unsigned i) { return 8 + (i * 2654435761u) % 3000; }

/* Fills a block with a pattern of (seed, size) and checks it. */
static void fill(unsigned char* p, size_t n, unsigned seed) {
  for (size_t k = 0; k < n; ++k) p[k] = (unsigned char)(seed + k * 7);
}
static int intact(const unsigned char* p, size_t n, unsigned seed) {
  for (size_t k = 0; k < n; ++k)
    if (p[k] != (unsigned char)(seed + k * 7)) return 0;
  return 1;
}

/* What the rank hands to a worker: blocks to check and free, and room for blocks the
 * worker allocates for the rank to free. */
struct job {
  unsigned char** from_rank;
  unsigned char** to_rank;
  unsigned first, count;
  int bad;
};

static void* worker(void* arg) {
  struct job* j = arg;
  unpin();
  for (unsigned i = j->first; i < j->first + j->count; ++i) {
    unsigned char* p = j->from_rank[i];
    if (!p || !intact(p, size_of(i), i)) ++j->bad;
    if (i % 3 == 0) {  /* a block of the rank resized here stays valid */
      p = realloc(p, size_of(i) + 5000);
      if (!p || !intact(p, size_of(i), i)) ++j->bad;
    }
    if (p && malloc_usable_size(p) < size_of(i)) ++j->bad;
    free(p);
    j->from_rank[i] = NULL;
    /* Blocks of this thread (its own heap), for the rank to check and free. */
    unsigned char* q = (i % 5 == 0) ? calloc(1, size_of(i)) : malloc(size_of(i));
    if (!q) {
      ++j->bad;
    } else {
      fill(q, size_of(i), i + 1);
    }
    j->to_rank[i] = q;
    /* Churn: allocation beside the rank's. */
    void* t = NULL;
    if (posix_memalign(&t, 64, 100 + i % 500) != 0) ++j->bad;
    free(malloc(16 + i % 200));
    free(t);
  }
  return NULL;
}

static void pthread_round(struct tctx* t, int round) {
  unsigned char** from_rank = malloc(kBlocks * sizeof *from_rank);
  unsigned char** to_rank = malloc(kBlocks * sizeof *to_rank);
  CHECK(t, from_rank && to_rank);
  if (!from_rank || !to_rank) return;
  for (unsigned i = 0; i < kBlocks; ++i) {
    from_rank[i] = malloc(size_of(i));
    CHECK(t, from_rank[i] != NULL);
    if (from_rank[i]) fill(from_rank[i], size_of(i), i);
  }
  struct job jobs[kWorkers];
  pthread_t th[kWorkers];
  for (int w = 0; w < kWorkers; ++w) {
    jobs[w] = (struct job){from_rank, to_rank, (unsigned)w * (kBlocks / kWorkers), kBlocks / kWorkers, 0};
    CHECK_EQ(t, pthread_create(&th[w], NULL, worker, &jobs[w]), 0);
  }
  /* Meanwhile the rank allocates and frees in its own heap. */
  unsigned char* mine[64] = {0};
  for (unsigned i = 0; i < 40000; ++i) {
    unsigned k = i % 64;
    if (mine[k]) {
      CHECK(t, intact(mine[k], 40 + k * 13, k + round), "round %d, block %u", round, k);
      free(mine[k]);
    }
    mine[k] = malloc(40 + k * 13);
    CHECK(t, mine[k] != NULL);
    if (mine[k]) fill(mine[k], 40 + k * 13, k + round);
  }
  for (int w = 0; w < kWorkers; ++w) {
    CHECK_EQ(t, pthread_join(th[w], NULL), 0);
    CHECK_EQ(t, jobs[w].bad, 0);
  }
  for (unsigned k = 0; k < 64; ++k) free(mine[k]);
  for (unsigned i = 0; i < kBlocks; ++i) {
    if (!to_rank[i]) continue;
    CHECK(t, intact(to_rank[i], size_of(i), i + 1), "block %u from a worker", i);
    to_rank[i] = realloc(to_rank[i], size_of(i) * 2); /* a worker's block resized by the rank */
    CHECK(t, to_rank[i] && intact(to_rank[i], size_of(i), i + 1));
    free(to_rank[i]);
  }
  free(from_rank);
  free(to_rank);
}

#ifdef _OPENMP
/* Every thread of a team allocates blocks, then checks and frees those of its neighbour
 * while allocating and freeing more of its own. */
static void omp_round(struct tctx* t, int round) {
  enum { kThreads = 4, kPer = 3000 };
  unsigned char** slots = malloc(kThreads * kPer * sizeof *slots);
  CHECK(t, slots != NULL);
  if (!slots) return;
  int bad = 0, team = 0;
#pragma omp parallel num_threads(kThreads) reduction(+ : bad)
  {
    unpin();
    const int me = omp_get_thread_num(), n = omp_get_num_threads();
#pragma omp single
    team = n;
    for (unsigned i = 0; i < kPer; ++i) {
      unsigned id = (unsigned)me * kPer + i;
      slots[id] = malloc(size_of(id));
      if (!slots[id]) {
        ++bad;
      } else {
        fill(slots[id], size_of(id), id + (unsigned)round);
      }
    }
#pragma omp barrier
    const int next = (me + 1) % n;
    for (unsigned i = 0; i < kPer; ++i) {
      unsigned id = (unsigned)next * kPer + i;
      if (!slots[id] || !intact(slots[id], size_of(id), id + (unsigned)round)) ++bad;
      free(slots[id]);
      void* q = malloc(24 + i % 700);
      if (!q) ++bad;
      free(q);
    }
  }
  CHECK_EQ(t, bad, 0);
  CHECK(t, team == kThreads, "round %d: a team of %d threads, asked for %d", round, team, kThreads);
  free(slots);
}
#endif

int main(int argc, char** argv) {
  struct tctx t = {"heap_threads", NULL, 0, 0, 0};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &t.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &t.size);
  int move = argc > 1 && strcmp(argv[1], "move") == 0;
#ifndef AMPI
  if (move) {
    if (t.rank == 0) printf("SKIP: move needs AMPI\n");
    MPI_Finalize();
    return 77;
  }
#endif
  for (int round = 0; round < kRounds; ++round) {
    t.section = "pthreads";
    pthread_round(&t, round);
#ifdef _OPENMP
    t.section = "openmp";
    omp_round(&t, round);
#endif
    MPI_Barrier(MPI_COMM_WORLD);
#ifdef AMPI
    if (move) {
      int pe = AMPI_My_pe(), to = (pe + 1) % AMPI_Num_pes();
      AMPI_Migrate_to_pe(to);
      CHECK(&t, AMPI_My_pe() == to, "AMPI_Migrate_to_pe(%d) left it on PE %d", to, AMPI_My_pe());
    }
#endif
  }
  int fails = 0;
  MPI_Allreduce(&t.fails, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (t.rank == 0) {
#ifdef _OPENMP
    const char* omp = "with OpenMP";
#else
    const char* omp = "without OpenMP";
#endif
    if (fails == 0)
      printf("heap_threads: ok (%d ranks, %s)\n", t.size, omp);
    else
      printf("heap_threads: %d failed checks\n", fails);
  }
  MPI_Finalize();
  return fails ? 1 : 0;
}
