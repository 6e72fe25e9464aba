// CUDA IPC mappings for device windows: thin wrappers over the machine layer (the core
// may call only Converse). See converse.h's "CUDA IPC mappings" section.
#include <ucharm/converse.h>
#include <ucharm/machine.h>

#include <cstring>

namespace lrts = ucharm::machine;

namespace {
// The two records are the same bytes; copied field by field to keep the layers apart.
lrts::IpcExport to_lrts(const CmiIpcHandle& h) {
  lrts::IpcExport e;
  static_assert(sizeof e.handle == sizeof h.handle && sizeof e.bus_id == sizeof h.bus_id);
  std::memcpy(e.handle, h.handle, sizeof e.handle);
  std::memcpy(e.bus_id, h.bus_id, sizeof e.bus_id);
  e.offset = h.offset;
  e.bytes = h.bytes;
  return e;
}
}  // namespace

const char* CmiIpcExport(const void* ptr, std::size_t bytes, CmiIpcHandle& out, void** ctx) {
  lrts::IpcExport e;
  void* c = nullptr;
  if (const char* err = lrts::LrtsIpcExport(ptr, bytes, e, c)) return err;
  std::memcpy(out.handle, e.handle, sizeof out.handle);
  std::memcpy(out.bus_id, e.bus_id, sizeof out.bus_id);
  out.offset = e.offset;
  out.bytes = e.bytes;
  *ctx = c;
  return nullptr;
}
const char* CmiIpcCanMap(void* ctx, const char* bus_id, bool* atomics) {
  return lrts::LrtsIpcCanMap(ctx, bus_id, *atomics);
}
const char* CmiIpcOpen(void* ctx, const CmiIpcHandle& h, void** ptr) { return lrts::LrtsIpcOpen(ctx, to_lrts(h), *ptr); }
void CmiIpcClose(void* ctx, const CmiIpcHandle& h) { lrts::LrtsIpcClose(ctx, to_lrts(h)); }
const char* CmiIpcAllocWords(void* ctx, std::size_t bytes, void** ptr) {
  return lrts::LrtsIpcAllocWords(ctx, bytes, *ptr);
}
void CmiIpcFreeWords(void* ctx, void* ptr) { lrts::LrtsIpcFreeWords(ctx, ptr); }
const char* CmiIpcStreamCopy(void* ctx, void* stream, void* dst, const void* src, std::size_t bytes) {
  return lrts::LrtsIpcStreamCopy(ctx, stream, dst, src, bytes);
}
const char* CmiIpcStreamWrite64(void* ctx, void* stream, void* addr, std::uint64_t value) {
  return lrts::LrtsIpcStreamWrite64(ctx, stream, addr, value);
}
const char* CmiIpcStreamWaitGeq64(void* ctx, void* stream, void* addr, std::uint64_t value) {
  return lrts::LrtsIpcStreamWaitGeq64(ctx, stream, addr, value);
}
const char* CmiIpcHostName() { return lrts::LrtsInfo().hostname.c_str(); }
