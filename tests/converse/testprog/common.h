// Shared by the converse_testprog modes (tests/converse/testprog/*.cpp): the command line
// a mode gets, a host-or-GPU test buffer, deterministic payload patterns and message helpers.
#pragma once

#include <ucharm/converse.h>

#ifdef UCHARM_TEST_CUDA
#include <cuda_runtime.h>
#endif

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace testprog {

// converse_testprog MODE [args]: what a mode's start function receives.
struct Args {
  std::string mode;
  std::vector<std::string> args;
  bool cuda = false;  // "cuda" among the arguments: device/channel/wrap use GPU memory
};

#ifdef UCHARM_TEST_CUDA
// The test's own copies go on a non-blocking stream: a copy on the legacy default stream
// would also wait for streams UCX uses, whose work may need this PE's progress.
inline cudaStream_t test_stream() {
  static cudaStream_t s = [] {
    cudaStream_t st = nullptr;
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    return st;
  }();
  return s;
}
inline bool copy(void* dst, const void* src, std::size_t n, cudaMemcpyKind kind) {
  return cudaMemcpyAsync(dst, src, n, kind, test_stream()) == cudaSuccess &&
         cudaStreamSynchronize(test_stream()) == cudaSuccess;
}
#endif

// A test buffer in host or GPU memory; filled and checked through host copies.
class Buf {
 public:
  Buf() = default;
  explicit Buf(std::size_t n) { resize(n); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  Buf(Buf&& o) noexcept { swap(o); }
  Buf& operator=(Buf&& o) noexcept { swap(o); return *this; }
  ~Buf() { release(); }
  void resize(std::size_t n) {
    release();
    size_ = n;
#ifdef UCHARM_TEST_CUDA
    if (on_gpu) {
      if (cudaMalloc(&dev_, n ? n : 1) != cudaSuccess) CmiAbort("cudaMalloc(%zu) failed", n);
      return;
    }
#endif
    host_.assign(n, 0);
  }
  char* data() { return dev_ ? static_cast<char*>(dev_) : host_.data(); }
  std::size_t size() const { return size_; }
  // Where buffers go: GPU memory when the mode's arguments say "cuda" (set once, in main).
  static inline bool on_gpu = false;
  std::vector<char> read() const {
#ifdef UCHARM_TEST_CUDA
    if (dev_) {
      std::vector<char> h(size_);
      if (size_ && !copy(h.data(), dev_, size_, cudaMemcpyDeviceToHost)) CmiAbort("device-to-host copy failed");
      return h;
    }
#endif
    return host_;
  }
  void write(const std::vector<char>& h) {
#ifdef UCHARM_TEST_CUDA
    if (dev_) {
      if (size_ && !copy(dev_, h.data(), size_, cudaMemcpyHostToDevice)) CmiAbort("host-to-device copy failed");
      return;
    }
#endif
    host_ = h;
  }

 private:
  void release() {
#ifdef UCHARM_TEST_CUDA
    if (dev_) cudaFree(dev_);
#endif
    dev_ = nullptr;
    host_.clear();
  }
  void swap(Buf& o) {
    std::swap(dev_, o.dev_);
    std::swap(size_, o.size_);
    host_.swap(o.host_);
  }
  void* dev_ = nullptr;
  std::size_t size_ = 0;
  std::vector<char> host_;
};

// Deterministic payload bytes for (a, b, i): any corruption or misdelivery shows up.
inline std::uint8_t pattern(std::uint64_t a, std::uint64_t b, std::size_t i) {
  return static_cast<std::uint8_t>((a * 131 + b * 7919 + i * 31 + (i >> 8)) & 0xff);
}
inline void fill(char* p, std::size_t n, std::uint64_t a, std::uint64_t b) {
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<char>(pattern(a, b, i));
}
inline bool matches(const char* p, std::size_t n, std::uint64_t a, std::uint64_t b) {
  for (std::size_t i = 0; i < n; ++i)
    if (static_cast<std::uint8_t>(p[i]) != pattern(a, b, i)) return false;
  return true;
}
inline void fill(Buf& b, std::uint64_t x, std::uint64_t y) {
  std::vector<char> h(b.size());
  fill(h.data(), h.size(), x, y);
  b.write(h);
}
inline bool matches(const Buf& b, std::uint64_t x, std::uint64_t y) {
  std::vector<char> h = b.read();
  return matches(h.data(), h.size(), x, y);
}

template <class T>
T& payload(void* msg) { return *reinterpret_cast<T*>(CmiMsgPayload(msg)); }

template <class T>
void* make_msg(int handler, const T& body, std::size_t extra = 0) {
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(T) + extra);
  CmiSetHandler(m, handler);
  payload<T>(m) = body;
  return m;
}
template <class T>
constexpr std::size_t msg_size(std::size_t extra = 0) { return CmiMsgHeaderSizeBytes + sizeof(T) + extra; }

}  // namespace testprog
