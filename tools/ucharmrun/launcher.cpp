// ucharmrun: starts N local processes of a ucharm program under a PMIx server embedded
// here. Forwards their output (optionally prefixed with the rank); on SIGINT, SIGTERM or
// SIGHUP stops the ranks (SIGTERM, then SIGKILL); when a rank fails tells the others (a
// PMIx event), stops them and exits with the first failing code (or, with
// --restart-on-failure, starts the job again: restart.cpp). Its PMIx files live in
// $TMPDIR/ucharmrun.PID.XXXXXX, removed at the end (or by the next launcher after a
// kill -9). Multi-node runs go through mpirun or srun --mpi=pmix.
// This file starts the job (with a CUDA MPS daemon where PEs share a GPU: mps.cpp);
// supervision.cpp watches it.
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "memevents.h"
#include "ucharmrun.h"

extern char** environ;

namespace ucharmrun {

int Launcher::run() {
  int code = 0;
  try {
    resolve_program();
    block_signals();
    folder_.create(opt_.verbose);
    record_path_ = folder_.path() + "/checkpoint-record";
    // Before the PMIx server's threads exist; one daemon serves every attempt.
    mps_.start(opt_.mps, opt_.np, folder_.path(), opt_.verbose);
    server_.start(folder_.path(), opt_.np);
    if (opt_.timeout > 0)
      deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(opt_.timeout));
    for (;;) {
      code = run_attempt();
      if (!prepare_restart(code)) break;
    }
  } catch (const LaunchError& e) {
    say(fmt::format("ucharmrun: {}\n", e.msg));
    signal_all(SIGKILL);
    for (Rank& rk : ranks_)
      if (rk.pid > 0 && !rk.exited) ::waitpid(rk.pid, nullptr, 0);
    shut_down();
    return e.code;
  }
  shut_down();
  if (auto trace = trace_file(command_))  // every rank has ended: join its parts
    if (std::string note = merge_trace(*trace, opt_.np, code != 0); !note.empty())
      say(fmt::format("ucharmrun: {}\n", note));
  return code;
}

// One run of the job in a namespace of its own; returns its exit code.
int Launcher::run_attempt() {
  server_.register_job(attempt_);
  for (int r = 0; r < opt_.np; ++r) spawn(r);
  const int code = supervise();
  server_.end_job();
  return code;
}

// Finds the file to execute now, so a missing program is one clear message rather than
// N failed ranks, and the child only has to call execve.
void Launcher::resolve_program() {
  const std::string& prog = opt_.command.front();
  int err = 0;
  if (auto found = find_in_path(prog, &err)) {
    exec_path_ = *found;
    return;
  }
  if (err == 0 && prog.find('/') == std::string::npos)
    throw LaunchError{fmt::format("cannot run '{}': not found in PATH", prog), kExitNotFound};
  const bool missing = err == ENOENT || err == ENOTDIR;
  throw LaunchError{fmt::format("cannot run '{}': {}", prog, errno_text(err)),
                    missing ? kExitNotFound : kExitCannotExec};
}

std::optional<std::string> find_in_path(const std::string& name, int* first_err) {
  int dummy = 0;
  int& first = first_err ? *first_err : dummy;
  first = 0;
  // 0 when `path` is an executable file, else why not.
  auto usable = [](const std::string& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return errno;
    if (S_ISDIR(st.st_mode)) return EISDIR;
    if (::access(path.c_str(), X_OK) != 0) return errno;
    return 0;
  };
  if (name.find('/') != std::string::npos) {
    first = usable(name);
    if (first == 0) return name;
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  for (size_t start = 0; start <= p.size();) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    std::string cand = (dir.empty() ? "." : dir) + "/" + name;
    int err = usable(cand);
    if (err == 0) return cand;
    if (err != ENOENT && err != ENOTDIR && !first) first = err;
    start = end + 1;
  }
  return std::nullopt;
}

// Signals arrive through a signalfd in the main loop; PMIx's threads (created next)
// inherit the blocked mask, children get the old mask back before exec. SIGPIPE too:
// a closed stdout then shows as a signal here and stops the job.
void Launcher::block_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&set, s);
  if (::sigprocmask(SIG_BLOCK, &set, &old_mask_) != 0)
    throw LaunchError{fmt::format("sigprocmask: {}", errno_text(errno))};
  sig_fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sig_fd_ < 0) throw LaunchError{fmt::format("signalfd: {}", errno_text(errno))};
}

