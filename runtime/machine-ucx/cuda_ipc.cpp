// CUDA IPC mappings and stream memory operations for device windows (issue 19, part 3):
// a PE exports the allocation holding its buffer and flag words, a peer process on the
// same host maps them, and kernels or stream operations then write the peer's memory
// directly. All through the driver API opened at run time (cuda_driver.h), so one binary
// runs with or without a GPU; every failure comes back as a message, never an abort (the
// layer above knows which window and chare to name).
#include <ucharm/machine.h>

#include <array>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include <fmt/core.h>

#include "cuda_driver.h"

namespace ucharm::machine {

#ifdef UCHARM_HAVE_CUDA
namespace {

// A peer's allocation mapped here: one mapping per (context, handle), shared by the
// windows that name it (the driver refuses a second open of one handle in a context).
struct Mapping {
  CUdeviceptr base = 0;
  int refs = 0;
};
struct IpcState {
  std::string error;  // the last failure's message (returned as c_str)
  std::map<std::pair<CUcontext, std::array<unsigned char, 64>>, Mapping> mapped;
  std::map<CUdevice, int> mem_ops;  // device -> 64-bit stream memory operations (1/0)
  std::map<CUcontext, CUstream> zero_streams;  // private streams for zeroing words
};
IpcState& state() {
  static IpcState s;
  return s;
}

const char* fail(std::string msg) {
  state().error = std::move(msg);
  return state().error.c_str();
}
const char* fail_call(const char* call, CUresult r, const char* hint = "") {
  return fail(fmt::format("{} failed: {}{}", call, cuda_driver().name_of(r), hint));
}

// Checks the driver has the calls this file uses.
const char* need_driver() {
  const CudaDriver& cu = cuda_driver();
  if (!cu.ok) return "CUDA is not available in this process (no driver or no GPU)";
  const auto& i = cu.ipc;
  if (!i.get_range || !i.get_handle || !i.open_handle || !i.close_handle || !i.ctx_push || !i.ctx_pop ||
      !i.ctx_get_device || !i.can_access_peer || !i.device_attr || !i.bus_id || !i.by_bus_id ||
      !i.stream_create || !i.stream_sync || !i.memset_async || !i.copy_async)
    return "the CUDA driver lacks the IPC calls device windows use (cuIpcGetMemHandle & co.): update the driver";
  return nullptr;
}

const char* device_of(void* ctx, CUdevice& dev) {
  CtxScope scope(ctx);
  CUresult r = cuda_driver().ipc.ctx_get_device(&dev);
  return r == CUDA_SUCCESS ? nullptr : fail_call("cuCtxGetDevice", r, " (is the window's context still alive?)");
}

const char* need_mem_ops(void* ctx) {
  const CudaDriver& cu = cuda_driver();
  if (!cu.ok) return "CUDA is not available in this process (no driver or no GPU)";
  if (!cu.ipc.write_value64 || !cu.ipc.wait_value64 || !cu.ipc.device_attr)
    return "the CUDA driver has no 64-bit stream memory operations (cuStreamWriteValue64_v2): update the driver";
  CUdevice dev = 0;
  if (const char* e = device_of(ctx, dev)) return e;
  auto [it, fresh] = state().mem_ops.emplace(dev, 0);
  if (fresh) {
    int v = 0;
    it->second = cu.ipc.device_attr(&v, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev) == CUDA_SUCCESS && v;
  }
  return it->second ? nullptr
                    : fail(fmt::format("CUDA device {} does not support 64-bit stream memory operations "
                                       "(CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS is 0)",
                                       static_cast<int>(dev)));
}

}  // namespace

const char* LrtsIpcExport(const void* ptr, std::size_t bytes, IpcExport& out, void*& ctx) {
  if (const char* e = need_driver()) return e;
  const CudaDriver& cu = cuda_driver();
  CUmemorytype type{};
  CUcontext c = nullptr;
  unsigned managed = 0;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_CONTEXT,
                                 CU_POINTER_ATTRIBUTE_IS_MANAGED};
  void* vals[] = {&type, &c, &managed};
  const auto p = reinterpret_cast<CUdeviceptr>(ptr);
  if (cu.get_attrs(3, attrs, vals, p) != CUDA_SUCCESS || type != CU_MEMORYTYPE_DEVICE)
    return fail(fmt::format("{} is not CUDA device memory (a host pointer, or freed memory?): a device window "
                            "exposes a buffer from cudaMalloc/cuMemAlloc",
                            ptr));
  if (managed)
    return fail(fmt::format("{} is CUDA managed memory (cudaMallocManaged), which CUDA IPC cannot share: "
                            "expose a cudaMalloc'd buffer",
                            ptr));
  CtxScope scope(c);
  CUdeviceptr base = 0;
  std::size_t size = 0;
  if (CUresult r = cu.ipc.get_range(&base, &size, p); r != CUDA_SUCCESS) return fail_call("cuMemGetAddressRange", r);
  const std::uint64_t off = p - base;
  if (bytes > size - off)
    return fail(fmt::format("{} bytes from {} run past the end of its CUDA allocation ({} bytes from {} on)", bytes,
                            ptr, size - off, ptr));
  CUipcMemHandle h{};
  if (CUresult r = cu.ipc.get_handle(&h, base); r != CUDA_SUCCESS)
    return fail_call("cuIpcGetMemHandle", r,
                     " (only cudaMalloc/cuMemAlloc memory can be shared this way: not memory of "
                     "cudaMallocAsync pools or cuMemCreate)");
  static_assert(sizeof h.reserved == sizeof out.handle);
  std::memcpy(out.handle, h.reserved, sizeof out.handle);
  out.offset = off;
  out.bytes = bytes;
  CUdevice dev = 0;
  if (const char* e = device_of(c, dev)) return e;
  if (CUresult r = cu.ipc.bus_id(out.bus_id, sizeof out.bus_id, dev); r != CUDA_SUCCESS)
    return fail_call("cuDeviceGetPCIBusId", r);
  ctx = c;
  return nullptr;
}

