// The isomalloc slice heap in one process: storms of malloc/free/realloc/memalign checked
// against a shadow model, alignment, big blocks giving pages back, reuse after free, used
// bytes, and pack/release/unpack of a slice at the same addresses (and its refusals).
// main() calls CmiIsomallocInit first, as a program with migratable threads does.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <ucharm/converse.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// A fresh slice per test (ids differ so a failed test leaves no slice in the next one's way).
struct Slice {
  CmiIsoSlice* s;
  explicit Slice(int id) : s(CmiIsomallocSlice(id)) {}
  ~Slice() {
    if (s) CmiIsoSliceRelease(s);
  }
};

void fill(void* p, std::size_t n, std::uint32_t seed) {
  auto* b = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(seed * 131 + i * 7);
}
bool holds(const void* p, std::size_t n, std::uint32_t seed) {
  auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i)
    if (b[i] != static_cast<unsigned char>(seed * 131 + i * 7)) return false;
  return true;
}

// Pages of [p, p+n) in memory now.
std::size_t resident_pages(const void* p, std::size_t n) {
  std::uintptr_t lo = addr(p) & ~std::uintptr_t{4095}, hi = (addr(p) + n + 4095) & ~std::uintptr_t{4095};
  std::vector<unsigned char> v((hi - lo) / 4096);
  if (mincore(reinterpret_cast<void*>(lo), hi - lo, v.data()) != 0) return SIZE_MAX;
  std::size_t k = 0;
  for (unsigned char c : v) k += c & 1;
  return k;
}

TEST(Isomalloc, SetUpWithFixedLayout) {
  ASSERT_TRUE(CmiIsomallocReady()) << CmiIsomallocError();
  EXPECT_TRUE(CmiIsomallocCanMigrate()) << CmiIsomallocError();
  EXPECT_GE(CmiIsomallocNumSlices(), 16);
  EXPECT_EQ(CmiIsomallocSlice(CmiIsomallocNumSlices()), nullptr);
  EXPECT_NE(std::string(CmiIsomallocError()).find("does not exist"), std::string::npos);
}

TEST(Isomalloc, MallocFreeUsedBytesAndReuse) {
  Slice sl(1);
  ASSERT_NE(sl.s, nullptr) << CmiIsomallocError();
  EXPECT_EQ(CmiIsoUsedBytes(sl.s), 0u);
  void* a = CmiIsoMalloc(sl.s, 100);
  void* b = CmiIsoMalloc(sl.s, 100);
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(CmiIsomallocContains(a));
  EXPECT_EQ(CmiIsoSliceOf(a), sl.s);
  EXPECT_EQ(addr(a) % 16, 0u);
  EXPECT_GE(CmiIsoUsableSize(a), 100u);
  EXPECT_EQ(CmiIsoUsedBytes(sl.s), 2 * (CmiIsoUsableSize(a) + 16));
  CmiIsoFree(sl.s, a);
  EXPECT_EQ(CmiIsoMalloc(sl.s, 100), a);  // the freed block serves the same size again
  void* z = CmiIsoCalloc(sl.s, 10, 100);
  ASSERT_NE(z, nullptr);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(static_cast<char*>(z)[i], 0);
  CmiIsoFree(sl.s, z);
  CmiIsoFree(sl.s, a);
  CmiIsoFree(sl.s, b);
  EXPECT_EQ(CmiIsoUsedBytes(sl.s), 0u);
  EXPECT_EQ(CmiIsoSliceCheck(sl.s), nullptr);
}

TEST(Isomalloc, MemalignAnyPowerOfTwo) {
  Slice sl(2);
  ASSERT_NE(sl.s, nullptr);
  std::vector<void*> ps;
  for (std::size_t align = 1; align <= (std::size_t{4} << 20); align *= 2)
    for (std::size_t n : {1u, 40u, 3000u, 70000u}) {
      void* p = CmiIsoMemalign(sl.s, align, n);
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(addr(p) % align, 0u) << align;
      std::memset(p, 0xab, n);
      ps.push_back(p);
      ASSERT_EQ(CmiIsoSliceCheck(sl.s), nullptr) << CmiIsoSliceCheck(sl.s);
    }
  EXPECT_EQ(CmiIsoMemalign(sl.s, 48, 10), nullptr);
  EXPECT_NE(std::string(CmiIsomallocError()).find("power of two"), std::string::npos);
  for (void* p : ps) CmiIsoFree(sl.s, p);
  EXPECT_EQ(CmiIsoUsedBytes(sl.s), 0u);
}

