// Byte counts on benchmark command lines: "8", "64k", "4M".
#pragma once

#include <CLI/CLI.hpp>
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

// --min/--max on a CLI11 app, in bytes with k/M suffixes; parse() after app.parse().
struct SizeRange {
  std::string min_text, max_text;
  SizeRange(CLI::App& app, const char* min, const char* max) : min_text(min), max_text(max) {
    app.add_option("--min", min_text, "smallest message in bytes (0 allowed; suffix k or M)");
    app.add_option("--max", max_text, "largest message in bytes (suffix k or M)");
  }
  // Throws std::invalid_argument naming the bad value.
  void parse(std::size_t& min, std::size_t& max) const {
    try {
      min = parse_bytes(min_text);
      max = parse_bytes(max_text);
    } catch (const std::exception&) {
      throw std::invalid_argument("bad --min/--max '" + min_text + "'/'" + max_text + "'");
    }
  }
};

}  // namespace ucharm::bench
