// CCS authentication as Charm++'s protocol defines it: SHA-1 over a key, a salt and a
// request header's start. Free of the rest of Converse, so unit tests and clients build it.
#include "ccs.h"

#include <cstdio>
#include <cstring>

namespace ucharm::converse::ccs {

// ---- SHA-1 (FIPS 180-1) ------------------------------------------------------------------

namespace {
inline std::uint32_t rol(std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

void sha1_block(std::uint32_t h[5], const std::uint8_t* p) {
  std::uint32_t w[80];
  for (int i = 0; i < 16; ++i)
    w[i] = (std::uint32_t{p[4 * i]} << 24) | (std::uint32_t{p[4 * i + 1]} << 16) |
           (std::uint32_t{p[4 * i + 2]} << 8) | std::uint32_t{p[4 * i + 3]};
  for (int i = 16; i < 80; ++i) w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
  for (int i = 0; i < 80; ++i) {
    std::uint32_t f, k;
    if (i < 20) f = (b & c) | (~b & d), k = 0x5A827999u;
    else if (i < 40) f = b ^ c ^ d, k = 0x6ED9EBA1u;
    else if (i < 60) f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDCu;
    else f = b ^ c ^ d, k = 0xCA62C1D6u;
    const std::uint32_t t = rol(a, 5) + f + e + k + w[i];
    e = d, d = c, c = rol(b, 30), b = a, a = t;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

void put_be32(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 24);
  p[1] = static_cast<std::uint8_t>(v >> 16);
  p[2] = static_cast<std::uint8_t>(v >> 8);
  p[3] = static_cast<std::uint8_t>(v);
}
}  // namespace

Sha1 sha1(const void* data, std::size_t len) {
  std::uint32_t h[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
  const auto* p = static_cast<const std::uint8_t*>(data);
  std::size_t left = len;
  for (; left >= 64; left -= 64, p += 64) sha1_block(h, p);
  std::uint8_t tail[128] = {};
  std::memcpy(tail, p, left);
  tail[left] = 0x80;
  const std::size_t tail_len = left + 9 <= 64 ? 64 : 128;
  const std::uint64_t bits = static_cast<std::uint64_t>(len) * 8;
  for (int i = 0; i < 8; ++i) tail[tail_len - 1 - i] = static_cast<std::uint8_t>(bits >> (8 * i));
  for (std::size_t o = 0; o < tail_len; o += 64) sha1_block(h, tail + o);
  Sha1 out;
  for (int i = 0; i < 5; ++i) put_be32(out.data() + 4 * i, h[i]);
  return out;
}

std::optional<Key> parse_key(std::string_view text) {
  Key k{};
  std::size_t i = 0;
  for (; i < k.size() && 2 * i < text.size(); ++i) {
    char pair[3] = {text[2 * i], 2 * i + 1 < text.size() ? text[2 * i + 1] : '\0', '\0'};
    if (pair[1] == '\0' || pair[1] == ' ' || pair[1] == '\n') pair[1] = '0';  // zero-padded
    int v = 0;
    if (std::sscanf(pair, "%d", &v) != 1) break;
    k[i] = static_cast<std::uint8_t>(v);
  }
  if (i == 0) return std::nullopt;
  return k;
}

Sha1 auth_hash(const Key& key, std::uint32_t salt, const void* header16) {
  std::uint8_t m[52] = {};
  std::memcpy(m, key.data(), key.size());
  put_be32(m + 16, salt);
  if (header16) std::memcpy(m + 20, header16, 16);
  return sha1(m, sizeof m);
}

}  // namespace ucharm::converse::ccs
