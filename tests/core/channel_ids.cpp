// Channel ids: core_channel_ids MODE [ELEMENTS_PER_PE]. Each mode checks itself and ends
// with "MODE ok" from PE 0 and exit 0, or aborts naming what went wrong.
//   hashcollide  two channels whose ids the old hashed scheme made collide on one PE
//   many         an array whose elements open 16 channel ends each: 25,600 per PE by default
//                (the former hashed ids collided there at 1, 2, 4 and 8 PEs)
//   reopen       a channel closed and opened again between the same two ends
#include <ucharm/charm.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;
ck::readonly<int> elementsPerPe;

void expect(bool ok, const char* what) {
  if (!ok) CkAbort("check failed: %s", what);
}

// The incoming ids on this PE (one process per PE): no two open ends may share one.
std::unordered_set<std::uint32_t>& ids_here() {
  static std::unordered_set<std::uint32_t> s;
  return s;
}
void note_id(const ck::CkChannel& ch) {
  if (!ids_here().insert(ch.in_id()).second)
    CkAbort("two channel ends on PE %d receive on id %u", CkMyPe(), ch.in_id());
}

// The id that the former scheme gave the direction from -> to: a 28-bit FNV-style hash.
std::uint32_t former_hash(std::uint64_t coll, const ck::Index& from, const ck::Index& to, std::uint32_t sub) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (const ck::Index* e : {&from, &to}) {
    mix(coll);
    for (int d = 0; d < 3; ++d) mix(static_cast<std::uint32_t>(e->x[d]));
  }
  mix(sub);
  return static_cast<std::uint32_t>((h ^ (h >> 29)) & ((std::uint64_t{1} << 28) - 1));
}

struct Payload {
  std::int32_t from = -1, to = -1;
  std::uint32_t sub = 0, round = 0;
  bool operator==(const Payload&) const = default;
};

// ---- hashcollide: element 0 receives on two channels from element 1 ------------------------
struct Pair : ck::ArrayElement<Pair> {
  static constexpr auto threaded_entries() { return ck::entries<&Pair::run>; }
  void run();
};


// ---- many: N elements (round-robin), each with channels to i +- d (d = 1, 2, 3, 5), two
// sub-ids each: 16 ends per element, most of them to other PEs ---------------------------
constexpr std::array<int, 4> kOffsets = {1, 2, 3, 5};
constexpr int kSubs = 2, kEnds = static_cast<int>(kOffsets.size()) * 2 * kSubs;

struct Many : ck::ArrayElement<Many> {
  int n = 0;
  std::vector<ck::CkChannel> ch;
  std::vector<Payload> out, in, want;
  int sent = 0, got = 0;
  explicit Many(int total) : n(total) {}
  void start();
  void on_sent(std::size_t bytes);
  void on_got(std::size_t bytes);
  void maybe_done();
};

void Many::start() {
  ch.reserve(kEnds);
  out.resize(kEnds);
  in.resize(kEnds);
  want.resize(kEnds);
  for (int d : kOffsets)
    for (int sign : {1, -1})
      for (int k = 0; k < kSubs; ++k) {
        const int peer = ((thisIndex + sign * d) % n + n) % n;
        const auto sub = static_cast<std::uint32_t>(d * kSubs + k);  // the same at both ends
        const auto j = ch.size();
        ch.emplace_back(thisProxy[thisIndex], thisProxy[peer], sub);
        note_id(ch.back());
        out[j] = Payload{thisIndex, peer, sub, 7};
        want[j] = Payload{peer, thisIndex, sub, 7};
        auto me = thisProxy[thisIndex];
        if (j % 2) {
          ch[j].send(&out[j], sizeof(Payload), ck::CkCallback::to<&Many::on_sent>(me));
          ch[j].recv(&in[j], sizeof(Payload), ck::CkCallback::to<&Many::on_got>(me));
        } else {
          ch[j].recv(&in[j], sizeof(Payload), ck::CkCallback::to<&Many::on_got>(me));
          ch[j].send(&out[j], sizeof(Payload), ck::CkCallback::to<&Many::on_sent>(me));
        }
      }
}
void Many::on_sent(std::size_t bytes) {
  expect(bytes == sizeof(Payload), "send byte count");
  ++sent;
  maybe_done();
}
void Many::on_got(std::size_t bytes) {
  expect(bytes == sizeof(Payload), "receive byte count");
  ++got;
  maybe_done();
}

// ---- reopen: rounds of open, exchange, close; a reduction between close and reopen --------
struct Reopen : ck::ArrayElement<Reopen> {
  ck::CkChannel ch;
  Payload out, in;
  int round = 0, left = 0;
  void go(int r);
  void step(std::size_t);
};
constexpr int kReopenRounds = 4;

void Reopen::go(int r) {
  round = r;
  const int peer = 1 - thisIndex;
  ch = ck::CkChannel(thisProxy[thisIndex], thisProxy[peer], /*sub_id=*/3);
  note_id(ch);
  out = Payload{thisIndex, peer, 3, static_cast<std::uint32_t>(r)};
  left = 2;
  ch.send(&out, sizeof out, ck::CkCallback::to<&Reopen::step>(thisProxy[thisIndex]));
  ch.recv(&in, sizeof in, ck::CkCallback::to<&Reopen::step>(thisProxy[thisIndex]));
}

