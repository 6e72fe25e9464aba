// Jacobi3D --mode device, host-side logic without a GPU: the packed face order, the flag
// rounds and halves, the enqueue order of a PE's blocks, and the whole scheme (priming,
// shell update reading the ghost buffers, layers written into the neighbours' buffers,
// flags) emulated on the CPU under random schedules that the flags allow, which must give
// the serial result bit for bit.
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <utility>
#include <vector>

#include "device_cells.h"
#include "device_schedule.h"
#include "grid.h"
#include "kernels.h"

using namespace jacobi;
using namespace jacobi::devmode;

TEST(JacobiDevice, FaceIndexIsPackedOrder) {
  for (const Shape s : {Shape{5, 3, 4}, Shape{1, 2, 3}, Shape{4, 1, 1}}) {
    for (int f = 0; f < kFaces; ++f) {
      const Box b = face_box(s, f, false);
      ASSERT_EQ(b.count(), face_count(s, f));
      for (std::size_t n = 0; n < b.count(); ++n) {
        int i, j, k;
        b.cell(n, i, j, k);
        EXPECT_EQ(face_index(s, f, i, j, k), n) << "face " << f;
        EXPECT_TRUE(on_layer(s, f, i, j, k));
      }
    }
  }
}

TEST(JacobiDevice, RoundsAndHalves) {
  for (long base : {0L, 7L}) {
    EXPECT_EQ(wait_round(base, base), kPrimeRound);  // iteration base reads the priming step's layers
    for (long it = base; it < base + 6; ++it) {
      EXPECT_EQ(wait_round(it + 1, base), signal_round(it, base));  // it's shell feeds it + 1
      EXPECT_EQ(write_half(it), read_half(it + 1));
      EXPECT_NE(read_half(it), write_half(it));  // never the half being read
    }
  }
}

TEST(JacobiDevice, ScheduleLimits) {
  Schedule s(4, 3);
  EXPECT_FALSE(s.may_enqueue(false, 4));  // windows not mapped
  EXPECT_TRUE(s.may_enqueue(true, 4));    // priming needs no run
  ++s.next;
  EXPECT_FALSE(s.may_enqueue(true, 4));   // no run yet (target == base)
  s.target = 20;
  EXPECT_TRUE(s.may_enqueue(true, 4));
  s.next = 7;
  EXPECT_FALSE(s.may_enqueue(true, 4));   // 3 iterations enqueued, none finished
  EXPECT_TRUE(s.may_enqueue(true, 5));
  s.next = 20;
  EXPECT_FALSE(s.may_enqueue(true, 19));  // all enqueued
  EXPECT_TRUE(s.running(19));
  EXPECT_FALSE(s.running(20));
}

namespace {
struct FakeBlock {
  Schedule sched;
  bool ready = true;
  long finished;
  std::vector<std::pair<int, long>>* log;
  int id;
  long step() const { return sched.next; }
  bool may_enqueue() const { return sched.may_enqueue(ready, finished); }
  void enqueue() { log->emplace_back(id, sched.next++); }
};
}  // namespace

TEST(JacobiDevice, EnqueueIsIterationMajor) {
  std::vector<std::pair<int, long>> log;
  std::vector<FakeBlock> blocks;
  for (int i = 0; i < 3; ++i) blocks.push_back(FakeBlock{Schedule(0, 4), true, 0, &log, i});
  std::vector<FakeBlock*> m{&blocks[0], &blocks[1], &blocks[2]};
  blocks[1].ready = false;
  EXPECT_EQ(enqueue_in_order(m), 2);  // the others prime; nothing more while block 1 is not mapped
  blocks[1].ready = true;
  for (auto& b : blocks) b.sched.target = 10;
  blocks[2].sched.target = 0;          // its run has not arrived: the others stop at its step
  EXPECT_EQ(enqueue_in_order(m), 3);   // block 1 primes, blocks 0 and 1 enqueue iteration 0
  blocks[2].sched.target = 10;
  EXPECT_EQ(enqueue_in_order(m), 10);  // up to the lookahead of 4 each (block 2 one more)
  for (auto& b : blocks) b.finished = 10;
  EXPECT_EQ(enqueue_in_order(m), 18);
  // Never a step before every block has enqueued the one before it.
  std::array<long, 3> at{-1, -1, -1};
  for (auto [id, step] : log) {
    for (long a : at) EXPECT_GE(a, step - 1) << "block " << id << " step " << step;
    at[static_cast<std::size_t>(id)] = step + 1;
  }
  for (long a : at) EXPECT_EQ(a, 10);
}

namespace {
// The device mode on the CPU: blocks with ghost buffers and flags (rounds received per
// face); any block whose flags allow its next iteration may run it, in any order.
struct Emu {
  Decomposition d;
  Shape s;
  struct Blk {
    std::array<int, 3> idx{};
    std::vector<double> u[2];
    std::array<int, kFaces> peer{};  // block number, -1 where none
    std::vector<double> ghost[kFaces];
    std::array<std::uint64_t, kFaces> flag{};
    long next = 0;
  };
  std::vector<Blk> b;

