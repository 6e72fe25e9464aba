// Load-balancing strategies (runtime/core/lb_strategy.h) on synthetic loads, without a
// runtime: where each strategy puts objects, how balanced the result is, how many objects
// it moves, and that it respects non-migratable objects, background load and speeds.
#include "lb_strategy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace lb = ck::detail::lb;

namespace {

using Fn = std::vector<int> (*)(const lb::Stats&);
struct NamedFn {
  const char* name;
  Fn fn;
};
// The strategies that balance load (Random, Rotate and Dummy do not aim to).
const NamedFn kBalancing[] = {{"Greedy", &lb::greedy},
                              {"GreedyRefine", &lb::greedy_refine},
                              {"Refine", &lb::refine},
                              {"Metis", &lb::metis}};
const NamedFn kAll[] = {{"Greedy", &lb::greedy}, {"GreedyRefine", &lb::greedy_refine},
                        {"Refine", &lb::refine}, {"Metis", &lb::metis},
                        {"Random", &lb::random}, {"Rotate", &lb::rotate},
                        {"Dummy", &lb::dummy}};

lb::Stats make(int pes) {
  lb::Stats s;
  s.num_pes = pes;
  s.pe_background.assign(pes, 0.0);
  return s;
}

void add(lb::Stats& s, int pe, double load, bool migratable = true) {
  s.objects.push_back({static_cast<std::uint64_t>(1000 + s.objects.size()), pe, load, migratable});
}

// Deterministic pseudo-random loads (no dependence on the standard library's engines).
struct Lcg {
  std::uint64_t x;
  double next() {  // in [0, 1)
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(x >> 11) / 9007199254740992.0;
  }
};

std::vector<double> pe_loads(const lb::Stats& s, const std::vector<int>& map) {
  std::vector<double> load(s.pe_background);
  for (std::size_t i = 0; i < map.size(); ++i) load.at(map[i]) += s.objects[i].load;
  return load;
}

int moves(const lb::Stats& s, const std::vector<int>& map) {
  int n = 0;
  for (std::size_t i = 0; i < map.size(); ++i) n += map[i] != s.objects[i].pe;
  return n;
}

double cut_bytes(const lb::Stats& s, const std::vector<int>& map) {
  double c = 0;
  for (const lb::Edge& e : s.edges) c += map[e.a] != map[e.b] ? e.bytes : 0;
  return c;
}

void expect_valid(const lb::Stats& s, const std::vector<int>& map, const char* name) {
  ASSERT_EQ(map.size(), s.objects.size()) << name;
  for (std::size_t i = 0; i < map.size(); ++i) {
    EXPECT_GE(map[i], 0) << name;
    EXPECT_LT(map[i], s.num_pes) << name;
    if (!s.objects[i].migratable) {
      EXPECT_EQ(map[i], s.objects[i].pe) << name << " moved " << i;
    }
  }
}

// 64 objects with loads in [1, 10) spread unevenly over 8 PEs.
lb::Stats heavy_set() {
  lb::Stats s = make(8);
  Lcg r{42};
  for (int i = 0; i < 64; ++i) add(s, (i * i) % 3, 1 + 9 * r.next());
  return s;
}

}  // namespace

TEST(LbStrategy, EqualObjectsOnOnePeSpreadEvenly) {
  lb::Stats s = make(4);
  for (int i = 0; i < 16; ++i) add(s, 0, 1.0);
  for (const NamedFn& f : kBalancing) {
    auto map = f.fn(s);
    expect_valid(s, map, f.name);
    EXPECT_EQ(pe_loads(s, map), (std::vector<double>{4, 4, 4, 4})) << f.name;
    EXPECT_DOUBLE_EQ(lb::max_over_avg(s, map), 1.0) << f.name;
  }
  // With a communication ring Metis partitions for real (no edges: GreedyRefine's path).
  for (std::uint32_t i = 0; i < 16; ++i) s.edges.push_back({i, (i + 1) % 16, 100});
  auto map = lb::metis(s);
  EXPECT_EQ(pe_loads(s, map), (std::vector<double>{4, 4, 4, 4}));
  EXPECT_LE(cut_bytes(s, map), 4 * 100.0);  // four arcs of the ring
}

