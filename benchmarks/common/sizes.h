// Byte counts on benchmark command lines: "8", "64k", "4M".
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace ucharm::bench {

inline std::size_t parse_bytes(const std::string& s) {
  std::size_t end = 0;
  std::size_t v = std::stoull(s, &end);
  std::string rest = s.substr(end);
  if (rest == "k" || rest == "K") return v << 10;
  if (rest == "m" || rest == "M") return v << 20;
  if (!rest.empty()) throw std::invalid_argument(s);
  return v;
}

// Fewer round trips for large messages keeps a whole table to a few seconds.
inline int iterations_for(std::size_t size, int iters) {
  if (size >= (std::size_t{1} << 20)) return iters / 100 > 50 ? iters / 100 : 50;
  if (size >= (std::size_t{64} << 10)) return iters / 10 > 200 ? iters / 10 : 200;
  return iters;
}

}  // namespace ucharm::bench
