// sched: CsdScheduler(n) runs exactly n messages, CsdSchedulePoll the rest, and
// CsdScheduleUntil stops as soon as its condition holds.
#include "common.h"

namespace testprog::sched {

int h_count;
int count = 0;
void counter(void* msg) { ++count; CmiFree(msg); }
void send_self(int k) {
  for (int i = 0; i < k; ++i) CmiSyncSendAndFree(CmiMyPe(), msg_size<int>(), make_msg(h_count, i));
}
void start(const Args&) {
  h_count = CmiRegisterHandler(counter);
  send_self(10);
  CsdScheduler(3);
  if (count != 3) CmiAbort("sched: CsdScheduler(3) ran %d messages", count);
  CsdSchedulePoll();
  if (count != 10) CmiAbort("sched: CsdSchedulePoll left %d messages", 10 - count);
  send_self(5);
  CsdScheduleUntil([] { return count == 12; });
  if (count != 12) CmiAbort("sched: CsdScheduleUntil ran past its condition (%d)", count);
  CsdSchedulePoll();
  if (count != 15) CmiAbort("sched: %d messages lost", 15 - count);
  CmiBarrier();
  if (CmiMyPe() == 0) {
    CmiPrintf("sched ok\n");
    CmiExit(0);
  }
}

}  // namespace testprog::sched
