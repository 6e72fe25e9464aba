// User-level threads on Boost.Context fibers. A thread runs only when the scheduler
// dispatches its resume message (CthAwaken), and gives control back to whoever resumed
// it when it suspends or finishes. Stacks have a guard page (protected_fixedsize_stack).
// Stacks and thread records are pooled per PE: a finished thread's stack (and its record,
// with its resume message) serves the next CthCreate of the same size, so a short-lived
// thread (a threaded entry method, an AMPI nonblocking collective) costs no mmap, mprotect,
// munmap or fresh-page faults once the pool is warm.
// Migratable threads (CthCreateMigratable) keep their stack and record in an isomalloc
// slice instead: a suspended fiber is a pointer into its stack, so a byte copy of the
// slice at the same addresses resumes it elsewhere (the resume message, process-local,
// is made anew on arrival).
// Each thread has its own C++ exception state (see EhState), so that threads of one PE
// that block inside catch handlers do not corrupt each other's exceptions.
#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <cxxabi.h>
#include <ucharm/converse.h>

#include <cstring>
#include <new>
#include <utility>

#include "converse_internal.h"
#include "isomalloc.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace ctx = boost::context;
using ucharm::converse::pe_state;

namespace {
// AddressSanitizer must be told of every stack switch (Debian's Boost.Context does not do
// it), or it takes the fiber's stack for a wild one. No-ops in other builds.
struct StackBounds {
  const void* bottom = nullptr;
  std::size_t size = 0;
};
inline void switch_begin([[maybe_unused]] void** fake, [[maybe_unused]] const StackBounds& to) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(fake, to.bottom, to.size);
#endif
}
inline void switch_end([[maybe_unused]] void* fake, [[maybe_unused]] StackBounds* from) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(fake, from ? &from->bottom : nullptr, from ? &from->size : nullptr);
#endif
}
// libstdc++ keeps the stack of caught exceptions (what `throw;` and std::current_exception
// see) and std::uncaught_exceptions() per OS thread, in the __cxa_eh_globals that
// __cxa_get_globals returns (libsupc++'s unwind-cxx.h; x86-64 has no other fields). User-level
// threads share their OS thread, so each keeps its own copy, swapped in while it runs. In a
// migratable thread's record it travels with the slice: the exceptions it points to were
// allocated in the slice's heap (the thread's malloc).
struct EhState {
  void* caught = nullptr;
  unsigned int uncaught = 0;
};
struct CxaEhGlobals {
  void* caughtExceptions;
  unsigned int uncaughtExceptions;
};
inline CxaEhGlobals* eh_globals() { return reinterpret_cast<CxaEhGlobals*>(abi::__cxa_get_globals()); }
}  // namespace

struct CthThreadStruct {
  ctx::fiber self;     // the thread while it is suspended
  ctx::fiber resumer;  // whoever resumed it, while it runs
  CthVoidFn fn = nullptr;
  void* arg = nullptr;
  void* resume_msg = nullptr;  // preallocated: awakening allocates nothing
  bool queued = false;
  bool finished = false;
  StackBounds stack;          // this thread's stack
  StackBounds resumer_stack;  // the stack it returns to
  void* fake_stack = nullptr;  // ASan's, while suspended
  void* data = nullptr;        // CthSetData
  EhState eh;                  // its exception state while it does not run
  CmiIsoSlice* slice = nullptr;  // migratable: the slice holding this record and the stack
};

namespace {
// At most this many stacks (and records) wait for reuse on a PE; more are unmapped (freed).
constexpr std::size_t kPooledStacks = 16;
constexpr std::size_t kPooledThreads = 64;

// A Boost stack allocator over the PE's pool of stacks of `asked` bytes; it records where
// the stack lies (for the annotations).
struct PooledStack {
  std::size_t asked;
  CthThreadStruct* t;
  ctx::stack_context allocate() {
    auto& pool = pe_state().free_stacks;
    ctx::stack_context sc;
    auto it = pool.end();
    for (auto i = pool.begin(); i != pool.end(); ++i)
      if (i->asked == asked) it = i;  // the most recent one: its pages are likely warm
    if (it != pool.end()) {
      sc.size = it->mapped;
      sc.sp = it->sp;
      pool.erase(it);
#if defined(__SANITIZE_ADDRESS__)
      // The last thread's frames may have left poisoned redzones that no epilogue cleared.
      __asan_unpoison_memory_region(static_cast<char*>(sc.sp) - sc.size, sc.size);
#endif
    } else {
      sc = ctx::protected_fixedsize_stack(asked).allocate();
    }
    t->stack = {static_cast<char*>(sc.sp) - sc.size, sc.size};
    return sc;
  }
  void deallocate(ctx::stack_context& sc) noexcept {
    auto& pool = pe_state().free_stacks;
    if (pool.size() < kPooledStacks) {
      try {
        pool.push_back({asked, sc.size, sc.sp});
        return;
      } catch (...) {  // no memory for the pool entry: unmap it instead
      }
    }
    ctx::protected_fixedsize_stack(asked).deallocate(sc);
  }
};
}  // namespace

