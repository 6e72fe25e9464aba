// Jacobi3D proxy application (the paper's section 4.3): a 7-point Jacobi stencil on a 3-D
// grid of doubles, split into equal cuboid blocks of a 3-D chare array (more blocks than
// PEs overdecomposes). Every iteration each block exchanges halos with up to six
// neighbours in one of three modes:
//   staging  pack on the GPU, copy to host, host message, copy to the GPU, unpack
//   gpumsg   GPU Messaging API: CkDeviceBuffer argument, post entry names the buffer
//   channel  Channel API: one CkChannel per neighbour, opened once
//   device   the shell kernel writes the halos into the neighbours' GPU buffers itself and
//            signals them (device windows; device_mode.h); the host only enqueues
// Kernels run on the GPU when one is visible (CUDA build), else on the CPU with host
// buffers; the modes then differ only in the path the data takes.
//   ucharmrun -n 2 jacobi3d --grid 128 --blocks 8 --iters 100 --mode channel [--verify]
// Load balancing: --imbalance K makes the first --heavy fraction of the blocks (by linear
// index, so the block map puts them on the first PEs) run their kernels K times per
// iteration (the update is idempotent: same result); --lb-period N makes every block call
// AtSync after each N-th iteration, where the balancer (+balancer NAME) may migrate it.
// Checkpoints: --checkpoint-every K runs the iterations in chunks of K; after each chunk's
// reduction the main chare writes a checkpoint (--checkpoint-dir) and resumes in its
// callback. A run started with +restart DIR continues from there (any PE count); the final
// "checksum:" line is the same bits whether the run was interrupted or not.
#include <ucharm/charm.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <time.h>
#include <vector>

#include "buffer.h"
#include "device_mode.h"
#include "grid.h"
#include "kernels.h"

namespace {

using namespace jacobi;

enum class Mode : int { Staging = 0, GpuMsg = 1, Channel = 2, Device = 3 };
constexpr std::array<const char*, 4> kModeNames{"staging", "gpumsg", "channel", "device"};
const char* mode_name(Mode m) { return kModeNames[static_cast<std::size_t>(m)]; }

struct Config {
  Decomposition d;
  int iters = 100, warmup = 10;
  Mode mode = Mode::Channel;
  bool gpu = false, verify = false;
  int imbalance = 1;   // heavy blocks run their kernels this many times per iteration
  int heavy = 0;       // blocks with linear index below this are heavy
  int lb_period = 0;   // AtSync after every lb_period-th iteration (0: never)
  void pup(PUP::er& p) {
    p | d.gx; p | d.gy; p | d.gz; p | d.bx; p | d.by; p | d.bz;
    p | iters; p | warmup; p | mode; p | gpu; p | verify;
    p | imbalance; p | heavy; p | lb_period;
  }
};

// This thread's CPU seconds: a block's kernel work, whatever share of a core its PE gets.
double thread_cpu() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;
ck::readonly<Config> cfg;
// The main chare's reduction targets (defined after Main).
ck::CkCallback on_ready();
ck::CkCallback on_run_done();
ck::CkCallback on_verified();
ck::CkCallback on_checksum();

// A cell's share of the checksum: its global position and exact bits, mixed (splitmix64).
std::uint64_t cell_hash(std::uint64_t position, double v) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  std::uint64_t x = bits ^ (position * 0x9E3779B97F4A7C15ull);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

struct Block : ck::ArrayElement<Block, 3> {
  static constexpr auto post_entries() { return ck::post_list<ck::post<&Block::halo_dev, &Block::halo_dev_post>>{}; }
  // Halo messages wait for the iteration loop's co_await ck::next<&Block::halo_host>(it) (their
  // first argument, the iteration, is the reference number); see iterate().
  static constexpr auto awaited_entries() { return ck::entries<&Block::halo_host, &Block::halo_dev>; }

