"""Jacobi3D geometry and kernels for the Python version, the same as ../grid.{h,cpp} and
../kernels_cpu.cpp: block decomposition, fixed boundary values, face and box slices, the
7-point update and the serial reference. Pure array code: every function that computes
takes the array module `xp` (numpy, or cupy for --gpu), so it runs and tests without ucharm.

A padded block is an array of shape (lz+2, ly+2, lx+2): index [k, j, i], x fastest in
memory, as in the C++ Shape. Padded coordinates 1..l are the block's own cells, 0 and l+1
its ghost layers.
"""
import numpy as np

XM, XP, YM, YP, ZM, ZP = range(6)  # faces, as in grid.h; a face's opposite is f ^ 1
FACES = 6


def axis_of(f):
    return f // 2  # 0: x, 1: y, 2: z


def opposite(f):
    return f ^ 1


# A box is a tuple (i0, i1, j0, j1, k0, k1) of half-open ranges in padded coordinates.
def box_slices(b):
    i0, i1, j0, j1, k0, k1 = b
    return (slice(k0, k1), slice(j0, j1), slice(i0, i1))


def box_empty(b):
    i0, i1, j0, j1, k0, k1 = b
    return i1 <= i0 or j1 <= j0 or k1 <= k0


def face_box(shape, f, ghost):
    """The block's own layer next to face f (what is sent), or the ghost layer beyond it."""
    lx, ly, lz = shape
    b = [1, lx + 1, 1, ly + 1, 1, lz + 1]
    a = axis_of(f)
    l = shape[a]
    if f % 2 == 0:
        lo = 0 if ghost else 1
    else:
        lo = l + 1 if ghost else l
    b[2 * a], b[2 * a + 1] = lo, lo + 1
    return tuple(b)


def face_shape(shape, f):
    """The (z, y, x) shape of face f's layer: halo messages travel as flat arrays of it."""
    i0, i1, j0, j1, k0, k1 = face_box(shape, f, False)
    return (k1 - k0, j1 - j0, i1 - i0)


def interior_box(shape):
    """Cells whose stencil reads no ghost cell: updated while the halos travel."""
    lx, ly, lz = shape
    return (2, lx, 2, ly, 2, lz)


def boundary_boxes(shape):
    """The rest of the block as disjoint boxes (grid.cpp's boundary_boxes): x-slabs take
    whole faces, y-slabs what is left between them, z-slabs the rest."""
    lx, ly, lz = shape
    xi0 = min(2, lx + 1)
    xi1 = max(xi0, lx)
    yj0 = min(2, ly + 1)
    yj1 = max(yj0, ly)
    boxes = [
        (1, 2, 1, ly + 1, 1, lz + 1),
        (lx, lx + 1, 1, ly + 1, 1, lz + 1) if lx > 1 else None,
        (xi0, xi1, 1, 2, 1, lz + 1),
        (xi0, xi1, ly, ly + 1, 1, lz + 1) if ly > 1 else None,
        (xi0, xi1, yj0, yj1, 1, 2),
        (xi0, xi1, yj0, yj1, lz, lz + 1) if lz > 1 else None,
    ]
    return [b for b in boxes if b is not None and not box_empty(b)]


def boundary_block(shape, origin, grid):
    """A padded block (NumPy) whose padded cell (0,0,0) is global padded cell `origin`,
    holding the fixed boundary values (grid.cpp's boundary_value) and zeros elsewhere:
    1.0 where x = 0, else 0.5 where y = 0, else 0.25 where z = gz + 1."""
    lx, ly, lz = shape
    ox, oy, oz = origin
    gz = grid[2]
    gi = ox + np.arange(lx + 2)[None, None, :]
    gj = oy + np.arange(ly + 2)[None, :, None]
    gk = oz + np.arange(lz + 2)[:, None, None]
    return np.where(gi == 0, 1.0, np.where(gj == 0, 0.5, np.where(gk == gz + 1, 0.25, 0.0)))


