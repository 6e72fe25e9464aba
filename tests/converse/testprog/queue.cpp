// queue: priorities and expedited messages through the real scheduler on one PE.
#include "common.h"

namespace testprog::queue {

int h_rec;
std::vector<int> order;
void rec(void* msg) {
  order.push_back(payload<int>(msg));
  CmiFree(msg);
  if (order.size() == 6) {
    const std::vector<int> want = {5, 3, 1, 2, 4, 6};
    if (order != want) CmiAbort("queue: wrong order");
    CmiPrintf("queue ok\n");
    CmiExit(0);
  }
}
void start(const Args&) {
  h_rec = CmiRegisterHandler(rec);
  if (CmiMyPe() != 0) return;
  auto put = [](int tag, int prio, bool exp) {
    void* m = make_msg(h_rec, tag);
    CmiSetPriority(m, prio);
    if (exp) CmiSetExpedited(m);
    CmiSyncSendAndFree(0, msg_size<int>(), m);
  };
  put(1, 0, false); put(2, 0, false); put(3, -5, false);
  put(4, 7, false); put(5, 9, true); put(6, 8, false);
}

}  // namespace testprog::queue
