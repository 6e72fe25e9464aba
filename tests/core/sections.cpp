// Sections of chare arrays: core_sections MODE. Each good mode checks itself and ends with
// "MODE ok" from PE 0 and exit 0; each error mode must abort with a clear message.
//   list, box2d, box3d  multicasts reach exactly the members, once each (checked at quiescence)
//   reduce              sum and vector reductions over a 2-D box section, several rounds
//   migrate             members move on every step, while the next multicast and the
//                       reductions are in flight: still once each, results right
//   bad_index, empty, empty_box, not_member, twice   clear errors
#include <ucharm/charm.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;

void expect(bool ok, const char* what) {
  if (!ok) CkAbort("check failed: %s", what);
}

// A member's weight in the sums: depends on its index only.
long weight(const ck::Index& i) {
  long w = 1;
  for (int d = 0; d < i.dims; ++d) w = w * 7 + i.x[d] + 1;
  return w;
}

template <int D>
struct Elem : ck::ArrayElement<Elem<D>, D> {
  ck::CkSectionInfo sec;  // one per section, pup'd: its round number travels with the element
  int steps = 0;
  Elem() = default;
  explicit Elem(CkMigrateMessage*) {}
  void pup(PUP::er& p) override { p | sec; p | steps; }
  void hit(int k);
  void join(ck::CkSectionInfo s);
  void step(int round, bool move);
  void naive(ck::CkSectionInfo s);  // contributes with a fresh copy each time: an error
};

struct Main : ck::MainChare<Main> {
  std::string mode;
  std::vector<ck::Index> members;
  std::map<std::pair<std::string, int>, int> got_count;  // (member, multicast) -> deliveries
  long got_total = 0, expected_total = 0;
  int kinds = 0;  // multicasts per member expected
  bool qd_started = false;
  int rounds = 0, round = 0, results = 0, joined = 0;
  ck::SectionProxy<Elem<1>> sec1;
  ck::SectionProxy<Elem<2>> sec2;

  explicit Main(ck::MainArgs args) {
    expect(args.argc >= 2, "usage: core_sections MODE");
    mode = args.argv[1];
    mainProxy = thisProxy;
    const int P = CkNumPes();
    if (mode == "list") {
      const int n = 4 * P + 3;
      auto a = ck::ArrayProxy<Elem<1>>::create(ck::dims(n), ck::Map::block);
      for (int i = 0; i < n; i += 3) members.push_back(ck::index(i));
      if ((n - 1) % 3 != 0) members.push_back(ck::index(n - 1));
      auto s = a.section(members);
      expect(s.size() == static_cast<std::int64_t>(members.size()), "size() counts the members");
      multicast(s, 3);
    } else if (mode == "box2d") {
      auto a = ck::ArrayProxy<Elem<2>>::create(ck::dims(7, 5), ck::Map::block);
      auto s = a.section_box(ck::index(1, 0), ck::index(7, 5), ck::index(2, 2));
      for (int x = 1; x < 7; x += 2)
        for (int y = 0; y < 5; y += 2) members.push_back(ck::index(x, y));
      expect(s.size() == 9, "the 2-D box has 3 x 3 members");
      multicast(s, 3);
    } else if (mode == "box3d") {
      auto a = ck::ArrayProxy<Elem<3>>::create(ck::dims(4, 3, 5), ck::Map::round_robin);
      auto s = ck::SectionProxy<Elem<3>>::box(a, ck::index(0, 1, 1), ck::index(4, 3, 5), ck::index(3, 1, 2));
      for (int x = 0; x < 4; x += 3)
        for (int y = 1; y < 3; ++y)
          for (int z = 1; z < 5; z += 2) members.push_back(ck::index(x, y, z));
      expect(s.size() == 8, "the 3-D box has 2 x 2 x 2 members");
      multicast(s, 2);
    } else if (mode == "reduce") {
      auto a = ck::ArrayProxy<Elem<2>>::create(ck::dims(6, 6), ck::Map::round_robin);
      sec2 = ck::SectionProxy<Elem<2>>::box(a, ck::index(0, 1), ck::index(5, 6), ck::index(1, 2));
      for (int x = 0; x < 5; ++x)
        for (int y = 1; y < 6; y += 2) members.push_back(ck::index(x, y));
      rounds = 4;
      sec2.send<&Elem<2>::join>(sec2.info());
    } else if (mode == "migrate") {
      const int n = 4 * P + 3;
      auto a = ck::ArrayProxy<Elem<1>>::create(ck::dims(n), ck::Map::block);
      for (int i = 0; i < n; i += 2) members.push_back(ck::index(i));
      sec1 = ck::SectionProxy<Elem<1>>::create(a, members);
      rounds = 8;
      sec1.send<&Elem<1>::join>(sec1.info());
    } else if (mode == "bad_index") {
      auto a = ck::ArrayProxy<Elem<1>>::create(ck::dims(4), ck::Map::block);
      ck::SectionProxy<Elem<1>>::create(a, {ck::index(0), ck::index(4)});
      CkAbort("bad_index: no error");
    } else if (mode == "empty") {
      auto a = ck::ArrayProxy<Elem<1>>::create(ck::dims(4), ck::Map::block);
      ck::SectionProxy<Elem<1>>::create(a, {});
      CkAbort("empty: no error");
    } else if (mode == "empty_box") {
      auto a = ck::ArrayProxy<Elem<2>>::create(ck::dims(4, 4), ck::Map::block);
      ck::SectionProxy<Elem<2>>::box(a, ck::index(0, 2), ck::index(4, 2));
      CkAbort("empty_box: no error");
    } else if (mode == "not_member") {
      auto a = ck::ArrayProxy<Elem<1>>::create(ck::dims(2 * P), ck::Map::block);
      auto s = ck::SectionProxy<Elem<1>>::create(a, {ck::index(0)});
      a[1].send<&Elem<1>::join>(s.info());  // not a member (its home, PE 0, is in the tree), yet contributes
    } else if (mode == "twice") {
      auto a = ck::ArrayProxy<Elem<1>>::create(ck::dims(2 * P), ck::Map::block);
      auto s = ck::SectionProxy<Elem<1>>::create(a, {ck::index(0), ck::index(2 * P - 1)});
      s.send<&Elem<1>::naive>(s.info());
      s.send<&Elem<1>::naive>(s.info());
    } else {
      CkAbort("unknown mode '%s'", mode.c_str());
    }
  }