const char* LrtsIpcCanMap(void* ctx, const char* bus_id, bool& atomics) {
  atomics = false;
  if (const char* e = need_driver()) return e;
  const CudaDriver& cu = cuda_driver();
  CUdevice mine = 0, theirs = 0;
  if (const char* e = device_of(ctx, mine)) return e;
  if (CUresult r = cu.ipc.by_bus_id(&theirs, bus_id); r != CUDA_SUCCESS)
    return fail(fmt::format("the peer's GPU (PCI {}) is not visible in this process ({}): both PEs of a device "
                            "window must see both GPUs (check CUDA_VISIBLE_DEVICES)",
                            bus_id, cu.name_of(r)));
  if (theirs == mine) {
    atomics = true;
    return nullptr;
  }
  int can = 0;
  if (CUresult r = cu.ipc.can_access_peer(&can, mine, theirs); r != CUDA_SUCCESS)
    return fail_call("cuDeviceCanAccessPeer", r);
  if (!can)
    return fail(fmt::format("GPU {} cannot access the memory of GPU {} (PCI {}): no peer-to-peer path between them, "
                            "which a device window needs (use a CkChannel instead)",
                            static_cast<int>(mine), static_cast<int>(theirs), bus_id));
  int native = 0;
  atomics = cu.ipc.p2p_attr &&
            cu.ipc.p2p_attr(&native, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, mine, theirs) == CUDA_SUCCESS &&
            native;
  return nullptr;
}

