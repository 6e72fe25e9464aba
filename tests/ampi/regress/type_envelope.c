/* MPI_Type_get_envelope / MPI_Type_get_contents give back each constructor's arguments
   (MPICH's datatype/simple-pack.c calls get_envelope), also after the program freed the
   inner type, and a derived type comes back as a new handle that decodes the same way. */
#include <mpi.h>
#include <stdio.h>

static int errs = 0;
#define CHECK(c)                                                        \
  do {                                                                  \
    if (!(c)) {                                                         \
      fprintf(stderr, "type_envelope.c:%d: check failed: %s\n", __LINE__, #c); \
      ++errs;                                                           \
    }                                                                   \
  } while (0)

static void envelope(MPI_Datatype t, int ni, int na, int nt, int combiner) {
  int i = -1, a = -1, d = -1, c = -1;
  CHECK(MPI_Type_get_envelope(t, &i, &a, &d, &c) == MPI_SUCCESS);
  CHECK(i == ni && a == na && d == nt && c == combiner);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  envelope(MPI_FLOAT, 0, 0, 0, MPI_COMBINER_NAMED);

  MPI_Datatype inner, outer, got[2];
  MPI_Type_vector(2, 1, 2, MPI_INT, &inner);
  MPI_Type_vector(3, 4, 5, inner, &outer);
  MPI_Type_free(&inner); /* outer still names it */
  envelope(outer, 3, 0, 1, MPI_COMBINER_VECTOR);
  int ints[8] = {0};
  MPI_Aint addrs[4] = {0};
  CHECK(MPI_Type_get_contents(outer, 8, 4, 2, ints, addrs, got) == MPI_SUCCESS);
  CHECK(ints[0] == 3 && ints[1] == 4 && ints[2] == 5);
  envelope(got[0], 3, 0, 1, MPI_COMBINER_VECTOR); /* the freed inner vector, decoded */
  MPI_Datatype basic[1];
  CHECK(MPI_Type_get_contents(got[0], 8, 4, 1, ints, addrs, basic) == MPI_SUCCESS);
  CHECK(ints[0] == 2 && ints[1] == 1 && ints[2] == 2 && basic[0] == MPI_INT);
  int size = 0;
  MPI_Type_size(got[0], &size);
  CHECK(size == 2 * (int)sizeof(int));
  MPI_Type_free(&got[0]);
  MPI_Type_free(&outer);

  int bl[2] = {1, 3};
  MPI_Aint disp[2] = {0, 8};
  MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE}, st, res;
  MPI_Type_create_struct(2, bl, disp, types, &st);
  envelope(st, 3, 2, 2, MPI_COMBINER_STRUCT);
  CHECK(MPI_Type_get_contents(st, 8, 4, 2, ints, addrs, got) == MPI_SUCCESS);
  CHECK(ints[0] == 2 && ints[1] == 1 && ints[2] == 3 && addrs[0] == 0 && addrs[1] == 8);
  CHECK(got[0] == MPI_INT && got[1] == MPI_DOUBLE);
  MPI_Type_create_resized(st, 0, 64, &res);
  envelope(res, 0, 2, 1, MPI_COMBINER_RESIZED);
  MPI_Type_free(&st);
  MPI_Type_free(&res);

  int idx[3] = {0, 4, 9};
  MPI_Type_create_indexed_block(3, 2, idx, MPI_SHORT, &st);
  envelope(st, 5, 0, 1, MPI_COMBINER_INDEXED_BLOCK);
  MPI_Type_free(&st);

  if (errs == 0) printf("type_envelope: ok\n");
  MPI_Finalize();
  return errs ? 1 : 0;
}
