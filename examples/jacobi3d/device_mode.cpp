// Jacobi3D --mode device: the host side (see device_mode.h).
#include "device_mode.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "kernels.h"

namespace jacobi {
namespace {

// Iterations a block may run ahead of those the GPU has finished: enough that the GPU never
// waits for the host, few enough that a PE's CUDA queues stay short.
constexpr long kLookahead = 8;

// The PE's pump: enqueues its blocks' steps in iteration-major order (device_schedule.h)
// and reports finished runs. It runs as a Converse poller (between messages and when the
// PE is idle), registered while some block has work, so no entry method ever waits for the
// GPU: blocks sharing a PE (and its stream queues) all keep moving.
class Pump {
 public:
  void add(DeviceHalo* h) {
    members_.push_back(h);
    wake();
  }
  void remove(DeviceHalo* h) {
    members_.erase(std::remove(members_.begin(), members_.end(), h), members_.end());
    if (members_.empty() && poller_) {
      CmiRemovePoller(poller_);
      poller_ = 0;
    }
  }
  void wake() {
    if (!poller_) poller_ = CmiAddPoller(&Pump::poll, this);
  }

 private:
  static bool poll(void* ctx) {
    Pump& p = *static_cast<Pump*>(ctx);
    bool did = false;
    for (DeviceHalo* h : p.members_) did = h->check_done() || did;
    did = devmode::enqueue_in_order(p.members_) > 0 || did;
    if (std::none_of(p.members_.begin(), p.members_.end(), [](const DeviceHalo* h) { return h->busy(); })) {
      CmiRemovePoller(p.poller_);
      p.poller_ = 0;
    }
    return did;
  }

  std::vector<DeviceHalo*> members_;
  int poller_ = 0;
};

// One pump per PE (PEs are processes: one per PE).
Pump& pump() {
  static Pump p;
  return p;
}

}  // namespace

std::string device_mode_refusal(bool cuda_kernels, int lb_period, int num_pes) {
  if (!cuda_kernels)
    return "--mode device needs CUDA kernels (the stencil kernel writes the halos into the neighbours' GPU memory), "
           "but this run has CPU kernels (no GPU visible, --kernels cpu, or a build without CUDA); use --mode "
           "staging, gpumsg or channel";
  if (lb_period > 0)
    return "--lb-period with --mode device: blocks that migrate need --mode staging (a device window joins two "
           "blocks on the GPUs they started on)";
  // ucharmrun exports the number of PEs on this host (LOCAL_WORLD_SIZE).
  if (const char* local = std::getenv("LOCAL_WORLD_SIZE"); local && std::atoi(local) > 0 && std::atoi(local) < num_pes)
    return "--mode device needs every PE on one host (device windows map the neighbours' GPU memory with CUDA IPC), "
           "but this job's " + std::to_string(num_pes) + " PEs span hosts (" + local +
           " on this one); use --mode channel across hosts";
  return "";
}

DeviceHalo::DeviceHalo(const DeviceGrids& g, const std::array<bool, kFaces>& nb, long base,
                       const ck::CollectionRef& array, const ck::Index& self, const std::array<ck::Index, kFaces>& peers)
    : g_(g), nb_(nb), sched_(base, kLookahead) {
  std::array<Box, kFaces> sends{};
  for (int f = 0; f < kFaces; ++f) {
    if (!nb_[f]) continue;
    ghost_[f] = Buffer(2 * devmode::face_count(g_.shape, f), Buffer::Kind::Device, g_.stream);
    sends[f] = face_box(g_.shape, f, false);
  }
  sends_ = devmode::make_box_list(sends);
  shell_ = devmode::make_box_list(g_.shell);
  counter_ = devmode::alloc_counter(g_.stream);
  progress_ = devmode::alloc_progress(static_cast<unsigned long long>(base));
  // The zeros are in place before a neighbour can learn where the buffers are.
  cuda::synchronize(g_.stream);
  // Sub-id: the axis (two blocks share at most one face).
  for (int f = 0; f < kFaces; ++f)
    if (nb_[f])
      win_[f] = ck::CkDeviceWindow(array, self, array, peers[f], static_cast<std::uint32_t>(axis_of(f)),
                                   ghost_[f].data(), ghost_[f].bytes());
  pump().add(this);
}

DeviceHalo::~DeviceHalo() {
  pump().remove(this);
  for (ck::CkDeviceWindow& w : win_) w.close();
  devmode::free_counter(counter_);
  devmode::free_progress(progress_);
}

bool DeviceHalo::ready() const {
  for (int f = 0; f < kFaces; ++f)
    if (nb_[f] && !win_[f].ready()) return false;
  return true;
}

long DeviceHalo::finished() const {
  return static_cast<long>(std::atomic_ref<unsigned long long>(*progress_).load(std::memory_order_acquire));
}

void DeviceHalo::run(long target, const ck::CkCallback& done) {
  sched_.target = target;
  done_ = done;
  reporting_ = true;
  pump().wake();
}

bool DeviceHalo::check_done() {
  if (!reporting_ || finished() < sched_.target) return false;
  reporting_ = false;
  done_.send();
  return true;
}

void DeviceHalo::enqueue() {
  if (!linked_) {
    for (int f = 0; f < kFaces; ++f) {
      if (!nb_[f]) continue;
      if (win_[f].remote_bytes() != ghost_[f].bytes())
        CkAbort("jacobi3d --mode device: face %d's neighbour exposes %zu bytes, not %zu (blocks of unequal shape?)", f,
                win_[f].remote_bytes(), ghost_[f].bytes());
      links_.win[f] = win_[f].device_handle();
      links_.has[f] = 1;
    }
    linked_ = true;
  }
  const long base = sched_.base;
  if (!sched_.primed()) {
    devmode::launch_prime(g_.shape, g_.u[base % 2], sends_, links_, devmode::read_half(base), counter_, g_.stream);
  } else {
    const long it = sched_.next;
    const double* in = g_.u[it % 2];
    double* out = g_.u[(it + 1) % 2];
    for (int r = 0; r < g_.reps; ++r) cuda::update(g_.shape, in, out, g_.interior, g_.stream);
    for (int f = 0; f < kFaces; ++f)
      if (nb_[f]) win_[f].wait_on_stream(g_.stream, devmode::wait_round(it, base));
    devmode::launch_shell(g_.shape, in, out, shell_, links_, it, devmode::signal_round(it, base), counter_, progress_,
                          g_.stream);
  }
  ++sched_.next;
}

}  // namespace jacobi
