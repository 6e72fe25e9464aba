// Load-balancing strategies: see lb_strategy.h for the model and
// docs/programming-guide/load-balancing-strategies.md for what each one is for.
#include "lb_strategy.h"

#include <metis.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace ck::detail::lb {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("load balancer: " + what);
}

bool finite_nonneg(double v) { return std::isfinite(v) && v >= 0; }

void validate(const Stats& s) {
  if (s.num_pes < 1) fail("num_pes is " + std::to_string(s.num_pes) + " (must be at least 1)");
  const auto np = static_cast<std::size_t>(s.num_pes);
  if (!s.pe_background.empty() && s.pe_background.size() != np)
    fail("pe_background has " + std::to_string(s.pe_background.size()) + " entries for " +
         std::to_string(np) + " PEs");
  if (!s.pe_speed.empty() && s.pe_speed.size() != np)
    fail("pe_speed has " + std::to_string(s.pe_speed.size()) + " entries for " +
         std::to_string(np) + " PEs");
  for (std::size_t p = 0; p < s.pe_background.size(); ++p)
    if (!finite_nonneg(s.pe_background[p]))
      fail("PE " + std::to_string(p) + "'s background load is negative or not finite");
  for (std::size_t p = 0; p < s.pe_speed.size(); ++p)
    if (!(std::isfinite(s.pe_speed[p]) && s.pe_speed[p] > 0))
      fail("PE " + std::to_string(p) + "'s speed is not a positive number");
  for (std::size_t i = 0; i < s.objects.size(); ++i) {
    const Object& o = s.objects[i];
    if (o.pe < 0 || o.pe >= s.num_pes)
      fail("object " + std::to_string(i) + " is on PE " + std::to_string(o.pe) + " of " +
           std::to_string(np));
    if (!finite_nonneg(o.load))
      fail("object " + std::to_string(i) + "'s load is negative or not finite");
  }
  for (std::size_t e = 0; e < s.edges.size(); ++e) {
    const Edge& ed = s.edges[e];
    if (ed.a >= s.objects.size() || ed.b >= s.objects.size())
      fail("edge " + std::to_string(e) + " names object " +
           std::to_string(std::max(ed.a, ed.b)) + " of " + std::to_string(s.objects.size()));
    if (!finite_nonneg(ed.bytes))
      fail("edge " + std::to_string(e) + "'s bytes are negative or not finite");
  }
}

double speed(const Stats& s, int p) { return s.pe_speed.empty() ? 1.0 : s.pe_speed[p]; }

// Load that never moves: background plus non-migratable objects.
std::vector<double> fixed_loads(const Stats& s) {
  std::vector<double> load(s.num_pes, 0.0);
  for (std::size_t p = 0; p < s.pe_background.size(); ++p) load[p] = s.pe_background[p];
  for (const Object& o : s.objects)
    if (!o.migratable) load[o.pe] += o.load;
  return load;
}

std::vector<int> current(const Stats& s) {
  std::vector<int> map(s.objects.size());
  for (std::size_t i = 0; i < map.size(); ++i) map[i] = s.objects[i].pe;
  return map;
}

// Migratable objects, heaviest first (ties by index, for determinism).
std::vector<std::uint32_t> migratable_by_load(const Stats& s) {
  std::vector<std::uint32_t> order;
  for (std::uint32_t i = 0; i < s.objects.size(); ++i)
    if (s.objects[i].migratable) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) {
    return s.objects[x].load > s.objects[y].load;
  });
  return order;
}

double total_load(const Stats& s) {
  double t = 0;
  for (double b : s.pe_background) t += b;
  for (const Object& o : s.objects) t += o.load;
  return t;
}

double total_speed(const Stats& s) {
  double t = 0;
  for (int p = 0; p < s.num_pes; ++p) t += speed(s, p);
  return t;
}

// The best max PE time a tolerance is measured against: the average PE time, or the
// heaviest migratable object alone on the fastest PE if that is more.
double lower_bound(const Stats& s) {
  double heaviest = 0, fastest = 0;
  for (const Object& o : s.objects)
    if (o.migratable) heaviest = std::max(heaviest, o.load);
  for (int p = 0; p < s.num_pes; ++p) fastest = std::max(fastest, speed(s, p));
  return std::max(total_load(s) / total_speed(s), heaviest / fastest);
}

