// Device-initiated windows: what a CUDA kernel calls on a ck::CkDeviceWindow (issue 19,
// part 3). Header-only; include it from any nvcc-compiled file (C++11 or later, no other
// ucharm header needed). Plain C++ compilers see only the handle type.
//
// A window joins two chares on one host. Each side exposes a cudaMalloc'd buffer; the
// peer's buffer and a 64-bit flag word per direction are mapped into this process (CUDA
// IPC), so a kernel writes the peer's memory directly over NVLink/PCIe, with no host
// involvement. The host side (ucharm/charm/device_window.h) hands out the handle:
//
//   __global__ void halo(ck::DeviceWindowHandle w, const double* mine, int n, unsigned long long it) {
//     ck::device::put_signal<ck::device::Coop::Block>(w, 0, mine, n * sizeof(double), it);
//     ck::device::wait<ck::device::Coop::Block>(w, it);   // the peer's data is in my buffer
//     ... read ck::device::local<double>(w) ...
//   }
//   halo<<<1, 256, 0, s>>>(win.device_handle(), d_mine, n, iter);
//
// MEMORY ORDERING. signal(v) is __threadfence_system() (a release fence at system scope)
// followed by a store of v to the peer's flag (cuda::atomic_ref, thread_scope_system);
// wait(v) loads the local flag until it is >= v, then issues an acquire fence at system
// scope (fence-to-fence synchronization: the same guarantee as release store/acquire load).
// Hence: when wait(v) returns in thread T, every write that happened before the peer's
// signal(v') with v' >= v -- the signalling thread's own writes, puts included, and
// writes of other threads ordered before it (see below) -- is visible to T. Nothing is
// promised about writes made after that signal, and a flag only counts up: signal values
// must increase (compared as unsigned differences, so they may wrap), and a wait(v) is
// satisfied by any later, larger signal too. The other threads of T's block see the
// data after a __syncthreads() that follows the wait (wait<Coop::Block> does it).
//   Within a group: put<Coop::Warp>/<Coop::Block> is done by many threads. Before ONE
// thread signals, the others' writes must be ordered before the signal: __syncwarp() for
// a warp, __syncthreads() for a block (put_signal<Coop::Warp/Block> does this; a bare
// signal() by thread 0 after your own stores needs it from you). Across blocks of a grid
// there is no such barrier: each block signals its own part with signal_add (an atomic
// add, release, system scope), and the peer waits for the sum (put_signal_add<Grid>).
//   The stream-ordered forms (CkDeviceWindow::put_on_stream, signal_on_stream,
// wait_on_stream) use the same flags with the same meaning, so a kernel may wait for a
// signal_on_stream and a stream for a kernel's signal.
//
// DEBUG CHECKS. Define UCHARM_DEVICE_WINDOW_CHECK before including this header: every
// put checks its range against the peer's buffer size, signal_add checks that the link
// has peer atomics, and an empty handle is caught; a violation prints the offset, size
// and buffer size and traps (the kernel fails with an illegal-instruction error).
#pragma once

namespace ck {

// Passed to kernels by value (trivially copyable). From CkDeviceWindow::device_handle().
struct DeviceWindowHandle {
  unsigned char* local = nullptr;             // this side's buffer: the peer puts here
  unsigned char* remote = nullptr;            // the peer's buffer, mapped in this process
  unsigned long long local_bytes = 0;
  unsigned long long remote_bytes = 0;
  unsigned long long* local_flag = nullptr;   // the peer signals here; wait() polls it
  unsigned long long* remote_flag = nullptr;  // signal() writes the peer's flag here
  unsigned int remote_atomics = 0;            // 1: signal_add may be used (peer atomics)
  unsigned int magic = 0;                     // kDeviceWindowMagic in a handle from a window
};
constexpr unsigned int kDeviceWindowMagic = 0x75634457u;  // "ucDW"

}  // namespace ck

#ifdef __CUDACC__
#include <cuda/atomic>
#include <cstdio>

