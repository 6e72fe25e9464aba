// Chare ping-pong (OSU-style table): group element on PE 0 <-> group element on PE 1,
// and array element 0 <-> array element 1 (placed on PEs 0 and 1). The payload travels
// as a std::span<const char> (received in place, sent on with one copy).
//   ucharmrun -n 2 core_pingpong [--min 1] [--max 4M] [--iters 10000] [--kind group|array|both]
#include <ucharm/charm.h>

#include <CLI/CLI.hpp>

#include "../common/sizes.h"
#include <span>
#include <string>
#include <vector>

namespace {

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;

struct Settings {
  std::size_t min = 1, max = 4u << 20;
  int iters = 10000, warmup = 1000;
  std::string kind = "both";
};

int iters_for(const Settings& s, std::size_t size) { return ucharm::bench::iterations_for(size, s.iters); }

// Both kinds share the bouncing logic; `Peer` is the proxy to the other side.
template <class Self>
struct Bouncer {
  int left = 0, total = 0, warmup = 0;
  double t0 = 0;
  template <class Proxy>
  void bounce(Self* self, Proxy peer, bool starter, int remaining, std::span<const char> data);
};

struct GroupPP : ck::Group<GroupPP>, Bouncer<GroupPP> {
  void ping(int remaining, std::span<const char> data);
};
struct ArrayPP : ck::ArrayElement<ArrayPP>, Bouncer<ArrayPP> {
  void ping(int remaining, std::span<const char> data);
};

struct Main : ck::MainChare<Main> {
  Settings s;
  std::size_t size = 0;
  bool array_phase = false;
  double group_us = 0;
  ck::GroupProxy<GroupPP> g;
  ck::ArrayProxy<ArrayPP> a;

  explicit Main(ck::MainArgs args) {
    CLI::App app{"chare ping-pong"};
    ucharm::bench::SizeRange sizes(app, "1", "4M");
    app.add_option("--iters", s.iters)->check(CLI::PositiveNumber);
    app.add_option("--warmup", s.warmup)->check(CLI::NonNegativeNumber);
    app.add_option("--kind", s.kind)->check(CLI::IsMember({"group", "array", "both"}));
    try {
      app.parse(args.argc, args.argv);
      sizes.parse(s.min, s.max);
    } catch (const CLI::ParseError& e) {
      std::exit(app.exit(e));
    } catch (const std::exception& e) {
      CkAbort("core_pingpong: %s", e.what());
    }
    if (CkNumPes() < 2) CkAbort("core_pingpong needs at least 2 PEs (ucharmrun -n 2 ...)");
    mainProxy = thisProxy;
    g = ck::GroupProxy<GroupPP>::create();
    a = ck::ArrayProxy<ArrayPP>::create(ck::dims(2), ck::Map::round_robin);
    CkPrintf("# ucharm chare ping-pong, PE 0 <-> PE 1, %d PEs\n", CkNumPes());
    CkPrintf("%-12s %18s %18s\n", "# size(B)", "group lat(us)", "array lat(us)");
    size = s.min;
    array_phase = s.kind == "array";
    start();
  }
  void start() {
    std::vector<char> data(size, 'x');
    int n = iters_for(s, size) + s.warmup;
    if (array_phase) a[0].send<&ArrayPP::ping>(2 * n, std::span<const char>(data));
    else g[0].send<&GroupPP::ping>(2 * n, std::span<const char>(data));
  }
  void result(double us) {
    if (!array_phase) {
      group_us = us;
      if (s.kind == "both") {
        array_phase = true;
        start();
        return;
      }
      print(us, -1);
    } else {
      print(s.kind == "both" ? group_us : -1, us);
    }
    array_phase = s.kind == "array";
    if (size >= s.max) CkExit(0);
    size = size == 0 ? 1 : size * 2;
    start();
  }
  void print(double gus, double aus) {
    auto col = [](double v) { return v < 0 ? std::string("-") : std::to_string(v).substr(0, 8); };
    CkPrintf("%-12zu %18s %18s\n", size, col(gus).c_str(), col(aus).c_str());
  }
  int iterations() const { return iters_for(s, size); }
  int warmup() const { return s.warmup; }
};

// `remaining` counts one-way trips left; the side that starts (element 0) times the
// round trips after the warm-up and reports one-way latency.
template <class Self>
template <class Proxy>
void Bouncer<Self>::bounce(Self*, Proxy peer, bool starter, int remaining, std::span<const char> data) {
  if (starter) {
    if (total == 0) total = 2 * mainProxy->local()->iterations();  // once per size
    const int timed = total;
    if (remaining == timed) t0 = CkWallTimer();
    if (remaining == 0) {
      total = 0;
      mainProxy->send<&Main::result>((CkWallTimer() - t0) * 1e6 / timed);
      return;
    }
  }
  peer.template send<&Self::ping>(remaining - 1, data);
}

void GroupPP::ping(int remaining, std::span<const char> data) {
  bounce(this, thisProxy[1 - thisIndex], thisIndex == 0, remaining, data);
}
void ArrayPP::ping(int remaining, std::span<const char> data) {
  bounce(this, thisProxy[1 - thisIndex], thisIndex == 0, remaining, data);
}

}  // namespace

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
