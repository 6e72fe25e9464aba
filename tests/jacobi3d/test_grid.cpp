// Jacobi3D's geometry: decomposition, halo boxes and the update regions.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "grid.h"
#include "kernels.h"

using namespace jacobi;

TEST(Decompose, PicksTheLeastSurface) {
  std::string why;
  auto d = decompose(64, 64, 64, 8, why);
  ASSERT_TRUE(d);
  EXPECT_EQ(std::make_tuple(d->bx, d->by, d->bz), std::make_tuple(2, 2, 2));
  d = decompose(128, 32, 32, 4, why);  // a long grid is cut along its long side
  ASSERT_TRUE(d);
  EXPECT_EQ(std::make_tuple(d->bx, d->by, d->bz), std::make_tuple(4, 1, 1));
}

TEST(Decompose, ExplainsWhenNoEqualSplitExists) {
  std::string why;
  EXPECT_FALSE(decompose(10, 10, 10, 7, why));
  EXPECT_NE(why.find("7 equal blocks"), std::string::npos) << why;
  EXPECT_FALSE(decompose(10, 10, 10, 0, why));
  EXPECT_NE(why.find("positive"), std::string::npos) << why;
}

// Interior plus boundary boxes cover every cell of the block exactly once, for thin
// blocks too; face boxes have the face's size.
TEST(Boxes, InteriorAndShellCoverTheBlockOnce) {
  for (int lx : {1, 2, 3, 5})
    for (int ly : {1, 2, 4})
      for (int lz : {1, 3}) {
        const Shape s{lx, ly, lz};
        std::multiset<std::size_t> seen;
        auto add = [&](const Box& b) {
          for (std::size_t n = 0; n < b.count(); ++n) {
            int i, j, k;
            b.cell(n, i, j, k);
            seen.insert(s.at(i, j, k));
          }
        };
        add(interior_box(s));
        for (const Box& b : boundary_boxes(s)) add(b);
        EXPECT_EQ(seen.size(), static_cast<std::size_t>(lx * ly * lz)) << lx << "x" << ly << "x" << lz;
        EXPECT_EQ(std::set<std::size_t>(seen.begin(), seen.end()).size(), seen.size()) << "a cell updated twice";
        EXPECT_EQ(face_cells(s, XM), static_cast<std::size_t>(ly * lz));
        EXPECT_EQ(face_cells(s, ZP), static_cast<std::size_t>(lx * ly));
      }
}

TEST(Kernels, PackThenUnpackMovesAFaceIntoTheGhostLayer) {
  const Shape s{3, 4, 5};
  std::vector<double> u(s.cells());
  for (std::size_t c = 0; c < u.size(); ++c) u[c] = static_cast<double>(c);
  for (int f = 0; f < kFaces; ++f) {
    std::vector<double> buf(face_cells(s, f));
    cpu::pack(s, u.data(), face_box(s, f, false), buf.data());
    std::vector<double> v(s.cells(), -1.0);
    cpu::unpack(s, v.data(), face_box(s, opposite(f), true), buf.data());
    // The layer lands one step beyond the opposite face, in the same order.
    const Box from = face_box(s, f, false), to = face_box(s, opposite(f), true);
    for (std::size_t n = 0; n < from.count(); ++n) {
      int i, j, k, a, b, c;
      from.cell(n, i, j, k);
      to.cell(n, a, b, c);
      EXPECT_EQ(v[s.at(a, b, c)], u[s.at(i, j, k)]);
    }
  }
}

TEST(Reference, SweepsSpreadTheBoundaryInward) {
  auto u = serial_reference(4, 4, 4, 1);
  const Shape s{4, 4, 4};
  EXPECT_EQ(u[s.at(1, 2, 2)], 1.0 / 7.0);  // next to the x = 0 face (value 1)
  EXPECT_EQ(u[s.at(2, 2, 2)], 0.0);
  EXPECT_EQ(u[s.at(0, 2, 2)], 1.0);        // boundary values stay
}
