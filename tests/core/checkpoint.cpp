// Checkpoint and restart: core_checkpoint DIR STEPS [options] [+restart DIR]
// An array of cells with integer state steps in lock-step: each step the main chare
// broadcasts go(s), each cell updates its data, sends a value to its neighbour and
// contributes a sum; a group counts the steps on every PE and a singleton chare keeps a
// running hash of the sums. Every --every K steps the main chare writes a checkpoint and
// goes on in its callback. The last line is "result SUM HASH" (the same for every PE count,
// interrupted or not). Options:
//   --every K        checkpoint every K steps (default 5)
//   --crash-at S     in the first attempt (UCHARM_RESTART_ATTEMPT unset or 0), PE 1 (or the
//                    only PE) kills itself with SIGKILL at step S
//   --stop-after S   end the job (exit 0) right after the checkpoint of step S
//   --migrate        cells move to another PE every third step
//   --big N          each cell holds N extra int64 values (checkpoint size)
//   --lb             cells call AtSync every fourth step (run with +balancer RotateLB: they move)
//   --unrebuildable  a chare without a migration constructor: the checkpoint is an error
#include <ucharm/charm.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;
ck::readonly<int> numCells;
ck::readonly<std::string> runTag;

struct Cell : ck::ArrayElement<Cell> {
  std::vector<std::int64_t> data;
  std::int64_t counter = 0;
  int arrivals = 0, step = 0;
  bool migrate = false, lb = false;
  Cell(bool mig, int big, bool balance) : migrate(mig), lb(balance) {
    usesAtSync = balance;
    data.resize(static_cast<std::size_t>(64 + thisIndex + big));
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::int64_t>(i) * 7 + thisIndex;
  }
  explicit Cell(CkMigrateMessage*) {}
  void pup(PUP::er& p) override { p | data; p | counter; p | arrivals; p | step; p | migrate; p | lb; }
  void go(int s) {
    step = s;
    for (std::size_t i = 0; i < data.size(); ++i)
      data[i] = (data[i] * 31 + s + static_cast<std::int64_t>(i)) % 1000003;
    thisProxy[(thisIndex + 1) % *numCells].send<&Cell::take>(s, data[0] + thisIndex);
    arrived();
    if (migrate && s % 3 == 1) migrateMe((CkMyPe() + 1 + thisIndex) % CkNumPes());
  }
  void take(int s, std::int64_t v) {
    counter = (counter + v * (s + 1)) % 1000000007;
    arrived();
  }
  void arrived();
};

// One branch per PE: counts the steps; restarted branches copy an old one (the default rule).
struct Ticker : ck::Group<Ticker> {
  int ticks = 0;
  Ticker() = default;
  explicit Ticker(CkMigrateMessage*) {}
  void pup(PUP::er& p) override { p | ticks; }
  void tick(int s) {
    ++ticks;
    if (ticks != s + 1) CkAbort("PE %d: ticker at %d on step %d", CkMyPe(), ticks, s);
  }
  void check(int steps);
  void crash() {
    if (CkMyPe() == (CkNumPes() > 1 ? 1 : 0)) {
      std::fflush(stdout);
      ::raise(SIGKILL);
    }
  }
};

struct Acc : ck::Chare<Acc> {
  std::uint64_t hash = 1469598103934665603ull;
  int count = 0;
  Acc() = default;
  explicit Acc(CkMigrateMessage*) {}
  void pup(PUP::er& p) override { p | hash; p | count; }
  void add(std::int64_t v) {
    hash = (hash ^ static_cast<std::uint64_t>(v)) * 1099511628211ull;
    ++count;
  }
  void report();
};

struct Stubborn : ck::Chare<Stubborn> {
  explicit Stubborn(int) {}
};

struct Main : ck::MainChare<Main> {
  std::string dir;
  int steps = 0, every = 5, crash_at = -1, stop_after = -1, step = 0;
  std::int64_t total = 0;
  bool resumed_once = false;
  ck::ArrayProxy<Cell> cells;
  ck::GroupProxy<Ticker> tickers;
  ck::ChareProxy<Acc> acc;

