// ucharmrun's command line: options, --help (which lists the exit codes) and messages.
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "ucharmrun.h"

namespace ucharmrun {

const char* const kUsage = "Usage: ucharmrun -n N [options] [--] program [args...]";

void say(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

std::string errno_text(int err) { return std::strerror(err); }

namespace {

constexpr int kMaxPes = 4096;
constexpr int kMaxRestarts = 1000;

const char* const kHelp = R"help(ucharmrun: start a ucharm program on N local PEs under an embedded PMIx server.

Usage: ucharmrun -n N [options] [--] program [args...]

Options (before the program; everything from the program on is the program's):
  -n N, --np N      number of PEs (processes), 1 to 4096 (required; +pN and +p N,
                    charmrun's spellings, too)
  -p, --prefix      prefix each output line with "[rank] "
  --no-bind         do not bind PEs to cores (UCHARM_BIND=0 for the ranks)
  -v, --verbose     print the start-up banner (PEs, binding, UCX, transports)
  --timeout S       stop the job after S seconds (a decimal number; 0: no limit);
                    the time counts from the start, over every restart
  --restart-on-failure N
                    when a PE dies, start the job again, up to N times (0 to 1000;
                    default 0), from the last complete checkpoint (see below)
  --mps auto|on|off CUDA MPS for PEs that share a GPU (default auto, or $UCHARM_MPS):
                    auto starts a private MPS control daemon for the job when it has
                    more PEs than visible GPUs, nvidia-cuda-mps-control is in PATH and
                    no MPS daemon answers yet (a failed start: a warning, no MPS);
                    on starts one in any case (a failed start ends with code 125);
                    off starts none. The daemon quits when the job ends
  ++server          run a CCS server on PE 0 (charmrun's option; it prints
                    "ccs: Server IP = ..., Server port = ... $"); it listens on 127.0.0.1
  ++server-port N   ... on TCP port N (0: a free one; implies ++server)
  ++server-auth F   ... requiring the keys of Charm++'s CCS key file F
  ++server-ip A     ... listening on IPv4 address A instead (0.0.0.0: every interface)
  ++local           accepted for charmrun's command lines (every job here is local)
  -h, --help        print this help and exit
  --                end of the launcher's options

Exit codes:
  0        every PE ended in order with code 0
  1-255    the code of the first PE that failed (non-zero exit, or left without
           finishing the job: then 1), or the code the program ended with (CmiExit)
  128+S    the first PE that failed was killed by signal S (e.g. 137 for SIGKILL)
  124      the job ran past --timeout
  129 130 143  ucharmrun got SIGHUP, SIGINT or SIGTERM (128+signal) and stopped the job
  141      ucharmrun's output pipe was closed (SIGPIPE); it stopped the job
  2        bad ucharmrun command line (also the ranks' code for a bad +option)
  125      ucharmrun itself failed (PMIx server, fork, temporary folder, --mps on)
  126      the program exists but cannot be executed
  127      the program was not found
Messages from ucharmrun itself start with "ucharmrun:".

Signals: on SIGINT, SIGTERM or SIGHUP every PE gets SIGTERM, then SIGKILL 3 s later
(a second signal: SIGKILL at once). PEs die with ucharmrun, even on kill -9.
When a PE fails, the others are told (they print which PE died and exit); any still
running 2 s later get SIGTERM, then SIGKILL 3 s after. The first cause (failure, timeout,
signal) decides the exit code.
Restarts (--restart-on-failure N): every PE gets UCHARM_CHECKPOINT_RECORD=FILE (a file
in ucharmrun's folder, where PE 0 writes the directory of each complete checkpoint) and
UCHARM_RESTART_ATTEMPT=K (0, then 1.. after each restart). When a PE dies (is killed by
a signal, or leaves the job it joined without finalizing and without aborting), the
others are stopped as above and the job starts again in a fresh PMIx namespace: with
"+restart DIR" (DIR from FILE; it replaces a "+restart X" among the program's arguments,
else is appended) or, with no checkpoint recorded yet, with the original arguments.
Each restart prints a line, e.g. "ucharmrun: rank R died (signal 9); restarting from
checkpoint DIR (attempt K of N)". Not restarted: an end the program chose (CkExit or
CmiExit with a code, CmiAbort, MPI_Abort), a PE that exits before joining the job (e.g.
a bad +option), --timeout and signals to ucharmrun. The exit code is the last attempt's.
Cleanup: ucharmrun keeps its PMIx files in $TMPDIR/ucharmrun.PID.XXXXXX and removes it
when it ends; folders left by a ucharmrun that was killed are removed by the next one
(which also tells an MPS daemon left in one to quit).
Environment of each PE (rank R of N, all on this host; inherited values are replaced):
  =R  LOCAL_RANK OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_LOCAL_RANK OMPI_COMM_WORLD_NODE_RANK
      MPI_LOCALRANKID MV2_COMM_WORLD_RANK MV2_COMM_WORLD_LOCAL_RANK MVP_COMM_WORLD_RANK
      MVP_COMM_WORLD_LOCAL_RANK, and PMIX_RANK (PMIx's)
  =N  LOCAL_SIZE LOCAL_WORLD_SIZE OMPI_COMM_WORLD_SIZE OMPI_COMM_WORLD_LOCAL_SIZE
      MPI_LOCALNRANKS MV2_COMM_WORLD_SIZE MV2_COMM_WORLD_LOCAL_SIZE MVP_COMM_WORLD_SIZE
      MVP_COMM_WORLD_LOCAL_SIZE
  SLURM_PROCID=R and SLURM_LOCALID=R only where ucharmrun's own environment has them (a
  Slurm step); with an MPS daemon of the job, CUDA_MPS_PIPE_DIRECTORY and
  CUDA_MPS_LOG_DIRECTORY.
)help";

// Strict decimal: digits only, no sign, no spaces, no overflow.
std::optional<long long> parse_count(std::string_view s) {
  if (s.empty()) return std::nullopt;
  long long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = std::min(v * 10 + (c - '0'), 1LL << 40);  // saturates: "too many", not a wrap
  }
  return v;
}

std::optional<MpsMode> parse_mps(std::string_view s) {
  if (s == "auto") return MpsMode::Auto;
  if (s == "on") return MpsMode::On;
  if (s == "off") return MpsMode::Off;
  return std::nullopt;
}

// Seconds as a plain decimal number: "30", "2.5", ".5".
std::optional<double> parse_seconds(std::string_view s) {
  size_t digits = 0, dots = 0;
  for (char c : s) {
    if (c >= '0' && c <= '9') ++digits;
    else if (c == '.') ++dots;
    else return std::nullopt;
  }
  if (digits == 0 || dots > 1 || s.size() > 20) return std::nullopt;
  return std::strtod(std::string(s).c_str(), nullptr);
}

}  // namespace

std::optional<Options> parse_command_line(int argc, char** argv) {
  Options o;
  bool have_np = false, have_mps = false;
  int i = 1;
  for (; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    // charmrun's CCS server options (and ++local, which every ucharmrun job is).
    if (a == "++local") continue;
    if (a.starts_with("++server")) {
      std::string_view name = a, v;
      bool has_v = false;
      if (auto eq = a.find('='); eq != std::string_view::npos) {
        name = a.substr(0, eq);
        v = a.substr(eq + 1);
        has_v = true;
      }
      static constexpr std::pair<std::string_view, const char*> kServer[] = {
          {"++server-port", "UCHARM_SERVER_PORT"}, {"++server-auth", "UCHARM_SERVER_AUTH"},
          {"++server-ip", "UCHARM_SERVER_IP"}};
      if (name == "++server") {
        if (has_v) throw UsageError{"++server takes no value"};
        o.server_env.emplace_back("UCHARM_SERVER=1");
        continue;
      }
      const auto* k = std::find_if(std::begin(kServer), std::end(kServer), [&](const auto& e) { return e.first == name; });
      if (k == std::end(kServer))
        throw UsageError{fmt::format("unknown option '{}' (known: ++server, ++server-port N, ++server-auth FILE, "
                                     "++server-ip ADDR, ++local)", a)};
      if (!has_v) {
        if (i + 1 >= argc) throw UsageError{fmt::format("{} needs a value", name)};
        v = argv[++i];
      }
      if (name == "++server-port") {
        auto n = parse_count(v);
        if (!n || *n > 65535)
          throw UsageError{fmt::format("++server-port expects a TCP port from 0 to 65535, got '{}'", v)};
      }
      if (v.empty()) throw UsageError{fmt::format("{} needs a value", name)};
      o.server_env.push_back(fmt::format("{}={}", k->second, v));
      continue;
    }
    // Charm++'s charmrun spelling of -n N: +pN or +p N.
    const bool charm_p = a.starts_with("+p") && a.find_first_not_of("0123456789", 2) == std::string_view::npos;
    if (!charm_p && (a.size() < 2 || a[0] != '-')) break;  // the program
    // "--name=value", "-nVALUE" and "--name value" / "-n value".
    std::string_view name = a;
    std::optional<std::string_view> inline_value;
    if (a.starts_with("--")) {
      if (auto eq = a.find('='); eq != std::string_view::npos) {
        name = a.substr(0, eq);
        inline_value = a.substr(eq + 1);
      }
    } else if (a.size() > 2 && (a.starts_with("-n"))) {
      name = a.substr(0, 2);
      inline_value = a.substr(2);
    } else if (charm_p) {
      name = "-n";
      if (a.size() > 2) inline_value = a.substr(2);
    }
    auto value = [&](const char* what) -> std::string_view {
      if (inline_value) return *inline_value;
      if (i + 1 >= argc)
        throw UsageError{fmt::format("{} needs a value ({})", name, what)};
      return argv[++i];
    };
    auto flag = [&]() {
      if (inline_value) throw UsageError{fmt::format("{} takes no value", name)};
    };
    if (name == "-n" || name == "--np") {
      std::string_view v = value("a positive integer");
      auto n = parse_count(v);
      if (!n || *n < 1)
        throw UsageError{fmt::format("{} expects a positive integer, got '{}'", name, v)};
      if (*n > kMaxPes)
        throw UsageError{fmt::format("{} expects at most {} PEs, got '{}'", name, kMaxPes, v)};
      o.np = static_cast<int>(*n);
      have_np = true;
    } else if (name == "--timeout") {
      std::string_view v = value("a number of seconds");
      auto t = parse_seconds(v);
      if (!t || *t > 1e9)
        throw UsageError{fmt::format(
            "--timeout expects a number of seconds from 0 to 1000000000, got '{}'", v)};
      o.timeout = *t;
    } else if (name == "--restart-on-failure") {
      std::string_view v = value("a number of restarts");
      auto n = parse_count(v);
      if (!n || *n > kMaxRestarts)
        throw UsageError{fmt::format(
            "--restart-on-failure expects a number of restarts from 0 to {}, got '{}'",
            kMaxRestarts, v)};
      o.restart_on_failure = static_cast<int>(*n);
    } else if (name == "--mps") {
      std::string_view v = value("auto, on or off");
      auto m = parse_mps(v);
      if (!m) throw UsageError{fmt::format("--mps expects auto, on or off, got '{}'", v)};
      o.mps = *m;
      have_mps = true;
    } else if (name == "-p" || name == "--prefix") {
      flag();
      o.prefix = true;
    } else if (name == "--no-bind") {
      flag();
      o.no_bind = true;
    } else if (name == "-v" || name == "--verbose") {
      flag();
      o.verbose = true;
    } else if (name == "-h" || name == "--help") {
      std::fputs(kHelp, stdout);
      return std::nullopt;
    } else {
      throw UsageError{fmt::format("unknown option '{}'", a)};
    }
  }
  if (!have_np) throw UsageError{"--np is required: give the number of PEs with -n N"};
  if (const char* env = std::getenv("UCHARM_MPS"); env && *env && !have_mps) {
    auto m = parse_mps(env);
    if (!m)
      throw UsageError{fmt::format("UCHARM_MPS expects auto, on or off, got '{}'", env)};
    o.mps = *m;
  }
  if (i >= argc) throw UsageError{"no program given"};
  o.command.assign(argv + i, argv + argc);
  return o;
}

}  // namespace ucharmrun
