// The message format (Converse header + Envelope + packed arguments) and sending
// entry invocations and creations.
// Part of <ucharm/charm.h>, the header to include.
#pragma once

#include <ucharm/charm/entry.h>

#pragma GCC visibility push(default)

namespace ck {
namespace detail {

[[noreturn]] void bad_wide_index(const Index& i);  // a 4-6-D coordinate outside 16 bits

// ---- packing arguments into a message ---------------------------------------------------
// Message = Converse header + Envelope + packed arguments.
enum class MsgKind : std::uint8_t { Invoke, Broadcast, CreateChare, CreateGroup, CreateArray, Insert,
                                    CallFunction, FutureSet, Destroy, Migrate, Arrive };
// Envelope flags (Envelope::flags).
enum EnvFlag : std::uint8_t {
  kEnvForwarded = 1u << 0,  // forwarded by a PE the element had left (or by its home)
  kEnvUnordered = 1u << 1,  // prioritized or expedited: not held back for per-sender order
  kEnvTraced = 1u << 2,     // 8 bytes at the end of the message: the trace's flow id
  kEnvStamped = 1u << 3,    // an insertion stamped by the array's root with its last broadcast (seq)
};
// Small on purpose: with an 8-byte argument an entry message stays under UCX's
// shared-memory eager-short limit. Creation messages carry the full CollectionRef in
// front of the constructor arguments; every other kind names the collection by id.
struct Envelope {
  std::uint64_t collection;
  std::uint32_t entry;  // entry, constructor or function index (future id for FutureSet)
  std::int32_t x[3];    // element index (a PE for groups, functions and futures); 4-6-D: 16-bit each
  std::uint32_t sig;    // hash of the packed argument types
  MsgKind kind;
  std::uint8_t dims : 3;
  std::uint8_t flags : 5;  // EnvFlag
  std::uint16_t seq;    // per (sender PE, element): the receiver restores send order after moves
  Index index() const {
    Index i;
    i.dims = dims;
    if (dims <= 3) {
      i.x[0] = x[0];
      i.x[1] = x[1];
      i.x[2] = x[2];
    } else {
      std::int16_t h[6];
      std::memcpy(h, x, sizeof h);
      for (int d = 0; d < 6; ++d) i.x[d] = h[d];
    }
    return i;
  }
  void set_index(const Index& i) {
    dims = static_cast<std::uint8_t>(i.dims);
    flags = 0;
    seq = 0;
    if (i.dims <= 3) {
      x[0] = i.x[0];
      x[1] = i.x[1];
      x[2] = i.x[2];
      return;
    }
    std::int16_t h[6];
    for (int d = 0; d < 6; ++d) {
      if (i.x[d] < INT16_MIN || i.x[d] > INT16_MAX) bad_wide_index(i);
      h[d] = static_cast<std::int16_t>(i.x[d]);
    }
    std::memcpy(x, h, sizeof h);
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
// Sets the core's handler on a message that will run on this PE later (counted as sent).
void prepare_local(void* msg);
std::uint64_t new_collection_id();
int home_pe(const CollectionRef& c, const Index& idx);
// Where this PE sends messages for the element now (its route: the home until it moved).
int route_pe(const CollectionRef& c, const Index& idx);
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
    send_device_args(packed, route_pe(c, idx));
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

// ---- raw entries -------------------------------------------------------------------------------
template <class C, void (*F)(C*, void*)>
void invoke_raw(ChareBase* obj, void* msg) {
  F(static_cast<C*>(obj), msg);
}
std::string raw_sig_names();

}  // namespace detail

// An entry that receives its message unparsed: the dynamic entry path for runtimes built on
// the core that define their own payload (the MPI shim, the Python bindings). `F(obj, msg)`
// owns `msg`: it CmiFree's it when done, or keeps it (no copy). Registered at static
// initialisation like every entry; send with raw_send:
//   void on_data(Rank* r, void* msg);
//   void* m = ck::raw_alloc(n);  std::memcpy(ck::raw_payload(m), data, n);
//   ck::raw_send<ck::RawEntry<Rank, &on_data>>(proxy[i], m);
template <class C, void (*F)(C*, void*)>
struct RawEntry : detail::Registration<RawEntry<C, F>> {
  static const bool registered;
};
template <class C, void (*F)(C*, void*)>
const bool RawEntry<C, F>::registered = [] {
  detail::register_entry({detail::name_of<F>(), nullptr, &typeid(C), 0, &detail::raw_sig_names, false,
                          &detail::accepts<C>, 0, nullptr, &detail::invoke_raw<C, F>},
                         &RawEntry<C, F>::index);
  return true;
}();

// A Converse handler that the core registers on every PE at start-up, at the same index
// everywhere: for layers on the core that route some of their messages themselves, past
// the entry-method path (AMPI's point-to-point). Such messages are Converse messages
// (CmiAlloc, CmiSetHandler(m, ConverseHandler<F>::index()), CmiSyncSendAndFree): no
// envelope, no location lookup, not counted by quiescence detection.
template <void (*F)(void*)>
struct ConverseHandler : detail::Registration<ConverseHandler<F>> {
  static const bool registered;
  static int handler() { return static_cast<int>(ConverseHandler::id()); }
};
template <void (*F)(void*)>
const bool ConverseHandler<F>::registered = [] {
  detail::register_converse_handler(detail::name_of<F>(), F, &ConverseHandler<F>::index);
  return true;
}();

// A message with room for `len` payload bytes (at raw_payload) for a raw entry.
inline void* raw_alloc(std::size_t len) {
  return CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(detail::Envelope) + len);
}
inline char* raw_payload(void* msg) { return CmiMsgPayload(msg) + sizeof(detail::Envelope); }
inline std::size_t raw_length(void* msg) {
  // A traced message (+trace) carries its flow id in 8 bytes after the payload.
  return CmiMsgSize(msg) - CmiMsgHeaderSizeBytes - sizeof(detail::Envelope) -
         (detail::envelope(msg).flags & detail::kEnvTraced ? sizeof(std::uint64_t) : 0);
}
namespace detail {
template <class E>
void raw_address(const CollectionRef& c, const Index& idx, void* msg) {
  Envelope& e = envelope(msg);
  e.collection = c.id;
  e.set_index(idx);
  e.entry = E::id();
  e.sig = 0;
  e.kind = MsgKind::Invoke;
}
}  // namespace detail

// Sends a raw_alloc'ed message (takes it) to element `idx` of collection `c`.
template <class E>
void raw_send(const CollectionRef& c, const Index& idx, void* msg, const SendOpts& o = SendOpts{}) {
  detail::raw_address<E>(c, idx, msg);
  detail::send_msg(msg, CmiMsgSize(msg), c, o);
}

// Sends a raw_alloc'ed message (takes it) to every element of group or array `c`. The
// elements on one PE share one message: each raw entry gets a reference (CmiFree drops
// it) and must not write to it.
template <class E>
void raw_broadcast(const CollectionRef& c, void* msg, const SendOpts& o = SendOpts{}) {
  detail::raw_address<E>(c, Index{}, msg);
  detail::envelope(msg).kind = detail::MsgKind::Broadcast;
  detail::send_msg(msg, CmiMsgSize(msg), c, o);
}

// Addresses a raw_alloc'ed message to element `idx` of `c` without sending it: a message to
// run here later, e.g. the completion message of a Converse device transfer
// (CmiSendDevice/CmiRecvDevice), which the scheduler then delivers to the raw entry.
template <class E>
void raw_prepare_local(const CollectionRef& c, const Index& idx, void* msg) {
  detail::raw_address<E>(c, idx, msg);
  detail::prepare_local(msg);
}

namespace detail {

// The element being constructed: its base class reads this.
struct Constructing {
  CollectionRef ref;
  Index index;
};
const Constructing& constructing();

}  // namespace detail

}  // namespace ck

#pragma GCC visibility pop
