// User-level threads on Boost.Context fibers. A thread runs only when the scheduler
// dispatches its resume message (CthAwaken), and gives control back to whoever resumed
// it when it suspends or finishes. Stacks have a guard page (protected_fixedsize_stack).
#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <ucharm/converse.h>

#include <utility>

#include "converse_internal.h"

#if defined(__SANITIZE_ADDRESS__)
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
};

namespace {
// protected_fixedsize_stack that records where the stack lies (for the annotations).
struct RecordingStack {
  ctx::protected_fixedsize_stack inner;
  CthThreadStruct* t;
  ctx::stack_context allocate() {
    ctx::stack_context sc = inner.allocate();
    t->stack = {static_cast<char*>(sc.sp) - sc.size, sc.size};
    return sc;
  }
  void deallocate(ctx::stack_context& sc) noexcept { inner.deallocate(sc); }
};
}  // namespace

namespace ucharm::converse {

namespace {
// Runs t until it suspends or ends (the caller is its resumer).
void run_thread(CthThread t) {
  PeState& s = pe_state();
  CthThread prev = s.current_thread;
  s.current_thread = t;
  void* fake = nullptr;
  switch_begin(&fake, t->stack);
  t->self = std::move(t->self).resume();
  switch_end(fake, nullptr);
  s.current_thread = prev;
  if (t->finished) {
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
  auto* t = new CthThreadStruct;
  t->fn = fn;
  t->arg = arg;
  t->resume_msg = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(CthThread));
  CmiSetHandler(t->resume_msg, s.h_thread_resume);
  CmiMsgHeaderOf(t->resume_msg)->srcpe = CmiMyPe();
  *reinterpret_cast<CthThread*>(CmiMsgPayload(t->resume_msg)) = t;
  std::size_t size = stacksize ? stacksize : s.options.stack_size;
  t->self = ctx::fiber(std::allocator_arg, RecordingStack{ctx::protected_fixedsize_stack(size), t},
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
