// Datatype queries and life: commit, free, envelope/contents, size, extent, bounds, names,
// addresses, MPI_Type_match_size.
#include "datatype/type.h"
#include "checks.h"
#include "pt2pt/status.h"

#include <climits>

namespace ampi::dt {


int get_extent(MPI_Datatype t, MPI_Aint* lb, MPI_Aint* extent, bool true_extent, const char* fn) {
  if (int rc = check_type(MPI_COMM_WORLD, fn, "datatype", t)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, true_extent ? "true_lb" : "lb", lb)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, true_extent ? "true_extent" : "extent", extent)) return rc;
  const Layout& l = layout(t);
  *lb = true_extent ? l.true_lb : l.lb;
  *extent = true_extent ? l.true_ub - l.true_lb : l.extent();
  return MPI_SUCCESS;
}

// The one-value queries (MPI_Type_extent, _lb, _ub).
int get_bound(MPI_Datatype t, MPI_Aint* out, MPI_Aint (*pick)(const Layout&), const char* fn, const char* what) {
  if (int rc = check_type(MPI_COMM_WORLD, fn, "datatype", t)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, what, out)) return rc;
  *out = pick(layout(t));
  return MPI_SUCCESS;
}
}  // namespace ampi::dt

using namespace ampi;
using namespace ampi::dt;

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Type_commit(MPI_Datatype* datatype) {
  const char* fn = "MPI_Type_commit";
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "datatype", datatype)) return rc;
  if (int rc = check_type(MPI_COMM_WORLD, fn, "datatype", *datatype)) return rc;
  Type* t = live(*datatype);
  if (!t->predefined) t->committed = true;
  return MPI_SUCCESS;
}

int PMPI_Type_free(MPI_Datatype* datatype) {
  const char* fn = "MPI_Type_free";
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "datatype", datatype)) return rc;
  if (int rc = check_type(MPI_COMM_WORLD, fn, "datatype", *datatype)) return rc;
  Type* t = live(*datatype);
  if (t->predefined)
    return error(MPI_COMM_WORLD, MPI_ERR_TYPE, fn, "%s is predefined and cannot be freed", kBasics[*datatype].name);
  const int del = type_attrs_delete(*datatype);  // the callbacks see the type still valid
  t->freed = true;
  type_release(*datatype);
  *datatype = MPI_DATATYPE_NULL;
  if (del) return error(MPI_COMM_WORLD, del, fn, "an attribute delete callback failed (%d)", del);
  return MPI_SUCCESS;
}

int PMPI_Type_get_envelope(MPI_Datatype datatype, int* num_integers, int* num_addresses, int* num_datatypes,
                           int* combiner) {
  const char* fn = "MPI_Type_get_envelope";
  if (int rc = check_type(MPI_COMM_WORLD, fn, "datatype", datatype)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "num_integers", num_integers)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "num_addresses", num_addresses)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "num_datatypes", num_datatypes)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "combiner", combiner)) return rc;
  const Recipe& r = live(datatype)->recipe;
  *num_integers = static_cast<int>(r.ints.size());
  *num_addresses = static_cast<int>(r.addrs.size());
  *num_datatypes = static_cast<int>(r.types.size());
  *combiner = r.combiner;
  return MPI_SUCCESS;
}

int PMPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses, int max_datatypes,
                           int array_of_integers[], MPI_Aint array_of_addresses[],
                           MPI_Datatype array_of_datatypes[]) {
  const char* fn = "MPI_Type_get_contents";
  if (int rc = check_type(MPI_COMM_WORLD, fn, "datatype", datatype)) return rc;
  Type* t = live(datatype);
  if (t->predefined)
    return error(MPI_COMM_WORLD, MPI_ERR_TYPE, fn, "%s is predefined (MPI_COMBINER_NAMED): it has no contents",
                 kBasics[datatype].name);
  const Recipe& r = t->recipe;
  if (max_integers < static_cast<int>(r.ints.size()) || max_addresses < static_cast<int>(r.addrs.size()) ||
      max_datatypes < static_cast<int>(r.types.size()))
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn,
                 "the arrays are too small: %s needs %zu integers, %zu addresses and %zu datatypes "
                 "(MPI_Type_get_envelope says how many)",
                 type_name(datatype).c_str(), r.ints.size(), r.addrs.size(), r.types.size());
  if (!r.ints.empty())
    if (int rc = check_ptr(MPI_COMM_WORLD, fn, "array_of_integers", array_of_integers)) return rc;
  if (!r.addrs.empty())
    if (int rc = check_ptr(MPI_COMM_WORLD, fn, "array_of_addresses", array_of_addresses)) return rc;
  if (!r.types.empty())
    if (int rc = check_ptr(MPI_COMM_WORLD, fn, "array_of_datatypes", array_of_datatypes)) return rc;
  std::copy(r.ints.begin(), r.ints.end(), array_of_integers);
  std::copy(r.addrs.begin(), r.addrs.end(), array_of_addresses);
  // MPI: a derived datatype comes back as a new handle the program frees; it is the same
  // type (layout, recipe, committed state), so decoding can go on from it.
  for (std::size_t i = 0; i < r.types.size(); ++i) {
    MPI_Datatype used = r.types[i];
    Type* u = find(used);
    if (u->predefined) {
      array_of_datatypes[i] = used;
      continue;
    }
    if (int rc = new_handle(u->l, u->recipe, &array_of_datatypes[i], fn)) return rc;
    find(array_of_datatypes[i])->committed = u->committed;
  }
  return MPI_SUCCESS;
}

int PMPI_Type_size(MPI_Datatype datatype, int* size) {
  const char* fn = "MPI_Type_size";
  if (int rc = check_type(MPI_COMM_WORLD, fn, "datatype", datatype)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "size", size)) return rc;
  std::size_t s = type_size(datatype);
  *size = s > static_cast<std::size_t>(INT_MAX) ? MPI_UNDEFINED : static_cast<int>(s);
  return MPI_SUCCESS;
}

int PMPI_Type_size_x(MPI_Datatype datatype, MPI_Count* size) {
  const char* fn = "MPI_Type_size_x";
  if (int rc = check_type(MPI_COMM_WORLD, fn, "datatype", datatype)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "size", size)) return rc;
  *size = static_cast<MPI_Count>(type_size(datatype));
  return MPI_SUCCESS;
}

int PMPI_Type_size_c(MPI_Datatype datatype, MPI_Count* size) { return PMPI_Type_size_x(datatype, size); }

int PMPI_Type_extent(MPI_Datatype datatype, MPI_Aint* extent) {
  return get_bound(datatype, extent, [](const Layout& l) -> MPI_Aint { return l.extent(); }, "MPI_Type_extent",
                   "extent");
}

int PMPI_Type_lb(MPI_Datatype datatype, MPI_Aint* displacement) {
  return get_bound(datatype, displacement, [](const Layout& l) -> MPI_Aint { return l.lb; }, "MPI_Type_lb",
                   "displacement");
}

int PMPI_Type_ub(MPI_Datatype datatype, MPI_Aint* displacement) {
  return get_bound(datatype, displacement, [](const Layout& l) -> MPI_Aint { return l.ub; }, "MPI_Type_ub",
                   "displacement");
}

int PMPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint* lb, MPI_Aint* extent) {
  return get_extent(datatype, lb, extent, false, "MPI_Type_get_extent");
}

int PMPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint* true_lb, MPI_Aint* true_extent) {
  return get_extent(datatype, true_lb, true_extent, true, "MPI_Type_get_true_extent");
}

int PMPI_Type_set_name(MPI_Datatype datatype, const char* type_name) {
  const char* fn = "MPI_Type_set_name";
  if (int rc = check_type(MPI_COMM_WORLD, fn, "datatype", datatype)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "type_name", type_name)) return rc;
  std::string name(type_name, strnlen(type_name, MPI_MAX_OBJECT_NAME - 1));  // MPI truncates
  Type* t = live(datatype);
  if (!t->predefined) {
    t->name = std::move(name);
    return MPI_SUCCESS;
  }
  // A predefined type is the process's: the name is the calling rank's own.
  auto& names = mine().predefined_names;
  auto it = std::find_if(names.begin(), names.end(), [&](const auto& e) { return e.first == datatype; });
  if (it == names.end()) names.emplace_back(datatype, std::move(name));
  else it->second = std::move(name);
  return MPI_SUCCESS;
}

