/* A rank's heap at its edges: a 6 GiB block (as malloc gives it on a machine with less
 * memory: pages are backed only once touched), a request no machine can meet (NULL and
 * ENOMEM), every power-of-two alignment from 8 bytes to 64 MiB through posix_memalign,
 * aligned_alloc, memalign, valloc and pvalloc (EINVAL for a bad one, as glibc), and
 * malloc_usable_size and realloc of aligned blocks.
 *   heap_limits            the checks above, then "heap_limits: ok"
 *   heap_limits big SIZE   malloc(SIZE) (suffix G) must fail with ENOMEM: run with a small
 *                          slice to see the message naming it */
#define _GNU_SOURCE
#include "check.h"

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <unistd.h>

static void touch(struct tctx* t, unsigned char* p, size_t n, unsigned char v) {
  /* A few pages only: the rest of the block stays unbacked. */
  for (size_t at = 0; at < n; at += (size_t)1 << 30) p[at] = v;
  p[n - 1] = v;
  for (size_t at = 0; at < n; at += (size_t)1 << 30) CHECK_EQ(t, p[at], v);
  CHECK_EQ(t, p[n - 1], v);
}

static void large(struct tctx* t) {
  t->section = "large";
  const size_t big = (size_t)6 << 30;
  errno = 0;
  unsigned char* p = malloc(big);
  CHECK(t, p != NULL, "malloc(6 GiB) failed: %s", strerror(errno));
  if (!p) return;
  touch(t, p, big, (unsigned char)(7 + t->rank));
  CHECK(t, malloc_usable_size(p) >= big);
#if !defined(__SANITIZE_ADDRESS__) /* AddressSanitizer's realloc copies: 6 GiB touched per rank */
  /* Grown by another GiB: the touched bytes stay. */
  unsigned char* q = realloc(p, big + ((size_t)1 << 30));
  CHECK(t, q != NULL, "realloc to 7 GiB failed: %s", strerror(errno));
  if (q) {
    p = q;
    CHECK_EQ(t, p[0], 7 + t->rank);
    CHECK_EQ(t, p[big - 1], 7 + t->rank);
    p[big + ((size_t)1 << 30) - 1] = 1;
  }
#endif
  free(p);
  /* Fresh memory from calloc reads as zero. */
  size_t n = (size_t)1 << 28;
  unsigned long* z = calloc(n / sizeof *z, sizeof *z);
  CHECK(t, z != NULL);
  if (z) {
    for (size_t i = 0; i < n / sizeof *z; i += 4096 / sizeof *z) CHECK(t, z[i] == 0, "word %zu", i);
    CHECK(t, z[n / sizeof *z - 1] == 0);
    free(z);
  }
#if !defined(__SANITIZE_ADDRESS__) /* AddressSanitizer ends the program on such a request */
  /* More than any machine has: NULL and ENOMEM, and the program goes on. */
  errno = 0;
  void* huge = malloc((size_t)1 << 46);
  CHECK(t, huge == NULL);
  CHECK_EQ(t, errno, ENOMEM);
  free(huge);
  errno = 0;
  void* al = NULL;
  CHECK_EQ(t, posix_memalign(&al, 4096, (size_t)1 << 46), ENOMEM);
#endif
}

