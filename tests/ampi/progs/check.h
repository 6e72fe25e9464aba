/* Shared checking helpers for the AMPI test programs (plain standard MPI C).
 * No mutable globals here: under AMPI several ranks share one process, and only the
 * globals test (globals.c) relies on their privatization. Each program keeps its state in a
 * `struct tctx` on main's stack. */
#ifndef AMPI_TEST_CHECK_H
#define AMPI_TEST_CHECK_H

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tctx {
  const char* prog;
  const char* section; /* printed with every failure */
  int rank, size;
  int fails;           /* this rank's failed checks */
};

/* Prints the first 40 failures of a rank (a broken loop would flood otherwise). */
static void check_report(struct tctx* t, const char* file, int line, const char* expr, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void check_report(struct tctx* t, const char* file, int line, const char* expr, const char* fmt, ...) {
  t->fails++;
  if (t->fails > 40) return;
  fprintf(stderr, "%s [rank %d/%d] %s: %s:%d: check failed: %s", t->prog, t->rank, t->size,
          t->section ? t->section : "-", file, line, expr);
  if (fmt && fmt[0]) {
    va_list ap;
    va_start(ap, fmt);
    fputs(": ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
  }
  fputc('\n', stderr);
  fflush(stderr);
}

#define CHECK(t, cond, ...)                                                   \
  do {                                                                        \
    if (!(cond)) check_report((t), __FILE__, __LINE__, #cond, "" __VA_ARGS__); \
  } while (0)

/* Integer equality: prints both values. */
#define CHECK_EQ(t, got, want)                                                            \
  do {                                                                                    \
    long long got_ = (long long)(got), want_ = (long long)(want);                         \
    if (got_ != want_)                                                                    \
      check_report((t), __FILE__, __LINE__, #got " == " #want, "got %lld, expected %lld", \
                   got_, want_);                                                          \
  } while (0)

/* An MPI call that must return MPI_SUCCESS. */
#define CHECK_MPI(t, call)                                                            \
  do {                                                                                \
    int rc_ = (call);                                                                 \
    if (rc_ != MPI_SUCCESS) check_report((t), __FILE__, __LINE__, #call, "returned %d", rc_); \
  } while (0)

static void tctx_init(struct tctx* t, const char* prog) {
  t->prog = prog;
  t->section = NULL;
  t->fails = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &t->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &t->size);
}

/* Ends the program: totals the failures over all ranks with point-to-point only (so a
 * point-to-point test does not depend on collectives), rank 0 prints "<prog>: ok" or the
 * total, MPI_Finalize, and the exit code: 0, or 1 on every rank when any rank failed. */
static int tctx_finish(struct tctx* t) {
  const int tag = 32000;
  int total = t->fails;
  if (t->rank == 0) {
    for (int r = 1; r < t->size; r++) {
      int f = 0;
      MPI_Recv(&f, 1, MPI_INT, r, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      total += f;
    }
    for (int r = 1; r < t->size; r++) MPI_Send(&total, 1, MPI_INT, r, tag, MPI_COMM_WORLD);
    if (total == 0)
      printf("%s: ok (%d ranks)\n", t->prog, t->size);
    else
      printf("%s: FAILED, %d failed checks over %d ranks\n", t->prog, total, t->size);
    fflush(stdout);
  } else {
    MPI_Send(&t->fails, 1, MPI_INT, 0, tag, MPI_COMM_WORLD);
    MPI_Recv(&total, 1, MPI_INT, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}

/* Deterministic content for message checks. */
static inline unsigned char pattern_byte(int a, int b, long long i) {
  return (unsigned char)((a * 131 + b * 31 + i * 7 + (i >> 8)) & 0xff);
}

#endif
