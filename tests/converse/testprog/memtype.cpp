// memtype (GPU): CUDA memory is recognised, host memory is not, and a freed range leaves
// the cache, so an address reused by a new allocation is asked about again.
#include "common.h"

namespace testprog::memtype {

void start(const Args&) {
#ifdef UCHARM_TEST_CUDA
  std::vector<char> host(100);
  if (CmiGetMemoryType(host.data()) != CmiMemoryType::Host) CmiAbort("memtype: host memory taken for CUDA");
  void* a = nullptr;
  cudaMalloc(&a, 1 << 20);
  if (CmiGetMemoryType(a) != CmiMemoryType::Cuda) CmiAbort("memtype: cudaMalloc memory not recognised");
  if (CmiGetMemoryType(static_cast<char*>(a) + 12345) != CmiMemoryType::Cuda) CmiAbort("memtype: interior pointer");
  const std::size_t cached = CmiMemoryTypeCachedRanges();
  CmiPrintf("memtype: caching %s\n", CmiMemoryTypeCaching() ? "on (frees are seen)" : "off (frees not seen)");
  if (CmiMemoryTypeCaching() && cached < 1) CmiAbort("memtype: the range was not cached");
  if (!CmiMemoryTypeCaching() && cached != 0) CmiAbort("memtype: cached although frees are not seen");
  cudaFree(a);
  if (CmiMemoryTypeCaching() && CmiMemoryTypeCachedRanges() != cached - 1)
    CmiAbort("memtype: a freed range stayed in the cache");
  void* pinned = nullptr;
  cudaMallocHost(&pinned, 1 << 20);  // host memory, possibly at a formerly cached address
  if (CmiGetMemoryType(pinned) != CmiMemoryType::Host) CmiAbort("memtype: pinned host memory taken for CUDA");
  void* b = nullptr;
  cudaMalloc(&b, 1 << 20);  // often at a's old address
  if (CmiGetMemoryType(b) != CmiMemoryType::Cuda) CmiAbort("memtype: reused address not recognised");
  CmiPrintf("memtype: new allocation at %s address\n", a == b ? "the same" : "another");
  cudaFree(b);
  cudaFreeHost(pinned);
  CmiBarrier();
  if (CmiMyPe() == 0) {
    CmiPrintf("memtype ok\n");
    CmiExit(0);
  }
#else
  CmiAbort("memtype needs a build with CUDA");
#endif
}

}  // namespace testprog::memtype
