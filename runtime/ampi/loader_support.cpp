// What the loader (loader.cpp, linked into each program's executable) needs from the
// library and from libucharm-converse: the heap switch (heap.h) is hidden, and a program
// links libucharm-ampi only (ampicc), not converse.
#include "heap.h"

#include <ucharm/converse.h>

#pragma GCC visibility push(default)
namespace ampi::loader {

// Makes `slice` the heap that malloc & co. use (nullptr: glibc's) and returns the previous.
CmiIsoSlice* switch_heap(CmiIsoSlice* slice) {
  CmiIsoSlice* saved = heap::g_active;
  heap::g_active = slice;
  return saved;
}

bool isomalloc_init(int& argc, char** argv) { return CmiIsomallocInit(argc, argv); }
void* slice_alloc_pages(CmiIsoSlice* slice, std::size_t bytes) {
  heap::SliceLock lock(slice);  // a thread of the program may be freeing a block of it
  return CmiIsoMemalign(slice, 4096, bytes);
}
void slice_free(CmiIsoSlice* slice, void* p) {
  heap::SliceLock lock(slice);
  CmiIsoFree(slice, p);
}
CmiIsoSlice* slice_of(const void* p) { return CmiIsoSliceOf(p); }
std::size_t slice_bytes() { return CmiIsomallocSliceBytes(); }

}  // namespace ampi::loader
#pragma GCC visibility pop
