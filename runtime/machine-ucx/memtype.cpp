// Host or CUDA for a pointer. The CUDA driver is opened at run time (dlopen), so the
// same binary runs where there is no GPU or driver: then everything is host.
// Device ranges are cached (start -> end) and dropped when UCX's memory hooks report that
// memory freed, so an address reused by a new allocation is asked about again (the
// reference implementation's cache never evicts). The hooks do not see every free (not
// those of a statically linked CUDA runtime, for one), so at start-up the cache checks
// that a driver-level free reaches it; if not, nothing is cached and every question
// goes to the driver (about 0.1-0.3 us). Non-SMP: the cache belongs to the PE's thread, which is also the one
// that frees (UCM calls its handlers in the freeing thread).
#include <ucharm/machine.h>

#include <dlfcn.h>

#include <cstdint>
#include <iterator>
#include <map>
#include <type_traits>

#include "cuda_driver.h"

#ifdef UCHARM_HAVE_CUDA
#include <ucm/api/ucm.h>
#include <ucs/memory/memtype_cache.h>
#endif

namespace ucharm::machine {

#ifdef UCHARM_HAVE_CUDA
const CudaDriver& cuda_driver() {
  static const CudaDriver d = [] {
    CudaDriver c;
    void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return c;
    auto sym = [lib](auto& fn, const char* name) { fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name)); return fn != nullptr; };
    CUresult (*cu_init)(unsigned) = nullptr;
    bool all = sym(cu_init, "cuInit") && sym(c.get_attrs, "cuPointerGetAttributes") &&
               sym(c.ctx_get_current, "cuCtxGetCurrent") && sym(c.mem_alloc, "cuMemAlloc_v2") &&
               sym(c.mem_free, "cuMemFree_v2") && sym(c.event_create, "cuEventCreate") &&
               sym(c.event_record, "cuEventRecord") && sym(c.event_query, "cuEventQuery") &&
               sym(c.event_destroy, "cuEventDestroy_v2") && sym(c.error_name, "cuGetErrorName");
    c.ok = all && cu_init(0) == CUDA_SUCCESS;  // no GPU: everything is host
    return c;
  }();
  return d;
}

const char* CudaDriver::name_of(CUresult r) const {
  const char* s = nullptr;
  return error_name && error_name(r, &s) == CUDA_SUCCESS && s ? s : "unknown CUDA error";
}
#endif

namespace {

class MemoryTypeCache {
 public:
  MemoryType query(const void* p) {
#ifdef UCHARM_HAVE_CUDA
    if (!init_done_) init();
    if (!cuda_) return MemoryType::Host;
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto it = device_.upper_bound(a);
    if (it != device_.begin()) {
      --it;
      if (a < it->second) return MemoryType::Cuda;
    }
    CUmemorytype type{};
    CUdeviceptr start = 0;
    std::size_t size = 0;
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                   CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void* out[] = {&type, &start, &size};
    if (cuda_driver().get_attrs(3, attrs, out, static_cast<CUdeviceptr>(a)) != CUDA_SUCCESS || type != CU_MEMORYTYPE_DEVICE)
      return MemoryType::Host;
    if (evictable_ && size) device_[static_cast<std::uintptr_t>(start)] = static_cast<std::uintptr_t>(start) + size;
    tell_ucx(static_cast<std::uintptr_t>(start), size);
    return MemoryType::Cuda;
#else
    (void)p;
    return MemoryType::Host;
#endif
  }

  void evict(std::uintptr_t addr, std::size_t len) {
    // Drop every cached range overlapping [addr, addr + len).
    auto it = device_.upper_bound(addr);
    if (it != device_.begin()) --it;
    while (it != device_.end() && it->first < addr + (len ? len : 1)) {
      if (it->second > addr) it = device_.erase(it);
      else ++it;
    }
  }

  std::size_t cached() const { return device_.size(); }

#ifdef UCHARM_HAVE_CUDA
  // UCX keeps its own memory-type cache, filled by hooks that miss some allocations
  // (static cudart, early ones). While it looks empty, UCX 1.22 sends small CUDA buffers
  // down its host short path and crashes (seen on H200); turning it off instead costs 8x
  // in latency (8.4 -> 64 us). So every CUDA range found here is reported to it, once.
  void tell_ucx(std::uintptr_t start, std::size_t size) {
    auto it = reported_.upper_bound(start);
    if (it != reported_.begin() && std::prev(it)->first <= start && start + size <= std::prev(it)->second) return;
    reported_[start] = start + size;
    ucs_memtype_cache_update(reinterpret_cast<const void*>(start), size, UCS_MEMORY_TYPE_CUDA,
                             UCS_SYS_DEVICE_ID_UNKNOWN, 0);
  }
  std::map<std::uintptr_t, std::uintptr_t> reported_;  // ranges already in UCX's cache
#endif
  bool caching() const { return evictable_; }

 private:
#ifdef UCHARM_HAVE_CUDA
  static void on_free(ucm_event_type_t, ucm_event_t* ev, void* arg) {
    static_cast<MemoryTypeCache*>(arg)->evict(reinterpret_cast<std::uintptr_t>(ev->mem_type.address),
                                              ev->mem_type.size);
  }
  void init() {
    init_done_ = true;
    const CudaDriver& cu = cuda_driver();
    if (!cu.ok) return;
    cuda_ = true;
    if (ucm_set_event_handler(UCM_EVENT_MEM_TYPE_FREE, 0, on_free, this) != UCS_OK) return;
    // Do frees reach us? Allocate, cache, free through the driver, and look.
    CUcontext ctx = nullptr;
    CUdeviceptr probe = 0;
    if (cu.ctx_get_current(&ctx) != CUDA_SUCCESS || !ctx || cu.mem_alloc(&probe, 4096) != CUDA_SUCCESS)
      return;  // no context yet: cache nothing (correct, slower)
    evictable_ = true;
    query(reinterpret_cast<const void*>(probe));
    cu.mem_free(probe);
    evictable_ = device_.empty();
    device_.clear();
  }
#endif
  bool init_done_ = false;
  bool cuda_ = false;
  bool evictable_ = false;
  std::map<std::uintptr_t, std::uintptr_t> device_;  // start -> end
};

MemoryTypeCache g_memtypes;

}  // namespace

MemoryType LrtsMemoryType(const void* ptr) { return g_memtypes.query(ptr); }
std::size_t LrtsMemoryTypeCachedRanges() { return g_memtypes.cached(); }
bool LrtsMemoryTypeCaching() { return g_memtypes.caching(); }
const char* LrtsMemoryTypeName(MemoryType t) { return t == MemoryType::Cuda ? "cuda" : "host"; }

}  // namespace ucharm::machine
