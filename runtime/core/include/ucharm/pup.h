// PUP: one method sizes, packs and unpacks an object (Charm++'s idea, this library's code).
//   struct Particle { double x, y; std::vector<int> ids;
//                     void pup(PUP::er& p) { p | x; p | y; p | ids; } };
// Marshallable: arithmetic types, enums, std::string, std::vector, std::array, std::pair,
// std::span<const T> of trivially copyable T (received as a view into the message, not a
// copy), and classes with a pup(PUP::er&) method.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
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
  // Unpacking: a pointer to the next n bytes, in place.
  const char* view(std::size_t n) {
    check(n);
    const char* p = buf_ + pos_;
    pos_ += n;
    return p;
  }

 private:
  er(Mode m, char* buf, std::size_t len) : mode_(m), buf_(buf), limit_(len) {}
  void check(std::size_t n) const {
    if (n > limit_ - pos_) [[unlikely]] overrun(n);  // pos_ <= limit_: no overflow
  }
  [[noreturn]] void overrun(std::size_t n) const;  // aborts: reading past the end
  [[noreturn]] void bad_length(std::uint64_t n, std::size_t min_bytes, const std::type_info& type) const;
  const char* context_ = nullptr;
  Mode mode_;
  char* buf_;
  std::size_t limit_;
  std::size_t pos_ = 0;
};

template <class T>
concept has_pup = requires(T& t, er& p) { t.pup(p); };

template <class T>
struct is_span : std::false_type {};
template <class T, std::size_t E>
struct is_span<std::span<T, E>> : std::true_type {};
template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct is_std_array : std::false_type {};
template <class T, std::size_t N>
struct is_std_array<std::array<T, N>> : std::true_type {};
template <class T>
struct is_pair : std::false_type {};
template <class A, class B>
struct is_pair<std::pair<A, B>> : std::true_type {};

template <class T>
void operator|(er& p, T& v);

namespace detail {
// The fewest bytes one T takes on the wire (0: unknown, e.g. a class with its own pup).
template <class T>
constexpr std::size_t min_wire_size() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_arithmetic_v<U> || std::is_enum_v<U>) return sizeof(U);
  else if constexpr (has_pup<U>) return 0;
  else if constexpr (std::is_same_v<U, std::string> || is_vector<U>::value || is_span<U>::value)
    return sizeof(std::uint64_t);
  else if constexpr (is_std_array<U>::value) return std::tuple_size_v<U> * min_wire_size<typename U::value_type>();
  else if constexpr (is_pair<U>::value)
    return min_wire_size<typename U::first_type>() + min_wire_size<typename U::second_type>();
  else return 0;
}
// A container's length; unpacking, it is checked against the bytes left before the resize.
template <class T>
void pup_size(er& p, T& container) {
  std::uint64_t n = container.size();
  p.bytes(&n, sizeof n);
  if (p.isUnpacking()) {
    p.check_length(n, min_wire_size<typename T::value_type>(), typeid(T));
    container.resize(static_cast<std::size_t>(n));
  }
}
}  // namespace detail

template <class T>
void operator|(er& p, T& v) {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_arithmetic_v<U> || std::is_enum_v<U>) {
    p.bytes(const_cast<U*>(&v), sizeof(U));
  } else if constexpr (has_pup<U>) {
    const_cast<U&>(v).pup(p);
  } else if constexpr (std::is_same_v<U, std::string>) {
    detail::pup_size(p, v);
    if (!v.empty()) p.bytes(v.data(), v.size());
  } else if constexpr (is_vector<U>::value) {
    using E = typename U::value_type;
    detail::pup_size(p, v);
    if constexpr (std::is_trivially_copyable_v<E> && !has_pup<E> && !std::is_same_v<E, bool>) {
      p.align(alignof(E) < 8 ? 8 : alignof(E));  // the same wire form as a std::span<const E>
      if (!v.empty()) p.bytes(v.data(), v.size() * sizeof(E));
    } else if constexpr (std::is_same_v<E, bool>) {
      for (std::size_t i = 0; i < v.size(); ++i) {
        bool b = v[i];
        p | b;
        v[i] = b;
      }
    } else {
      for (auto& e : v) p | e;
    }
  } else if constexpr (is_std_array<U>::value) {
    for (auto& e : v) p | e;
  } else if constexpr (is_pair<U>::value) {
    p | v.first;
    p | v.second;
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
                  "(or use arithmetic types, std::string, std::vector, std::array, std::span)");
  }
}

}  // namespace PUP

#pragma GCC visibility pop
