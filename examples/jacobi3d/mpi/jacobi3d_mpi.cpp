// Jacobi3D in plain MPI: the chare program (../jacobi3d.cpp) written the way an MPI code
// would be, so that one source runs on ucharm's AMPI (virtualized ranks, +vp) and on any
// MPI library. One block per rank; the block grid is the chare version's (least total
// surface, jacobi::decompose), rank r holds block (r mod bx, (r / bx) mod by, r / (bx*by)).
// Every iteration: pack faces, Irecv/Isend with up to six neighbours, interior update
// (overlapping the exchange), Waitall, unpack, update of the shell. Halo modes:
//   staging   device halos copied to pinned host buffers, sent from host, copied back
//   gpuaware  device pointers handed to MPI_Isend/MPI_Irecv directly
//   rma       MPI-3 one-sided: MPI_Put of each packed face into the neighbour's window
//             (MPI_Win_create over its ghost-receive buffers), synchronised per iteration
//             with post/start/complete/wait on the neighbour group (device memory with
//             CUDA kernels: GPU-aware RMA)
// With CPU kernels staging and gpuaware send host buffers (they then differ in nothing).
// Load balancing (the chare version's imbalanced mode): --imbalance K --heavy F makes the
// first F of the ranks (by index) run their update K times per iteration (the update reads
// only the old array, so the result is the same); --lb-every N calls AMPI_Migrate with
// ampi_load_balance=sync after every N-th iteration under ucharm's AMPI (UCHARM_AMPI), so
// the balancer may move heavy ranks to other PEs; other MPIs ignore it. The checksum line
// (a sum in rank order, independent of where the ranks ran) lets runs be compared.
// Checkpoints (AMPI): --checkpoint-every K calls AMPI_Migrate with
// ampi_checkpoint=to_file=DIR after every K-th iteration; a run started with +restart DIR
// goes on from there (every rank returns from that AMPI_Migrate in the new job), with the
// uninterrupted run's checksum.
// Uses MPI-1 point-to-point and collectives only (no Cart or Comm_split_type), and MPI-3
// RMA in --mode rma.
//   mpirun -np 8 jacobi3d_mpi --grid 96 --iters 100 --mode gpuaware [--verify]
//   ucharmrun -n 2 jacobi3d_ampi --grid 96 --iters 100 --verify +vp 8
#include <mpi.h>

#if defined(OPEN_MPI) && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // MPIX_Query_cuda_support
#endif

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "buffer.h"
#include "grid.h"
#include "kernels.h"
#include "mpi_common.h"

// No mutable globals or function statics anywhere in this file: under AMPI several ranks
// share one process (and its globals).
namespace {

using namespace jacobi;
using mpi_common::mpi_name;

enum class Mode { Staging, GpuAware, Rma };
const char* mode_name(Mode m) { return m == Mode::Staging ? "staging" : m == Mode::GpuAware ? "gpuaware" : "rma"; }

struct Options {
  int gx = 64, gy = 64, gz = 64, blocks = 0, iters = 100, warmup = 10;
  int imbalance = 1;      // heavy ranks run their update this many times per iteration
  double heavy = 0.25;    // fraction of the ranks (the first by index) that are heavy
  int lb_every = 0;       // AMPI_Migrate after every N-th iteration (0: never)
  int ckpt_every = 0;     // AMPI checkpoint after every K-th iteration (0: never)
  std::string ckpt_dir = "jacobi3d_mpi.ckpt";
  int stop_after = 0;     // end the run right after the checkpoint at this iteration
  Mode mode = Mode::GpuAware;
  std::string kernels = "auto", csv;
  bool verify = false;
};

// An error every rank detects alike (bad options): see mpi_common::fail_all.
[[noreturn]] void fail(int rank, const std::string& why) { mpi_common::fail_all("jacobi3d_mpi", rank, why); }

// The rank's index among the ranks on its node (same processor name): it picks the GPU.
int node_local_rank(int rank, int size) {
  std::vector<char> name(MPI_MAX_PROCESSOR_NAME, 0), all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME, 0);
  int len = 0;
  MPI_Get_processor_name(name.data(), &len);
  MPI_Allgather(name.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                MPI_COMM_WORLD);
  int local = 0;
  for (int r = 0; r < rank; ++r)
    if (std::strncmp(all.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME, name.data(),
                     MPI_MAX_PROCESSOR_NAME) == 0)
      ++local;
  return local;
}