namespace ck {
namespace device {

// Who calls a function: one thread, all 32 lanes of a warp, all threads of a block, or
// all threads of the grid (put only). Every thread of the group must call it.
enum class Coop { Thread, Warp, Block, Grid };

namespace detail {
using flag_ref = cuda::atomic_ref<unsigned long long, cuda::thread_scope_system>;

__device__ inline unsigned long long thread_rank_in_block() {
  return threadIdx.x + blockDim.x * (threadIdx.y + static_cast<unsigned long long>(blockDim.y) * threadIdx.z);
}
__device__ inline unsigned long long block_size() {
  return static_cast<unsigned long long>(blockDim.x) * blockDim.y * blockDim.z;
}
__device__ inline unsigned long long block_rank_in_grid() {
  return blockIdx.x + gridDim.x * (blockIdx.y + static_cast<unsigned long long>(gridDim.y) * blockIdx.z);
}
// (rank, size) of the calling thread in its group.
template <Coop C>
__device__ inline void group_rank(unsigned long long& rank, unsigned long long& size) {
  if (C == Coop::Thread) { rank = 0; size = 1; }
  else if (C == Coop::Warp) { rank = thread_rank_in_block() % 32; size = 32; }
  else if (C == Coop::Block) { rank = thread_rank_in_block(); size = block_size(); }
  else {
    rank = block_rank_in_grid() * block_size() + thread_rank_in_block();
    size = block_size() * gridDim.x * gridDim.y * gridDim.z;
  }
}
template <Coop C>
__device__ inline void group_sync() {
  if (C == Coop::Warp) __syncwarp();
  else if (C == Coop::Block || C == Coop::Grid) __syncthreads();  // Grid: the block's part
}
template <Coop C>
__device__ inline bool group_leader() {
  return C == Coop::Thread || (C == Coop::Warp ? thread_rank_in_block() % 32 == 0 : thread_rank_in_block() == 0);
}

__device__ inline void check(const DeviceWindowHandle& h, const char* what) {
#ifdef UCHARM_DEVICE_WINDOW_CHECK
  if (h.magic != kDeviceWindowMagic) {
    printf("ucharm device window: %s with a handle that no ready CkDeviceWindow gave (block %u thread %u)\n", what,
           blockIdx.x, threadIdx.x);
    __trap();
  }
#else
  (void)h;
  (void)what;
#endif
}

// Copies n bytes, strided over the group, in words of W where d and s share their
// alignment modulo sizeof(W) (bytes before and after). __restrict__: the source is never
// the peer's buffer, so loads need not wait for earlier stores (byte by byte with possible
// aliasing, an 8-byte put was 8 dependent remote round trips).
template <class W>
__device__ inline unsigned long long copy_words(unsigned char* __restrict__ d, const unsigned char* __restrict__ s,
                                                unsigned long long n, unsigned long long rank,
                                                unsigned long long size) {
  const unsigned long long mis = reinterpret_cast<unsigned long long>(d) & (sizeof(W) - 1);
  const unsigned long long head = mis ? (sizeof(W) - mis < n ? sizeof(W) - mis : n) : 0;
  for (unsigned long long i = rank; i < head; i += size) d[i] = s[i];
  const unsigned long long words = (n - head) / sizeof(W);
  W* dw = reinterpret_cast<W*>(d + head);
  const W* sw = reinterpret_cast<const W*>(s + head);
  for (unsigned long long i = rank; i < words; i += size) dw[i] = sw[i];
  return head + words * sizeof(W);  // bytes done; the rest (< sizeof(W)) is the caller's
}
__device__ inline void copy(unsigned char* __restrict__ dst, const unsigned char* __restrict__ src,
                            unsigned long long n, unsigned long long rank, unsigned long long size) {
  const unsigned long long d = reinterpret_cast<unsigned long long>(dst), s = reinterpret_cast<unsigned long long>(src);
  unsigned long long done = 0;
  if ((d & 15) == (s & 15)) done = copy_words<int4>(dst, src, n, rank, size);
  if ((d & 7) == (s & 7)) done += copy_words<unsigned long long>(dst + done, src + done, n - done, rank, size);
  for (unsigned long long i = done + rank; i < n; i += size) dst[i] = src[i];
}
}  // namespace detail

// This side's buffer, typed (the peer's puts land here).
template <class T>
__device__ inline T* local(const DeviceWindowHandle& h) { return reinterpret_cast<T*>(h.local); }

// Writes `bytes` from `src` (device memory of this GPU, or any memory this kernel can
// read) to the peer's buffer at `dst_offset`. Visible to the peer only after a signal.
template <Coop C = Coop::Thread>
__device__ inline void put(const DeviceWindowHandle& h, unsigned long long dst_offset, const void* src,
                           unsigned long long bytes) {
  detail::check(h, "put");
#ifdef UCHARM_DEVICE_WINDOW_CHECK
  if (dst_offset > h.remote_bytes || bytes > h.remote_bytes - dst_offset) {
    printf("ucharm device window: put of %llu bytes at offset %llu is outside the peer's buffer of %llu bytes "
           "(block %u thread %u)\n",
           bytes, dst_offset, h.remote_bytes, blockIdx.x, threadIdx.x);
    __trap();
  }
#endif
  unsigned long long rank = 0, size = 1;
  detail::group_rank<C>(rank, size);
  detail::copy(h.remote + dst_offset, static_cast<const unsigned char*>(src), bytes, rank, size);
  detail::group_sync<C>();
}

// Raises the peer's flag to `value` (one thread calls it; see MEMORY ORDERING).
__device__ inline void signal(const DeviceWindowHandle& h, unsigned long long value) {
  detail::check(h, "signal");
  // The system fence orders every earlier write before the flag; the store itself can then
  // be relaxed (a release store would fence a second time).
  __threadfence_system();
  detail::flag_ref(*h.remote_flag).store(value, cuda::memory_order_relaxed);
}

// Adds `inc` to the peer's flag (atomic, release, system scope): several signallers
// (the blocks of a grid) each add their share. Needs peer atomics between the GPUs
// (NVLink, or the same GPU): the handle's remote_atomics.
__device__ inline void signal_add(const DeviceWindowHandle& h, unsigned long long inc) {
  detail::check(h, "signal_add");
#ifdef UCHARM_DEVICE_WINDOW_CHECK
  if (!h.remote_atomics) {
    printf("ucharm device window: signal_add, but the two GPUs have no peer atomics (use signal)\n");
    __trap();
  }
#endif
  __threadfence_system();
  detail::flag_ref(*h.remote_flag).fetch_add(inc, cuda::memory_order_release);
}

// Waits until the local flag is >= `value` (the peer's signal). Thread: the caller polls;
// Warp/Block: lane/thread 0 polls, then the group synchronizes, so all see the data.
template <Coop C = Coop::Thread>
__device__ inline void wait(const DeviceWindowHandle& h, unsigned long long value) {
  static_assert(C != Coop::Grid, "wait: a grid cannot synchronize; wait per block");
  detail::check(h, "wait");
  if (detail::group_leader<C>()) {
    detail::flag_ref f(*h.local_flag);
    // Poll with relaxed loads and fence once when the value is there: an acquire load at
    // system scope on every poll costs a fence per iteration.
    while (static_cast<long long>(f.load(cuda::memory_order_relaxed) - value) < 0) {
    }
    cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_system);
  }
  detail::group_sync<C>();
}

// The local flag's current value (acquire): for polling loops of your own.
__device__ inline unsigned long long flag(const DeviceWindowHandle& h) {
  return detail::flag_ref(*h.local_flag).load(cuda::memory_order_acquire);
}

// put, the group's barrier, then one thread signals `value`.
template <Coop C = Coop::Thread>
__device__ inline void put_signal(const DeviceWindowHandle& h, unsigned long long dst_offset, const void* src,
                                  unsigned long long bytes, unsigned long long value) {
  static_assert(C != Coop::Grid, "put_signal: a grid has no barrier before one signal; use put_signal_add");
  put<C>(h, dst_offset, src, bytes);
  if (detail::group_leader<C>()) signal(h, value);
}

// put, then thread 0 of each block (Grid, Block) / lane 0 of each warp / the thread adds
// `inc` to the peer's flag: the peer waits for the sum of all adds.
template <Coop C = Coop::Thread>
__device__ inline void put_signal_add(const DeviceWindowHandle& h, unsigned long long dst_offset, const void* src,
                                      unsigned long long bytes, unsigned long long inc) {
  put<C>(h, dst_offset, src, bytes);
  if (C == Coop::Grid ? detail::thread_rank_in_block() == 0 : detail::group_leader<C>()) signal_add(h, inc);
}

}  // namespace device
}  // namespace ck
#endif  // __CUDACC__
