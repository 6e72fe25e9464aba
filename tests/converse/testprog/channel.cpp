// channel: a channel each way between every pair of PEs (and each PE with itself), K
// transfers per channel. The first half is sent before the receiver posts (data waits
// unexpected); the second half after the receiver says it has posted.
#include "common.h"

#include <map>
#include <utility>

namespace testprog::channel {

constexpr int K = 12;
const std::size_t kSizes[] = {0, 1, 8, 1000, 40000, 1 << 20};
int h_first_sent, h_posted, h_recv_done, h_send_done, h_report;
std::map<std::pair<int, int>, Buf> inbox;  // (src, k) -> buffer
std::vector<Buf> outbox;                     // [dst * K + k]
int recvs_left = 0, sends_left = 0, reports = 0;

std::uint64_t id(int src, int dst) { return static_cast<std::uint64_t>(src) * CmiNumPes() + dst; }
std::uint64_t counter_for(int k) {
  std::uint64_t c = 0;
  for (int i = 0; i < k; ++i) c = CmiChannelNextCounter(c);
  return c;
}
std::size_t size_for(int k) { return kSizes[k % 6]; }
struct Done { int src, k; };

void maybe_report() {
  if (recvs_left == 0 && sends_left == 0) {
    recvs_left = -1;
    CmiSyncSendAndFree(0, msg_size<int>(), make_msg(h_report, 0));
  }
}
void post(int src, int k) {
  Buf& b = inbox[{src, k}];
  b.resize(size_for(k));
  CmiChannelRecv(b.data(), b.size(), CmiChannelTag(id(src, CmiMyPe()), counter_for(k)),
                 make_msg(h_recv_done, Done{src, k}));
}
void send(int dst, int k) {
  Buf& b = outbox[static_cast<std::size_t>(dst * K + k)];
  b.resize(size_for(k));
  fill(b, static_cast<std::uint64_t>(CmiMyPe() * 1000 + dst), static_cast<std::uint64_t>(k));
  CmiChannelSend(dst, b.data(), b.size(), CmiChannelTag(id(CmiMyPe(), dst), counter_for(k)), make_msg(h_send_done, 0));
}
void first_sent(void* msg) {  // the sender's first half is out: post for it now
  int src = CmiMsgSourcePe(msg);
  CmiFree(msg);
  for (int k = 0; k < K / 2; ++k) post(src, k);
}
void posted(void* msg) {  // the receiver has posted the second half: send it
  int dst = CmiMsgSourcePe(msg);
  CmiFree(msg);
  for (int k = K / 2; k < K; ++k) send(dst, k);
}
void recv_done(void* msg) {
  Done d = payload<Done>(msg);
  CmiFree(msg);
  const Buf& b = inbox[{d.src, d.k}];
  if (!matches(b, static_cast<std::uint64_t>(d.src * 1000 + CmiMyPe()), static_cast<std::uint64_t>(d.k)))
    CmiAbort("channel %d->%d transfer %d corrupted (or matched the wrong send)", d.src, CmiMyPe(), d.k);
  --recvs_left;
  maybe_report();
}
void send_done(void* msg) { CmiFree(msg); --sends_left; maybe_report(); }
void report(void* msg) {
  CmiFree(msg);
  if (++reports == CmiNumPes()) {
    CmiPrintf("channel ok: %d channels, %d transfers each\n", CmiNumPes() * CmiNumPes(), K);
    CmiExit(0);
  }
}
void start(const Args&) {
  h_first_sent = CmiRegisterHandler(first_sent);
  h_posted = CmiRegisterHandler(posted);
  h_recv_done = CmiRegisterHandler(recv_done);
  h_send_done = CmiRegisterHandler(send_done);
  h_report = CmiRegisterHandler(report);
  const int n = CmiNumPes();
  outbox.clear();
  outbox.resize(static_cast<std::size_t>(n * K));
  recvs_left = sends_left = n * K;
  CmiBarrier();  // every PE has its handlers before any notification arrives
  for (int peer = 0; peer < n; ++peer) {
    for (int k = 0; k < K / 2; ++k) send(peer, k);
    CmiSyncSendAndFree(peer, msg_size<int>(), make_msg(h_first_sent, 0));
    for (int k = K / 2; k < K; ++k) post(peer, k);
    CmiSyncSendAndFree(peer, msg_size<int>(), make_msg(h_posted, 0));
  }
}

}  // namespace testprog::channel
