// Device-initiated windows: CkDeviceWindow (issue 19, part 3).
// Part of <ucharm/charm.h>, the header to include; kernels include <ucharm/device/window.cuh>.
#pragma once

#include <ucharm/charm/callback.h>
#include <ucharm/device/window.cuh>

#pragma GCC visibility push(default)

namespace ck {

namespace detail {
struct DeviceWindowEnd;  // device_window.cpp: one per open window end, at a stable address
}

// ---- Device windows ---------------------------------------------------------------------------
// Two chares on one host, each with a CUDA buffer, joined so that CUDA kernels write the
// peer's buffer and raise its flag themselves (ck::device::put/signal/wait in
// ucharm/device/window.cuh), or streams do (put_on_stream & co.), with no host step per
// transfer. Both ends construct the window with each other's proxy, the same sub-id, and
// their own buffer (from cudaMalloc; the window keeps no copy):
//   win = ck::CkDeviceWindow(thisProxy[thisIndex], thisProxy[peer], 0, d_buf, bytes,
//                            ck::CkCallback::to<&Block::mapped>(thisProxy[thisIndex]));
//   ... once mapped: kernel<<<...>>>(win.device_handle(), ...);
// One setup message each way exchanges the CUDA IPC handles of the buffers and of the
// flag words (allocated by the window); `on_ready` runs once the peer's are mapped here.
// Same process (both chares on one PE): the pointers are used directly.
//
// Where it works: PEs on one host whose GPUs can access each other (the same GPU, or
// peer-to-peer over NVLink/PCIe). Otherwise the window is refused with an error naming
// both PEs and why (another host; no peer access; the peer's GPU not visible here); use a
// CkChannel or the host-initiated one-sided window there. Two processes on one GPU work, but their
// kernels time-slice unless CUDA MPS runs: a kernel spinning in wait() holds the GPU for
// its time slice, so a ping-pong between them costs milliseconds per exchange.
// Two chares on one PE (one process) whose kernels wait for each other need their
// kernels loaded before the first runs: CUDA_MODULE_LOADING=EAGER (with lazy loading, a
// launch may wait for the running kernel, which waits for that launch).
//
// Lifetime: close() (or the destructor) unmaps the peer's memory and frees this end's
// flag words. Close only when no kernel or stream operation of either side still uses the
// window (e.g. after a reduction that follows the last kernel); a handle kept in a kernel
// after that is not detected. Host calls on a closed window stop the program naming it.
class CkDeviceWindow {
 public:
  CkDeviceWindow() = default;
  template <class A, class B>
  CkDeviceWindow(const ElementProxy<A>& self, const ElementProxy<B>& peer, std::uint32_t sub_id, void* buffer,
                 std::size_t bytes, const CkCallback& on_ready = CkCallback())
      : CkDeviceWindow(self.ref(), self.index(), peer.ref(), peer.index(), sub_id, buffer, bytes, on_ready) {}
  // The same from collection references and indices.
  CkDeviceWindow(const CollectionRef& self, const Index& self_idx, const CollectionRef& peer, const Index& peer_idx,
                 std::uint32_t sub_id, void* buffer, std::size_t bytes, const CkCallback& on_ready = CkCallback());
  CkDeviceWindow(const CkDeviceWindow&) = delete;
  CkDeviceWindow& operator=(const CkDeviceWindow&) = delete;
  CkDeviceWindow(CkDeviceWindow&& o) noexcept : end_(o.end_) { o.end_ = nullptr; }
  CkDeviceWindow& operator=(CkDeviceWindow&& o) noexcept;
  ~CkDeviceWindow() { close(); }
  void close() noexcept;

  bool is_open() const { return end_ != nullptr; }
  bool ready() const;          // the peer's buffer and flag are mapped here
  bool same_process() const;   // the peer end lives in this process (pointers used as they are)
  std::size_t local_bytes() const;
  std::size_t remote_bytes() const;  // the peer's buffer (0 until ready)

  // For kernels (by value). Stops the program if the window is closed or not ready yet.
  DeviceWindowHandle device_handle() const;

  // Stream-ordered forms (the host never waits): enqueued on `stream` (a cudaStream_t of
  // this side's GPU), after the work queued there before. put_on_stream copies `bytes`
  // from `src` (device memory) to the peer's buffer at `dst_offset`; signal_on_stream
  // raises the peer's flag to `value` once the stream's earlier work (puts included) is
  // visible; wait_on_stream holds the stream's later work until the local flag is >=
  // `value`. Same flags, same meaning as the kernel-side signal/wait.
  void put_on_stream(void* stream, std::size_t dst_offset, const void* src, std::size_t bytes);
  void signal_on_stream(void* stream, std::uint64_t value);
  void wait_on_stream(void* stream, std::uint64_t value);

 private:
  detail::DeviceWindowEnd* end_ = nullptr;
};

}  // namespace ck

#pragma GCC visibility pop