  template <class S>
  void multicast(const S& s, int k) {
    kinds = k;
    expected_total = static_cast<long>(members.size()) * k;
    for (int i = 0; i < k; ++i) s.template send<&S::element_type::hit>(i);
  }

  int away = 0;  // migrate: deliveries to a member that was not on its home PE
  void got(ck::Index idx, int k, int pe) {
    if (mode == "migrate" && pe != sec1.array().at(idx).home_pe()) ++away;
    ++got_count[{idx.str(), k}];
    ++got_total;
    maybe_qd();
  }
  void maybe_qd() {
    if (qd_started || got_total < expected_total || round < rounds) return;
    qd_started = true;  // quiescence: nothing more is on its way, so the counts are final
    ck::start_qd(ck::CkCallback::to<&Main::quiet>(thisProxy));
  }
  void quiet() {
    expect(got_total == expected_total, "no extra deliveries after the expected ones");
    for (const ck::Index& m : members)
      for (int k = 0; k < kinds; ++k) {
        auto it = got_count.find({m.str(), k});
        if (it == got_count.end() || it->second != 1)
          CkAbort("member %s got multicast %d %d times", m.str().c_str(), k, it == got_count.end() ? 0 : it->second);
      }
    expect(got_count.size() == members.size() * static_cast<std::size_t>(kinds), "no non-member got a multicast");
    if (mode == "migrate" && CkNumPes() > 1 && away == 0) CkAbort("migrate: no member ever left its home PE");
    if (mode == "migrate") CkPrintf("migrate: %d of %ld deliveries reached a member away from home\n", away, got_total);
    CkPrintf("%s ok\n", mode.c_str());
    CkExit(0);
  }

  // reduce / migrate: every member joined, then rounds of step multicasts and reductions.
  void on_joined() {
    if (++joined < static_cast<int>(members.size())) return;
    next_round();
  }
  void next_round() {
    if (round == rounds) return maybe_qd();
    const bool move = mode == "migrate";
    if (move) {
      // Two multicasts per round: members move after the first, so the second chases them.
      kinds = 2 * rounds;
      expected_total = static_cast<long>(members.size()) * kinds;
      sec1.send<&Elem<1>::step>(round, true);
      sec1.send<&Elem<1>::hit>(rounds + round);
    } else {
      sec2.send<&Elem<2>::step>(round, false);
    }
  }
  void sum_done(long v) {
    long want = 0;
    for (const ck::Index& m : members) want += weight(m) * (round + 1);
    if (v != want) CkAbort("round %d: section sum %ld, expected %ld", round, v, want);
    result_in();
  }
  void vec_done(std::vector<double> v) {
    expect(v.size() == 2, "the vector sum has two entries");
    if (v[0] != static_cast<double>(members.size()) || v[1] != static_cast<double>(members.size()) * round)
      CkAbort("round %d: vector sum (%g, %g), expected (%zu, %g)", round, v[0], v[1], members.size(),
              static_cast<double>(members.size()) * round);
    result_in();
  }
  void result_in() {
    if (++results < 2) return;
    results = 0;
    ++round;
    next_round();
  }
  void naive_done(long) {}
};

template <int D>
void Elem<D>::hit(int k) {
  mainProxy->template send<&Main::got>(this->ckIndex(), k, CkMyPe());
}
template <int D>
void Elem<D>::join(ck::CkSectionInfo s) {
  sec = s;
  if (s.size() == 1 && this->ckIndex().x[0] != 0) {  // not_member mode: a stranger contributes
    sec.contribute(this, 1L, ck::Reducer::sum, ck::CkCallback::to<&Main::naive_done>(*mainProxy));
    return;
  }
  mainProxy->template send<&Main::on_joined>();
}
template <int D>
void Elem<D>::step(int round, bool move) {
  expect(sec.valid(), "joined before the first step");
  ++steps;
  if (move) mainProxy->template send<&Main::got>(this->ckIndex(), round, CkMyPe());
  sec.contribute(this, weight(this->ckIndex()) * (round + 1), ck::Reducer::sum,
                 ck::CkCallback::to<&Main::sum_done>(*mainProxy));
  sec.contribute(this, std::vector<double>{1.0, static_cast<double>(round)}, ck::Reducer::sum,
                 ck::CkCallback::to<&Main::vec_done>(*mainProxy));
  if (move && CkNumPes() > 1) this->migrateMe((CkMyPe() + 1 + this->ckIndex().x[0] % 3) % CkNumPes());
}
template <int D>
void Elem<D>::naive(ck::CkSectionInfo s) {
  s.contribute(this, 1L, ck::Reducer::sum, ck::CkCallback::to<&Main::naive_done>(*mainProxy));
}

}  // namespace

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
