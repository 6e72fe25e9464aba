// The datatype handle table and the internal interface of internal.h (validity, facts,
// names, reference counts).
#include "datatype/type.h"

namespace ampi {
using namespace dt;

namespace dt {
Table& table() {
  static Table* t = new Table;
  return *t;
}

// A type the program may name: predefined, or derived and not freed.
Type* live(MPI_Datatype h) {
  Type* t = table().find(h);
  return t && !t->freed.load(std::memory_order_relaxed) ? t : nullptr;
}

// Internal users (pack, unpack) may use a type the program freed while they hold it.
const Layout& layout(MPI_Datatype h) {
  if (Type* t = table().find(h)) return t->l;
  static const Layout empty;
  return empty;
}


int new_handle(Layout l, Recipe r, MPI_Datatype* newtype, const char* fn) {
  auto t = std::make_unique<Type>(std::move(l));
  for (MPI_Datatype used : r.types) type_retain(used);
  t->recipe = std::move(r);
  MPI_Datatype h = table().add(std::move(t));
  if (h < 0) return error(MPI_COMM_WORLD, MPI_ERR_INTERN, fn, "too many datatypes exist at once");
  *newtype = h;
  return MPI_SUCCESS;
}
}  // namespace dt

// ---- internal interface -------------------------------------------------------------------

bool type_valid(MPI_Datatype t) { return live(t) != nullptr; }

bool type_committed(MPI_Datatype t) {
  Type* p = live(t);
  if (!p || t == MPI_UB || t == MPI_LB) return false;
  return p->predefined || p->committed;
}

namespace {
std::array<TypeFacts, kPredefined> make_predefined_facts() {
  std::array<TypeFacts, kPredefined> f{};
  for (int t = 0; t < kPredefined; ++t) {
    const Layout l = basic_layout(t);
    f[static_cast<std::size_t>(t)] = TypeFacts{l.size, l.lb, l.contiguous};
  }
  return f;
}
}  // namespace
// Filled when the library loads, before any rank runs.
const std::array<TypeFacts, UCHARM_MPI_PREDEFINED_TYPES> detail::predefined_facts = make_predefined_facts();

// A type the program freed is still answered while the runtime holds it (a pending receive,
// a persistent request, a nonblocking collective: see type_retain); the entry points refuse
// freed handles themselves (pt2pt check_buffer, check_committed).
bool detail::derived_type_facts(MPI_Datatype t, TypeFacts& out) {
  Type* p = table().find(t);
  if (!p || t == MPI_UB || t == MPI_LB || !(p->predefined || p->committed)) return false;
  out.size = p->l.size;
  out.lb = p->l.lb;
  out.contiguous = p->l.contiguous;
  return true;
}

std::size_t type_size(MPI_Datatype t) { return layout(t).size; }
std::ptrdiff_t type_extent(MPI_Datatype t) { return layout(t).extent(); }
std::ptrdiff_t type_lb(MPI_Datatype t) { return layout(t).lb; }
bool type_contiguous(MPI_Datatype t) { return layout(t).contiguous; }
MPI_Datatype type_uniform_basic(MPI_Datatype t) { return layout(t).uniform; }

std::string type_name(MPI_Datatype t) {
  Type* p = table().find(t);
  if (p == nullptr) return t == MPI_DATATYPE_NULL ? "MPI_DATATYPE_NULL" : "invalid datatype " + std::to_string(t);
  std::string set;
  {
    std::lock_guard<std::mutex> g(table().names_mutex);
    set = p->name;
  }
  if (p->predefined) return set.empty() ? kBasics[t].name : set;
  std::string s = "derived datatype " + std::to_string(t);
  if (!set.empty()) s += " (" + set + ")";
  if (p->freed.load(std::memory_order_relaxed)) s += " (freed)";
  return s;
}

void type_retain(MPI_Datatype t) {
  if (t < kPredefined) return;
  if (Type* p = table().find(t)) p->refs.fetch_add(1, std::memory_order_relaxed);
}

void type_release(MPI_Datatype t) {
  if (t < kPredefined) return;
  Type* p = table().find(t);
  if (p && p->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) table().remove(t);
}

bool type_freed(MPI_Datatype t) {
  Type* p = table().find(t);
  return (p && p->freed.load(std::memory_order_relaxed)) || (!p && table().issued(t));
}

}  // namespace ampi
