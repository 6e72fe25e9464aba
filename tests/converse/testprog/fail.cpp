// Failure modes: each must end every PE with a clear message and a non-zero exit.
#include "common.h"

#include <signal.h>

namespace testprog::fail {

namespace {
int last() { return CmiNumPes() - 1; }
}  // namespace

void abort(const Args&) {
  CmiBarrier();
  if (CmiMyPe() == last()) CmiAbort("test abort requested on PE %d", last());
}
void killpeer(const Args&) {
  CmiBarrier();
  if (CmiMyPe() == last()) ::raise(SIGKILL);
}
void exitcode(const Args&) {
  CmiBarrier();
  if (CmiMyPe() == last()) CmiExit(3);
}
void badpe(const Args&) {
  CmiBarrier();
  if (CmiMyPe() == 0) {
    void* m = make_msg(0, 0);
    CmiSyncSendAndFree(CmiNumPes(), msg_size<int>(), m);
  }
}
void badhandler(const Args&) {
  CmiBarrier();
  if (CmiMyPe() == 0) {
    void* m = make_msg(999, 0);
    CmiSyncSendAndFree(last(), msg_size<int>(), m);
  }
}
void suspendmain(const Args&) {
  CmiBarrier();
  if (CmiMyPe() == 0) CthSuspend();
}
void streamnogpu(const Args&) {  // a stream named where CUDA is not available
  CmiBarrier();
  if (CmiMyPe() == 0) {
    static char buf[64];
    CmiChannelSend(last(), buf, sizeof buf, CmiChannelTag(9, 0), nullptr, reinterpret_cast<void*>(0x1234));
  }
}

}  // namespace testprog::fail