  Shape shape;
  bool gpu = false;
  void* stream = nullptr;
  Buffer u[2];                         // u[it % 2] is read in iteration it, u[(it + 1) % 2] written
  std::array<bool, kFaces> nb{};       // a neighbour across this face
  int neighbours = 0;
  std::array<Box, kFaces> send_box{}, ghost_box{};
  std::array<std::size_t, kFaces> face_n{};
  // Halo buffers by iteration parity: a neighbour can be one iteration ahead.
  Buffer send_buf[2][kFaces], recv_buf[2][kFaces];
  Buffer stage[kFaces];                // staging: pinned host copies of the packed faces
  std::array<ck::CkChannel, kFaces> ch;
  std::array<ck::ResumeCallback<std::size_t>, kFaces> chan_recv;  // this iteration's channel receives
  Box interior;
  std::array<Box, kFaces> shell{};
  int cur = 0, target = 0;
  double comm = 0, kernel_cpu = 0;
  int reps = 1;                        // kernel repetitions per iteration (--imbalance)
  std::unique_ptr<DeviceHalo> dev;     // --mode device

  Block() {
    setup();
    init_boundary();
    // The zeroing of the halo buffers is done before a neighbour's transfer (not ordered
    // with this stream) can write into them.
    if (gpu) cuda::synchronize(stream);
    contribute(on_ready());
  }
  // Migration: the state arrives through pup(), which calls setup() first.
  explicit Block(CkMigrateMessage*) {}
  ~Block() {
    if (stream) cuda::stream_destroy(stream);
  }

  // What travels when a block migrates (only at AtSync, when no halo is in flight: the halo
  // and staging buffers hold nothing that matters and are re-created). Device grids are
  // copied through host memory both ways; the new PE gets its own stream and GPU buffers.
  void pup(PUP::er& p) override {
    p | cur; p | target; p | comm; p | kernel_cpu;
    if (p.isUnpacking()) {
      setup();
      if (gpu) cuda::synchronize(stream);
    }
    for (Buffer& b : u) {
      if (!gpu) {
        PUParray(p, b.data(), b.count());
        continue;
      }
      std::vector<double> h(b.count());
      if (p.isPacking()) {
        cuda::copy_to_host(h.data(), b.data(), b.bytes(), stream);
        cuda::synchronize(stream);
      }
      PUParray(p, h.data(), h.size());
      if (p.isUnpacking()) put(b, h.data(), b.bytes());
    }
  }

  // Geometry, buffers and channels from the configuration and the index (both constructors).
  void setup() {
    const Config& c = *cfg;
    shape = c.d.block();
    gpu = c.gpu;
    usesAtSync = c.lb_period > 0;
    const long lin = (static_cast<long>(thisIndex[0]) * c.d.by + thisIndex[1]) * c.d.bz + thisIndex[2];
    reps = lin < c.heavy ? c.imbalance : 1;
    if (gpu) {
      cuda::select_device(CkMyPe());
      stream = cuda::stream_create();
    }
    const Buffer::Kind dev = gpu ? Buffer::Kind::Device : Buffer::Kind::Host;
    for (Buffer& b : u) b = Buffer(shape.cells(), dev, stream);
    const std::array<int, 3> dims{c.d.bx, c.d.by, c.d.bz};
    for (int f = 0; f < kFaces; ++f) {
      const int a = axis_of(f), step = f % 2 ? 1 : -1;
      const int n = thisIndex[a] + step;
      nb[f] = n >= 0 && n < dims[a];
      if (!nb[f]) continue;
      ++neighbours;
      send_box[f] = face_box(shape, f, false);
      ghost_box[f] = face_box(shape, f, true);
      face_n[f] = send_box[f].count();
      for (int p = 0; p < 2; ++p) {
        send_buf[p][f] = Buffer(face_n[f], dev, stream);
        recv_buf[p][f] = Buffer(face_n[f], dev, stream);
      }
      if (gpu && c.mode == Mode::Staging) stage[f] = Buffer(face_n[f], Buffer::Kind::Pinned);
      if (c.mode == Mode::Channel) ch[f] = ck::CkChannel(self(), neighbour(f));
    }
    interior = interior_box(shape);
    shell = boundary_boxes(shape);
    if (c.mode == Mode::Device) {
      std::array<ck::Index, kFaces> peers{};
      for (int f = 0; f < kFaces; ++f) peers[f] = nb[f] ? neighbour(f).index() : ck::Index{};
      this->dev = std::make_unique<DeviceHalo>(
          DeviceGrids{shape, {u[0].data(), u[1].data()}, interior, shell, reps, stream}, nb, cur, thisProxy.ref(),
          self().index(), peers);
    }
  }

