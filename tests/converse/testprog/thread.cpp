// thread: on every PE a thread suspends until a message from the previous PE awakens it;
// it yields in between; a second thread proves CthYield lets others run.
#include "common.h"

namespace testprog::thread {

int h_token, h_finish;
CthThread waiter = nullptr;
int token = -1, finished = 0;
bool other_ran = false;

void waiter_body(void*) {
  if (CthSelf() != waiter) CmiAbort("thread: CthSelf is wrong");
  while (token < 0) CthSuspend();  // awakened by the token handler
  if (token != (CmiMyPe() + CmiNumPes() - 1) % CmiNumPes())
    CmiAbort("thread: token from %d, expected the previous PE", token);
  CthYield();
  if (!other_ran) CmiAbort("thread: CthYield did not let the other thread run");
  void* m = make_msg(h_finish, CmiMyPe());
  CmiSyncSendAndFree(0, msg_size<int>(), m);
}
void other_body(void*) { other_ran = true; }
void on_token(void* msg) {
  token = payload<int>(msg);
  CmiFree(msg);
  CthAwaken(waiter);
  CthAwaken(waiter);  // twice is harmless
}
void on_finish(void* msg) {
  CmiFree(msg);
  if (++finished == CmiNumPes()) {
    CmiPrintf("thread ok\n");
    CmiExit(0);
  }
}
void start(const Args&) {
  h_token = CmiRegisterHandler(on_token);
  h_finish = CmiRegisterHandler(on_finish);
  waiter = CthCreate(waiter_body, nullptr, 64 * 1024);
  CthAwaken(waiter);
  CthAwaken(CthCreate(other_body, nullptr));
  void* m = make_msg(h_token, CmiMyPe());
  CmiSyncSendAndFree((CmiMyPe() + 1) % CmiNumPes(), msg_size<int>(), m);
}

}  // namespace testprog::thread
