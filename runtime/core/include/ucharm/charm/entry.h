// Entry methods without a code generator: member-pointer traits, argument signatures,
// registration of entries, constructors, functions and maps, threaded, post, coroutine
// and awaited entries.
// Part of <ucharm/charm.h>, the header to include.
#pragma once

#include <ucharm/charm/basics.h>
#include <concepts>
#include <cstring>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#pragma GCC visibility push(default)

namespace ck {

namespace detail {

// ---- member-function traits ---------------------------------------------------------------
template <class T>
struct member_traits;
template <class C, class R, class... A>
struct member_traits<R (C::*)(A...)> {
  using cls = C;
  using ret = R;
  using args = std::tuple<std::decay_t<A>...>;
  using params = std::tuple<A...>;  // as declared (coroutine entries check them)
  static constexpr std::size_t arity = sizeof...(A);
};
template <class R, class... A>
struct function_traits;
template <class R, class... A>
struct function_traits<R (*)(A...)> {
  using args = std::tuple<std::decay_t<A>...>;
};

// The wire form of a parameter type: what was packed must equal what is unpacked.
// A span<const T> travels exactly like a vector<T>.
template <class T>
struct wire { using type = T; };
template <class T, std::size_t E>
struct wire<std::span<T, E>> { using type = std::vector<std::remove_const_t<T>>; };
std::uint32_t type_list_hash(const std::type_info* const* types, std::size_t n);
std::string type_list_names(const std::type_info* const* types, std::size_t n);
template <class Tuple>
struct sig_of;
template <class... A>
struct sig_of<std::tuple<A...>> {
  static std::uint32_t hash() {
    static const std::uint32_t h = [] {  // computed once: sends use it on every message
      const std::type_info* t[] = {&typeid(typename wire<A>::type)..., nullptr};
      return type_list_hash(t, sizeof...(A));
    }();
    return h;
  }
  static std::string names() {
    static const std::type_info* t[] = {&typeid(typename wire<A>::type)..., nullptr};
    return type_list_names(t, sizeof...(A));
  }
};

// Unpacks a message's arguments into a tuple of the parameter types, in order.
template <class Tuple>
Tuple unpack_args(PUP::er& p) {
  Tuple args;
  std::apply([&](auto&... a) { ((p | a), ...); }, args);
  return args;
}

// ---- the registry: entries, constructors, functions, maps, reducers ------------------------
// Registered during static initialisation, then sorted by name at start-up so that every
// PE (the same binary) gets the same indices whatever the initialisation order.
using Invoker = void (*)(ChareBase* obj, PUP::er& args);
using PostInvoker = void (*)(ChareBase* obj, PUP::er& args, std::vector<CkDeviceBuffer>& out);
using Constructor = ChareBase* (*)(PUP::er& args);
using RawInvoker = void (*)(ChareBase* obj, void* msg);
// An awaited entry's reference number: its first argument, an integer, which PUP packs as
// its bytes at the start of the arguments (read without an unpacker; false: too short).
using RefOf = bool (*)(const char* args, std::size_t len, std::int64_t& ref);
struct EntryInfo {
  const char* name;
  Invoker invoke;
  const std::type_info* cls;  // the chare class (nullptr: a plain function)
  std::uint32_t sig;
  std::string (*sig_names)();
  bool threaded;
  bool (*accepts)(ChareBase*);  // is the object of (a class derived from) cls?
  int device_params = 0;        // CkDeviceBuffer parameters (GPU Messaging API)
  PostInvoker post = nullptr;   // their post entry method
  RawInvoker raw = nullptr;     // a raw entry (ck::RawEntry): gets the message itself
  bool awaited = false;         // kept for a coroutine's co_await ck::next<&C::f> (task.h)
  RefOf ref_of = nullptr;       // awaited, integral first parameter: that argument
};
void register_entry(const EntryInfo& info, std::uint32_t* slot);
void register_ctor(const char* name, Constructor c, const std::type_info* cls, std::uint32_t* slot);
void register_map(const char* name, int (*fn)(const Index&, const Index&, int), std::uint32_t* slot);
void register_converse_handler(const char* name, void (*fn)(void*), std::uint32_t* slot);

template <auto X>
struct NameTag {};
// A registration name: readable (GCC's pretty name) plus the mangled name of X, which is
// unique even where the pretty name is not (GCC prints &C::f for every &C::f<N>).
template <auto X>
const char* name_of() {
  static const std::string name = std::string(__PRETTY_FUNCTION__) + "#" + typeid(NameTag<X>).name();
  return name.c_str();
}

// One registered thing per template instance. `index` is filled in at start-up; naming
// `registered` from id() makes sure the static initialiser that registers it exists.
template <class Derived>
struct Registration {
  static std::uint32_t index;
  static std::uint32_t id() {
    (void)Derived::registered;
    return index;
  }
};
template <class Derived>
std::uint32_t Registration<Derived>::index = UINT32_MAX;

template <auto A, auto B>
constexpr bool same_entry() {
  if constexpr (std::is_same_v<decltype(A), decltype(B)>) return A == B;
  else return false;
}

}  // namespace detail

// A class lists its threaded entry methods (they run in a user-level thread and may block)
// in a static member function (its body may name members declared later in the class):
//   static constexpr auto threaded_entries() { return ck::entries<&Main::run>; }
template <auto... Eps>
struct EntryList {
  template <auto Ep>
  static constexpr bool contains() { return (detail::same_entry<Ep, Eps>() || ...); }
};
template <auto... Eps>
inline constexpr EntryList<Eps...> entries{};

// Coroutine entry methods return ck::task<> (task.h); an awaited entry's messages wait for
// a coroutine's co_await ck::next<&C::f>(ref), listed like threaded entries:
//   static constexpr auto awaited_entries() { return ck::entries<&Block::halo>; }
template <class T>
class task;

namespace detail {

// Post entry methods: static constexpr auto post_entries() {
//   return ck::post_list<ck::post<&C::recvHalo, &C::recvHaloPost>>{}; }
}  // namespace detail
template <auto Entry, auto Post>
struct post {
  static constexpr auto entry = Entry;
  static constexpr auto post_fn = Post;
};
template <class... Posts>
struct post_list {};
namespace detail {

template <class... A>
constexpr int count_device_params_of(std::tuple<A...>*) {
  return (0 + ... + (std::is_same_v<A, CkDeviceBuffer> ? 1 : 0));
}

template <auto Ep, class List>
struct find_post;
template <auto Ep>
struct find_post<Ep, post_list<>> {
  static constexpr bool found = false;
  static constexpr auto fn = nullptr;
};
template <auto Ep, class P, class... Rest>
struct find_post<Ep, post_list<P, Rest...>> {
  static constexpr bool here = same_entry<Ep, P::entry>();
  static constexpr bool found = here || find_post<Ep, post_list<Rest...>>::found;
  static constexpr auto fn = [] {
    if constexpr (here) return P::post_fn;
    else return find_post<Ep, post_list<Rest...>>::fn;
  }();
};
template <class C, auto Ep>
constexpr auto post_of() {
  if constexpr (requires { C::post_entries(); })
    return find_post<Ep, std::remove_cvref_t<decltype(C::post_entries())>>::fn;
  else
    return nullptr;
}

// Runs the post entry: unpacks the arguments, lets `Post` set each device buffer's
// destination, and hands the destinations back (PostInvoker).
template <auto Ep, auto Post>
void invoke_post(ChareBase* obj, PUP::er& p, std::vector<CkDeviceBuffer>& out) {
  using T = member_traits<decltype(Ep)>;
  auto args = unpack_args<typename T::args>(p);
  auto* self = static_cast<typename T::cls*>(obj);
  std::apply([&](auto&... a) { (self->*Post)(a...); }, args);
  std::apply([&](auto&... a) {
    auto collect = [&](auto& x) {
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(x)>, CkDeviceBuffer>) out.push_back(x);
    };
    (collect(a), ...);
  }, args);
}

// Sends every CkDeviceBuffer argument to `pe` (filling in its tag) before the host
// message is packed.
void send_device_buffer(int pe, CkDeviceBuffer& b);
template <class Tuple>
void send_device_args(Tuple& t, int pe) {
  std::apply([&](auto&... a) {
    auto one = [&](auto& x) {
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(x)>, CkDeviceBuffer>) send_device_buffer(pe, x);
    };
    (one(a), ...);
  }, t);
}