  ck::ElementProxy<Block> self() const { return thisProxy(thisIndex[0], thisIndex[1], thisIndex[2]); }
  ck::ElementProxy<Block> neighbour(int f) const {
    std::array<int, 3> i = thisIndex;
    i[axis_of(f)] += f % 2 ? 1 : -1;
    return thisProxy(i[0], i[1], i[2]);
  }

  // Ghost cells on the global boundary hold the fixed values, in both arrays, forever.
  void init_boundary() {
    const Decomposition& d = cfg->d;
    const std::vector<double> h = boundary_block(shape, thisIndex[0] * shape.lx, thisIndex[1] * shape.ly,
                                                 thisIndex[2] * shape.lz, d.gx, d.gy, d.gz);
    for (Buffer& b : u) put(b, h.data(), h.size() * sizeof(double));
  }
  void put(Buffer& b, const void* src, std::size_t bytes) {
    if (gpu) {
      cuda::copy_to_device(b.data(), src, bytes, stream);
      cuda::synchronize(stream);
    } else {
      std::memcpy(b.data(), src, bytes);
    }
  }

  // ---- kernels on the GPU or the CPU ----
  // A heavy block repeats the update: real work, and the same output (it reads only `in`).
  void update(const Box& b) {
    const double* in = u[cur % 2].data();
    double* out = u[(cur + 1) % 2].data();
    const double t = gpu ? 0 : thread_cpu();
    for (int r = 0; r < reps; ++r) {
      if (gpu) cuda::update(shape, in, out, b, stream);
      else cpu::update(shape, in, out, b);
    }
    if (!gpu) kernel_cpu += thread_cpu() - t;
  }
  void pack(int f, double* buf) {
    if (gpu) cuda::pack(shape, u[cur % 2].data(), send_box[f], buf, stream);
    else cpu::pack(shape, u[cur % 2].data(), send_box[f], buf);
  }
  void unpack(int it, int f, const double* buf) {
    if (gpu) cuda::unpack(shape, u[it % 2].data(), ghost_box[f], buf, stream);
    else cpu::unpack(shape, u[it % 2].data(), ghost_box[f], buf);
  }

  // ---- iterations ----
  // Runs `n` more iterations, then reports to the main chare.
  void run(int n) {
    target = cur + n;
    if (dev) return dev->run(target, ck::CkCallback::to<&Block::device_done>(self()));
    iterate();
  }
  void device_done() { cur = target, finish_run(); }  // --mode device: the GPU is at `target`

  // The iterations up to `target` as one loop: each waits for its halos in co_await, its
  // frame is all the state between arrivals. It ends at a load-balancing sync (a block with
  // a suspended coroutine cannot migrate; no halo is in flight there) and ResumeFromSync
  // starts a new one.
  ck::task<> iterate() {
    while (cur < target) {
      begin_iteration();
      const double wait_start = CkWallTimer();
      const Mode mode = cfg->mode;
      const int it = cur, p = cur % 2;
      if (mode == Mode::Channel) {
        for (int f = 0; f < kFaces; ++f) {
          if (!nb[f]) continue;
          co_await chan_recv[f];
          unpack(it, f, recv_buf[p][f].data());
        }
      } else {  // a neighbour may be one iteration ahead: its next halos wait, kept by iteration
        for (int k = 0; k < neighbours; ++k) {
          if (mode == Mode::Staging) co_await ck::next<&Block::halo_host>(it);
          else co_await ck::next<&Block::halo_dev>(it);
        }
      }
      comm += CkWallTimer() - wait_start;
      end_iteration();
      if (sync_due()) {
        AtSync();  // ResumeFromSync goes on
        co_return;
      }
    }
    finish_run();
  }

  // Balance after every lb_period-th iteration, except after the last one.
  bool sync_due() const {
    const int p = cfg->lb_period;
    return p > 0 && cur % p == 0 && cur < cfg->warmup + cfg->iters;
  }
  void ResumeFromSync() override { iterate(); }

