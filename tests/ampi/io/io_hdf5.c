/* MPI-IO as parallel HDF5's file driver (H5FDmpio.c) uses it, plain standard MPI C: each
 * part is a pattern that HDF5's testpar programs showed to fail. The files live in a fresh
 * directory under $TMPDIR (or /tmp) that rank 0 makes and removes.
 *   bigtype   an access of more than 2 GiB through one element of a derived type (HDF5's
 *             H5_mpio_create_large_type: a struct of contiguous types): the status gives
 *             MPI_Get_elements_x the full count, MPI_Get_elements and MPI_Get_count (of
 *             MPI_BYTE) MPI_UNDEFINED, MPI_Get_count of the type 1. Rank 0 reads a sparse
 *             file (no 2 GiB of disk; 2 GiB of memory). */
#include "../progs/check.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <unistd.h>

struct env {
  struct tctx t;
  char dir[256];
};

static void test_bigtype(struct env* e) {
  struct tctx* t = &e->t;
  t->section = "bigtype";
  char p[512];
  snprintf(p, sizeof p, "%s/bigtype.dat", e->dir);
  const long long n = (long long)INT_MAX + 41; /* bytes: more than an int counts */
  const int big = 1 << 29;
  const int nbig = (int)(n / big), rem = (int)(n - (long long)nbig * big);
  MPI_Datatype inner, outer, left, type, parts[2];
  MPI_Type_contiguous(big, MPI_BYTE, &inner);
  MPI_Type_contiguous(nbig, inner, &outer);
  MPI_Type_contiguous(rem, MPI_BYTE, &left);
  int lens[2] = {1, 1};
  MPI_Aint disps[2] = {0, (MPI_Aint)nbig * big};
  parts[0] = outer;
  parts[1] = left;
  MPI_Type_create_struct(2, lens, disps, parts, &type);
  MPI_Type_commit(&type);
  MPI_Type_free(&inner);
  MPI_Type_free(&outer);
  MPI_Type_free(&left);
  MPI_Count size = 0;
  MPI_Type_size_x(type, &size);
  CHECK_EQ(t, size, n);

  MPI_File fh;
  CHECK_MPI(t, MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
  CHECK_MPI(t, MPI_File_set_size(fh, n)); /* sparse: reads give zeros */
  if (t->rank == 0) {
    const char mark[8] = "the end";
    MPI_Status st;
    CHECK_MPI(t, MPI_File_write_at(fh, n - (MPI_Offset)sizeof mark, mark, (int)sizeof mark, MPI_BYTE, &st));
    char* buf = malloc((size_t)n);
    CHECK(t, buf != NULL);
    if (buf) {
      buf[0] = 1;
      CHECK_MPI(t, MPI_File_read_at(fh, 0, buf, 1, type, &st));
      MPI_Count elements = 0;
      int ielements = 0, count = 0, bytes = 0;
      CHECK_MPI(t, MPI_Get_elements_x(&st, type, &elements));
      CHECK_EQ(t, elements, n);
      CHECK_MPI(t, MPI_Get_elements(&st, type, &ielements));
      CHECK_EQ(t, ielements, MPI_UNDEFINED);
      CHECK_MPI(t, MPI_Get_count(&st, type, &count));
      CHECK_EQ(t, count, 1);
      CHECK_MPI(t, MPI_Get_count(&st, MPI_BYTE, &bytes));
      CHECK_EQ(t, bytes, MPI_UNDEFINED);
      CHECK_EQ(t, buf[0], 0);
      CHECK(t, memcmp(buf + n - (long long)sizeof mark, mark, sizeof mark) == 0, "the last bytes");
      free(buf);
    }
  }
  CHECK_MPI(t, MPI_File_close(&fh));
  MPI_Barrier(MPI_COMM_WORLD);
  if (t->rank == 0) CHECK_MPI(t, MPI_File_delete(p, MPI_INFO_NULL));
  MPI_Type_free(&type);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct env e;
  tctx_init(&e.t, "io_hdf5");
  if (e.t.rank == 0) {
    const char* tmp = getenv("TMPDIR");
    snprintf(e.dir, sizeof e.dir, "%s/ampi-io-hdf5-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(e.dir)) {
      perror("mkdtemp");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  MPI_Bcast(e.dir, sizeof e.dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (!strcmp(a, "bigtype")) test_bigtype(&e);
    else if (e.t.rank == 0) {
      fprintf(stderr, "io_hdf5: unknown part %s\n", a);
      e.t.fails++;
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (e.t.rank == 0 && rmdir(e.dir) != 0) {
    fprintf(stderr, "io_hdf5: %s is not empty after the test: %s\n", e.dir, strerror(errno));
    e.t.fails++;
  }
  return tctx_finish(&e.t);
}
