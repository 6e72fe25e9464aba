/* Errors the program defines and raises, and generalized requests (MPI-3.1 8.4-8.5, 12.2):
 * Add_error_class/code/string with Error_class/Error_string and MPI_LASTUSEDCODE (OpenMPI 4.1
 * gives MPI_ERR_UNKNOWN as the class of an added class, so that is not checked);
 * Comm_call_errhandler with a user handler and MPI_ERRORS_RETURN; Grequest_start/complete
 * with Wait, Test, Request_get_status, Waitall, Request_free before completion, and Cancel
 * (query_fn gives the status, free_fn runs once). */
#include "check.h"

struct greq_state {
  int id, queried, freed, cancelled, cancel_complete;
};

static int query_fn(void* extra, MPI_Status* st) {
  struct greq_state* s = extra;
  s->queried++;
  MPI_Status_set_elements(st, MPI_BYTE, 40 + s->id);
  MPI_Status_set_cancelled(st, s->cancelled);
  st->MPI_SOURCE = MPI_UNDEFINED;
  st->MPI_TAG = MPI_UNDEFINED;
  return MPI_SUCCESS;
}
static int free_fn(void* extra) {
  ((struct greq_state*)extra)->freed++;
  return MPI_SUCCESS;
}
static int cancel_fn(void* extra, int complete) {
  struct greq_state* s = extra;
  s->cancelled = 1;
  s->cancel_complete = complete;
  return MPI_SUCCESS;
}

static void test_user_errors(struct tctx* t) {
  t->section = "add_error";
  int cls = -1, code = -1, code2 = -1, c = -1, len = 0, flag = 0;
  char str[MPI_MAX_ERROR_STRING];
  CHECK_MPI(t, MPI_Add_error_class(&cls));
  CHECK(t, cls > MPI_ERR_LASTCODE, "new class %d is not above MPI_ERR_LASTCODE", cls);
  CHECK_MPI(t, MPI_Add_error_code(cls, &code));
  CHECK(t, code != cls && code > MPI_ERR_LASTCODE, "code %d", code);
  CHECK_MPI(t, MPI_Add_error_string(code, "my own error"));
  CHECK_MPI(t, MPI_Add_error_string(cls, "my own class"));
  CHECK_MPI(t, MPI_Error_string(code, str, &len));
  CHECK(t, strcmp(str, "my own error") == 0, "Error_string gave \"%s\"", str);
  CHECK_EQ(t, len, (int)strlen("my own error"));
  MPI_Error_string(cls, str, &len);
  CHECK(t, strcmp(str, "my own class") == 0, "Error_string(class) gave \"%s\"", str);
  CHECK_MPI(t, MPI_Error_class(code, &c));
  CHECK_EQ(t, c, cls);
  CHECK_MPI(t, MPI_Add_error_code(MPI_ERR_ARG, &code2));
  MPI_Error_class(code2, &c);
  CHECK_EQ(t, c, MPI_ERR_ARG);
  int* last = NULL;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag);
  CHECK(t, flag && last && *last >= code2, "MPI_LASTUSEDCODE %d, last code %d", last ? *last : -1, code2);
}

static void handler(MPI_Comm* comm, int* code, ...) {
  int* seen = NULL;
  int flag = 0, keyval = 0;
  (void)keyval;
  MPI_Comm_get_attr(*comm, MPI_TAG_UB, &seen, &flag);  /* the comm is usable in the handler */
  (void)seen;
  /* Record the code in the comm's name (no globals: ranks may share a process). */
  char name[MPI_MAX_OBJECT_NAME];
  snprintf(name, sizeof name, "handled %d", *code);
  MPI_Comm_set_name(*comm, name);
}

