// Address-range bookkeeping of the memory-type cache (internal header): a set of disjoint
// half-open ranges [start, end). Kept apart from the CUDA and UCX calls so that it can
// be tested without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>

namespace ucharm::machine {

class RangeSet {
 public:
  // The range holding `addr`, if any: its end (else 0).
  std::uintptr_t end_of(std::uintptr_t addr) const {
    auto it = ranges_.upper_bound(addr);
    if (it == ranges_.begin()) return 0;
    --it;
    return addr < it->second ? it->second : 0;
  }
  bool contains(std::uintptr_t addr) const { return end_of(addr) != 0; }
  // True if one recorded range covers all of [start, start + size).
  bool covers(std::uintptr_t start, std::size_t size) const {
    const std::uintptr_t end = end_of(start);
    return end != 0 && start + size <= end;
  }
  // Records [start, start + size), replacing any recorded range it overlaps (an
  // allocation that now lives there supersedes what was there before).
  void insert(std::uintptr_t start, std::size_t size) {
    if (size == 0) return;
    erase(start, size);
    ranges_[start] = start + size;
  }
  // Forgets every range overlapping [addr, addr + len) (len 0: the one holding addr).
  // Returns how many were forgotten.
  std::size_t erase(std::uintptr_t addr, std::size_t len) {
    const std::uintptr_t end = addr + (len ? len : 1);
    std::size_t n = 0;
    auto it = ranges_.upper_bound(addr);
    if (it != ranges_.begin() && std::prev(it)->second > addr) --it;
    while (it != ranges_.end() && it->first < end) {
      it = ranges_.erase(it);
      ++n;
    }
    return n;
  }
  void clear() { ranges_.clear(); }
  std::size_t size() const { return ranges_.size(); }
  bool empty() const { return ranges_.empty(); }

 private:
  std::map<std::uintptr_t, std::uintptr_t> ranges_;  // start -> end
};

// The two range sets of the memory-type cache and the rule that ties them: the device
// ranges known here (a lookup cache) and the ranges already reported to UCX's cache.
// A free forgets a range in both, so an address reused by a new allocation is looked up
// and reported again, and neither set grows without bound.
class MemtypeRanges {
 public:
  // Where frees are not seen, `reported` cannot forget; it is then emptied at this size
  // so that it stays bounded (reporting a range twice is harmless, only slower).
  static constexpr std::size_t kMaxReportedUnseen = 4096;

  explicit MemtypeRanges(bool frees_seen = true) : frees_seen_(frees_seen) {}
  void set_frees_seen(bool seen) { frees_seen_ = seen; }
  bool frees_seen() const { return frees_seen_; }

  bool known_device(std::uintptr_t addr) const { return known_.contains(addr); }
  // A device range found by asking the driver. Cached only where frees are seen.
  void learn(std::uintptr_t start, std::size_t size) {
    if (frees_seen_) known_.insert(start, size);
  }
  // True (once) if [start, start + size) has not been reported to UCX yet: the caller
  // reports it now.
  bool needs_report(std::uintptr_t start, std::size_t size) {
    if (reported_.covers(start, size)) return false;
    if (!frees_seen_ && reported_.size() >= kMaxReportedUnseen) reported_.clear();
    reported_.insert(start, size);
    return true;
  }
  // Memory at [addr, addr + len) was freed.
  void forget(std::uintptr_t addr, std::size_t len) {
    known_.erase(addr, len);
    reported_.erase(addr, len);
  }
  void clear() {
    known_.clear();
    reported_.clear();
  }
  std::size_t known_ranges() const { return known_.size(); }
  std::size_t reported_ranges() const { return reported_.size(); }

 private:
  bool frees_seen_;
  RangeSet known_;
  RangeSet reported_;
};

}  // namespace ucharm::machine
