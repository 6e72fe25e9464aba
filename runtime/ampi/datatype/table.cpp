// The datatype handle table and the internal interface of internal.h (validity, facts,
// names, reference counts).
#include "datatype/type.h"

#include <typeinfo>

namespace ampi {
using namespace dt;

namespace dt {

const Type* predefined_type(MPI_Datatype h) {
  // Made once, never destroyed: handlers may look types up while the process exits.
  static const auto* all = [] {
    auto* a = new std::array<std::unique_ptr<Type>, kPredefined>;
    for (int t = 0; t < kPredefined; ++t) (*a)[static_cast<std::size_t>(t)] = std::make_unique<Type>(basic_layout(t), true);
    return a;
  }();
  return (*all)[static_cast<std::size_t>(h)].get();
}

MPI_Datatype TypeTable::add(std::unique_ptr<Type>&& t) {
  const std::size_t cap = HandleSpace::process().capacity();
  std::size_t i;
  if (free_.size() > kReuseAfter || (slots_.size() >= cap && !free_.empty())) {
    i = free_.front();
    free_.pop_front();
  } else if (slots_.size() < cap) {
    i = slots_.size();
    slots_.emplace_back();
  } else {
    return -1;
  }
  slots_[i] = std::move(t);
  return static_cast<MPI_Datatype>(HandleSpace::process().encode(kPredefined, world_rank_, i));
}

void TypeTable::release(std::size_t i) {
  Type* t = at(i);
  if (!t || --t->refs > 0) return;
  std::unique_ptr<Type> gone = std::move(slots_[i]);
  free_.push_back(i);
  // The types its recipe names are this rank's too (or predefined).
  for (MPI_Datatype used : gone->recipe.types) type_release(used);
}

// ---- packing a rank's types (rank migration) -----------------------------------------------
namespace {
void pup_layout(PUP::er& p, Layout& l) {
  p | l.items;  // runs: offsets, counts and predefined handles only
  p | l.bytes;
  p | l.size;
  p | l.elements;
  p | l.lb;
  p | l.ub;
  p | l.true_lb;
  p | l.true_ub;
  p | l.lb_marked;
  p | l.ub_marked;
  p | l.lb_known;
  p | l.ub_known;
  p | l.align;
  p | l.contiguous;
  p | l.uniform;
}
}  // namespace

// Every slot (a type the program freed but a pending operation holds included, with its
// reference count), the reuse order of freed handles and the names of predefined types.
void TypeTable::pup(PUP::er& p) {
  std::uint64_t n = slots_.size();
  p | n;
  if (p.isUnpacking()) {
    p.check_length(n, 1, typeid(Type));
    slots_.clear();
    slots_.resize(static_cast<std::size_t>(n));
  }
  for (auto& slot : slots_) {
    bool present = slot != nullptr;
    p | present;
    if (!present) continue;
    if (p.isUnpacking()) {
      Layout l;
      pup_layout(p, l);
      slot = std::make_unique<Type>(std::move(l));
    } else {
      pup_layout(p, const_cast<Layout&>(slot->l));
    }
    Type& t = *slot;
    p | t.recipe.combiner;
    p | t.recipe.ints;
    p | t.recipe.addrs;
    p | t.recipe.types;
    p | t.committed;
    p | t.freed;
    p | t.refs;
    p | t.name;
  }
  p | free_;
  p | predefined_names;
  p | f90_types;
}

TypeTable& mine() {
  TypeTable* t = HandleSpace::process().at(world_rank()).types;
  if (!t) outside_rank();
  return *t;
}

// A type the program may name: predefined, or derived and not freed.
Type* live(MPI_Datatype h) {
  Type* t = find(h);
  return t && !t->freed ? t : nullptr;
}

// Internal users (pack, unpack) may use a type the program freed while they hold it.
const Layout& layout(MPI_Datatype h) {
  if (Type* t = find(h)) return t->l;
  static const Layout empty;
  return empty;
}

int new_handle(Layout l, Recipe r, MPI_Datatype* newtype, const char* fn) {
  auto t = std::make_unique<Type>(std::move(l));
  for (MPI_Datatype used : r.types) type_retain(used);
  t->recipe = std::move(r);
  MPI_Datatype h = mine().add(std::move(t));
  if (h < 0) {
    for (MPI_Datatype used : t->recipe.types) type_release(used);
    return error(MPI_COMM_WORLD, MPI_ERR_INTERN, fn, "too many datatypes exist at once (%zu per rank)",
                 HandleSpace::process().capacity());
  }
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
  Type* p = find(t);
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
  Type* p = find(t);
  if (p == nullptr) return t == MPI_DATATYPE_NULL ? "MPI_DATATYPE_NULL" : "invalid datatype " + std::to_string(t);
  // A predefined type by its MPI name (a name the rank set is kept per rank: MPI_Type_get_name).
  if (p->predefined) return kBasics[t].name;
  std::string s = "derived datatype " + std::to_string(t);
  if (!p->name.empty()) s += " (" + p->name + ")";
  if (p->freed) s += " (freed)";
  return s;
}

void type_retain(MPI_Datatype t) {
  if (t < kPredefined) return;
  if (Type* p = find(t)) ++p->refs;
}

void type_release(MPI_Datatype t) {
  if (t < kPredefined) return;
  std::size_t i;
  HandleSpace::Entry* e = HandleSpace::process().decode(t, kPredefined, &i);
  if (e && e->types) e->types->release(i);
}

bool type_freed(MPI_Datatype t) {
  if (t < kPredefined) return false;
  std::size_t i;
  HandleSpace::Entry* e = HandleSpace::process().decode(t, kPredefined, &i);
  if (!e || !e->types) return false;
  Type* p = e->types->at(i);
  return (p && p->freed) || (!p && e->types->issued(i));
}

void pup_types(PUP::er& p, dt::TypeTable& t) { t.pup(p); }

// ---- the tables of a rank -----------------------------------------------------------------

TypeTablePtr type_table_new(int world_rank) {
  TypeTablePtr t(new TypeTable(world_rank));
  HandleSpace::process().at(world_rank).types = t.get();
  return t;
}

void TypeTableDeleter::operator()(dt::TypeTable* t) const {
  // The types go without releasing each other: the whole table goes.
  HandleSpace::Entry& e = HandleSpace::process().at(t->world_rank());
  if (e.types == t) e.types = nullptr;
  delete t;
}

}  // namespace ampi