// PE loads ordered by time (load / speed), ties by PE number.
class PeQueue {
 public:
  PeQueue(const Stats& s, std::vector<double> load) : s_(s), load_(std::move(load)) {
    for (int p = 0; p < s.num_pes; ++p) order_.emplace(time(p), p);
  }
  double load(int p) const { return load_[p]; }
  double time(int p) const { return load_[p] / speed(s_, p); }
  double time_with(int p, double w) const { return (load_[p] + w) / speed(s_, p); }
  int least() const { return order_.begin()->second; }
  double max_time() const { return order_.rbegin()->first; }
  const std::set<std::pair<double, int>>& order() const { return order_; }
  void add(int p, double w) {
    order_.erase({time(p), p});
    load_[p] += w;
    order_.emplace(time(p), p);
  }

 private:
  const Stats& s_;
  std::vector<double> load_;
  std::set<std::pair<double, int>> order_;
};

struct Assignment {
  std::vector<int> map;
  double max_time;
};

Assignment greedy_assign(const Stats& s) {
  PeQueue q(s, fixed_loads(s));
  std::vector<int> map = current(s);
  for (std::uint32_t i : migratable_by_load(s)) {
    // Moving an object of no measured load changes no PE's load: it stays (else all of
    // them would pile onto one PE, e.g. before anything has been measured).
    if (s.objects[i].load <= 0) continue;
    const int p = q.least();
    q.add(p, s.objects[i].load);
    map[i] = p;
  }
  return {std::move(map), q.max_time()};
}

// Moves objects off PEs above time `limit` until none is, or none can be helped. First
// choice: the heaviest object of the most loaded PE that fits on the least loaded PE
// without taking it above the limit (few moves, each object at most once). When no object
// fits (coarse objects), the object that best evens out the two PEs, if that lowers the
// donor's time without raising the receiver to it (for equal speeds this strictly lowers
// the sum of squared loads, so it ends; the move budget guards unequal speeds).
void refine_pass(const Stats& s, std::vector<int>& map, double limit) {
  std::vector<double> load = fixed_loads(s);
  std::vector<std::set<std::pair<double, std::uint32_t>>> objs(s.num_pes);
  for (std::uint32_t i = 0; i < s.objects.size(); ++i) {
    if (!s.objects[i].migratable) continue;
    load[map[i]] += s.objects[i].load;
    if (s.objects[i].load > 0) objs[map[i]].emplace(s.objects[i].load, i);
  }
  PeQueue q(s, std::move(load));
  std::vector<char> stuck(s.num_pes, 0);
  const double slack = 1e-12 * std::max(limit, 1e-300);
  for (std::size_t budget = 4 * s.objects.size() + 4 * s.num_pes + 16; budget > 0; --budget) {
    int d = -1;
    for (auto it = q.order().rbegin(); it != q.order().rend(); ++it)
      if (!stuck[it->second]) {
        d = it->second;
        break;
      }
    if (d < 0 || q.time(d) <= limit + slack) break;
    const int r = q.least();
    if (r == d || objs[d].empty()) {
      stuck[d] = 1;
      continue;
    }
    const double sd = speed(s, d), sr = speed(s, r);
    const double fit = limit * sr - q.load(r);  // largest load r takes under the limit
    auto pick = objs[d].end();
    if (fit > 0) {
      auto it = objs[d].upper_bound({fit, std::numeric_limits<std::uint32_t>::max()});
      if (it != objs[d].begin()) pick = std::prev(it);
    }
    if (pick == objs[d].end()) {
      // Loads below `below` keep r under d's current time; `even` balances the two.
      const double below = (q.time(d) * sr - q.load(r)) * (1 - 1e-9);
      const double even = (q.load(d) * sr - q.load(r) * sd) / (sr + sd);
      auto cost = [&](double w) { return std::max((q.load(d) - w) / sd, q.time_with(r, w)); };
      auto it = objs[d].lower_bound({even, 0});
      if (it != objs[d].end() && it->first < below) pick = it;
      if (it != objs[d].begin()) {
        auto lo = std::prev(it);
        if (lo->first < below && (pick == objs[d].end() || cost(lo->first) < cost(pick->first)))
          pick = lo;
      }
    }
    if (pick == objs[d].end()) {
      stuck[d] = 1;
      continue;
    }
    const auto [w, i] = *pick;
    objs[d].erase(pick);
    objs[r].emplace(w, i);
    q.add(d, -w);
    q.add(r, w);
    map[i] = r;
  }
}

