/* Force-included (-include) when building the OSU micro-benchmarks against CUDA 13:
 * OSU 7.x calls cudaMemPrefetchAsync with CUDA 12's four arguments (device id); CUDA 13
 * takes a cudaMemLocation and flags. The macro maps the old call onto the new one. */
#include <cuda_runtime_api.h>
#if defined(CUDART_VERSION) && CUDART_VERSION >= 13000
#define cudaMemPrefetchAsync(ptr, count, dev, stream)                                               \
  cudaMemPrefetchAsync((ptr), (count),                                                             \
                       (struct cudaMemLocation){.type = cudaMemLocationTypeDevice, .id = (dev)}, 0, \
                       (stream))
#endif
