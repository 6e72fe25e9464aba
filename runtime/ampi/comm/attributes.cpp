// Attributes (keyvals, set/get/delete, copy on dup) and error handlers of communicators.
#include "comm/comms.h"
#include "checks.h"

#include <iterator>

namespace ampi::cm {

// Attribute calls shared by the MPI-1 and MPI-2 names.
int attr_set(MPI_Comm comm, int keyval, void* value, const char* fn) {
  CommSlot* s = slot_of(comm);
  if (!s) return bad_comm(comm, fn);
  if (keyval > 0 && keyval < kFirstUserKeyval)
    return error(comm, MPI_ERR_KEYVAL, fn, "keyval %d is predefined: its attribute cannot be set", keyval);
  Keyval* kv = keyval_get(keyval);
  if (!kv) return error(comm, MPI_ERR_KEYVAL, fn, "invalid keyval %d", keyval);
  auto it = s->attrs.find(keyval);
  if (it != s->attrs.end()) {
    void* old = it->second;
    if (kv->del) {
      if (int e = kv->del(comm, keyval, old, kv->extra))
        return error(comm, e, fn, "the delete callback of keyval %d failed (%d)", keyval, e);
    }
    s = slot_of(comm);
    s->attrs[keyval] = value;
    return MPI_SUCCESS;
  }
  ++kv->refs;
  s->attrs[keyval] = value;
  return MPI_SUCCESS;
}

// MPI_Finalize's first step (MPI 3.1 §8.7.1), as MPI_Comm_free of `comm` (MPI_COMM_SELF)
// would do it: every attribute's delete callback runs, newest keyval first, also for keyvals
// the program freed already (their attributes kept them); the communicator stays.
int attrs_delete_all(MPI_Comm comm) {
  int rc = MPI_SUCCESS;
  for (;;) {
    CommSlot* s = slot_of(comm);
    if (!s || s->attrs.empty()) return rc;
    auto it = std::prev(s->attrs.end());
    const int k = it->first;
    void* v = it->second;
    s->attrs.erase(it);
    const Keyval kv = my_comms().keyvals[static_cast<std::size_t>(k)];  // a callback may move the table
    if (kv.del) {
      const int e = kv.del(comm, k, v, kv.extra);
      if (e && !rc) rc = e;
    }
    keyval_release(k);
  }
}

// A user keyval that still has a handle or attributes (a freed one keeps its attributes).
bool keyval_live(int keyval) {
  CommTable& t = my_comms();
  return keyval >= kFirstUserKeyval && static_cast<std::size_t>(keyval) < t.keyvals.size() &&
         t.keyvals[static_cast<std::size_t>(keyval)].refs != 0;
}

int attr_get(MPI_Comm comm, int keyval, void* value, int* flag, const char* fn) {
  CommSlot* s = slot_of(comm);
  if (!s) return bad_comm(comm, fn);
  if (!value) return null_arg(comm, fn, "attribute_val");
  if (!flag) return null_arg(comm, fn, "flag");
  // Predefined attributes: a pointer to the int value (on every communicator).
  if (keyval > 0 && keyval < kFirstUserKeyval) {
    *static_cast<void**>(value) = &my_comms().attr_values[keyval];
    *flag = 1;
    return MPI_SUCCESS;
  }
  if (!keyval_live(keyval)) return error(comm, MPI_ERR_KEYVAL, fn, "invalid keyval %d", keyval);
  auto it = s->attrs.find(keyval);
  *flag = it != s->attrs.end();
  if (*flag) *static_cast<void**>(value) = it->second;
  return MPI_SUCCESS;
}

int attr_delete(MPI_Comm comm, int keyval, const char* fn) {
  CommSlot* s = slot_of(comm);
  if (!s) return bad_comm(comm, fn);
  if (!keyval_live(keyval)) return error(comm, MPI_ERR_KEYVAL, fn, "invalid keyval %d", keyval);
  auto it = s->attrs.find(keyval);
  if (it == s->attrs.end()) return error(comm, MPI_ERR_KEYVAL, fn, "no attribute for keyval %d", keyval);
  Keyval& kv = my_comms().keyvals[static_cast<std::size_t>(keyval)];
  if (kv.del) {
    if (int e = kv.del(comm, keyval, it->second, kv.extra))
      return error(comm, e, fn, "the delete callback of keyval %d failed (%d)", keyval, e);
  }
  slot_of(comm)->attrs.erase(keyval);
  keyval_release(keyval);
  return MPI_SUCCESS;
}

int keyval_create(MPI_Comm_copy_attr_function* copy, MPI_Comm_delete_attr_function* del, int* keyval, void* extra,
                  const char* fn) {
  if (!keyval) return null_arg(MPI_COMM_NULL, fn, "keyval");
  CommTable& t = my_comms();
  const std::size_t k = free_slot<Keyval>(t.keyvals, kFirstUserKeyval, [](const Keyval& kv) { return kv.refs == 0; });
  t.keyvals[k] = Keyval{copy, del, extra, 1, false};
  *keyval = static_cast<int>(k);
  return MPI_SUCCESS;
}

int keyval_free(int* keyval, const char* fn) {
  if (!keyval) return null_arg(MPI_COMM_NULL, fn, "keyval");
  if (!keyval_get(*keyval)) return error(MPI_COMM_NULL, MPI_ERR_KEYVAL, fn, "invalid keyval %d", *keyval);
  my_comms().keyvals[static_cast<std::size_t>(*keyval)].freed = true;
  keyval_release(*keyval);
  *keyval = MPI_KEYVAL_INVALID;
  return MPI_SUCCESS;
}

// Copies the attributes of `from` onto the new `to` (MPI_Comm_dup) by their copy callbacks.
int attrs_copy(MPI_Comm from, MPI_Comm to, const char* fn) {
  const std::map<int, void*> attrs = slot_of(from)->attrs;  // callbacks may change the table
  for (const auto& [k, v] : attrs) {
    Keyval kv = my_comms().keyvals[static_cast<std::size_t>(k)];
    if (kv.copy == MPI_COMM_NULL_COPY_FN) continue;
    void* out = v;
    int flag = 1;
    if (kv.copy != MPI_COMM_DUP_FN) {
      flag = 0;
      if (int e = kv.copy(from, k, kv.extra, v, &out, &flag))
        return error(from, e, fn, "the copy callback of keyval %d failed (%d)", k, e);
    }
    if (flag) {
      ++my_comms().keyvals[static_cast<std::size_t>(k)].refs;
      slot_of(to)->attrs[k] = out;
    }
  }
  return MPI_SUCCESS;
}

int errhandler_set(MPI_Comm comm, MPI_Errhandler h, const char* fn) {
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  if (!errh_valid(h)) return error(comm, MPI_ERR_ARG, fn, "invalid error handler %d", h);
  errh_ref(h);
  errh_unref(c->errhandler);
  c->errhandler = h;
  return MPI_SUCCESS;
}

int errhandler_get(MPI_Comm comm, MPI_Errhandler* h, const char* fn) {
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  if (!h) return null_arg(comm, fn, "errhandler");
  *h = c->errhandler;
  errh_ref(*h);  // a new reference: the user frees it with MPI_Errhandler_free
  return MPI_SUCCESS;
}

int errhandler_create(MPI_Comm_errhandler_function* f, MPI_Errhandler* h, const char* fn) {
  if (!f) return null_arg(MPI_COMM_NULL, fn, "function");
  if (!h) return null_arg(MPI_COMM_NULL, fn, "errhandler");
  CommTable& t = my_comms();
  const std::size_t i = free_slot<Errh>(t.errhs, kFirstUserErrh, [](const Errh& e) { return e.refs == 0; });
  t.errhs[i] = Errh{f, 1};
  *h = static_cast<MPI_Errhandler>(i);
  return MPI_SUCCESS;
}

}  // namespace ampi::cm