// Groups PEs whose capacities differ by under 3% of the mean: METIS parts may be
// relabelled within a group (noise in measured background load must not block it).
std::vector<int> capacity_groups(const std::vector<double>& cap) {
  std::vector<int> order(cap.size()), group(cap.size());
  for (std::size_t p = 0; p < cap.size(); ++p) order[p] = static_cast<int>(p);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return cap[x] < cap[y]; });
  double mean = 0;
  for (double c : cap) mean += c / static_cast<double>(cap.size());
  int g = -1;
  double first = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const double c = cap[order[k]];
    if (k == 0 || c - first > 0.03 * mean) {
      ++g;
      first = c;
    }
    group[order[k]] = g;
  }
  return group;
}

// PE for each METIS part: greedy maximum-weight matching of parts to PEs (weight: objects
// of the part already on the PE), within capacity groups; leftovers in index order.
std::vector<int> relabel(const Stats& s, const std::vector<std::uint32_t>& verts,
                         const std::vector<idx_t>& part, const std::vector<int>& group) {
  const int np = s.num_pes;
  std::vector<std::uint64_t> keys(verts.size());
  for (std::size_t k = 0; k < verts.size(); ++k)
    keys[k] = (static_cast<std::uint64_t>(part[k]) << 32) |
              static_cast<std::uint32_t>(s.objects[verts[k]].pe);
  std::sort(keys.begin(), keys.end());
  struct Overlap {
    std::size_t count;
    int part, pe;
  };
  std::vector<Overlap> ov;
  for (std::size_t k = 0; k < keys.size();) {
    std::size_t j = k;
    while (j < keys.size() && keys[j] == keys[k]) ++j;
    ov.push_back({j - k, static_cast<int>(keys[k] >> 32), static_cast<int>(keys[k] & 0xffffffffu)});
    k = j;
  }
  std::stable_sort(ov.begin(), ov.end(),
                   [](const Overlap& x, const Overlap& y) { return x.count > y.count; });
  std::vector<int> pe_of(np, -1);
  std::vector<char> taken(np, 0);
  for (const Overlap& o : ov)
    if (pe_of[o.part] < 0 && !taken[o.pe] && group[o.part] == group[o.pe]) {
      pe_of[o.part] = o.pe;
      taken[o.pe] = 1;
    }
  for (int q = 0; q < np; ++q) {
    if (pe_of[q] >= 0) continue;
    for (int p = 0; p < np; ++p)
      if (!taken[p] && group[p] == group[q]) {
        pe_of[q] = p;
        taken[p] = 1;
        break;
      }
  }
  return pe_of;
}

// Scales doubles to METIS integer weights summing to about `target` (room left in idx_t
// for METIS's own sums); a positive value never becomes 0.
std::vector<idx_t> scale(const std::vector<double>& v, double target) {
  double sum = 0;
  for (double x : v) sum += x;
  std::vector<idx_t> out(v.size(), 1);
  if (sum <= 0) return out;
  for (std::size_t k = 0; k < v.size(); ++k)
    out[k] = static_cast<idx_t>(std::max<long long>(1, std::llround(v[k] / sum * target)));
  return out;
}

}  // namespace

std::vector<int> dummy(const Stats& s) {
  validate(s);
  return current(s);
}

std::vector<int> rotate(const Stats& s) {
  validate(s);
  std::vector<int> map = current(s);
  for (std::size_t i = 0; i < map.size(); ++i)
    if (s.objects[i].migratable) map[i] = (map[i] + 1) % s.num_pes;
  return map;
}

std::vector<int> random(const Stats& s) {
  validate(s);
  std::vector<int> map = current(s);
  std::uint64_t state = 0x6c62272e07bb0142ULL;  // fixed seed: same mapping everywhere
  for (std::size_t i = 0; i < map.size(); ++i) {
    if (!s.objects[i].migratable) continue;
    // splitmix64 (its output is specified, unlike std::uniform_int_distribution's).
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    map[i] = static_cast<int>(((z >> 32) * static_cast<std::uint64_t>(s.num_pes)) >> 32);
  }
  return map;
}

