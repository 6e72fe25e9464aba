// PUP: one method sizes, packs and unpacks an object (Charm++'s idea, this library's code).
//   struct Particle { double x, y; std::vector<int> ids;
//                     void pup(PUP::er& p) { p | x; p | y; p | ids; } };
// Marshallable, nested freely: arithmetic types, enums, classes with a pup(PUP::er&)
// method, C arrays T[N], std::basic_string, vector, deque, list, array, pair, tuple,
// optional, variant (and monostate), unique_ptr, bitset, map, multimap, set, multiset and their unordered
// forms, and std::span<const T> of trivially copyable T (received as a view into the
// message, not a copy). PUParray(p, ptr, n) / p(ptr, n) marshal n elements at ptr.
// Lengths are 64-bit. Unpacking checks every count against the bytes left before it
// resizes or allocates, and aborts with a message naming the type when it cannot fit, when
// an index or flag is out of range, or when a pup() reads past what was written.
#pragma once

#include <array>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#pragma GCC visibility push(default)

namespace PUP {

class er {
 public:
  enum class Mode : std::uint8_t { Sizing, Packing, Unpacking };

  static er sizer() { return er(Mode::Sizing, nullptr, 0); }
  static er packer(char* buf, std::size_t len) { return er(Mode::Packing, buf, len); }
  static er unpacker(const char* buf, std::size_t len) {
    return er(Mode::Unpacking, const_cast<char*>(buf), len);
  }

  bool isSizing() const { return mode_ == Mode::Sizing; }
  bool isPacking() const { return mode_ == Mode::Packing; }
  bool isUnpacking() const { return mode_ == Mode::Unpacking; }
  // Packing an object that is deleted right after (a migration): Charm++'s isDeleting.
  bool isDeleting() const { return deleting_; }
  void set_deleting(bool d) { deleting_ = d; }
  std::size_t size() const { return pos_; }
  // Unpacking: bytes not read yet.
  std::size_t remaining() const { return limit_ - pos_; }
  // What is being unpacked (an entry method's registration name), for error messages.
  void set_context(const char* what) { context_ = what; }
  // Unpacking: a length read from the message claims `n` elements of `type`, each at
  // least `min_bytes` on the wire; stops with a message naming the type if they cannot
  // fit in what remains (checked before anything is resized).
  void check_length(std::uint64_t n, std::size_t min_bytes, const std::type_info& type) const {
    if (min_bytes && n > remaining() / min_bytes) [[unlikely]] bad_length(n, min_bytes, type);
  }
  // Unpacking: a value read from the message (a variant's index, a presence flag) must be
  // below `limit`; stops with a message naming the type and what was read otherwise.
  void check_value(std::uint64_t value, std::uint64_t limit, const char* what, const std::type_info& type) const {
    if (value >= limit) [[unlikely]] bad_value(value, limit, what, type);
  }

  void bytes(void* p, std::size_t n) {
    if (mode_ == Mode::Packing) std::memcpy(buf_ + pos_, p, n);
    else if (mode_ == Mode::Unpacking) {
      check(n);
      std::memcpy(p, buf_ + pos_, n);
    }
    pos_ += n;
  }
  // Aligns the position (the same way in every mode) so that views into the buffer are
  // aligned for their element type.
  void align(std::size_t a) {
    std::size_t pad = (a - pos_ % a) % a;
    if (mode_ == Mode::Packing && pad) std::memset(buf_ + pos_, 0, pad);
    pos_ += pad;
  }
  // Packing: the next n bytes of the buffer, for the caller to fill in place (no copy
  // through a temporary); sizing: counts them; nullptr then.
  char* pack_area(std::size_t n) {
    char* p = mode_ == Mode::Packing ? buf_ + pos_ : nullptr;
    pos_ += n;
    return p;
  }
  // Unpacking: a pointer to the next n bytes, in place.
  const char* view(std::size_t n) {
    check(n);
    const char* p = buf_ + pos_;
    pos_ += n;
    return p;
  }

  // Charm++'s call forms: p(x) is p | x; p(ptr, n) is PUParray(p, ptr, n).
  template <class T>
  void operator()(T& v);
  template <class T>
  void operator()(T* ptr, std::size_t n);

  // Packing a unique_ptr<Base> that holds a derived object would slice it: stops instead.
  [[noreturn]] static void sliced(const std::type_info& declared, const std::type_info& held);

