// The CUDA driver calls the machine layer makes (memory types, stream ordering), opened at
// run time with dlopen so that one binary runs with or without a GPU. Internal header.
#pragma once

#ifdef UCHARM_HAVE_CUDA
#include <cuda.h>

namespace ucharm::machine {

struct CudaDriver {
  bool ok = false;  // libcuda opened and cuInit succeeded
  CUresult (*get_attrs)(unsigned, CUpointer_attribute*, void**, CUdeviceptr) = nullptr;
  CUresult (*ctx_get_current)(CUcontext*) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, std::size_t) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*event_create)(CUevent*, unsigned) = nullptr;
  CUresult (*event_record)(CUevent, CUstream) = nullptr;
  CUresult (*event_query)(CUevent) = nullptr;
  CUresult (*event_destroy)(CUevent) = nullptr;
  CUresult (*error_name)(CUresult, const char**) = nullptr;
  CUresult (*stream_get_ctx)(CUstream, CUcontext*) = nullptr;  // optional
  const char* name_of(CUresult r) const;
  // CUDA IPC mappings and stream memory operations (cuda_ipc.cpp). Optional: null where
  // the driver lacks them, without making `ok` false.
  struct Ipc {
    CUresult (*get_range)(CUdeviceptr*, std::size_t*, CUdeviceptr) = nullptr;
    CUresult (*get_handle)(CUipcMemHandle*, CUdeviceptr) = nullptr;
    CUresult (*open_handle)(CUdeviceptr*, CUipcMemHandle, unsigned) = nullptr;
    CUresult (*close_handle)(CUdeviceptr) = nullptr;
    CUresult (*ctx_push)(CUcontext) = nullptr;
    CUresult (*ctx_pop)(CUcontext*) = nullptr;
    CUresult (*ctx_get_device)(CUdevice*) = nullptr;
    CUresult (*can_access_peer)(int*, CUdevice, CUdevice) = nullptr;
    CUresult (*p2p_attr)(int*, CUdevice_P2PAttribute, CUdevice, CUdevice) = nullptr;
    CUresult (*device_attr)(int*, CUdevice_attribute, CUdevice) = nullptr;
    CUresult (*bus_id)(char*, int, CUdevice) = nullptr;
    CUresult (*by_bus_id)(CUdevice*, const char*) = nullptr;
    CUresult (*stream_create)(CUstream*, unsigned) = nullptr;
    CUresult (*stream_sync)(CUstream) = nullptr;
    CUresult (*memset_async)(CUdeviceptr, unsigned char, std::size_t, CUstream) = nullptr;
    CUresult (*copy_async)(CUdeviceptr, CUdeviceptr, std::size_t, CUstream) = nullptr;
    CUresult (*write_value64)(CUstream, CUdeviceptr, cuuint64_t, unsigned) = nullptr;
    CUresult (*wait_value64)(CUstream, CUdeviceptr, cuuint64_t, unsigned) = nullptr;
  } ipc;
  // Stream-ordered operations' pinned words (stream_ops.cpp). Optional, as above.
  struct Stream {
    CUresult (*mem_host_alloc)(void**, std::size_t, unsigned) = nullptr;
    CUresult (*mem_host_get_device_pointer)(CUdeviceptr*, void*, unsigned) = nullptr;
    CUresult (*launch_host_func)(CUstream, CUhostFn, void*) = nullptr;
    CUresult (*copy_dtoh_async)(void*, CUdeviceptr, std::size_t, CUstream) = nullptr;
    CUresult (*copy_htod_async)(CUdeviceptr, const void*, std::size_t, CUstream) = nullptr;
  } stream;
};

// Opened on first use; `ok` is false where there is no driver or no GPU.
const CudaDriver& cuda_driver();

// Makes `ctx` current for the scope (if it is not already): the PE's thread may have
// another context current, or none (a library such as UCX may have popped it).
class CtxScope {
 public:
  explicit CtxScope(void* ctx) {
    const CudaDriver& cu = cuda_driver();
    CUcontext cur = nullptr;
    if (!ctx || !cu.ipc.ctx_push || (cu.ctx_get_current(&cur) == CUDA_SUCCESS && cur == ctx)) return;
    pushed_ = cu.ipc.ctx_push(static_cast<CUcontext>(ctx)) == CUDA_SUCCESS;
  }
  ~CtxScope() {
    CUcontext c = nullptr;
    if (pushed_) cuda_driver().ipc.ctx_pop(&c);
  }
  CtxScope(const CtxScope&) = delete;
  CtxScope& operator=(const CtxScope&) = delete;

 private:
  bool pushed_ = false;
};

// The context `stream` belongs to; nullptr where the driver cannot tell (then the
// current one is used).
inline CUcontext context_of(CUstream stream) {
  const CudaDriver& cu = cuda_driver();
  CUcontext c = nullptr;
  if (!cu.stream_get_ctx || cu.stream_get_ctx(stream, &c) != CUDA_SUCCESS) return nullptr;
  return c;
}

}  // namespace ucharm::machine
#endif