TEST(LbStrategy, HeavySetNearOptimum) {
  lb::Stats s = heavy_set();
  const double before = lb::max_over_avg(s, lb::dummy(s));
  EXPECT_GT(before, 2.5);
  const double greedy = lb::max_over_avg(s, lb::greedy(s));
  EXPECT_LT(greedy, 1.05);
  const double gr = lb::max_over_avg(s, lb::greedy_refine(s));
  EXPECT_LE(gr, greedy * lb::kGreedyRefineTolerance + 1e-9);
  EXPECT_LT(lb::max_over_avg(s, lb::refine(s)), 1.06);
  EXPECT_LT(lb::max_over_avg(s, lb::metis(s)), 1.06);
  std::cout << "heavy set max/avg: before " << before << ", Greedy " << greedy
            << ", GreedyRefine " << gr << ", Refine " << lb::max_over_avg(s, lb::refine(s))
            << ", Metis " << lb::max_over_avg(s, lb::metis(s)) << "\n";
}

// 8 PEs x 12 objects; each PE's total is exactly 12 unless `uneven` (then they vary by
// about 8%, as measured loads do). Then 3 objects of PE 3 are moved onto PE 5.
lb::Stats almost_balanced(bool uneven) {
  lb::Stats s = make(8);
  Lcg r{7};
  for (int p = 0; p < 8; ++p) {
    double left = 12;
    for (int k = 0; k < 12; ++k) {
      // Exact: 11 objects in [0.8, 1) leave the 12th in (1, 3.2].
      const double w = uneven ? 0.5 + r.next() : k < 11 ? 0.8 + 0.2 * r.next() : left;
      add(s, p, w);
      left -= w;
    }
  }
  for (int k = 0; k < 3; ++k) s.objects[3 * 12 + k].pe = 5;
  return s;
}

TEST(LbStrategy, GreedyRefineMovesFewOnAlmostBalanced) {
  for (bool uneven : {false, true}) {
    const lb::Stats s = almost_balanced(uneven);
    const auto g = lb::greedy(s), gr = lb::greedy_refine(s), rf = lb::refine(s);
    std::cout << (uneven ? "uneven" : "exact") << " 8x12 objects, 3 moved: moves Greedy "
              << moves(s, g) << ", GreedyRefine " << moves(s, gr) << ", Refine " << moves(s, rf)
              << "; max/avg before " << lb::max_over_avg(s, lb::dummy(s)) << ", Greedy "
              << lb::max_over_avg(s, g) << ", GreedyRefine " << lb::max_over_avg(s, gr)
              << ", Refine " << lb::max_over_avg(s, rf) << "\n";
    EXPECT_GT(moves(s, g), 40);
    EXPECT_LE(moves(s, gr), uneven ? 12 : 6);
    EXPECT_LE(moves(s, rf), uneven ? 12 : 6);
    EXPECT_LE(lb::max_over_avg(s, gr),
              lb::max_over_avg(s, g) * lb::kGreedyRefineTolerance + 1e-9);
    EXPECT_LT(lb::max_over_avg(s, rf), 1.06);
  }
}

TEST(LbStrategy, NothingMovesWhenBalanced) {
  lb::Stats s = make(4);
  Lcg r{3};
  for (int p = 0; p < 4; ++p) {  // equal totals per PE from unequal objects
    double left = 10;
    for (int k = 0; k < 4; ++k) {
      const double w = 1 + r.next();
      add(s, p, w);
      left -= w;
    }
    add(s, p, left);
  }
  for (std::uint32_t i = 0; i + 1 < s.objects.size(); ++i) s.edges.push_back({i, i + 1, 1});
  EXPECT_NEAR(lb::max_over_avg(s, lb::dummy(s)), 1.0, 1e-12);
  EXPECT_EQ(moves(s, lb::greedy_refine(s)), 0);
  EXPECT_EQ(moves(s, lb::refine(s)), 0);
  EXPECT_EQ(moves(s, lb::dummy(s)), 0);
  EXPECT_GT(moves(s, lb::greedy(s)), 0);  // Greedy ignores where objects are
}

TEST(LbStrategy, MetisKeepsCliquesTogether) {
  // Two cliques of 8 objects, interleaved over 2 PEs; clique A (even indices) has 6 of its
  // 8 on PE 1, so relabelling should leave A on PE 1. Light traffic between the cliques.
  lb::Stats s = make(2);
  for (int i = 0; i < 16; ++i) {
    const bool a = i % 2 == 0;
    const int k = i / 2;  // index within the clique
    add(s, a ? (k < 6 ? 1 : 0) : (k < 6 ? 0 : 1), 1.0 + 0.01 * k);
  }
  for (std::uint32_t i = 0; i < 16; ++i)
    for (std::uint32_t j = i + 2; j < 16; j += 2) s.edges.push_back({i, j, 1e6});
  for (std::uint32_t i = 0; i + 1 < 16; i += 2) s.edges.push_back({i, i + 1, 10});
  auto map = lb::metis(s);
  expect_valid(s, map, "Metis");
  for (int i = 0; i < 16; ++i) EXPECT_EQ(map[i], i % 2 == 0 ? 1 : 0) << "object " << i;
  EXPECT_NEAR(lb::max_over_avg(s, map), 1.0, 1e-9);
  EXPECT_EQ(moves(s, map), 4);
  EXPECT_EQ(map, lb::metis(s));  // deterministic
}