namespace ucharm::converse {

namespace {
// A migratable thread's record lives in its slice heap; the slice is its owner's.
void finish_migratable(CthThread t) {
  CmiIsoSlice* slice = t->slice;
  CmiFree(t->resume_msg);
  iso::local_word(slice) = nullptr;
  slice->thread = nullptr;
  t->~CthThreadStruct();
  CmiIsoFree(slice, t);
}

// Runs t until it suspends or ends (the caller is its resumer).
void run_thread(CthThread t) {
  PeState& s = pe_state();
  CthThread prev = s.current_thread;
  s.current_thread = t;
  void* fake = nullptr;
  CxaEhGlobals* g = eh_globals();
  const EhState outer{g->caughtExceptions, g->uncaughtExceptions};
  g->caughtExceptions = t->eh.caught;
  g->uncaughtExceptions = t->eh.uncaught;
  switch_begin(&fake, t->stack);
  t->self = std::move(t->self).resume();
  switch_end(fake, nullptr);
  t->eh = {g->caughtExceptions, g->uncaughtExceptions};
  g->caughtExceptions = outer.caught;
  g->uncaughtExceptions = outer.uncaught;
  s.current_thread = prev;
  if (t->finished) {
    if (t->slice) {
      finish_migratable(t);
      return;
    }
    // Its record and resume message serve the next CthCreate (not if it is still queued:
    // that message would resume whatever thread the record became).
    if (!t->queued && s.free_threads.size() < kPooledThreads) {
      s.free_threads.push_back(t);
      return;
    }
    CmiFree(t->resume_msg);
    delete t;
  }
}
}  // namespace

void thread_resume_handler(void* msg) {
  CthThread t = *reinterpret_cast<CthThread*>(CmiMsgPayload(msg));
  CmiFree(msg);  // the queue's reference; the thread keeps its own
  t->queued = false;
  run_thread(t);
}

}  // namespace ucharm::converse

void CthResume(CthThread t) {
  if (!t) CmiAbort("CthResume: null thread");
  if (t->finished) CmiAbort("CthResume: the thread has already finished");
  if (pe_state().current_thread) CmiAbort("CthResume called from a user-level thread (use CthAwaken)");
  if (t->queued) return;  // the queue resumes it: running it now too would resume it twice
  ucharm::converse::run_thread(t);
}

CthThread CthCreate(CthVoidFn fn, void* arg, std::size_t stacksize) {
  auto& s = pe_state();
  CthThread t;
  if (!s.free_threads.empty()) {
    t = s.free_threads.back();
    s.free_threads.pop_back();
    t->queued = t->finished = false;
    t->fake_stack = nullptr;
    t->data = nullptr;
    t->eh = {};
  } else {
    t = new CthThreadStruct;
    t->resume_msg = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(CthThread));
    CmiSetHandler(t->resume_msg, s.h_thread_resume);
    CmiMsgHeaderOf(t->resume_msg)->srcpe = CmiMyPe();
    *reinterpret_cast<CthThread*>(CmiMsgPayload(t->resume_msg)) = t;
  }
  t->fn = fn;
  t->arg = arg;
  std::size_t size = stacksize ? stacksize : s.options.stack_size;
  t->self = ctx::fiber(std::allocator_arg, PooledStack{size, t},
                       [t](ctx::fiber&& resumer) {
                         switch_end(nullptr, &t->resumer_stack);
                         t->resumer = std::move(resumer);
                         t->fn(t->arg);
                         t->finished = true;
                         switch_begin(nullptr, t->resumer_stack);  // this stack ends here
                         return std::move(t->resumer);
                       });
  return t;
}

CthThread CthSelf() { return pe_state().current_thread; }

void CthSuspend() {
  CthThread t = pe_state().current_thread;
  if (!t) CmiAbort("CthSuspend called outside a user-level thread (from a plain handler)");
  switch_begin(&t->fake_stack, t->resumer_stack);
  t->resumer = std::move(t->resumer).resume();
  switch_end(t->fake_stack, &t->resumer_stack);
}

void CthAwakenPrio(CthThread t, int prio) {
  if (!t) CmiAbort("CthAwaken: null thread");
  if (t->finished) CmiAbort("CthAwaken: the thread has already finished");
  if (t->queued) return;  // already scheduled to run: awakening twice is a no-op
  t->queued = true;
  CmiReference(t->resume_msg);  // the queue's reference; the handler must not free it
  CmiMsgHeader* h = CmiMsgHeaderOf(t->resume_msg);
  h->prio = prio;
  h->size = static_cast<std::uint32_t>(CmiMsgHeaderSizeBytes + sizeof(CthThread));
  CsdEnqueue(t->resume_msg);
}

void CthAwaken(CthThread t) { CthAwakenPrio(t, 0); }

void CthYield() {
  CthThread t = CthSelf();
  if (!t) CmiAbort("CthYield called outside a user-level thread");
  CthAwaken(t);
  CthSuspend();
}

void CthSetData(CthThread t, void* data) { t->data = data; }
void* CthGetData(CthThread t) { return t ? t->data : nullptr; }

