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
  const char* name_of(CUresult r) const;
};

// Opened on first use; `ok` is false where there is no driver or no GPU.
const CudaDriver& cuda_driver();

}  // namespace ucharm::machine
#endif
