// User-level threads on Boost.Context fibers. A thread runs only when the scheduler
// dispatches its resume message (CthAwaken), and gives control back to whoever resumed
// it when it suspends or finishes. Stacks have a guard page (protected_fixedsize_stack).
#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <ucharm/converse.h>

#include <utility>

#include "converse_internal.h"

namespace ctx = boost::context;
using ucharm::converse::pe_state;

struct CthThreadStruct {
  ctx::fiber self;     // the thread while it is suspended
  ctx::fiber resumer;  // whoever resumed it, while it runs
  CthVoidFn fn = nullptr;
  void* arg = nullptr;
  void* resume_msg = nullptr;  // preallocated: awakening allocates nothing
  bool queued = false;
  bool finished = false;
};

namespace ucharm::converse {

void thread_resume_handler(void* msg) {
  CthThread t = *reinterpret_cast<CthThread*>(CmiMsgPayload(msg));
  CmiFree(msg);  // the queue's reference; the thread keeps its own
  t->queued = false;
  PeState& s = pe_state();
  CthThread prev = s.current_thread;
  s.current_thread = t;
  t->self = std::move(t->self).resume();
  s.current_thread = prev;
  if (t->finished) {
    CmiFree(t->resume_msg);
    delete t;
  }
}

}  // namespace ucharm::converse

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
  t->self = ctx::fiber(std::allocator_arg, ctx::protected_fixedsize_stack(size),
                       [t](ctx::fiber&& resumer) {
                         t->resumer = std::move(resumer);
                         t->fn(t->arg);
                         t->finished = true;
                         return std::move(t->resumer);
                       });
  return t;
}

CthThread CthSelf() { return pe_state().current_thread; }

void CthSuspend() {
  CthThread t = pe_state().current_thread;
  if (!t) CmiAbort("CthSuspend called outside a user-level thread (from a plain handler)");
  t->resumer = std::move(t->resumer).resume();
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
