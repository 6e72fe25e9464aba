// CCS authentication pieces: SHA-1 against FIPS 180-1's vectors, Charm++'s key spelling, and
// the 52-byte hash input.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "ccs.h"

namespace ccs = ucharm::converse::ccs;

namespace {

std::string hex(const ccs::Sha1& h) {
  std::string s;
  char b[3];
  for (auto c : h) std::snprintf(b, sizeof b, "%02x", c), s += b;
  return s;
}

TEST(CcsAuth, Sha1MatchesTheStandardVectors) {
  EXPECT_EQ(hex(ccs::sha1("abc", 3)), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(hex(ccs::sha1("", 0)), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  const std::string two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";  // 448 bits: 2 blocks
  EXPECT_EQ(hex(ccs::sha1(two.data(), two.size())), "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  const std::string million(1000000, 'a');
  EXPECT_EQ(hex(ccs::sha1(million.data(), million.size())), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

TEST(CcsAuth, KeysAreReadTwoDecimalDigitsPerByte) {
  auto k = ccs::parse_key("0102994");
  ASSERT_TRUE(k);
  EXPECT_EQ((*k)[0], 1);
  EXPECT_EQ((*k)[1], 2);
  EXPECT_EQ((*k)[2], 99);
  EXPECT_EQ((*k)[3], 40);  // a last single digit is zero-padded
  EXPECT_EQ((*k)[4], 0);
  k = ccs::parse_key("12zz34");  // a pair that is no number ends the key
  ASSERT_TRUE(k);
  EXPECT_EQ((*k)[0], 12);
  EXPECT_EQ((*k)[1], 0);
  EXPECT_EQ((*k)[2], 0);
  EXPECT_FALSE(ccs::parse_key("zz"));
  EXPECT_FALSE(ccs::parse_key(""));
}

TEST(CcsAuth, HashCoversKeySaltAndHeaderStart) {
  ccs::Key key{};
  key[0] = 7;
  unsigned char m[52] = {};
  m[0] = 7;
  m[16] = 0x01, m[17] = 0x02, m[18] = 0x03, m[19] = 0x04;
  EXPECT_EQ(ccs::auth_hash(key, 0x01020304u, nullptr), ccs::sha1(m, sizeof m));
  unsigned char hdr[40];
  for (int i = 0; i < 40; ++i) hdr[i] = static_cast<unsigned char>(i + 1);
  for (int i = 0; i < 16; ++i) m[20 + i] = hdr[i];  // only the first 16 bytes count
  EXPECT_EQ(ccs::auth_hash(key, 0x01020304u, hdr), ccs::sha1(m, sizeof m));
}

}  // namespace
