// Basics: the Ck* names Charm++ users know, array indices, maps, collection references,
// send options.
// Part of <ucharm/charm.h>, the header to include.
#pragma once

#include <ucharm/converse.h>
#include <ucharm/pup.h>
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>

#pragma GCC visibility push(default)

// ---- names Charm++ users know -------------------------------------------------------------
inline int CkMyPe() { return CmiMyPe(); }
inline int CkNumPes() { return CmiNumPes(); }
inline double CkWallTimer() { return CmiWallTimer(); }
[[noreturn]] inline void CkExit(int code = 0) { CmiExit(code); }
void CkPrintf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] void CkAbort(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// For a runtime embedded in an interpreter: see CmiEmbedHooks.
inline void CkSetEmbedHooks(const CmiEmbedHooks& hooks) { CmiSetEmbedHooks(hooks); }

// Charm++'s migration constructor argument: an array element class that migrates has a
// constructor taking CkMigrateMessage* (or a default constructor); the runtime builds the
// element with it on the new PE and then unpacks its state with pup().
struct CkMigrateMessage {};

namespace ck {

class ChareBase;

// ---- array indices ---------------------------------------------------------------------------
// Up to 6 dimensions (as Charm++): 1-3-D indices travel as 32-bit coordinates, 4-6-D ones
// as 16-bit coordinates (so a message's envelope stays 32 bytes).
inline constexpr int kMaxDims = 6;
struct Index {
  std::int32_t x[kMaxDims] = {0, 0, 0, 0, 0, 0};
  std::int32_t dims = 0;  // 1-6 for array indices; 0 for groups and chares
  bool operator==(const Index& o) const {
    for (int d = 0; d < kMaxDims; ++d)
      if (x[d] != o.x[d]) return false;
    return dims == o.dims;
  }
  void pup(PUP::er& p) { p.bytes(this, sizeof *this); }
  std::string str() const;
};
inline Index dims(int a) { return Index{{a, 0, 0}, 1}; }
inline Index dims(int a, int b) { return Index{{a, b, 0}, 2}; }
inline Index dims(int a, int b, int c) { return Index{{a, b, c}, 3}; }
inline Index dims(int a, int b, int c, int d) { return Index{{a, b, c, d}, 4}; }
inline Index dims(int a, int b, int c, int d, int e) { return Index{{a, b, c, d, e}, 5}; }
inline Index dims(int a, int b, int c, int d, int e, int f) { return Index{{a, b, c, d, e, f}, 6}; }
template <class... I>
Index index(I... i) { return dims(static_cast<int>(i)...); }

// thisIndex: an int for 1-D arrays, std::array<int, D> for 2-D to 6-D ones.
template <int D>
using IndexOf = std::conditional_t<D == 1, int, std::array<int, D>>;

// ---- placement of array elements ----------------------------------------------------------
enum class MapKind : std::uint8_t { Block, RoundRobin, User, Embedder };
struct Map {
  MapKind kind = MapKind::Block;
  std::uint32_t fn = 0;  // registered user map (MapKind::User), embedder's map id (Embedder)
  static const Map block;
  static const Map round_robin;
  // A user function (index, array dims, number of PEs) -> PE, the same on every PE.
  template <int (*F)(const Index&, const Index&, int)>
  static Map user();
};
// Maps defined by a runtime built on the core (the Python bindings' ArrayMap classes): the
// embedder's hook, set once per process, gets the map's id (the same on every PE), the
// index, the array's bounds and the number of PEs.
using EmbedderMap = int (*)(std::uint32_t id, const Index& idx, const Index& shape, int num_pes);
void set_embedder_map(EmbedderMap hook);
inline Map embedder_map(std::uint32_t id) { return Map{MapKind::Embedder, id}; }
inline const Map Map::block{MapKind::Block, 0};
inline const Map Map::round_robin{MapKind::RoundRobin, 0};

enum class Kind : std::uint8_t { Chare, Group, Array };

// What a proxy knows about its collection: enough for any PE to find an element's PE.
struct CollectionRef {
  std::uint64_t id = 0;  // creating PE's serial << 24 | that PE: never runs out, never reused
  Kind kind = Kind::Chare;
  Map map;
  bool bounded = false;  // bulk-created: `shape` holds the bounds
  Index shape;
  std::int32_t pe = 0;   // a singleton chare's PE
  void pup(PUP::er& p) { p.bytes(this, sizeof *this); }
};

struct SendOpts {
  int priority = 0;        // smaller runs first
  bool expedited = false;  // ahead of everything queued
};

class CkCallback;
struct CkDeviceBuffer;  // device_buffer.h

}  // namespace ck

#pragma GCC visibility pop