def update(xp, u, out, b):
    """out = Jacobi update of u on box b, in the C++ stencil's order of additions:
    ((((((c + x-) + x+) + y-) + y+) + z-) + z+) * (1/7). Each operation rounds like the
    C++ expression (no fused multiply-add is possible: the only product comes last), so
    the results agree bit for bit. Accumulates in place in `out`: no temporaries."""
    i0, i1, j0, j1, k0, k1 = b
    o = out[k0:k1, j0:j1, i0:i1]
    xp.add(u[k0:k1, j0:j1, i0:i1], u[k0:k1, j0:j1, i0 - 1:i1 - 1], out=o)
    xp.add(o, u[k0:k1, j0:j1, i0 + 1:i1 + 1], out=o)
    xp.add(o, u[k0:k1, j0 - 1:j1 - 1, i0:i1], out=o)
    xp.add(o, u[k0:k1, j0 + 1:j1 + 1, i0:i1], out=o)
    xp.add(o, u[k0 - 1:k1 - 1, j0:j1, i0:i1], out=o)
    xp.add(o, u[k0 + 1:k1 + 1, j0:j1, i0:i1], out=o)
    xp.multiply(o, 1.0 / 7.0, out=o)


def decompose(gx, gy, gz, blocks):
    """(bx, by, bz): `blocks` equal cuboids of the grid with the least total surface (the
    least halo traffic), the first such in the C++ search order; ValueError when none."""
    if min(gx, gy, gz) < 1:
        raise ValueError('grid dimensions must be positive')
    if blocks < 1:
        raise ValueError('the number of blocks must be positive')
    best, best_surface = None, None
    for bx in range(1, blocks + 1):
        if blocks % bx or gx % bx:
            continue
        for by in range(1, blocks // bx + 1):
            if (blocks // bx) % by or gy % by:
                continue
            bz = blocks // bx // by
            if gz % bz:
                continue
            lx, ly, lz = gx // bx, gy // by, gz // bz
            surface = 2 * (lx * ly + ly * lz + lx * lz) * blocks
            if best is None or surface < best_surface:
                best, best_surface = (bx, by, bz), surface
    if best is None:
        raise ValueError(f'no split of the {gx}x{gy}x{gz} grid into {blocks} equal blocks (each block count '
                         'per dimension must divide that grid dimension)')
    return best


def neighbour(index, f):
    """The block index across face f."""
    i = list(index)
    i[axis_of(f)] += 1 if f % 2 else -1
    return tuple(i)


class BlockState:
    """One block's arrays and arithmetic, without communication: the chare program and
    the tests drive the same code. u[cur % 2] is read in an iteration, the other written;
    ghost cells on the global boundary hold the fixed values in both, forever."""

    def __init__(self, xp, grid, dims, index):
        self.xp = xp
        self.shape = tuple(g // d for g, d in zip(grid, dims))
        origin = self.origin = tuple(i * l for i, l in zip(index, self.shape))
        init = boundary_block(self.shape, origin, grid)
        self.u = [xp.asarray(init), xp.asarray(init.copy())]
        self.cur = 0
        # Faces with a neighbour block, in face order.
        self.faces = [f for f in range(FACES) if 0 <= neighbour(index, f)[axis_of(f)] < dims[axis_of(f)]]
        self.send = [box_slices(face_box(self.shape, f, False)) for f in range(FACES)]
        self.ghost = [box_slices(face_box(self.shape, f, True)) for f in range(FACES)]
        self.face_shape = [face_shape(self.shape, f) for f in range(FACES)]
        self.interior = interior_box(self.shape)
        self.shell = boundary_boxes(self.shape)
        lx, ly, lz = self.shape
        self.own = box_slices((1, lx + 1, 1, ly + 1, 1, lz + 1))

    # Migration (--lb-period): the arrays travel as NumPy, the array module is named.
    def __getstate__(self):
        d = dict(self.__dict__)
        gpu = self.xp.__name__ == 'cupy'
        d['xp'] = gpu
        if gpu:
            d['u'] = [self.xp.asnumpy(a) for a in self.u]
        return d

    def __setstate__(self, d):
        self.__dict__.update(d)
        if d['xp']:
            import cupy as xp
        else:
            import numpy as xp
        self.xp = xp
        # Unpickled arrays may alias a read-only buffer: the kernels write them.
        self.u = [xp.asarray(a) if xp is not np or a.flags.writeable else a.copy() for a in self.u]

    def face_count(self, f):
        k, j, i = self.face_shape[f]
        return i * j * k

    def pack(self, f, out=None):
        """Face f's own layer as a flat contiguous array: a new one (never a view of the
        block, which the next iteration overwrites), or written into `out`."""
        layer = self.u[self.cur % 2][self.send[f]]
        if out is None:
            return layer.copy().reshape(-1)
        out.reshape(self.face_shape[f])[...] = layer
        return out

    def unpack(self, f, data):
        """The neighbour's layer across face f (flat) into this iteration's ghost layer."""
        self.u[self.cur % 2][self.ghost[f]] = data.reshape(self.face_shape[f])

    def update_interior(self):
        if not box_empty(self.interior):
            update(self.xp, self.u[self.cur % 2], self.u[(self.cur + 1) % 2], self.interior)

    def update_shell(self):
        for b in self.shell:
            update(self.xp, self.u[self.cur % 2], self.u[(self.cur + 1) % 2], b)

    def residual(self):
        """max |new - old| over the block's cells, once both updates of an iteration ran."""
        old, new = self.u[self.cur % 2][self.own], self.u[(self.cur + 1) % 2][self.own]
        return float(self.xp.abs(new - old).max())

    def advance(self):
        self.cur += 1

    def cells(self):
        """The block's own cells now, as a NumPy array (z, y, x)."""
        c = self.u[self.cur % 2][self.own]
        return c if self.xp is np else self.xp.asnumpy(c)


_GOLDEN, _MIX1, _MIX2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def checksum(cells, origin, grid):
    """This block's share of the checksum (../jacobi3d.cpp's): the sum, as a Python int,
    of a splitmix64 hash of each own cell's exact bits and its position in the padded
    global grid. `cells` (z, y, x) as cells() gives them; the total is taken mod 2**64."""
    gx, gy, _ = grid
    lz, ly, lx = cells.shape
    ox, oy, oz = origin
    x = np.arange(ox + 1, ox + lx + 1, dtype=np.uint64)
    y = np.arange(oy + 1, oy + ly + 1, dtype=np.uint64)
    z = np.arange(oz + 1, oz + lz + 1, dtype=np.uint64)
    sy, sz = np.uint64(gx + 2), np.uint64((gx + 2) * (gy + 2))
    pos = x[None, None, :] + sy * y[None, :, None] + sz * z[:, None, None]
    h = np.ascontiguousarray(cells, dtype=np.float64).view(np.uint64) ^ (pos * _GOLDEN)
    h = (h ^ (h >> np.uint64(30))) * _MIX1
    h = (h ^ (h >> np.uint64(27))) * _MIX2
    h ^= h >> np.uint64(31)
    return int(h.sum(dtype=np.uint64))


def serial_reference(gx, gy, gz, iterations):
    """Serial Jacobi on the whole grid (one block, same boundary, same arithmetic): the
    padded grid after `iterations` sweeps, as a NumPy array."""
    shape = (gx, gy, gz)
    u = [boundary_block(shape, (0, 0, 0), shape), boundary_block(shape, (0, 0, 0), shape)]
    whole = (1, gx + 1, 1, gy + 1, 1, gz + 1)
    for it in range(iterations):
        update(np, u[it % 2], u[(it + 1) % 2], whole)
    return u[iterations % 2]