template <class C, auto Ep>
constexpr bool is_threaded() {
  if constexpr (requires { C::threaded_entries(); })
    return std::remove_cvref_t<decltype(C::threaded_entries())>::template contains<Ep>();
  else
    return false;
}

// A coroutine entry's promise reads the entry's name from here (for its error messages).
void set_task_starting(const char* entry_name);

template <auto Ep>
void invoke_entry(ChareBase* obj, PUP::er& p) {
  using T = member_traits<decltype(Ep)>;
  auto args = unpack_args<typename T::args>(p);
  auto* self = static_cast<typename T::cls*>(obj);
  if constexpr (std::is_same_v<typename T::ret, task<void>>) set_task_starting(name_of<Ep>());
  std::apply([&](auto&... a) { (self->*Ep)(std::move(a)...); }, args);
}

template <class C, auto Ep>
constexpr bool is_awaited_entry() {
  if constexpr (requires { C::awaited_entries(); })
    return std::remove_cvref_t<decltype(C::awaited_entries())>::template contains<Ep>();
  else
    return false;
}
template <class T>
struct is_span : std::false_type {};
template <class T, std::size_t E>
struct is_span<std::span<T, E>> : std::true_type {};
// Coroutine entry parameters live in the frame: by value only (a reference would name the
// unpacked arguments, a span the message, both gone at the first co_await).
template <class... A>
constexpr bool coroutine_params_ok(std::tuple<A...>*) {
  return ((!std::is_reference_v<A> && !is_span<std::remove_cv_t<A>>::value) && ...);
}
template <auto Ep>
bool ref_of_entry(const char* args, std::size_t len, std::int64_t& ref) {
  std::tuple_element_t<0, typename member_traits<decltype(Ep)>::args> r{};
  if (len < sizeof r) return false;
  std::memcpy(&r, args, sizeof r);
  ref = static_cast<std::int64_t>(r);
  return true;
}
template <auto Ep>
constexpr RefOf ref_of() {
  using T = member_traits<decltype(Ep)>;
  if constexpr (T::arity >= 1) {
    using R = std::tuple_element_t<0, typename T::args>;
    if constexpr (std::is_integral_v<R> && !std::is_same_v<R, bool>) return &ref_of_entry<Ep>;
    else return nullptr;
  } else {
    return nullptr;
  }
}