TEST(LbStrategy, MetisCutsLessThanGreedyOnAGrid) {
  // 16x16 stencil grid over 8 PEs, placed round-robin (the worst placement for traffic).
  lb::Stats s = make(8);
  const std::uint32_t n = 16;
  for (std::uint32_t i = 0; i < n * n; ++i) add(s, static_cast<int>(i % 8), 1.0);
  for (std::uint32_t y = 0; y < n; ++y)
    for (std::uint32_t x = 0; x < n; ++x) {
      if (x + 1 < n) s.edges.push_back({y * n + x, y * n + x + 1, 1000});
      if (y + 1 < n) s.edges.push_back({y * n + x, (y + 1) * n + x, 1000});
    }
  const auto m = lb::metis(s), g = lb::greedy(s);
  std::cout << "16x16 grid on 8 PEs: cut bytes Greedy " << cut_bytes(s, g) << ", Metis "
            << cut_bytes(s, m) << "; Metis max/avg " << lb::max_over_avg(s, m) << "\n";
  EXPECT_LT(cut_bytes(s, m), 0.3 * cut_bytes(s, g));
  EXPECT_LE(lb::max_over_avg(s, m), 1.06);
}

TEST(LbStrategy, MetisCornerCases) {
  lb::Stats one = make(1);
  for (int i = 0; i < 5; ++i) add(one, 0, 1.0 + i);
  one.edges.push_back({0, 1, 5});
  EXPECT_EQ(lb::metis(one), std::vector<int>(5, 0));
  lb::Stats few = make(8);  // fewer objects than PEs, with edges
  for (int i = 0; i < 3; ++i) add(few, 0, 1.0);
  few.edges.push_back({0, 1, 5});
  few.edges.push_back({1, 2, 5});
  auto map = lb::metis(few);
  expect_valid(few, map, "Metis few");
  const auto few_loads = pe_loads(few, map);
  EXPECT_DOUBLE_EQ(*std::max_element(few_loads.begin(), few_loads.end()), 1.0);
  lb::Stats none = make(4);  // no objects at all
  EXPECT_TRUE(lb::metis(none).empty());
  for (int i = 0; i < 8; ++i) add(none, i % 4, 0.0);  // objects of zero load, with edges
  none.edges.push_back({0, 5, 1});
  expect_valid(none, lb::metis(none), "Metis zero loads");
}

TEST(LbStrategy, NonMigratableObjectsStay) {
  lb::Stats s = heavy_set();
  for (std::size_t i = 0; i < s.objects.size(); i += 3) s.objects[i].migratable = false;
  for (std::uint32_t i = 0; i + 1 < s.objects.size(); ++i) s.edges.push_back({i, i + 1, 50});
  for (const NamedFn& f : kAll) expect_valid(s, f.fn(s), f.name);
  // Everything pinned: nothing moves whatever the imbalance.
  for (lb::Object& o : s.objects) o.migratable = false;
  for (const NamedFn& f : kAll) EXPECT_EQ(moves(s, f.fn(s)), 0) << f.name;
}

TEST(LbStrategy, BackgroundLoadCounts) {
  // PE 0 is busy with 8 units of non-object work and holds 8 objects of 1: all should go.
  lb::Stats s = make(2);
  s.pe_background = {8.0, 0.0};
  for (int i = 0; i < 8; ++i) add(s, 0, 1.0);
  for (const NamedFn& f : kBalancing) {
    auto map = f.fn(s);
    EXPECT_EQ(pe_loads(s, map), (std::vector<double>{8, 8})) << f.name;
  }
  s.edges.push_back({0, 1, 10});  // Metis through METIS, not the no-edge path
  EXPECT_EQ(pe_loads(s, lb::metis(s)), (std::vector<double>{8, 8}));
}

TEST(LbStrategy, SpeedsCount) {
  lb::Stats s = make(2);
  s.pe_speed = {1.0, 3.0};
  for (int i = 0; i < 16; ++i) add(s, 0, 1.0);
  for (const NamedFn& f : kBalancing) {
    auto map = f.fn(s);
    EXPECT_EQ(pe_loads(s, map), (std::vector<double>{4, 12})) << f.name;
    EXPECT_NEAR(lb::max_over_avg(s, map), 1.0, 1e-9) << f.name;
  }
}

