// PUP on crafted buffers: lengths from the wire are checked against the bytes left before
// anything is resized (overflow-safe), and a malformed message stops with an error naming
// the type, never a huge allocation or a read past the end.
#include <ucharm/charm.h>

#include <gtest/gtest.h>

#include <array>
#include <bitset>
#include <cstdint>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

namespace {

// A buffer holding a u64 length and then `payload` bytes.
std::vector<char> with_length(std::uint64_t n, std::size_t payload) {
  std::vector<char> b(8 + payload, 0);
  std::memcpy(b.data(), &n, 8);
  return b;
}

template <class T>
void unpack(const std::vector<char>& b, T& v) {
  PUP::er p = PUP::er::unpacker(b.data(), b.size());
  p | v;
}

// Sizes, packs and unpacks `in`; the sizer's count must be what the packer wrote and
// what the unpacker read.
template <class T>
T round_trip(T& in) {
  PUP::er sz = PUP::er::sizer();
  sz | in;
  std::vector<char> buf(sz.size());
  PUP::er pk = PUP::er::packer(buf.data(), buf.size());
  pk | in;
  EXPECT_EQ(pk.size(), sz.size());
  T out{};
  PUP::er up = PUP::er::unpacker(buf.data(), buf.size());
  up | out;
  EXPECT_EQ(up.size(), sz.size());
  EXPECT_EQ(up.remaining(), 0u);
  return out;
}

template <class T>
void expect_round_trip(T in) {
  EXPECT_EQ(round_trip(in), in);
}

TEST(Pup, RoundTripStillWorks) {
  std::vector<double> d = {1.5, 2.5, 3.5};
  std::string s = "hello";
  std::vector<std::string> vs = {"a", "", "ccc"};
  PUP::er sz = PUP::er::sizer();
  sz | d;
  sz | s;
  sz | vs;
  std::vector<char> buf(sz.size());
  PUP::er pk = PUP::er::packer(buf.data(), buf.size());
  pk | d;
  pk | s;
  pk | vs;
  std::vector<double> d2;
  std::string s2;
  std::vector<std::string> vs2;
  PUP::er up = PUP::er::unpacker(buf.data(), buf.size());
  up | d2;
  up | s2;
  up | vs2;
  EXPECT_EQ(d, d2);
  EXPECT_EQ(s, s2);
  EXPECT_EQ(vs, vs2);
  EXPECT_EQ(up.remaining(), 0u);
}

TEST(Pup, MapsAndSets) {
  expect_round_trip(std::map<std::string, int>{{"a", 1}, {"bb", 2}, {"", 3}});
  expect_round_trip(std::map<int, double>{});
  expect_round_trip(std::multimap<int, std::string>{{1, "x"}, {1, "y"}, {0, "z"}});
  expect_round_trip(std::unordered_map<std::string, std::vector<int>>{{"k", {1, 2}}, {"l", {}}});
  expect_round_trip(std::set<std::string>{"b", "a", "c"});
  expect_round_trip(std::multiset<int>{3, 3, 1});
  expect_round_trip(std::unordered_set<long>{5, -7, 1L << 40});
  expect_round_trip(std::unordered_multiset<char>{'a', 'a', 'b'});
  expect_round_trip(std::set<int>{});
}

TEST(Pup, NestedContainers) {
  std::map<std::string, std::vector<std::optional<int>>> m{
      {"one", {1, std::nullopt, 3}}, {"empty", {}}, {"none", {std::nullopt}}};
  expect_round_trip(m);
  expect_round_trip(std::vector<std::map<int, std::set<std::string>>>{{{1, {"a"}}}, {}, {{2, {}}}});
  expect_round_trip(std::deque<std::list<std::string>>{{"a", "b"}, {}, {"c"}});
  expect_round_trip(std::list<std::pair<int, std::string>>{{1, "x"}, {2, ""}});
  expect_round_trip(std::tuple<int, std::string, std::vector<double>, std::optional<std::string>>{
      7, "seven", {7.0, 0.7}, "7"});
  expect_round_trip(std::tuple<>{});
}

TEST(Pup, Optional) {
  expect_round_trip(std::optional<int>{});
  expect_round_trip(std::optional<int>{42});
  expect_round_trip(std::optional<std::string>{"s"});
  expect_round_trip(std::optional<std::vector<int>>{std::vector<int>{}});
  // An engaged optional unpacked over by an empty one is reset.
  std::optional<int> none;
  std::vector<char> buf(1, 0);
  PUP::er pk = PUP::er::packer(buf.data(), buf.size());
  pk | none;
  std::optional<int> was{5};
  PUP::er up = PUP::er::unpacker(buf.data(), buf.size());
  up | was;
  EXPECT_FALSE(was.has_value());
}

TEST(Pup, VariantHoldsEachAlternative) {
  using V = std::variant<int, std::string, std::vector<double>, std::map<int, int>, std::monostate>;
  expect_round_trip(V{std::in_place_index<0>, -3});
  expect_round_trip(V{std::in_place_index<1>, "text"});
  expect_round_trip(V{std::in_place_index<2>, {1.0, 2.0}});
  expect_round_trip(V{std::in_place_index<3>, std::map<int, int>{{1, 2}}});
  expect_round_trip(V{std::in_place_index<4>});
  // Two alternatives of one type are told apart by index.
  using W = std::variant<int, int>;
  W w{std::in_place_index<1>, 9};
  W back = round_trip(w);
  EXPECT_EQ(back.index(), 1u);
  EXPECT_EQ(std::get<1>(back), 9);
}

struct Node {
  int value = 0;
  std::unique_ptr<Node> next;
  void pup(PUP::er& p) { p | value; p | next; }
};

TEST(Pup, UniquePtrNullAndNot) {
  std::unique_ptr<std::string> null;
  EXPECT_EQ(round_trip(null), nullptr);
  auto s = std::make_unique<std::string>("owned");
  auto s2 = round_trip(s);
  ASSERT_NE(s2, nullptr);
  EXPECT_EQ(*s2, "owned");
  EXPECT_NE(s2.get(), s.get());  // unpacking allocates
  Node list{1, std::make_unique<Node>(Node{2, std::make_unique<Node>(Node{3, nullptr})})};
  Node back = round_trip(list);
  ASSERT_TRUE(back.next && back.next->next);
  EXPECT_EQ(back.value + back.next->value + back.next->next->value, 6);
  EXPECT_EQ(back.next->next->next, nullptr);
}

struct Item {
  std::string name;
  std::vector<int> v;
  void pup(PUP::er& p) { p | name; p | v; }
  bool operator==(const Item&) const = default;
};

TEST(Pup, ArraysDequesListsBitsets) {
  expect_round_trip(std::array<std::string, 3>{"a", "", "c"});
  expect_round_trip(std::array<Item, 2>{Item{"x", {1}}, Item{"y", {}}});
  expect_round_trip(std::array<double, 4>{1, 2, 3, 4});
  expect_round_trip(std::array<int, 0>{});
  expect_round_trip(std::deque<int>{1, 2, 3});
  expect_round_trip(std::deque<Item>{Item{"d", {4, 5}}});
  expect_round_trip(std::list<double>{});
  expect_round_trip(std::vector<Item>{Item{"a", {}}, Item{"b", {1, 2, 3}}});
  expect_round_trip(std::vector<bool>{true, false, true});
  expect_round_trip(std::bitset<70>{}.set(0).set(9).set(69));
  expect_round_trip(std::bitset<3>{5});
  expect_round_trip(std::u16string{u"wide"});
}

TEST(Pup, LongStringsAndEmptyOnes) {
  expect_round_trip(std::string{});
  expect_round_trip(std::string(1 << 20, 'z'));  // lengths are 64-bit on the wire
}

struct WithCArray {
  double d[3] = {};
  int n = 0;
  std::unique_ptr<double[]> heap;  // n doubles, marshalled with PUParray
  std::string names[2];
  void pup(PUP::er& p) {
    p | d;
    p | names;
    p | n;
    if (p.isUnpacking()) heap = std::make_unique<double[]>(static_cast<std::size_t>(n));
    PUParray(p, heap.get(), static_cast<std::size_t>(n));
    p(d, 1);  // Charm++'s form: the first element again
    p(n);
  }
};

TEST(Pup, CArraysAndPUParray) {
  WithCArray w;
  w.d[0] = 1.5;
  w.d[2] = -2;
  w.n = 3;
  w.heap = std::make_unique<double[]>(3);
  w.heap[1] = 8;
  w.names[1] = "second";
  WithCArray b = round_trip(w);
  EXPECT_EQ(b.d[0], 1.5);
  EXPECT_EQ(b.d[2], -2);
  EXPECT_EQ(b.n, 3);
  EXPECT_EQ(b.heap[1], 8);
  EXPECT_EQ(b.names[1], "second");
}

// A migrating element's shape: state in several standard containers, pup() as one method.
struct Element {
  int iteration = 0;
  std::unordered_map<int, std::vector<double>> ghosts;
  std::optional<std::tuple<int, int>> pending;
  std::variant<std::monostate, std::string, double> status;
  std::unique_ptr<std::array<float, 4>> scratch;
  void pup(PUP::er& p) { p | iteration; p | ghosts; p | pending; p | status; p | scratch; }
};

TEST(Pup, ElementStateRoundTrip) {
  Element e;
  e.iteration = 12;
  e.ghosts = {{0, {1, 2}}, {5, {}}};
  e.pending = std::tuple{3, 4};
  e.status = 2.5;
  e.scratch = std::make_unique<std::array<float, 4>>(std::array<float, 4>{1, 2, 3, 4});
  Element b = round_trip(e);
  EXPECT_EQ(b.iteration, 12);
  EXPECT_EQ(b.ghosts, e.ghosts);
  EXPECT_EQ(b.pending, e.pending);
  EXPECT_EQ(b.status, e.status);
  ASSERT_NE(b.scratch, nullptr);
  EXPECT_EQ(*b.scratch, *e.scratch);
}

using PupDeath = ::testing::Test;

TEST(PupDeath, VectorLengthWhoseByteCountOverflows) {
  // 2^61 doubles: n * 8 wraps to 0, which a naive bounds check would accept.
  auto b = with_length(std::uint64_t{1} << 61, 16);
  EXPECT_DEATH({ std::vector<double> v; unpack(b, v); },
               "malformed message: a std::vector<double.*claims 2305843009213693952 elements");
}

TEST(PupDeath, HugeStringLengthIsRejectedBeforeResizing) {
  auto b = with_length(std::uint64_t{1} << 40, 3);  // a resize would try to allocate 1 TiB
  EXPECT_DEATH({ std::string s; unpack(b, s); }, "malformed message: a std::.*string.* claims 1099511627776 elements");
}

TEST(PupDeath, VectorOfStringsLongerThanTheBytesLeft) {
  auto b = with_length(1000, 64);  // each string needs at least its 8-byte length
  EXPECT_DEATH({ std::vector<std::string> v; unpack(b, v); }, "malformed message: a std::vector<std::.*string");
}

TEST(PupDeath, SpanWhoseByteCountOverflows) {
  auto b = with_length((std::uint64_t{1} << 61) + 1, 16);
  EXPECT_DEATH({ std::span<const double> v; unpack(b, v); }, "malformed message: a std::span<double const");
}

TEST(PupDeath, TruncatedScalarReadsPastTheEnd) {
  std::vector<char> b(4, 0);
  EXPECT_DEATH({ double d; unpack(b, d); }, "read past the end of a message");
}

TEST(PupDeath, MapLengthLongerThanTheBytesLeft) {
  auto b = with_length(std::uint64_t{1} << 40, 32);  // each entry needs >= 8 + 4 bytes
  using M = std::map<std::string, int>;
  EXPECT_DEATH({ M m; unpack(b, m); },
               "malformed message: a std::map<std::.*string.*, int.*claims 1099511627776 elements \\(at least 12 "
               "bytes each\\) but only 32 bytes remain");
}

TEST(PupDeath, UnorderedMapLengthIsCheckedBeforeReserving) {
  auto b = with_length(std::uint64_t{1} << 50, 16);
  using M = std::unordered_map<int, double>;
  EXPECT_DEATH({ M m; unpack(b, m); },
               "malformed message: a std::unordered_map<int, double.*claims 1125899906842624 elements");
}

TEST(PupDeath, SetLengthLongerThanTheBytesLeft) {
  auto b = with_length(5, 16);  // 5 ints need 20 bytes
  EXPECT_DEATH({ std::set<int> s; unpack(b, s); }, "malformed message: a std::set<int.*claims 5 elements");
}

TEST(PupDeath, StringLengthOneMoreThanTheBytesLeft) {
  auto b = with_length(9, 8);
  EXPECT_DEATH({ std::string s; unpack(b, s); }, "a std::.*string.* claims 9 elements .* but only 8 bytes remain");
}

TEST(PupDeath, DequeAndListLengths) {
  auto b = with_length(std::uint64_t{1} << 62, 8);
  EXPECT_DEATH({ std::deque<double> d; unpack(b, d); }, "malformed message: a std::deque<double");
  EXPECT_DEATH({ std::list<std::string> l; unpack(b, l); }, "malformed message: a std::.*list<std::.*string");
}

TEST(PupDeath, VariantIndexOutOfRange) {
  std::vector<char> b(16, 0);
  std::uint32_t bad = 3;
  std::memcpy(b.data(), &bad, 4);
  using V = std::variant<int, std::string>;
  EXPECT_DEATH({ V v; unpack(b, v); },
               "malformed message: a std::variant<int, std::.*string.*> has alternative index 3, but it must be "
               "below 2");
}

TEST(PupDeath, OptionalFlagNeitherZeroNorOne) {
  std::vector<char> b(8, 7);
  EXPECT_DEATH({ std::optional<int> o; unpack(b, o); }, "a std::optional<int> has presence flag 7");
  EXPECT_DEATH({ std::unique_ptr<int> u; unpack(b, u); }, "a std::unique_ptr<int.*> has presence flag 7");
}

struct Base {
  virtual ~Base() = default;
  int x = 0;
  void pup(PUP::er& p) { p | x; }
};
struct Derived : Base {};

TEST(PupDeath, UniquePtrToBaseHoldingDerivedIsNotSliced) {
  std::unique_ptr<Base> b = std::make_unique<Derived>();
  EXPECT_DEATH({ PUP::er s = PUP::er::sizer(); s | b; }, "cannot pack a std::unique_ptr<.*Base> that holds a .*Derived");
}

// A pup() that reads more on unpacking than it wrote when packing (a migrating element
// whose unpack expects a field that was not sent).
struct Asymmetric {
  int a = 1;
  double extra = 0;
  void pup(PUP::er& p) {
    p | a;
    if (p.isUnpacking()) p | extra;
  }
};

TEST(PupDeath, PupThatReadsMoreThanItWrote) {
  Asymmetric in;
  PUP::er sz = PUP::er::sizer();
  sz | in;
  std::vector<char> buf(sz.size());
  PUP::er pk = PUP::er::packer(buf.data(), buf.size());
  pk | in;
  EXPECT_DEATH({ Asymmetric out; unpack(buf, out); }, "unpacking read past the end of a message \\(4 \\+ 8 > 4 bytes\\)");
}

TEST(PupDeath, VectorOfPupClassesClaimingMoreThanThere) {
  // Items have no known least size: a bogus count is not resized up front; the first item
  // that is not there reads past the end.
  auto b = with_length(std::uint64_t{1} << 60, 8);
  EXPECT_DEATH({ std::vector<Item> v; unpack(b, v); }, "read past the end of a message");
}

}  // namespace
