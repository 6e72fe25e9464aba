// Per-invocation cost of a threaded entry method (each runs in its own user-level thread)
// next to a plain one: one PE sends itself N messages in a chain, each invocation sending
// the next; ns per invocation. Threaded entries with a deep stack (+stacksize) show what
// creating a thread costs when stacks are not reused.
//   ucharmrun -n 1 core_threaded [invocations]
#include <ucharm/charm.h>

#include <cstdlib>

namespace {

ck::readonly<long> invocations;

struct Chain : ck::Group<Chain> {
  static constexpr auto threaded_entries() { return ck::entries<&Chain::threaded>; }
  long left = 0;
  double t0 = 0;
  void start_plain() {
    left = *invocations;
    t0 = CkWallTimer();
    thisProxy[CkMyPe()].send<&Chain::plain>();
  }
  void plain() {
    if (--left > 0) {
      thisProxy[CkMyPe()].send<&Chain::plain>();
      return;
    }
    CkPrintf("plain entry method:    %8.1f ns per invocation\n", (CkWallTimer() - t0) * 1e9 / *invocations);
    left = *invocations;
    t0 = CkWallTimer();
    thisProxy[CkMyPe()].send<&Chain::threaded>();
  }
  void threaded() {
    if (--left > 0) {
      thisProxy[CkMyPe()].send<&Chain::threaded>();
      return;
    }
    CkPrintf("threaded entry method: %8.1f ns per invocation\n", (CkWallTimer() - t0) * 1e9 / *invocations);
    CkExit(0);
  }
};

struct Main : ck::MainChare<Main> {
  explicit Main(ck::MainArgs args) {
    invocations = args.argc > 1 ? std::atol(args.argv[1]) : 200000L;
    auto g = ck::GroupProxy<Chain>::create();
    g[0].send<&Chain::start_plain>();
  }
};

}  // namespace

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
