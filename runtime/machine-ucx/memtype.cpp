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
#include <cstring>
#include <type_traits>
#include <vector>

#include "cuda_driver.h"
#include "memtype_ranges.h"

#ifdef UCHARM_HAVE_CUDA
#include <ucm/api/ucm.h>
#include <uct/api/uct.h>
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
    sym(c.stream_get_ctx, "cuStreamGetCtx");
    c.ok = all && cu_init(0) == CUDA_SUCCESS;  // no GPU: everything is host
    // CUDA IPC and stream memory operations (cuda_ipc.cpp checks each before use).
    // The _v2 names are what cuda.h's macros select (CUDA 12 and 13).
    auto& i = c.ipc;
    sym(i.get_range, "cuMemGetAddressRange_v2"); sym(i.get_handle, "cuIpcGetMemHandle");
    sym(i.open_handle, "cuIpcOpenMemHandle_v2"); sym(i.close_handle, "cuIpcCloseMemHandle");
    sym(i.ctx_push, "cuCtxPushCurrent_v2"); sym(i.ctx_pop, "cuCtxPopCurrent_v2");
    sym(i.ctx_get_device, "cuCtxGetDevice"); sym(i.can_access_peer, "cuDeviceCanAccessPeer");
    sym(i.device_attr, "cuDeviceGetAttribute"); sym(i.bus_id, "cuDeviceGetPCIBusId");
    sym(i.by_bus_id, "cuDeviceGetByPCIBusId"); sym(i.stream_create, "cuStreamCreate");
    sym(i.stream_sync, "cuStreamSynchronize"); sym(i.memset_async, "cuMemsetD8Async");
    sym(i.copy_async, "cuMemcpyDtoDAsync_v2"); sym(i.write_value64, "cuStreamWriteValue64_v2");
    sym(i.wait_value64, "cuStreamWaitValue64_v2"); sym(i.p2p_attr, "cuDeviceGetP2PAttribute");
    sym(c.stream.mem_host_alloc, "cuMemHostAlloc"); sym(c.stream.launch_host_func, "cuLaunchHostFunc");
    sym(c.stream.mem_host_get_device_pointer, "cuMemHostGetDevicePointer_v2");
    sym(c.stream.copy_dtoh_async, "cuMemcpyDtoHAsync_v2"); sym(c.stream.copy_htod_async, "cuMemcpyHtoDAsync_v2");
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

#ifdef UCHARM_HAVE_CUDA
// Tells UCX's own memory-type cache about a CUDA range, through public UCT calls only.
// UCX fills that cache from its CUDA hooks, which miss some allocations (static cudart,
// memory allocated before UCX started, custom pools). While it looks empty, UCX 1.22
// sends small CUDA buffers down its host short path and crashes (seen on H200); turning
// it off instead costs 8x in GPU latency (8.4 -> 64 us). So each CUDA range found here
// is reported to it.
//
// How: uct_md_mem_query on a "cuda_cpy" memory domain. UCX's own slow-path detection
// is that same call, and the CUDA copy domain's answer updates the memory-type cache
// with the whole allocation (base address, length). The calls used (uct_query_components,
// uct_component_query, uct_md_config_read, uct_md_open, uct_md_mem_query) are public
// (uct/api/uct.h) with unchanged signatures from UCX 1.16 through 1.22. The private
// ucs_memtype_cache_update used before is not: it took 4 arguments up to 1.21 and 5 in
// 1.22, so building against another UCX failed. ucm has no public call that dispatches
// a memory-type event (ucm_dispatch_mem_type_alloc is in a private header).
class UcxRangeReporter {
 public:
  void report(std::uintptr_t start, std::size_t size) {
    if (!opened_) open();
    if (!md_ || size == 0) return;
    uct_md_mem_attr_t attr{};
    attr.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE;
    uct_md_mem_query(md_, reinterpret_cast<const void*>(start), size, &attr);  // the update is the point
  }

 private:
  // Finds the CUDA copy domain. Left open until exit: closing it from a static
  // destructor could run after UCX's own teardown.
  void open() {
    opened_ = true;
    uct_component_h* comps = nullptr;
    unsigned count = 0;
    if (uct_query_components(&comps, &count) != UCS_OK) return;
    for (unsigned i = 0; i < count && !md_; ++i) {
      uct_component_attr_t ca{};
      ca.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
      if (uct_component_query(comps[i], &ca) != UCS_OK || std::strcmp(ca.name, "cuda_cpy") != 0 ||
          ca.md_resource_count == 0)
        continue;
      std::vector<uct_md_resource_desc_t> mds(ca.md_resource_count);
      ca.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
      ca.md_resources = mds.data();
      uct_md_config_t* config = nullptr;
      if (uct_component_query(comps[i], &ca) != UCS_OK ||
          uct_md_config_read(comps[i], nullptr, nullptr, &config) != UCS_OK)
        continue;
      if (uct_md_open(comps[i], mds[0].md_name, config, &md_) != UCS_OK) md_ = nullptr;
      uct_config_release(config);
    }
    uct_release_component_list(comps);
  }
  bool opened_ = false;
  uct_md_h md_ = nullptr;
};
#endif

class MemoryTypeCache {
 public:
  MemoryType query(const void* p) {
#ifdef UCHARM_HAVE_CUDA
    if (!init_done_) init();
    if (!cuda_) return MemoryType::Host;
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    if (ranges_.known_device(a)) return MemoryType::Cuda;
    CUmemorytype type{};
    CUdeviceptr start = 0;
    std::size_t size = 0;
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                   CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void* out[] = {&type, &start, &size};
    if (cuda_driver().get_attrs(3, attrs, out, static_cast<CUdeviceptr>(a)) != CUDA_SUCCESS || type != CU_MEMORYTYPE_DEVICE)
      return MemoryType::Host;
    ranges_.learn(static_cast<std::uintptr_t>(start), size);
    if (ranges_.needs_report(static_cast<std::uintptr_t>(start), size))
      reporter_.report(static_cast<std::uintptr_t>(start), size);
    return MemoryType::Cuda;
#else
    (void)p;
    return MemoryType::Host;
#endif
  }

  std::size_t cached() const { return ranges_.known_ranges(); }
  bool caching() const { return ranges_.frees_seen(); }

 private:
#ifdef UCHARM_HAVE_CUDA
  // Memory was freed: forget it, and that it was reported to UCX (see MemtypeRanges).
  static void on_free(ucm_event_type_t, ucm_event_t* ev, void* arg) {
    static_cast<MemoryTypeCache*>(arg)->ranges_.forget(reinterpret_cast<std::uintptr_t>(ev->mem_type.address),
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
    ranges_.set_frees_seen(true);
    query(reinterpret_cast<const void*>(probe));
    cu.mem_free(probe);
    ranges_.set_frees_seen(ranges_.known_ranges() == 0);
    ranges_.clear();
  }
  UcxRangeReporter reporter_;
#endif
  bool init_done_ = false;
  bool cuda_ = false;
  MemtypeRanges ranges_{false};  // frees seen: decided by init()
};

MemoryTypeCache g_memtypes;

}  // namespace

MemoryType LrtsMemoryType(const void* ptr) { return g_memtypes.query(ptr); }
std::size_t LrtsMemoryTypeCachedRanges() { return g_memtypes.cached(); }
bool LrtsMemoryTypeCaching() { return g_memtypes.caching(); }
const char* LrtsMemoryTypeName(MemoryType t) { return t == MemoryType::Cuda ? "cuda" : "host"; }

}  // namespace ucharm::machine
