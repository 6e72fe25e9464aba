// Jacobi3D --mode device: halos written by the stencil kernel itself into the neighbours'
// ghost buffers, with notification, over one ck::CkDeviceWindow per face (CUDA kernels,
// PEs on one host). Per iteration the host only enqueues, on the block's stream:
//   interior kernel           reads only own cells: overlaps the neighbours' work
//   wait_on_stream per face   the neighbour's flag >= this iteration's round: a stream
//                             memory wait, which occupies no SM, so no kernel ever spins
//                             for a kernel that cannot be scheduled
//   shell kernel              the boundary cells, reading ghosts from this side's buffers;
//                             each new boundary layer goes straight into the neighbour's
//                             buffer, and the grid's last CUDA block signals the round
// Ghost buffers are double-buffered by iteration parity: iteration it reads half it % 2
// and writes the neighbours' half (it + 1) % 2; a neighbour writes a half only after this
// side's signal that its reads of that half (two iterations earlier) are done, so a fast
// neighbour never overwrites halos still being read. Flag values and the enqueue order:
// device_cells.h and device_schedule.h.
#pragma once

#include <ucharm/charm.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "buffer.h"
#include "device_kernels.h"
#include "device_schedule.h"
#include "grid.h"

namespace jacobi {

// Why --mode device cannot run here ("" when it can): it needs CUDA kernels, every PE on
// one host (device windows are CUDA IPC mappings), and no migration (--lb-period).
std::string device_mode_refusal(bool cuda_kernels, int lb_period, int num_pes);

// A block's grids as the device mode uses them (owned by the block).
struct DeviceGrids {
  Shape shape;
  double* u[2] = {nullptr, nullptr};  // u[it % 2] is read in iteration it
  Box interior;
  std::array<Box, kFaces> shell{};
  int reps = 1;                       // interior updates per iteration (--imbalance)
  void* stream = nullptr;
};

// One block's device-mode state: ghost buffers, windows, schedule. Opened at iteration
// `base` (0, or where a restart resumes): its first step primes the neighbours with the
// layers of u[base % 2].
class DeviceHalo {
 public:
  DeviceHalo(const DeviceGrids& g, const std::array<bool, kFaces>& nb, long base, const ck::CollectionRef& array,
             const ck::Index& self, const std::array<ck::Index, kFaces>& peers);
  ~DeviceHalo();
  DeviceHalo(const DeviceHalo&) = delete;
  DeviceHalo& operator=(const DeviceHalo&) = delete;

  // Enqueues iterations up to `target` (exclusive) as the PE's pump allows; `done` is sent
  // once the GPU has finished them all.
  void run(long target, const ck::CkCallback& done);

  // For the PE's pump (device_mode.cpp).
  long step() const { return sched_.next; }
  bool may_enqueue() const { return sched_.may_enqueue(ready(), finished()); }
  void enqueue();
  bool check_done();  // sends `done` if the run has finished; true then
  bool busy() const { return !sched_.primed() || reporting_; }

 private:
  bool ready() const;
  long finished() const;  // iterations the GPU has completed (the progress word)

  DeviceGrids g_;
  std::array<bool, kFaces> nb_{};
  devmode::Schedule sched_;
  Buffer ghost_[kFaces];                    // 2 halves of face_count doubles per face
  std::array<ck::CkDeviceWindow, kFaces> win_;
  devmode::Links links_;
  bool linked_ = false;                     // links_ holds the mapped handles
  devmode::BoxList sends_, shell_;
  unsigned* counter_ = nullptr;
  unsigned long long* progress_ = nullptr;
  ck::CkCallback done_;
  bool reporting_ = false;                  // a run is on; `done` not sent yet
};

}  // namespace jacobi
