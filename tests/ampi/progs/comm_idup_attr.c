/* MPI_Comm_idup copies the attributes at the call, as MPI_Comm_dup would then (MPI 3.1
 * §6.4.2): an attribute changed, deleted or added on the parent between the call and
 * MPI_Wait does not change what the new communicator carries. On an intracommunicator and
 * (with 2 or more ranks) an intercommunicator; the copy callback runs once per idup. */
#include "check.h"

struct counts {
  int copies, deletes;
};

/* Copies the value (a pointer to an int) and counts. */
static int count_copy(MPI_Comm comm, int keyval, void* extra, void* in, void* out, int* flag) {
  (void)comm, (void)keyval;
  ((struct counts*)extra)->copies++;
  *(void**)out = in;
  *flag = 1;
  return MPI_SUCCESS;
}
static int count_delete(MPI_Comm comm, int keyval, void* value, void* extra) {
  (void)comm, (void)keyval, (void)value;
  ((struct counts*)extra)->deletes++;
  return MPI_SUCCESS;
}

static void check_attr(struct tctx* t, MPI_Comm c, int keyval, int* want, const char* what) {
  int* got = NULL;
  int flag = -1;
  CHECK_MPI(t, MPI_Comm_get_attr(c, keyval, &got, &flag));
  if (want) {
    CHECK(t, flag == 1, "%s: the attribute is missing", what);
    if (flag) CHECK(t, got == want, "%s: the value is %d, expected %d", what, got ? *got : -1, *want);
  } else {
    CHECK(t, flag == 0, "%s: the attribute is there (value %d), expected none", what, got ? *got : -1);
  }
}

/* The parent's attributes: `changed` (MPI_COMM_DUP_FN) set to a, `deleted` (counted) set to
 * b; idup; then changed -> c, deleted removed, `added` set; wait. */
static void idup_round(struct tctx* t, MPI_Comm parent) {
  int a = 1, b = 2, c = 3, d = 4;
  struct counts n = {0, 0};
  int changed, deleted, added;
  CHECK_MPI(t, MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &changed, NULL));
  CHECK_MPI(t, MPI_Comm_create_keyval(count_copy, count_delete, &deleted, &n));
  CHECK_MPI(t, MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &added, NULL));
  CHECK_MPI(t, MPI_Comm_set_attr(parent, changed, &a));
  CHECK_MPI(t, MPI_Comm_set_attr(parent, deleted, &b));

  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Request req;
  CHECK_MPI(t, MPI_Comm_idup(parent, &dup, &req));
  CHECK_MPI(t, MPI_Comm_set_attr(parent, changed, &c));
  CHECK_MPI(t, MPI_Comm_delete_attr(parent, deleted));
  CHECK_MPI(t, MPI_Comm_set_attr(parent, added, &d));
  CHECK_MPI(t, MPI_Wait(&req, MPI_STATUS_IGNORE));

  check_attr(t, dup, changed, &a, "changed after the call");
  check_attr(t, dup, deleted, &b, "deleted after the call");
  check_attr(t, dup, added, NULL, "added after the call");
  check_attr(t, parent, changed, &c, "the parent's changed one");
  check_attr(t, parent, deleted, NULL, "the parent's deleted one");
  CHECK_EQ(t, n.copies, 1);
  CHECK_EQ(t, n.deletes, 1); /* the parent's */
  /* The new communicator works and is a copy of the parent. */
  int result = -1;
  CHECK_MPI(t, MPI_Comm_compare(parent, dup, &result));
  CHECK_EQ(t, result, MPI_CONGRUENT);
  int one = 1, sum = 0, size = 0;
  CHECK_MPI(t, MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, dup));
  MPI_Comm_size(dup, &size);
  int inter = 0, rsize = 0;
  MPI_Comm_test_inter(dup, &inter);
  if (inter) MPI_Comm_remote_size(dup, &rsize);
  CHECK_EQ(t, sum, inter ? rsize : size);

  CHECK_MPI(t, MPI_Comm_free(&dup));
  CHECK_EQ(t, n.deletes, 2); /* and the copy's, with the communicator */
  MPI_Comm_delete_attr(parent, changed);
  MPI_Comm_delete_attr(parent, added);
  MPI_Comm_free_keyval(&changed);
  MPI_Comm_free_keyval(&deleted);
  MPI_Comm_free_keyval(&added);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "comm_idup_attr");

  t.section = "intracommunicator";
  MPI_Comm parent;
  MPI_Comm_dup(MPI_COMM_WORLD, &parent);
  idup_round(&t, parent);
  MPI_Comm_free(&parent);

  if (t.size >= 2) {
    t.section = "intercommunicator";
    MPI_Comm half, inter;
    MPI_Comm_split(MPI_COMM_WORLD, t.rank % 2, t.rank, &half);
    CHECK_MPI(&t, MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, t.rank % 2 ? 0 : 1, 7, &inter));
    idup_round(&t, inter);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
  }
  return tctx_finish(&t);
}