using namespace ampi;
using namespace ampi::cm;

#pragma GCC visibility push(default)
extern "C" {

// ---- error handlers ------------------------------------------------------------------
int PMPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler) {
  return errhandler_set(comm, errhandler, "MPI_Comm_set_errhandler");
}
int PMPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler) {
  return errhandler_set(comm, errhandler, "MPI_Errhandler_set");
}
int PMPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler* errhandler) {
  return errhandler_get(comm, errhandler, "MPI_Comm_get_errhandler");
}
int PMPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler* errhandler) {
  return errhandler_get(comm, errhandler, "MPI_Errhandler_get");
}
int PMPI_Comm_create_errhandler(MPI_Comm_errhandler_function* function, MPI_Errhandler* errhandler) {
  return errhandler_create(function, errhandler, "MPI_Comm_create_errhandler");
}
int PMPI_Errhandler_create(MPI_Handler_function* function, MPI_Errhandler* errhandler) {
  return errhandler_create(function, errhandler, "MPI_Errhandler_create");
}
int PMPI_Errhandler_free(MPI_Errhandler* errhandler) {
  const char* fn = "MPI_Errhandler_free";
  if (!errhandler) return null_arg(MPI_COMM_NULL, fn, "errhandler");
  if (!errh_valid(*errhandler)) return error(MPI_COMM_NULL, MPI_ERR_ARG, fn, "invalid error handler %d", *errhandler);
  errh_unref(*errhandler);  // communicators using it keep it alive
  *errhandler = MPI_ERRHANDLER_NULL;
  return MPI_SUCCESS;
}

// ---- attributes ------------------------------------------------------------------------
int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function* comm_copy_attr_fn,
                            MPI_Comm_delete_attr_function* comm_delete_attr_fn, int* comm_keyval, void* extra_state) {
  return keyval_create(comm_copy_attr_fn, comm_delete_attr_fn, comm_keyval, extra_state, "MPI_Comm_create_keyval");
}
int PMPI_Keyval_create(MPI_Copy_function* copy_fn, MPI_Delete_function* delete_fn, int* keyval, void* extra_state) {
  return keyval_create(copy_fn, delete_fn, keyval, extra_state, "MPI_Keyval_create");
}
int PMPI_Comm_free_keyval(int* comm_keyval) { return keyval_free(comm_keyval, "MPI_Comm_free_keyval"); }
int PMPI_Keyval_free(int* keyval) { return keyval_free(keyval, "MPI_Keyval_free"); }
int PMPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void* attribute_val) {
  return attr_set(comm, comm_keyval, attribute_val, "MPI_Comm_set_attr");
}
int PMPI_Attr_put(MPI_Comm comm, int keyval, void* attribute_val) {
  return attr_set(comm, keyval, attribute_val, "MPI_Attr_put");
}
int PMPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void* attribute_val, int* flag) {
  return attr_get(comm, comm_keyval, attribute_val, flag, "MPI_Comm_get_attr");
}
int PMPI_Attr_get(MPI_Comm comm, int keyval, void* attribute_val, int* flag) {
  return attr_get(comm, keyval, attribute_val, flag, "MPI_Attr_get");
}
int PMPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval) {
  return attr_delete(comm, comm_keyval, "MPI_Comm_delete_attr");
}
int PMPI_Attr_delete(MPI_Comm comm, int keyval) { return attr_delete(comm, keyval, "MPI_Attr_delete"); }

}  // extern "C"
#pragma GCC visibility pop
