// Jacobi3D geometry shared by the chare program, the kernels (CPU and CUDA) and the serial
// reference: block shapes with one ghost layer, faces, boxes of cells, and the stencil.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#ifdef __CUDACC__
#define JACOBI_HD __host__ __device__
#else
#define JACOBI_HD
#endif

namespace jacobi {

// Faces in the order -x, +x, -y, +y, -z, +z; a face's opposite differs in the last bit.
enum Face : int { XM = 0, XP, YM, YP, ZM, ZP };
inline constexpr int kFaces = 6;
constexpr int opposite(int f) { return f ^ 1; }
constexpr int axis_of(int f) { return f / 2; }

// A block of lx*ly*lz cells stored with a ghost layer: (lx+2)*(ly+2)*(lz+2) doubles, x fastest.
struct Shape {
  int lx = 0, ly = 0, lz = 0;
  JACOBI_HD std::size_t sx() const { return 1; }
  JACOBI_HD std::size_t sy() const { return static_cast<std::size_t>(lx) + 2; }
  JACOBI_HD std::size_t sz() const { return sy() * (static_cast<std::size_t>(ly) + 2); }
  JACOBI_HD std::size_t cells() const { return sz() * (static_cast<std::size_t>(lz) + 2); }
  JACOBI_HD std::size_t at(int i, int j, int k) const {
    return static_cast<std::size_t>(i) + sy() * static_cast<std::size_t>(j) + sz() * static_cast<std::size_t>(k);
  }
};

// Cells [i0,i1) x [j0,j1) x [k0,k1) in padded coordinates (1..l are the block's own).
struct Box {
  int i0 = 0, i1 = 0, j0 = 0, j1 = 0, k0 = 0, k1 = 0;
  JACOBI_HD std::size_t count() const {
    return empty() ? 0 : static_cast<std::size_t>(i1 - i0) * static_cast<std::size_t>(j1 - j0) * static_cast<std::size_t>(k1 - k0);
  }
  JACOBI_HD bool empty() const { return i1 <= i0 || j1 <= j0 || k1 <= k0; }
  // The n-th cell, x fastest.
  JACOBI_HD void cell(std::size_t n, int& i, int& j, int& k) const {
    const std::size_t nx = static_cast<std::size_t>(i1 - i0), ny = static_cast<std::size_t>(j1 - j0);
    i = i0 + static_cast<int>(n % nx);
    j = j0 + static_cast<int>((n / nx) % ny);
    k = k0 + static_cast<int>(n / (nx * ny));
  }
};

// The 7-point Jacobi update of one cell. Serial reference, CPU and CUDA kernels all use
// this one expression, so results agree bit for bit (CUDA is built with --fmad=false).
JACOBI_HD inline double stencil(const double* u, std::size_t c, std::size_t sy, std::size_t sz) {
  return ((((((u[c] + u[c - 1]) + u[c + 1]) + u[c - sy]) + u[c + sy]) + u[c - sz]) + u[c + sz]) * (1.0 / 7.0);
}

// The block's own layer next to face f (what is sent), or the ghost layer beyond it
// (where the neighbour's layer goes).
Box face_box(const Shape& s, int f, bool ghost);
std::size_t face_cells(const Shape& s, int f);
// Cells whose stencil reads no ghost cell, and the rest of the block as disjoint boxes.
Box interior_box(const Shape& s);
std::array<Box, kFaces> boundary_boxes(const Shape& s);

// Fixed boundary values, by global padded coordinates (0 and g+1 are outside the grid).
double boundary_value(int gi, int gj, int gk, int gx, int gy, int gz);
// A padded block of shape s whose padded cell (0,0,0) is global padded cell (ox, oy, oz),
// filled with boundary_value (the fixed values on the global boundary, zero elsewhere).
std::vector<double> boundary_block(const Shape& s, int ox, int oy, int oz, int gx, int gy, int gz);

// The block grid for `blocks` equal cuboids of a gx*gy*gz grid with the least total
// surface area (least halo traffic); an empty result and `why` when none divides evenly.
struct Decomposition {
  int gx = 0, gy = 0, gz = 0;  // cells
  int bx = 0, by = 0, bz = 0;  // blocks per dimension
  Shape block() const { return Shape{gx / bx, gy / by, gz / bz}; }
  long surface() const;        // total block surface, in cell faces
};
std::optional<Decomposition> decompose(int gx, int gy, int gz, int blocks, std::string& why);

// Serial Jacobi on the whole grid (one block, same boundary, same cell arithmetic):
// the padded grid after `iterations` sweeps.
std::vector<double> serial_reference(int gx, int gy, int gz, int iterations);

}  // namespace jacobi