  void begin_iteration() {
    const int p = cur % 2;
    const Mode mode = cfg->mode;
    // Receive buffers of parity p were last read by the unpacks of iteration cur - 2,
    // which precede (on the stream) the packs whose data the neighbour needed before it
    // could send this iteration's halos: so the receives need no stream ordering.
    if (mode == Mode::Channel)
      for (int f = 0; f < kFaces; ++f)
        if (nb[f]) chan_recv[f] = ck::recv(ch[f], recv_buf[p][f].data(), recv_buf[p][f].bytes());
    for (int f = 0; f < kFaces; ++f)
      if (nb[f]) pack(f, send_buf[p][f].data());
    if (mode == Mode::Staging) send_staged(p);
    for (int f = 0; f < kFaces && mode != Mode::Staging; ++f) {
      if (!nb[f]) continue;
      // The send names the stream: the data leaves once the pack kernel has run.
      if (mode == Mode::GpuMsg)
        neighbour(f).send<&Block::halo_dev>(cur, opposite(f), ck::CkDeviceBuffer(send_buf[p][f].data(), send_buf[p][f].bytes(), stream));
      else
        ch[f].send(send_buf[p][f].data(), send_buf[p][f].bytes(), ck::CkCallback::ignore(), stream);
    }
    update(interior);  // overlaps with the halo exchange
  }

  void send_staged(int p) {
    for (int f = 0; f < kFaces; ++f)
      if (nb[f] && gpu) cuda::copy_to_host(stage[f].data(), send_buf[p][f].data(), send_buf[p][f].bytes(), stream);
    if (gpu) cuda::synchronize(stream);
    for (int f = 0; f < kFaces; ++f) {
      if (!nb[f]) continue;
      const double* h = gpu ? stage[f].data() : send_buf[p][f].data();
      neighbour(f).send<&Block::halo_host>(cur, opposite(f), std::span<const double>(h, face_n[f]));
    }
  }

  void end_iteration() {
    for (const Box& b : shell) update(b);
    ++cur;
  }

  void finish_run() {
    if (gpu) cuda::synchronize(stream);
    const std::vector<double> v{comm, kernel_cpu};
    comm = kernel_cpu = 0;
    contribute(v, ck::Reducer::sum, on_run_done());
  }

  // ---- halo arrivals (awaited entries: their bodies run inside iterate()'s co_await) ----
  void halo_host(int it, int f, std::span<const double> data) {
    if (gpu) {  // staging: host to GPU, then unpack there
      double* d = recv_buf[it % 2][f].data();
      cuda::copy_to_device(d, data.data(), data.size_bytes(), stream);
      cuda::synchronize(stream);  // the message buffer goes when this body returns
      unpack(it, f, d);
    } else {
      unpack(it, f, data.data());
    }
  }
  void halo_dev_post(int it, int f, ck::CkDeviceBuffer& b) { b.ptr = recv_buf[it % 2][f].data(); }
  void halo_dev(int it, int f, ck::CkDeviceBuffer b) { unpack(it, f, static_cast<const double*>(b.ptr)); }

  // ---- result ----
  std::vector<double> grid_on_host() {
    std::vector<double> h(shape.cells());
    if (gpu) {
      cuda::copy_to_host(h.data(), u[cur % 2].data(), u[cur % 2].bytes(), stream);
      cuda::synchronize(stream);
    } else {
      std::memcpy(h.data(), u[cur % 2].data(), u[cur % 2].bytes());
    }
    return h;
  }
  // Calls f(value, global linear index) for each interior cell of the current grid.
  template <class F>
  void for_cells(const std::vector<double>& h, F&& f) const {
    const Decomposition& d = cfg->d;
    const Shape g{d.gx, d.gy, d.gz};
    const int ox = thisIndex[0] * shape.lx, oy = thisIndex[1] * shape.ly, oz = thisIndex[2] * shape.lz;
    for (int k = 1; k <= shape.lz; ++k)
      for (int j = 1; j <= shape.ly; ++j)
        for (int i = 1; i <= shape.lx; ++i) f(h[shape.at(i, j, k)], g.at(ox + i, oy + j, oz + k));
  }

  // The checksum is the 64-bit wrapping sum of per-cell hashes, so neither the block
  // placement nor the reduction order changes it; each block's sum travels as two 32-bit
  // halves, summed exactly in longs (fewer than 2^31 blocks) by the reduction.
  void checksum() {
    std::uint64_t sum = 0;
    for_cells(grid_on_host(), [&](double v, std::size_t at) { sum += cell_hash(at, v); });
    const std::vector<long> lanes{static_cast<long>(sum & 0xFFFFFFFFu), static_cast<long>(sum >> 32)};
    contribute(lanes, ck::Reducer::sum, on_checksum());
  }

