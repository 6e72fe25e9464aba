// CUDA MPS for PEs that share a GPU. Without it the processes' CUDA contexts take turns on
// the GPU (time slices), which puts a device message between two processes on one GPU
// at ~150 us instead of ~10 us across GPUs; under MPS their work runs in one server
// context. The launcher starts a control daemon of its own, with its pipe and log
// directories in the job folder, exports them to the PEs (CUDA's client side finds the
// daemon through CUDA_MPS_PIPE_DIRECTORY) and tells it to quit at the end. Nothing of the
// GPU's configuration (compute mode, clocks, MIG) is touched: MPS runs in the default
// compute mode. The NVIDIA tools run as child processes with a time limit each, so a
// wedged driver cannot hang the launcher.
#include <fcntl.h>
#include <fmt/core.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "ucharmrun.h"

extern char** environ;

namespace ucharmrun {
namespace {

constexpr const char* kControlTool = "nvidia-cuda-mps-control";
constexpr const char* kDefaultPipeDir = "/tmp/nvidia-mps";  // CUDA's, without the variable
constexpr const char* kPidFile = "nvidia-cuda-mps-control.pid";
constexpr double kToolLimit = 10;   // seconds for one call of an NVIDIA tool
constexpr double kReadyLimit = 5;   // seconds for a started daemon to answer
constexpr double kQuitLimit = 5;    // seconds for the daemon to end after "quit"

struct ToolResult {
  bool ended = false;  // false: killed after the time limit
  int status = 0;
  std::string output;  // stdout and stderr together
  bool ok() const { return ended && WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// Runs `path args...` with the launcher's environment plus `overrides` ("NAME=VALUE"),
// `input` on its stdin, nothing blocked in its signal mask, for at most `limit_s`.
// The output goes to a memfd, not a pipe: a daemon the tool leaves behind may keep it
// open, which must not keep us waiting for an end of file.
ToolResult run_tool(const std::string& path, const std::vector<std::string>& args,
                    const std::vector<std::string>& overrides, std::string_view input,
                    double limit_s) {
  ToolResult res;
  std::vector<std::string> env_store;
  auto overridden = [&](std::string_view e) {
    for (const std::string& o : overrides) {
      const std::string_view name = std::string_view(o).substr(0, o.find('=') + 1);
      if (e.starts_with(name)) return true;
    }
    return false;
  };
  for (char** e = environ; *e; ++e)
    if (!overridden(*e)) env_store.emplace_back(*e);
  env_store.insert(env_store.end(), overrides.begin(), overrides.end());
  std::vector<char*> envp, argv;
  for (std::string& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> arg_store{path};
  arg_store.insert(arg_store.end(), args.begin(), args.end());
  for (std::string& a : arg_store) argv.push_back(a.data());
  argv.push_back(nullptr);

  const int out = ::memfd_create("ucharmrun-tool", MFD_CLOEXEC);
  int in[2] = {-1, -1};
  if (out < 0 || ::pipe2(in, O_CLOEXEC) != 0) {
    res.output = fmt::format("cannot run {}: {}", path, errno_text(errno));
    if (out >= 0) ::close(out);
    return res;
  }
  sigset_t none;
  sigemptyset(&none);
  const pid_t pid = ::fork();
  if (pid == 0) {  // only async-signal-safe calls from here to exec
    ::dup2(in[0], STDIN_FILENO);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(out, STDERR_FILENO);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(in[0]);
  if (pid > 0 && !input.empty()) {  // a few bytes: the pipe's buffer takes them at once
    [[maybe_unused]] ssize_t w = ::write(in[1], input.data(), input.size());
  }
  ::close(in[1]);
  if (pid < 0) {
    res.output = fmt::format("cannot run {}: fork: {}", path, errno_text(errno));
    ::close(out);
    return res;
  }
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(limit_s));
  for (;;) {
    const pid_t got = ::waitpid(pid, &res.status, WNOHANG);
    if (got == pid) {
      res.ended = true;
      break;
    }
    if (got < 0 && errno != EINTR) break;
    if (Clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &res.status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  char buf[4096];
  ssize_t n;
  ::lseek(out, 0, SEEK_SET);
  while (res.output.size() < 65536 && (n = ::read(out, buf, sizeof buf)) > 0)
    res.output.append(buf, static_cast<size_t>(n));
  ::close(out);
  return res;
}

std::string describe_tool(const std::string& what, const ToolResult& r) {
  std::string how;
  if (!r.ended) how = fmt::format("did not end within {} s", kToolLimit);
  else if (WIFSIGNALED(r.status)) how = fmt::format("was killed by signal {}", WTERMSIG(r.status));
  else how = fmt::format("exited with code {}", WEXITSTATUS(r.status));
  const std::string said = trim(r.output);
  return said.empty() ? fmt::format("{} {}", what, how) : fmt::format("{} {}: {}", what, how, said);
}

// Something listens on the daemon's control socket (ECONNREFUSED: a stale socket file).
bool control_reachable(const std::string& pipe_dir) {
  const std::string path = pipe_dir + "/control";
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 ||
                  errno == EPROTOTYPE;  // a listener of another socket type is still one
  ::close(fd);
  return ok;
}

std::optional<pid_t> read_pid(const std::string& file) {
  std::ifstream f(file);
  long long pid = 0;
  if (!(f >> pid) || pid <= 0) return std::nullopt;
  return static_cast<pid_t>(pid);
}

// A live process (not a zombie) whose name is that of an MPS tool: a pid file's pid that
// has been reused by something else since is left alone.
bool live_mps_process(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 2 >= text.size())
    return false;
  const char state = text[close + 2];
  return state != 'Z' && state != 'X' &&
         text.compare(open + 1, 15, "nvidia-cuda-mps") == 0;  // comm: 15 characters
}

// A daemon is there: its control socket takes a connection, or (should the endpoint be
// of a kind a stream connect cannot test) it exists and the pid file names a live daemon.
bool daemon_present(const std::string& pipe_dir) {
  if (control_reachable(pipe_dir)) return true;
  struct stat st;
  if (::lstat((pipe_dir + "/control").c_str(), &st) != 0) return false;
  const std::optional<pid_t> pid = read_pid(pipe_dir + "/" + kPidFile);
  return pid && live_mps_process(*pid);
}

bool ends_within(pid_t pid, double limit_s) {
  const auto t0 = Clock::now();
  while (live_mps_process(pid)) {
    if (std::chrono::duration<double>(Clock::now() - t0).count() > limit_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::vector<std::string> dirs_env(const std::string& pipe_dir, const std::string& log_dir) {
  return {"CUDA_MPS_PIPE_DIRECTORY=" + pipe_dir, "CUDA_MPS_LOG_DIRECTORY=" + log_dir};
}

// Tells the daemon of `pipe_dir` to quit, waits for it, and kills it if it stays (it is
// this job's own). Returns what went wrong ("" if nothing).
std::string quit_daemon(const std::string& tool, const std::string& pipe_dir,
                        const std::string& log_dir) {
  const std::optional<pid_t> pid = read_pid(pipe_dir + "/" + kPidFile);
  const ToolResult r = run_tool(tool, {}, dirs_env(pipe_dir, log_dir), "quit\n", kToolLimit);
  std::string problem = r.ok() ? "" : describe_tool("'echo quit | " + tool + "'", r);
  if (pid && !ends_within(*pid, kQuitLimit)) {
    ::kill(*pid, SIGTERM);
    if (!ends_within(*pid, 2)) ::kill(*pid, SIGKILL);
    problem += fmt::format("{}the control daemon (pid {}) was still running {} s after quit; "
                           "it was killed", problem.empty() ? "" : "; ", *pid, kQuitLimit);
  }
  return problem;
}

// The last lines of the daemon's log, for a message about a failed start.
std::string log_tail(const std::string& log_dir) {
  std::ifstream f(log_dir + "/control.log");
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);)
    if (!trim(line).empty()) lines.push_back(trim(line));
  if (lines.empty()) return "";
  std::string out;
  for (size_t i = lines.size() > 3 ? lines.size() - 3 : 0; i < lines.size(); ++i)
    out += (out.empty() ? "; its log ends: " : " | ") + lines[i];
  return out;
}

}  // namespace

int restrict_to_visible(int physical, const char* cvd) {
  if (!cvd) return physical;
  int n = 0;
  std::set<long> seen;
  std::stringstream list(cvd);
  for (std::string item; std::getline(list, item, ',');) {
    item.erase(0, item.find_first_not_of(' '));
    item = trim(item);
    if (!item.empty() && std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      const long idx = item.size() > 6 ? physical : std::stol(item);
      if (idx >= physical || !seen.insert(idx).second) break;  // CUDA stops at the first bad one
      ++n;
    } else if (item.starts_with("GPU-") || item.starts_with("MIG-")) {
      ++n;  // a UUID: taken as valid
    } else {
      break;
    }
  }
  return std::min(n, physical);
}

int visible_gpu_count() {
  // The driver's list first: no process to start on every launch. nvidia-smi only where
  // the driver has no /proc entries.
  int physical = -1;
  std::error_code ec;
  std::filesystem::directory_iterator gpus("/proc/driver/nvidia/gpus", ec);
  if (!ec) {
    physical = 0;
    for (const auto& e : gpus) {
      (void)e;
      ++physical;
    }
  } else if (auto smi = find_in_path("nvidia-smi")) {
    const ToolResult r = run_tool(*smi, {"-L"}, {}, "", kToolLimit);
    physical = 0;
    std::istringstream lines(r.ok() ? r.output : "");
    for (std::string line; std::getline(lines, line);)
      if (line.starts_with("GPU ")) ++physical;
  }
  return physical < 0 ? 0 : restrict_to_visible(physical, std::getenv("CUDA_VISIBLE_DEVICES"));
}

void MpsDaemon::start(MpsMode mode, int np, const std::string& folder, bool verbose) {
  verbose_ = verbose;
  if (mode == MpsMode::Off) return;
  const bool on = mode == MpsMode::On;
  auto note = [&](const std::string& what) {
    if (verbose) say(fmt::format("ucharmrun: CUDA MPS: {}\n", what));
  };
  if (!on && np < 2) return;
  int err = 0;
  const auto tool = find_in_path(kControlTool, &err);
  if (!tool) {
    if (on)
      throw LaunchError{fmt::format(
          "--mps on: {} {} (it comes with the NVIDIA driver's utilities); --mps auto or "
          "--mps off runs the job without a CUDA MPS daemon",
          kControlTool, err ? fmt::format("cannot be run: {}", errno_text(err))
                            : std::string("was not found in PATH"))};
    note(fmt::format("not started: {} is not in PATH", kControlTool));
    return;
  }
  if (!on) {
    const int gpus = visible_gpu_count();
    if (gpus == 0) return;  // no GPU: nothing to say, even with --verbose
    if (np <= gpus) {
      note(fmt::format("not started: {} PEs on {} GPUs share none", np, gpus));
      return;
    }
  }
  const char* set = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  const std::string existing = set && *set ? set : kDefaultPipeDir;
  if (daemon_present(existing)) {
    note(fmt::format("a control daemon already answers in {}; the PEs use it", existing));
    return;
  }
  tool_ = *tool;
  pipe_dir_ = folder + "/mps";
  log_dir_ = folder + "/mps-log";
  std::string why;
  if (launch(why)) {
    running_ = true;
    rank_env_ = dirs_env(pipe_dir_, log_dir_);
    note(fmt::format("started a control daemon for this job ({} PEs; pipe directory {})", np,
                     pipe_dir_));
    return;
  }
  stop();  // a daemon that half came up
  if (on) throw LaunchError{fmt::format("--mps on: could not start the CUDA MPS control daemon: {}", why)};
  say(fmt::format("ucharmrun: warning: could not start a CUDA MPS control daemon for the PEs "
                  "that share a GPU ({}); running without MPS (--mps off skips the attempt)\n", why));
}

bool MpsDaemon::launch(std::string& why) {
  for (const std::string& dir : {pipe_dir_, log_dir_})
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      why = fmt::format("cannot create {}: {}", dir, errno_text(errno));
      return false;
    }
  // The daemon's sockets live there (longest name: control_privileged).
  if (pipe_dir_.size() + sizeof("/control_privileged") > sizeof(sockaddr_un::sun_path)) {
    why = fmt::format("its pipe directory {} is too long for a socket path; set TMPDIR to a "
                      "shorter folder", pipe_dir_);
    return false;
  }
  const ToolResult r = run_tool(tool_, {"-d"}, dirs_env(pipe_dir_, log_dir_), "", kToolLimit);
  if (!r.ok()) {
    why = describe_tool("'" + tool_ + " -d'", r) + log_tail(log_dir_);
    return false;
  }
  // -d returns once the daemon forked; the PEs must not start before it answers, or CUDA
  // in them would quietly run without it.
  const auto t0 = Clock::now();
  while (!daemon_present(pipe_dir_)) {
    if (std::chrono::duration<double>(Clock::now() - t0).count() > kReadyLimit) {
      why = fmt::format("the daemon did not answer on {}/control within {} s{}", pipe_dir_,
                        kReadyLimit, log_tail(log_dir_));
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void MpsDaemon::stop() {
  if (pipe_dir_.empty()) return;
  const std::string problem = quit_daemon(tool_, pipe_dir_, log_dir_);
  if (running_ && !problem.empty())
    say(fmt::format("ucharmrun: warning: stopping the job's CUDA MPS daemon: {}\n", problem));
  else if (running_ && verbose_)
    say("ucharmrun: CUDA MPS: the job's control daemon has quit\n");
  pipe_dir_.clear();
  rank_env_.clear();
  running_ = false;
}

void quit_stale_mps(const std::string& folder, bool verbose) {
  const std::string pipe_dir = folder + "/mps";
  const std::optional<pid_t> pid = read_pid(pipe_dir + "/" + kPidFile);
  if (!daemon_present(pipe_dir) && !(pid && live_mps_process(*pid))) return;
  const auto tool = find_in_path(kControlTool);
  std::string problem;
  if (tool) problem = quit_daemon(*tool, pipe_dir, folder + "/mps-log");
  else if (pid && live_mps_process(*pid)) ::kill(*pid, SIGTERM);  // nothing else stops it
  if (verbose)
    say(fmt::format("ucharmrun: stopped the CUDA MPS daemon left in {}{}\n", pipe_dir,
                    problem.empty() ? "" : " (" + problem + ")"));
}

}  // namespace ucharmrun