template <class C>
bool accepts(ChareBase* obj) { return dynamic_cast<C*>(obj) != nullptr; }

template <auto Ep>
struct Entry : Registration<Entry<Ep>> {
  static const bool registered;
};
template <auto Ep>
const bool Entry<Ep>::registered = [] {
  using T = member_traits<decltype(Ep)>;
  constexpr int device = count_device_params_of(static_cast<typename T::args*>(nullptr));
  constexpr auto post_fn = post_of<typename T::cls, Ep>();
  PostInvoker post = nullptr;
  if constexpr (device > 0) {
    static_assert(!std::is_same_v<decltype(post_fn), std::nullptr_t>,
                  "this entry method takes CkDeviceBuffer parameters: name its post entry method in "
                  "static constexpr auto post_entries() { return ck::post_list<ck::post<&C::f, &C::f_post>>{}; }");
    if constexpr (!std::is_same_v<decltype(post_fn), std::nullptr_t>) post = &invoke_post<Ep, post_fn>;
  }
  constexpr bool threaded = is_threaded<typename T::cls, Ep>();
  constexpr bool awaited = is_awaited_entry<typename T::cls, Ep>();
  if constexpr (std::is_same_v<typename T::ret, task<void>>) {
    static_assert(!threaded, "a coroutine entry method (returning ck::task<>) needs no thread: remove it from "
                             "threaded_entries()");
    static_assert(coroutine_params_ok(static_cast<typename T::params*>(nullptr)),
                  "a coroutine entry method (returning ck::task<>) takes its parameters by value: they live in "
                  "its frame, while references and std::span would point into a message gone at the first "
                  "co_await (take a std::vector instead of a span)");
  }
  static_assert(!awaited || std::is_void_v<typename T::ret>,
                "an awaited entry method (awaited_entries()) returns void: its body runs inside the co_await");
  static_assert(!(awaited && threaded), "an entry method cannot be both threaded and awaited");
  register_entry({name_of<Ep>(), &invoke_entry<Ep>, &typeid(typename T::cls),
                  sig_of<typename T::args>::hash(), &sig_of<typename T::args>::names,
                  threaded, &accepts<typename T::cls>, device, post, nullptr, awaited,
                  awaited ? ref_of<Ep>() : nullptr},
                 &Entry<Ep>::index);
  return true;
}();

