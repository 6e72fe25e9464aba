/* A rank that moves keeps everything it owns: its heap (MiB given as argv[1] on rank 0, 1 MiB on
 * the others), a linked structure in it, its stack (a deep recursion whose locals are checked
 * after the moves), its globals (each rank has its own copy of the program), its argv, and its
 * MPI state (a named duplicate communicator with an attribute, a derived datatype, a user op).
 * At the bottom of the recursion it moves with AMPI_Migrate_to_pe (to the next PE) and then
 * AMPI_Migrate (the balancer; run with +balancer RotateLB to move every rank again).
 * Prints "migrate_state: ok (N ranks)" from rank 0. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../progs/check.h"

static int g_counter = 7;
static double g_table[4096];
static struct node* g_list;
static char* g_heap;
static size_t g_heap_bytes;

struct node {
  struct node* next;
  long value;
};

static unsigned long pattern(size_t i, int rank) { return (i * 2654435761u) ^ (unsigned long)rank * 40503u; }

static void fill_heap(int rank) {
  unsigned long* w = (unsigned long*)g_heap;
  for (size_t i = 0; i < g_heap_bytes / sizeof *w; ++i) w[i] = pattern(i, rank);
  for (int i = 0; i < 1000; ++i) {
    struct node* n = malloc(sizeof *n);
    n->value = (long)i * rank + 3;
    n->next = g_list;
    g_list = n;
  }
}

static void check_heap(struct tctx* t) {
  const unsigned long* w = (const unsigned long*)g_heap;
  size_t bad = 0;
  for (size_t i = 0; i < g_heap_bytes / sizeof *w; ++i) bad += w[i] != pattern(i, t->rank);
  CHECK(t, bad == 0, "%zu heap words changed", bad);
  long i = 999;
  for (struct node* n = g_list; n; n = n->next, --i) CHECK(t, n->value == i * t->rank + 3, "node %ld", i);
  CHECK(t, i == -1, "list ends at %ld", i);
  CHECK(t, g_counter == 7 + t->rank, "g_counter %d", g_counter);
  for (int k = 0; k < 4096; ++k) CHECK(t, g_table[k] == k * 0.5 + t->rank, "g_table[%d]", k);
}

static void add_pairs(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  for (int i = 0; i < *len; ++i) ((int*)inout)[2 * i] += ((int*)in)[2 * i];
}

struct mpi_state {
  MPI_Comm dup;
  int key;
  MPI_Datatype pair;
  MPI_Op op;
};

static void check_mpi(struct tctx* t, struct mpi_state* s) {
  char name[MPI_MAX_OBJECT_NAME];
  int len = 0, flag = 0;
  void* value = NULL;
  MPI_Comm_get_name(s->dup, name, &len);
  CHECK(t, strcmp(name, "migrating dup") == 0, "name %s", name);
  MPI_Comm_get_attr(s->dup, s->key, &value, &flag);
  CHECK(t, flag && (intptr_t)value == 1000 + t->rank, "attribute %ld", (long)(intptr_t)value);
  int in[2] = {t->rank, 0}, out[2] = {0, 0};
  MPI_Allreduce(in, out, 1, s->pair, s->op, s->dup);
  CHECK(t, out[0] == t->size * (t->size - 1) / 2, "user op over the derived type gave %d", out[0]);
  /* A ring over the duplicate. */
  int right = (t->rank + 1) % t->size, left = (t->rank + t->size - 1) % t->size, got = -1;
  MPI_Sendrecv(&t->rank, 1, MPI_INT, right, 5, &got, 1, MPI_INT, left, 5, s->dup, MPI_STATUS_IGNORE);
  CHECK(t, got == left, "ring got %d", got);
}

static int moves_seen;

static long recurse(int depth, int max, struct tctx* t, struct mpi_state* s, char** argv) {
  volatile long local[16];
  for (int i = 0; i < 16; ++i) local[i] = (long)depth * 16 + i + t->rank;
  long sum = 0;
  if (depth == max) {
    int npes = AMPI_Num_pes(), pe0 = AMPI_My_pe();
    AMPI_Migrate_to_pe((pe0 + 1) % npes);
    int pe1 = AMPI_My_pe();
    if (npes > 1) CHECK(t, pe1 == (pe0 + 1) % npes, "AMPI_Migrate_to_pe(%d) left it on PE %d", (pe0 + 1) % npes, pe1);
    moves_seen += pe1 != pe0;
    check_heap(t);
    check_mpi(t, s);
    MPI_Info hints;
    MPI_Info_create(&hints);
    MPI_Info_set(hints, "ampi_load_balance", "sync");
    AMPI_Migrate(hints);
    MPI_Info_free(&hints);
    int pe2 = AMPI_My_pe();
    moves_seen += pe2 != pe1;
    check_heap(t);
    check_mpi(t, s);
    CHECK(t, strstr(argv[0], "migrate_state") != NULL, "argv[0] is %s", argv[0]);
    printf("rank %d: PE %d -> %d -> %d\n", t->rank, pe0, pe1, pe2);
    fflush(stdout);
  } else {
    sum = recurse(depth + 1, max, t, s, argv);
  }
  for (int i = 0; i < 16; ++i) CHECK(t, local[i] == (long)depth * 16 + i + t->rank, "frame %d local %d", depth, i);
  return sum + local[depth % 16];
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "migrate_state");
  g_counter += t.rank;
  for (int k = 0; k < 4096; ++k) g_table[k] = k * 0.5 + t.rank;
  g_heap_bytes = (size_t)(t.rank == 0 && argc > 1 ? atoi(argv[1]) : 1) << 20;
  g_heap = malloc(g_heap_bytes);
  CHECK(&t, g_heap != NULL, "malloc of %zu bytes", g_heap_bytes);
  fill_heap(t.rank);
  struct mpi_state s;
  MPI_Comm_dup(MPI_COMM_WORLD, &s.dup);
  MPI_Comm_set_name(s.dup, "migrating dup");
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &s.key, NULL);
  MPI_Comm_set_attr(s.dup, s.key, (void*)(intptr_t)(1000 + t.rank));
  MPI_Type_contiguous(2, MPI_INT, &s.pair);
  MPI_Type_commit(&s.pair);
  MPI_Op_create(add_pairs, 1, &s.op);
  t.section = "moves";
  recurse(0, 2000, &t, &s, argv);
  t.section = "after";
  check_heap(&t);
  check_mpi(&t, &s);
  int total = 0;
  MPI_Reduce(&moves_seen, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (t.rank == 0) printf("moves: %d\n", total);
  MPI_Op_free(&s.op);
  MPI_Type_free(&s.pair);
  MPI_Comm_free(&s.dup);
  free(g_heap);
  return tctx_finish(&t);
}
