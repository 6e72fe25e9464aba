// Chare base classes (singleton, main, group element, array element) and readonly globals.
// Part of <ucharm/charm.h>, the header to include.
#pragma once

#include <ucharm/charm/reduction.h>

#pragma GCC visibility push(default)

namespace ck {

namespace detail {
struct TaskState;  // tasks.cpp: the element's suspended coroutines and kept messages
struct TaskStateFree {
  void operator()(TaskState* t) const noexcept;  // frees suspended frames (with a warning)
};
// What the runtime keeps per element; it travels with the element when it migrates.
struct ElementRuntime {
  std::uint32_t moves = 0;        // migrations so far (orders location updates)
  std::uint16_t bcast_seen = 0;   // the last numbered broadcast delivered (array broadcasts)
  bool migratable = true;
  bool at_sync = false;           // waiting in AtSync for the balancer
  std::uint32_t sync_step = 0;    // AtSync calls so far
  double load = 0;                // seconds in entry methods since the last balancing step
  std::vector<std::pair<std::int32_t, std::uint16_t>> next_seq;  // sender PE -> next expected
  std::vector<void*> early;       // arrived ahead of an earlier message from the same sender
  int threads = 0;                // threaded entries of this element not finished
  int leaving_to = -1;            // migrateMe(pe) called, not done yet
  std::unique_ptr<TaskState, TaskStateFree> tasks;  // coroutine entries (task.h); made on first use
};
struct ElementAccess;
}  // namespace detail

// ---- chare base classes -------------------------------------------------------------------------
class ChareBase {
 public:
  ChareBase();
  virtual ~ChareBase() = default;

  // ---- migration (array elements) ----
  // The element's state: one method sizes, packs and unpacks it (see <ucharm/pup.h>). Called
  // when the element migrates (and for checkpoints). The default has no state.
  virtual void pup(PUP::er&) {}
  // Moves this element to `pe` once the running entry method returns; messages sent to it
  // follow it (each reaches it once, in each sender's order).
  void migrateMe(int pe);
  // Called on the old PE just before the state is packed, and on the new PE after it was
  // unpacked (Charm++'s names).
  virtual void ckAboutToMigrate() {}
  virtual void ckJustMigrated() {}
  // In ckAboutToMigrate: the PE the element is about to go to (-1 elsewhere).
  int ckLeavingTo() const { return rt_.leaving_to; }
  // An element that must stay where it is (migrateMe aborts; the balancer leaves it).
  void setMigratable(bool m) { rt_.migratable = m; }
  bool isMigratable() const { return rt_.migratable; }

  // ---- load balancing at sync points ----
  // Set true in the constructor: the element calls AtSync() at points where it may be moved;
  // ResumeFromSync() runs once the balancer has decided (and moved it, maybe).
  bool usesAtSync = false;
  void AtSync();
  virtual void ResumeFromSync() {}
  // Seconds spent in this element's entry methods since the last balancing step.
  double ckLoad() const { return rt_.load; }
  // The load the balancer sees, set by an element that measures its own (Charm++'s names):
  // e.g. an MPI rank's thread, which runs outside entry methods.
  void setObjTime(double seconds) { rt_.load = seconds; }
  double getObjTime() const { return rt_.load; }

  const CollectionRef& ckRef() const { return ref_; }
  const Index& ckIndex() const { return index_; }
  std::uint32_t ck_next_round() { return round_++; }
  // Deletes this singleton chare, or this element of an array filled by insert(), once
  // the current entry method has returned (Charm++'s ckDestroy). Messages sent to it
  // afterwards are held as for an element not inserted (quiescence detection reports them).
  void ckDestroy();

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
    if (r == Reducer::set && scalar) return detail::sig_of<std::tuple<std::vector<std::pair<Index, T>>>>::hash();
    if (r == Reducer::set)
      return detail::sig_of<std::tuple<std::vector<std::pair<Index, std::vector<T>>>>>::hash();
    if (r == Reducer::concat || !scalar) return detail::sig_of<std::tuple<std::vector<T>>>::hash();
    return detail::sig_of<std::tuple<T>>::hash();
  }
  friend struct detail::ElementAccess;
  CollectionRef ref_;
  Index index_;
  std::uint32_t round_ = 0;
  detail::ElementRuntime rt_;
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

// An element of a D-dimensional chare array (D = 1 to 6).
template <class Derived, int D = 1>
class ArrayElement : public ChareBase {
  static_assert(D >= 1 && D <= kMaxDims, "chare arrays have 1 to 6 dimensions");

 public:
  ArrayProxy<Derived> thisProxy{ckRef()};
  IndexOf<D> thisIndex = make_index(ckIndex());

 private:
  static IndexOf<D> make_index(const Index& i) {
    if constexpr (D == 1) {
      return i.x[0];
    } else {
      IndexOf<D> r{};
      for (int d = 0; d < D; ++d) r[static_cast<std::size_t>(d)] = i.x[d];
      return r;
    }
  }
};

// This PE's location-manager counts since start-up (for tests and diagnostics): messages it
// forwarded because their element was not here, route corrections it received, elements that
// left and arrived.
struct LocationCounts {
  std::uint64_t forwarded = 0;
  std::uint64_t corrections = 0;
  std::uint64_t migrated_out = 0;
  std::uint64_t migrated_in = 0;
};
LocationCounts location_stats();

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

}  // namespace ck

using CkLocationCounts = ck::LocationCounts;
inline CkLocationCounts CkLocationStats() { return ck::location_stats(); }

#pragma GCC visibility pop
