#include "options.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fmt/core.h>
#include <limits>
#include <string_view>
#include <type_traits>

namespace ucharm::converse {
namespace {

// A number as typed by a user: decimal digits only (no sign, spaces, or base prefix), with
// an optional binary suffix where sizes are allowed. Overflow is an error, not a wrap.
struct Number {
  unsigned long long value = 0;
  const char* error = nullptr;  // why it is not a number we accept; null when it is
};

Number parse_number(std::string_view s, bool size_suffix) {
  if (s.empty()) return {0, "empty"};
  if (s[0] == '-') return {0, "negative"};
  constexpr auto kMax = std::numeric_limits<unsigned long long>::max();
  unsigned long long v = 0;
  std::size_t i = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    const unsigned d = static_cast<unsigned>(s[i] - '0');
    if (v > (kMax - d) / 10) return {0, "too large"};
    v = v * 10 + d;
  }
  if (i == 0) return {0, size_suffix ? "not a size" : "not an integer"};
  const std::string_view rest = s.substr(i);
  unsigned long long mult = 1;
  if (rest.empty()) mult = 1;
  else if (!size_suffix) return {0, "not an integer"};
  else if (rest == "k" || rest == "K" || rest == "KiB") mult = 1ull << 10;
  else if (rest == "m" || rest == "M" || rest == "MiB") mult = 1ull << 20;
  else if (rest == "g" || rest == "G" || rest == "GiB") mult = 1ull << 30;
  else return {0, "unknown suffix"};
  if (v > kMax / mult) return {0, "too large"};
  return {v * mult, nullptr};
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
  auto bad = [&](const char* what, const char* why = nullptr) {
    return fmt::format("{}: bad value '{}' for '{}'{}: expected {}", where, *value, name,
                       why ? fmt::format(" ({})", why) : std::string(), what);
  };
  // Reads a number within [lo, hi] into `out`; sizes take the k/M/G suffixes.
  auto number = [&](auto& out, bool size, unsigned long long lo, unsigned long long hi,
                    const char* what) -> std::optional<std::string> {
    if (!value) return need();
    Number n = parse_number(*value, size);
    if (!n.error && (n.value < lo || n.value > hi)) n.error = "out of range";
    if (n.error) return bad(what, n.error);
    out = static_cast<std::remove_reference_t<decltype(out)>>(n.value);
    return std::nullopt;
  };
  if (name == "eager-size") {
    return number(o.eager_size, true, kMinEager, kMaxEager,
                  "a size in bytes from 256 to 1M (suffixes k, M)");
  } else if (name == "prepost") {
    return number(o.prepost, false, 1, 4096, "an integer from 1 to 4096");
  } else if (name == "flow-window") {
    return number(o.flow_window, true, 64 * 1024, std::size_t{1} << 32,
                  "a size in bytes from 64k to 4G (suffixes k, M, G)");
  } else if (name == "large-fragment") {
    constexpr const char* what = "0, or a multiple of 1k from 4k to 1G (suffixes k, M, G)";
    if (auto err = number(o.large_fragment, true, 0, 1ull << 30, what)) return err;
    if (o.large_fragment != 0 && (o.large_fragment < 4096 || o.large_fragment % 1024 != 0))
      return bad(what, "not a multiple of 1k from 4k");
  } else if (name == "send-queue-limit") {
    return number(o.send_queue_limit, true, 64 * 1024, std::size_t{1} << 40,
                  "a size in bytes from 64k to 1024G (suffixes k, M, G)");
  } else if (name == "stacksize") {
    return number(o.stack_size, true, 16 * 1024, std::size_t{1} << 30,
                  "a size in bytes from 16k to 1G (suffixes k, M, G)");
  } else if (name == "idle-spin-us") {
    return number(o.idle_spin_us, false, 0, 1000000,
                  "an integer number of microseconds from 0 to 1000000");
  } else if (name == "server") {
    bool on = true;
    if (value) {
      auto v = parse_bool(*value);
      if (!v) return bad("0 or 1");
      on = *v;
    }
    o.server = on;
  } else if (name == "server-port") {
    o.server = true;  // as in Charm++: naming a port starts the server
    return number(o.server_port, false, 0, 65535, "a TCP port number from 0 to 65535 (0: any free one)");
  } else if (name == "server-auth" || name == "server-ip") {
    if (!value || value->empty()) return need();
    (name == "server-auth" ? o.server_auth : o.server_ip) = std::string(*value);
    o.server = true;
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
                       "+flow-window=BYTES, +large-fragment=BYTES, +send-queue-limit=BYTES, +stacksize=BYTES, +idle-spin-us=N, +nobind, +verbose, +server, +server-port N, "
                       "+server-auth FILE, +server-ip ADDR{})",
                       where, name, [] {
                         std::string more;
                         for (const auto& [n, v] : layer_options()) more += ", +" + n + (v ? " VALUE" : "");
                         return more;
                       }());
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

std::vector<std::pair<std::string, bool>>& layer_options() {
  static std::vector<std::pair<std::string, bool>> names;  // registered before ConverseInit
  return names;
}

std::optional<std::string> parse_runtime_options(int& argc, char** argv, RuntimeOptions& out,
                                                 const char* const* envp) {
  static constexpr std::pair<const char*, const char*> kEnv[] = {
      {"UCHARM_EAGER_SIZE", "eager-size"}, {"UCHARM_PREPOST", "prepost"},
      {"UCHARM_STACKSIZE", "stacksize"},   {"UCHARM_IDLE_SPIN_US", "idle-spin-us"},
      {"UCHARM_BIND", "bind"},             {"UCHARM_VERBOSE", "verbose"},
      {"UCHARM_FLOW_WINDOW", "flow-window"}, {"UCHARM_SEND_QUEUE_LIMIT", "send-queue-limit"},
      {"UCHARM_LARGE_FRAGMENT", "large-fragment"}, {"UCHARM_SERVER", "server"},
      {"UCHARM_SERVER_PORT", "server-port"}, {"UCHARM_SERVER_AUTH", "server-auth"},
      {"UCHARM_SERVER_IP", "server-ip"}};
  for (auto [key, name] : kEnv) {
    if (const char* v = env_value(key, envp))
      if (auto err = apply(name, std::string_view(v), out, fmt::format("environment {}", key)))
        return err;
  }
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    std::string_view a(argv[i]);
    if (a == "++local") continue;  // charmrun's: every job here is local
    if (a.size() < 2 || a[0] != '+' || a == "++") {
      argv[kept++] = argv[i];
      continue;
    }
    a.remove_prefix(1);
    // Charm++'s ++server, ++server-port N, ++server-auth F (charmrun's spelling) are ours.
    if (a.starts_with("+server")) a.remove_prefix(1);
    std::optional<std::string_view> value;
    if (auto eq = a.find('='); eq != std::string_view::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    // The server's options also take their value as the next argument, as Charm++'s do.
    if (!value && i + 1 < argc && (a == "server-port" || a == "server-auth" || a == "server-ip"))
      value = std::string_view(argv[++i]);
    // An option of a layer above (the core's +balancer, +trace, ...): left for it, with its
    // value when that is the next argument.
    auto layer = std::find_if(layer_options().begin(), layer_options().end(),
                              [&](const auto& o) { return o.first == a; });
    if (layer != layer_options().end()) {
      argv[kept++] = argv[i];
      if (layer->second && !value && i + 1 < argc) argv[kept++] = argv[++i];
      continue;
    }
    if (auto err = apply(a, value, out, "command line")) return err;
  }
  if (kept < argc) argv[kept] = nullptr;
  argc = kept;
  return std::nullopt;
}

}  // namespace ucharm::converse