 private:
  er(Mode m, char* buf, std::size_t len) : mode_(m), buf_(buf), limit_(len) {}
  void check(std::size_t n) const {
    if (n > limit_ - pos_) [[unlikely]] overrun(n);  // pos_ <= limit_: no overflow
  }
  [[noreturn]] void overrun(std::size_t n) const;  // aborts: reading past the end
  [[noreturn]] void bad_length(std::uint64_t n, std::size_t min_bytes, const std::type_info& type) const;
  [[noreturn]] void bad_value(std::uint64_t value, std::uint64_t limit, const char* what,
                              const std::type_info& type) const;
  const char* context_ = nullptr;
  bool deleting_ = false;
  Mode mode_;
  char* buf_;
  std::size_t limit_;
  std::size_t pos_ = 0;
};

template <class T>
concept has_pup = requires(T& t, er& p) { t.pup(p); };

// ---- which standard template a type is --------------------------------------------------
template <class T, template <class...> class Tmpl>
struct is_instance : std::false_type {};
template <template <class...> class Tmpl, class... A>
struct is_instance<Tmpl<A...>, Tmpl> : std::true_type {};
template <class T, template <class...> class Tmpl>
inline constexpr bool is_instance_v = is_instance<std::remove_cv_t<T>, Tmpl>::value;

template <class T>
struct is_span : std::false_type {};
template <class T, std::size_t E>
struct is_span<std::span<T, E>> : std::true_type {};
template <class T>
struct is_vector : std::bool_constant<is_instance_v<T, std::vector>> {};
template <class T>
struct is_std_array : std::false_type {};
template <class T, std::size_t N>
struct is_std_array<std::array<T, N>> : std::true_type {};
template <class T>
struct is_pair : std::bool_constant<is_instance_v<T, std::pair>> {};
template <class T>
struct is_bitset : std::false_type {};
template <std::size_t N>
struct is_bitset<std::bitset<N>> : std::true_type {};

template <class T>
inline constexpr bool is_string_v = is_instance_v<T, std::basic_string>;
// Containers sent as a length and then their elements, in order.
template <class T>
inline constexpr bool is_sequence_v = is_instance_v<T, std::deque> || is_instance_v<T, std::list>;
template <class T>
inline constexpr bool is_map_v = is_instance_v<T, std::map> || is_instance_v<T, std::multimap> ||
                                 is_instance_v<T, std::unordered_map> ||
                                 is_instance_v<T, std::unordered_multimap>;
template <class T>
inline constexpr bool is_set_v = is_instance_v<T, std::set> || is_instance_v<T, std::multiset> ||
                                 is_instance_v<T, std::unordered_set> ||
                                 is_instance_v<T, std::unordered_multiset>;

template <class T>
void operator|(er& p, T& v);
template <class T>
void PUParray(er& p, T* ptr, std::size_t n);

namespace detail {
// Types whose bytes are their wire form (copied as one block): arithmetic types, enums,
// arrays of them, and trivially copyable classes without pup(). Not optional, variant or
// bitset: they are trivially copyable but carry a flag or index that unpacking checks.
template <class T>
constexpr bool is_raw() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_arithmetic_v<U> || std::is_enum_v<U>) return !std::is_same_v<U, bool>;
  else if constexpr (is_std_array<U>::value) return is_raw<typename U::value_type>();
  else if constexpr (std::is_array_v<U>) return is_raw<std::remove_extent_t<U>>();
  else if constexpr (has_pup<U> || is_instance_v<U, std::optional> || is_instance_v<U, std::variant> ||
                     is_bitset<U>::value || is_pair<U>::value || is_instance_v<U, std::tuple>)
    return false;
  else return std::is_trivially_copyable_v<U>;
}

// The fewest bytes one T takes on the wire (0: unknown, e.g. a class with its own pup).
template <class T>
constexpr std::size_t min_wire_size() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_arithmetic_v<U> || std::is_enum_v<U>) return sizeof(U);
  else if constexpr (has_pup<U> || std::is_same_v<U, std::monostate>) return 0;
  else if constexpr (is_string_v<U> || is_vector<U>::value || is_span<U>::value || is_sequence_v<U> ||
                     is_map_v<U> || is_set_v<U>)
    return sizeof(std::uint64_t);
  else if constexpr (is_std_array<U>::value) return std::tuple_size_v<U> * min_wire_size<typename U::value_type>();
  else if constexpr (std::is_array_v<U>) return std::extent_v<U> * min_wire_size<std::remove_extent_t<U>>();
  else if constexpr (is_pair<U>::value)
    return min_wire_size<typename U::first_type>() + min_wire_size<typename U::second_type>();
  else if constexpr (is_instance_v<U, std::tuple>)
    return []<std::size_t... I>(std::index_sequence<I...>) {
      return (std::size_t{0} + ... + min_wire_size<std::tuple_element_t<I, U>>());
    }(std::make_index_sequence<std::tuple_size_v<U>>{});
  else if constexpr (is_instance_v<U, std::optional> || is_instance_v<U, std::unique_ptr>) return 1;
  else if constexpr (is_instance_v<U, std::variant>) return sizeof(std::uint32_t);
  else if constexpr (is_bitset<U>::value) return (U().size() + 7) / 8;
  else return 0;
}

