/* Datatype attributes (MPI 3.1 §6.7.3): keyvals, set/get/delete, copied by MPI_Type_dup
 * through the copy callback, deleted by MPI_Type_free and by
 * MPI_Type_delete_attr; a failing copy callback fails MPI_Type_dup with MPI_DATATYPE_NULL.
 * Attributes on predefined types too. */
#include <mpi.h>
#include <stdio.h>

static int deleted[16], ndeleted = 0, copies = 0, fail_copy = 0;

static int on_copy(MPI_Datatype t, int keyval, void* extra, void* in, void* out, int* flag) {
  (void)t;
  (void)keyval;
  (void)extra;
  if (fail_copy) return MPI_ERR_OTHER;
  ++copies;
  *(void**)out = (char*)in + 100; /* the copy's value differs, to check it arrived */
  *flag = 1;
  return MPI_SUCCESS;
}

static int on_delete(MPI_Datatype t, int keyval, void* value, void* extra) {
  (void)t;
  (void)keyval;
  (void)extra;
  if (ndeleted < 16) deleted[ndeleted] = (int)(MPI_Aint)value;
  ++ndeleted;
  return MPI_SUCCESS;
}

#define CHECK(c)                                                                \
  do {                                                                          \
    if (!(c)) {                                                                 \
      fprintf(stderr, "type_attr: rank %d: line %d: %s\n", rank, __LINE__, #c); \
      ++errs;                                                                   \
    }                                                                           \
  } while (0)

int main(int argc, char** argv) {
  int rank, size, errs = 0, flag;
  void* v;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

  int k1, k2, k3, kdup;
  MPI_Type_create_keyval(on_copy, on_delete, &k1, NULL);
  MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, on_delete, &k2, NULL);
  MPI_Type_create_keyval(on_copy, on_delete, &k3, NULL);
  MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &kdup, NULL);

  MPI_Datatype t, d;
  MPI_Type_contiguous(2, MPI_INT, &t);
  CHECK(MPI_Type_get_attr(t, k1, &v, &flag) == MPI_SUCCESS && !flag);
  /* Set in the order k3, k1, k2: Type_free deletes k2, k1, k3. */
  MPI_Type_set_attr(t, k3, (void*)(MPI_Aint)(3 + 10 * rank));
  MPI_Type_set_attr(t, k1, (void*)(MPI_Aint)1);
  MPI_Type_set_attr(t, k2, (void*)(MPI_Aint)2);
  MPI_Type_set_attr(t, kdup, (void*)(MPI_Aint)7);
  CHECK(MPI_Type_get_attr(t, k3, &v, &flag) == MPI_SUCCESS && flag && v == (void*)(MPI_Aint)(3 + 10 * rank));

  /* Dup: k1 and k3 through on_copy, kdup as is, k2 not at all. */
  CHECK(MPI_Type_dup(t, &d) == MPI_SUCCESS);
  CHECK(copies == 2);
  CHECK(MPI_Type_get_attr(d, k1, &v, &flag) == MPI_SUCCESS && flag && v == (void*)(MPI_Aint)101);
  CHECK(MPI_Type_get_attr(d, k2, &v, &flag) == MPI_SUCCESS && !flag);
  CHECK(MPI_Type_get_attr(d, kdup, &v, &flag) == MPI_SUCCESS && flag && v == (void*)(MPI_Aint)7);

  /* Replacing a value runs the delete callback of the old one. */
  MPI_Type_set_attr(t, k1, (void*)(MPI_Aint)11);
  CHECK(ndeleted == 1 && deleted[0] == 1);

  /* Delete_attr, then the attribute is gone. */
  ndeleted = 0;
  CHECK(MPI_Type_delete_attr(d, k3) == MPI_SUCCESS && ndeleted == 1 && deleted[0] == 103 + 10 * rank);
  CHECK(MPI_Type_get_attr(d, k3, &v, &flag) == MPI_SUCCESS && !flag);

  /* A failing copy callback fails the dup, and no new type is left (OpenMPI's null handle
   * is a null pointer here). */
  fail_copy = 1;
  MPI_Datatype d2 = MPI_INT;
  CHECK(MPI_Type_dup(d, &d2) != MPI_SUCCESS && (d2 == MPI_DATATYPE_NULL || d2 == (MPI_Datatype)0));
  fail_copy = 0;

  /* Type_free deletes the attributes (d first: a real MPI may keep t alive while its dup lives). */
  ndeleted = 0;
  MPI_Type_free(&d);
  CHECK(ndeleted == 1 && deleted[0] == 101);
  ndeleted = 0;
  MPI_Type_free(&t);
  int seen = 0;
  for (int i = 0; i < ndeleted && i < 16; ++i)
    seen |= deleted[i] == 2 ? 1 : deleted[i] == 11 ? 2 : deleted[i] == 3 + 10 * rank ? 4 : 8;
  CHECK(ndeleted == 3 && seen == 7);

  /* Predefined types take attributes too. */
  MPI_Type_set_attr(MPI_INT, k2, (void*)(MPI_Aint)42);
  CHECK(MPI_Type_get_attr(MPI_INT, k2, &v, &flag) == MPI_SUCCESS && flag && v == (void*)(MPI_Aint)42);
  ndeleted = 0;
  CHECK(MPI_Type_delete_attr(MPI_INT, k2) == MPI_SUCCESS && ndeleted == 1 && deleted[0] == 42);

  MPI_Type_free_keyval(&k1);
  MPI_Type_free_keyval(&k2);
  MPI_Type_free_keyval(&k3);
  MPI_Type_free_keyval(&kdup);
  CHECK(k1 == MPI_KEYVAL_INVALID);

  int all;
  MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  if (all) return 1;
  if (rank == 0) printf("type_attr: ok (%d ranks)\n", size);
  return 0;
}
