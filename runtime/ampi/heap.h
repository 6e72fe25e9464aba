// The program's heap: while a rank runs its own code, malloc and friends allocate in the
// rank's isomalloc slice (memory at the same addresses in every process), so the rank's
// heap moves with it. Runtime code (every PMPI_X, the handlers, UCX) uses glibc's heap.
// Private to runtime/ampi; the interposed functions are in heap.cpp.
#pragma once

#include <ucharm/converse.h>

#include <atomic>

namespace ampi::heap {

// The slice that allocations come from now; nullptr: glibc's heap. Per OS thread: a PE's
// ranks are user-level threads of its one OS thread, while other threads of the process
// (UCX's progress thread, PMIx's) must never allocate in a rank's slice. Switched only by
// the scopes below and by the rank threads' start.
// Initial-exec TLS (one load, no call) where malloc reads it on every call; AddressSanitizer's
// own TLS fills glibc's static TLS surplus, so there the default model (a test dlopens the
// library).
#if defined(__SANITIZE_ADDRESS__)
#define UCHARM_AMPI_HEAP_TLS
#else
#define UCHARM_AMPI_HEAP_TLS __attribute__((tls_model("initial-exec")))
#endif
extern thread_local CmiIsoSlice* g_active UCHARM_AMPI_HEAP_TLS;

// Threads the program starts (OpenMP, std::thread, a task pool) allocate from glibc's heap
// (g_active is null in them), but they may free or resize the rank's blocks while the rank
// allocates: a slice's heap is then used under a lock. Until the first such thread is
// started (pthread_create in the program's code or its libraries, heap.cpp), no lock is
// taken, so ranks that start no threads pay nothing. Never cleared.
extern std::atomic<bool> g_threads;

// Takes the slice's lock (a spin lock) and returns its word (heap.cpp).
std::atomic<int>* lock_slice(const CmiIsoSlice* slice);

// Holds the slice's lock while it lives, once g_threads is set.
class SliceLock {
 public:
  explicit SliceLock(const CmiIsoSlice* slice)
      : word_(g_threads.load(std::memory_order_relaxed) ? lock_slice(slice) : nullptr) {}
  ~SliceLock() {
    if (word_) word_->store(0, std::memory_order_release);
  }
  SliceLock(const SliceLock&) = delete;
  SliceLock& operator=(const SliceLock&) = delete;

 private:
  std::atomic<int>* word_ = nullptr;
};

// Entering the runtime from the program (the generated PMPI_X wrappers): glibc's heap until
// the call returns, whatever it switches to meanwhile.
class RuntimeScope {
 public:
  RuntimeScope() : saved_(g_active) { g_active = nullptr; }
  ~RuntimeScope() { g_active = saved_; }
  CmiIsoSlice* saved() const { return saved_; }  // the program's heap before the call
  RuntimeScope(const RuntimeScope&) = delete;
  RuntimeScope& operator=(const RuntimeScope&) = delete;

 private:
  CmiIsoSlice* saved_;
};

// Calling the program back from the runtime (user ops, attribute callbacks, error handlers,
// generalized-request callbacks): what it allocates belongs to the rank (`slice`, or the
// running rank's when null).
class UserScope {
 public:
  explicit UserScope(CmiIsoSlice* slice);
  ~UserScope() { g_active = saved_; }
  UserScope(const UserScope&) = delete;
  UserScope& operator=(const UserScope&) = delete;

 private:
  CmiIsoSlice* saved_;
};

// pthread_create (threads.cpp) is starting a thread from `caller` while `active` was the
// heap: a thread of the program (not the runtime's own) makes slice heaps take their lock.
void note_thread_start(CmiIsoSlice* active, const void* caller);
// Whether `caller` is code of the runtime's own libraries (UCX, PMIx, ...), whose threads
// never touch a rank's memory; whether it is the OpenMP runtime's (its state is the OS
// thread's, found before any rank runs).
bool runtime_thread(const void* caller);
bool is_process_code(const void* caller);
void find_process_code();  // once the program's libraries are loaded (none found before)

// Once per process, before any rank runs: libc state that is allocated lazily on first use
// and shared by the process (stdio buffers, the time zone) is allocated now, from glibc's
// heap, so that no rank's first printf puts a process-wide buffer into its slice.
void prepare_process();

// Before a slice leaves this process: libc state of the process that a rank's code made glibc
// allocate in it, and that glibc would read later, is given back now (the record of the last
// failed dlopen/dlsym: a successful call frees it).
void release_process_state();

}  // namespace ampi::heap
