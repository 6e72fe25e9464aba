// Migration cost against messaging (issue 17's target: migrating a 1 MiB element costs no
// more than 2x sending 1 MiB). Two measurements, each a median over several rounds:
//   migrate  one array element holding --bytes of state hops PE 0 -> PE 1 -> PE 0 (its
//            pup() packs the state; the runtime adds a few dozen bytes of its own)
//   message  array element 0 (PE 0) and element 1 (PE 1) bounce a --bytes payload
//            (std::span<const char>: received in place, sent on with one copy)
// Both count round trips, so the ratio is migrate / message.
//   ucharmrun -n 2 core_migrate_cost [--bytes 1048576] [--trips 50] [--rounds 7]
#include <ucharm/charm.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <span>
#include <vector>

namespace {

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;
ck::CkCallback on_round_done();

// The migrating element: its whole state is `data`.
struct Mover : ck::ArrayElement<Mover> {
  std::vector<char> data;
  int hops_left = 0;
  Mover() = default;
  explicit Mover(CkMigrateMessage*) {}
  void pup(PUP::er& p) override { p | data; p | hops_left; }
  void start(std::size_t bytes, int trips) {
    if (data.size() != bytes) data.assign(bytes, 'm');
    hops_left = 2 * trips;
    hop();
  }
  void hop() {
    if (hops_left-- == 0) return on_round_done().send();
    migrateMe(1 - CkMyPe());
  }
  void ckJustMigrated() override { hop(); }
};

struct Ponger : ck::ArrayElement<Ponger> {
  int left = 0;
  void start(std::size_t bytes, int trips) {
    left = trips;
    std::vector<char> buf(bytes, 'p');
    thisProxy[1].send<&Ponger::ping>(std::span<const char>(buf));
  }
  void ping(std::span<const char> data) {
    if (thisIndex == 1) return thisProxy[0].send<&Ponger::ping>(data);
    if (--left == 0) return on_round_done().send();
    thisProxy[1].send<&Ponger::ping>(data);
  }
};

struct Main : ck::MainChare<Main> {
  std::size_t bytes = 1u << 20;
  int trips = 50, rounds = 7, round = 0;
  bool migrating = true;
  double t0 = 0;
  std::vector<double> mig_us, msg_us;
  ck::ArrayProxy<Mover> mover;
  ck::ArrayProxy<Ponger> ponger;

  explicit Main(ck::MainArgs args) {
    CLI::App app{"migration vs message round trips"};
    app.add_option("--bytes", bytes, "element state and message size")->check(CLI::PositiveNumber);
    app.add_option("--trips", trips, "round trips per round")->check(CLI::PositiveNumber);
    app.add_option("--rounds", rounds, "rounds (the first of each kind is a warm-up, not counted)")
        ->check(CLI::Range(2, 1000));
    try {
      app.parse(args.argc, args.argv);
    } catch (const CLI::ParseError& e) {
      std::exit(app.exit(e));
    }
    if (CkNumPes() != 2) CkAbort("core_migrate_cost: run with 2 PEs (ucharmrun -n 2), not %d", CkNumPes());
    mainProxy = thisProxy;
    mover = ck::ArrayProxy<Mover>::create(ck::dims(1), ck::Map::block);
    ponger = ck::ArrayProxy<Ponger>::create(ck::dims(2), ck::Map::block);
    next();
  }

  // Rounds alternate between the two kinds, so both see the same machine load.
  void next() {
    t0 = CkWallTimer();
    if (migrating) mover[0].send<&Mover::start>(bytes, trips);
    else ponger[0].send<&Ponger::start>(bytes, trips);
  }

  void round_done() {
    const double us = (CkWallTimer() - t0) / trips * 1e6;
    if (round >= 2) (migrating ? mig_us : msg_us).push_back(us);
    ++round;
    migrating = !migrating;
    if (round < 2 * rounds) return next();
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double m = median(mig_us), s = median(msg_us);
    CkPrintf("bytes: %zu, round trips per round: %d, rounds counted: %zu each\n", bytes, trips, mig_us.size());
    CkPrintf("migrate round trip: %.1f us (median; min %.1f, max %.1f)\n", m,
             *std::min_element(mig_us.begin(), mig_us.end()), *std::max_element(mig_us.begin(), mig_us.end()));
    CkPrintf("message round trip: %.1f us (median; min %.1f, max %.1f)\n", s,
             *std::min_element(msg_us.begin(), msg_us.end()), *std::max_element(msg_us.begin(), msg_us.end()));
    CkPrintf("migrate / message: %.2fx\n", m / s);
    CkExit(0);
  }
};

ck::CkCallback on_round_done() { return ck::CkCallback::to<&Main::round_done>(*mainProxy); }

}  // namespace

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
