// Proxies: an element, a singleton chare, a group, a chare array.
// Part of <ucharm/charm.h>, the header to include.
#pragma once

#include <ucharm/charm/message.h>

#pragma GCC visibility push(default)

namespace ck {

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
  // The PE that holds the element by its collection's map (where it is built).
  int home_pe() const { return detail::home_pe(ref_, idx_); }
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
  ChareProxy() { (void)detail::MigrationCtor<C>::id(); }  // checkpoints rebuild chares with it
  explicit ChareProxy(const CollectionRef& r) : ElementProxy<C>(r, Index{}) { (void)detail::MigrationCtor<C>::id(); }
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
  GroupProxy() { (void)detail::MigrationCtor<C>::id(); }  // checkpoints rebuild branches with it
  explicit GroupProxy(const CollectionRef& r) : CollectionProxy<C>(r) { (void)detail::MigrationCtor<C>::id(); }
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
class SectionProxy;  // section.h

template <class C>
class ArrayProxy : public CollectionProxy<C> {
 public:
  ArrayProxy() { (void)detail::MigrationCtor<C>::id(); }
  explicit ArrayProxy(const CollectionRef& r) : CollectionProxy<C>(r) { (void)detail::MigrationCtor<C>::id(); }
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
  // An array that grows with insert(); `dims` is 1 to 6.
  static ArrayProxy create_empty(int dims, const Map& map = Map::round_robin) {
    if (dims < 1 || dims > kMaxDims) CkAbort("ArrayProxy: arrays have 1 to 6 dimensions, not %d", dims);
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
  ElementProxy<C> operator()(int a, int b, int c, int d) const { return at(index(a, b, c, d)); }
  ElementProxy<C> operator()(int a, int b, int c, int d, int e) const { return at(index(a, b, c, d, e)); }
  ElementProxy<C> operator()(int a, int b, int c, int d, int e, int f) const {
    return at(index(a, b, c, d, e, f));
  }
  ElementProxy<C> operator[](int a) const { return at(index(a)); }
  ElementProxy<C> at(const Index& idx) const {
    check(idx);
    return ElementProxy<C>(this->ref_, idx);
  }
  // A section of this array (section.h): a list of indices, or a box [lo, hi) with a stride.
  template <class S = SectionProxy<C>>
  S section(std::vector<Index> members) const { return S::create(*this, std::move(members)); }
  template <class S = SectionProxy<C>>
  S section_box(const Index& lo, const Index& hi, const Index& stride = Index{}) const {
    return S::box(*this, lo, hi, stride);
  }

 private:
  void check(const Index& idx) const { detail::check_bounds(this->ref_, idx); }
};

}  // namespace ck

#pragma GCC visibility pop