std::vector<int> greedy(const Stats& s) {
  validate(s);
  return greedy_assign(s).map;
}

// Greedy's order (heaviest first), but an object stays on its PE while that PE stays
// within kGreedyRefineTolerance of Greedy's max; otherwise it goes to the least loaded PE.
// If that ordering still ends above the tolerance, Greedy's own mapping is returned.
std::vector<int> greedy_refine(const Stats& s) {
  validate(s);
  Assignment g = greedy_assign(s);
  const double limit = kGreedyRefineTolerance * g.max_time;
  PeQueue q(s, fixed_loads(s));
  std::vector<int> map = current(s);
  for (std::uint32_t i : migratable_by_load(s)) {
    const int cur = s.objects[i].pe;
    const double w = s.objects[i].load;
    int to = cur;
    if (q.time_with(cur, w) > limit) {
      const int best = q.least();
      if (q.time_with(best, w) < q.time_with(cur, w)) to = best;
    }
    q.add(to, w);
    map[i] = to;
  }
  if (q.max_time() > limit * (1 + 1e-12)) return std::move(g.map);
  return map;
}

std::vector<int> refine(const Stats& s) {
  validate(s);
  std::vector<int> map = current(s);
  refine_pass(s, map, kRefineTolerance * lower_bound(s));
  return map;
}

// Partitions the graph of migratable objects (vertex weight: load; edge weight: bytes
// both ways) into num_pes parts sized to each PE's free capacity, relabels parts so most
// objects stay, then evens out what METIS left above the tolerance.
std::vector<int> metis(const Stats& s) {
  validate(s);
  const int np = s.num_pes;
  std::vector<int> map = current(s);
  if (np == 1) return map;  // validate() put every object on PE 0
  std::vector<std::uint32_t> verts;
  std::vector<idx_t> vid(s.objects.size(), -1);
  for (std::uint32_t i = 0; i < s.objects.size(); ++i)
    if (s.objects[i].migratable) {
      vid[i] = static_cast<idx_t>(verts.size());
      verts.push_back(i);
    }
  // Edges between migratable objects, both directions, duplicates summed, loops dropped.
  struct Arc {
    idx_t u, v;
    double bytes;
  };
  std::vector<Arc> arcs;
  for (const Edge& e : s.edges) {
    const idx_t u = vid[e.a], v = vid[e.b];
    if (u < 0 || v < 0 || u == v || e.bytes <= 0) continue;
    arcs.push_back({u, v, e.bytes});
    arcs.push_back({v, u, e.bytes});
  }
  // No communication to keep together, or too few objects to fill the parts: a
  // load-only decision, and GreedyRefine's keeps the most objects in place.
  if (arcs.empty() || verts.size() < static_cast<std::size_t>(np)) return greedy_refine(s);
  std::sort(arcs.begin(), arcs.end(),
            [](const Arc& x, const Arc& y) { return x.u != y.u ? x.u < y.u : x.v < y.v; });
  std::vector<Arc> merged;
  for (const Arc& a : arcs) {
    if (!merged.empty() && merged.back().u == a.u && merged.back().v == a.v)
      merged.back().bytes += a.bytes;
    else
      merged.push_back(a);
  }
  idx_t nvtxs = static_cast<idx_t>(verts.size()), ncon = 1, nparts = np, objval = 0;
  std::vector<idx_t> xadj(verts.size() + 1, 0), adjncy(merged.size());
  std::vector<double> bytes(merged.size()), loads(verts.size());
  for (std::size_t k = 0; k < merged.size(); ++k) {
    ++xadj[merged[k].u + 1];
    adjncy[k] = merged[k].v;
    bytes[k] = merged[k].bytes;
  }
  for (std::size_t k = 0; k < verts.size(); ++k) {
    xadj[k + 1] += xadj[k];
    loads[k] = s.objects[verts[k]].load;
  }
  std::vector<idx_t> vwgt = scale(loads, 1 << 26), adjwgt = scale(bytes, 1 << 26);
  // Each PE's share: what it can take before reaching the average time.
  const std::vector<double> fixed = fixed_loads(s);
  const double avg = total_load(s) / total_speed(s);
  std::vector<double> cap(np);
  double cap_sum = 0;
  for (int p = 0; p < np; ++p) cap_sum += cap[p] = std::max(0.0, avg * speed(s, p) - fixed[p]);
  if (cap_sum <= 0)  // nothing migratable weighs anything: share by speed
    for (int p = 0; p < np; ++p) cap_sum += cap[p] = speed(s, p);
  std::vector<real_t> tpwgts(np);
  double floor_sum = 0;
  for (int p = 0; p < np; ++p) floor_sum += std::max(cap[p], 1e-3 * cap_sum / np);
  for (int p = 0; p < np; ++p)
    tpwgts[p] = static_cast<real_t>(std::max(cap[p], 1e-3 * cap_sum / np) / floor_sum);
  std::array<idx_t, METIS_NOPTIONS> options{};
  METIS_SetDefaultOptions(options.data());
  options[METIS_OPTION_NUMBERING] = 0;
  options[METIS_OPTION_SEED] = 1;  // deterministic
  std::vector<idx_t> part(verts.size(), 0);
  // METIS's manual: recursive bisection for up to 8 parts, k-way beyond.
  auto* partition = np > 8 ? &METIS_PartGraphKway : &METIS_PartGraphRecursive;
  const int rc = partition(&nvtxs, &ncon, xadj.data(), adjncy.data(), vwgt.data(), nullptr,
                           adjwgt.data(), &nparts, tpwgts.data(), nullptr, options.data(),
                           &objval, part.data());
  if (rc != METIS_OK)
    throw std::runtime_error("MetisLB: METIS partitioning failed (METIS status " +
                             std::to_string(rc) + ")");
  const std::vector<int> pe_of = relabel(s, verts, part, capacity_groups(cap));
  for (std::size_t k = 0; k < verts.size(); ++k) map[verts[k]] = pe_of[part[k]];
  refine_pass(s, map, kRefineTolerance * lower_bound(s));
  return map;
}

