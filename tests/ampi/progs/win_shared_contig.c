/* MPI_Win_allocate_shared lays the members' memory out contiguously unless the info key
 * alloc_shared_noncontig is "true" (MPI 3.1 §11.2.3): rank r+1's base is rank r's base + its
 * size, in bytes as given, with odd sizes and a member of size 0. With the key: disjoint
 * segments. Every member's segment is written by its owner and read by all through the
 * pointers MPI_Win_shared_query gives.
 *   win_shared_contig [noncontig] */
#include "check.h"

#include <stdint.h>

static const MPI_Aint kSizes[] = {13, 7, 0, 100, 1, 64};
#define NSIZES ((int)(sizeof kSizes / sizeof kSizes[0]))

static MPI_Aint size_of(int r) { return kSizes[r % NSIZES]; }
static unsigned char byte_of(int r, MPI_Aint i) { return (unsigned char)(r * 37 + i + 1); }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "win_shared_contig");
  const int noncontig = argc > 1 && strcmp(argv[1], "noncontig") == 0;
  t.section = noncontig ? "noncontig" : "contig";

  MPI_Comm node;
  CHECK_MPI(&t, MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int me, n;
  MPI_Comm_rank(node, &me);
  MPI_Comm_size(node, &n);

  MPI_Info info = MPI_INFO_NULL;
  if (noncontig) {
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
  }
  unsigned char* mine = NULL;
  MPI_Win win;
  CHECK_MPI(&t, MPI_Win_allocate_shared(size_of(me), 1, info, node, &mine, &win));
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);

  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  for (MPI_Aint i = 0; i < size_of(me); i++) mine[i] = byte_of(me, i);
  MPI_Win_sync(win);
  MPI_Barrier(node);
  MPI_Win_sync(win);

  char* prev_end = NULL; /* contiguous: where the next member must begin */
  for (int r = 0; r < n; r++) {
    MPI_Aint sz = -1;
    int du = 0;
    unsigned char* base = NULL;
    CHECK_MPI(&t, MPI_Win_shared_query(win, r, &sz, &du, &base));
    CHECK_EQ(&t, sz, size_of(r));
    CHECK_EQ(&t, du, 1);
    if (r == me) CHECK(&t, base == mine, "rank %d: query gives %p, allocate gave %p", r, (void*)base, (void*)mine);
    /* A member of size 0 sits where the next one starts (as OpenMPI and MPICH place it). */
    if (!noncontig && prev_end)
      CHECK(&t, (char*)base == prev_end, "rank %d's base is %td bytes after the end of the member before it", r,
            (char*)base - prev_end);
    if (sz == 0) {
      if (!noncontig) prev_end = (char*)base;
      continue;
    }
    CHECK(&t, base != NULL, "rank %d has %ld bytes but a NULL base", r, (long)sz);
    if (!base) continue;
    if (noncontig && prev_end) CHECK(&t, (char*)base >= prev_end, "rank %d's memory overlaps an earlier member's", r);
    prev_end = (char*)base + sz;
    for (MPI_Aint i = 0; i < size_of(r); i++)
      if (base[i] != byte_of(r, i)) {
        CHECK(&t, base[i] == byte_of(r, i), "rank %d byte %ld: %d, expected %d", r, (long)i, base[i], byte_of(r, i));
        break;
      }
  }
  /* The first segment keeps an alignment (the block's); MPI_PROC_NULL: the lowest member
   * with memory. */
  {
    MPI_Aint sz = -1;
    int du = 0;
    unsigned char* base = NULL;
    CHECK_MPI(&t, MPI_Win_shared_query(win, MPI_PROC_NULL, &sz, &du, &base));
    int first = 0;
    while (first < n && size_of(first) == 0) first++;
    if (first < n) {
      CHECK_EQ(&t, sz, size_of(first));
      CHECK_EQ(&t, (uintptr_t)base % 8, 0);
    }
  }
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  MPI_Comm_free(&node);
  return tctx_finish(&t);
}
