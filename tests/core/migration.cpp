// Migration, location management and load balancing: core_migration MODE. Each mode checks
// itself and ends with "MODE ok" from PE 0 and exit 0, or aborts naming what went wrong.
//   storm        elements send to each other while moving at random: every message arrives
//                once, each sender's messages in order; a reduction counts them
//   qd           the storm again, ended by quiescence detection: all delivered by then
//   hops         one element moves 10,000 times; afterwards messages to it are not forwarded
//                (no forwarding chains): the location counters say so
//   reduction    elements move between and during reductions (sum, several rounds)
//   broadcast    elements move on every broadcast they get: each gets every broadcast once,
//                in order
//   insert       elements of an array filled by insert() move; broadcasts and messages follow
//   lb           AtSync with a synthetic load: the heavy elements end on different PEs
//   lb_any       the same, any placement: every element resumes once
//   dims6        a 6-D array: messages reach the right elements, which move; a reduction
//   bigstate     a 1 MiB element moves back and forth and keeps its data
//   not_migratable / pup_overrun / pup_short / devbuf_moved   user errors: clear messages,
//                non-zero exit (devbuf_moved: a CkDeviceBuffer sent to an element that moved)
#include <ucharm/charm.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;
ck::readonly<int> numElems;

void finish(const std::string& what) {
  CkPrintf("%s ok\n", what.c_str());
  CkExit(0);
}
void expect(bool ok, const char* what) {
  if (!ok) CkAbort("check failed: %s", what);
}
// A deterministic pseudo-random PE for a move.
int pick_pe(int a, int b) {
  unsigned h = static_cast<unsigned>(a) * 2654435761u ^ static_cast<unsigned>(b) * 40503u;
  return static_cast<int>((h >> 7) % static_cast<unsigned>(CkNumPes()));
}

// ---- storm ---------------------------------------------------------------------------------------
constexpr int kStormMsgs = 150;  // to each of kStormTargets targets
constexpr int kStormTargets = 3;

struct Storm : ck::ArrayElement<Storm> {
  std::map<int, int> next;  // sender -> next sequence number expected
  int got = 0, moves = 0;
  Storm() = default;
  explicit Storm(CkMigrateMessage*) {}
  void pup(PUP::er& p) override { p | next; p | got; p | moves; p | quiet_mode; }
  bool quiet_mode = false;  // qd mode: the main chare counts after quiescence instead
  void report();
  void start(bool qd) {
    quiet_mode = qd;
    // Interleaved: each target gets its sequence in order from this element.
    for (int s = 0; s < kStormMsgs; ++s)
      for (int t = 1; t <= kStormTargets; ++t)
        thisProxy[(thisIndex + t) % *numElems].send<&Storm::take>(thisIndex, s);
  }
  void take(int from, int seq);
};

// ---- hops ----------------------------------------------------------------------------------------
constexpr int kHops = 10000;
struct Hopper : ck::ArrayElement<Hopper> {
  int hops = 0;
  Hopper() = default;
  explicit Hopper(CkMigrateMessage*) {}
  void pup(PUP::er& p) override { p | hops; }
  void hop(int left);
  void ping(int k);
};

// ---- reductions while moving ---------------------------------------------------------------------
constexpr int kRounds = 6;
struct Red : ck::ArrayElement<Red> {
  int round = 0;
  Red() = default;
  explicit Red(CkMigrateMessage*) {}
  void pup(PUP::er& p) override { p | round; }
  void go();
};

// ---- broadcasts while moving ---------------------------------------------------------------------
struct Bc : ck::ArrayElement<Bc> {
  int next = 0;
  Bc() = default;
  explicit Bc(CkMigrateMessage*) {}
  void pup(PUP::er& p) override { p | next; }
  void tick(int k, int last);
};

