// threadstep: a thread that waits by taking the scheduler's steps itself
// (CsdScheduleStepInThread), as AMPI's blocking calls do. On every PE:
//  - a local message queued before the wait runs on the waiting thread's own stack;
//  - a thread's resumption at the head of the queue is left to the scheduler (the step
//    returns false without running it) and that thread then runs;
//  - with nothing to do, the step gives up after the idle spin (so that the PE can sleep);
//  - 200 tokens around the ring of PEs all arrive, whether their handler runs on the
//    waiting thread (it is spinning) or in the scheduler (it gave up and suspended).
#include "common.h"

#include <chrono>

namespace testprog::threadstep {

constexpr int kRounds = 200;
int h_local, h_token, h_finish;
CthThread waiter = nullptr;
bool local_ran = false, local_on_waiter = false, other_ran = false;
int tokens = 0, finished = 0;

void on_local(void* msg) {
  CmiFree(msg);
  local_ran = true;
  local_on_waiter = CthSelf() == waiter;
}
void other_body(void*) { other_ran = true; }
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
  // 4. Tokens around the ring, one per round.
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
  waiter = CthCreate(waiter_body, nullptr, 256 * 1024);
  CthAwaken(waiter);
}

}  // namespace testprog::threadstep
