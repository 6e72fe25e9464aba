#include "grid.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "kernels.h"

namespace jacobi {

Box face_box(const Shape& s, int f, bool ghost) {
  Box b{1, s.lx + 1, 1, s.ly + 1, 1, s.lz + 1};
  const int lo = ghost ? 0 : 1;
  switch (f) {
    case XM: b.i0 = lo; b.i1 = lo + 1; break;
    case XP: b.i0 = ghost ? s.lx + 1 : s.lx; b.i1 = b.i0 + 1; break;
    case YM: b.j0 = lo; b.j1 = lo + 1; break;
    case YP: b.j0 = ghost ? s.ly + 1 : s.ly; b.j1 = b.j0 + 1; break;
    case ZM: b.k0 = lo; b.k1 = lo + 1; break;
    default: b.k0 = ghost ? s.lz + 1 : s.lz; b.k1 = b.k0 + 1; break;
  }
  return b;
}

std::size_t face_cells(const Shape& s, int f) { return face_box(s, f, false).count(); }

Box interior_box(const Shape& s) { return Box{2, s.lx, 2, s.ly, 2, s.lz}; }

std::array<Box, kFaces> boundary_boxes(const Shape& s) {
  // Peel the shell axis by axis so that the boxes never overlap: x-slabs take whole
  // faces, y-slabs what is left between them, z-slabs the rest.
  const int xi0 = std::min(2, s.lx + 1), xi1 = std::max(xi0, s.lx);
  const int yj0 = std::min(2, s.ly + 1), yj1 = std::max(yj0, s.ly);
  std::array<Box, kFaces> b{};
  b[XM] = Box{1, 2, 1, s.ly + 1, 1, s.lz + 1};
  b[XP] = s.lx > 1 ? Box{s.lx, s.lx + 1, 1, s.ly + 1, 1, s.lz + 1} : Box{};
  b[YM] = Box{xi0, xi1, 1, 2, 1, s.lz + 1};
  b[YP] = s.ly > 1 ? Box{xi0, xi1, s.ly, s.ly + 1, 1, s.lz + 1} : Box{};
  b[ZM] = Box{xi0, xi1, yj0, yj1, 1, 2};
  b[ZP] = s.lz > 1 ? Box{xi0, xi1, yj0, yj1, s.lz, s.lz + 1} : Box{};
  return b;
}

double boundary_value(int gi, int gj, int gk, int gx, int gy, int gz) {
  if (gi == 0) return 1.0;
  if (gj == 0) return 0.5;
  if (gk == gz + 1) return 0.25;
  (void)gx;
  (void)gy;
  return 0.0;
}

std::vector<double> boundary_block(const Shape& s, int ox, int oy, int oz, int gx, int gy, int gz) {
  std::vector<double> h(s.cells(), 0.0);
  for (int k = 0; k <= s.lz + 1; ++k)
    for (int j = 0; j <= s.ly + 1; ++j)
      for (int i = 0; i <= s.lx + 1; ++i) h[s.at(i, j, k)] = boundary_value(ox + i, oy + j, oz + k, gx, gy, gz);
  return h;
}

long Decomposition::surface() const {
  const Shape s = block();
  const long one = 2L * (static_cast<long>(s.lx) * s.ly + static_cast<long>(s.ly) * s.lz + static_cast<long>(s.lx) * s.lz);
  return one * bx * by * bz;
}

std::optional<Decomposition> decompose(int gx, int gy, int gz, int blocks, std::string& why) {
  if (gx < 1 || gy < 1 || gz < 1) {
    why = "grid dimensions must be positive";
    return std::nullopt;
  }
  if (blocks < 1) {
    why = "the number of blocks must be positive";
    return std::nullopt;
  }
  std::optional<Decomposition> best;
  for (int bx = 1; bx <= blocks; ++bx) {
    if (blocks % bx || gx % bx) continue;
    for (int by = 1; by <= blocks / bx; ++by) {
      if ((blocks / bx) % by || gy % by) continue;
      const int bz = blocks / bx / by;
      if (gz % bz) continue;
      Decomposition d{gx, gy, gz, bx, by, bz};
      if (!best || d.surface() < best->surface()) best = d;
    }
  }
  if (!best)
    why = "no split of the " + std::to_string(gx) + "x" + std::to_string(gy) + "x" + std::to_string(gz) +
          " grid into " + std::to_string(blocks) + " equal blocks (each block count per dimension must divide "
          "that grid dimension)";
  return best;
}

std::vector<double> serial_reference(int gx, int gy, int gz, int iterations) {
  const Shape s{gx, gy, gz};
  std::vector<double> u[2] = {std::vector<double>(s.cells(), 0.0), std::vector<double>(s.cells(), 0.0)};
  for (int k = 0; k <= gz + 1; ++k)
    for (int j = 0; j <= gy + 1; ++j)
      for (int i = 0; i <= gx + 1; ++i) {
        const bool ghost = i == 0 || j == 0 || k == 0 || i == gx + 1 || j == gy + 1 || k == gz + 1;
        if (ghost) u[0][s.at(i, j, k)] = u[1][s.at(i, j, k)] = boundary_value(i, j, k, gx, gy, gz);
      }
  const Box all{1, gx + 1, 1, gy + 1, 1, gz + 1};
  for (int it = 0; it < iterations; ++it) cpu::update(s, u[it % 2].data(), u[(it + 1) % 2].data(), all);
  return std::move(u[iterations % 2]);
}

}  // namespace jacobi