// calloc from the top of the heap zeroes only what was written before: bytes the heap used
// and gave back without returning their pages must read as zero too.
TEST(Isomalloc, CallocAfterTheTopShrank) {
  Slice sl(9);
  ASSERT_NE(sl.s, nullptr);
  for (std::size_t dirty : {std::size_t{40000}, std::size_t{300000}}) {
    void* a = CmiIsoMalloc(sl.s, dirty);
    ASSERT_NE(a, nullptr);
    std::memset(a, 0xff, dirty);
    CmiIsoFree(sl.s, a);
    const std::size_t n = 3 * dirty;
    auto* z = static_cast<unsigned char*>(CmiIsoCalloc(sl.s, 1, n));
    ASSERT_NE(z, nullptr);
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < n; ++i) nonzero += z[i] != 0;
    EXPECT_EQ(nonzero, 0u) << dirty;
    CmiIsoFree(sl.s, z);
  }
  EXPECT_EQ(CmiIsoUsedBytes(sl.s), 0u);
}

// A request larger than the slice's heap: nullptr, and the error names the slice.
TEST(Isomalloc, RequestLargerThanTheSlice) {
  Slice sl(10);
  ASSERT_NE(sl.s, nullptr);
  EXPECT_EQ(CmiIsoMalloc(sl.s, CmiIsomallocSliceBytes()), nullptr);
  EXPECT_NE(std::string(CmiIsomallocError()).find("does not fit slice 10"), std::string::npos) << CmiIsomallocError();
  void* p = CmiIsoMalloc(sl.s, 100);  // the heap goes on
  EXPECT_NE(p, nullptr);
  CmiIsoFree(sl.s, p);
}

// Random operations against a shadow map of (pointer -> size, seed).
TEST(Isomalloc, StormMatchesShadowModel) {
  Slice sl(3);
  ASSERT_NE(sl.s, nullptr);
  std::mt19937_64 rng(12345);
  struct Live {
    std::size_t n;
    std::uint32_t seed;
  };
  std::map<void*, Live> live;
  std::vector<void*> keys;
  auto size_of = [&] {
    std::uint64_t r = rng() % 100;
    if (r < 70) return 1 + rng() % 512;
    if (r < 95) return 1 + rng() % 16384;
    return 1 + rng() % (2u << 20);
  };
  std::size_t peak_used = 0;
  for (int op = 0; op < 40000; ++op) {
    std::uint64_t kind = rng() % 10;
    if (live.empty() || kind < 4) {
      std::size_t n = size_of();
      void* p = (kind == 0) ? CmiIsoMemalign(sl.s, std::size_t{1} << (rng() % 13), n) : CmiIsoMalloc(sl.s, n);
      ASSERT_NE(p, nullptr);
      ASSERT_EQ(live.count(p), 0u) << "a live block handed out twice";
      // No overlap with the neighbours in the shadow model.
      auto it = live.lower_bound(p);
      if (it != live.end()) {
        ASSERT_LE(addr(p) + n, addr(it->first));
      }
      if (it != live.begin()) {
        auto pr = std::prev(it);
        ASSERT_LE(addr(pr->first) + pr->second.n, addr(p));
      }
      auto seed = static_cast<std::uint32_t>(rng());
      fill(p, n, seed);
      live[p] = {n, seed};
      keys.push_back(p);
    } else {
      std::size_t k = rng() % keys.size();
      void* p = keys[k];
      Live l = live[p];
      ASSERT_TRUE(holds(p, l.n, l.seed)) << "block contents changed";
      live.erase(p);
      keys[k] = keys.back();
      keys.pop_back();
      if (kind < 7) {
        CmiIsoFree(sl.s, p);
      } else {
        std::size_t n = size_of();
        void* q = CmiIsoRealloc(sl.s, p, n);
        ASSERT_NE(q, nullptr);
        ASSERT_TRUE(holds(q, std::min(n, l.n), l.seed)) << "realloc lost the contents";
        fill(q, n, l.seed + 1);
        live[q] = {n, l.seed + 1};
        keys.push_back(q);
      }
    }
    peak_used = std::max(peak_used, CmiIsoUsedBytes(sl.s));
    if (op % 2000 == 0) {
      ASSERT_EQ(CmiIsoSliceCheck(sl.s), nullptr) << CmiIsoSliceCheck(sl.s);
    }
  }
  ASSERT_EQ(CmiIsoSliceCheck(sl.s), nullptr) << CmiIsoSliceCheck(sl.s);
  for (auto& [p, l] : live) {
    ASSERT_TRUE(holds(p, l.n, l.seed));
    CmiIsoFree(sl.s, p);
  }
  EXPECT_EQ(CmiIsoUsedBytes(sl.s), 0u);
  EXPECT_EQ(CmiIsoSliceCheck(sl.s), nullptr);
  // Everything freed: the heap is back to its header, and so is what a pack would copy.
  EXPECT_LT(CmiIsoSlicePackSize(sl.s), 8192u);
}

