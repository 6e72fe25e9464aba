// --mode device: the arithmetic of one cell and of the flags, shared by the CUDA kernels
// (device_kernels.cu), the host side (device_mode.cpp) and the unit tests, which check it
// on the CPU (no GPU needed).
//
// Each face with a neighbour has a ghost-receive buffer of 2 * face_count doubles: half p
// holds the neighbour's layer for the iterations of parity p, in packed face order (x
// fastest, the face's own axis dropped: the order of face_box). The neighbour's kernel
// writes it; the shell kernel here reads it in place of the grid's ghost layer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "grid.h"

namespace jacobi::devmode {

// Cells in a layer of face f (both sides of a face have the same count: equal blocks).
JACOBI_HD inline std::size_t face_count(const Shape& s, int f) {
  const int a = f / 2;
  return a == 0 ? static_cast<std::size_t>(s.ly) * s.lz
                : a == 1 ? static_cast<std::size_t>(s.lx) * s.lz : static_cast<std::size_t>(s.lx) * s.ly;
}

// Position of own cell (i, j, k) (or of the ghost beyond it) in the packed layer of face f.
JACOBI_HD inline std::size_t face_index(const Shape& s, int f, int i, int j, int k) {
  const int a = f / 2;
  return a == 0 ? static_cast<std::size_t>(j - 1) + static_cast<std::size_t>(s.ly) * (k - 1)
                : a == 1 ? static_cast<std::size_t>(i - 1) + static_cast<std::size_t>(s.lx) * (k - 1)
                         : static_cast<std::size_t>(i - 1) + static_cast<std::size_t>(s.lx) * (j - 1);
}

// Own cell (i, j, k) lies in the layer that face f sends.
JACOBI_HD inline bool on_layer(const Shape& s, int f, int i, int j, int k) {
  switch (f) {
    case XM: return i == 1;
    case XP: return i == s.lx;
    case YM: return j == 1;
    case YP: return j == s.ly;
    case ZM: return k == 1;
    default: return k == s.lz;
  }
}

// The half of the ghost buffers that iteration `it` reads (its neighbours wrote it during
// their iteration it - 1, or in the priming step).
JACOBI_HD inline int read_half(long it) { return static_cast<int>(it & 1); }
// The half of the neighbours' ghost buffers that iteration `it` writes (read in it + 1).
JACOBI_HD inline int write_half(long it) { return static_cast<int>((it + 1) & 1); }

// The ghost layers the shell reads: per face, the half being read of its ghost-receive
// buffer, or null where no neighbour is (the grid's own ghost cells: fixed boundary values).
struct Ghosts {
  const double* g[kFaces] = {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
};

// A ghost value written by the neighbour's GPU: read past this SM's L1 cache on the GPU.
JACOBI_HD inline double load_ghost(const double* p) {
#ifdef __CUDA_ARCH__
  return __ldcg(p);
#else
  return *p;
#endif
}

// The 7-point update of own cell (i, j, k) reading ghosts from `gh`: the same expression,
// in the same order, as jacobi::stencil, so the result is bit for bit the other modes'.
JACOBI_HD inline double stencil_ghosts(const Shape& s, const double* in, const Ghosts& gh, int i, int j, int k) {
  const std::size_t c = s.at(i, j, k), sy = s.sy(), sz = s.sz();
  const double xm = i == 1 && gh.g[XM] ? load_ghost(gh.g[XM] + face_index(s, XM, i, j, k)) : in[c - 1];
  const double xp = i == s.lx && gh.g[XP] ? load_ghost(gh.g[XP] + face_index(s, XP, i, j, k)) : in[c + 1];
  const double ym = j == 1 && gh.g[YM] ? load_ghost(gh.g[YM] + face_index(s, YM, i, j, k)) : in[c - sy];
  const double yp = j == s.ly && gh.g[YP] ? load_ghost(gh.g[YP] + face_index(s, YP, i, j, k)) : in[c + sy];
  const double zm = k == 1 && gh.g[ZM] ? load_ghost(gh.g[ZM] + face_index(s, ZM, i, j, k)) : in[c - sz];
  const double zp = k == s.lz && gh.g[ZP] ? load_ghost(gh.g[ZP] + face_index(s, ZP, i, j, k)) : in[c + sz];
  return ((((((in[c] + xm) + xp) + ym) + yp) + zm) + zp) * (1.0 / 7.0);
}

// Six boxes as one index range: box b holds threads [off[b], off[b+1]).
struct BoxList {
  Box box[kFaces];
  std::size_t off[kFaces + 1] = {0, 0, 0, 0, 0, 0, 0};
  JACOBI_HD std::size_t count() const { return off[kFaces]; }
  // The t-th cell (t < count()).
  JACOBI_HD void cell(std::size_t t, int& i, int& j, int& k) const {
    int b = 0;
    while (t >= off[b + 1]) ++b;
    box[b].cell(t - off[b], i, j, k);
  }
};
inline BoxList make_box_list(const std::array<Box, kFaces>& boxes) {
  BoxList l;
  for (int b = 0; b < kFaces; ++b) {
    l.box[b] = boxes[b];
    l.off[b + 1] = l.off[b] + boxes[b].count();
  }
  return l;
}

// Flag values. The windows of one block are opened at iteration `base` (0, or the
// iteration a restart resumes at). Every round a face's neighbour raises this side's
// flag: round 1 is the priming step (its layer of iteration `base`), round r + 1 the shell
// kernel of its iteration base + r - 1 (its layer of iteration base + r). Iteration `it`
// therefore waits for round it - base + 1, and its shell kernel signals round it - base + 2.
JACOBI_HD inline std::uint64_t wait_round(long it, long base) { return static_cast<std::uint64_t>(it - base + 1); }
JACOBI_HD inline std::uint64_t signal_round(long it, long base) { return static_cast<std::uint64_t>(it - base + 2); }
inline constexpr std::uint64_t kPrimeRound = 1;

}  // namespace jacobi::devmode