static void test_call_errhandler(struct tctx* t) {
  t->section = "comm_call_errhandler";
  MPI_Comm d;
  MPI_Comm_dup(MPI_COMM_WORLD, &d);
  MPI_Errhandler eh;
  MPI_Comm_create_errhandler(handler, &eh);
  MPI_Comm_set_errhandler(d, eh);
  int cls = 0, code = 0;
  MPI_Add_error_class(&cls);
  MPI_Add_error_code(cls, &code);
  CHECK_MPI(t, MPI_Comm_call_errhandler(d, code));
  char name[MPI_MAX_OBJECT_NAME], want[MPI_MAX_OBJECT_NAME];
  int len = 0;
  MPI_Comm_get_name(d, name, &len);
  snprintf(want, sizeof want, "handled %d", code);
  CHECK(t, strcmp(name, want) == 0, "handler not called with the code: name \"%s\"", name);
  MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
  CHECK_MPI(t, MPI_Comm_call_errhandler(d, code));  /* the handler "was successfully called" */
  MPI_Errhandler_free(&eh);
  MPI_Comm_free(&d);
}

static void test_grequest(struct tctx* t) {
  t->section = "grequest_wait";
  struct greq_state s[4];
  memset(s, 0, sizeof s);
  for (int i = 0; i < 4; i++) s[i].id = i;
  MPI_Request r;
  MPI_Status st;
  int count = -1, flag = -1;
  CHECK_MPI(t, MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s[0], &r));
  CHECK_MPI(t, MPI_Grequest_complete(r));
  CHECK_MPI(t, MPI_Wait(&r, &st));
  CHECK(t, r == MPI_REQUEST_NULL, "Wait left the request");
  MPI_Get_count(&st, MPI_BYTE, &count);
  CHECK_EQ(t, count, 40);
  CHECK_EQ(t, s[0].queried, 1);
  CHECK_EQ(t, s[0].freed, 1);

  t->section = "grequest_test";
  MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s[1], &r);
  CHECK_MPI(t, MPI_Test(&r, &flag, &st));
  CHECK_EQ(t, flag, 0);
  CHECK_EQ(t, s[1].freed, 0);
  MPI_Grequest_complete(r);
  /* Request_get_status asks query_fn too, and leaves the request. */
  flag = -1;
  CHECK_MPI(t, MPI_Request_get_status(r, &flag, &st));
  CHECK_EQ(t, flag, 1);
  MPI_Get_count(&st, MPI_BYTE, &count);
  CHECK_EQ(t, count, 41);
  CHECK_EQ(t, s[1].freed, 0);
  CHECK_MPI(t, MPI_Test(&r, &flag, &st));
  CHECK_EQ(t, flag, 1);
  MPI_Get_count(&st, MPI_BYTE, &count);
  CHECK_EQ(t, count, 41);
  CHECK_EQ(t, s[1].freed, 1);

  t->section = "grequest_waitall";
  MPI_Request two[2];
  MPI_Status sts[2];
  MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s[2], &two[0]);
  MPI_Grequest_start(query_fn, free_fn, cancel_fn, &s[3], &two[1]);
  MPI_Grequest_complete(two[1]);
  MPI_Grequest_complete(two[0]);
  CHECK_MPI(t, MPI_Waitall(2, two, sts));
  MPI_Get_count(&sts[1], MPI_BYTE, &count);
  CHECK_EQ(t, count, 43);
  CHECK(t, s[2].freed == 1 && s[3].freed == 1, "free_fn calls %d %d", s[2].freed, s[3].freed);

  t->section = "grequest_free_cancel";
  struct greq_state f;
  memset(&f, 0, sizeof f);
  MPI_Grequest_start(query_fn, free_fn, cancel_fn, &f, &r);
  MPI_Request keep = r;
  CHECK_MPI(t, MPI_Cancel(&r));
  CHECK(t, f.cancelled && !f.cancel_complete, "cancel_fn: called %d, complete %d", f.cancelled, f.cancel_complete);
  CHECK_MPI(t, MPI_Request_free(&r));
  CHECK_EQ(t, f.freed, 0);
  CHECK_MPI(t, MPI_Grequest_complete(keep));
  CHECK_EQ(t, f.freed, 1);
  CHECK_EQ(t, f.queried, 0);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct tctx t;
  tctx_init(&t, "errhan_ext");
  test_user_errors(&t);
  test_call_errhandler(&t);
  test_grequest(&t);
  return tctx_finish(&t);
}
