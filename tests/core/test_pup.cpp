// PUP on crafted buffers: lengths from the wire are checked against the bytes left before
// anything is resized (overflow-safe), and a malformed message stops with an error naming
// the type, never a huge allocation or a read past the end.
#include <ucharm/charm.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
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

}  // namespace
