/* MPI_Pack_external / MPI_Unpack_external / MPI_Pack_external_size in "external32" (MPI 3.1
 * §13.5.2): big-endian bytes of fixed sizes (MPI_LONG 4 bytes, long double 16), through a
 * derived type, and back. OpenMPI 4.1 keeps MPI_LONG at 8 bytes and packs long double
 * otherwise, against MPI's table: those checks are left out there (OPEN_MPI). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int rank, errs = 0;
#define CHECK(c)                                                                     \
  do {                                                                               \
    if (!(c)) {                                                                      \
      fprintf(stderr, "pack_external: rank %d: line %d: %s\n", rank, __LINE__, #c); \
      ++errs;                                                                        \
    }                                                                                \
  } while (0)

static MPI_Aint ext_size(int count, MPI_Datatype t) {
  MPI_Aint s = -1;
  MPI_Pack_external_size("external32", count, t, &s);
  return s;
}

int main(int argc, char** argv) {
  int size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  /* Fixed sizes, whatever the host's. */
  CHECK(ext_size(1, MPI_INT) == 4);
#ifndef OPEN_MPI
  CHECK(ext_size(3, MPI_LONG) == 12);
#endif
  CHECK(ext_size(1, MPI_LONG_LONG) == 8);
  CHECK(ext_size(2, MPI_DOUBLE) == 16);
  CHECK(ext_size(1, MPI_LONG_DOUBLE) == 16);
  CHECK(ext_size(1, MPI_SHORT) == 2);
  CHECK(ext_size(1, MPI_DOUBLE_INT) == 12);

  /* Big-endian bytes. */
  unsigned char buf[64];
  MPI_Aint pos = 0;
  int i = 0x01020304;
  MPI_Pack_external("external32", &i, 1, MPI_INT, buf, sizeof buf, &pos);
  CHECK(pos == 4 && buf[0] == 1 && buf[1] == 2 && buf[2] == 3 && buf[3] == 4);
  double d = 1.0; /* IEEE 0x3ff0000000000000 */
  MPI_Pack_external("external32", &d, 1, MPI_DOUBLE, buf, sizeof buf, &pos);
  CHECK(pos == 12 && buf[4] == 0x3f && buf[5] == 0xf0 && buf[11] == 0);
  int i2 = 0;
  double d2 = 0;
  MPI_Aint back = 0;
  MPI_Unpack_external("external32", buf, pos, &back, &i2, 1, MPI_INT);
  MPI_Unpack_external("external32", buf, pos, &back, &d2, 1, MPI_DOUBLE);
  CHECK(back == 12 && i2 == i && d2 == d);
#ifndef OPEN_MPI
  long l = -2, l2 = 0;
  long double ld = -1.5L, ld2 = 0; /* binary128: sign, exponent 0x3fff, fraction .1 */
  pos = 0;
  MPI_Pack_external("external32", &l, 1, MPI_LONG, buf, sizeof buf, &pos);
  CHECK(pos == 4 && buf[0] == 0xff && buf[1] == 0xff && buf[2] == 0xff && buf[3] == 0xfe);
  MPI_Pack_external("external32", &ld, 1, MPI_LONG_DOUBLE, buf, sizeof buf, &pos);
  CHECK(pos == 20 && buf[4] == 0xbf && buf[5] == 0xff && buf[6] == 0x80 && buf[7] == 0 && buf[19] == 0);
  back = 0;
  MPI_Unpack_external("external32", buf, pos, &back, &l2, 1, MPI_LONG);
  MPI_Unpack_external("external32", buf, pos, &back, &ld2, 1, MPI_LONG_DOUBLE);
  CHECK(back == 20 && l2 == l && ld2 == ld);
#endif

  /* A derived type with a gap: every other int of 6, then a struct of short + double. */
  int v[6] = {10, 11, 12, 13, 14, 15}, w[6] = {0};
  MPI_Datatype every_other;
  MPI_Type_vector(3, 1, 2, MPI_INT, &every_other);
  MPI_Type_commit(&every_other);
  CHECK(ext_size(1, every_other) == 12);
  pos = 0;
  MPI_Pack_external("external32", v, 1, every_other, buf, sizeof buf, &pos);
  CHECK(pos == 12 && buf[3] == 10 && buf[7] == 12 && buf[11] == 14);
  pos = 0;
  MPI_Unpack_external("external32", buf, 12, &pos, w, 1, every_other);
  CHECK(pos == 12 && w[0] == 10 && w[1] == 0 && w[2] == 12 && w[4] == 14 && w[5] == 0);
  MPI_Type_free(&every_other);

  /* Too small a buffer is an error. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  pos = 0;
  CHECK(MPI_Pack_external("external32", v, 6, MPI_INT, buf, 8, &pos) != MPI_SUCCESS);

  int all;
  MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  if (all) return 1;
  if (rank == 0) printf("pack_external: ok (%d ranks)\n", size);
  return 0;
}
