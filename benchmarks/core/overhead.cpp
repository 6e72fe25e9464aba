// The core's own cost per message, without the network: one PE sends to itself N times
// through Converse (CmiSyncSendAndFree of the same buffer) and then through a chare
// entry method (group element, int + 8-byte span, as in core_pingpong).
//   ucharmrun -n 1 core_overhead [messages]
#include <ucharm/charm.h>

#include <cstdlib>
#include <span>

namespace {

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;
ck::readonly<long> messages;

int h_conv;
long conv_left = 0;
double t0 = 0;

struct Self : ck::Group<Self> {
  long left = 0;
  void ping(int r, std::span<const char> d) {
    if (--left > 0) {
      thisProxy[CkMyPe()].send<&Self::ping>(r, d);
      return;
    }
    CkPrintf("chare entry method, self-send:   %7.1f ns per message\n", (CkWallTimer() - t0) * 1e9 / *messages);
    CkExit(0);
  }
};

struct Main : ck::MainChare<Main> {
  ck::GroupProxy<Self> g;
  explicit Main(ck::MainArgs args) {
    messages = args.argc > 1 ? std::atol(args.argv[1]) : 2000000L;
    mainProxy = thisProxy;
    g = ck::GroupProxy<Self>::create();
    thisProxy.send<&Main::converse>();
  }
  void converse();
  void chare() {
    g.ckLocalBranch()->left = *messages;
    const char d[8] = {};
    t0 = CkWallTimer();
    g[CkMyPe()].send<&Self::ping>(1, std::span<const char>(d, 8));
  }
};

void conv_handler(void* msg) {
  if (--conv_left > 0) {
    CmiSyncSendAndFree(CmiMyPe(), CmiMsgSize(msg), msg);
    return;
  }
  CmiFree(msg);
  CkPrintf("Converse handler, self-send:     %7.1f ns per message\n", (CkWallTimer() - t0) * 1e9 / *messages);
  mainProxy->send<&Main::chare>();
}

void Main::converse() {
  conv_left = *messages;
  const std::size_t size = CmiMsgHeaderSizeBytes + 56;  // the chare message's size
  void* m = CmiAlloc(size);
  CmiSetHandler(m, h_conv);
  t0 = CkWallTimer();
  CmiSyncSendAndFree(CmiMyPe(), size, m);
}

}  // namespace

int main(int argc, char** argv) {
  h_conv = CmiRegisterHandler(conv_handler);  // before start: the same index on every PE
  return ck::start<Main>(argc, argv);
}
