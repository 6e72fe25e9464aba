// Stream memory operations: points where a CUDA stream and this PE meet without either
// blocking (stream-ordered transfers; machine.h, "Stream memory operations").
//
// Each point has a slot of two 64-bit words in pinned host memory mapped into the GPU:
// "ready", written by the stream (cuStreamWriteValue64) when it reaches the point, and
// "done", written by this PE when the operation has completed and waited on by the stream
// (cuStreamWaitValue64, >=). Slots come from chunks allocated once and reused: nothing is
// allocated per operation. A slot's words are never reset: each use of a slot takes the
// next sequence number of that slot and writes it, so the words only grow, a wait for an
// older use stays satisfied, and a (slot, seq) pair names a completion forever.
//
// Without 64-bit stream memory operations (or with UCHARM_STREAM_MEMOPS=0, a test hook)
// the words are written and waited for by host functions on the stream (cuLaunchHostFunc):
// correct, slower, and a waiting host function holds CUDA's callback thread (documented).
#include <ucharm/machine.h>

#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>
#include <fmt/core.h>

#include "cuda_driver.h"
#include "machine_internal.h"

namespace ucharm::machine {
namespace {

using detail::fatal;
using detail::M;

#ifdef UCHARM_HAVE_CUDA
// One slot's words, each in its own cache line: the GPU writes `ready`, this PE `done`.
struct alignas(64) Words {
  std::uint64_t ready;
  std::uint64_t pad0[7];
  std::uint64_t done;
  std::uint64_t pad1[7];
};
static_assert(sizeof(Words) == 128);

constexpr std::uint32_t kChunkSlots = 2048;  // 256 KiB of pinned memory per chunk (see new_slab)
constexpr std::uint32_t kMaxChunks = 64;    // 131072 points open at once at most

std::uint64_t load(const std::uint64_t& w) {
  return std::atomic_ref<const std::uint64_t>(w).load(std::memory_order_acquire);
}
void store(std::uint64_t& w, std::uint64_t v) {
  std::atomic_ref<std::uint64_t>(w).store(v, std::memory_order_release);
}

// The fallback's host functions get (slot, seq) packed in their user pointer, and find the
// words through a table of chunk addresses that is only appended to (each entry written
// once, before any host function can name it): they run on CUDA's own thread.
constexpr unsigned kSeqBits = 40;
std::array<std::atomic<Words*>, kMaxChunks> g_chunk_words{};

Words& words_of(std::uint32_t slot) {
  const std::uint32_t i = slot - 1;
  return g_chunk_words[i / kChunkSlots].load(std::memory_order_acquire)[i % kChunkSlots];
}
void* pack_arg(std::uint32_t slot, std::uint64_t seq) {
  return reinterpret_cast<void*>((static_cast<std::uintptr_t>(slot) << kSeqBits) | seq);
}
void unpack_arg(void* a, std::uint32_t& slot, std::uint64_t& seq) {
  const auto v = reinterpret_cast<std::uintptr_t>(a);
  slot = static_cast<std::uint32_t>(v >> kSeqBits);
  seq = v & ((std::uint64_t{1} << kSeqBits) - 1);
}
void CUDA_CB host_write_ready(void* a) {
  std::uint32_t slot;
  std::uint64_t seq;
  unpack_arg(a, slot, seq);
  store(words_of(slot).ready, seq);
}
void CUDA_CB host_wait_done(void* a) {
  std::uint32_t slot;
  std::uint64_t seq;
  unpack_arg(a, slot, seq);
  while (load(words_of(slot).done) < seq) ::sched_yield();
}

class StreamOps {
 public:
  // nullptr when points can be enqueued here; otherwise why not.
  const char* unavailable() {
    if (!checked_) check();
    return why_.empty() ? nullptr : why_.c_str();
  }