  void verify() {
    const Decomposition& d = cfg->d;
    static std::vector<double> ref;  // one serial run per PE, shared by its blocks
    static int ref_iters = -1;
    if (ref_iters != cur) {
      ref = serial_reference(d.gx, d.gy, d.gz, cur);
      ref_iters = cur;
    }
    long wrong = 0;
    for_cells(grid_on_host(), [&](double v, std::size_t at) { wrong += v != ref[at]; });
    contribute(wrong, ck::Reducer::sum, on_verified());
  }
};

struct Main : ck::MainChare<Main> {
  ck::ArrayProxy<Block> blocks;
  Config c;
  int blocks_total = 0;
  std::string csv;
  // Checkpoints (0: none); the run stops after the checkpoint at stop_after (-1: never).
  int every = 0, stop_after = -1;
  std::string ckpt_dir = "jacobi3d.ckpt";
  // Progress: iterations done by every block, and the end of the chunk running now.
  int done = 0, running_to = 0;
  // Timing (reset at a restart): from iteration timed_from, without the checkpoints' time.
  bool timing = false, resumed = false;
  int timed_from = 0, checkpoints = 0;
  double t0 = 0, startup = 0, ck_start = 0, ck_time = 0, ck_timed = 0;
  double sum_comm = 0, sum_kernel = 0;