  explicit Main(ck::MainArgs a) {
    if (a.argc < 3) CkAbort("usage: core_checkpoint DIR STEPS [options]");
    dir = a.argv[1];
    steps = std::atoi(a.argv[2]);
    bool migrate = false, unrebuildable = false, lb = false;
    int big = 0;
    for (int i = 3; i < a.argc; ++i) {
      const std::string o = a.argv[i];
      auto next = [&] { return i + 1 < a.argc ? std::atoi(a.argv[++i]) : 0; };
      if (o == "--every") every = next();
      else if (o == "--crash-at") crash_at = next();
      else if (o == "--stop-after") stop_after = next();
      else if (o == "--big") big = next();
      else if (o == "--migrate") migrate = true;
      else if (o == "--lb") lb = true;
      else if (o == "--unrebuildable") unrebuildable = true;
      else CkAbort("unknown option %s", o.c_str());
    }
    mainProxy = thisProxy;
    numCells = 3 * CkNumPes() + 1;
    runTag = "tag-" + std::to_string(*numCells);  // a readonly that must survive as written
    cells = ck::ArrayProxy<Cell>::create(ck::dims(*numCells), ck::Map::block, migrate, big, lb);
    tickers = ck::GroupProxy<Ticker>::create();
    acc = ck::ChareProxy<Acc>::create_on(CkNumPes() - 1);
    if (unrebuildable) ck::ChareProxy<Stubborn>::create_on(0, 1);
    next_step();
  }
  explicit Main(CkMigrateMessage*) {}
  void pup(PUP::er& p) override {
    p | dir; p | steps; p | every; p | crash_at; p | stop_after; p | step; p | total;
    p | cells; p | tickers; p | acc;
  }

  void next_step() {
    if (step == steps) {
      tickers.send<&Ticker::check>(steps);
      return;
    }
    const char* attempt = std::getenv("UCHARM_RESTART_ATTEMPT");
    if (step == crash_at && (!attempt || std::string(attempt) == "0")) {
      tickers.send<&Ticker::crash>();
      return;
    }
    tickers.send<&Ticker::tick>(step);
    cells.send<&Cell::go>(step);
  }
  void stepDone(std::int64_t sum) {
    total = (total * 131 + sum) % 1000000009;
    acc.send<&Acc::add>(sum);
    ++step;
    if (every > 0 && step % every == 0 && step < steps) {
      ck::CkStartCheckpoint(dir.c_str(), ck::CkCallback::to<&Main::resume>(thisProxy));
      return;
    }
    next_step();
  }
  void resume() {
    const ck::RestartInfo& r = ck::restart_info();
    if (r.restarted && !resumed_once) {
      resumed_once = true;
      if (*runTag != "tag-" + std::to_string(*numCells)) CkAbort("readonly lost: %s", runTag->c_str());
      CkPrintf("restarted at step %d (checkpoint of %d PEs, now %d)\n", step, r.old_num_pes, CkNumPes());
    } else {
      CkPrintf("checkpoint at step %d\n", step);
      if (step == stop_after) {
        CkPrintf("stopped at step %d\n", step);
        CkExit(0);
      }
    }
    next_step();
  }
  void checked(int ok) {
    if (!ok) CkAbort("a ticker missed steps");
    acc.send<&Acc::report>();
  }
  void result(std::uint64_t hash, int count) {
    if (count != steps) CkAbort("the accumulator saw %d steps, not %d", count, steps);
    CkPrintf("result %lld %llu\n", static_cast<long long>(total), static_cast<unsigned long long>(hash));
    CkExit(0);
  }
};

void Acc::report() { mainProxy->send<&Main::result>(hash, count); }

void Cell::arrived() {
  if (++arrivals < 2) return;
  arrivals = 0;
  std::int64_t sum = counter;
  for (std::int64_t d : data) sum += d;
  contribute(sum, ck::Reducer::sum, ck::CkCallback::to<&Main::stepDone>(*mainProxy));
  if (lb && step % 4 == 3) AtSync();
}

void Ticker::check(int steps) {
  contribute(ticks == steps ? 1 : 0, ck::Reducer::min, ck::CkCallback::to<&Main::checked>(*mainProxy));
}

}  // namespace

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
