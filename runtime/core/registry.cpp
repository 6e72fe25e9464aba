// The registry: entries, constructors, maps, reducers and readonly globals register
// during static initialisation; at start-up they get indices sorted by name.
#include "internal.h"

#include <cxxabi.h>

#include <cstdlib>

namespace ck::detail {

Registry& registry() {
  static Registry r;  // used during static initialisation: must not depend on init order
  return r;
}

namespace {
// Sorting by name gives every PE the same indices, whatever order the templates were
// instantiated in.
template <class T>
void assign(std::vector<std::pair<Registered, T>>& in, std::vector<T>& out) {
  std::sort(in.begin(), in.end(), [](const auto& a, const auto& b) { return a.first.name < b.first.name; });
  out.clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (i > 0 && in[i].first.name == in[i - 1].first.name) {  // one template, two registrations
      *in[i].first.slot = static_cast<std::uint32_t>(out.size() - 1);
      continue;
    }
    *in[i].first.slot = static_cast<std::uint32_t>(out.size());
    out.push_back(in[i].second);
  }
}
}  // namespace

const EntryInfo* g_entries = nullptr;

void assign_indices() {
  Registry& r = registry();
  assign(r.entries_in, r.entries);
  assign(r.ctors_in, r.ctors);
  assign(r.maps_in, r.maps);
  assign(r.reducers_in, r.reducers);
  assign(r.handlers_in, r.handlers);
  g_entries = r.entries.data();
}

std::string entry_name(const char* registered) {
  std::string s = registered;
  auto at = s.find("X = ");
  if (at == std::string::npos) return s;
  auto end = s.find_first_of(";]", at);
  return s.substr(at + 4, end == std::string::npos ? std::string::npos : end - at - 4);
}

std::string demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : name;
  std::free(d);
  return out;
}

// ---- registration entry points (static initialisation) ----------------------------------------
void register_entry(const EntryInfo& info, std::uint32_t* slot) {
  registry().entries_in.push_back({{info.name, slot}, info});
}
void register_ctor(const char* name, Constructor c, const std::type_info* cls, std::uint32_t* slot) {
  registry().ctors_in.push_back({{name, slot}, CtorInfo{c, cls}});
}
void register_migration_ctor(const char* name, Constructor c, const std::type_info* cls, std::uint32_t* slot,
                             bool rebuildable, RestartSource restart_source) {
  registry().ctors_in.push_back({{name, slot}, CtorInfo{c, cls, true, rebuildable, restart_source}});
}
void register_map(const char* name, int (*fn)(const Index&, const Index&, int), std::uint32_t* slot) {
  registry().maps_in.push_back({{name, slot}, fn});
}
void register_converse_handler(const char* name, void (*fn)(void*), std::uint32_t* slot) {
  registry().handlers_in.push_back({{name, slot}, fn});
}
void register_reducer(const char* name, UserCombine fn, std::uint32_t* slot) {
  registry().reducers_in.push_back({{name, slot}, fn});
}
ReadonlyBase::ReadonlyBase() { registry().readonlies.push_back(this); }

std::uint32_t type_list_hash(const std::type_info* const* types, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < n; ++i)
    for (const char* s = types[i]->name(); *s; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 1099511628211ull;
  return static_cast<std::uint32_t>(h ^ (h >> 32) ^ n);
}
std::string type_list_names(const std::type_info* const* types, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += (i ? ", " : "") + demangle(types[i]->name());
  return out;
}

}  // namespace ck::detail
