#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "queue.h"

using ucharm::converse::MsgQueue;
using ucharm::converse::Ring;

namespace {
void* tag(std::uintptr_t i) { return reinterpret_cast<void*>(i); }
std::uintptr_t id(void* p) { return reinterpret_cast<std::uintptr_t>(p); }
}  // namespace

TEST(Ring, GrowsAndKeepsOrderAcrossWrapAround) {
  Ring r;
  std::uintptr_t next_in = 1, next_out = 1;
  for (int round = 0; round < 50; ++round) {
    for (int k = 0; k < 37 * (round % 7 + 1); ++k) r.push(tag(next_in++));
    for (int k = 0; k < 30 * (round % 5 + 1) && !r.empty(); ++k) ASSERT_EQ(id(r.pop()), next_out++);
  }
  while (!r.empty()) ASSERT_EQ(id(r.pop()), next_out++);
  EXPECT_EQ(next_in, next_out);
}

TEST(MsgQueue, EmptyPopsNull) {
  MsgQueue q;
  EXPECT_EQ(q.pop(), nullptr);
  EXPECT_TRUE(q.empty());
}

TEST(MsgQueue, FifoAmongEqualPriorities) {
  MsgQueue q;
  for (std::uintptr_t i = 1; i <= 1000; ++i) q.push(tag(i), 0, false);
  for (std::uintptr_t i = 1; i <= 1000; ++i) ASSERT_EQ(id(q.pop()), i);
  for (std::uintptr_t i = 1; i <= 1000; ++i) q.push(tag(i), 5, false);
  for (std::uintptr_t i = 1; i <= 1000; ++i) ASSERT_EQ(id(q.pop()), i);
  for (std::uintptr_t i = 1; i <= 1000; ++i) q.push(tag(i), -3, false);
  for (std::uintptr_t i = 1; i <= 1000; ++i) ASSERT_EQ(id(q.pop()), i);
}

TEST(MsgQueue, SmallerPriorityFirstZeroBetweenNegativeAndPositive) {
  MsgQueue q;
  q.push(tag(1), 10, false);
  q.push(tag(2), 0, false);
  q.push(tag(3), -10, false);
  q.push(tag(4), 5, false);
  q.push(tag(5), 0, false);
  q.push(tag(6), -1, false);
  std::vector<std::uintptr_t> got;
  while (void* p = q.pop()) got.push_back(id(p));
  EXPECT_EQ(got, (std::vector<std::uintptr_t>{3, 6, 2, 5, 4, 1}));
}

TEST(MsgQueue, ExpeditedBypassesEverythingInFifoOrder) {
  MsgQueue q;
  q.push(tag(1), -100, false);
  q.push(tag(2), 0, false);
  q.push(tag(3), 50, true);
  q.push(tag(4), -50, true);
  EXPECT_EQ(id(q.pop()), 3u);
  EXPECT_EQ(id(q.pop()), 4u);
  EXPECT_EQ(id(q.pop()), 1u);
  EXPECT_EQ(id(q.pop()), 2u);
}

TEST(MsgQueue, RandomMixMatchesAStableSortByPriority) {
  std::mt19937 rng(7);
  MsgQueue q;
  struct E { int prio; std::uintptr_t i; };
  std::vector<E> all;
  for (std::uintptr_t i = 1; i <= 5000; ++i) {
    int prio = static_cast<int>(rng() % 11) - 5;
    q.push(tag(i), prio, false);
    all.push_back({prio, i});
  }
  std::stable_sort(all.begin(), all.end(), [](const E& a, const E& b) { return a.prio < b.prio; });
  EXPECT_EQ(q.size(), all.size());
  for (const E& e : all) ASSERT_EQ(id(q.pop()), e.i);
}