template <auto F>
void invoke_function(ChareBase*, PUP::er& p) {
  using T = function_traits<decltype(F)>;
  auto args = unpack_args<typename T::args>(p);
  std::apply([&](auto&... a) { F(std::move(a)...); }, args);
}
template <auto F>
struct Function : Registration<Function<F>> {
  static const bool registered;
};
template <auto F>
const bool Function<F>::registered = [] {
  using T = function_traits<decltype(F)>;
  register_entry({name_of<F>(), &invoke_function<F>, nullptr, sig_of<typename T::args>::hash(),
                  &sig_of<typename T::args>::names, false, nullptr, 0, nullptr},
                 &Function<F>::index);
  return true;
}();

template <class C, class... A>
ChareBase* construct(PUP::er& p) {
  auto args = unpack_args<std::tuple<A...>>(p);
  return std::apply([](auto&... a) -> ChareBase* { return new C(std::move(a)...); }, args);
}
template <class C, class... A>
const char* ctor_name() { return __PRETTY_FUNCTION__; }
template <class C, class... A>
struct Ctor : Registration<Ctor<C, A...>> {
  static const bool registered;
};
template <class C, class... A>
const bool Ctor<C, A...>::registered = [] {
  register_ctor(ctor_name<C, A...>(), &construct<C, A...>, &typeid(C), &Ctor<C, A...>::index);
  return true;
}();

// The migration constructor of chare class C: C(CkMigrateMessage*) or C(); the object's
// state then comes from its pup(). Registered when a proxy of C is used (migration of array
// elements; checkpoints of every kind of chare).
template <class C>
ChareBase* construct_migrated(PUP::er&) {
  if constexpr (std::is_constructible_v<C, CkMigrateMessage*>) return new C(static_cast<CkMigrateMessage*>(nullptr));
  else if constexpr (std::is_default_constructible_v<C>) return new C();
  else return nullptr;  // not migratable: migrateMe names the class
}
template <class C>
const char* migration_ctor_name() { return __PRETTY_FUNCTION__; }
// A group's rule for restarting on another PE count (checkpoint.h): which old PE's branch
// new PE `pe` is rebuilt from. Null: the class has no static ckRestartSource(int, int).
using RestartSource = int (*)(int pe, int old_num_pes);
void register_migration_ctor(const char* name, Constructor c, const std::type_info* cls, std::uint32_t* slot,
                             bool rebuildable, RestartSource restart_source);
template <class C>
constexpr RestartSource restart_source_of() {
  if constexpr (requires(int a, int b) { { C::ckRestartSource(a, b) } -> std::convertible_to<int>; })
    return [](int pe, int old_num_pes) { return static_cast<int>(C::ckRestartSource(pe, old_num_pes)); };
  else return nullptr;
}
template <class C>
struct MigrationCtor : Registration<MigrationCtor<C>> {
  static const bool registered;
};
template <class C>
const bool MigrationCtor<C>::registered = [] {
  register_migration_ctor(migration_ctor_name<C>(), &construct_migrated<C>, &typeid(C), &MigrationCtor<C>::index,
                          std::is_constructible_v<C, CkMigrateMessage*> || std::is_default_constructible_v<C>,
                          restart_source_of<C>());
  return true;
}();

template <int (*F)(const Index&, const Index&, int)>
struct UserMap : Registration<UserMap<F>> {
  static const bool registered;
};
template <int (*F)(const Index&, const Index&, int)>
const bool UserMap<F>::registered = [] {
  register_map(name_of<F>(), F, &UserMap<F>::index);
  return true;
}();

}  // namespace detail

template <int (*F)(const Index&, const Index&, int)>
Map Map::user() {
  return Map{MapKind::User, detail::UserMap<F>::id()};
}

}  // namespace ck

#pragma GCC visibility pop