  explicit Main(ck::MainArgs args) {
    CLI::App app{"Jacobi3D: 7-point stencil on a 3-D grid of chare-array blocks"};
    int grid = 0, gx = 64, gy = 64, gz = 64;
    double heavy_fraction = 0.25;
    std::string mode = "channel", kernels = "auto";
    blocks_total = CkNumPes();
    app.add_option("--grid", grid, "cells per dimension of a cubic grid (overrides -x/-y/-z)")->check(CLI::PositiveNumber);
    app.add_option("-x", gx, "grid cells in x")->check(CLI::PositiveNumber);
    app.add_option("-y", gy, "grid cells in y")->check(CLI::PositiveNumber);
    app.add_option("-z", gz, "grid cells in z")->check(CLI::PositiveNumber);
    app.add_option("--blocks", blocks_total, "number of blocks (default: one per PE)")->check(CLI::PositiveNumber);
    app.add_option("--iters", c.iters, "timed iterations")->check(CLI::PositiveNumber);
    app.add_option("--warmup", c.warmup, "untimed iterations first")->check(CLI::NonNegativeNumber);
    app.add_option("--mode", mode, "halo exchange: staging, gpumsg, channel or device (CUDA kernels only)")
        ->check(CLI::IsMember({"staging", "gpumsg", "channel", "device"}));
    app.add_option("--kernels", kernels, "auto (GPU if visible), cuda or cpu")->check(CLI::IsMember({"auto", "cuda", "cpu"}));
    app.add_option("--imbalance", c.imbalance, "heavy blocks run their kernels K times per iteration")
        ->check(CLI::PositiveNumber);
    app.add_option("--heavy", heavy_fraction, "fraction of the blocks (the first by index) that are heavy")
        ->check(CLI::Range(0.0, 1.0));
    app.add_option("--lb-period", c.lb_period, "blocks call AtSync after every N-th iteration (0: never)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--checkpoint-every", every, "write a checkpoint after every K-th iteration (0: never)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--checkpoint-dir", ckpt_dir, "where checkpoints go (restart with +restart DIR)");
    app.add_option("--stop-after-checkpoint", stop_after, "end the run (exit 0) after the checkpoint at iteration S")
        ->check(CLI::PositiveNumber);
    app.add_flag("--verify", c.verify, "compare with a serial run, bit for bit (small grids)");
    app.add_option("--csv", csv, "append one result line to this CSV file");
    try {
      app.parse(args.argc, args.argv);
    } catch (const CLI::ParseError& e) {
      std::exit(app.exit(e));
    }
    if (grid) gx = gy = gz = grid;
    std::string why;
    auto d = decompose(gx, gy, gz, blocks_total, why);
    if (!d) CkAbort("jacobi3d: %s", why.c_str());
    c.d = *d;
    for (std::size_t m = 0; m < kModeNames.size(); ++m)
      if (mode == kModeNames[m]) c.mode = static_cast<Mode>(m);
    // Channels do not follow a migrating element, and a CkDeviceBuffer sent to an element
    // that has moved waits forever on the PE it was sent to (the core forwards only the
    // host message): only staging's host messages follow a migrated block.
    if (c.lb_period > 0 && c.mode != Mode::Staging)
      CkAbort("jacobi3d: --lb-period with --mode %s: blocks that migrate need --mode staging (channels do not "
              "follow a migrated block, and GPU Messaging sends to a moved block are not forwarded yet)",
              mode_name(c.mode));
    const int total = c.warmup + c.iters;
    if (stop_after > 0 && (every == 0 || stop_after % every != 0 || stop_after >= total))
      CkAbort("jacobi3d: --stop-after-checkpoint %d: no checkpoint is written at iteration %d (checkpoints come "
              "after every --checkpoint-every K-th iteration, before the last one, %d)",
              stop_after, stop_after, total);
    if (every > 0 && ckpt_dir.empty()) CkAbort("jacobi3d: --checkpoint-dir is empty");
    c.heavy = c.imbalance > 1 ? static_cast<int>(std::ceil(heavy_fraction * blocks_total)) : 0;
    const bool have_gpu = cuda::available();
    if (kernels == "cuda" && !have_gpu) CkAbort("jacobi3d: --kernels cuda, but no GPU is visible (or a build without CUDA)");
    c.gpu = kernels == "cuda" || (kernels == "auto" && have_gpu);
    if (c.mode == Mode::Device)
      if (const std::string no = device_mode_refusal(c.gpu, c.lb_period, CkNumPes()); !no.empty())
        CkAbort("jacobi3d: %s", no.c_str());
    cfg = c;
    mainProxy = thisProxy;
    const Shape s = d->block();
    CkPrintf("Jacobi3D: grid %dx%dx%d, %d blocks (%dx%dx%d) of %dx%dx%d, %d PEs, mode %s, %s kernels\n", c.d.gx, c.d.gy,
             c.d.gz, blocks_total, c.d.bx, c.d.by, c.d.bz, s.lx, s.ly, s.lz, CkNumPes(), mode_name(c.mode),
             c.gpu ? "CUDA" : "CPU");
    if (c.heavy > 0)
      CkPrintf("imbalance: blocks 0-%d (by linear index) of %d run their kernels %d times per iteration\n",
               c.heavy - 1, blocks_total, c.imbalance);
    if (c.lb_period > 0) CkPrintf("load balancing: AtSync after every %d iterations\n", c.lb_period);
    if (every > 0) CkPrintf("checkpoints: after every %d iterations, to %s\n", every, ckpt_dir.c_str());
    blocks = ck::ArrayProxy<Block>::create(ck::dims(c.d.bx, c.d.by, c.d.bz), ck::Map::block);
  }
  // +restart: rebuilt from the checkpoint; resume() (the restarted callback) goes on.
  explicit Main(CkMigrateMessage*) {}
  void pup(PUP::er& p) override {
    p | blocks; p | c; p | blocks_total; p | csv; p | every; p | stop_after; p | ckpt_dir;
    p | done; p | checkpoints; p | ck_time;
  }

  void ready() {
    startup = CkWallTimer();
    CkPrintf("start-up: %.3f s\n", startup);
    next_chunk();
  }

  // Runs the blocks to the next stop: the end of the warm-up, a checkpoint, or the end.
  void next_chunk() {
    const int total = c.warmup + c.iters;
    if (done >= c.warmup && !timing) {
      timing = true;
      timed_from = done;
      t0 = CkWallTimer();
      ck_timed = sum_comm = sum_kernel = 0;
    }
    if (done == total) return finish();
    int end = done < c.warmup ? c.warmup : total;
    if (every > 0) end = std::min(end, (done / every + 1) * every);
    running_to = end;
    blocks.send<&Block::run>(end - done);
  }

  // sums over blocks: {halo wait, kernel CPU time} in seconds
  void run_done(std::vector<double> sums) {
    done = running_to;
    sum_comm += sums[0];
    sum_kernel += sums[1];
    if (every > 0 && done % every == 0 && done < c.warmup + c.iters) {
      ck_start = CkWallTimer();
      ck::CkStartCheckpoint(ckpt_dir.c_str(), ck::CkCallback::to<&Main::resume>(thisProxy));
      return;
    }
    next_chunk();
  }