// ---- insert-filled arrays ------------------------------------------------------------------------
struct Ins : ck::ArrayElement<Ins> {
  int got = 0;
  explicit Ins(int) {}
  explicit Ins(CkMigrateMessage*) {}
  void pup(PUP::er& p) override { p | got; }
  void poke(int k);
};

// ---- load balancing ------------------------------------------------------------------------------
struct Lb : ck::ArrayElement<Lb> {
  int iter = 0;
  Lb() { usesAtSync = true; }
  explicit Lb(CkMigrateMessage*) {}
  void pup(PUP::er& p) override { p | iter; }
  bool heavy() const { return thisIndex < CkNumPes(); }  // the block map puts them all on PE 0
  void work() {
    const double until = CkWallTimer() + (heavy() ? 0.02 : 0.0001);
    while (CkWallTimer() < until) {
    }
    ++iter;
    // A ring of messages: the communication graph MetisLB partitions.
    thisProxy[(thisIndex + 1) % *numElems].send<&Lb::neighbour>(std::vector<double>(512, 1.0));
    AtSync();
  }
  void neighbour(std::vector<double>) {}
  void ResumeFromSync() override;
};

// ---- big state -----------------------------------------------------------------------------------
constexpr std::size_t kBig = 1 << 20;
struct Big : ck::ArrayElement<Big> {
  std::vector<char> data;
  Big() : data(kBig) {
    for (std::size_t i = 0; i < kBig; ++i) data[i] = static_cast<char>(i * 7 + 3);
  }
  explicit Big(CkMigrateMessage*) {}
  void pup(PUP::er& p) override { p | data; }
  void bounce(int left);
};

// ---- user errors ---------------------------------------------------------------------------------
struct Bad : ck::ArrayElement<Bad> {
  int x = 1;
  Bad() = default;
  explicit Bad(CkMigrateMessage*) {}
  void pup(PUP::er& p) override {
    p | x;
  }
  void go() {
    setMigratable(false);
    migrateMe((CkMyPe() + 1) % CkNumPes());
  }
};
struct BadOver : ck::ArrayElement<BadOver> {
  int x = 1;
  BadOver() = default;
  explicit BadOver(CkMigrateMessage*) {}
  void pup(PUP::er& p) override {
    p | x;
    if (p.isUnpacking()) {  // reads more than was written
      double extra;
      p | extra;
    }
  }
  void go() { migrateMe((CkMyPe() + 1) % CkNumPes()); }
};
struct BadShort : ck::ArrayElement<BadShort> {
  int x = 1, y = 2;
  BadShort() = default;
  explicit BadShort(CkMigrateMessage*) {}
  void pup(PUP::er& p) override {
    p | x;
    if (!p.isUnpacking()) p | y;  // writes more than it reads
  }
  void go() { migrateMe((CkMyPe() + 1) % CkNumPes()); }
};

// ---- a CkDeviceBuffer sent along a stale route -----------------------------------------------------
struct Dev : ck::ArrayElement<Dev> {
  static constexpr auto post_entries() { return ck::post_list<ck::post<&Dev::got, &Dev::got_post>>{}; }
  double buf = 0, src = 42;
  Dev() = default;
  explicit Dev(CkMigrateMessage*) {}
  void pup(PUP::er& p) override { p | buf; p | src; }
  void go() { migrateMe((CkMyPe() + 1) % CkNumPes()); }
  void ckJustMigrated() override { thisProxy[0].send<&Dev::fire>(); }
  void fire() { thisProxy[1].send<&Dev::got>(ck::CkDeviceBuffer(&src, sizeof src)); }  // PE 0's route is the home
  void got_post(ck::CkDeviceBuffer& b) { b.ptr = &buf; }
  void got(ck::CkDeviceBuffer) { finish("devbuf_moved (delivered)"); }
};