  Emu(int gx, int gy, int gz, int blocks) {
    std::string why;
    d = *decompose(gx, gy, gz, blocks, why);
    s = d.block();
    b.resize(static_cast<std::size_t>(blocks));
    for (int n = 0; n < blocks; ++n) {
      Blk& k = b[static_cast<std::size_t>(n)];
      k.idx = {n % d.bx, (n / d.bx) % d.by, n / (d.bx * d.by)};
      const std::vector<double> h = boundary_block(s, k.idx[0] * s.lx, k.idx[1] * s.ly, k.idx[2] * s.lz, gx, gy, gz);
      k.u[0] = k.u[1] = h;
      const std::array<int, 3> dims{d.bx, d.by, d.bz};
      for (int f = 0; f < kFaces; ++f) {
        std::array<int, 3> p = k.idx;
        p[axis_of(f)] += f % 2 ? 1 : -1;
        const bool in = p[axis_of(f)] >= 0 && p[axis_of(f)] < dims[axis_of(f)];
        k.peer[f] = in ? p[0] + d.bx * (p[1] + d.by * p[2]) : -1;
        if (in) k.ghost[f].assign(2 * face_count(s, f), 0.0);
      }
    }
  }
  // Windows opened at `base` (zeroed buffers, flags 0), then every block primes.
  void open(long base) {
    for (Blk& k : b) {
      k.next = base;
      for (int f = 0; f < kFaces; ++f) {
        std::fill(k.ghost[f].begin(), k.ghost[f].end(), -1.0);  // stale garbage must never be read
        k.flag[f] = 0;
      }
    }
    for (Blk& k : b)
      for (int f = 0; f < kFaces; ++f) {
        if (k.peer[f] < 0) continue;
        Blk& p = b[static_cast<std::size_t>(k.peer[f])];
        const Box box = face_box(s, f, false);
        for (std::size_t n = 0; n < box.count(); ++n) {
          int i, j, kk;
          box.cell(n, i, j, kk);
          p.ghost[opposite(f)][read_half(base) * face_count(s, f) + face_index(s, f, i, j, kk)] =
              k.u[base % 2][s.at(i, j, kk)];
        }
        p.flag[opposite(f)] = kPrimeRound;
      }
  }
  bool can_run(const Blk& k, long base, long target) const {
    if (k.next >= target) return false;
    for (int f = 0; f < kFaces; ++f)
      if (k.peer[f] >= 0 && k.flag[f] < wait_round(k.next, base)) return false;
    return true;
  }
  void iterate(Blk& k, long base) {
    const long it = k.next;
    const std::vector<double>& in = k.u[it % 2];
    std::vector<double>& out = k.u[(it + 1) % 2];
    cpu::update(s, in.data(), out.data(), interior_box(s));
    Ghosts gh;
    for (int f = 0; f < kFaces; ++f)
      if (k.peer[f] >= 0) gh.g[f] = k.ghost[f].data() + read_half(it) * face_count(s, f);
    const BoxList shell = make_box_list(boundary_boxes(s));
    for (std::size_t t = 0; t < shell.count(); ++t) {
      int i, j, kk;
      shell.cell(t, i, j, kk);
      const double v = stencil_ghosts(s, in.data(), gh, i, j, kk);
      out[s.at(i, j, kk)] = v;
      for (int f = 0; f < kFaces; ++f)
        if (k.peer[f] >= 0 && on_layer(s, f, i, j, kk))
          b[static_cast<std::size_t>(k.peer[f])]
              .ghost[opposite(f)][write_half(it) * face_count(s, f) + face_index(s, f, i, j, kk)] = v;
    }
    for (int f = 0; f < kFaces; ++f)
      if (k.peer[f] >= 0) b[static_cast<std::size_t>(k.peer[f])].flag[opposite(f)] = signal_round(it, base);
    ++k.next;
  }
  // Runs every block to `target`, picking a runnable block at random each time.
  void run(long base, long target, std::mt19937& rng) {
    for (;;) {
      std::vector<Blk*> ok;
      for (Blk& k : b)
        if (can_run(k, base, target)) ok.push_back(&k);
      if (ok.empty()) break;
      iterate(*ok[std::uniform_int_distribution<std::size_t>(0, ok.size() - 1)(rng)], base);
    }
    for (const Blk& k : b) ASSERT_EQ(k.next, target) << "a block could not go on: the flags deadlock";
  }
  long wrong(long iterations) const {
    const std::vector<double> ref = serial_reference(d.gx, d.gy, d.gz, static_cast<int>(iterations));
    const Shape g{d.gx, d.gy, d.gz};
    long bad = 0;
    for (const Blk& k : b)
      for (int kk = 1; kk <= s.lz; ++kk)
        for (int j = 1; j <= s.ly; ++j)
          for (int i = 1; i <= s.lx; ++i)
            bad += k.u[iterations % 2][s.at(i, j, kk)] !=
                   ref[g.at(k.idx[0] * s.lx + i, k.idx[1] * s.ly + j, k.idx[2] * s.lz + kk)];
    return bad;
  }
};
}  // namespace

TEST(JacobiDevice, EmulatedRunsMatchSerial) {
  struct Case {
    int gx, gy, gz, blocks;
  };
  // Overdecomposed; one cell per block (every layer of a block is the same cell); one block.
  for (const Case c :
       {Case{24, 18, 12, 12}, Case{4, 6, 6, 8}, Case{8, 4, 4, 16}, Case{4, 4, 4, 64}, Case{6, 5, 4, 1}}) {
    for (unsigned seed = 1; seed <= 4; ++seed) {
      std::mt19937 rng(seed);
      Emu e(c.gx, c.gy, c.gz, c.blocks);
      e.open(0);
      e.run(0, 9, rng);
      EXPECT_EQ(e.wrong(9), 0) << c.gx << "x" << c.gy << "x" << c.gz << " in " << c.blocks << " blocks, seed " << seed;
      // A restart at iteration 9: new windows (zeroed, flags 0), base 9, primed again.
      e.open(9);
      e.run(9, 20, rng);
      EXPECT_EQ(e.wrong(20), 0) << "after the restart, " << c.blocks << " blocks, seed " << seed;
    }
  }
}