// ---- migratable threads ------------------------------------------------------------------
namespace {
namespace iso = ucharm::converse::iso;

// Boost stack allocator over the slice's stack area: the slice owns the memory.
struct SliceStack {
  std::uintptr_t lo, hi;
  ctx::stack_context allocate() {
    ctx::stack_context sc;
    sc.size = hi - lo;
    sc.sp = reinterpret_cast<void*>(hi);
    return sc;
  }
  void deallocate(ctx::stack_context&) noexcept {}
};

void* new_resume_msg(CthThread t) {
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(CthThread));
  CmiSetHandler(m, pe_state().h_thread_resume);
  CmiMsgHeaderOf(m)->srcpe = CmiMyPe();
  *reinterpret_cast<CthThread*>(CmiMsgPayload(m)) = t;
  iso::local_word(t->slice) = m;
  return m;
}

// A suspended fiber is the address of its saved registers, the lowest live stack byte.
std::uintptr_t saved_sp(const ctx::fiber& f) {
  static_assert(sizeof(ctx::fiber) == sizeof(void*), "boost::context::fiber is one fcontext pointer");
  void* fctx;
  std::memcpy(&fctx, &f, sizeof fctx);
  return reinterpret_cast<std::uintptr_t>(fctx);
}

CmiIsoSlice* packable(CthThread t, const char* who) {
  if (!t || !t->slice) CmiAbort("%s: not a migratable thread (CthCreateMigratable)", who);
  if (t->finished) CmiAbort("%s: the thread has finished", who);
  if (t == pe_state().current_thread) CmiAbort("%s: the thread is running; it must be suspended (CthSuspend)", who);
  if (t->queued) CmiAbort("%s: the thread is queued to resume (CthAwaken); pack it before awakening it", who);
  std::uintptr_t sp = saved_sp(t->self);
  if (!sp) CmiAbort("%s: the thread is not suspended", who);
  // Margin below the saved registers (the red zone; nothing lives there, it costs bytes).
  std::uintptr_t live = sp - 256;
  t->slice->stack_live = live < t->slice->stack_lo ? t->slice->stack_lo : live;
  return t->slice;
}
}  // namespace

CthThread CthCreateMigratable(CthVoidFn fn, void* arg, CmiIsoSlice* slice, std::size_t stacksize) {
  if (!slice || CmiIsoSliceOf(slice) != slice) CmiAbort("CthCreateMigratable: not a live isomalloc slice");
  if (slice->thread) CmiAbort("CthCreateMigratable: slice %d already holds a thread", slice->id);
  std::size_t size = stacksize ? stacksize : pe_state().options.stack_size;
  if (!iso::make_stack(slice, size)) CmiAbort("CthCreateMigratable: %s", CmiIsomallocError());
  void* mem = CmiIsoMalloc(slice, sizeof(CthThreadStruct));
  if (!mem) CmiAbort("CthCreateMigratable: slice %d is full", slice->id);
  CthThread t = new (mem) CthThreadStruct;
  t->slice = slice;
  slice->thread = t;
  t->fn = fn;
  t->arg = arg;
  t->resume_msg = new_resume_msg(t);
  t->stack = {reinterpret_cast<void*>(slice->stack_lo), slice->stack_hi - slice->stack_lo};
  t->self = ctx::fiber(std::allocator_arg, SliceStack{slice->stack_lo, slice->stack_hi},
                       [t](ctx::fiber&& resumer) {
                         switch_end(nullptr, &t->resumer_stack);
                         t->resumer = std::move(resumer);
                         t->fn(t->arg);
                         t->finished = true;
                         switch_begin(nullptr, t->resumer_stack);
                         return std::move(t->resumer);
                       });
  return t;
}

CmiIsoSlice* CthMigratableSlice(CthThread t) { return t ? t->slice : nullptr; }

std::size_t CthPackMigratableSize(CthThread t) {
  return CmiIsoSlicePackSize(packable(t, "CthPackMigratableSize"));
}

std::size_t CthPackMigratable(CthThread t, void* dest) {
  return CmiIsoSlicePack(packable(t, "CthPackMigratable"), dest);
}

CthThread CthUnpackMigratable(const void* src, std::size_t len) {
  CmiIsoSlice* slice = CmiIsoSliceUnpack(src, len);
  if (!slice) return nullptr;
  auto t = static_cast<CthThread>(slice->thread);
  if (!t || t->slice != slice) {
    iso::set_error("CthUnpackMigratable: the pack holds a slice without a thread");
    CmiIsoSliceRelease(slice);
    return nullptr;
  }
  // Process-local state is made here; the rest arrived with the slice.
  t->resume_msg = new_resume_msg(t);
  t->queued = false;
  t->fake_stack = nullptr;
  return t;
}

void CthMigratableRelease(CthThread t) {
  CmiIsoSlice* slice = packable(t, "CthMigratableRelease");
  CmiFree(t->resume_msg);
  iso::local_word(slice) = nullptr;
  // The record and fiber are left as bytes: destroying the fiber would unwind the thread.
  CmiIsoSliceRelease(slice);
}
