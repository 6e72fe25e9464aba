// async: CmiAsyncSend of eager and rendezvous-size messages to the next PE (itself when
// alone); the sender keeps the buffer until CmiAsyncMsgSent says the send is done.
#include "common.h"

namespace testprog::async {

struct Head { std::uint64_t len; int src; };
int h_data, h_done;
int received = 0, done = 0;
void data(void* msg) {
  Head h = payload<Head>(msg);
  if (!matches(CmiMsgPayload(msg) + sizeof(Head), h.len, h.len, static_cast<std::uint64_t>(h.src)))
    CmiAbort("async: payload of %llu bytes corrupted", (unsigned long long)h.len);
  CmiFree(msg);
  if (++received == 2) {
    void* m = make_msg(h_done, 0);
    CmiSyncSendAndFree(0, msg_size<int>(), m);
  }
}
void on_done(void* msg) {
  CmiFree(msg);
  if (++done == CmiNumPes()) {
    CmiPrintf("async ok\n");
    CmiExit(0);
  }
}
void start(const Args&) {
  h_data = CmiRegisterHandler(data);
  h_done = CmiRegisterHandler(on_done);
  const int to = (CmiMyPe() + 1) % CmiNumPes();
  for (std::size_t len : {std::size_t{100}, std::size_t{4} << 20}) {
    void* m = make_msg(h_data, Head{len, CmiMyPe()}, len);
    fill(CmiMsgPayload(m) + sizeof(Head), len, len, static_cast<std::uint64_t>(CmiMyPe()));
    CmiCommHandle h = CmiAsyncSend(to, msg_size<Head>(len), m);
    CsdScheduleUntil([&] { return CmiAsyncMsgSent(h) != 0; });
    CmiReleaseCommHandle(h);
    if (CmiGetReference(m) != 1) CmiAbort("async: the send still holds the message");
    CmiFree(m);
  }
}

}  // namespace testprog::async