// Writes or reads a container's length; unpacking, checks it against the bytes left
// (before any resize) and returns it.
template <class C>
std::size_t pup_count(er& p, const C& c, std::size_t min_bytes) {
  std::uint64_t n = c.size();
  p.bytes(&n, sizeof n);
  if (p.isUnpacking()) p.check_length(n, min_bytes, typeid(C));
  return static_cast<std::size_t>(n);
}

// Vectors, deques, lists: the length, then each element. Elements of unknown least size
// (a pup() may write nothing) are appended one by one rather than resized up front, so a
// bogus length costs no more memory than the elements that the message really holds.
template <class C>
void pup_sequence(er& p, C& c) {
  using E = typename C::value_type;
  constexpr std::size_t min = min_wire_size<E>();
  std::size_t n = pup_count(p, c, min);
  if (!p.isUnpacking()) {
    for (auto& e : c) p | e;
  } else if constexpr (min > 0) {
    c.clear();
    c.resize(n);
    for (auto& e : c) p | e;
  } else {
    c.clear();
    if constexpr (requires { c.reserve(n); }) c.reserve(n < p.remaining() ? n : p.remaining());
    for (std::size_t i = 0; i < n; ++i) p | c.emplace_back();
  }
}

// Maps and sets: the length, then each element (a map's key, then its value); unpacking
// inserts in the order read, at the end (already sorted for ordered containers).
template <class C>
void pup_associative(er& p, C& c) {
  using K = typename C::key_type;
  std::size_t n = pup_count(p, c, min_wire_size<typename C::value_type>());
  if (!p.isUnpacking()) {
    for (auto& e : c) {
      if constexpr (is_map_v<C>) {
        p | const_cast<K&>(e.first);  // keys are only read when sizing or packing
        p | e.second;
      } else {
        p | const_cast<K&>(e);
      }
    }
    return;
  }
  c.clear();
  if constexpr (requires { c.reserve(n); }) c.reserve(n < p.remaining() ? n : p.remaining());
  for (std::size_t i = 0; i < n; ++i) {
    K k{};
    p | k;
    if constexpr (is_map_v<C>) {
      typename C::mapped_type m{};
      p | m;
      c.emplace_hint(c.end(), std::move(k), std::move(m));
    } else {
      c.emplace_hint(c.end(), std::move(k));
    }
  }
}

// A variant: its index (u32), then the alternative it holds.
template <class V>
void pup_variant(er& p, V& v) {
  constexpr std::size_t count = std::variant_size_v<V>;
  std::uint32_t index = v.valueless_by_exception() ? UINT32_MAX : static_cast<std::uint32_t>(v.index());
  p.bytes(&index, sizeof index);
  if (p.isUnpacking()) p.check_value(index, count, "alternative index", typeid(V));
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto one = [&]<std::size_t J>(std::integral_constant<std::size_t, J>) {
      if (index != J) return;
      if (p.isUnpacking()) v.template emplace<J>();
      p | std::get<J>(v);
    };
    (one(std::integral_constant<std::size_t, I>{}), ...);
  }(std::make_index_sequence<count>{});
}

// optional and unique_ptr: a presence flag (one byte, 0 or 1), then the value if present.
template <class T>
bool pup_flag(er& p, bool present) {
  std::uint8_t flag = present ? 1 : 0;
  p.bytes(&flag, 1);
  if (p.isUnpacking()) p.check_value(flag, 2, "presence flag", typeid(T));
  return flag != 0;
}
}  // namespace detail