  // After each checkpoint, and once after a restart (the same callback).
  void resume() {
    const ck::RestartInfo& r = ck::restart_info();
    if (r.restarted && !resumed) {
      resumed = true;
      CkPrintf("restarted from %s at iteration %d (checkpoint of %d PEs, now %d)\n", r.dir.c_str(), done,
               r.old_num_pes, CkNumPes());
      return next_chunk();
    }
    const double dt = CkWallTimer() - ck_start;
    ++checkpoints;
    ck_time += dt;
    if (timing) ck_timed += dt;
    const double mib = 2.0 * sizeof(double) * static_cast<double>(c.d.block().cells()) * blocks_total / (1 << 20);
    CkPrintf("checkpoint at iteration %d: %.3f s (%.1f MiB of grids)\n", done, dt, mib);
    if (done == stop_after) {
      CkPrintf("stopped after the checkpoint at iteration %d (continue with +restart %s)\n", done, ckpt_dir.c_str());
      return CkExit(0);
    }
    next_chunk();
  }

  void finish() {
    const int timed = done - timed_from;
    const double per_iter = (CkWallTimer() - t0 - ck_timed) / timed * 1e3;
    const double comm_per_iter = sum_comm / blocks_total / timed * 1e3;
    if (timed_from == c.warmup) CkPrintf("iterations: %d (after %d warm-up)\n", c.iters, c.warmup);
    else CkPrintf("iterations: %d (after %d warm-up), %d timed since the restart\n", c.iters, c.warmup, timed);
    CkPrintf("time per iteration: %.4f ms%s\n", per_iter, checkpoints ? " (checkpoints excluded)" : "");
    CkPrintf("communication time per iteration: %.4f ms (halo wait, mean over blocks)\n", comm_per_iter);
    // Total work: the blocks' kernel CPU time (not inflated when PEs share a core).
    if (!c.gpu)
      CkPrintf("kernel CPU time per iteration: %.4f ms summed over blocks, %.4f ms per PE if spread evenly\n",
               sum_kernel / timed * 1e3, sum_kernel / timed * 1e3 / CkNumPes());
    if (checkpoints) CkPrintf("checkpoints: %d, %.3f s in all\n", checkpoints, ck_time);
    if (!csv.empty()) {
      FILE* f = std::fopen(csv.c_str(), "a");
      if (!f) CkAbort("jacobi3d: cannot open %s for appending", csv.c_str());
      std::fprintf(f, "%s,%s,%d,%d,%d,%d,%d,%d,%.5f,%.5f,%.4f\n", mode_name(c.mode), c.gpu ? "cuda" : "cpu", CkNumPes(),
                   c.d.gx, c.d.gy, c.d.gz, blocks_total, c.iters, per_iter, comm_per_iter, startup);
      std::fclose(f);
    }
    blocks.send<&Block::checksum>();
  }

  // lanes: the sums of the blocks' checksums' low and high 32-bit halves
  void checksum_done(std::vector<long> lanes) {
    const auto sum = static_cast<std::uint64_t>(lanes[0]) + (static_cast<std::uint64_t>(lanes[1]) << 32);
    CkPrintf("checksum: %016llx (%ld cells after %d iterations)\n", static_cast<unsigned long long>(sum),
             static_cast<long>(c.d.gx) * c.d.gy * c.d.gz, done);
    if (c.verify) blocks.send<&Block::verify>();
    else CkExit(0);
  }

  void verified(long wrong) {
    if (wrong) {
      CkPrintf("verify: FAILED, %ld of %ld cells differ from the serial reference\n", wrong,
               static_cast<long>(c.d.gx) * c.d.gy * c.d.gz);
      CkExit(1);
    }
    CkPrintf("verify: ok, all %ld cells equal the serial reference after %d iterations\n",
             static_cast<long>(c.d.gx) * c.d.gy * c.d.gz, c.warmup + c.iters);
    CkExit(0);
  }
};

ck::CkCallback on_ready() { return ck::CkCallback::to<&Main::ready>(*mainProxy); }
ck::CkCallback on_run_done() { return ck::CkCallback::to<&Main::run_done>(*mainProxy); }
ck::CkCallback on_verified() { return ck::CkCallback::to<&Main::verified>(*mainProxy); }
ck::CkCallback on_checksum() { return ck::CkCallback::to<&Main::checksum_done>(*mainProxy); }

}  // namespace

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