// This rank's block: two copies of the padded grid, halo buffers, neighbours' ranks.
class Block {
 public:
  Block(const Decomposition& d, int rank, bool gpu, int gpu_slot, Mode mode, int reps)
      : d_(d), shape_(d.block()), gpu_(gpu), slot_(gpu_slot), mode_(mode), reps_(reps) {
    idx_ = {rank % d.bx, (rank / d.bx) % d.by, rank / (d.bx * d.by)};
    if (gpu_) {
      bind();
      stream_ = cuda::stream_create();
    }
    const Buffer::Kind dev = gpu_ ? Buffer::Kind::Device : Buffer::Kind::Host;
    for (Buffer& b : u_) b = Buffer(shape_.cells(), dev, stream_);
    init_boundary();
    const std::array<int, 3> dims{d.bx, d.by, d.bz};
    for (int f = 0; f < kFaces; ++f) {
      std::array<int, 3> n = idx_;
      n[axis_of(f)] += f % 2 ? 1 : -1;
      if (n[axis_of(f)] < 0 || n[axis_of(f)] >= dims[axis_of(f)]) continue;
      peer_[f] = n[0] + d.bx * (n[1] + d.by * n[2]);
      send_box_[f] = face_box(shape_, f, false);
      ghost_box_[f] = face_box(shape_, f, true);
      const std::size_t cells = send_box_[f].count();
      send_[f] = Buffer(cells, dev, stream_);
      recv_[f] = Buffer(cells, dev, stream_);
      if (gpu_ && mode_ == Mode::Staging) {
        stage_send_[f] = Buffer(cells, Buffer::Kind::Pinned);
        stage_recv_[f] = Buffer(cells, Buffer::Kind::Pinned);
      }
    }
    interior_ = interior_box(shape_);
    shell_ = boundary_boxes(shape_);
    if (gpu_) cuda::synchronize(stream_);  // zeroing and boundary values are in place
    if (mode_ == Mode::Rma) open_window(dev);
  }
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  ~Block() {
    if (mode_ == Mode::Rma) {  // collective: every rank's block goes at the end of run_main
      MPI_Win_free(&win_);
      MPI_Group_free(&nbrs_);
    }
    bind();  // the buffers (members, freed after this) and the stream are this rank's GPU's
    if (stream_) cuda::stream_destroy(stream_);
  }

  // The CUDA current device belongs to the OS thread; under AMPI other ranks run on this
  // thread while one blocks in MPI, so the device is chosen again after every blocking call.
  void bind() const {
    if (gpu_) cuda::select_device(slot_);
  }

  // `n` iterations; returns the time spent waiting for halos (seconds).
  double run(int n) {
    double comm = 0;
    for (int i = 0; i < n; ++i) comm += iteration();
    if (gpu_) cuda::synchronize(stream_);
    return comm;
  }

  // The block's own cells (x fastest), in host memory.
  std::vector<double> own_cells() {
    std::vector<double> h(shape_.cells());
    const Buffer& b = u_[cur_ % 2];
    if (gpu_) {
      cuda::copy_to_host(h.data(), b.data(), b.bytes(), stream_);
      cuda::synchronize(stream_);
    } else {
      std::memcpy(h.data(), b.data(), b.bytes());
    }
    std::vector<double> own(static_cast<std::size_t>(shape_.lx) * shape_.ly * shape_.lz);
    cpu::pack(shape_, h.data(), Box{1, shape_.lx + 1, 1, shape_.ly + 1, 1, shape_.lz + 1}, own.data());
    return own;
  }

 private:
  // Ghost cells on the global boundary hold the fixed values, in both arrays, forever.
  void init_boundary() {
    const std::vector<double> h = boundary_block(shape_, idx_[0] * shape_.lx, idx_[1] * shape_.ly,
                                                 idx_[2] * shape_.lz, d_.gx, d_.gy, d_.gz);
    for (Buffer& b : u_) {
      if (gpu_) cuda::copy_to_device(b.data(), h.data(), b.bytes(), stream_);
      else std::memcpy(b.data(), h.data(), b.bytes());
    }
    if (gpu_) cuda::synchronize(stream_);  // h goes away on return
  }