struct Main : ck::MainChare<Main> {
  std::string mode;
  int total = 0;
  bool many_reduced = false;
  ck::ArrayProxy<Reopen> reopen;
  explicit Main(ck::MainArgs args) {
    expect(args.argc >= 2, "usage: core_channel_ids MODE [ELEMENTS_PER_PE]");
    mode = args.argv[1];
    mainProxy = thisProxy;
    elementsPerPe = args.argc >= 3 ? std::atoi(args.argv[2]) : 1600;
    if (mode == "hashcollide") {
      ck::ArrayProxy<Pair>::create(ck::dims(2), ck::Map::block).send<&Pair::run>();
    } else if (mode == "many") {
      total = *elementsPerPe * CkNumPes();
      expect(total > 2 * kOffsets.back(), "enough elements");
      ck::ArrayProxy<Many>::create(ck::dims(total), ck::Map::round_robin, total).send<&Many::start>();
      // Quiescence must wait for every setup message and transfer. (At 1 PE its waves are
      // local messages only: the scheduler must still poll the network for the transfers.)
      ck::start_qd(ck::CkCallback::to<&Main::many_quiet>(thisProxy));
    } else if (mode == "reopen") {
      reopen = ck::ArrayProxy<Reopen>::create(ck::dims(2), ck::Map::block);
      reopen.send<&Reopen::go>(0);
    } else {
      CkAbort("unknown mode '%s'", mode.c_str());
    }
  }
  void pair_done(int n) {
    expect(n == 2, "both elements done");
    CkPrintf("hashcollide ok\n");
    CkExit(0);
  }
  void many_done(int ends) {
    expect(ends == kEnds * total, "every channel end exchanged");
    many_reduced = true;
  }
  void many_quiet() {
    expect(many_reduced, "quiescence after the last transfer");
    CkPrintf("many ok: %d channel ends per PE\n", kEnds * *elementsPerPe);
    CkExit(0);
  }
  void reopen_round(int r) {
    if (r + 1 < kReopenRounds) {
      reopen.send<&Reopen::go>(r + 1);
      return;
    }
    CkPrintf("reopen ok\n");
    CkExit(0);
  }
};

// ---- bodies that name Main's entries ----------------------------------------------------------
void Pair::run() {
  // Two sub-ids whose former ids for the direction 1 -> 0 were equal (sorted candidates).
  std::uint32_t s1 = 0, s2 = 0;
  std::vector<std::uint64_t> hs;
  for (std::uint32_t n = 1u << 20; s1 == s2; n *= 2) {
    hs.clear();
    for (std::uint32_t s = 0; s < n; ++s)
      hs.push_back(std::uint64_t{former_hash(ckRef().id, ck::index(1), ck::index(0), s)} << 32 | s);
    std::sort(hs.begin(), hs.end());
    for (std::size_t k = 1; k < hs.size() && s1 == s2; ++k)
      if (hs[k] >> 32 == hs[k - 1] >> 32) {
        s1 = static_cast<std::uint32_t>(hs[k - 1]);
        s2 = static_cast<std::uint32_t>(hs[k]);
      }
  }
  const int peer = 1 - thisIndex;
  ck::CkChannel a(thisProxy[thisIndex], thisProxy[peer], s1), b(thisProxy[thisIndex], thisProxy[peer], s2);
  expect(a.in_id() != b.in_id(), "two ends on one PE got the same incoming id");
  Payload out_a{thisIndex, peer, s1, 0}, out_b{thisIndex, peer, s2, 0}, in_a, in_b;
  auto fa = ck::Future<std::size_t>::make(), fb = ck::Future<std::size_t>::make();
  a.recv(&in_a, sizeof in_a, fa.callback());
  b.recv(&in_b, sizeof in_b, fb.callback());
  a.send_wait(&out_a, sizeof out_a);  // most likely before the peer's id is here: it waits
  b.send_wait(&out_b, sizeof out_b);
  expect(fa.get() == sizeof in_a && fb.get() == sizeof in_b, "byte counts");
  expect(in_a == (Payload{peer, thisIndex, s1, 0}), "data on the first channel");
  expect(in_b == (Payload{peer, thisIndex, s2, 0}), "data on the second channel");
  expect(a.ready() && b.ready(), "both channels ready after a transfer");
  if (thisIndex == 0) CkPrintf("sub-ids %u and %u had the same former id\n", s1, s2);
  contribute(1, ck::Reducer::sum, ck::CkCallback::to<&Main::pair_done>(*mainProxy));
}

void Many::maybe_done() {
  if (sent < kEnds || got < kEnds) return;
  for (int j = 0; j < kEnds; ++j)
    if (!(in[static_cast<std::size_t>(j)] == want[static_cast<std::size_t>(j)]))
      CkAbort("element %d: channel end %d got data from %d (sub-id %u), expected %d (sub-id %u)", thisIndex, j,
              in[static_cast<std::size_t>(j)].from, in[static_cast<std::size_t>(j)].sub,
              want[static_cast<std::size_t>(j)].from, want[static_cast<std::size_t>(j)].sub);
  for (auto& c : ch) expect(c.ready(), "ready after a transfer");
  contribute(kEnds, ck::Reducer::sum, ck::CkCallback::to<&Main::many_done>(*mainProxy));
}

void Reopen::step(std::size_t) {
  if (--left > 0) return;
  expect(in == (Payload{1 - thisIndex, thisIndex, 3, static_cast<std::uint32_t>(round)}), "data after reopening");
  ids_here().erase(ch.in_id());
  ch.close();
  expect(!ch.is_open(), "closed");
  contribute(round, ck::Reducer::max, ck::CkCallback::to<&Main::reopen_round>(*mainProxy));
}

}  // namespace

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
