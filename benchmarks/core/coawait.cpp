// The cost of a co_await round trip (coroutine entry methods, ck::task<>) against a plain
// entry ping-pong: two group elements, PE 0 and PE 1, 8 B payloads (std::span<const char>).
//   plain     PE 0's entry sends to PE 1's entry, which sends back: the core_pingpong pattern
//   co_await  PE 0's coroutine sends to PE 1 and co_awaits ck::next<&PP::pong>(i); PE 1's
//             plain entry answers with pong(i, data), whose body runs inside the co_await
//   callback  the same, PE 1 answering through a CkCallback into a ck::ResumeCallback
// The variants alternate, --runs times; printed: each run's round trip, the medians and
// the ratios to the plain ping-pong's median.
//   ucharmrun -n 2 core_coawait [--iters 100000] [--runs 7] [--bytes 8] [--only co_await]
// --only runs one variant (for instruction counts: callgrind at two --iters, the difference).
#include <ucharm/charm.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

namespace {

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;

enum Variant : int { kPlain = 0, kCoawait = 1, kCallback = 2, kVariants = 3 };
const char* const kNames[kVariants] = {"plain", "co_await", "callback"};

struct PP : ck::Group<PP> {
  static constexpr auto awaited_entries() { return ck::entries<&PP::pong>; }
  std::vector<char> buf;
  int left = 0, timed = 0, warm = 0;
  double t0 = 0;

  // ---- plain: remaining one-way trips; element 0 times the round trips after the warm-up
  void ping(int remaining, std::span<const char> data) {
    if (thisIndex == 0) {
      if (remaining == 2 * timed) t0 = CkWallTimer();
      if (remaining == 0) return report(kPlain);
    }
    thisProxy[1 - thisIndex].send<&PP::ping>(remaining - 1, data);
  }
  void start_plain(int n, int warmup) {
    timed = n;
    ping(2 * (n + warmup), std::span<const char>(buf));
  }

  // ---- co_await: the coroutine waits for the answer numbered i
  void pong(int, std::span<const char> data) { std::copy(data.begin(), data.end(), buf.begin()); }
  void echo(int i, std::span<const char> data) { thisProxy[0].send<&PP::pong>(i, data); }
  ck::task<> run_coawait(int n, int warmup) {
    for (int i = 0; i < n + warmup; ++i) {
      if (i == warmup) t0 = CkWallTimer();
      thisProxy[1].send<&PP::echo>(i, std::span<const char>(buf));
      co_await ck::next<&PP::pong>(i);
    }
    report(kCoawait);
  }

  // ---- callback: the answer is a value sent to a ResumeCallback
  ck::ResumeCallback<std::vector<char>> answers;
  void echo_cb(ck::CkCallback cb, std::vector<char> data) { cb.send(data); }
  ck::task<> run_callback(int n, int warmup) {
    const ck::CkCallback cb = answers.callback();
    for (int i = 0; i < n + warmup; ++i) {
      if (i == warmup) t0 = CkWallTimer();
      thisProxy[1].send<&PP::echo_cb>(cb, buf);
      buf = co_await answers;
    }
    report(kCallback);
  }

  void set_size(std::size_t bytes) { buf.assign(bytes, 'x'); }
  void report(int v);
};

struct Main : ck::MainChare<Main> {
  int iters = 100000, warmup = 1000, runs = 7;
  std::size_t bytes = 8;
  ck::GroupProxy<PP> g;
  int run = 0, variant = 0, only = -1;
  std::vector<double> us[kVariants];

  explicit Main(ck::MainArgs args) {
    CLI::App app{"co_await round trip against a plain entry ping-pong"};
    app.add_option("--iters", iters, "timed round trips per run")->check(CLI::PositiveNumber);
    app.add_option("--warmup", warmup, "untimed round trips first")->check(CLI::NonNegativeNumber);
    app.add_option("--runs", runs, "alternating runs of every variant")->check(CLI::PositiveNumber);
    app.add_option("--bytes", bytes, "payload bytes");
    std::string only_name;
    app.add_option("--only", only_name, "run one variant")->check(CLI::IsMember({"plain", "co_await", "callback"}));
    try {
      app.parse(args.argc, args.argv);
    } catch (const CLI::ParseError& e) {
      std::exit(app.exit(e));
    }
    for (int v = 0; v < kVariants; ++v)
      if (only_name == kNames[v]) only = v;
    if (CkNumPes() < 2) CkAbort("core_coawait needs at least 2 PEs (ucharmrun -n 2 ...)");
    mainProxy = thisProxy;
    g = ck::GroupProxy<PP>::create();
    g.send<&PP::set_size>(bytes);
    CkPrintf("# co_await round trip vs plain entry ping-pong, PE 0 <-> PE 1, %zu B, %d round trips x %d runs\n",
             bytes, iters, runs);
    CkPrintf("# %-4s %12s %12s %12s   (round trip, us)\n", "run", kNames[0], kNames[1], kNames[2]);
    variant = only < 0 ? 0 : only;
    next();
  }
  void next() {
    if (variant == kPlain) g[0].send<&PP::start_plain>(iters, warmup);
    else if (variant == kCoawait) g[0].send<&PP::run_coawait>(iters, warmup);
    else g[0].send<&PP::run_callback>(iters, warmup);
  }
  void result(int v, double seconds) {
    us[v].push_back(seconds * 1e6 / iters);
    if (only >= 0) {
      CkPrintf("%s round trip: %.4f us\n", kNames[v], us[v].back());
      if (++run < runs) return next();
      CkExit(0);
    }
    if (++variant < kVariants) return next();
    CkPrintf("  %-4d %12.4f %12.4f %12.4f\n", run, us[0].back(), us[1].back(), us[2].back());
    variant = 0;
    if (++run < runs) return next();
    double med[kVariants];
    for (int i = 0; i < kVariants; ++i) {
      std::vector<double> v = us[i];
      std::sort(v.begin(), v.end());
      med[i] = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    }
    CkPrintf("median round trip (us): plain %.4f, co_await %.4f, callback %.4f\n", med[0], med[1], med[2]);
    CkPrintf("co_await / plain: %.3f\ncallback / plain: %.3f\n", med[1] / med[0], med[2] / med[0]);
    CkExit(0);
  }
};

void PP::report(int v) { mainProxy->send<&Main::result>(v, CkWallTimer() - t0); }

}  // namespace

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
