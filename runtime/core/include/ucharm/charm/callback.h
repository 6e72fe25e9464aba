// CkCallback: where a result goes (an element, a broadcast, a function, a future).
// Part of <ucharm/charm.h>, the header to include.
#pragma once

#include <ucharm/charm/proxy.h>

#pragma GCC visibility push(default)

namespace ck {

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

}  // namespace ck

#pragma GCC visibility pop