template <class T>
void operator|(er& p, T& v) {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_arithmetic_v<U> || std::is_enum_v<U>) {
    p.bytes(const_cast<U*>(&v), sizeof(U));
  } else if constexpr (has_pup<U>) {
    const_cast<U&>(v).pup(p);
  } else if constexpr (std::is_same_v<U, std::monostate>) {
    // an empty variant alternative: nothing on the wire
  } else if constexpr (is_string_v<U>) {
    using C = typename U::value_type;
    std::size_t n = detail::pup_count(p, v, sizeof(C));
    if (p.isUnpacking()) v.resize(n);
    if (n) p.bytes(v.data(), n * sizeof(C));
  } else if constexpr (is_vector<U>::value) {
    using E = typename U::value_type;
    if constexpr (detail::is_raw<E>()) {
      std::size_t n = detail::pup_count(p, v, sizeof(E));
      if (p.isUnpacking()) v.resize(n);
      p.align(alignof(E) < 8 ? 8 : alignof(E));  // the same wire form as a std::span<const E>
      if (n) p.bytes(v.data(), n * sizeof(E));
    } else if constexpr (std::is_same_v<E, bool>) {
      std::size_t n = detail::pup_count(p, v, 1);
      if (p.isUnpacking()) v.assign(n, false);
      for (std::size_t i = 0; i < n; ++i) {
        bool b = v[i];
        p | b;
        v[i] = b;
      }
    } else {
      detail::pup_sequence(p, v);
    }
  } else if constexpr (is_sequence_v<U>) {
    detail::pup_sequence(p, v);
  } else if constexpr (is_std_array<U>::value) {
    PUParray(p, v.data(), v.size());
  } else if constexpr (std::is_array_v<U>) {
    PUParray(p, &v[0], std::extent_v<U>);
  } else if constexpr (is_pair<U>::value) {
    p | v.first;
    p | v.second;
  } else if constexpr (is_instance_v<U, std::tuple>) {
    std::apply([&](auto&... e) { ((p | e), ...); }, v);
  } else if constexpr (is_map_v<U> || is_set_v<U>) {
    detail::pup_associative(p, v);
  } else if constexpr (is_instance_v<U, std::optional>) {
    if (detail::pup_flag<U>(p, v.has_value())) {
      if (p.isUnpacking()) v.emplace();
      p | *v;
    } else if (p.isUnpacking()) {
      v.reset();
    }
  } else if constexpr (is_instance_v<U, std::variant>) {
    detail::pup_variant(p, v);
  } else if constexpr (is_instance_v<U, std::unique_ptr>) {
    using E = typename U::element_type;
    static_assert(!std::is_array_v<E>, "std::unique_ptr<T[]> has no length: use std::vector<T>");
    static_assert(std::is_same_v<U, std::unique_ptr<E>>, "a std::unique_ptr with its own deleter cannot be unpacked");
    if constexpr (std::is_polymorphic_v<E>) {
      if (!p.isUnpacking() && v && typeid(*v) != typeid(E)) er::sliced(typeid(E), typeid(*v));
    }
    if (detail::pup_flag<U>(p, v != nullptr)) {
      if (p.isUnpacking()) v = std::make_unique<E>();  // unpacking allocates
      p | *v;
    } else if (p.isUnpacking()) {
      v.reset();
    }
  } else if constexpr (is_bitset<U>::value) {
    std::array<std::uint8_t, (U().size() + 7) / 8> b{};  // bit i in byte i / 8
    for (std::size_t i = 0; i < v.size(); ++i) b[i / 8] |= static_cast<std::uint8_t>(v[i] << (i % 8));
    p.bytes(b.data(), b.size());
    if (p.isUnpacking())
      for (std::size_t i = 0; i < v.size(); ++i) const_cast<U&>(v)[i] = (b[i / 8] >> (i % 8)) & 1;
  } else if constexpr (is_span<U>::value) {
    using E = std::remove_const_t<typename U::element_type>;
    static_assert(std::is_trivially_copyable_v<E>, "std::span arguments need trivially copyable elements");
    std::uint64_t n = v.size();
    p.bytes(&n, sizeof n);
    p.align(alignof(E) < 8 ? 8 : alignof(E));
    if (p.isUnpacking()) {
      p.check_length(n, sizeof(E), typeid(U));  // before n * sizeof(E), which could overflow
      const char* at = p.view(static_cast<std::size_t>(n) * sizeof(E));
      v = U(reinterpret_cast<typename U::element_type*>(at), static_cast<std::size_t>(n));
    } else if (n) {
      p.bytes(const_cast<E*>(v.data()), static_cast<std::size_t>(n) * sizeof(E));
    }
  } else {
    static_assert(sizeof(U) == 0,
                  "this type cannot be marshalled: give it a method void pup(PUP::er&) "
                  "(or use arithmetic types and the standard containers, see ucharm/pup.h)");
  }
}

// n elements at ptr, no length on the wire: the caller knows n on both sides and, when
// p.isUnpacking(), has made room for them (Charm++'s PUParray).
template <class T>
void PUParray(er& p, T* ptr, std::size_t n) {
  if constexpr (detail::is_raw<T>()) {
    if (p.isUnpacking() && n > SIZE_MAX / sizeof(T)) p.check_length(n, sizeof(T), typeid(T[]));  // would overflow
    if (n) p.bytes(const_cast<std::remove_cv_t<T>*>(ptr), n * sizeof(T));
  } else {
    for (std::size_t i = 0; i < n; ++i) p | ptr[i];
  }
}

template <class T>
void er::operator()(T& v) {
  *this | v;
}
template <class T>
void er::operator()(T* ptr, std::size_t n) {
  PUParray(*this, ptr, n);
}

}  // namespace PUP

#pragma GCC visibility pop