  StreamOp enqueue(GpuStream stream, Completion on_ready, bool stream_waits) {
    if (const char* why = unavailable()) fatal(fmt::format("a stream-ordered operation on CUDA stream {}: {}", stream, why));
    const std::uint32_t slot = take_slot();
    Slot& s = slot_state(slot);
    const std::uint64_t seq = ++s.seq;
    if (seq >> kSeqBits) fatal("a stream-operation slot has been used 2^40 times");
    s.on_ready = on_ready;
    s.started = false;
    write_ready(stream, slot, seq);
    if (stream_waits) wait_done(stream, StreamOp{slot, seq});
    waiting_.push_back(slot);
    ++M().gpu_inflight;  // the ready word wakes nobody: the PE must not sleep on the network
    ++open_;
    if (M().trace_ops)
      fmt::print(stderr, "ucharm: PE {}: stream point (slot {}, number {}) enqueued on stream {}{}\n", M().info.my_pe,
                 slot, seq, stream, stream_waits ? ", the stream waits for it" : "");
    return StreamOp{slot, seq};
  }

  void wait_done(GpuStream stream, StreamOp op) {
    if (const char* why = unavailable()) fatal(fmt::format("a stream wait on CUDA stream {}: {}", stream, why));
    check_op(op, "LrtsStreamWaitOp");
    const CudaDriver& cu = cuda_driver();
    const CUresult r = memops_ ? cu.ipc.wait_value64(static_cast<CUstream>(stream), dev_done(op.slot), op.seq,
                                                     CU_STREAM_WAIT_VALUE_GEQ)
                               : cu.stream.launch_host_func(static_cast<CUstream>(stream), host_wait_done,
                                                            pack_arg(op.slot, op.seq));
    if (r != CUDA_SUCCESS)
      fatal(fmt::format("making CUDA stream {} wait for a stream-ordered operation failed: {} (is the stream valid "
                        "and of a device of this PE?)",
                        stream, cu.name_of(r)));
  }

  // Runs the completions of the points whose streams have arrived; returns how many.
  int poll() {
    if (waiting_.empty() || polling_) return 0;
    struct Guard {
      bool& b;
      explicit Guard(bool& f) : b(f) { b = true; }
      ~Guard() { b = false; }
    } guard(polling_);
    arrived_.clear();
    std::size_t keep = 0;
    for (std::uint32_t slot : waiting_) {
      if (load(words_of(slot).ready) >= slot_state(slot).seq) arrived_.push_back(slot);
      else waiting_[keep++] = slot;
    }
    waiting_.resize(keep);
    // After the scan: a completion may enqueue further points.
    for (std::uint32_t slot : arrived_) {
      --M().gpu_inflight;
      Slot& s = slot_state(slot);
      if (s.stage_in) {  // the stream has copied a staged receive out: buffer and slot back
        stage_release(s.stage_in);
        s.stage_in = nullptr;
        store(words_of(slot).done, s.seq);
        free_.push_back(slot);
        continue;
      }
      s.started = true;
      if (M().trace_ops)
        fmt::print(stderr, "ucharm: PE {}: stream point (slot {}, number {}) reached\n", M().info.my_pe, slot, s.seq);
      if (s.on_ready.fn) s.on_ready.fn(s.on_ready.ctx);
    }
    return static_cast<int>(arrived_.size());
  }

  void done(StreamOp op) {
    check_op(op, "LrtsStreamOpDone");
    Slot& s = slot_state(op.slot);
    if (s.seq != op.seq || !s.started || load(words_of(op.slot).done) >= op.seq)
      fatal(fmt::format("LrtsStreamOpDone: stream operation (slot {}, number {}) is not open (completed twice, or "
                        "before its stream reached it)",
                        op.slot, op.seq));
    store(words_of(op.slot).done, op.seq);
    if (M().trace_ops)
      fmt::print(stderr, "ucharm: PE {}: stream point (slot {}, number {}) done\n", M().info.my_pe, op.slot, op.seq);
    s.started = false;
    --open_;
    free_.push_back(op.slot);
  }

  // ---- staging: device buffers go through pinned host buffers, copied on the stream ----
  void* stage_out(GpuStream stream, const void* dev, std::size_t size) {
    void* host = stage_buffer(size);
    const CudaDriver& cu = cuda_driver();
    const CUresult r = cu.stream.copy_dtoh_async(host, reinterpret_cast<CUdeviceptr>(dev), size,
                                                 static_cast<CUstream>(stream));
    if (r != CUDA_SUCCESS)
      fatal(fmt::format("staging {} bytes of device memory at {} on CUDA stream {} failed: {}", size, dev, stream,
                        cu.name_of(r)));
    return host;
  }

