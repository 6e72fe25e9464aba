// bcast: rounds of broadcasts from changing roots, all-but-self and all, small and
// large; every PE must see each round exactly once (and the root only for "all").
#include "common.h"

#include <algorithm>

namespace testprog::bcast {

constexpr int kRounds = 40;
struct Head { int round, root; std::uint64_t len; int all; };
int h_data, h_ack, h_go;
std::vector<int> seen_count;
int acks = 0;

std::size_t len_of(int round) { return round % 4 == 3 ? 100000 : static_cast<std::size_t>(round * 37); }
bool includes_root(int round) { return round % 2 == 0; }
int root_of(int round) { return round % CmiNumPes(); }
int receivers(int round) { return CmiNumPes() - (includes_root(round) ? 0 : 1); }

void issue(int round) {
  Head h{round, root_of(round), len_of(round), includes_root(round)};
  std::size_t size = msg_size<Head>(h.len);
  void* m = make_msg(h_data, h, h.len);
  fill(CmiMsgPayload(m) + sizeof(Head), h.len, static_cast<std::uint64_t>(round), 7);
  if (round % 3 == 0) {  // the copying variants
    if (h.all) CmiSyncBroadcastAll(size, m); else CmiSyncBroadcast(size, m);
    CmiFree(m);
  } else {
    if (h.all) CmiSyncBroadcastAllAndFree(size, m); else CmiSyncBroadcastAndFree(size, m);
  }
}
void data(void* msg) {
  Head h = payload<Head>(msg);
  if (h.round < 0 || h.round >= kRounds) CmiAbort("bcast: bad round %d", h.round);
  if (!h.all && CmiMyPe() == h.root) CmiAbort("bcast: all-but-self reached its root %d", h.root);
  if (CmiMsgSourcePe(msg) != h.root) CmiAbort("bcast: source %d, root %d", CmiMsgSourcePe(msg), h.root);
  if (!matches(CmiMsgPayload(msg) + sizeof(Head), h.len, static_cast<std::uint64_t>(h.round), 7))
    CmiAbort("bcast: round %d payload corrupted", h.round);
  if (++seen_count[h.round] != 1) CmiAbort("bcast: round %d delivered twice", h.round);
  CmiFree(msg);
  void* ack = make_msg(h_ack, h.round);
  CmiSyncSendAndFree(0, msg_size<int>(), ack);
}
void ack(void* msg);
void go(void* msg) {  // on the round's root
  int round = payload<int>(msg);
  issue(round);
  CmiFree(msg);
  if (receivers(round) == 0) {  // all-but-self on one PE reaches nobody: move on
    void* a = make_msg(h_ack, round);
    CmiSyncSendAndFree(0, msg_size<int>(), a);
  }
}
void ack(void* msg) {  // on PE 0: all receivers acked -> next round
  int round = payload<int>(msg);
  CmiFree(msg);
  if (++acks < std::max(receivers(round), 1)) return;
  acks = 0;
  if (round + 1 == kRounds) {
    CmiPrintf("bcast ok: %d rounds\n", kRounds);
    CmiExit(0);
  }
  void* g = make_msg(h_go, round + 1);
  CmiSyncSendAndFree(root_of(round + 1), msg_size<int>(), g);
}
void start(const Args&) {
  h_data = CmiRegisterHandler(data);
  h_ack = CmiRegisterHandler(ack);
  h_go = CmiRegisterHandler(go);
  seen_count.assign(kRounds, 0);
  if (CmiMyPe() == 0) {
    void* g = make_msg(h_go, 0);
    CmiSyncSendAndFree(0, msg_size<int>(), g);
  }
}

}  // namespace testprog::bcast