// ---- 6-D arrays (4-6-D indices travel as 16-bit coordinates) ----------------------------------------
struct Six : ck::ArrayElement<Six, 6> {
  Six() = default;
  explicit Six(CkMigrateMessage*) {}
  int weight() const {
    int w = 0;
    for (int d = 0; d < 6; ++d) w = w * 10 + thisIndex[static_cast<std::size_t>(d)];
    return w;
  }
  void poke(int w);
};

// ---- a CkChannel left open ------------------------------------------------------------------------
struct Chan : ck::ArrayElement<Chan> {
  ck::CkChannel ch;
  Chan() = default;
  explicit Chan(CkMigrateMessage*) {}
  void go() {
    ch = ck::CkChannel(thisProxy[thisIndex], thisProxy[(thisIndex + 1) % 2]);
    if (thisIndex == 0) migrateMe((CkMyPe() + 1) % CkNumPes());
  }
};

struct Main : ck::MainChare<Main> {
  std::string mode;
  ck::ArrayProxy<Storm> storm;
  ck::ArrayProxy<Hopper> hopper;
  ck::ArrayProxy<Red> red;
  ck::ArrayProxy<Bc> bc;
  ck::ArrayProxy<Ins> ins;
  ck::ArrayProxy<Lb> lb;
  ck::ArrayProxy<Big> big;
  int n = 0, count = 0, pongs = 0, lb_seen = 0, lb_steps = 0;
  std::vector<int> red_sums;
  std::vector<int> lb_pe;
  CkLocationCounts before{};

