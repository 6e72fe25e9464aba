// The memory-type cache's range bookkeeping (runtime/machine-ucx/memtype_ranges.h),
// without a GPU: the same class holds the device ranges known to ucharm and the ranges
// already reported to UCX's cache, so a freed range must leave it and a reused address
// must be treated as new.
#include <gtest/gtest.h>

#include "memtype_ranges.h"

namespace {

using ucharm::machine::RangeSet;

TEST(RangeSet, FindsAddressesInsideRangesOnly) {
  RangeSet s;
  s.insert(0x1000, 0x1000);
  EXPECT_FALSE(s.contains(0xfff));
  EXPECT_TRUE(s.contains(0x1000));
  EXPECT_TRUE(s.contains(0x1fff));
  EXPECT_FALSE(s.contains(0x2000));
  EXPECT_TRUE(s.covers(0x1000, 0x1000));
  EXPECT_TRUE(s.covers(0x1800, 0x10));
  EXPECT_FALSE(s.covers(0x1800, 0x1000));  // runs past the end
  EXPECT_FALSE(s.covers(0x3000, 1));
}

TEST(RangeSet, AFreedRangeIsForgottenSoAReusedAddressIsNew) {
  RangeSet reported;
  reported.insert(0x10000, 0x4000);
  ASSERT_TRUE(reported.covers(0x10000, 0x4000));
  EXPECT_EQ(reported.erase(0x10000, 0x4000), 1u);  // the free event
  EXPECT_TRUE(reported.empty());
  EXPECT_FALSE(reported.covers(0x10000, 0x4000));  // a new allocation there: report again
}

TEST(RangeSet, AFreeOfPartOrOfAnOverlappingSpanDropsEveryTouchedRange) {
  RangeSet s;
  s.insert(0x1000, 0x1000);
  s.insert(0x3000, 0x1000);
  s.insert(0x5000, 0x1000);
  EXPECT_EQ(s.erase(0x1800, 0x2000), 2u);  // touches the first two
  EXPECT_FALSE(s.contains(0x1000));
  EXPECT_FALSE(s.contains(0x3000));
  EXPECT_TRUE(s.contains(0x5000));
  EXPECT_EQ(s.erase(0x5800, 0), 1u);  // length 0: the range holding the address
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.erase(0x9000, 0x1000), 0u);  // nothing there
}

TEST(RangeSet, AdjacentRangesAreNotTouchedByAFree) {
  RangeSet s;
  s.insert(0x1000, 0x1000);
  s.insert(0x2000, 0x1000);
  EXPECT_EQ(s.erase(0x2000, 0x1000), 1u);
  EXPECT_TRUE(s.contains(0x1fff));
  EXPECT_EQ(s.size(), 1u);
}

TEST(RangeSet, ANewRangeReplacesTheRangesItOverlaps) {
  RangeSet s;
  s.insert(0x1000, 0x1000);
  s.insert(0x3000, 0x1000);
  s.insert(0x1800, 0x2000);  // a larger allocation over both (their frees were missed)
  EXPECT_EQ(s.size(), 1u);
  EXPECT_TRUE(s.covers(0x1800, 0x2000));
  EXPECT_FALSE(s.contains(0x1000));
}

TEST(RangeSet, ManyAllocateFreeCyclesLeaveNothingBehind) {
  RangeSet s;
  for (std::uintptr_t i = 0; i < 10000; ++i) {
    const std::uintptr_t a = 0x100000 + (i % 7) * 0x10000;
    s.insert(a, 0x8000);
    s.erase(a, 0x8000);
  }
  EXPECT_TRUE(s.empty());
}

}  // namespace

namespace {

using ucharm::machine::MemtypeRanges;

TEST(MemtypeRanges, ARangeIsReportedOnceUntilItIsFreed) {
  MemtypeRanges r;
  r.learn(0x10000, 0x4000);
  EXPECT_TRUE(r.known_device(0x12000));
  EXPECT_TRUE(r.needs_report(0x10000, 0x4000));
  EXPECT_FALSE(r.needs_report(0x10000, 0x4000));  // already in UCX's cache
  r.forget(0x10000, 0x4000);                      // cudaFree, seen by the hooks
  EXPECT_FALSE(r.known_device(0x12000));
  EXPECT_EQ(r.reported_ranges(), 0u);
  // A new allocation at the same address: UCX's cache lost the old one, so report again.
  r.learn(0x10000, 0x2000);
  EXPECT_TRUE(r.needs_report(0x10000, 0x2000));
}

TEST(MemtypeRanges, StaysBoundedOverManyAllocationsAndFrees) {
  MemtypeRanges r;
  for (std::uintptr_t i = 0; i < 100000; ++i) {
    const std::uintptr_t a = 0x1000000 + i * 0x10000;  // every allocation somewhere new
    r.learn(a, 0x8000);
    r.needs_report(a, 0x8000);
    r.forget(a, 0x8000);
  }
  EXPECT_EQ(r.known_ranges(), 0u);
  EXPECT_EQ(r.reported_ranges(), 0u);
}

TEST(MemtypeRanges, WithoutSeenFreesNothingIsCachedAndReportsStayBounded) {
  MemtypeRanges r(false);
  r.learn(0x10000, 0x4000);
  EXPECT_FALSE(r.known_device(0x10000));  // could go stale: always ask the driver
  for (std::uintptr_t i = 0; i < 3 * MemtypeRanges::kMaxReportedUnseen; ++i)
    r.needs_report(0x1000000 + i * 0x10000, 0x8000);
  EXPECT_LE(r.reported_ranges(), MemtypeRanges::kMaxReportedUnseen);
}

}  // namespace
