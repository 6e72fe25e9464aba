// Sections: a proxy for a subset of a chare array (a list of indices, or a box with a
// stride), with multicast and reduction over the subset through a spanning tree of PEs.
// Part of <ucharm/charm.h>, the header to include. See docs/programming-guide/sections.md.
//
//   auto sec = ck::SectionProxy<Block>::box(blocks, ck::index(0, 0), ck::index(8, 8), ck::index(2, 2));
//   sec.send<&Block::join>(sec.info());          // each member once, wherever it lives
//   // in Block:  ck::CkSectionInfo sec;  void join(ck::CkSectionInfo s) { sec = s; }
//   //            sec.contribute(this, x, ck::Reducer::sum, cb);   and  p | sec;  in pup()
#pragma once

#include <ucharm/charm/chare.h>

#include <vector>

#pragma GCC visibility push(default)

namespace ck {

class CkSectionInfo;

namespace detail {
// Validates the members (aborting with a clear message), builds the spanning tree from this
// PE (the section's root) and returns the section's id (unique in the job).
std::uint64_t section_create(const CollectionRef& array, std::vector<Index> members);
std::vector<Index> section_box(const CollectionRef& array, const Index& lo, const Index& hi, const Index& stride);
// Sends a packed entry message (envelope: collection = section id) to every member.
void section_multicast(void* msg, std::size_t total);
void section_contribute(std::uint64_t array, std::uint64_t section, std::uint32_t round, ChareBase* element,
                        const Contribution& c, const void* data, std::size_t len, const CkCallback& cb);
template <class T>
std::uint32_t section_result_sig(Reducer r, bool scalar) {  // what the callback receives (as ChareBase)
  if (r == Reducer::nop) return sig_of<std::tuple<>>::hash();
  if (r == Reducer::set && scalar) return sig_of<std::tuple<std::vector<std::pair<Index, T>>>>::hash();
  if (r == Reducer::set) return sig_of<std::tuple<std::vector<std::pair<Index, std::vector<T>>>>>::hash();
  if (r == Reducer::concat || !scalar) return sig_of<std::tuple<std::vector<T>>>::hash();
  return sig_of<std::tuple<T>>::hash();
}
}  // namespace detail

// A member's handle on its section (Charm++'s CkSectionInfo): the section's id and the
// member's next reduction round. Keep ONE per section in the element and pup it with the
// element's state, so that its round travels when the element migrates; a copy that
// restarts at round 0 makes the runtime abort ("contributed twice").
class CkSectionInfo {
 public:
  CkSectionInfo() = default;
  CkSectionInfo(std::uint64_t array, std::uint64_t section, std::int64_t size)
      : array_(array), section_(section), size_(size) {}
  std::uint64_t id() const { return section_; }
  std::int64_t size() const { return size_; }  // members
  bool valid() const { return section_ != 0 || array_ != 0; }

  // Reductions over the section's members: every member contributes once per round; the
  // callback gets the result as for ChareBase::contribute.
  template <class T>
  void contribute(ChareBase* self, const T& value, Reducer r, const CkCallback& cb) {
    static_assert(std::is_arithmetic_v<T>, "use contribute(self, value, ck::UserReducer<f>{}, cb) for other types");
    using W = std::conditional_t<std::is_same_v<T, long long>, long, T>;
    static_assert(detail::rtype<W>() != detail::RType::Packed,
                  "built-in reducers take int, long, float or double (or vectors of them)");
    W v = static_cast<W>(value);
    detail::Contribution c{r, detail::rtype<W>(), true, 0, 1, detail::section_result_sig<W>(r, true), sizeof(W)};
    detail::section_contribute(array_, section_, round_++, self, c, &v, sizeof v, cb);
  }
  template <class T>
  void contribute(ChareBase* self, const std::vector<T>& values, Reducer r, const CkCallback& cb) {
    static_assert(detail::rtype<T>() != detail::RType::Packed,
                  "built-in reducers take int, long, float or double (or vectors of them)");
    detail::Contribution c{r, detail::rtype<T>(), false, 0, static_cast<std::uint32_t>(values.size()),
                           detail::section_result_sig<T>(r, false), sizeof(T)};
    detail::section_contribute(array_, section_, round_++, self, c, values.data(), values.size() * sizeof(T), cb);
  }
  void contribute(ChareBase* self, const CkCallback& cb) {  // no data: the callback runs with no arguments
    detail::Contribution c{Reducer::nop, detail::RType::None, true, 0, 0, detail::sig_of<std::tuple<>>::hash(), 0};
    detail::section_contribute(array_, section_, round_++, self, c, nullptr, 0, cb);
  }
  template <class T, auto F>
  void contribute(ChareBase* self, const T& value, UserReducer<F>, const CkCallback& cb) {
    T v = value;
    PUP::er s = PUP::er::sizer();
    s | v;
    std::vector<char> buf(s.size());
    PUP::er p = PUP::er::packer(buf.data(), buf.size());
    p | v;
    detail::Contribution c{Reducer::user, detail::RType::Packed, true, detail::Reducer_<F>::id(), 1,
                           detail::sig_of<std::tuple<T>>::hash(), 0};
    detail::section_contribute(array_, section_, round_++, self, c, buf.data(), buf.size(), cb);
  }
  void pup(PUP::er& p) { p | array_; p | section_; p | size_; p | round_; }