// Everything the child needs is prepared here: between fork and exec a threaded process
// may only make async-signal-safe calls (PMIx's threads may hold malloc's locks).
void Launcher::spawn(int r) {
  // A malloc'd argv-style array, as PMIx_server_setup_fork extends it with realloc.
  struct Env {
    char** env = nullptr;
    ~Env() {
      for (char** e = env; e && *e; ++e) std::free(*e);
      std::free(env);
    }
  } job_env;
  std::vector<std::string> extra = local_rank_env(r, opt_.np);
  extra.push_back(fmt::format("{}={}", kRecordVar, record_path_));
  extra.push_back(fmt::format("{}={}", kAttemptVar, attempt_));
  const auto& mps_env = mps_.rank_env();  // the job's MPS daemon, if it has one
  extra.insert(extra.end(), mps_env.begin(), mps_env.end());
  if (opt_.verbose) extra.emplace_back("UCHARM_VERBOSE=1");
  if (opt_.no_bind) extra.emplace_back("UCHARM_BIND=0");
  extra.insert(extra.end(), opt_.server_env.begin(), opt_.server_env.end());
  size_t n = 0;
  while (environ[n]) ++n;
  char** env = job_env.env =
      static_cast<char**>(std::calloc(n + extra.size() + 1, sizeof(char*)));
  size_t k = 0;
  // The launcher's own variables replace inherited ones (a ucharmrun started by a job,
  // or under mpirun: its local rank is not the PE's).
  auto ours = [&](std::string_view e) {
    if (is_local_rank_var(e)) return true;
    for (std::string_view v : {kRecordVar, kAttemptVar})
      if (e.size() > v.size() && e.starts_with(v) && e[v.size()] == '=') return true;
    for (const std::string& v : mps_env)
      if (e.starts_with(std::string_view(v).substr(0, v.find('=') + 1))) return true;
    return false;
  };
  for (size_t i = 0; i < n; ++i)
    if (!ours(environ[i])) env[k++] = ::strdup(environ[i]);
  for (const std::string& e : extra) env[k++] = ::strdup(e.c_str());
  server_.setup_client(r, &job_env.env);
  env = job_env.env;

  // out, err: the rank's output; report: carries errno if exec fails (closed by exec).
  int out[2], err[2], report[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 ||
      ::pipe2(report, O_CLOEXEC) != 0)
    throw LaunchError{fmt::format("pipe: {}", errno_text(errno))};
  std::vector<char*> argv;
  for (auto& a : command_) argv.push_back(a.data());
  argv.push_back(nullptr);
  const char* path = exec_path_.c_str();
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw LaunchError{fmt::format("fork: {}", errno_text(errno))};
  if (pid == 0) {
    // No orphans: the child dies with the launcher, even on kill -9 of the launcher.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(kExitLauncher);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    ::execve(path, argv.data(), env);
    const int e = errno;
    [[maybe_unused]] ssize_t w = ::write(report[1], &e, sizeof e);
    ::_exit(kExitCannotExec);
  }
  ::close(out[1]);
  ::close(err[1]);
  ::close(report[1]);
  Rank& rk = ranks_[static_cast<size_t>(r)];
  rk.pid = pid;
  rk.out_fd = out[0];
  rk.err_fd = err[0];
  // Returns at exec (the pipe closes) or with the errno of a failed exec.
  int exec_errno = 0;
  ssize_t got;
  do got = ::read(report[0], &exec_errno, sizeof exec_errno);
  while (got < 0 && errno == EINTR);
  ::close(report[0]);
  if (got == sizeof exec_errno) {
    const bool missing = exec_errno == ENOENT || exec_errno == ENOTDIR;
    throw LaunchError{fmt::format("cannot run '{}': exec of {} failed: {}", command_.front(),
                                  exec_path_, errno_text(exec_errno)),
                      missing ? kExitNotFound : kExitCannotExec};
  }
}

void Launcher::shut_down() {
  server_.shut_down();
  mps_.stop();  // every PE has ended: its clients are gone
  folder_.remove();
}

}  // namespace ucharmrun

int main(int argc, char** argv) {
  // Before any thread starts: the PEs inherit UCX_MEM_EVENTS=no where nothing on this
  // host needs UCX's memory hooks (0.4 s of every PE's start-up otherwise).
  ucharm::machine::configure_memory_events();
  std::optional<ucharmrun::Options> o;
  try {
    o = ucharmrun::parse_command_line(argc, argv);
  } catch (const ucharmrun::UsageError& e) {
    ucharmrun::say(fmt::format(
        "ucharmrun: {}\n{}\nRun 'ucharmrun --help' for the options and exit codes.\n", e.msg,
        ucharmrun::kUsage));
    return ucharmrun::kExitUsage;
  }
  if (!o) return 0;
  return ucharmrun::Launcher(std::move(*o)).run();
}