static void aligned(struct tctx* t) {
  t->section = "aligned";
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  for (size_t align = 8; align <= ((size_t)64 << 20); align *= 2) {
    for (int way = 0; way < 3; ++way) {
      size_t n = 100 + align / 3;
      void* p = NULL;
      errno = 0;
      if (way == 0) {
        int rc = posix_memalign(&p, align, n);
        CHECK_EQ(t, rc, 0);
      } else if (way == 1) {
        p = aligned_alloc(align, (n + align - 1) / align * align); /* C11: a multiple of align */
      } else {
        p = memalign(align, n);
      }
      CHECK(t, p != NULL, "alignment %zu (way %d): %s", align, way, strerror(errno));
      if (!p) continue;
      CHECK(t, (uintptr_t)p % align == 0, "alignment %zu (way %d): %p", align, way, p);
      CHECK(t, malloc_usable_size(p) >= n, "alignment %zu: usable %zu < %zu", align, malloc_usable_size(p), n);
      memset(p, 0x5a, n);
      /* Resized: the bytes stay (alignment beyond malloc's is not kept, as in glibc). */
      unsigned char* q = realloc(p, 3 * n);
      CHECK(t, q != NULL);
      if (!q) {
        free(p);
        continue;
      }
      int same = 1;
      for (size_t k = 0; k < n; ++k) same &= q[k] == 0x5a;
      CHECK(t, same, "alignment %zu: realloc lost bytes", align);
      CHECK(t, malloc_usable_size(q) >= 3 * n);
      q = realloc(q, 50);
      CHECK(t, q && q[49] == 0x5a);
      free(q);
    }
  }
  /* Many aligned blocks at once, freed in another order. */
  void* blocks[64];
  for (int i = 0; i < 64; ++i) {
    size_t align = (size_t)1 << (3 + i % 19);
    CHECK_EQ(t, posix_memalign(&blocks[i], align, 1 + (size_t)i * 1000), 0);
    CHECK(t, (uintptr_t)blocks[i] % align == 0);
    memset(blocks[i], i, 1 + (size_t)i * 1000);
  }
  for (int i = 0; i < 64; i += 2) free(blocks[i]);
  for (int i = 1; i < 64; i += 2) {
    CHECK(t, ((unsigned char*)blocks[i])[(size_t)i * 1000] == i);
    free(blocks[i]);
  }
  /* Page-aligned ones. */
  void* v = valloc(10);
  CHECK(t, v && (uintptr_t)v % page == 0);
  free(v);
  void* pv = pvalloc(10);
  CHECK(t, pv && (uintptr_t)pv % page == 0);
  CHECK(t, pv && malloc_usable_size(pv) >= page, "pvalloc(10): usable %zu", pv ? malloc_usable_size(pv) : 0);
  free(pv);
#if !defined(__SANITIZE_ADDRESS__) /* AddressSanitizer ends the program on these, glibc does not */
  /* memalign takes the next power of two for any other alignment, as glibc. */
  void* m = memalign(24, 100);
  CHECK(t, m && (uintptr_t)m % 32 == 0);
  free(m);
  /* posix_memalign refuses what is not a power of two times sizeof(void*), leaving *out. */
  static const size_t bad[] = {0, 1, 4, 24, 48, 3000, 65536 + 8};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    void* out = &t;
    int rc = posix_memalign(&out, bad[i], 64);
    CHECK_EQ(t, rc, EINVAL);
    CHECK(t, out == (void*)&t, "alignment %zu: *out changed", bad[i]);
  }
#endif
  CHECK_EQ(t, malloc_usable_size(NULL), 0);
}

static size_t parse_size(const char* s) {
  char* end;
  size_t n = strtoull(s, &end, 10);
  if (*end == 'G' || *end == 'g') n <<= 30;
  if (*end == 'M' || *end == 'm') n <<= 20;
  return n;
}

int main(int argc, char** argv) {
  struct tctx t = {"heap_limits", NULL, 0, 0, 0};
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &t.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &t.size);
  if (argc > 2 && strcmp(argv[1], "big") == 0) {
    size_t n = parse_size(argv[2]);
    errno = 0;
    void* p = malloc(n);
    int e = errno;
    printf("heap_limits: rank %d: malloc(%zu) %s (%s)\n", t.rank, n, p ? "succeeded" : "failed", strerror(e));
    CHECK(&t, p == NULL && e == ENOMEM);
    free(p);
    /* The rank goes on: a small block still comes. */
    p = malloc(100);
    CHECK(&t, p != NULL);
    free(p);
  } else {
    large(&t);
    MPI_Barrier(MPI_COMM_WORLD);
    aligned(&t);
  }
  int fails = 0;
  MPI_Allreduce(&t.fails, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (t.rank == 0) {
    if (fails == 0)
      printf("heap_limits: ok (%d ranks)\n", t.size);
    else
      printf("heap_limits: %d failed checks\n", fails);
  }
  MPI_Finalize();
  return fails ? 1 : 0;
}