 private:
  std::uint64_t array_ = 0;
  std::uint64_t section_ = 0;
  std::int64_t size_ = 0;
  std::uint32_t round_ = 0;
};

// A subset of a chare array (Charm++'s CProxySection_X). Made on one PE, which is the root
// of its spanning tree; the proxy can be copied and sent anywhere, and any PE may multicast
// with it (the message goes to the root first). Members may migrate at any time: each gets
// every multicast exactly once.
template <class C>
class SectionProxy {
 public:
  using element_type = C;
  SectionProxy() = default;
  // The listed elements (Charm++: CProxySection_X::ckNew(array, elems, n)). Each index must
  // lie in the array's bounds (for an array created in bulk) and appear once.
  static SectionProxy create(const ArrayProxy<C>& array, std::vector<Index> members) {
    const std::int64_t n = static_cast<std::int64_t>(members.size());
    const std::uint64_t id = detail::section_create(array.ref(), std::move(members));
    return SectionProxy(array.ref(), id, n);
  }
  // The box lo <= i < hi (per dimension) taking every stride-th index from lo (Charm++:
  // ckNew(array, lbound..., ubound..., stride...), but with an exclusive upper bound). A
  // stride with dims == 0 means 1 in every dimension.
  static SectionProxy box(const ArrayProxy<C>& array, const Index& lo, const Index& hi, const Index& stride = Index{}) {
    return create(array, detail::section_box(array.ref(), lo, hi, stride));
  }

  // Multicast: runs `Ep(args...)` once on every member.
  template <auto Ep, class... Args>
  void send(Args&&... args) const {
    using T = detail::member_traits<decltype(Ep)>;
    static_assert(std::is_same_v<typename T::cls, C> || std::is_base_of_v<typename T::cls, C>,
                  "this entry method belongs to another chare class than the section's");
    static_assert(T::arity == sizeof...(Args), "wrong number of arguments for this entry method");
    static_assert(std::is_constructible_v<typename T::args, Args&&...>,
                  "argument types do not match the entry method's parameters");
    static_assert(detail::count_device_params_of(static_cast<typename T::args*>(nullptr)) == 0,
                  "CkDeviceBuffer arguments go to one element; multicasting them is not supported");
    if (id_ == 0) CkAbort("SectionProxy::send on a section proxy that was never created");
    typename T::args packed(std::forward<Args>(args)...);
    std::size_t total;
    void* msg = detail::pack_tuple(packed, total);
    detail::Envelope& e = detail::envelope(msg);
    e.collection = id_;  // the section: its tree knows the array
    e.set_index(Index{});
    e.entry = detail::Entry<Ep>::id();
    e.sig = detail::sig_of<typename T::args>::hash();
    e.kind = detail::MsgKind::Broadcast;
    detail::section_multicast(msg, total);
  }
  // What a member keeps to contribute to the section's reductions.
  CkSectionInfo info() const { return CkSectionInfo(ref_.id, id_, size_); }
  std::uint64_t id() const { return id_; }
  std::int64_t size() const { return size_; }
  const CollectionRef& ref() const { return ref_; }
  ArrayProxy<C> array() const { return ArrayProxy<C>(ref_); }
  void pup(PUP::er& p) { p | ref_; p | id_; p | size_; }

 private:
  SectionProxy(const CollectionRef& r, std::uint64_t id, std::int64_t n) : ref_(r), id_(id), size_(n) {}
  CollectionRef ref_;
  std::uint64_t id_ = 0;
  std::int64_t size_ = 0;
};

}  // namespace ck

#pragma GCC visibility pop