  void* stage_buffer(std::size_t size) {
    if (const char* why = unavailable()) fatal(fmt::format("a staged stream-ordered transfer: {}", why));
    unsigned c = 12;  // 4 KiB at least
    while ((std::size_t{1} << c) < size) ++c;
    if (c >= kClasses) fatal(fmt::format("a stream-ordered transfer of {} bytes is too large to stage", size));
    if (void* p = take_free(c)) return p;
    // Carved from slabs of pinned memory: allocating page-locked memory is an implicit
    // synchronization point for the device, which never completes while a stream waits for
    // this PE. So one slab (UCHARM_STREAM_STAGING_MB, default 64) is taken at the first
    // staged transfer, before this PE's streams wait; when it runs out while points are
    // open, the buffers of finished transfers are waited for first (both ends of a chain
    // in one process need twice the buffers), and another slab taken only if none comes.
    const std::size_t bytes = std::size_t{1} << c;
    if (slab_left_ < bytes && open_ + waiting_.size() > 0)
      if (void* p = wait_for_free(c)) return p;
    if (slab_left_ < bytes) new_slab(bytes);
    void* p = slab_next_;
    slab_next_ += bytes;
    slab_left_ -= bytes;
    stage_class_[p] = c;
    return p;
  }

  // A free staging buffer of class c, or of the next two classes up (less carving).
  void* take_free(unsigned c) {
    for (unsigned k = c; k < kClasses && k <= c + 2; ++k) {
      std::vector<void*>& fl = stage_free_[k];
      if (fl.empty()) continue;
      void* p = fl.back();
      fl.pop_back();
      return p;
    }
    return nullptr;
  }

  // Progresses this PE's transfers and points (they release staging buffers) until a buffer
  // of class c is free. Gives up after kStageWaitS seconds in which nothing moved: a
  // release may need work of the program's (an entry method, a kernel still running).
  void* wait_for_free(unsigned c) {
    if (polling_) return nullptr;  // inside poll()'s completions: no nested poll
    using clock = std::chrono::steady_clock;
    auto last_move = clock::now();
    while (clock::now() - last_move < std::chrono::seconds(kStageWaitS)) {
      const std::size_t arrived = poll();
      const int n = LrtsProgress();
      if (void* p = take_free(c)) return p;
      if (arrived > 0 || n > 0) last_move = clock::now();
      if (open_ + waiting_.size() == 0) return nullptr;  // nothing open: a new slab is safe
      ::sched_yield();
    }
    fmt::print(stderr,
               "ucharm: PE {}: stream-ordered staging: the pinned buffers ({} MiB) are all in use by open transfers "
               "and none was released in {} s; taking more pinned memory, which waits for this PE's streams (if "
               "one of them waits for this PE, the job hangs here: set UCHARM_STREAM_STAGING_MB larger, or "
               "enqueue fewer transfers ahead)\n",
               M().info.my_pe, slab_bytes_ >> 20, kStageWaitS);
    return nullptr;
  }

  void new_slab(std::size_t at_least) {
    std::size_t mb = 64;
    if (const char* e = std::getenv("UCHARM_STREAM_STAGING_MB")) mb = std::strtoull(e, nullptr, 10);
    const std::size_t size = std::max(at_least, std::max<std::size_t>(mb, 1) << 20);
    if (slabs_ > 0 && M().trace_ops)
      fmt::print(stderr, "ucharm: PE {}: stream staging: another slab of {} bytes (pinned allocations may wait for "
                 "the device)\n", M().info.my_pe, size);
    void* p = nullptr;
    const CudaDriver& cu = cuda_driver();
    const CUresult r = cu.stream.mem_host_alloc(&p, size, CU_MEMHOSTALLOC_PORTABLE);
    if (r != CUDA_SUCCESS)
      fatal(fmt::format("allocating {} bytes of pinned staging memory failed: {} (UCHARM_STREAM_STAGING_MB sets "
                        "the slab size)",
                        size, cu.name_of(r)));
    ++slabs_;  // kept until the process ends (freeing pinned memory synchronizes the device)
    slab_bytes_ += size;
    slab_next_ = static_cast<char*>(p);
    slab_left_ = size;
  }