TEST(Isomalloc, BigFreeGivesPagesBackAndPackSkipsThem) {
  Slice sl(4);
  ASSERT_NE(sl.s, nullptr);
  constexpr std::size_t kBig = 32u << 20;
  void* a = CmiIsoMalloc(sl.s, kBig);
  void* b = CmiIsoMalloc(sl.s, kBig);
  void* c = CmiIsoMalloc(sl.s, 1000);  // keeps b from merging into the top
  ASSERT_TRUE(a && b && c);
  std::memset(a, 1, kBig);
  std::memset(b, 2, kBig);
  EXPECT_GE(resident_pages(b, kBig), kBig / 4096 - 1);
  std::size_t full = CmiIsoSlicePackSize(sl.s);
  EXPECT_GE(full, 2 * kBig);
  CmiIsoFree(sl.s, b);
  EXPECT_LE(resident_pages(b, kBig), 2u) << "a big free gives its pages back";
  std::size_t after = CmiIsoSlicePackSize(sl.s);
  EXPECT_LT(after, kBig + (1u << 20)) << "the pack skips the free block";
  // The freed space serves the next big request (no growth of the heap).
  void* d = CmiIsoMalloc(sl.s, kBig - 4096);
  EXPECT_EQ(d, b);
  CmiIsoFree(sl.s, d);
  CmiIsoFree(sl.s, a);
  CmiIsoFree(sl.s, c);
  EXPECT_EQ(CmiIsoUsedBytes(sl.s), 0u);
  EXPECT_LE(resident_pages(a, 2 * kBig), 2u) << "freeing the top gives pages back";
}

TEST(Isomalloc, UntouchedHeapReservationStaysUnbacked) {
  Slice sl(5);
  ASSERT_NE(sl.s, nullptr);
  auto* p = static_cast<char*>(CmiIsoMalloc(sl.s, 64u << 20));
  ASSERT_NE(p, nullptr);
  EXPECT_LE(resident_pages(p, 64u << 20), 2u);
  p[10u << 20] = 1;
  EXPECT_LE(resident_pages(p, 64u << 20), 3u);
  CmiIsoFree(sl.s, p);
}

// A heap with pointers inside it travels through pack/release/unpack intact.
TEST(Isomalloc, PackReleaseUnpackAtTheSameAddresses) {
  auto* s = CmiIsomallocSlice(6);
  ASSERT_NE(s, nullptr);
  struct Node {
    Node* next;
    std::uint64_t value;
  };
  Node* head = nullptr;
  for (int i = 0; i < 5000; ++i) {
    auto* n = static_cast<Node*>(CmiIsoMalloc(s, sizeof(Node) + static_cast<std::size_t>(i % 300)));
    n->next = head;
    n->value = static_cast<std::uint64_t>(i) * 977;
    head = n;
  }
  void* big = CmiIsoMalloc(s, 8u << 20);
  fill(big, 8u << 20, 99);
  void* hole = CmiIsoMalloc(s, 4u << 20);
  void* tail = CmiIsoMalloc(s, 64);
  CmiIsoFree(s, hole);
  std::size_t used = CmiIsoUsedBytes(s);
  std::vector<char> pack(CmiIsoSlicePackSize(s));
  ASSERT_EQ(CmiIsoSlicePack(s, pack.data()), pack.size());
  EXPECT_LT(pack.size(), (8u << 20) + (1u << 20));  // the 4 MiB hole does not travel
  CmiIsoSliceRelease(s);
  EXPECT_EQ(CmiIsoSliceOf(head), nullptr);
  EXPECT_EQ(CmiIsoSliceUnpack(pack.data(), pack.size() - 1), nullptr);
  EXPECT_NE(std::string(CmiIsomallocError()).find("bytes"), std::string::npos) << CmiIsomallocError();
  std::vector<char> bad = pack;
  bad[0] ^= 1;
  EXPECT_EQ(CmiIsoSliceUnpack(bad.data(), bad.size()), nullptr);
  CmiIsoSlice* t = CmiIsoSliceUnpack(pack.data(), pack.size());
  ASSERT_EQ(t, s) << CmiIsomallocError();
  EXPECT_EQ(CmiIsoSliceUnpack(pack.data(), pack.size()), nullptr);  // already here
  EXPECT_NE(std::string(CmiIsomallocError()).find("in use"), std::string::npos);
  EXPECT_EQ(CmiIsoUsedBytes(t), used);
  EXPECT_EQ(CmiIsoSliceCheck(t), nullptr);
  int i = 4999;
  for (Node* n = head; n; n = n->next, --i) ASSERT_EQ(n->value, static_cast<std::uint64_t>(i) * 977);
  EXPECT_EQ(i, -1);
  EXPECT_TRUE(holds(big, 8u << 20, 99));
  EXPECT_EQ(CmiIsoMalloc(t, (4u << 20) - 64), hole);  // the heap goes on where it was
  CmiIsoFree(t, tail);
  CmiIsoSliceRelease(t);
}

}  // namespace

int main(int argc, char** argv) {
  CmiIsomallocInit(argc, argv);  // re-executes with randomization off first
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
