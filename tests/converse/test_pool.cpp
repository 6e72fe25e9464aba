#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "pool.h"

using ucharm::converse::MsgPool;
using ucharm::converse::prefix_of;

TEST(MsgPool, SizeClassesArePowersOfTwoFrom64Bytes) {
  EXPECT_EQ(MsgPool::class_of(0), 0);
  EXPECT_EQ(MsgPool::class_of(64), 0);
  EXPECT_EQ(MsgPool::class_of(65), 1);
  EXPECT_EQ(MsgPool::class_of(128), 1);
  EXPECT_EQ(MsgPool::class_of(32 * 1024), 9);
  EXPECT_EQ(MsgPool::class_of(MsgPool::kMaxPooled), static_cast<int>(MsgPool::kMaxShift - MsgPool::kMinShift));
  EXPECT_EQ(MsgPool::class_of(MsgPool::kMaxPooled + 1), -1);
}

TEST(MsgPool, ReleasedBlocksAreReusedAndAligned) {
  MsgPool pool;
  void* a = pool.alloc(100);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % 16, 0u);
  std::memset(a, 0xab, 100);
  pool.release(a);
  void* b = pool.alloc(120);  // same 128-byte class
  EXPECT_EQ(a, b);
  pool.release(b);
  void* big = pool.alloc(MsgPool::kMaxPooled + 1);  // not pooled: plain malloc
  EXPECT_EQ(prefix_of(big)->size_class, -1);
  pool.release(big);
}

TEST(MsgPool, ReferenceCountKeepsTheBlockAlive) {
  MsgPool pool;
  void* a = pool.alloc(64);
  ++prefix_of(a)->refcount;  // a second holder (e.g. a send in flight)
  pool.release(a);
  EXPECT_EQ(prefix_of(a)->refcount, 1);
  void* b = pool.alloc(64);
  EXPECT_NE(a, b);  // a is still in use
  pool.release(a);
  pool.release(b);
}