  // --mode rma: one window over all six faces' ghost-receive areas (a face's place is
  // the same on every rank: equal blocks), and the group of neighbours that put into it.
  void open_window(Buffer::Kind kind) {
    std::size_t total = 0;
    for (int f = 0; f < kFaces; ++f) {
      rma_off_[f] = static_cast<MPI_Aint>(total);
      total += face_cells(shape_, f);
    }
    ghosts_ = Buffer(total, kind, stream_);
    if (gpu_) cuda::synchronize(stream_);  // zeroed before a neighbour can put
    MPI_Win_create(ghosts_.data(), static_cast<MPI_Aint>(ghosts_.bytes()), sizeof(double), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &win_);
    bind();
    std::vector<int> ranks;
    for (int p : peer_)
      if (p != MPI_PROC_NULL) ranks.push_back(p);  // distinct: no periodic wrap
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, static_cast<int>(ranks.size()), ranks.data(), &nbrs_);
    MPI_Group_free(&world);
    neighbours_ = static_cast<int>(ranks.size());
  }

  // One iteration's halos by RMA, between the packs and the unpacks: expose this rank's
  // window to the neighbours (post), open access to theirs (start), put each face at the
  // place of the opposite face there, update the interior meanwhile, then complete (the
  // puts are done) and wait (the neighbours' puts into this window are done). A neighbour
  // can put only inside this rank's post..wait, which comes after the unpacks of the
  // iteration before: one area per face is enough. Returns the halo wait (seconds).
  double exchange_rma() {
    if (neighbours_ == 0) {
      update(interior_);
      return 0;
    }
    MPI_Win_post(nbrs_, 0, win_);
    MPI_Win_start(nbrs_, 0, win_);
    bind();
    for (int f = 0; f < kFaces; ++f)
      if (peer_[f] != MPI_PROC_NULL) {
        const int n = static_cast<int>(send_[f].count());
        MPI_Put(send_[f].data(), n, MPI_DOUBLE, peer_[f], rma_off_[opposite(f)], n, MPI_DOUBLE, win_);
      }
    bind();
    update(interior_);
    const double t0 = MPI_Wtime();
    MPI_Win_complete(win_);
    MPI_Win_wait(win_);
    return MPI_Wtime() - t0;
  }

  // A heavy rank repeats the update: real work, and the same output (it reads only `in`).
  void update(const Box& b) {
    const double* in = u_[cur_ % 2].data();
    double* out = u_[(cur_ + 1) % 2].data();
    for (int r = 0; r < reps_; ++r) {
      if (gpu_) cuda::update(shape_, in, out, b, stream_);
      else cpu::update(shape_, in, out, b);
    }
  }

  // What MPI reads and writes: pinned host copies when staging GPU halos, else the halo
  // buffers themselves (device memory in GPU-aware mode, host memory with CPU kernels).
  double* wire_send(int f) { return gpu_ && mode_ == Mode::Staging ? stage_send_[f].data() : send_[f].data(); }
  double* wire_recv(int f) { return gpu_ && mode_ == Mode::Staging ? stage_recv_[f].data() : recv_[f].data(); }

  double iteration() {
    const double* in = u_[cur_ % 2].data();
    for (int f = 0; f < kFaces; ++f) {
      if (peer_[f] == MPI_PROC_NULL) continue;
      if (gpu_) {
        cuda::pack(shape_, in, send_box_[f], send_[f].data(), stream_);
        if (mode_ == Mode::Staging) cuda::copy_to_host(stage_send_[f].data(), send_[f].data(), send_[f].bytes(), stream_);
      } else {
        cpu::pack(shape_, in, send_box_[f], send_[f].data());
      }
    }
    // The packs (and copies) are done before MPI reads the buffers, and the previous
    // iteration's unpacks are done before MPI overwrites the receive buffers.
    if (gpu_) cuda::synchronize(stream_);
    const double waited = mode_ == Mode::Rma ? exchange_rma() : exchange_p2p();
    bind();
    double* ghosts = u_[cur_ % 2].data();
    for (int f = 0; f < kFaces; ++f) {
      if (peer_[f] == MPI_PROC_NULL) continue;
      const double* halo = mode_ == Mode::Rma ? ghosts_.data() + rma_off_[f] : recv_[f].data();
      if (gpu_) {
        if (mode_ == Mode::Staging) cuda::copy_to_device(recv_[f].data(), stage_recv_[f].data(), recv_[f].bytes(), stream_);
        cuda::unpack(shape_, ghosts, ghost_box_[f], halo, stream_);
      } else {
        cpu::unpack(shape_, ghosts, ghost_box_[f], halo);
      }
    }
    for (const Box& b : shell_) update(b);
    ++cur_;
    return waited > 0 ? waited : 0;
  }

  // Two-sided halos (staging, gpuaware): Irecv/Isend, the interior update, Waitall.
  double exchange_p2p() {
    int nreq = 0;
    // Tags name the sender's face: what arrives across face f was sent across opposite(f).
    for (int f = 0; f < kFaces; ++f)
      if (peer_[f] != MPI_PROC_NULL)
        MPI_Irecv(wire_recv(f), static_cast<int>(recv_[f].count()), MPI_DOUBLE, peer_[f], opposite(f), MPI_COMM_WORLD,
                  &req_[nreq++]);
    for (int f = 0; f < kFaces; ++f)
      if (peer_[f] != MPI_PROC_NULL)
        MPI_Isend(wire_send(f), static_cast<int>(send_[f].count()), MPI_DOUBLE, peer_[f], f, MPI_COMM_WORLD,
                  &req_[nreq++]);
    update(interior_);  // overlaps with the exchange (queued on the stream with CUDA)
    const double t0 = MPI_Wtime();
    MPI_Waitall(nreq, req_.data(), MPI_STATUSES_IGNORE);
    return MPI_Wtime() - t0;
  }

  Decomposition d_;
  Shape shape_;
  bool gpu_;
  int slot_;
  Mode mode_;
  int reps_;  // updates per iteration (--imbalance on heavy ranks, else 1)
  std::array<int, 3> idx_{};
  void* stream_ = nullptr;
  Buffer u_[2];  // u_[it % 2] is read in iteration it, u_[(it + 1) % 2] written
  std::array<int, kFaces> peer_{MPI_PROC_NULL, MPI_PROC_NULL, MPI_PROC_NULL,
                                MPI_PROC_NULL, MPI_PROC_NULL, MPI_PROC_NULL};
  std::array<Box, kFaces> send_box_{}, ghost_box_{};
  Buffer send_[kFaces], recv_[kFaces];              // packed faces (device or host)
  Buffer stage_send_[kFaces], stage_recv_[kFaces];  // staging: pinned host copies
  std::array<MPI_Request, 2 * kFaces> req_{};
  Buffer ghosts_;                                   // rma: the window (all faces' areas)
  std::array<MPI_Aint, kFaces> rma_off_{};          // rma: each face's area, in doubles
  MPI_Win win_ = MPI_WIN_NULL;
  MPI_Group nbrs_ = MPI_GROUP_NULL;
  int neighbours_ = 0;
  Box interior_;
  std::array<Box, kFaces> shell_{};
  int cur_ = 0;
};

