// Attributes (keyvals, set/get/delete, copy on dup) and error handlers of communicators.
#include "comm/comms.h"
#include "heap.h"
#include "extensions.h"
#include "checks.h"

#include <algorithm>

namespace ampi::cm {

namespace {
// The object an attribute call names: a communicator or a datatype (`h`), and the
// communicator whose error handler reports its errors.
struct Obj {
  KeyKind kind;
  int h;
  MPI_Comm ec;
};
Obj comm_obj(MPI_Comm c) { return {KeyKind::Comm, c, c}; }
Obj type_obj(MPI_Datatype t) { return {KeyKind::Type, t, MPI_COMM_WORLD}; }

// The attributes of `o` (looked up anew after every callback: a callback may move the tables),
// or null for an invalid communicator; datatypes are checked by their entry points.
Attrs* attrs_of(Obj o) {
  if (o.kind == KeyKind::Type) return &my_comms().type_attrs[o.h];
  CommSlot* s = slot_of(o.h);
  return s ? &s->attrs : nullptr;
}

const char* kind_name(KeyKind k) { return k == KeyKind::Comm ? "communicator" : "datatype"; }

// A keyval of o's kind the program still holds.
Keyval* keyval_of(Obj o, int keyval) {
  Keyval* kv = keyval_get(keyval);
  return kv && kv->kind == o.kind ? kv : nullptr;
}

// Like keyval_of, also a freed keyval that attributes still use.
bool keyval_usable(Obj o, int keyval) {
  return keyval_live(keyval) && my_comms().keyvals[static_cast<std::size_t>(keyval)].kind == o.kind;
}

int bad_keyval(Obj o, int keyval, const char* fn) {
  return error(o.ec, MPI_ERR_KEYVAL, fn, "invalid %s keyval %d", kind_name(o.kind), keyval);
}

int set(Obj o, int keyval, void* value, const char* fn) {
  Attrs* a = attrs_of(o);
  if (!a) return bad_comm(o.h, fn);
  if (o.kind == KeyKind::Comm && keyval > 0 && keyval < kFirstUserKeyval)
    return error(o.ec, MPI_ERR_KEYVAL, fn, "keyval %d is predefined: its attribute cannot be set", keyval);
  Keyval* kv = keyval_of(o, keyval);
  if (!kv) return bad_keyval(o, keyval, fn);
  auto it = attr_find(*a, keyval);
  if (it != a->end()) {
    void* old = it->second;
    if (kv->del) {
      if (int e = user_call([&] { return kv->del(o.h, keyval, old, kv->extra); }))
        return error(o.ec, e, fn, "the delete callback of keyval %d failed (%d)", keyval, e);
    }
    a = attrs_of(o);  // a replaced value keeps its place in the set order
    it = attr_find(*a, keyval);
    if (it != a->end()) {
      it->second = value;
      return MPI_SUCCESS;
    }
    // the callback deleted it: set it anew (its keyval reference went with it)
  }
  ++keyval_get(keyval)->refs;
  a->emplace_back(keyval, value);
  return MPI_SUCCESS;
}

int get(Obj o, int keyval, void* value, int* flag, const char* fn) {
  Attrs* a = attrs_of(o);
  if (!a) return bad_comm(o.h, fn);
  if (!value) return null_arg(o.ec, fn, "attribute_val");
  if (!flag) return null_arg(o.ec, fn, "flag");
  // Predefined attributes: a pointer to the int value (on every communicator).
  if (o.kind == KeyKind::Comm && keyval > 0 && keyval < kFirstUserKeyval) {
    CommTable& t = my_comms();
    if (!t.attr_copy) {
      heap::UserScope user(nullptr);  // the running rank's heap
      t.attr_copy = reinterpret_cast<std::uintptr_t>(std::calloc(kFirstUserKeyval, sizeof(int)));
      if (!t.attr_copy) return error(o.ec, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    int* copy = reinterpret_cast<int*>(t.attr_copy);
    place_attributes(t.attr_values);  // AMPI_MY_WTH & co.: where the rank runs now
    std::memcpy(copy, t.attr_values, sizeof t.attr_values);
    *static_cast<void**>(value) = &copy[keyval];
    *flag = 1;
    return MPI_SUCCESS;
  }
  if (!keyval_usable(o, keyval)) return bad_keyval(o, keyval, fn);
  auto it = attr_find(*a, keyval);
  *flag = it != a->end();
  if (*flag) *static_cast<void**>(value) = it->second;
  return MPI_SUCCESS;
}

int del(Obj o, int keyval, const char* fn) {
  Attrs* a = attrs_of(o);
  if (!a) return bad_comm(o.h, fn);
  if (!keyval_usable(o, keyval)) return bad_keyval(o, keyval, fn);
  auto it = attr_find(*a, keyval);
  if (it == a->end()) return error(o.ec, MPI_ERR_KEYVAL, fn, "no attribute for keyval %d", keyval);
  const Keyval kv = my_comms().keyvals[static_cast<std::size_t>(keyval)];
  if (kv.del) {
    if (int e = user_call([&] { return kv.del(o.h, keyval, it->second, kv.extra); }))
      return error(o.ec, e, fn, "the delete callback of keyval %d failed (%d)", keyval, e);
  }
  a = attrs_of(o);
  if (auto at = attr_find(*a, keyval); at != a->end()) a->erase(at);
  keyval_release(keyval);
  return MPI_SUCCESS;
}

// Copies the attributes of `from` by their copy callbacks into `out` (MPI_Comm_dup,
// MPI_Comm_idup at its call, MPI_Type_dup); each copy holds its keyval. What was copied
// before a failing callback stays in `out`.
int copy_out(Obj from, Attrs& out, const char* fn) {
  const Attrs attrs = *attrs_of(from);  // callbacks may change the table
  for (const auto& [k, v] : attrs) {
    const Keyval kv = my_comms().keyvals[static_cast<std::size_t>(k)];
    if (kv.copy == MPI_COMM_NULL_COPY_FN) continue;
    void* got = v;
    int flag = 1;
    if (kv.copy != MPI_COMM_DUP_FN) {
      flag = 0;
      if (int e = user_call([&] { return kv.copy(from.h, k, kv.extra, v, &got, &flag); }))
        return error(from.ec, e, fn, "the copy callback of keyval %d failed (%d)", k, e);
    }
    if (flag) {
      ++my_comms().keyvals[static_cast<std::size_t>(k)].refs;
      out.emplace_back(k, got);
    }
  }
  return MPI_SUCCESS;
}

// Copies the attributes of `from` onto the new `to`.
int copy_all(Obj from, Obj to, const char* fn) {
  Attrs got;
  const int e = copy_out(from, got, fn);
  Attrs* a = attrs_of(to);
  a->insert(a->end(), got.begin(), got.end());
  return e;
}

// Deletes every attribute of `o`, the last set first; the first failing callback's code.
int delete_all(Obj o) {
  int rc = MPI_SUCCESS;
  for (;;) {
    Attrs* a = attrs_of(o);
    if (!a || a->empty()) break;
    const auto [k, v] = a->back();
    a->pop_back();
    const Keyval kv = my_comms().keyvals[static_cast<std::size_t>(k)];  // a callback may move the table
    if (kv.del) {
      const int e = user_call([&] { return kv.del(o.h, k, v, kv.extra); });
      if (e && !rc) rc = e;
    }
    keyval_release(k);
  }
  return rc;
}
}  // namespace

}  // namespace ampi::cm

namespace ampi {
int type_attrs_copy(MPI_Datatype from, MPI_Datatype to, const char* fn) {
  return cm::copy_all(cm::type_obj(from), cm::type_obj(to), fn);
}
int type_attrs_delete(MPI_Datatype t) {
  CommTable& tab = my_comms();
  auto it = tab.type_attrs.find(t);
  if (it == tab.type_attrs.end()) return MPI_SUCCESS;
  const int rc = cm::delete_all(cm::type_obj(t));
  my_comms().type_attrs.erase(t);  // the handle may be given to a new type
  return rc;
}
}  // namespace ampi

namespace ampi::cm {
int attr_set(MPI_Comm comm, int keyval, void* value, const char* fn) { return set(comm_obj(comm), keyval, value, fn); }
int attr_get(MPI_Comm comm, int keyval, void* value, int* flag, const char* fn) {
  return get(comm_obj(comm), keyval, value, flag, fn);
}
int attr_delete(MPI_Comm comm, int keyval, const char* fn) { return del(comm_obj(comm), keyval, fn); }
int attrs_copy(MPI_Comm from, MPI_Comm to, const char* fn) { return copy_all(comm_obj(from), comm_obj(to), fn); }
int attrs_copy_out(MPI_Comm from, Attrs* out, const char* fn) { return copy_out(comm_obj(from), *out, fn); }

// MPI_Finalize's first step (MPI 3.1 §8.7.1), as MPI_Comm_free of `comm` (MPI_COMM_SELF)
// would do it: every attribute's delete callback runs, the last set first, also for keyvals
// the program freed already (their attributes kept them); the communicator stays.
int attrs_delete_all(MPI_Comm comm) { return delete_all(comm_obj(comm)); }

// A user keyval that still has a handle or attributes (a freed one keeps its attributes).
bool keyval_live(int keyval) {
  CommTable& t = my_comms();
  return keyval >= kFirstUserKeyval && static_cast<std::size_t>(keyval) < t.keyvals.size() &&
         t.keyvals[static_cast<std::size_t>(keyval)].refs != 0;
}

int keyval_create(MPI_Comm_copy_attr_function* copy, MPI_Comm_delete_attr_function* del, int* keyval, void* extra,
                  const char* fn, KeyKind kind) {
  if (!keyval) return null_arg(MPI_COMM_NULL, fn, "keyval");
  CommTable& t = my_comms();
  const std::size_t k = free_slot<Keyval>(t.keyvals, kFirstUserKeyval, [](const Keyval& kv) { return kv.refs == 0; });
  t.keyvals[k] = Keyval{copy, del, extra, 1, false, kind};
  *keyval = static_cast<int>(k);
  return MPI_SUCCESS;
}

int keyval_free(int* keyval, const char* fn, KeyKind kind) {
  if (!keyval) return null_arg(MPI_COMM_NULL, fn, "keyval");
  Keyval* kv = keyval_get(*keyval);
  if (!kv || kv->kind != kind)
    return error(MPI_COMM_NULL, MPI_ERR_KEYVAL, fn, "invalid %s keyval %d", kind_name(kind), *keyval);
  kv->freed = true;
  keyval_release(*keyval);
  *keyval = MPI_KEYVAL_INVALID;
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

// ---- datatype attributes: the communicator machinery on the rank's per-type lists -------------
int PMPI_Type_create_keyval(MPI_Type_copy_attr_function* type_copy_attr_fn,
                            MPI_Type_delete_attr_function* type_delete_attr_fn, int* type_keyval, void* extra_state) {
  return keyval_create(type_copy_attr_fn, type_delete_attr_fn, type_keyval, extra_state, "MPI_Type_create_keyval",
                       KeyKind::Type);
}
int PMPI_Type_free_keyval(int* type_keyval) { return keyval_free(type_keyval, "MPI_Type_free_keyval", KeyKind::Type); }
int PMPI_Type_set_attr(MPI_Datatype datatype, int type_keyval, void* attribute_val) {
  const char* fn = "MPI_Type_set_attr";
  if (int rc = check_type(MPI_COMM_WORLD, fn, "datatype", datatype)) return rc;
  return set(type_obj(datatype), type_keyval, attribute_val, fn);
}
int PMPI_Type_get_attr(MPI_Datatype datatype, int type_keyval, void* attribute_val, int* flag) {
  const char* fn = "MPI_Type_get_attr";
  if (int rc = check_type(MPI_COMM_WORLD, fn, "datatype", datatype)) return rc;
  return get(type_obj(datatype), type_keyval, attribute_val, flag, fn);
}
int PMPI_Type_delete_attr(MPI_Datatype datatype, int type_keyval) {
  const char* fn = "MPI_Type_delete_attr";
  if (int rc = check_type(MPI_COMM_WORLD, fn, "datatype", datatype)) return rc;
  return del(type_obj(datatype), type_keyval, fn);
}

}  // extern "C"
#pragma GCC visibility pop