  void stage_release(void* host) {
    auto it = stage_class_.find(host);
    if (it == stage_class_.end()) fatal(fmt::format("LrtsStreamStageRelease: {} is no staging buffer", host));
    stage_free_[it->second].push_back(host);
  }

  // The stream copies `host` into `dev`, then reaches a point of ours that recycles the
  // buffer (no completion of the caller's: the point only tells that the copy is done).
  void stage_in(GpuStream stream, void* dev, void* host, std::size_t size) {
    if (const char* why = unavailable()) fatal(fmt::format("a staged stream-ordered transfer: {}", why));
    const CudaDriver& cu = cuda_driver();
    const CUresult r =
        cu.stream.copy_htod_async(reinterpret_cast<CUdeviceptr>(dev), host, size, static_cast<CUstream>(stream));
    if (r != CUDA_SUCCESS)
      fatal(fmt::format("enqueuing the copy of a staged receive ({} bytes into {}) on CUDA stream {} failed: {}", size,
                        dev, stream, cu.name_of(r)));
    const std::uint32_t slot = take_slot();
    Slot& s = slot_state(slot);
    const std::uint64_t seq = ++s.seq;
    s.on_ready = {};
    s.started = false;
    s.stage_in = host;
    write_ready(stream, slot, seq);
    waiting_.push_back(slot);
    ++M().gpu_inflight;
  }


  bool is_done(StreamOp op) {
    check_op(op, "LrtsStreamOpIsDone");
    return load(words_of(op.slot).done) >= op.seq;
  }

  std::size_t open() const { return open_; }
  std::size_t waiting() const { return waiting_.size(); }
  bool memops() {
    unavailable();
    return memops_;
  }

 private:
  struct Slot {
    std::uint64_t seq = 0;  // the current (or last) use's number
    Completion on_ready{};
    bool started = false;   // the stream arrived; not yet done
    void* stage_in = nullptr;  // an internal point: recycle this staging buffer when reached
  };

  void check() {
    checked_ = true;
    const CudaDriver& cu = cuda_driver();
    if (!cu.ok) {
      why_ = "CUDA is not available in this process (no CUDA driver or no GPU)";
      return;
    }
    CUcontext ctx = nullptr;
    if (cu.ctx_get_current(&ctx) != CUDA_SUCCESS || !ctx) {
      checked_ = false;  // may be set later: ask again next time
      why_ = "no CUDA context is current on this PE (select a device first, e.g. cudaSetDevice)";
      return;
    }
    if (!cu.stream.mem_host_alloc || !cu.stream.mem_host_get_device_pointer || !cu.ipc.ctx_get_device ||
        !cu.ipc.device_attr || !cu.stream.copy_dtoh_async || !cu.stream.copy_htod_async) {
      why_ = "the CUDA driver lacks the calls stream-ordered operations need (cuMemHostAlloc, "
             "cuMemHostGetDevicePointer, cuDeviceGetAttribute, cuMemcpyDtoHAsync, cuMemcpyHtoDAsync)";
      return;
    }
    CUdevice dev = 0;
    int attr = 0;
    const char* env = std::getenv("UCHARM_STREAM_MEMOPS");
    const bool allowed = !(env && std::strcmp(env, "0") == 0);
    memops_ = allowed && cu.ipc.write_value64 && cu.ipc.wait_value64 && cu.ipc.ctx_get_device(&dev) == CUDA_SUCCESS &&
              cu.ipc.device_attr(&attr, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev) == CUDA_SUCCESS &&
              attr != 0;
    if (!memops_ && !cu.stream.launch_host_func) {
      why_ = "the GPU has no 64-bit stream memory operations and the driver no cuLaunchHostFunc";
      return;
    }
    why_.clear();
    if (!add_chunk()) return;
    connect_self();
    if (M().trace_ops)
      fmt::print(stderr, "ucharm: PE {}: stream-ordered operations use {}\n", M().info.my_pe,
                 memops_ ? "cuStreamWriteValue64/cuStreamWaitValue64" : "host functions (cuLaunchHostFunc)");
  }

