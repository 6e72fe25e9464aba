// wrap: PE 0 and the last PE take turns, one transfer at a time, over a channel and over
// GPU Messaging, for many more steps than the narrow test build's 16 counter values.
#include "common.h"

namespace testprog::wrap {

int steps = 0, h_chan_done, h_dev_meta, h_dev_done, h_ignore;
int step = 0;
std::uint64_t counter[2] = {0, 0};  // per direction: 0 = to the peer, 1 = from it
Buf buf;
int peer() { return CmiMyPe() == 0 ? CmiNumPes() - 1 : 0; }
bool starts() { return CmiMyPe() == 0; }
void send_next();
void ignore(void* msg) { CmiFree(msg); }
void finish() {
  if (CmiMyPe() == 0) {
    CmiPrintf("wrap ok: %d steps\n", steps);
    CmiExit(0);
  }
}
void check(int s) {
  if (!matches(buf, 77, static_cast<std::uint64_t>(s)))
    CmiAbort("wrap: step %d got another step's data", s);
}
void post_recv() {
  const int from = peer();
  CmiChannelRecv(buf.data(), buf.size(), CmiChannelTag(static_cast<std::uint64_t>(from) + 1, counter[1]),
                 make_msg(h_chan_done, 0));
  counter[1] = CmiChannelNextCounter(counter[1]);
}
void chan_done(void* msg) {  // received step `step`
  CmiFree(msg);
  check(step);
  if (++step == steps) { finish(); return; }
  send_next();
}
void send_next() {  // alternate: channel on even steps, GPU Messaging on odd ones
  fill(buf, 77, static_cast<std::uint64_t>(step));
  const int to = peer();
  if (step % 2 == 0) {
    CmiChannelSend(to, buf.data(), buf.size(), CmiChannelTag(static_cast<std::uint64_t>(CmiMyPe()) + 1, counter[0]),
                   make_msg(h_ignore, 0));
    counter[0] = CmiChannelNextCounter(counter[0]);
  } else {
    CmiDeviceBuffer b{buf.data(), buf.size(), 0};
    CmiSendDevice(to, b, make_msg(h_ignore, 0));
    CmiSyncSendAndFree(to, msg_size<std::uint64_t>(), make_msg(h_dev_meta, b.tag));
  }
  if (++step == steps) { finish(); return; }
  if (step % 2 == 0) post_recv();
}
void dev_meta(void* msg) {
  std::uint64_t tag = payload<std::uint64_t>(msg);
  CmiFree(msg);
  CmiRecvDevice(buf.data(), buf.size(), tag, make_msg(h_dev_done, 0));
}
void dev_done(void* msg) { chan_done(msg); }
void start(const Args& a) {
  h_chan_done = CmiRegisterHandler(chan_done);
  h_dev_meta = CmiRegisterHandler(dev_meta);
  h_dev_done = CmiRegisterHandler(dev_done);
  h_ignore = CmiRegisterHandler(ignore);
  steps = a.args.empty() || a.args[0] == "cuda" ? 200 : std::atoi(a.args[0].c_str());
  buf.resize(64);
  CmiBarrier();
  if (CmiNumPes() > 1 && CmiMyPe() != 0 && CmiMyPe() != CmiNumPes() - 1) return;
  if (CmiNumPes() == 1) CmiAbort("wrap needs 2 PEs or more");
  if (starts()) send_next();
  else post_recv();
}

}  // namespace testprog::wrap