const char* LrtsIpcOpen(void* ctx, const IpcExport& e, void*& ptr) {
  if (const char* err = need_driver()) return err;
  std::array<unsigned char, 64> key;
  std::memcpy(key.data(), e.handle, key.size());
  Mapping& m = state().mapped[{static_cast<CUcontext>(ctx), key}];
  if (m.refs == 0) {
    CtxScope scope(ctx);
    CUipcMemHandle h{};
    std::memcpy(h.reserved, e.handle, sizeof h.reserved);
    // Lazy peer access: the driver enables it between the two GPUs when they differ.
    if (CUresult r = cuda_driver().ipc.open_handle(&m.base, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
        r != CUDA_SUCCESS) {
      state().mapped.erase({static_cast<CUcontext>(ctx), key});
      return fail_call("cuIpcOpenMemHandle", r,
                       r == CUDA_ERROR_INVALID_CONTEXT || r == CUDA_ERROR_INVALID_VALUE
                           ? " (an export of this same process cannot be opened here: use its pointer)"
                           : "");
    }
  }
  ++m.refs;
  ptr = reinterpret_cast<void*>(m.base + e.offset);
  return nullptr;
}

void LrtsIpcClose(void* ctx, const IpcExport& e) {
  if (need_driver()) return;
  std::array<unsigned char, 64> key;
  std::memcpy(key.data(), e.handle, key.size());
  auto it = state().mapped.find({static_cast<CUcontext>(ctx), key});
  if (it == state().mapped.end() || --it->second.refs > 0) return;
  CtxScope scope(ctx);
  cuda_driver().ipc.close_handle(it->second.base);
  state().mapped.erase(it);
}

const char* LrtsIpcAllocWords(void* ctx, std::size_t bytes, void*& ptr) {
  if (const char* e = need_driver()) return e;
  const CudaDriver& cu = cuda_driver();
  CtxScope scope(ctx);
  CUdeviceptr p = 0;
  if (CUresult r = cu.mem_alloc(&p, bytes); r != CUDA_SUCCESS) return fail_call("cuMemAlloc", r);
  // Zeroed on a private stream and waited for: the words must read 0 before the peer
  // learns where they are (a user's kernel still running elsewhere is not waited for).
  CUstream& s = state().zero_streams[static_cast<CUcontext>(ctx)];
  CUresult r = s ? CUDA_SUCCESS : cu.ipc.stream_create(&s, CU_STREAM_NON_BLOCKING);
  if (r == CUDA_SUCCESS) r = cu.ipc.memset_async(p, 0, bytes, s);
  if (r == CUDA_SUCCESS) r = cu.ipc.stream_sync(s);
  if (r != CUDA_SUCCESS) {
    cu.mem_free(p);
    return fail_call("zeroing the window's flag words (cuMemsetD8Async)", r);
  }
  ptr = reinterpret_cast<void*>(p);
  return nullptr;
}

void LrtsIpcFreeWords(void* ctx, void* ptr) {
  if (need_driver() || !ptr) return;
  CtxScope scope(ctx);
  cuda_driver().mem_free(reinterpret_cast<CUdeviceptr>(ptr));
}

const char* LrtsIpcStreamCopy(void* ctx, GpuStream stream, void* dst, const void* src, std::size_t bytes) {
  if (const char* e = need_driver()) return e;
  CtxScope scope(ctx);
  CUresult r = cuda_driver().ipc.copy_async(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src),
                                            bytes, static_cast<CUstream>(stream));
  return r == CUDA_SUCCESS ? nullptr : fail_call("cuMemcpyDtoDAsync", r, " (is the source device memory?)");
}

const char* LrtsIpcStreamWrite64(void* ctx, GpuStream stream, void* addr, std::uint64_t value) {
  if (const char* e = need_mem_ops(ctx)) return e;
  CtxScope scope(ctx);
  // Default flags: a memory barrier before the write, so the stream's earlier copies
  // into the peer's buffer are visible before the flag.
  CUresult r = cuda_driver().ipc.write_value64(static_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(addr),
                                               value, CU_STREAM_WRITE_VALUE_DEFAULT);
  return r == CUDA_SUCCESS ? nullptr : fail_call("cuStreamWriteValue64", r);
}

const char* LrtsIpcStreamWaitGeq64(void* ctx, GpuStream stream, void* addr, std::uint64_t value) {
  if (const char* e = need_mem_ops(ctx)) return e;
  CtxScope scope(ctx);
  // No FLUSH flag: that is for writes arriving over RDMA; a peer GPU's writes made before
  // its flag (its stream write's or kernel's system fence) are visible once the flag is.
  CUresult r = cuda_driver().ipc.wait_value64(static_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(addr),
                                              value, CU_STREAM_WAIT_VALUE_GEQ);
  return r == CUDA_SUCCESS ? nullptr : fail_call("cuStreamWaitValue64", r);
}

#else  // built without CUDA

namespace {
constexpr const char* kNoCuda = "ucharm was built without CUDA: device windows are not available";
}
const char* LrtsIpcExport(const void*, std::size_t, IpcExport&, void*&) { return kNoCuda; }
const char* LrtsIpcCanMap(void*, const char*, bool& atomics) {
  atomics = false;
  return kNoCuda;
}
const char* LrtsIpcOpen(void*, const IpcExport&, void*&) { return kNoCuda; }
void LrtsIpcClose(void*, const IpcExport&) {}
const char* LrtsIpcAllocWords(void*, std::size_t, void*&) { return kNoCuda; }
void LrtsIpcFreeWords(void*, void*) {}
const char* LrtsIpcStreamCopy(void*, GpuStream, void*, const void*, std::size_t) { return kNoCuda; }
const char* LrtsIpcStreamWrite64(void*, GpuStream, void*, std::uint64_t) { return kNoCuda; }
const char* LrtsIpcStreamWaitGeq64(void*, GpuStream, void*, std::uint64_t) { return kNoCuda; }

#endif

}  // namespace ucharm::machine
