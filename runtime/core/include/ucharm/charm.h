// The Charm++-style core: chares, groups, chare arrays, typed entry methods, callbacks,
// reductions, futures, readonly globals, quiescence detection. No code generator and
// no .ci files: entry methods are ordinary member functions, named by member pointers.
//
//   struct Block : ck::ArrayElement<Block, 3> {
//     Block(double init);
//     void recvGhost(int face, std::vector<double> data);
//   };
//   auto blocks = ck::ArrayProxy<Block>::create(ck::dims(4, 4, 4), ck::Map::block, 1.0);
//   blocks(x, y, z).send<&Block::recvGhost>(face, data);   // checked at compile time
//   blocks.send<&Block::recvGhost>(face, data);            // broadcast
#pragma once

#include <ucharm/converse.h>
#include <ucharm/pup.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#pragma GCC visibility push(default)

// ---- names Charm++ users know -------------------------------------------------------------
inline int CkMyPe() { return CmiMyPe(); }
inline int CkNumPes() { return CmiNumPes(); }
inline double CkWallTimer() { return CmiWallTimer(); }
[[noreturn]] inline void CkExit(int code = 0) { CmiExit(code); }
void CkPrintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] void CkAbort(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

namespace ck {

class ChareBase;

// ---- array indices ---------------------------------------------------------------------------
struct Index {
  std::int32_t x[3] = {0, 0, 0};
  std::int32_t dims = 0;  // 1, 2 or 3 for array indices; 0 for groups and chares
  bool operator==(const Index& o) const {
    return x[0] == o.x[0] && x[1] == o.x[1] && x[2] == o.x[2] && dims == o.dims;
  }
  void pup(PUP::er& p) { p.bytes(this, sizeof *this); }
  std::string str() const;
};
inline Index dims(int a) { return Index{{a, 0, 0}, 1}; }
inline Index dims(int a, int b) { return Index{{a, b, 0}, 2}; }
inline Index dims(int a, int b, int c) { return Index{{a, b, c}, 3}; }
inline Index index(int a) { return dims(a); }
inline Index index(int a, int b) { return dims(a, b); }
inline Index index(int a, int b, int c) { return dims(a, b, c); }

// thisIndex: an int for 1-D arrays, std::array<int, D> for 2-D and 3-D ones.
template <int D>
using IndexOf = std::conditional_t<D == 1, int, std::array<int, D>>;

// ---- placement of array elements ----------------------------------------------------------
enum class MapKind : std::uint8_t { Block, RoundRobin, User };
struct Map {
  MapKind kind = MapKind::Block;
  std::uint32_t fn = 0;  // registered user map (MapKind::User)
  static const Map block;
  static const Map round_robin;
  // A user function (index, array dims, number of PEs) -> PE, the same on every PE.
  template <int (*F)(const Index&, const Index&, int)>
  static Map user();
};
inline const Map Map::block{MapKind::Block, 0};
inline const Map Map::round_robin{MapKind::RoundRobin, 0};

enum class Kind : std::uint8_t { Chare, Group, Array };

// What a proxy knows about its collection: enough for any PE to find an element's PE.
struct CollectionRef {
  std::uint32_t id = 0;
  Kind kind = Kind::Chare;
  Map map;
  bool bounded = false;  // bulk-created: `shape` holds the bounds
  Index shape;
  std::int32_t pe = 0;   // a singleton chare's PE
  void pup(PUP::er& p) { p.bytes(this, sizeof *this); }
};

struct SendOpts {
  int priority = 0;        // smaller runs first
  bool expedited = false;  // ahead of everything queued
};

class CkCallback;

// ---- GPU Messaging API --------------------------------------------------------------------------
// An entry-method parameter whose data travels by itself (host or GPU memory, straight
// from buffer to buffer), next to the host message that carries the other arguments.
//   Sender:   peer.send<&Block::recvHalo>(ck::CkDeviceBuffer(d_ptr, bytes, done_cb), iter);
//   Receiver: a post entry method names the destination first (see post_entries());
//             then recvHalo(ck::CkDeviceBuffer halo, int iter) runs with halo.ptr = it.
// Streams (optional cudaStream_t): the sender's data leaves only after the work queued on
// its stream before the send has finished; a stream the post entry method sets delays the
// receive until the work queued on it has finished. Neither blocks the PE. When the
// entry method runs, the data is in: work it queues on any stream sees it.
struct CkDeviceBuffer {
  const void* ptr = nullptr;
  std::size_t size = 0;
  std::uint64_t tag = 0;   // set when sent
  std::int32_t src_pe = -1;
  std::uint32_t done_id = 0;  // internal: the sender's completion
  void* stream = nullptr;     // cudaStream_t or nullptr; never travels
  CkDeviceBuffer() = default;
  CkDeviceBuffer(const void* p, std::size_t n, void* s = nullptr) : ptr(p), size(n), stream(s) {}
  CkDeviceBuffer(const void* p, std::size_t n, const CkCallback& done, void* s = nullptr);
  void pup(PUP::er& p);  // the metadata only: size, tag, source
  // Where the data is to go (post entry) or has landed (entry method).
  void* data() const { return const_cast<void*>(ptr); }
};

namespace detail {

// ---- member-function traits ---------------------------------------------------------------
template <class T>
struct member_traits;
template <class C, class R, class... A>
struct member_traits<R (C::*)(A...)> {
  using cls = C;
  using args = std::tuple<std::decay_t<A>...>;
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
};
void register_entry(const EntryInfo& info, std::uint32_t* slot);
void register_ctor(const char* name, Constructor c, const std::type_info* cls, std::uint32_t* slot);
void register_map(const char* name, int (*fn)(const Index&, const Index&, int), std::uint32_t* slot);

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

template <auto Ep>
void invoke_entry(ChareBase* obj, PUP::er& p) {
  using T = member_traits<decltype(Ep)>;
  auto args = unpack_args<typename T::args>(p);
  auto* self = static_cast<typename T::cls*>(obj);
  std::apply([&](auto&... a) { (self->*Ep)(std::move(a)...); }, args);
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
  register_entry({name_of<Ep>(), &invoke_entry<Ep>, &typeid(typename T::cls),
                  sig_of<typename T::args>::hash(), &sig_of<typename T::args>::names,
                  is_threaded<typename T::cls, Ep>(), &accepts<typename T::cls>, device, post},
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

template <int (*F)(const Index&, const Index&, int)>
struct UserMap : Registration<UserMap<F>> {
  static const bool registered;
};
template <int (*F)(const Index&, const Index&, int)>
const bool UserMap<F>::registered = [] {
  register_map(name_of<F>(), F, &UserMap<F>::index);
  return true;
}();

// ---- packing arguments into a message ---------------------------------------------------
// Message = Converse header + Envelope + packed arguments.
enum class MsgKind : std::uint8_t { Invoke, Broadcast, CreateChare, CreateGroup, CreateArray, Insert,
                                    CallFunction, FutureSet };
// Small on purpose: with an 8-byte argument an entry message stays under UCX's
// shared-memory eager-short limit. Creation messages carry the full CollectionRef in
// front of the constructor arguments; every other kind names the collection by id.
struct Envelope {
  std::uint32_t collection;
  std::uint32_t entry;  // entry, constructor or function index (future id for FutureSet)
  std::int32_t x[3];    // element index (a PE for groups, functions and futures)
  std::uint32_t sig;    // hash of the packed argument types
  MsgKind kind;
  std::uint8_t dims;
  std::uint16_t reserved0;
  std::uint32_t reserved1;
  Index index() const { return Index{{x[0], x[1], x[2]}, dims}; }
  void set_index(const Index& i) {
    x[0] = i.x[0];
    x[1] = i.x[1];
    x[2] = i.x[2];
    dims = static_cast<std::uint8_t>(i.dims);
  }
};
static_assert(sizeof(Envelope) == 32);
static_assert(sizeof(Envelope) % 8 == 0);

template <class Tuple>
void* pack_tuple(Tuple& t, std::size_t& total) {
  PUP::er s = PUP::er::sizer();
  std::apply([&](auto&... a) { ((s | a), ...); }, t);
  total = CmiMsgHeaderSizeBytes + sizeof(Envelope) + s.size();
  void* msg = CmiAlloc(total);
  PUP::er p = PUP::er::packer(CmiMsgPayload(msg) + sizeof(Envelope), s.size());
  std::apply([&](auto&... a) { ((p | a), ...); }, t);
  return msg;
}
inline Envelope& envelope(void* msg) { return *reinterpret_cast<Envelope*>(CmiMsgPayload(msg)); }

// Sends a packed message (its envelope filled by the caller) to where `c` and the
// envelope's index say: routing, priorities, counts for quiescence detection.
void send_msg(void* msg, std::size_t total, const CollectionRef& c, const SendOpts& o);
std::uint32_t new_collection_id();
int home_pe(const CollectionRef& c, const Index& idx);
int next_chare_pe();
void check_bounds(const CollectionRef& c, const Index& idx);
void* local_branch(const CollectionRef& c, const Index& idx);

template <auto Ep, class Tuple>
void send_entry(const CollectionRef& c, const Index& idx, MsgKind kind, const SendOpts& o, Tuple& args) {
  std::size_t total;
  void* msg = pack_tuple(args, total);
  Envelope& e = envelope(msg);
  e.collection = c.id;
  e.set_index(idx);
  e.entry = Entry<Ep>::id();
  e.sig = sig_of<typename member_traits<decltype(Ep)>::args>::hash();
  e.kind = kind;
  send_msg(msg, total, c, o);
}

template <auto Ep, class Proxy, class... Args>
void invoke(const CollectionRef& c, const Index& idx, MsgKind kind, const SendOpts& o, Args&&... args) {
  using T = member_traits<decltype(Ep)>;
  using C = typename T::cls;
  static_assert(std::is_same_v<C, typename Proxy::element_type> ||
                    std::is_base_of_v<C, typename Proxy::element_type>,
                "this entry method belongs to another chare class than the proxy's");
  static_assert(T::arity == sizeof...(Args), "wrong number of arguments for this entry method");
  static_assert(std::is_constructible_v<typename T::args, Args&&...>,
                "argument types do not match the entry method's parameters");
  typename T::args packed(std::forward<Args>(args)...);
  if constexpr (count_device_params_of(static_cast<typename T::args*>(nullptr)) > 0) {
    if (kind != MsgKind::Invoke)
      CkAbort("CkDeviceBuffer arguments go to one element; broadcasting them is not supported");
    send_device_args(packed, home_pe(c, idx));
  }
  send_entry<Ep>(c, idx, kind, o, packed);
}

template <class C, class... Args>
void create(const CollectionRef& c, const Index& idx, MsgKind kind, Args&&... args) {
  static_assert(std::is_constructible_v<C, std::decay_t<Args>...>,
                "no constructor of this chare class takes these arguments");
  using Id = Ctor<C, std::decay_t<Args>...>;
  std::tuple<CollectionRef, std::decay_t<Args>...> packed(c, std::forward<Args>(args)...);
  std::size_t total;
  void* msg = pack_tuple(packed, total);
  Envelope& e = envelope(msg);
  e.collection = c.id;
  e.set_index(idx);
  e.entry = Id::id();
  e.kind = kind;
  send_msg(msg, total, c, SendOpts{});
}

// The element being constructed: its base class reads this.
struct Constructing {
  CollectionRef ref;
  Index index;
};
const Constructing& constructing();

}  // namespace detail

// ---- proxies ----------------------------------------------------------------------------------
// One element (of an array or group, or a singleton chare).
template <class C>
class ElementProxy {
 public:
  using element_type = C;
  ElementProxy() = default;
  ElementProxy(const CollectionRef& r, const Index& i) : ref_(r), idx_(i) {}
  ElementProxy opts(const SendOpts& o) const { ElementProxy p = *this; p.opts_ = o; return p; }
  template <auto Ep, class... Args>
  void send(Args&&... args) const {
    detail::invoke<Ep, ElementProxy>(ref_, idx_, detail::MsgKind::Invoke, opts_, std::forward<Args>(args)...);
  }
  // The element itself when it lives on this PE (nullptr otherwise).
  C* local() const { return static_cast<C*>(detail::local_branch(ref_, idx_)); }
  const CollectionRef& ref() const { return ref_; }
  const Index& index() const { return idx_; }
  void pup(PUP::er& p) { p | ref_; p | idx_; p | opts_.priority; p | opts_.expedited; }

 private:
  CollectionRef ref_;
  Index idx_;
  SendOpts opts_;
};

// A singleton chare.
template <class C>
class ChareProxy : public ElementProxy<C> {
 public:
  ChareProxy() = default;
  explicit ChareProxy(const CollectionRef& r) : ElementProxy<C>(r, Index{}) {}
  // Created on `pe`, or on a PE the runtime picks (round-robin) when pe < 0.
  template <class... Args>
  static ChareProxy create_on(int pe, Args&&... args) {
    CollectionRef r;
    r.id = detail::new_collection_id();
    r.kind = Kind::Chare;
    r.pe = pe >= 0 ? pe : detail::next_chare_pe();
    if (r.pe >= CkNumPes()) CkAbort("ChareProxy::create_on: PE %d is out of range [0, %d)", r.pe, CkNumPes());
    detail::create<C>(r, Index{}, detail::MsgKind::CreateChare, std::forward<Args>(args)...);
    return ChareProxy(r);
  }
  template <class... Args>
  static ChareProxy create(Args&&... args) { return create_on(-1, std::forward<Args>(args)...); }
};

// All elements of a group or array: send = broadcast.
template <class C>
class CollectionProxy {
 public:
  using element_type = C;
  CollectionProxy() = default;
  explicit CollectionProxy(const CollectionRef& r) : ref_(r) {}
  CollectionProxy opts(const SendOpts& o) const { CollectionProxy p = *this; p.opts_ = o; return p; }
  template <auto Ep, class... Args>
  void send(Args&&... args) const {
    detail::invoke<Ep, CollectionProxy>(ref_, Index{}, detail::MsgKind::Broadcast, opts_,
                                        std::forward<Args>(args)...);
  }
  const CollectionRef& ref() const { return ref_; }
  void pup(PUP::er& p) { p | ref_; p | opts_.priority; p | opts_.expedited; }

 protected:
  CollectionRef ref_;
  SendOpts opts_;
};

template <class C>
class GroupProxy : public CollectionProxy<C> {
 public:
  GroupProxy() = default;
  explicit GroupProxy(const CollectionRef& r) : CollectionProxy<C>(r) {}
  template <class... Args>
  static GroupProxy create(Args&&... args) {
    CollectionRef r;
    r.id = detail::new_collection_id();
    r.kind = Kind::Group;
    detail::create<C>(r, Index{}, detail::MsgKind::CreateGroup, std::forward<Args>(args)...);
    return GroupProxy(r);
  }
  ElementProxy<C> operator[](int pe) const {
    if (pe < 0 || pe >= CkNumPes()) CkAbort("group element %d is out of range [0, %d)", pe, CkNumPes());
    return ElementProxy<C>(this->ref_, Index{{pe, 0, 0}, 0});
  }
  C* ckLocalBranch() const { return (*this)[CkMyPe()].local(); }
};

template <class C>
class ArrayProxy : public CollectionProxy<C> {
 public:
  ArrayProxy() = default;
  explicit ArrayProxy(const CollectionRef& r) : CollectionProxy<C>(r) {}
  // Bulk creation: every index in [0, shape) is constructed with `args`, placed by `map`.
  template <class... Args>
  static ArrayProxy create(const Index& shape, const Map& map, Args&&... args) {
    ArrayProxy p = create_empty(shape.dims, map);
    p.ref_.bounded = true;
    p.ref_.shape = shape;
    for (int d = 0; d < shape.dims; ++d)
      if (shape.x[d] < 0) CkAbort("ArrayProxy::create: negative extent %d", shape.x[d]);
    detail::create<C>(p.ref_, shape, detail::MsgKind::CreateArray, std::forward<Args>(args)...);
    return p;
  }
  // An array that grows with insert(); `dims` is 1, 2 or 3.
  static ArrayProxy create_empty(int dims, const Map& map = Map::round_robin) {
    if (dims < 1 || dims > 3) CkAbort("ArrayProxy: arrays have 1, 2 or 3 dimensions, not %d", dims);
    CollectionRef r;
    r.id = detail::new_collection_id();
    r.kind = Kind::Array;
    r.map = map;
    r.shape.dims = dims;
    return ArrayProxy(r);
  }
  template <class... Args>
  void insert(const Index& idx, Args&&... args) const {
    check(idx);
    detail::create<C>(this->ref_, idx, detail::MsgKind::Insert, std::forward<Args>(args)...);
  }
  ElementProxy<C> operator()(int a) const { return at(index(a)); }
  ElementProxy<C> operator()(int a, int b) const { return at(index(a, b)); }
  ElementProxy<C> operator()(int a, int b, int c) const { return at(index(a, b, c)); }
  ElementProxy<C> operator[](int a) const { return at(index(a)); }
  ElementProxy<C> at(const Index& idx) const {
    check(idx);
    return ElementProxy<C>(this->ref_, idx);
  }

 private:
  void check(const Index& idx) const { detail::check_bounds(this->ref_, idx); }
};

// ---- callbacks ----------------------------------------------------------------------------------
class CkCallback {
 public:
  enum class Target : std::uint8_t { Ignore, Element, Broadcast, Function, Future };

  CkCallback() = default;  // ignore
  static CkCallback ignore() { return CkCallback(); }
  // An entry method of one element (or of a singleton chare).
  template <auto Ep, class C>
  static CkCallback to(const ElementProxy<C>& p) {
    static_assert(std::is_base_of_v<typename detail::member_traits<decltype(Ep)>::cls, C>,
                  "the entry method belongs to another class than the proxy's");
    CkCallback cb;
    cb.target_ = Target::Element;
    cb.ref_ = p.ref();
    cb.index_ = p.index();
    cb.entry_ = detail::Entry<Ep>::id();
    return cb;
  }
  // An entry method of every element of a group or array.
  template <auto Ep, class C>
  static CkCallback to(const CollectionProxy<C>& p) {
    static_assert(std::is_base_of_v<typename detail::member_traits<decltype(Ep)>::cls, C>,
                  "the entry method belongs to another class than the proxy's");
    CkCallback cb;
    cb.target_ = Target::Broadcast;
    cb.ref_ = p.ref();
    cb.entry_ = detail::Entry<Ep>::id();
    return cb;
  }
  // A plain function, called on `pe` with the data as typed arguments.
  template <auto F>
  static CkCallback function(int pe = 0) {
    CkCallback cb;
    cb.target_ = Target::Function;
    cb.entry_ = detail::Function<F>::id();
    cb.pe_ = pe;
    return cb;
  }
  // A future: its get() returns the data (this is how a suspended thread resumes).
  static CkCallback future(int pe, std::uint32_t id) {
    CkCallback cb;
    cb.target_ = Target::Future;
    cb.pe_ = pe;
    cb.entry_ = id;
    return cb;
  }

  template <class... A>
  void send(A&&... args) const {
    std::tuple<std::decay_t<A>...> packed(std::forward<A>(args)...);
    send_tuple(packed);
  }
  template <class Tuple>
  void send_tuple(Tuple& packed) const {
    if (target_ == Target::Ignore) return;
    std::size_t total;
    void* msg = detail::pack_tuple(packed, total);
    deliver(msg, total, detail::sig_of<std::remove_cvref_t<Tuple>>::hash());
  }
  // Sends an already packed argument buffer (reductions).
  void send_packed(const void* data, std::size_t len, std::uint32_t sig) const;

  Target target() const { return target_; }
  bool is_ignore() const { return target_ == Target::Ignore; }
  void pup(PUP::er& p) { p.bytes(this, sizeof *this); }

 private:
  void deliver(void* msg, std::size_t total, std::uint32_t sig) const;
  Target target_ = Target::Ignore;
  CollectionRef ref_;
  Index index_;
  std::uint32_t entry_ = 0;
  std::int32_t pe_ = 0;
};

// ---- futures ------------------------------------------------------------------------------------
namespace detail {
std::uint32_t future_create();
void future_set(int pe, std::uint32_t id, void* msg, std::size_t total, std::uint32_t sig);
// Suspends the calling thread until the value arrives; returns the message holding it.
void* future_wait(std::uint32_t id, std::uint32_t sig, const char* type_names);
bool future_ready(std::uint32_t id);
}  // namespace detail

template <class T>
class Future {
 public:
  Future() = default;
  // A future owned by this PE; get() must be called here, from a threaded entry method.
  static Future make() {
    Future f;
    f.pe_ = CkMyPe();
    f.id_ = detail::future_create();
    return f;
  }
  void set(const T& value) const {
    std::tuple<T> t(value);
    std::size_t total;
    void* msg = detail::pack_tuple(t, total);
    detail::future_set(pe_, id_, msg, total, detail::sig_of<std::tuple<T>>::hash());
  }
  // Suspends the calling thread until the value is set.
  T get() const {
    if (pe_ != CkMyPe()) CkAbort("Future::get on PE %d, but the future belongs to PE %d", CkMyPe(), pe_);
    void* msg = detail::future_wait(id_, detail::sig_of<std::tuple<T>>::hash(),
                                    detail::sig_of<std::tuple<T>>::names().c_str());
    std::tuple<T> t;
    PUP::er p = PUP::er::unpacker(CmiMsgPayload(msg) + sizeof(detail::Envelope),
                                  CmiMsgSize(msg) - CmiMsgHeaderSizeBytes - sizeof(detail::Envelope));
    p | std::get<0>(t);
    T v = std::move(std::get<0>(t));
    CmiFree(msg);
    return v;
  }
  bool ready() const { return pe_ == CkMyPe() && detail::future_ready(id_); }
  CkCallback callback() const { return CkCallback::future(pe_, id_); }
  void pup(PUP::er& p) { p | pe_; p | id_; }

 private:
  int pe_ = -1;
  std::uint32_t id_ = 0;
};

// ---- reductions ---------------------------------------------------------------------------------
enum class Reducer : std::uint8_t {
  nop, sum, product, min, max, logical_and, logical_or, bitwise_and, bitwise_or, concat, set, user
};
// A user reducer: T f(const T&, const T&) for a marshallable T, registered like an entry.
template <auto F>
struct UserReducer {};

namespace detail {
enum class RType : std::uint8_t { None, Int, Long, Float, Double, Packed };
template <class T>
constexpr RType rtype() {
  if constexpr (std::is_same_v<T, int>) return RType::Int;
  else if constexpr (std::is_same_v<T, long> || std::is_same_v<T, long long>) return RType::Long;
  else if constexpr (std::is_same_v<T, float>) return RType::Float;
  else if constexpr (std::is_same_v<T, double>) return RType::Double;
  else return RType::Packed;
}
struct Contribution {
  Reducer reducer;
  RType type;
  bool scalar;           // the contributors gave a T, not a vector<T>
  std::uint32_t user;    // user reducer index
  std::uint32_t count;   // elements per contributor (must agree)
  std::uint32_t result_sig;
  std::uint32_t elem_size;
};
void contribute(void* element, const Contribution& c, const void* data, std::size_t len,
                const CkCallback& cb);
using UserCombine = void (*)(const char* a, std::size_t alen, const char* b, std::size_t blen,
                             std::vector<char>& out);
void register_reducer(const char* name, UserCombine fn, std::uint32_t* slot);
template <auto F>
void combine_user(const char* a, std::size_t alen, const char* b, std::size_t blen, std::vector<char>& out) {
  using T = std::decay_t<decltype(F(std::declval<const std::decay_t<std::tuple_element_t<0, typename function_traits<decltype(F)>::args>>&>(),
                                    std::declval<const std::decay_t<std::tuple_element_t<0, typename function_traits<decltype(F)>::args>>&>()))>;
  T x, y;
  PUP::er pa = PUP::er::unpacker(a, alen), pb = PUP::er::unpacker(b, blen);
  pa | x;
  pb | y;
  T r = F(x, y);
  PUP::er s = PUP::er::sizer();
  s | r;
  out.resize(s.size());
  PUP::er p = PUP::er::packer(out.data(), out.size());
  p | r;
}
template <auto F>
struct Reducer_ : Registration<Reducer_<F>> {
  static const bool registered;
};
template <auto F>
const bool Reducer_<F>::registered = [] {
  register_reducer(name_of<F>(), &combine_user<F>, &Reducer_<F>::index);
  return true;
}();
}  // namespace detail

// ---- chare base classes -------------------------------------------------------------------------
class ChareBase {
 public:
  ChareBase();
  virtual ~ChareBase() = default;
  const CollectionRef& ckRef() const { return ref_; }
  const Index& ckIndex() const { return index_; }
  std::uint32_t ck_next_round() { return round_++; }

  // Reductions over the element's group or array (not singleton chares).
  template <class T>
  void contribute(const T& value, Reducer r, const CkCallback& cb) {
    if constexpr (std::is_arithmetic_v<T>) {
      using W = std::conditional_t<std::is_same_v<T, long long>, long, T>;
      static_assert(detail::rtype<W>() != detail::RType::Packed,
                    "built-in reducers take int, long, float or double (or vectors of them)");
      W v = static_cast<W>(value);
      detail::Contribution c{r, detail::rtype<W>(), true, 0, 1, result_sig<W>(r, true), sizeof(W)};
      detail::contribute(this, c, &v, sizeof v, cb);
    } else {
      static_assert(sizeof(T) == 0, "use contribute(value, ck::UserReducer<f>{}, cb) for other types");
    }
  }
  template <class T>
  void contribute(const std::vector<T>& values, Reducer r, const CkCallback& cb) {
    static_assert(detail::rtype<T>() != detail::RType::Packed,
                  "built-in reducers take int, long, float or double (or vectors of them)");
    detail::Contribution c{r, detail::rtype<T>(), false, 0, static_cast<std::uint32_t>(values.size()),
                           result_sig<T>(r, false), sizeof(T)};
    detail::contribute(this, c, values.data(), values.size() * sizeof(T), cb);
  }
  // Reduction with no data: the callback runs (with no arguments) once all contributed.
  void contribute(const CkCallback& cb) {
    detail::Contribution c{Reducer::nop, detail::RType::None, true, 0, 0,
                           detail::sig_of<std::tuple<>>::hash(), 0};
    detail::contribute(this, c, nullptr, 0, cb);
  }
  template <class T, auto F>
  void contribute(const T& value, UserReducer<F>, const CkCallback& cb) {
    PUP::er s = PUP::er::sizer();
    T v = value;
    s | v;
    std::vector<char> buf(s.size());
    PUP::er p = PUP::er::packer(buf.data(), buf.size());
    p | v;
    detail::Contribution c{Reducer::user, detail::RType::Packed, true, detail::Reducer_<F>::id(), 1,
                           detail::sig_of<std::tuple<T>>::hash(), 0};
    detail::contribute(this, c, buf.data(), buf.size(), cb);
  }

 private:
  template <class T>
  static std::uint32_t result_sig(Reducer r, bool scalar) {
    if (r == Reducer::nop) return detail::sig_of<std::tuple<>>::hash();
    if (r == Reducer::set) return detail::sig_of<std::tuple<std::vector<std::pair<Index, T>>>>::hash();
    if (r == Reducer::concat || !scalar) return detail::sig_of<std::tuple<std::vector<T>>>::hash();
    return detail::sig_of<std::tuple<T>>::hash();
  }
  CollectionRef ref_;
  Index index_;
  std::uint32_t round_ = 0;
};

// A singleton chare: ChareProxy<Derived>::create(...).
template <class Derived>
class Chare : public ChareBase {
 public:
  ChareProxy<Derived> thisProxy{ckRef()};
};

// The main chare, constructed on PE 0 with the command line after start-up.
struct MainArgs {
  int argc;
  char** argv;
};
template <class Derived>
class MainChare : public Chare<Derived> {};

// One element per PE: GroupProxy<Derived>::create(...).
template <class Derived>
class Group : public ChareBase {
 public:
  GroupProxy<Derived> thisProxy{ckRef()};
  int thisIndex = CkMyPe();
};

// An element of a D-dimensional chare array (D = 1, 2, 3).
template <class Derived, int D = 1>
class ArrayElement : public ChareBase {
  static_assert(D >= 1 && D <= 3, "chare arrays have 1, 2 or 3 dimensions");

 public:
  ArrayProxy<Derived> thisProxy{ckRef()};
  IndexOf<D> thisIndex = make_index(ckIndex());

 private:
  static IndexOf<D> make_index(const Index& i) {
    if constexpr (D == 1) return i.x[0];
    else if constexpr (D == 2) return {i.x[0], i.x[1]};
    else return {i.x[0], i.x[1], i.x[2]};
  }
};

// ---- readonly globals -------------------------------------------------------------------------
// Set on PE 0 in the main chare's constructor; every PE has the value before any other
// entry method runs. Declare at namespace scope: ck::readonly<int> numBlocks;
namespace detail {
struct ReadonlyBase {
  ReadonlyBase();
  virtual void pup(PUP::er& p) = 0;
  virtual ~ReadonlyBase() = default;
};
}  // namespace detail
template <class T>
class readonly : detail::ReadonlyBase {
 public:
  readonly() = default;
  readonly& operator=(const T& v) { value_ = v; return *this; }
  operator const T&() const { return value_; }
  const T& operator*() const { return value_; }
  const T* operator->() const { return &value_; }
  void pup(PUP::er& p) override { p | value_; }

 private:
  T value_{};
};

// ---- Channel API --------------------------------------------------------------------------------
// Direct two-sided transfers between two chares (host or GPU memory), with no metadata
// message: each side keeps a counter per direction and both build the same UCX tags.
// Both ends construct the channel with each other's proxy and the same sub-id:
//   ck::CkChannel ch(thisProxy[thisIndex], thisProxy[peer], /*sub_id=*/0);
//   ch.send(d_buf, bytes, ck::CkCallback::to<&Block::sent>(thisProxy[thisIndex]));
//   ch.recv(d_halo, bytes, done_future.callback());       // completions get the byte count
// Each direction's 28-bit id is a hash of (from, to, sub-id); every PE checks the ids its
// endpoints receive on, so a collision stops the program with a message naming both
// channels instead of mixing their data.
class CkChannel {
 public:
  CkChannel() = default;
  template <class A, class B>
  CkChannel(const ElementProxy<A>& self, const ElementProxy<B>& peer, std::uint32_t sub_id = 0)
      : CkChannel(self.ref(), self.index(), peer.ref(), peer.index(), sub_id) {}
  // The paper's form: the caller picks the ids (one per direction). Collisions with other
  // channels receiving on this PE are still detected.
  static CkChannel with_ids(const CollectionRef& self, const Index& self_idx, const CollectionRef& peer,
                            const Index& peer_idx, std::uint32_t out_id, std::uint32_t in_id);
  CkChannel(const CkChannel&) = delete;
  CkChannel& operator=(const CkChannel&) = delete;
  CkChannel(CkChannel&& o) noexcept { *this = std::move(o); }
  CkChannel& operator=(CkChannel&& o) noexcept;
  ~CkChannel();

  // `done` runs (with the byte count) once the buffer may be reused / holds the data.
  // `stream` (a cudaStream_t, optional): the transfer waits for the work queued on it
  // before the call (see CkDeviceBuffer), without blocking the PE.
  void send(const void* ptr, std::size_t size, const CkCallback& done, void* stream = nullptr);
  void recv(void* ptr, std::size_t size, const CkCallback& done, void* stream = nullptr);
  // Blocking forms for threaded entry methods.
  void send_wait(const void* ptr, std::size_t size, void* stream = nullptr);
  void recv_wait(void* ptr, std::size_t size, void* stream = nullptr);

  std::uint32_t out_id() const { return out_id_; }
  std::uint32_t in_id() const { return in_id_; }

 private:
  CkChannel(const CollectionRef& self, const Index& self_idx, const CollectionRef& peer, const Index& peer_idx,
            std::uint32_t sub_id);
  void open(const CollectionRef& self, const Index& self_idx, const CollectionRef& peer, const Index& peer_idx);
  bool open_ = false;
  int peer_pe_ = 0;
  std::uint32_t out_id_ = 0, in_id_ = 0;
  std::uint64_t out_counter_ = 0, in_counter_ = 0;
};

// ---- quiescence detection -----------------------------------------------------------------------
// `cb` runs (with no arguments) once no entry-method message is queued or in flight anywhere.
void start_qd(const CkCallback& cb);

// ---- start-up ---------------------------------------------------------------------------------
namespace detail {
int start(int argc, char** argv, ChareBase* (*make_main)(const MainArgs&));
template <class M>
ChareBase* make_main(const MainArgs& args) { return new M(args); }
}  // namespace detail

// int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
template <class M>
int start(int argc, char** argv) {
  static_assert(std::is_constructible_v<M, MainArgs>, "the main chare needs a constructor taking ck::MainArgs");
  return detail::start(argc, argv, &detail::make_main<M>);
}

template <int (*F)(const Index&, const Index&, int)>
Map Map::user() {
  return Map{MapKind::User, detail::UserMap<F>::id()};
}

}  // namespace ck

#pragma GCC visibility pop