TEST(LbStrategy, ObjectsWithoutLoadStay) {
  // Nothing measured yet: no strategy that balances load piles everything onto one PE.
  lb::Stats s = make(4);
  for (int i = 0; i < 16; ++i) add(s, i % 4, 0.0);
  for (const NamedFn& f : kBalancing) {
    auto map = f.fn(s);
    std::vector<int> per_pe(4, 0);
    for (int p : map) ++per_pe[p];
    EXPECT_EQ(per_pe, (std::vector<int>{4, 4, 4, 4})) << f.name;
    EXPECT_DOUBLE_EQ(lb::max_over_avg(s, map), 1.0) << f.name;
  }
  s.edges.push_back({0, 1, 8});  // Metis through METIS: weights by count
  auto map = lb::metis(s);
  std::vector<int> per_pe(4, 0);
  for (int p : map) ++per_pe[p];
  EXPECT_LE(*std::max_element(per_pe.begin(), per_pe.end()), 5);
}

TEST(LbStrategy, RefineHandlesCoarseObjects) {
  // 6 equal objects on 4 PEs: the 5% tolerance is out of reach; the best is 2 per PE max.
  lb::Stats s = make(4);
  for (int i = 0; i < 6; ++i) add(s, 0, 1.0);
  auto l = pe_loads(s, lb::refine(s));
  EXPECT_DOUBLE_EQ(*std::max_element(l.begin(), l.end()), 2.0);
}

TEST(LbStrategy, RandomRotateDummy) {
  lb::Stats s = heavy_set();
  s.objects[5].migratable = false;
  auto r = lb::random(s);
  expect_valid(s, r, "Random");
  EXPECT_EQ(r, lb::random(s));  // fixed seed
  std::vector<int> used(s.num_pes, 0);
  for (int p : r) used[p] = 1;
  EXPECT_EQ(std::count(used.begin(), used.end(), 1), s.num_pes);
  auto rot = lb::rotate(s);
  for (std::size_t i = 0; i < s.objects.size(); ++i)
    EXPECT_EQ(rot[i], i == 5 ? s.objects[i].pe : (s.objects[i].pe + 1) % s.num_pes);
  EXPECT_EQ(moves(s, lb::dummy(s)), 0);
}

TEST(LbStrategy, Deterministic) {
  lb::Stats s = heavy_set();
  for (std::uint32_t i = 0; i + 1 < s.objects.size(); ++i) s.edges.push_back({i, i + 1, 50});
  for (const NamedFn& f : kAll) EXPECT_EQ(f.fn(s), f.fn(s)) << f.name;
}

TEST(LbStrategy, FindStrategyByName) {
  const std::pair<const char*, Fn> names[] = {
      {"GreedyLB", &lb::greedy},   {"Greedy", &lb::greedy},
      {"GreedyRefineLB", &lb::greedy_refine}, {"GreedyRefine", &lb::greedy_refine},
      {"RefineLB", &lb::refine},   {"Refine", &lb::refine},
      {"MetisLB", &lb::metis},     {"Metis", &lb::metis},
      {"RandCentLB", &lb::random}, {"Random", &lb::random},
      {"RotateLB", &lb::rotate},   {"Rotate", &lb::rotate},
      {"DummyLB", &lb::dummy},     {"Dummy", &lb::dummy}};
  const std::string list = lb::strategy_names();
  for (const auto& [name, fn] : names) {
    EXPECT_EQ(lb::find_strategy(name), fn) << name;
    EXPECT_NE(list.find(name), std::string::npos) << name;
  }
  for (const char* bad : {"", "greedy", "GREEDYLB", "Foo", "GreedyLB ", "TreeLB"})
    EXPECT_EQ(lb::find_strategy(bad), nullptr) << bad;
}

TEST(LbStrategy, MalformedStatsAreRejected) {
  lb::Stats s = make(2);
  add(s, 2, 1.0);  // PE out of range
  EXPECT_THROW(lb::greedy(s), std::invalid_argument);
  s.objects[0].pe = 1;
  s.edges.push_back({0, 3, 1});  // object index out of range
  EXPECT_THROW(lb::metis(s), std::invalid_argument);
  s.edges.clear();
  s.pe_speed = {1.0};  // wrong size
  EXPECT_THROW(lb::refine(s), std::invalid_argument);
  s.pe_speed.clear();
  s.objects[0].load = -1;
  EXPECT_THROW(lb::greedy_refine(s), std::invalid_argument);
  s.objects[0].load = 1;
  EXPECT_THROW(lb::max_over_avg(s, {0, 1}), std::invalid_argument);
  s.num_pes = 0;
  try {
    lb::dummy(s);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("num_pes"), std::string::npos) << e.what();
  }
}
