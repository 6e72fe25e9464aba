// Load-balancing strategies (private to the core, not installed): pure functions from the
// measured loads of one balancing step to a new PE for every object. The runtime gathers
// Stats on one PE, calls a Strategy there and sends the mapping out; nothing here touches
// the runtime, so the strategies are unit-tested on synthetic loads
// (tests/core/test_lb_strategy.cpp). docs/programming-guide/load-balancing-strategies.md
// describes each one for users.
//
// Model: a PE's time is (background + loads of its objects) / speed. An object's load is
// work in units of a speed-1 PE's time and keeps its value on any PE. Every strategy keeps
// non-migratable objects where they are and is deterministic (same Stats, same mapping on
// any machine): the decision is made once, and tests compare it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ck::detail::lb {

struct Object {
  std::uint64_t id;  // opaque to the strategies
  int pe;            // where the object is now
  double load;       // measured work since the last step (seconds, or any common unit)
  bool migratable = true;
};

struct Edge {
  std::uint32_t a, b;  // indices into Stats::objects; (a,b) and (b,a) are added together
  double bytes;
};

struct Stats {
  int num_pes;
  std::vector<double> pe_background;  // per PE: load not attributable to objects (empty = 0s)
  std::vector<double> pe_speed;       // optional relative speeds (empty = all 1)
  std::vector<Object> objects;
  std::vector<Edge> edges;  // communication graph (may be empty)
};

// New PE for every object (same order as stats.objects). Throws std::invalid_argument on
// malformed Stats (num_pes < 1, a PE or edge index out of range, vectors of the wrong
// size, a negative or non-finite load or bytes, a speed <= 0), naming the cause; Metis
// throws std::runtime_error if METIS itself reports an error.
using Strategy = std::vector<int> (*)(const Stats&);

// Looks up a strategy by its Charm++/charm4py name ("GreedyRefineLB") or short form
// ("GreedyRefine"), case-sensitive like Charm++. nullptr if unknown.
Strategy find_strategy(const std::string& name);

// Every accepted name, comma-separated (for the "unknown +balancer" error message).
std::string strategy_names();

// Imbalance of a mapping: the largest PE time over the average PE time (1.0 = perfect;
// 1.0 also when there is no load at all). Throws std::invalid_argument like a Strategy,
// and if mapping's size or a PE in it is wrong.
double max_over_avg(const Stats& stats, const std::vector<int>& mapping);

// The strategies themselves (find_strategy returns these).
std::vector<int> greedy(const Stats& stats);
std::vector<int> greedy_refine(const Stats& stats);
std::vector<int> refine(const Stats& stats);
std::vector<int> metis(const Stats& stats);
std::vector<int> random(const Stats& stats);
std::vector<int> rotate(const Stats& stats);
std::vector<int> dummy(const Stats& stats);

// Tolerances, relative to the best max PE time each strategy aims for.
inline constexpr double kGreedyRefineTolerance = 1.05;  // of Greedy's max
inline constexpr double kRefineTolerance = 1.05;        // of the lower bound (see .cpp)

}  // namespace ck::detail::lb
