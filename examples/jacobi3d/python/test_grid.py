"""Unit tests of grid.py, no runtime needed:
    python3 examples/jacobi3d/python/test_grid.py
The blocked run below drives BlockState exactly as the chare program does, with the halo
messages replaced by direct hand-overs, and must equal the serial reference bit for bit.
"""
import itertools
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grid  # noqa: E402


def blocked_run(g, blocks, iterations):
    """Jacobi on a block grid, serially: pack every face, update interiors, hand each
    packed face to the neighbour, update shells. Returns the assembled grid's cells."""
    dims = grid.decompose(*g, blocks)
    states = {idx: grid.BlockState(np, g, dims, idx) for idx in itertools.product(*(range(d) for d in dims))}
    residual = 0.0
    for it in range(iterations):
        sent = {(idx, f): s.pack(f) for idx, s in states.items() for f in s.faces}
        for s in states.values():
            s.update_interior()
        for idx, s in states.items():
            for f in s.faces:
                s.unpack(f, sent[(grid.neighbour(idx, f), grid.opposite(f))])
            s.update_shell()
        if it == iterations - 1:
            residual = max(s.residual() for s in states.values())
        for s in states.values():
            s.advance()
    out = np.empty((g[2], g[1], g[0]))
    for (x, y, z), s in states.items():
        lx, ly, lz = s.shape
        out[z * lz:(z + 1) * lz, y * ly:(y + 1) * ly, x * lx:(x + 1) * lx] = s.cells()
    return out, residual


def stencil_scalar(u, k, j, i):
    # grid.h's stencil in Python floats (IEEE doubles, each operation rounded as in C++).
    return ((((((u[k, j, i] + u[k, j, i - 1]) + u[k, j, i + 1]) + u[k, j - 1, i]) + u[k, j + 1, i])
             + u[k - 1, j, i]) + u[k + 1, j, i]) * (1.0 / 7.0)


class GridTest(unittest.TestCase):
    def test_decompose_least_surface(self):
        self.assertEqual(grid.decompose(96, 96, 96, 8), (2, 2, 2))
        self.assertEqual(grid.decompose(64, 64, 64, 4), (1, 2, 2))  # first of the ties
        self.assertEqual(grid.decompose(64, 64, 64, 1), (1, 1, 1))
        self.assertEqual(grid.decompose(8, 4, 2, 2), (2, 1, 1))
        with self.assertRaisesRegex(ValueError, 'no split'):
            grid.decompose(64, 64, 64, 7)
        with self.assertRaisesRegex(ValueError, 'positive'):
            grid.decompose(64, 0, 64, 1)

    def test_boundary_values(self):
        b = grid.boundary_block((4, 3, 2), (0, 0, 0), (4, 3, 2))
        self.assertEqual(b.shape, (4, 5, 6))
        self.assertEqual(b[1, 1, 0], 1.0)   # x = 0 wins over the others
        self.assertEqual(b[0, 0, 0], 1.0)
        self.assertEqual(b[1, 0, 1], 0.5)   # y = 0
        self.assertEqual(b[3, 2, 2], 0.25)  # z = gz + 1
        self.assertEqual(b[3, 0, 2], 0.5)   # y = 0 wins over z = gz + 1
        self.assertEqual(b[0, 2, 2], 0.0)   # z = 0, x = gx + 1, y = gy + 1: zero
        self.assertEqual(b[2, 2, 5], 0.0)
        self.assertEqual(b[1:3, 1:4, 1:5].sum(), 0.0)

    def test_update_matches_scalar_stencil(self):
        rng = np.random.default_rng(1)
        u = rng.standard_normal((5, 6, 7)) * 1e3
        out = np.zeros_like(u)
        grid.update(np, u, out, (1, 6, 1, 5, 1, 4))
        for k, j, i in itertools.product(range(1, 4), range(1, 5), range(1, 6)):
            self.assertEqual(out[k, j, i], stencil_scalar(u, k, j, i))

    def test_shell_and_interior_cover_block_once(self):
        for shape in [(4, 4, 4), (1, 3, 2), (1, 1, 1), (2, 5, 1), (6, 2, 3)]:
            count = np.zeros((shape[2] + 2, shape[1] + 2, shape[0] + 2), dtype=int)
            for b in grid.boundary_boxes(shape) + [grid.interior_box(shape)]:
                if not grid.box_empty(b):
                    count[grid.box_slices(b)] += 1
            lx, ly, lz = shape
            self.assertTrue((count[1:lz + 1, 1:ly + 1, 1:lx + 1] == 1).all(), shape)
            self.assertEqual(count.sum(), lx * ly * lz, shape)

    def test_blocked_equals_serial(self):
        cases = [((8, 8, 8), 8, 5), ((12, 6, 4), 6, 7), ((6, 4, 2), 12, 4),  # 12 blocks: 1-cell-thick ones
                 ((5, 3, 7), 1, 6), ((8, 8, 8), 2, 0)]
        for g, blocks, iters in cases:
            got, _ = blocked_run(g, blocks, iters)
            ref = grid.serial_reference(*g, iters)[1:-1, 1:-1, 1:-1]
            self.assertTrue(np.array_equal(got, ref), (g, blocks, iters))

    def test_residual(self):
        # First sweep from zeros: the largest change is at the cell next to x = 0 (1.0),
        # y = 0 (0.5) and z = gz + 1 (0.25).
        _, r = blocked_run((6, 6, 6), 8, 1)
        self.assertEqual(r, ((((((0.0 + 1.0) + 0.0) + 0.5) + 0.0) + 0.0) + 0.25) * (1.0 / 7.0))

    def test_serial_reference_spot_cells(self):
        # Every cell of a few sweeps, recomputed by the scalar stencil.
        g = (4, 3, 5)
        u = grid.serial_reference(*g, 0)
        for _ in range(3):
            v = u.copy()
            for k, j, i in itertools.product(range(1, 6), range(1, 4), range(1, 5)):
                v[k, j, i] = stencil_scalar(u, k, j, i)
            u = v
        self.assertTrue(np.array_equal(u, grid.serial_reference(*g, 3)))


if __name__ == '__main__':
    unittest.main()
