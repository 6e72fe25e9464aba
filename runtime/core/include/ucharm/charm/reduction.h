// Reducers and the contribution record (the contribute() calls are on ChareBase).
// Part of <ucharm/charm.h>, the header to include.
#pragma once

#include <ucharm/charm/callback.h>

#pragma GCC visibility push(default)

namespace ck {

// ---- reductions ---------------------------------------------------------------------------------
enum class Reducer : std::uint8_t {
  nop, sum, product, min, max, logical_and, logical_or, bitwise_and, bitwise_or, concat, set, user
};
// What the callback receives, for contributions of a T (scalar) or a vector<T>:
//   sum .. bitwise_or   T, or vector<T> (element-wise; every contributor gives the same length)
//   concat              vector<T> (all contributions end to end)
//   set                 vector<pair<Index, T>>, or vector<pair<Index, vector<T>>> (lengths may
//                       differ), one record per contributor, sorted by index
//   nop                 nothing
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

}  // namespace ck

#pragma GCC visibility pop