int PMPI_Type_get_name(MPI_Datatype datatype, char* type_name, int* resultlen) {
  const char* fn = "MPI_Type_get_name";
  if (int rc = check_type(MPI_COMM_WORLD, fn, "datatype", datatype)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "type_name", type_name)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "resultlen", resultlen)) return rc;
  Type* t = live(datatype);
  std::string name = t->name;
  if (t->predefined) {
    name = kBasics[datatype].name;  // unless the rank named it (a derived type's default is "")
    for (const auto& [h, set] : mine().predefined_names)
      if (h == datatype) name = set;
  }
  std::size_t n = std::min<std::size_t>(name.size(), MPI_MAX_OBJECT_NAME - 1);
  std::memcpy(type_name, name.data(), n);
  type_name[n] = '\0';
  *resultlen = static_cast<int>(n);
  return MPI_SUCCESS;
}

int PMPI_Address(void* location, MPI_Aint* address) {
  if (int rc = check_ptr(MPI_COMM_WORLD, "MPI_Address", "address", address)) return rc;
  *address = reinterpret_cast<MPI_Aint>(location);
  return MPI_SUCCESS;
}

int PMPI_Get_address(const void* location, MPI_Aint* address) {
  if (int rc = check_ptr(MPI_COMM_WORLD, "MPI_Get_address", "address", address)) return rc;
  *address = reinterpret_cast<MPI_Aint>(location);
  return MPI_SUCCESS;
}


int PMPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count* lb, MPI_Count* extent) {
  MPI_Aint l = 0, e = 0;
  if (int rc = get_extent(datatype, &l, &e, false, "MPI_Type_get_extent_x")) return rc;
  if (lb) *lb = l;
  if (extent) *extent = e;
  return MPI_SUCCESS;
}

int PMPI_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count* true_lb, MPI_Count* true_extent) {
  MPI_Aint l = 0, e = 0;
  if (int rc = get_extent(datatype, &l, &e, true, "MPI_Type_get_true_extent_x")) return rc;
  if (true_lb) *true_lb = l;
  if (true_extent) *true_extent = e;
  return MPI_SUCCESS;
}

int PMPI_Status_set_elements_x(MPI_Status* status, MPI_Datatype datatype, MPI_Count count) {
  const char* fn = "MPI_Status_set_elements_x";
  if (int rc = check_type(MPI_COMM_WORLD, fn, "datatype", datatype)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "status", status)) return rc;
  if (count < 0) return error(MPI_COMM_WORLD, MPI_ERR_COUNT, fn, "count is negative (%lld)", static_cast<long long>(count));
  // `count` basic elements (MPI_Get_elements gives it back), not elements of datatype.
  pt2pt::status_set_bytes(*status, bytes_of_elements(datatype, count));
  return MPI_SUCCESS;
}

int PMPI_Status_set_elements_c(MPI_Status* status, MPI_Datatype datatype, MPI_Count count) {
  return PMPI_Status_set_elements_x(status, datatype, count);
}

// The predefined C type of a type class and size (MPI_TYPECLASS_*), as Fortran's
// SELECTED_*_KIND helpers need.
int PMPI_Type_match_size(int typeclass, int size, MPI_Datatype* datatype) {
  const char* fn = "MPI_Type_match_size";
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "datatype", datatype)) return rc;
  // The Fortran REAL*n, INTEGER*n, COMPLEX*n types (MPI 3.1 §17.1.9); long double stands in
  // for the 16-byte ones, which have no Fortran type here.
  static constexpr MPI_Datatype kReal[] = {MPI_REAL4, MPI_REAL8, MPI_LONG_DOUBLE};
  static constexpr MPI_Datatype kInt[] = {MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8};
  static constexpr MPI_Datatype kComplex[] = {MPI_COMPLEX8, MPI_COMPLEX16, MPI_C_LONG_DOUBLE_COMPLEX};
  auto pick = [&](const auto& list) -> int {
    for (MPI_Datatype t : list)
      if (static_cast<int>(type_size(t)) == size) {
        *datatype = t;
        return MPI_SUCCESS;
      }
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "no predefined type of class %d has size %d", typeclass, size);
  };
  switch (typeclass) {
    case MPI_TYPECLASS_REAL: return pick(kReal);
    case MPI_TYPECLASS_INTEGER: return pick(kInt);
    case MPI_TYPECLASS_COMPLEX: return pick(kComplex);
    default: return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "unknown type class %d", typeclass);
  }
}

}  // extern "C"
#pragma GCC visibility pop
