// Handles of a rank's derived datatypes and user reduction operations (private to
// runtime/ampi). Both are per rank, not per process: a rank that moves to another process
// keeps what its handles mean, whatever other ranks did in either process (issue 18).
//
// Each rank owns one TypeTable (datatype/) and one OpTable (ops.cpp), held by its CommTable
// (comm/comms.h) and packed with it (pup_comm_state). A handle carries the world rank of
// its owner:
//     handle = base + (world_rank << shift) + index        (base: the predefined count)
// so any code that has a handle finds its object without knowing whose thread runs: the
// point-to-point handlers unpacking into a receive, nonblocking-collective tasks, a request
// that holds a type (type_retain). The lookup is an index into the process's directory of
// the ranks it hosts (one entry per world rank, a pointer to the rank's tables) and one into
// the rank's table: no hashing. `shift` depends only on the world size, so a handle means
// the same in every process.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace ampi {

namespace dt {
class TypeTable;
}
class OpTable;

// The process's directory of the tables of the ranks it hosts, by world rank.
class HandleSpace {
 public:
  struct Entry {
    dt::TypeTable* types = nullptr;
    OpTable* ops = nullptr;
  };

  // The process's (never destroyed: handlers may look types up while the process exits).
  static HandleSpace& process() {
    static auto* s = new HandleSpace;
    return *s;
  }

  // Sets the layout for `world_size` ranks, the first time (every rank calls it, with the
  // same size): at most 2^24 objects of each kind per rank, fewer for very large worlds so
  // that every handle fits an int.
  void init(int world_size) {
    std::lock_guard<std::mutex> g(init_mutex_);
    if (!ranks_.empty()) return;
    int bits = 0;
    while ((1LL << bits) < world_size) ++bits;
    shift_ = std::min(24, 30 - bits);
    ranks_.resize(static_cast<std::size_t>(world_size < 1 ? 1 : world_size));
  }
  // Objects of each kind a rank may have at once.
  std::size_t capacity() const { return std::size_t{1} << shift_; }

  int encode(int base, int world_rank, std::size_t index) const {
    return base + static_cast<int>((static_cast<std::uint32_t>(world_rank) << shift_) + index);
  }
  // The entry and index of handle h (h >= base); nullptr when no rank here owns it.
  Entry* decode(int h, int base, std::size_t* index) {
    const auto off = static_cast<std::uint32_t>(h - base);
    const std::size_t r = off >> shift_;
    if (r >= ranks_.size()) return nullptr;
    *index = off & ((std::uint32_t{1} << shift_) - 1);
    return &ranks_[r];
  }
  // The entry of world rank r (which must be in the world).
  Entry& at(int r) { return ranks_[static_cast<std::size_t>(r)]; }

 private:
  HandleSpace() = default;
  std::mutex init_mutex_;
  int shift_ = 24;
  std::vector<Entry> ranks_;  // sized once (init): lookups take no lock
};

// A rank's tables: made for world rank `r` (registered in the directory, replacing any
// table registered for r before: a table unpacked for an arriving rank takes over),
// deregistered when destroyed if still registered.
struct TypeTableDeleter {
  void operator()(dt::TypeTable* t) const;
};
using TypeTablePtr = std::unique_ptr<dt::TypeTable, TypeTableDeleter>;
TypeTablePtr type_table_new(int world_rank);
struct OpTableDeleter {
  void operator()(OpTable* t) const;
};
using OpTablePtr = std::unique_ptr<OpTable, OpTableDeleter>;
OpTablePtr op_table_new(int world_rank);

}  // namespace ampi

namespace PUP {
class er;
}
namespace ampi {
// Packs / unpacks a rank's derived datatypes (datatype/pup.cpp) and user ops (ops.cpp):
// unpacking replaces the contents of a table made by type_table_new / op_table_new.
void pup_types(PUP::er& p, dt::TypeTable& t);
void pup_ops(PUP::er& p, OpTable& t);
}  // namespace ampi