// Rank 0 compares every block with a serial run of the whole grid; returns the number of
// differing cells (on every rank).
long verify(Block& block, const Decomposition& d, int iterations, int rank, int size) {
  const std::vector<double> own = block.own_cells();
  const int n = static_cast<int>(own.size());
  std::vector<double> all;
  if (rank == 0) all.resize(static_cast<std::size_t>(n) * size);
  MPI_Gather(own.data(), n, MPI_DOUBLE, all.data(), n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  long wrong = 0;
  if (rank == 0) {
    const std::vector<double> ref = serial_reference(d.gx, d.gy, d.gz, iterations);
    const Shape g{d.gx, d.gy, d.gz}, s = d.block();
    for (int r = 0; r < size; ++r) {
      const int ox = (r % d.bx) * s.lx, oy = ((r / d.bx) % d.by) * s.ly, oz = (r / (d.bx * d.by)) * s.lz;
      const double* b = all.data() + static_cast<std::size_t>(r) * n;
      std::size_t c = 0;
      for (int k = 1; k <= s.lz; ++k)
        for (int j = 1; j <= s.ly; ++j)
          for (int i = 1; i <= s.lx; ++i, ++c)
            if (b[c] != ref[g.at(ox + i, oy + j, oz + k)]) ++wrong;
    }
  }
  MPI_Bcast(&wrong, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  return wrong;
}

// The PE this rank runs on (AMPI), else -1.
int my_pe() {
#if defined(UCHARM_AMPI)
  return AMPI_My_pe();
#else
  return -1;
#endif
}

// One load-balancing step, collective: under AMPI the balancer may move this rank (its
// stack and heap, this Block with them) to another PE. Other MPIs have no such call.
void balance() {
#if defined(UCHARM_AMPI)
  MPI_Info hints;
  MPI_Info_create(&hints);
  MPI_Info_set(hints, "ampi_load_balance", "sync");
  AMPI_Migrate(hints);
  MPI_Info_free(&hints);
#endif
}

#if defined(UCHARM_AMPI)
// Which process this is (its pid and start time): a rank that returns from a checkpoint's
// AMPI_Migrate in another process was restarted from it.
unsigned long long process_token() {
  unsigned long long start = 0;
  if (FILE* f = std::fopen("/proc/self/stat", "r")) {
    // Field 22 is the start time; the command name (field 2) may hold spaces: skip past ')'.
    char buf[1024];
    const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = 0;
    if (const char* p = std::strrchr(buf, ')')) {
      int field = 2;
      for (; *p && field < 22; ++p)
        if (*p == ' ') ++field;
      start = std::strtoull(p, nullptr, 10);
    }
  }
  return (static_cast<unsigned long long>(getpid()) << 40) ^ start;
}
#endif

// A checkpoint of the whole job, collective: true when this rank goes on in a job restarted
// from it (+restart DIR), false right after writing it.
bool checkpoint(const std::string& dir) {
#if defined(UCHARM_AMPI)
  const unsigned long long before = process_token();
  MPI_Info hints;
  MPI_Info_create(&hints);
  MPI_Info_set(hints, "ampi_load_balance", "false");
  MPI_Info_set(hints, "ampi_checkpoint", ("to_file=" + dir).c_str());
  AMPI_Migrate(hints);
  MPI_Info_free(&hints);
  return process_token() != before;
#else
  (void)dir;
  return false;
#endif
}

// Iterations with balancing steps and checkpoints between them: after every lb_every-th
// (ckpt_every-th) iteration counted from the start (warm-up included), except after the
// last one (`total`).
struct Stepper {
  Block& block;
  int lb_every, total;
  int ckpt_every = 0;
  std::string ckpt_dir{};
  int stop_after = 0;
  int rank = 0;
  int done = 0, steps = 0;
  double lb_time = 0;    // seconds in balance()
  double ckpt_time = 0;  // seconds in checkpoint()
  bool stopped = false;  // --stop-after-checkpoint reached: the run ends

  static int to_boundary(int every, int done) { return every > 0 ? every - done % every : 1 << 30; }

  double advance(int n) {  // returns the halo wait time
    double comm = 0;
    while (n > 0 && !stopped) {
      const int chunk = std::min({n, to_boundary(lb_every, done), to_boundary(ckpt_every, done)});
      comm += block.run(chunk);
      done += chunk;
      n -= chunk;
      if (lb_every > 0 && done % lb_every == 0 && done < total) {
        const double t = MPI_Wtime();
        balance();
        block.bind();
        lb_time += MPI_Wtime() - t;
        ++steps;
      }
      if (ckpt_every > 0 && done % ckpt_every == 0 && done < total) {
        const double t = MPI_Wtime();
        const bool restarted = checkpoint(ckpt_dir);
        block.bind();
        const double took = MPI_Wtime() - t;
        ckpt_time += took;
        if (rank == 0) {
          if (restarted) std::printf("restarted from %s at iteration %d\n", ckpt_dir.c_str(), done);
          else std::printf("checkpoint at iteration %d: %.3f s\n", done, took);
          std::fflush(stdout);
        }
        if (!restarted && done == stop_after) {
          if (rank == 0) std::printf("stopped after the checkpoint at iteration %d\n", done);
          stopped = true;
        }
      }
    }
    return comm;
  }
};

// Rank 0 prints the sum of all cells, added in rank order: the same bits wherever the
// ranks ran, so a balanced run can be compared with an unbalanced one.
void print_checksum(Block& block, int rank, int size) {
  double own = 0;
  for (double v : block.own_cells()) own += v;
  std::vector<double> all(rank == 0 ? static_cast<std::size_t>(size) : 0);
  MPI_Gather(&own, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    double sum = 0;
    for (double v : all) sum += v;
    std::printf("checksum: %.17g\n", sum);
  }
}

// Under AMPI, rank 0 prints how many ranks each PE held at the start and holds now.
void print_placement(int first_pe, int rank, int size) {
  const int pes[2] = {first_pe, my_pe()};
  if (pes[1] < 0) return;  // not AMPI (every rank alike)
  std::vector<int> all(rank == 0 ? 2 * static_cast<std::size_t>(size) : 0);
  MPI_Gather(pes, 2, MPI_INT, all.data(), 2, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank != 0) return;
  int npes = 0, moved = 0;
  for (int v : all) npes = std::max(npes, v + 1);
  std::vector<int> before(static_cast<std::size_t>(npes)), after(static_cast<std::size_t>(npes));
  for (int r = 0; r < size; ++r) {
    ++before[static_cast<std::size_t>(all[2 * r])];
    ++after[static_cast<std::size_t>(all[2 * r + 1])];
    moved += all[2 * r] != all[2 * r + 1];
  }
  std::string b, a;
  for (int p = 0; p < npes; ++p) {
    b += " " + std::to_string(before[static_cast<std::size_t>(p)]);
    a += " " + std::to_string(after[static_cast<std::size_t>(p)]);
  }
  std::printf("ranks per PE: start%s, end%s; %d ranks moved\n", b.c_str(), a.c_str(), moved);
}

int run_main(int argc, char** argv, std::chrono::steady_clock::time_point started) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  Options o;
  CLI::App app{"Jacobi3D in MPI: 7-point stencil on a 3-D grid, one block per rank"};
  int grid = 0;
  std::string mode = "gpuaware";
  app.add_option("--grid", grid, "cells per dimension of a cubic grid (overrides -x/-y/-z)")->check(CLI::PositiveNumber);
  app.add_option("-x", o.gx, "grid cells in x")->check(CLI::PositiveNumber);
  app.add_option("-y", o.gy, "grid cells in y")->check(CLI::PositiveNumber);
  app.add_option("-z", o.gz, "grid cells in z")->check(CLI::PositiveNumber);
  app.add_option("--blocks", o.blocks, "number of blocks: must equal the number of ranks (the default)")
      ->check(CLI::PositiveNumber);
  app.add_option("--iters", o.iters, "timed iterations")->check(CLI::PositiveNumber);
  app.add_option("--warmup", o.warmup, "untimed iterations first")->check(CLI::NonNegativeNumber);
  app.add_option("--mode", mode,
                 "halo exchange: staging (through host memory), gpuaware (device pointers to MPI) or rma (MPI_Put with "
                 "post/start/complete/wait)")
      ->check(CLI::IsMember({"staging", "gpuaware", "rma"}));
  app.add_option("--kernels", o.kernels, "auto (GPU if visible), cuda or cpu")->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  app.add_option("--imbalance", o.imbalance, "heavy ranks run their update K times per iteration")
      ->check(CLI::PositiveNumber);
  app.add_option("--heavy", o.heavy, "fraction of the ranks (the first by index) that are heavy")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--lb-every", o.lb_every, "AMPI: AMPI_Migrate (load balancing) after every N-th iteration (0: never)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--checkpoint-every", o.ckpt_every,
                 "AMPI: write a checkpoint (AMPI_Migrate, ampi_checkpoint) after every K-th iteration (0: never)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--checkpoint-dir", o.ckpt_dir, "AMPI: the checkpoint's folder (+restart DIR resumes from it)");
  app.add_option("--stop-after-checkpoint", o.stop_after, "end the run right after the checkpoint at iteration S")
      ->check(CLI::PositiveNumber);
  app.add_flag("--verify", o.verify, "compare with a serial run, bit for bit (small grids)");
  app.add_option("--csv", o.csv, "append one result line to this CSV file (rank 0)");
  if (!mpi_common::parse_args(app, argc, argv, "jacobi3d_mpi", rank)) return 0;
  if (grid) o.gx = o.gy = o.gz = grid;
  o.mode = mode == "staging" ? Mode::Staging : mode == "gpuaware" ? Mode::GpuAware : Mode::Rma;
  if (o.blocks && o.blocks != size)
    fail(rank, "--blocks " + std::to_string(o.blocks) + ": the MPI version has one block per rank, and there are " +
                   std::to_string(size) + " ranks");
  std::string why;
  const auto d = decompose(o.gx, o.gy, o.gz, size, why);
  if (!d) fail(rank, why);
  const bool have_gpu = cuda::available();
  if (o.kernels == "cuda" && !have_gpu) fail(rank, "--kernels cuda, but no GPU is visible (or a build without CUDA)");
  const bool gpu = o.kernels == "cuda" || (o.kernels == "auto" && have_gpu);
  const int slot = node_local_rank(rank, size);
  // Device memory cannot move with a rank (AMPI refuses to migrate it).
  if (o.lb_every > 0 && gpu) fail(rank, "--lb-every needs --kernels cpu: a rank's device memory cannot migrate");
  if (o.lb_every > 0 && o.mode == Mode::Rma && std::string(mpi_name()) == "ampi")
    fail(rank, "--lb-every with --mode rma: AMPI does not migrate a rank while it has an open window");
  if (o.ckpt_every > 0 && gpu) fail(rank, "--checkpoint-every needs --kernels cpu: a rank's device memory is not checkpointed");
  if (o.ckpt_every > 0 && o.mode == Mode::Rma && std::string(mpi_name()) == "ampi")
    fail(rank, "--checkpoint-every with --mode rma: AMPI does not checkpoint a rank while it has an open window");
  if (o.stop_after > 0 && (o.ckpt_every == 0 || o.stop_after % o.ckpt_every != 0))
    fail(rank, "--stop-after-checkpoint " + std::to_string(o.stop_after) + ": no checkpoint is written at that iteration (see --checkpoint-every)");
  const int heavy = o.imbalance > 1 ? static_cast<int>(std::ceil(o.heavy * size)) : 0;
  const int first_pe = my_pe();
  const bool ampi = std::string(mpi_name()) == "ampi";

  const Shape s = d->block();
  if (rank == 0) {
    std::printf("Jacobi3D (MPI, %s): grid %dx%dx%d, %d blocks (%dx%dx%d) of %dx%dx%d, %d ranks, mode %s, %s kernels\n",
                mpi_name(), d->gx, d->gy, d->gz, size, d->bx, d->by, d->bz, s.lx, s.ly, s.lz, size,
                mode_name(o.mode), gpu ? "CUDA" : "CPU");
#if defined(OMPI_HAVE_MPI_EXT_CUDA)
    if (gpu && o.mode == Mode::GpuAware && !MPIX_Query_cuda_support())
      std::printf("note: this OpenMPI reports no CUDA support: device buffers work only through a CUDA-enabled "
                  "UCX (--mca pml ucx); else use --mode staging\n");
#endif
    if (heavy > 0)
      std::printf("imbalance: ranks 0-%d of %d run their update %d times per iteration\n", heavy - 1, size,
                  o.imbalance);
    if (o.lb_every > 0) {
      if (ampi)
        std::printf("load balancing: AMPI_Migrate after every %d iterations\n", o.lb_every);
      else
        std::printf("load balancing: --lb-every ignored (%s cannot migrate ranks)\n", mpi_name());
    }
    if (o.ckpt_every > 0) {
      if (ampi)
        std::printf("checkpoints: every %d iterations to %s\n", o.ckpt_every, o.ckpt_dir.c_str());
      else
        std::printf("checkpoints: --checkpoint-every ignored (%s has no AMPI checkpoints)\n", mpi_name());
    }
    std::fflush(stdout);
  }

  Block block(*d, rank, gpu, slot, o.mode, rank < heavy ? o.imbalance : 1);
  Stepper steps{block, ampi ? o.lb_every : 0, o.warmup + o.iters};
  if (ampi) {
    steps.ckpt_every = o.ckpt_every;
    steps.ckpt_dir = o.ckpt_dir;
    steps.stop_after = o.stop_after;
  }
  steps.rank = rank;
  MPI_Barrier(MPI_COMM_WORLD);
  block.bind();
  const double startup = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (rank == 0) std::printf("start-up: %.3f s\n", startup);

  if (o.warmup > 0) {
    steps.advance(o.warmup);
    MPI_Barrier(MPI_COMM_WORLD);
    block.bind();
  }
  const double t0 = MPI_Wtime();
  const double lb_before = steps.lb_time, ckpt_before = steps.ckpt_time;
  const double comm = steps.advance(o.iters);
  if (steps.stopped) return 0;  // every rank stopped after the same checkpoint
  const double lb = steps.lb_time - lb_before;
  MPI_Barrier(MPI_COMM_WORLD);
  // Checkpoints are left out of the time per iteration (a restarted run's t0 is from the
  // first job: its time is not meaningful either way).
  const double total = MPI_Wtime() - t0 - (steps.ckpt_time - ckpt_before);
  block.bind();
  double comm_sum = 0, total_max = 0, lb_max = 0;
  MPI_Reduce(&comm, &comm_sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&lb, &lb_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&total, &total_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  block.bind();

  if (rank == 0) {
    const double per_iter = total_max / o.iters * 1e3;
    const double comm_per_iter = comm_sum / size / o.iters * 1e3;
    std::printf("iterations: %d (after %d warm-up)\n", o.iters, o.warmup);
    std::printf("time per iteration: %.4f ms\n", per_iter);
    std::printf("communication time per iteration: %.4f ms (halo wait, mean over blocks)\n", comm_per_iter);
    if (steps.steps > 0)
      std::printf("load balancing: %d steps, %.3f ms in the timed iterations (included above)\n", steps.steps,
                  lb_max * 1e3);
    std::fflush(stdout);
    if (!o.csv.empty()) {
      // The chare version's columns: mode, kernels, PEs, gx, gy, gz, blocks, iterations,
      // ms/iteration, comm ms/iteration, start-up s. The mode names the MPI; PEs are ranks.
      if (FILE* f = std::fopen(o.csv.c_str(), "a")) {
        std::fprintf(f, "%s-%s,%s,%d,%d,%d,%d,%d,%d,%.5f,%.5f,%.4f\n", mpi_name(), mode_name(o.mode),
                     gpu ? "cuda" : "cpu", size, d->gx, d->gy, d->gz, size, o.iters, per_iter, comm_per_iter, startup);
        std::fclose(f);
      } else {
        std::fprintf(stderr, "jacobi3d_mpi: cannot open %s for appending\n", o.csv.c_str());
      }
    }
  }

  print_checksum(block, rank, size);
  print_placement(first_pe, rank, size);
  block.bind();
  if (rank == 0) std::fflush(stdout);

  int status = 0;
  if (o.verify) {
    const long wrong = verify(block, *d, o.warmup + o.iters, rank, size);
    const long cells = static_cast<long>(d->gx) * d->gy * d->gz;
    if (rank == 0) {
      if (wrong) std::printf("verify: FAILED, %ld of %ld cells differ from the serial reference\n", wrong, cells);
      else std::printf("verify: ok, all %ld cells equal the serial reference after %d iterations\n", cells, o.warmup + o.iters);
      std::fflush(stdout);
    }
    status = wrong ? 1 : 0;
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  const auto started = std::chrono::steady_clock::now();
  MPI_Init(&argc, &argv);
  const int status = run_main(argc, argv, started);  // the block is gone before MPI_Finalize
  MPI_Finalize();
  return status;
}