  explicit Main(ck::MainArgs args) {
    expect(args.argc >= 2, "usage: core_migration MODE");
    mode = args.argv[1];
    mainProxy = thisProxy;
    n = 4 * CkNumPes() + 3;
    numElems = n;
    if (mode == "storm" || mode == "qd") {
      storm = ck::ArrayProxy<Storm>::create(ck::dims(n), ck::Map::block);
      storm.send<&Storm::start>(mode == "qd");
      if (mode == "qd") ck::start_qd(ck::CkCallback::to<&Main::qd_reached>(thisProxy));
    } else if (mode == "hops") {
      hopper = ck::ArrayProxy<Hopper>::create(ck::dims(1), ck::Map::block);
      hopper[0].send<&Hopper::hop>(kHops);
    } else if (mode == "reduction") {
      red = ck::ArrayProxy<Red>::create(ck::dims(n), ck::Map::block);
      red.send<&Red::go>();
    } else if (mode == "broadcast") {
      bc = ck::ArrayProxy<Bc>::create(ck::dims(n), ck::Map::round_robin);
      for (int k = 0; k < 40; ++k) bc.send<&Bc::tick>(k, 39);
    } else if (mode == "insert") {
      ins = ck::ArrayProxy<Ins>::create_empty(2);
      for (int i = 0; i < n; ++i) ins.insert(ck::index(i, i % 3), 0);
      for (int k = 0; k < 5; ++k)
        for (int i = 0; i < n; ++i) ins(i, i % 3).send<&Ins::poke>(k);
    } else if (mode == "lb" || mode == "lb_any") {
      lb_pe.assign(static_cast<std::size_t>(n), -1);
      lb = ck::ArrayProxy<Lb>::create(ck::dims(n), ck::Map::block);
      lb.send<&Lb::work>();
    } else if (mode == "bigstate") {
      big = ck::ArrayProxy<Big>::create(ck::dims(1), ck::Map::block);
      big[0].send<&Big::bounce>(20);
    } else if (mode == "not_migratable") {
      auto bad = ck::ArrayProxy<Bad>::create(ck::dims(1), ck::Map::block);
      bad[0].send<&Bad::go>();
    } else if (mode == "pup_overrun") {
      auto bad = ck::ArrayProxy<BadOver>::create(ck::dims(1), ck::Map::block);
      bad[0].send<&BadOver::go>();
    } else if (mode == "dims6") {
      auto a = ck::ArrayProxy<Six>::create(ck::dims(2, 1, 3, 1, 2, 2), ck::Map::block);
      for (int i = 0; i < 2; ++i)
        for (int k = 0; k < 3; ++k)
          for (int m = 0; m < 2; ++m)
            for (int q = 0; q < 2; ++q) a(i, 0, k, 0, m, q).send<&Six::poke>(((((i * 10 + 0) * 10 + k) * 10 + 0) * 10 + m) * 10 + q);
    } else if (mode == "channel_open") {
      auto c = ck::ArrayProxy<Chan>::create(ck::dims(2), ck::Map::block);
      c.send<&Chan::go>();
    } else if (mode == "devbuf_moved") {  // 3 PEs: element 1 goes from PE 1 to PE 2
      auto d = ck::ArrayProxy<Dev>::create(ck::dims(3), ck::Map::block);
      d[1].send<&Dev::go>();
    } else if (mode == "pup_short") {
      auto bad = ck::ArrayProxy<BadShort>::create(ck::dims(1), ck::Map::block);
      bad[0].send<&BadShort::go>();
    } else {
      CkAbort("unknown mode %s", mode.c_str());
    }
  }
  void storm_done(int total) {
    expect(total == n * kStormMsgs * kStormTargets, "the storm's reduction counts every message once");
    finish("storm");
  }
  void six_done(int sum) {
    int want = 0;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 3; ++k)
        for (int m = 0; m < 2; ++m)
          for (int q = 0; q < 2; ++q) want += ((((i * 10 + 0) * 10 + k) * 10 + 0) * 10 + m) * 10 + q;
    if (sum != want) CkAbort("dims6: sum of weights %d, expected %d", sum, want);
    finish("dims6");
  }
  void qd_reached() { storm.send<&Storm::report>(); }
  void qd_counted(int total) {
    if (total != n * kStormMsgs * kStormTargets)
      CkAbort("qd: quiescence was declared with %d of %d messages delivered", total, n * kStormMsgs * kStormTargets);
    finish("qd");
  }
  void hops_done(int hops, int pe) {
    expect(hops == kHops, "the element made every hop");
    expect(CkNumPes() == 1 || pe == kHops % CkNumPes(), "it ended on the PE the hops lead to");
    before = CkLocationStats();
    hopper[0].send<&Hopper::ping>(0);  // one at a time: the first may be forwarded, then the route is right
  }
  void pong(int) {
    if (++pongs < 100) {
      hopper[0].send<&Hopper::ping>(pongs);
      return;
    }
    const CkLocationCounts after = CkLocationStats();
    // PE 0's route may be stale once (it sent the last hop's messages from elsewhere): one
    // forward at most, then straight there.
    if (after.forwarded - before.forwarded > 1)
      CkAbort("hops: %llu of 100 messages were forwarded after the moves (a chain?)",
              static_cast<unsigned long long>(after.forwarded - before.forwarded));
    finish("hops");
  }
  void red_done(int sum) {
    const int r = static_cast<int>(red_sums.size());
    int want = 0;
    for (int i = 0; i < n; ++i) want += i + 1000 * r;
    if (sum != want) CkAbort("reduction round %d: sum %d, expected %d", r, sum, want);
    red_sums.push_back(sum);
    if (red_sums.size() == 2 * kRounds) {
      finish("reduction");
      return;
    }
    if (red_sums.size() % 2 == 0) red.send<&Red::go>();
  }
  void bc_done(int total) {
    expect(total == n * 40, "every element got every broadcast once");
    finish("broadcast");
  }
  void ins_poked(int, int) {
    if (++count == 5 * n) finish("insert");
  }
  void lb_where(int i, int pe, bool) {
    lb_pe[static_cast<std::size_t>(i)] = pe;
    if (++lb_seen < n) return;
    lb_seen = 0;
    ++lb_steps;
    if (mode == "lb_any") {  // every element resumed once; where they went is the strategy's business
      finish("lb_any");
      return;
    }
    // The heavy elements (one per PE, all on PE 0 at first) end on different PEs.
    std::vector<int> heavy_on(static_cast<std::size_t>(CkNumPes()), 0);
    for (int h = 0; h < CkNumPes(); ++h) ++heavy_on[static_cast<std::size_t>(lb_pe[static_cast<std::size_t>(h)])];
    for (int pe = 0; pe < CkNumPes(); ++pe)
      if (heavy_on[static_cast<std::size_t>(pe)] != 1)
        CkAbort("lb: after balancing PE %d holds %d heavy elements (expected 1 each)", pe, heavy_on[static_cast<std::size_t>(pe)]);
    finish("lb");
  }
  void big_done(int) { finish("bigstate"); }
};