  // Two chares of this PE meet through UCX's endpoint to this PE, made at first use. Made
  // here, with a context current and before any stream of this PE waits for it: making an
  // endpoint with CUDA lanes selects its protocols, and the process's first selection
  // allocates and frees a CUDA buffer to learn which memory domain allocates (cuMemFree
  // waits for the device, which a stream waiting for this PE never lets finish: seen on
  // H100 as a hang of two chares' chain on one PE).
  static void connect_self() {
    ucp_request_param_t p{};
    detail::wait_request(ucp_ep_flush_nbx(detail::endpoint(M().info.my_pe), &p), "wiring up the endpoint to this PE");
  }

  // Pinned, mapped, portable (usable from every context of the process).
  bool add_chunk() {
    const CudaDriver& cu = cuda_driver();
    if (chunks_ == kMaxChunks) fatal(fmt::format("more than {} stream-ordered operations are open on this PE", kMaxChunks * kChunkSlots));
    void* p = nullptr;
    CUresult r = cu.stream.mem_host_alloc(&p, kChunkSlots * sizeof(Words),
                                          CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    CUdeviceptr d = 0;
    if (r == CUDA_SUCCESS) r = cu.stream.mem_host_get_device_pointer(&d, p, 0);
    if (r != CUDA_SUCCESS) {
      why_ = fmt::format("allocating {} bytes of pinned host memory mapped into the GPU failed: {}",
                         kChunkSlots * sizeof(Words), cu.name_of(r));
      if (chunks_ == 0) return false;
      fatal(why_);
    }
    std::memset(p, 0, kChunkSlots * sizeof(Words));
    // Kept until the process ends: a stream may still wait on the words at exit.
    dev_base_[chunks_] = d;
    g_chunk_words[chunks_].store(static_cast<Words*>(p), std::memory_order_release);
    slots_[chunks_] = std::make_unique<Slot[]>(kChunkSlots);
    for (std::uint32_t i = kChunkSlots; i > 0; --i) free_.push_back(chunks_ * kChunkSlots + i);
    ++chunks_;
    return true;
  }

  std::uint32_t take_slot() {
    if (free_.empty()) add_chunk();
    const std::uint32_t s = free_.back();
    free_.pop_back();
    return s;
  }
  Slot& slot_state(std::uint32_t slot) {
    const std::uint32_t i = slot - 1;
    return slots_[i / kChunkSlots][i % kChunkSlots];
  }
  CUdeviceptr dev_words(std::uint32_t slot) const {
    const std::uint32_t i = slot - 1;
    return dev_base_[i / kChunkSlots] + (i % kChunkSlots) * sizeof(Words);
  }
  CUdeviceptr dev_done(std::uint32_t slot) const { return dev_words(slot) + offsetof(Words, done); }
  void check_op(StreamOp op, const char* fn) const {
    if (op.slot == 0 || op.slot > chunks_ * kChunkSlots || op.seq == 0)
      fatal(fmt::format("{}: (slot {}, number {}) names no stream operation", fn, op.slot, op.seq));
  }

  void write_ready(GpuStream stream, std::uint32_t slot, std::uint64_t seq) {
    const CudaDriver& cu = cuda_driver();
    // The default flags keep the memory barrier: what the stream wrote before is visible
    // to whoever sees the word.
    const CUresult r = memops_ ? cu.ipc.write_value64(static_cast<CUstream>(stream), dev_words(slot), seq,
                                                      CU_STREAM_WRITE_VALUE_DEFAULT)
                               : cu.stream.launch_host_func(static_cast<CUstream>(stream), host_write_ready,
                                                            pack_arg(slot, seq));
    if (r != CUDA_SUCCESS)
      fatal(fmt::format("enqueuing a stream-ordered operation on CUDA stream {} failed: {} (is the stream valid and "
                        "of a device of this PE?)",
                        stream, cu.name_of(r)));
  }

  bool checked_ = false;
  bool memops_ = false;
  std::string why_;
  std::uint32_t chunks_ = 0;
  std::array<CUdeviceptr, kMaxChunks> dev_base_{};
  std::array<std::unique_ptr<Slot[]>, kMaxChunks> slots_{};
  std::vector<std::uint32_t> free_;     // free slots (a stack: the warmest first)
  std::vector<std::uint32_t> waiting_;  // enqueued, their stream not yet there
  std::vector<std::uint32_t> arrived_;  // poll()'s scratch (kept: no allocation per poll)
  std::size_t open_ = 0;
  static constexpr unsigned kClasses = 40;  // staging buffers: 2^12 .. 2^39 bytes
  std::array<std::vector<void*>, kClasses> stage_free_{};
  std::unordered_map<void*, unsigned> stage_class_;
  char* slab_next_ = nullptr;  // the free end of the current staging slab
  std::size_t slab_left_ = 0;
  unsigned slabs_ = 0;
  std::size_t slab_bytes_ = 0;  // pinned staging memory taken so far
  bool polling_ = false;        // poll() is running completions
  static constexpr int kStageWaitS = 10;
};

// This PE's points (non-SMP: one PE per process, reached only through ops()).
StreamOps& ops() {
  static StreamOps s;
  return s;
}
#endif

}  // namespace

#ifdef UCHARM_HAVE_CUDA
const char* LrtsStreamOpsUnavailable() { return ops().unavailable(); }
bool LrtsStreamOpsUseMemops() { return ops().memops(); }
StreamOp LrtsStreamEnqueue(GpuStream stream, Completion on_ready, bool stream_waits) {
  return ops().enqueue(stream, on_ready, stream_waits);
}
void LrtsStreamWaitOp(GpuStream stream, StreamOp op) { ops().wait_done(stream, op); }
int LrtsStreamPoll() { return ops().poll(); }
void LrtsStreamOpDone(StreamOp op) { ops().done(op); }
bool LrtsStreamOpIsDone(StreamOp op) { return ops().is_done(op); }
std::size_t LrtsStreamOpsOpen() { return ops().open(); }
std::size_t LrtsStreamOpsWaiting() { return ops().waiting(); }
void* LrtsStreamStageOut(GpuStream stream, const void* dev, std::size_t size) { return ops().stage_out(stream, dev, size); }
void* LrtsStreamStageBuffer(std::size_t size) { return ops().stage_buffer(size); }
void LrtsStreamStageIn(GpuStream stream, void* dev, void* host, std::size_t size) {
  ops().stage_in(stream, dev, host, size);
}
void LrtsStreamStageRelease(void* host) { ops().stage_release(host); }
#else
namespace {
constexpr const char* kNoCuda = "ucharm was built without CUDA (UCHARM_ENABLE_CUDA=OFF)";
}
const char* LrtsStreamOpsUnavailable() { return kNoCuda; }
bool LrtsStreamOpsUseMemops() { return false; }
StreamOp LrtsStreamEnqueue(GpuStream stream, Completion, bool) {
  fatal(fmt::format("a stream-ordered operation on CUDA stream {}: {}", stream, kNoCuda));
}
void LrtsStreamWaitOp(GpuStream stream, StreamOp) {
  fatal(fmt::format("a stream wait on CUDA stream {}: {}", stream, kNoCuda));
}
int LrtsStreamPoll() { return 0; }
void LrtsStreamOpDone(StreamOp) { fatal(fmt::format("LrtsStreamOpDone: {}", kNoCuda)); }
bool LrtsStreamOpIsDone(StreamOp) { return true; }
std::size_t LrtsStreamOpsOpen() { return 0; }
std::size_t LrtsStreamOpsWaiting() { return 0; }
void* LrtsStreamStageOut(GpuStream, const void*, std::size_t) { fatal(fmt::format("LrtsStreamStageOut: {}", kNoCuda)); }
void* LrtsStreamStageBuffer(std::size_t) { fatal(fmt::format("LrtsStreamStageBuffer: {}", kNoCuda)); }
void LrtsStreamStageIn(GpuStream, void*, void*, std::size_t) { fatal(fmt::format("LrtsStreamStageIn: {}", kNoCuda)); }
void LrtsStreamStageRelease(void*) { fatal(fmt::format("LrtsStreamStageRelease: {}", kNoCuda)); }
#endif

}  // namespace ucharm::machine
