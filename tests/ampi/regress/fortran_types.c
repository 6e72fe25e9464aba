/* The Fortran and C++ predefined datatypes a C program may name: their sizes and names,
 * point-to-point, MPI_Type_match_size, and the reductions MPI defines on them (SUM/PROD on
 * the complex types, MINLOC on MPI_2REAL/2INTEGER/2DOUBLE_PRECISION, LAND on LOGICAL). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int rank, errs = 0;
#define CHECK(c)                                                                     \
  do {                                                                               \
    if (!(c)) {                                                                      \
      fprintf(stderr, "fortran_types: rank %d: line %d: %s\n", rank, __LINE__, #c); \
      ++errs;                                                                        \
    }                                                                                \
  } while (0)

static void check_type(MPI_Datatype t, int size, const char* name) {
  int s = -1, len;
  char got[MPI_MAX_OBJECT_NAME];
  MPI_Type_size(t, &s);
  MPI_Type_get_name(t, got, &len);
  if (s != size || strcmp(got, name) != 0) {
    fprintf(stderr, "fortran_types: rank %d: %s: size %d (want %d), name %s\n", rank, name, s, size, got);
    ++errs;
  }
}

int main(int argc, char** argv) {
  int size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  check_type(MPI_CHARACTER, 1, "MPI_CHARACTER");
  check_type(MPI_LOGICAL, 4, "MPI_LOGICAL");
  check_type(MPI_INTEGER, 4, "MPI_INTEGER");
  check_type(MPI_REAL, 4, "MPI_REAL");
  check_type(MPI_DOUBLE_PRECISION, 8, "MPI_DOUBLE_PRECISION");
  check_type(MPI_COMPLEX, 8, "MPI_COMPLEX");
  check_type(MPI_DOUBLE_COMPLEX, 16, "MPI_DOUBLE_COMPLEX");
  check_type(MPI_2REAL, 8, "MPI_2REAL");
  check_type(MPI_2DOUBLE_PRECISION, 16, "MPI_2DOUBLE_PRECISION");
  check_type(MPI_2INTEGER, 8, "MPI_2INTEGER");
  check_type(MPI_INTEGER1, 1, "MPI_INTEGER1");
  check_type(MPI_INTEGER2, 2, "MPI_INTEGER2");
  check_type(MPI_INTEGER4, 4, "MPI_INTEGER4");
  check_type(MPI_INTEGER8, 8, "MPI_INTEGER8");
  check_type(MPI_REAL4, 4, "MPI_REAL4");
  check_type(MPI_REAL8, 8, "MPI_REAL8");
  check_type(MPI_COMPLEX8, 8, "MPI_COMPLEX8");
  check_type(MPI_COMPLEX16, 16, "MPI_COMPLEX16");
  check_type(MPI_CXX_BOOL, (int)sizeof(_Bool), "MPI_CXX_BOOL");
  check_type(MPI_CXX_FLOAT_COMPLEX, 8, "MPI_CXX_FLOAT_COMPLEX");
  check_type(MPI_CXX_DOUBLE_COMPLEX, 16, "MPI_CXX_DOUBLE_COMPLEX");
  check_type(MPI_CXX_LONG_DOUBLE_COMPLEX, (int)(2 * sizeof(long double)), "MPI_CXX_LONG_DOUBLE_COMPLEX");

  /* Type_match_size: a type of the asked size. */
  MPI_Datatype m;
  int ms;
  MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 2 * sizeof(double), &m);
  MPI_Type_size(m, &ms);
  CHECK(ms == 16);
  MPI_Type_match_size(MPI_TYPECLASS_REAL, sizeof(float), &m);
  MPI_Type_size(m, &ms);
  CHECK(ms == 4);
  MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 8, &m);
  MPI_Type_size(m, &ms);
  CHECK(ms == 8);

  /* Point-to-point around a ring: 3 complex numbers of 2 doubles each. */
  double out[6], in[6];
  for (int i = 0; i < 6; ++i) out[i] = rank * 10 + i;
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  MPI_Status st;
  MPI_Sendrecv(out, 3, MPI_DOUBLE_COMPLEX, next, 0, in, 3, MPI_DOUBLE_COMPLEX, prev, 0, MPI_COMM_WORLD, &st);
  int count;
  MPI_Get_count(&st, MPI_DOUBLE_COMPLEX, &count);
  CHECK(count == 3);
  for (int i = 0; i < 6; ++i) CHECK(in[i] == prev * 10 + i);

  /* SUM and PROD of complex numbers: rank r gives (1 + r i); the product over ranks of
   * (1 + r i) is computed here too. */
  float c[2] = {1.0f, (float)rank}, csum[2], cprod[2];
  MPI_Allreduce(c, csum, 1, MPI_COMPLEX, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(c, cprod, 1, MPI_COMPLEX, MPI_PROD, MPI_COMM_WORLD);
  double re = 1, im = 0;
  for (int r = 0; r < size; ++r) {
    const double nre = re * 1 - im * r, nim = re * r + im * 1;
    re = nre;
    im = nim;
  }
  CHECK(csum[0] == (float)size && csum[1] == (float)(size * (size - 1) / 2));
  CHECK(cprod[0] == (float)re && cprod[1] == (float)im);
  double z[2] = {2.0, (double)rank}, zsum[2];
  MPI_Allreduce(z, zsum, 1, MPI_CXX_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD);
  CHECK(zsum[0] == 2.0 * size && zsum[1] == size * (size - 1) / 2.0);
  MPI_Allreduce(z, zsum, 1, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD);
  CHECK(zsum[0] == 2.0 * size && zsum[1] == size * (size - 1) / 2.0);

  /* MINLOC on pairs of one type: the smallest value is the last rank's. */
  float fr[2] = {(float)(100 - rank), (float)rank}, fmin[2];
  MPI_Allreduce(fr, fmin, 1, MPI_2REAL, MPI_MINLOC, MPI_COMM_WORLD);
  CHECK(fmin[0] == (float)(100 - (size - 1)) && fmin[1] == (float)(size - 1));
  int ir[2] = {rank, rank}, imax[2];
  MPI_Allreduce(ir, imax, 1, MPI_2INTEGER, MPI_MAXLOC, MPI_COMM_WORLD);
  CHECK(imax[0] == size - 1 && imax[1] == size - 1);
  double dr[2] = {(double)rank, (double)rank}, dmin[2];
  MPI_Allreduce(dr, dmin, 1, MPI_2DOUBLE_PRECISION, MPI_MINLOC, MPI_COMM_WORLD);
  CHECK(dmin[0] == 0.0 && dmin[1] == 0.0);

  /* Integer, real and logical reductions. */
  int one = 1, isum = 0, l = rank >= 0, land = 0;
  MPI_Allreduce(&one, &isum, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD);
  CHECK(isum == size);
  MPI_Allreduce(&l, &land, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD);
  CHECK(land != 0);
  double dmax = 0, dv = rank;
  MPI_Allreduce(&dv, &dmax, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD);
  CHECK(dmax == size - 1);
  long long big = 1LL << 40, bsum = 0;
  MPI_Allreduce(&big, &bsum, 1, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD);
  CHECK(bsum == (1LL << 40) * size);

  int all;
  MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  if (all) return 1;
  if (rank == 0) printf("fortran_types: ok (%d ranks)\n", size);
  return 0;
}
