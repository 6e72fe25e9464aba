// startbcast: every PE broadcasts as soon as it starts (some PEs may still be in the
// start-up fence: tests start this with a shim that holds one PE there), then waits for
// every PE's broadcast; PE 0 prints the result once all PEs have them all.
#include "common.h"

namespace testprog::startbcast {
namespace {

int h_bcast, h_done;
int seen = 0, dones = 0;
std::vector<int> from;

void bcast(void* msg) {
  int src = payload<int>(msg);
  CmiFree(msg);
  if (src < 0 || src >= CmiNumPes() || from[static_cast<std::size_t>(src)]++)
    CmiAbort("startbcast: broadcast from PE %d seen twice or invalid", src);
  if (++seen == CmiNumPes()) CmiSyncSendAndFree(0, msg_size<int>(), make_msg(h_done, CmiMyPe()));
}

void done(void* msg) {
  CmiFree(msg);
  if (++dones == CmiNumPes()) {
    CmiPrintf("startbcast ok: %d broadcasts reached all %d PEs\n", CmiNumPes(), CmiNumPes());
    CmiExit(0);
  }
}

}  // namespace

void start(const Args&) {
  h_bcast = CmiRegisterHandler(bcast);
  h_done = CmiRegisterHandler(done);
  from.assign(static_cast<std::size_t>(CmiNumPes()), 0);
  void* m = make_msg(h_bcast, CmiMyPe());
  CmiSyncBroadcastAllAndFree(msg_size<int>(), m);
}

}  // namespace testprog::startbcast
