// Jacobi3D --mode device's kernels on one GPU, without the runtime: the blocks of a small
// grid in one process, their window handles made by hand (local: a block's ghost buffer
// for a face; remote: the neighbour's for the opposite face; flags: one device word per
// side), all kernels on one stream in an order that needs no waits (every priming kernel,
// then per iteration every block's interior and shell). The grid must equal the serial
// run bit for bit, and flags and progress words must hold the last round and iteration.
// Skips where no GPU is visible.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "device_kernels.h"
#include "kernels.h"

using namespace jacobi;
using namespace jacobi::devmode;

namespace {
void ok(cudaError_t e) { ASSERT_EQ(e, cudaSuccess) << cudaGetErrorString(e); }
}  // namespace

TEST(JacobiGpu, DeviceModeKernels) {
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) GTEST_SKIP() << "no CUDA device visible";
  const int gx = 16, gy = 12, gz = 8, nblocks = 8, iters = 9;
  std::string why;
  const Decomposition d = *decompose(gx, gy, gz, nblocks, why);
  const Shape s = d.block();
  cudaStream_t stream = nullptr;
  ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  struct Blk {
    std::array<int, 3> idx{};
    std::array<int, kFaces> peer{};
    double* u[2] = {nullptr, nullptr};
    double* ghost[kFaces] = {};
    unsigned long long* flag[kFaces] = {};
    unsigned* counter = nullptr;
    unsigned long long* progress = nullptr;
    Links links;
  };
  std::vector<Blk> b(nblocks);
  for (int n = 0; n < nblocks; ++n) {
    Blk& k = b[n];
    k.idx = {n % d.bx, (n / d.bx) % d.by, n / (d.bx * d.by)};
    const std::vector<double> h = boundary_block(s, k.idx[0] * s.lx, k.idx[1] * s.ly, k.idx[2] * s.lz, gx, gy, gz);
    for (double*& u : k.u) {
      u = static_cast<double*>(jacobi::cuda::alloc(h.size() * sizeof(double), stream));
      ok(cudaMemcpyAsync(u, h.data(), h.size() * sizeof(double), cudaMemcpyHostToDevice, stream));
    }
    const std::array<int, 3> dims{d.bx, d.by, d.bz};
    for (int f = 0; f < kFaces; ++f) {
      std::array<int, 3> p = k.idx;
      p[axis_of(f)] += f % 2 ? 1 : -1;
      const bool in = p[axis_of(f)] >= 0 && p[axis_of(f)] < dims[axis_of(f)];
      k.peer[f] = in ? p[0] + d.bx * (p[1] + d.by * p[2]) : -1;
      if (!in) continue;
      k.ghost[f] = static_cast<double*>(jacobi::cuda::alloc(2 * face_count(s, f) * sizeof(double), stream));
      k.flag[f] = static_cast<unsigned long long*>(jacobi::cuda::alloc(sizeof(unsigned long long), stream));
    }
    k.counter = alloc_counter(stream);
    k.progress = alloc_progress(0);
  }
  for (Blk& k : b)
    for (int f = 0; f < kFaces; ++f) {
      if (k.peer[f] < 0) continue;
      const Blk& p = b[k.peer[f]];
      ck::DeviceWindowHandle& h = k.links.win[f];
      h.local = reinterpret_cast<unsigned char*>(k.ghost[f]);
      h.remote = reinterpret_cast<unsigned char*>(p.ghost[opposite(f)]);
      h.local_bytes = h.remote_bytes = 2 * face_count(s, f) * sizeof(double);
      h.local_flag = k.flag[f];
      h.remote_flag = p.flag[opposite(f)];
      h.magic = ck::kDeviceWindowMagic;
      k.links.has[f] = 1;
    }
  std::array<Box, kFaces> sends{};
  for (int f = 0; f < kFaces; ++f) sends[f] = face_box(s, f, false);
  const Box interior = interior_box(s);
  const BoxList shell = make_box_list(boundary_boxes(s));
  for (Blk& k : b) {
    std::array<Box, kFaces> mine{};
    for (int f = 0; f < kFaces; ++f)
      if (k.peer[f] >= 0) mine[f] = sends[f];
    launch_prime(s, k.u[0], make_box_list(mine), k.links, read_half(0), k.counter, stream);
  }
  for (int it = 0; it < iters; ++it)
    for (Blk& k : b) {
      jacobi::cuda::update(s, k.u[it % 2], k.u[(it + 1) % 2], interior, stream);
      launch_shell(s, k.u[it % 2], k.u[(it + 1) % 2], shell, k.links, it, signal_round(it, 0), k.counter, k.progress,
                   stream);
    }
  ok(cudaStreamSynchronize(stream));

  const std::vector<double> ref = serial_reference(gx, gy, gz, iters);
  const Shape g{gx, gy, gz};
  long wrong = 0;
  for (Blk& k : b) {
    std::vector<double> h(s.cells());
    ok(cudaMemcpy(h.data(), k.u[iters % 2], h.size() * sizeof(double), cudaMemcpyDeviceToHost));
    for (int z = 1; z <= s.lz; ++z)
      for (int y = 1; y <= s.ly; ++y)
        for (int x = 1; x <= s.lx; ++x)
          wrong += h[s.at(x, y, z)] != ref[g.at(k.idx[0] * s.lx + x, k.idx[1] * s.ly + y, k.idx[2] * s.lz + z)];
    EXPECT_EQ(*k.progress, static_cast<unsigned long long>(iters));
    for (int f = 0; f < kFaces; ++f) {
      if (k.peer[f] < 0) continue;
      unsigned long long v = 0;
      ok(cudaMemcpy(&v, k.flag[f], sizeof v, cudaMemcpyDeviceToHost));
      EXPECT_EQ(v, signal_round(iters - 1, 0)) << "face " << f;
    }
  }
  EXPECT_EQ(wrong, 0) << "cells that differ from the serial run";
  for (Blk& k : b) {
    for (double* u : k.u) jacobi::cuda::free(u);
    for (int f = 0; f < kFaces; ++f) {
      jacobi::cuda::free(k.ghost[f]);
      jacobi::cuda::free(k.flag[f]);
    }
    free_counter(k.counter);
    free_progress(k.progress);
  }
  cudaStreamDestroy(stream);
}
