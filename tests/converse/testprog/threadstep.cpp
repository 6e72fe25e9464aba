// threadstep: a thread that waits by taking the scheduler's steps itself
// (CsdScheduleStepInThread), as AMPI's blocking calls do. On every PE:
//  - a local message queued before the wait runs on the waiting thread's own stack;
//  - a thread's resumption at the head of the queue is left to the scheduler (the step
//    returns false without running it) and that thread then runs;
//  - with nothing to do, the step gives up after the idle spin (so that the PE can sleep);
//  - a step that returns false has run nothing: work run by its periodic poll (a foreign
//    item that makes the waiter's condition true and awakens another thread, whose
//    resumption then heads the queue) is followed by true, so that the waiter looks at its
//    condition again instead of suspending unwoken; tried at every phase of the poll period;
//  - 200 tokens around the ring of PEs all arrive, whether their handler runs on the
//    waiting thread (it is spinning) or in the scheduler (it gave up and suspended).
#include "common.h"

#include <chrono>

namespace testprog::threadstep {

constexpr int kRounds = 200;
int h_local, h_token, h_finish, h_noop;
CthThread waiter = nullptr;
bool local_ran = false, local_on_waiter = false, other_ran = false;
int tokens = 0, finished = 0;

void on_local(void* msg) {
  CmiFree(msg);
  local_ran = true;
  local_on_waiter = CthSelf() == waiter;
}
void other_body(void*) { other_ran = true; }

// 4: what ran (no-op messages, the foreign item), and the item's condition.
int runs = 0;
bool item_done = false;
void on_noop(void* msg) {
  CmiFree(msg);
  ++runs;
}
void other_noop(void*) {}
void item_run(CmiForeignWork*) {
  ++runs;
  item_done = true;
  CthAwaken(CthCreate(other_noop, nullptr));  // a resumption now heads the empty queue
}
void send_token() {
  CmiSyncSendAndFree((CmiMyPe() + 1) % CmiNumPes(), msg_size<int>(), make_msg(h_token, CmiMyPe()));
}
void on_token(void* msg) {
  const int from = payload<int>(msg);
  CmiFree(msg);
  if (from != (CmiMyPe() + CmiNumPes() - 1) % CmiNumPes()) CmiAbort("threadstep: token from PE %d", from);
  ++tokens;
  // On the waiting thread's stack there is nobody to wake; from the scheduler, wake it.
  if (CthSelf() != waiter) CthAwaken(waiter);
}

// Waits as AMPI does: steps while they can be taken, suspends otherwise.
template <class Done>
void wait_until(Done done) {
  while (!done())
    if (!CsdScheduleStepInThread()) CthSuspend();
}

void waiter_body(void*) {
  // 1. A queued local message runs here, on this stack.
  CmiSyncSendAndFree(CmiMyPe(), msg_size<int>(), make_msg(h_local, 0));
  if (!CsdScheduleStepInThread()) CmiAbort("threadstep: the step refused a plain local message");
  if (!local_ran || !local_on_waiter) CmiAbort("threadstep: the local message did not run on the waiting thread");
  // 2. Another thread's resumption: not run by the step; the scheduler runs it.
  CthAwaken(CthCreate(other_body, nullptr));
  if (CsdScheduleStepInThread()) CmiAbort("threadstep: the step took a thread's resumption");
  if (other_ran) CmiAbort("threadstep: the other thread ran inside the step");
  CthYield();
  if (!other_ran) CmiAbort("threadstep: the other thread never ran");
  // 3. Nothing to do: the step gives up after the idle spin (+idle-spin-us). One that never
  // does hangs the job until the launcher's timeout; the line below says why.
  const auto t0 = std::chrono::steady_clock::now();
  bool told = false;
  while (CsdScheduleStepInThread())
    if (!told && std::chrono::steady_clock::now() - t0 > std::chrono::seconds(10)) {
      CmiPrintf("threadstep: PE %d: an idle step has not given up after 10 s (the PE cannot sleep)\n", CmiMyPe());
      told = true;
    }
  // 4. Work run by the step's periodic poll, at every phase of the period: k local
  // messages are queued, then a foreign item (run only by a poll while the queue is not
  // empty); the step that runs it must not return false.
  for (int k = 0; k < 260; ++k) {
    for (int i = 0; i < k; ++i) CmiSyncSendAndFree(CmiMyPe(), msg_size<int>(), make_msg(h_noop, 0));
    CmiForeignWork item{};
    item.run = item_run;
    item_done = false;
    CmiPushForeignWork(&item);
    while (!item_done) {
      const int before = runs;
      if (!CsdScheduleStepInThread()) {
        if (runs != before)
          CmiAbort("threadstep: a step returned false (suspend) after running work (%d queued messages)", k);
        CthYield();
      }
    }
    CthYield();  // the awakened thread runs
    while (CsdScheduleStepInThread()) {
    }
  }
  // 5. Tokens around the ring, one per round.
  for (int round = 1; round <= kRounds; ++round) {
    if (CmiMyPe() == 0) send_token();
    wait_until([round] { return tokens >= round; });
    if (CmiMyPe() != 0) send_token();
  }
  CmiSyncSendAndFree(0, msg_size<int>(), make_msg(h_finish, CmiMyPe()));
}

void on_finish(void* msg) {
  CmiFree(msg);
  if (++finished == CmiNumPes()) {
    CmiPrintf("threadstep ok\n");
    CmiExit(0);
  }
}

void start(const Args&) {
  h_local = CmiRegisterHandler(on_local);
  h_token = CmiRegisterHandler(on_token);
  h_finish = CmiRegisterHandler(on_finish);
  h_noop = CmiRegisterHandler(on_noop);
  waiter = CthCreate(waiter_body, nullptr, 256 * 1024);
  CthAwaken(waiter);
}

}  // namespace testprog::threadstep
