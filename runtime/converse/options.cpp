#include "options.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fmt/core.h>
#include <string_view>

namespace ucharm::converse {
namespace {

// "32768", "32k", "1M": bytes, binary suffixes.
std::optional<std::size_t> parse_size(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::string str(s);
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(str.c_str(), &end, 10);
  if (errno || end == str.c_str() || str[0] == '-') return std::nullopt;
  std::string_view rest(end);
  unsigned long long mult = 1;
  if (rest == "k" || rest == "K" || rest == "KiB") mult = 1ull << 10;
  else if (rest == "m" || rest == "M" || rest == "MiB") mult = 1ull << 20;
  else if (rest == "g" || rest == "G" || rest == "GiB") mult = 1ull << 30;
  else if (!rest.empty()) return std::nullopt;
  return static_cast<std::size_t>(v * mult);
}

std::optional<int> parse_int(std::string_view s, int lo, int hi) {
  auto v = parse_size(s);
  if (!v || *v < static_cast<std::size_t>(lo) || *v > static_cast<std::size_t>(hi)) return std::nullopt;
  return static_cast<int>(*v);
}

std::optional<bool> parse_bool(std::string_view s) {
  if (s == "1" || s == "yes" || s == "true" || s == "on") return true;
  if (s == "0" || s == "no" || s == "false" || s == "off") return false;
  return std::nullopt;
}

constexpr std::size_t kMinEager = 256, kMaxEager = 1 << 20;

// Applies one option given as (name, value). Returns an error message or nothing.
std::optional<std::string> apply(std::string_view name, std::optional<std::string_view> value,
                                 RuntimeOptions& o, std::string_view where) {
  auto need = [&]() -> std::optional<std::string> {
    return fmt::format("{}: option '{}' needs a value ({}=VALUE)", where, name, name);
  };
  auto bad = [&](const char* what) {
    return fmt::format("{}: bad value '{}' for '{}': expected {}", where, *value, name, what);
  };
  if (name == "eager-size") {
    if (!value) return need();
    auto v = parse_size(*value);
    if (!v || *v < kMinEager || *v > kMaxEager)
      return bad("a size in bytes from 256 to 1M (suffixes k, M)");
    o.eager_size = *v;
  } else if (name == "prepost") {
    if (!value) return need();
    auto v = parse_int(*value, 1, 4096);
    if (!v) return bad("an integer from 1 to 4096");
    o.prepost = *v;
  } else if (name == "flow-window") {
    if (!value) return need();
    auto v = parse_size(*value);
    if (!v || *v < 64 * 1024 || *v > (std::size_t{1} << 32))
      return bad("a size in bytes from 64k to 4G (suffixes k, M, G)");
    o.flow_window = *v;
  } else if (name == "send-queue-limit") {
    if (!value) return need();
    auto v = parse_size(*value);
    if (!v || *v < 64 * 1024 || *v > (std::size_t{1} << 40))
      return bad("a size in bytes from 64k to 1T (suffixes k, M, G)");
    o.send_queue_limit = *v;
  } else if (name == "stacksize") {
    if (!value) return need();
    auto v = parse_size(*value);
    if (!v || *v < 16 * 1024 || *v > (std::size_t{1} << 30))
      return bad("a size in bytes from 16k to 1G");
    o.stack_size = *v;
  } else if (name == "idle-spin-us") {
    if (!value) return need();
    auto v = parse_int(*value, 0, 1000000);
    if (!v) return bad("an integer number of microseconds from 0 to 1000000");
    o.idle_spin_us = *v;
  } else if (name == "nobind" || name == "verbose" || name == "bind") {
    bool on = true;
    if (value) {
      auto v = parse_bool(*value);
      if (!v) return bad("0 or 1");
      on = *v;
    }
    if (name == "nobind") o.bind = !on;
    else if (name == "bind") o.bind = on;
    else o.verbose = on;
  } else {
    return fmt::format("{}: unknown runtime option '{}' (known: +eager-size=BYTES, +prepost=N, "
                       "+flow-window=BYTES, +send-queue-limit=BYTES, +stacksize=BYTES, +idle-spin-us=N, +nobind, +verbose)", where, name);
  }
  return std::nullopt;
}

const char* env_value(const char* key, const char* const* envp) {
  if (!envp) return std::getenv(key);
  std::size_t n = std::strlen(key);
  for (; *envp; ++envp)
    if (std::strncmp(*envp, key, n) == 0 && (*envp)[n] == '=') return *envp + n + 1;
  return nullptr;
}

}  // namespace

std::optional<std::string> parse_runtime_options(int& argc, char** argv, RuntimeOptions& out,
                                                 const char* const* envp) {
  static constexpr std::pair<const char*, const char*> kEnv[] = {
      {"UCHARM_EAGER_SIZE", "eager-size"}, {"UCHARM_PREPOST", "prepost"},
      {"UCHARM_STACKSIZE", "stacksize"},   {"UCHARM_IDLE_SPIN_US", "idle-spin-us"},
      {"UCHARM_BIND", "bind"},             {"UCHARM_VERBOSE", "verbose"}};
  for (auto [key, name] : kEnv) {
    if (const char* v = env_value(key, envp))
      if (auto err = apply(name, std::string_view(v), out, fmt::format("environment {}", key)))
        return err;
  }
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    std::string_view a(argv[i]);
    if (a.size() < 2 || a[0] != '+' || a == "++") {
      argv[kept++] = argv[i];
      continue;
    }
    a.remove_prefix(1);
    std::optional<std::string_view> value;
    if (auto eq = a.find('='); eq != std::string_view::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    if (auto err = apply(a, value, out, "command line")) return err;
  }
  if (kept < argc) argv[kept] = nullptr;
  argc = kept;
  return std::nullopt;
}

}  // namespace ucharm::converse