void Storm::take(int from, int seq) {
    int& want = next[from];
    if (seq != want)
      CkAbort("storm: element %d (on PE %d after %d moves, %d messages got) got message %d from %d, expected %d "
              "(lost, duplicated or out of order)",
              thisIndex, CkMyPe(), moves, got, seq, from, want);
    ++want;
    ++got;
    if (got % 11 == 0) {
      ++moves;
      migrateMe(pick_pe(thisIndex, got));
    }
    if (got == kStormMsgs * kStormTargets && !quiet_mode)
      contribute(got, ck::Reducer::sum, ck::CkCallback::to<&Main::storm_done>(*mainProxy));
  }

void Hopper::hop(int left) {
    if (left == 0) {
      mainProxy->send<&Main::hops_done>(hops, CkMyPe());
      return;
    }
    ++hops;
    migrateMe((CkMyPe() + 1) % CkNumPes());
    thisProxy[thisIndex].send<&Hopper::hop>(left - 1);  // reaches it on the next PE
  }

void Hopper::ping(int k) { mainProxy->send<&Main::pong>(k); }

void Red::go() {
    // Contribute, move, contribute again from the new PE before the first round is done.
    for (int r = 0; r < 2; ++r) {
      contribute(thisIndex + 1000 * round, ck::Reducer::sum, ck::CkCallback::to<&Main::red_done>(*mainProxy));
      ++round;
    }
    migrateMe(pick_pe(thisIndex, round));
  }

void Bc::tick(int k, int last) {
    if (k != next) CkAbort("broadcast: element %d got broadcast %d, expected %d", thisIndex, k, next);
    ++next;
    migrateMe(pick_pe(thisIndex, k));
    if (k == last) contribute(next, ck::Reducer::sum, ck::CkCallback::to<&Main::bc_done>(*mainProxy));
  }

void Ins::poke(int k) {
    ++got;
    migrateMe(pick_pe(thisIndex, k));
    mainProxy->send<&Main::ins_poked>(thisIndex, k);
  }

void Lb::ResumeFromSync() {
    mainProxy->send<&Main::lb_where>(thisIndex, CkMyPe(), heavy());
  }

void Big::bounce(int left) {
    for (std::size_t i = 0; i < kBig; i += 4093)
      if (data[i] != static_cast<char>(i * 7 + 3)) CkAbort("bigstate: byte %zu changed after a move", i);
    if (left == 0) {
      mainProxy->send<&Main::big_done>(CkMyPe());
      return;
    }
    migrateMe((CkMyPe() + 1) % CkNumPes());
    thisProxy[thisIndex].send<&Big::bounce>(left - 1);
  }

void Six::poke(int w) {
  if (w != weight()) CkAbort("dims6: element %s got the message for weight %d", ckIndex().str().c_str(), w);
  contribute(w, ck::Reducer::sum, ck::CkCallback::to<&Main::six_done>(*mainProxy));
  migrateMe((CkMyPe() + 1) % CkNumPes());
}

void Storm::report() { contribute(got, ck::Reducer::sum, ck::CkCallback::to<&Main::qd_counted>(*mainProxy)); }

}  // namespace

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