namespace {
struct Named {
  std::string_view name;
  Strategy fn;
};
constexpr std::array<Named, 15> kStrategies{{
    {"GreedyRefineLB", &greedy_refine}, {"GreedyRefine", &greedy_refine},
    {"GreedyLB", &greedy},              {"Greedy", &greedy},
    {"RefineLB", &refine},              {"Refine", &refine},
    {"MetisLB", &metis},                {"Metis", &metis},
    {"RandCentLB", &random},            {"RandCent", &random},
    {"Random", &random},                {"RotateLB", &rotate},
    {"Rotate", &rotate},                {"DummyLB", &dummy},
    {"Dummy", &dummy},
}};
}  // namespace

Strategy find_strategy(const std::string& name) {
  for (const Named& n : kStrategies)
    if (n.name == name) return n.fn;
  return nullptr;
}

std::string strategy_names() {
  std::string out;
  for (const Named& n : kStrategies) {
    if (!out.empty()) out += ", ";
    out += n.name;
  }
  return out;
}

double max_over_avg(const Stats& s, const std::vector<int>& mapping) {
  validate(s);
  if (mapping.size() != s.objects.size())
    fail("mapping has " + std::to_string(mapping.size()) + " entries for " +
         std::to_string(s.objects.size()) + " objects");
  std::vector<double> load(s.num_pes, 0.0);
  for (std::size_t p = 0; p < s.pe_background.size(); ++p) load[p] = s.pe_background[p];
  for (std::size_t i = 0; i < mapping.size(); ++i) {
    if (mapping[i] < 0 || mapping[i] >= s.num_pes)
      fail("mapping puts object " + std::to_string(i) + " on PE " + std::to_string(mapping[i]));
    load[mapping[i]] += s.objects[i].load;
  }
  const double avg = total_load(s) / total_speed(s);
  if (avg <= 0) return 1.0;
  double mx = 0;
  for (int p = 0; p < s.num_pes; ++p) mx = std::max(mx, load[p] / speed(s, p));
  return mx / avg;
}

}  // namespace ck::detail::lb
