// ucharmrun: starts N local processes of a ucharm program under a PMIx server embedded
// here. Forwards their output (optionally prefixed with the rank); on SIGINT, SIGTERM or
// SIGHUP stops the ranks (SIGTERM, then SIGKILL); when a rank fails tells the others (a
// PMIx event), stops them and exits with the first failing code. Its PMIx files live in
// $TMPDIR/ucharmrun.PID.XXXXXX, removed at the end (or by the next launcher after a
// kill -9). Multi-node runs go through mpirun or srun --mpi=pmix.
#include "memevents.h"
#include <dirent.h>
#include <fcntl.h>
#include <pmix.h>
#include <pmix_server.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/core.h>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int np = 1;
  bool prefix = false;
  bool no_bind = false;
  bool verbose = false;
  double timeout = 0;  // seconds; 0: none
  std::vector<std::string> command;
};

// A PMIx operation that completes through a callback on PMIx's thread.
class Completion {
 public:
  static void op_cb(pmix_status_t rc, void* self) { static_cast<Completion*>(self)->done(rc); }
  void done(pmix_status_t rc) {
    std::lock_guard lk(mu_);
    rc_ = rc;
    finished_ = true;
    cv_.notify_all();
  }
  pmix_status_t wait() {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return finished_; });
    return rc_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool finished_ = false;
  pmix_status_t rc_ = PMIX_SUCCESS;
};

// ucharmrun's own exit codes (the job's code otherwise); `--help` lists them all.
constexpr int kExitUsage = 2;          // bad ucharmrun command line
constexpr int kExitTimeout = 124;      // --timeout reached
constexpr int kExitLauncher = 125;     // ucharmrun itself failed
constexpr int kExitCannotExec = 126;   // the program exists but cannot be executed
constexpr int kExitNotFound = 127;     // the program was not found

// Messages go out with plain writes: stderr may be a closed pipe, which must not throw.
void say(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}


// ---- PMIx server upcalls (PMIx's thread) ------------------------------------------------

// What PMIx told us about each rank; written on PMIx's thread, read by the main loop.
struct ClientState {
  bool connected = false;  // called PMIx_Init
  bool finalized = false;  // called PMIx_Finalize: an orderly end, whatever the exit code
  std::string abort_msg;   // called PMIx_Abort
};
std::mutex g_clients_mu;
std::vector<ClientState>* g_clients = nullptr;  // set before any client starts

template <class F>
void with_client(const pmix_proc_t* proc, F&& f) {
  std::lock_guard lk(g_clients_mu);
  if (g_clients && proc && proc->rank < g_clients->size()) f((*g_clients)[proc->rank]);
}

pmix_status_t up_connected(const pmix_proc_t* proc, void*, pmix_op_cbfunc_t, void*) {
  with_client(proc, [](ClientState& c) { c.connected = true; });
  return PMIX_OPERATION_SUCCEEDED;
}
pmix_status_t up_finalized(const pmix_proc_t* proc, void*, pmix_op_cbfunc_t, void*) {
  with_client(proc, [](ClientState& c) { c.finalized = true; });
  return PMIX_OPERATION_SUCCEEDED;
}
pmix_status_t up_abort(const pmix_proc_t* proc, void*, int status, const char msg[],
                       pmix_proc_t*, size_t, pmix_op_cbfunc_t, void*) {
  with_client(proc, [&](ClientState& c) {
    c.abort_msg = fmt::format("{} (status {})", msg ? msg : "", status);
  });
  return PMIX_OPERATION_SUCCEEDED;  // the client exits by itself; SIGCHLD does the rest
}
// All ranks are local: the data the server collected is already complete.
pmix_status_t up_fence(const pmix_proc_t*, size_t, const pmix_info_t*, size_t, char* data,
                       size_t ndata, pmix_modex_cbfunc_t cbfunc, void* cbdata) {
  if (cbfunc) cbfunc(PMIX_SUCCESS, data, ndata, cbdata, nullptr, nullptr);
  return PMIX_SUCCESS;
}
pmix_status_t up_dmodex(const pmix_proc_t*, const pmix_info_t*, size_t, pmix_modex_cbfunc_t,
                        void*) {
  return PMIX_ERR_NOT_FOUND;  // no other server holds data
}

// ---- the job ---------------------------------------------------------------------------

// ucharmrun cannot start or run the job; `code` is its exit code.
struct LaunchError {
  std::string msg;
  int code = kExitLauncher;
};

void check(pmix_status_t rc, const char* what) {
  if (rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED)
    throw LaunchError{fmt::format("{} failed: {}", what, PMIx_Error_string(rc))};
}

std::string errno_text(int err) { return std::strerror(err); }

// How long the stopping steps wait: after a failure the others are told and normally exit
// at once; SIGTERM follows, then SIGKILL.
constexpr auto kTellGrace = std::chrono::seconds(2);
constexpr auto kKillGrace = std::chrono::seconds(3);
// A PE that ended in order with a non-zero code (CmiExit(n)): the others are ending too
// and get this long before the job is stopped as failed.
constexpr auto kOrderlyGrace = std::chrono::seconds(3);
// After the last rank exited, output still held by its children is waited for this long.
constexpr auto kDrainGrace = std::chrono::seconds(2);

// Folders are named ucharmrun.PID.XXXXXX; the owner holds an flock on the folder while it
// lives. One whose owner pid is gone and whose lock is free was left by a killed launcher.
constexpr std::string_view kDirPrefix = "ucharmrun.";

std::optional<pid_t> owner_of(std::string_view name) {
  if (!name.starts_with(kDirPrefix)) return std::nullopt;
  name.remove_prefix(kDirPrefix.size());
  size_t dot = name.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 9 || name.size() - dot - 1 != 6)
    return std::nullopt;
  long long pid = 0;
  for (char c : name.substr(0, dot)) {
    if (c < '0' || c > '9') return std::nullopt;
    pid = pid * 10 + (c - '0');
  }
  if (pid <= 0) return std::nullopt;
  return static_cast<pid_t>(pid);
}

void remove_stale_folders(const std::string& base, bool verbose) {
  DIR* d = ::opendir(base.c_str());
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    auto pid = owner_of(e->d_name);
    if (!pid || *pid == ::getpid()) continue;
    if (::kill(*pid, 0) == 0 || errno == EPERM) continue;  // the owner may still live
    std::string path = base + "/" + e->d_name;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
      continue;
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    // The lock guards a live launcher whose pid we cannot see (another pid namespace).
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
      if (verbose && !ec) say(fmt::format("ucharmrun: removed {}, left by a killed ucharmrun\n", path));
    }
    ::close(fd);
  }
  ::closedir(d);
}

struct Rank {
  pid_t pid = -1;
  int out_fd = -1, err_fd = -1;
  std::string out_partial, err_partial;
  bool exited = false;
  int status = 0;
};

class Launcher {
 public:
  explicit Launcher(Options o) : opt_(std::move(o)), ranks_(static_cast<size_t>(opt_.np)) {}

  int run() {
    try {
      resolve_program();
      block_signals();
      make_folder();
      start_server();
      register_job();
      for (int r = 0; r < opt_.np; ++r) spawn(r);
    } catch (const LaunchError& e) {
      say(fmt::format("ucharmrun: {}\n", e.msg));
      signal_all(SIGKILL);
      for (Rank& rk : ranks_)
        if (rk.pid > 0 && !rk.exited) ::waitpid(rk.pid, nullptr, 0);
      shut_down();
      return e.code;
    }
    int code = supervise();
    shut_down();
    return code;
  }

 private:
  // Finds the file to execute now, so a missing program is one clear message rather than
  // N failed ranks, and the child only has to call execve.
  void resolve_program() {
    const std::string& prog = opt_.command.front();
    auto cannot = [&](int err) {
      const bool missing = err == ENOENT || err == ENOTDIR;
      return LaunchError{fmt::format("cannot run '{}': {}", prog, errno_text(err)),
                         missing ? kExitNotFound : kExitCannotExec};
    };
    // 0 when `path` is an executable file, else why not.
    auto usable = [](const std::string& path) {
      struct stat st;
      if (::stat(path.c_str(), &st) != 0) return errno;
      if (S_ISDIR(st.st_mode)) return EISDIR;
      if (::access(path.c_str(), X_OK) != 0) return errno;
      return 0;
    };
    if (prog.find('/') != std::string::npos) {
      if (int err = usable(prog)) throw cannot(err);
      exec_path_ = prog;
      return;
    }
    const char* path = std::getenv("PATH");
    std::string p = path ? path : "/usr/bin:/bin";
    int first_err = 0;
    for (size_t start = 0; start <= p.size();) {
      size_t end = p.find(':', start);
      if (end == std::string::npos) end = p.size();
      std::string dir = p.substr(start, end - start);
      std::string cand = (dir.empty() ? "." : dir) + "/" + prog;
      int err = usable(cand);
      if (err == 0) {
        exec_path_ = cand;
        return;
      }
      if (err != ENOENT && err != ENOTDIR && !first_err) first_err = err;
      start = end + 1;
    }
    if (first_err) throw cannot(first_err);
    throw LaunchError{fmt::format("cannot run '{}': not found in PATH", prog), kExitNotFound};
  }

  // Signals arrive through a signalfd in the main loop; PMIx's threads (created next)
  // inherit the blocked mask, children get the old mask back before exec. SIGPIPE too:
  // a closed stdout then shows as a signal here and stops the job.
  void block_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&set, s);
    if (::sigprocmask(SIG_BLOCK, &set, &old_mask_) != 0)
      throw LaunchError{fmt::format("sigprocmask: {}", errno_text(errno))};
    sig_fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sig_fd_ < 0) throw LaunchError{fmt::format("signalfd: {}", errno_text(errno))};
  }

  // $TMPDIR/ucharmrun.PID.XXXXXX, locked for as long as this launcher lives.
  void make_folder() {
    std::error_code ec;
    std::string base = std::filesystem::temp_directory_path(ec).string();
    if (ec) throw LaunchError{fmt::format("no temporary folder: {}", ec.message())};
    remove_stale_folders(base, opt_.verbose);
    std::string tmpl = fmt::format("{}/{}{}.XXXXXX", base, kDirPrefix, ::getpid());
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data()))
      throw LaunchError{fmt::format("cannot create a folder in {}: {}", base, errno_text(errno))};
    tmpdir_ = buf.data();
    dir_fd_ = ::open(tmpdir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd_ < 0 || ::flock(dir_fd_, LOCK_EX) != 0)
      throw LaunchError{fmt::format("cannot lock {}: {}", tmpdir_, errno_text(errno))};
  }

  void start_server() {
    static pmix_server_module_t module;
    std::memset(&module, 0, sizeof module);
    module.client_connected = up_connected;
    module.client_finalized = up_finalized;
    module.abort = up_abort;
    module.fence_nb = up_fence;
    module.direct_modex = up_dmodex;

    pmix_info_t info[2];
    PMIX_INFO_CONSTRUCT(&info[0]);
    PMIX_INFO_CONSTRUCT(&info[1]);
    PMIX_INFO_LOAD(&info[0], PMIX_SERVER_TMPDIR, tmpdir_.c_str(), PMIX_STRING);
    PMIX_INFO_LOAD(&info[1], PMIX_SYSTEM_TMPDIR, tmpdir_.c_str(), PMIX_STRING);
    clients_.assign(static_cast<size_t>(opt_.np), ClientState{});
    g_clients = &clients_;
    pmix_status_t rc = PMIx_server_init(&module, info, 2);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    check(rc, "PMIx_server_init");
    server_up_ = true;
  }

  void register_job() {
    std::snprintf(nspace_, sizeof nspace_, "ucharmrun.%d", static_cast<int>(::getpid()));
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    std::string peers;
    for (int r = 0; r < opt_.np; ++r) {
      if (r) peers += ',';
      peers += std::to_string(r);
    }
    char *node_map = nullptr, *proc_map = nullptr;
    check(PMIx_generate_regex(host, &node_map), "PMIx_generate_regex");
    check(PMIx_generate_ppn(peers.c_str(), &proc_map), "PMIx_generate_ppn");

    const uint32_t np = static_cast<uint32_t>(opt_.np), one = 1;
    std::vector<pmix_info_t> info(8 + static_cast<size_t>(opt_.np));
    size_t i = 0;
    PMIX_INFO_LOAD(&info[i++], PMIX_UNIV_SIZE, &np, PMIX_UINT32);
    PMIX_INFO_LOAD(&info[i++], PMIX_JOB_SIZE, &np, PMIX_UINT32);
    PMIX_INFO_LOAD(&info[i++], PMIX_LOCAL_SIZE, &np, PMIX_UINT32);
    PMIX_INFO_LOAD(&info[i++], PMIX_NUM_NODES, &one, PMIX_UINT32);
    PMIX_INFO_LOAD(&info[i++], PMIX_LOCAL_PEERS, peers.c_str(), PMIX_STRING);
    PMIX_INFO_LOAD(&info[i++], PMIX_NODE_MAP, node_map, PMIX_STRING);
    PMIX_INFO_LOAD(&info[i++], PMIX_PROC_MAP, proc_map, PMIX_STRING);
    PMIX_INFO_LOAD(&info[i++], PMIX_HOSTNAME, host, PMIX_STRING);
    // Per-rank data: local and node rank equal the rank (one node).
    for (int r = 0; r < opt_.np; ++r) {
      pmix_data_array_t* arr = nullptr;
      PMIX_DATA_ARRAY_CREATE(arr, 3, PMIX_INFO);
      auto* pi = static_cast<pmix_info_t*>(arr->array);
      const pmix_rank_t rank = static_cast<pmix_rank_t>(r);
      const uint16_t lr = static_cast<uint16_t>(r);
      PMIX_INFO_LOAD(&pi[0], PMIX_RANK, &rank, PMIX_PROC_RANK);
      PMIX_INFO_LOAD(&pi[1], PMIX_LOCAL_RANK, &lr, PMIX_UINT16);
      PMIX_INFO_LOAD(&pi[2], PMIX_NODE_RANK, &lr, PMIX_UINT16);
      PMIX_INFO_LOAD(&info[i++], PMIX_PROC_DATA, arr, PMIX_DATA_ARRAY);
      PMIX_DATA_ARRAY_FREE(arr);
    }
    Completion c;
    pmix_status_t rc =
        PMIx_server_register_nspace(nspace_, opt_.np, info.data(), i, Completion::op_cb, &c);
    if (rc == PMIX_SUCCESS) rc = c.wait();
    for (size_t k = 0; k < i; ++k) PMIX_INFO_DESTRUCT(&info[k]);
    std::free(node_map);
    std::free(proc_map);
    check(rc, "registering the job with the PMIx server");
    nspace_registered_ = true;
  }

  // Everything the child needs is prepared here: between fork and exec a threaded process
  // may only make async-signal-safe calls (PMIx's threads may hold malloc's locks).
  void spawn(int r) {
    pmix_proc_t proc;
    PMIX_LOAD_PROCID(&proc, nspace_, static_cast<pmix_rank_t>(r));
    Completion c;
    pmix_status_t rc = PMIx_server_register_client(&proc, ::geteuid(), ::getegid(), nullptr,
                                                   Completion::op_cb, &c);
    if (rc == PMIX_SUCCESS) rc = c.wait();
    check(rc, "registering a client with the PMIx server");
    // A malloc'd argv-style array, as PMIx_server_setup_fork extends it with realloc.
    size_t n = 0;
    while (environ[n]) ++n;
    char** env = static_cast<char**>(std::calloc(n + 3, sizeof(char*)));
    size_t k = 0;
    for (; k < n; ++k) env[k] = ::strdup(environ[k]);
    if (opt_.verbose) env[k++] = ::strdup("UCHARM_VERBOSE=1");
    if (opt_.no_bind) env[k++] = ::strdup("UCHARM_BIND=0");
    struct EnvFree {
      char** env;
      ~EnvFree() {
        for (char** e = env; *e; ++e) std::free(*e);
        std::free(env);
      }
    };
    rc = PMIx_server_setup_fork(&proc, &env);
    EnvFree env_free{env};
    check(rc, "PMIx_server_setup_fork");

    // out, err: the rank's output; report: carries errno if exec fails (closed by exec).
    int out[2], err[2], report[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 ||
        ::pipe2(report, O_CLOEXEC) != 0)
      throw LaunchError{fmt::format("pipe: {}", errno_text(errno))};
    std::vector<char*> argv;
    for (auto& a : opt_.command) argv.push_back(a.data());
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
      throw LaunchError{fmt::format("cannot run '{}': exec of {} failed: {}", opt_.command.front(),
                                    exec_path_, errno_text(exec_errno)),
                        missing ? kExitNotFound : kExitCannotExec};
    }
  }

  void shut_down() {
    if (nspace_registered_) PMIx_server_deregister_nspace(nspace_, nullptr, nullptr);
    if (server_up_) PMIx_server_finalize();
    server_up_ = nspace_registered_ = false;
    if (!tmpdir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(tmpdir_, ec);
    }
    if (dir_fd_ >= 0) ::close(dir_fd_);
    dir_fd_ = -1;
  }

  void forward(int r, int& fd, std::string& partial, FILE* to) {
    char buf[65536];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) {
      if (!partial.empty()) emit(r, partial + "\n", to);
      partial.clear();
      ::close(fd);
      fd = -1;
      return;
    }
    partial.append(buf, static_cast<size_t>(n));
    size_t pos = partial.rfind('\n');
    if (pos == std::string::npos) return;
    emit(r, partial.substr(0, pos + 1), to);
    partial.erase(0, pos + 1);
  }

  // Plain writes: a closed stdout is reported as SIGPIPE through the signalfd.
  void emit(int r, const std::string& lines, FILE* to) {
    if (!opt_.prefix) {
      std::fwrite(lines.data(), 1, lines.size(), to);
    } else {
      std::string out;
      for (size_t s = 0; s < lines.size();) {
        size_t e = lines.find('\n', s);
        out += fmt::format("[{}] {}\n", r, std::string_view(lines).substr(s, e - s));
        s = e + 1;
      }
      std::fwrite(out.data(), 1, out.size(), to);
    }
    std::fflush(to);
  }

  static std::string describe(int status) {
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "exited with code 0 without finishing the job";
    if (WIFSIGNALED(status))
      return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
    return fmt::format("exited with code {}", WEXITSTATUS(status));
  }
  static int code_of(int status) {
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  }

  size_t running() const { return ranks_.size() - exited_; }

  // The job ends with `code` unless an earlier cause already decided it.
  bool decide(int code) {
    if (exit_code_) return false;
    exit_code_ = code;
    return true;
  }

  // A rank failed: tell the rest (they report it and exit), then stop them.
  void fail(int r, int status) {
    // Leaving with code 0 without finishing still fails the job.
    if (!decide(code_of(status) == 0 ? 1 : code_of(status))) return;
    std::string why = describe(status);
    std::string amsg;
    {
      std::lock_guard lk(g_clients_mu);
      amsg = clients_[static_cast<size_t>(r)].abort_msg;
    }
    say(fmt::format("ucharmrun: rank {} (PE {}, pid {}) {}{}; {}\n", r, r,
                    ranks_[static_cast<size_t>(r)].pid, why,
                    amsg.empty() ? "" : ", after aborting: " + amsg,
                    running() ? fmt::format("stopping the other {} PEs", running())
                              : std::string("ending the job")));
    notify_failure(r, amsg.empty() ? why : "aborted: " + amsg);
    begin_stop();
  }

  void notify_failure(int r, const std::string& why) {
    if (!running()) return;
    pmix_proc_t src;
    PMIX_LOAD_PROCID(&src, nspace_, static_cast<pmix_rank_t>(r));
    pmix_info_t info[2];
    PMIX_INFO_CONSTRUCT(&info[0]);
    PMIX_INFO_CONSTRUCT(&info[1]);
    PMIX_INFO_LOAD(&info[0], PMIX_EVENT_AFFECTED_PROC, &src, PMIX_PROC);
    PMIX_INFO_LOAD(&info[1], "ucharm.why", why.c_str(), PMIX_STRING);
    Completion c;
    pmix_status_t rc = PMIx_Notify_event(PMIX_ERR_PROC_ABORTED, &src, PMIX_RANGE_NAMESPACE,
                                         info, 2, Completion::op_cb, &c);
    if (rc == PMIX_SUCCESS) c.wait();
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
  }

  void signal_all(int sig) {
    for (Rank& rk : ranks_)
      if (!rk.exited && rk.pid > 0) ::kill(rk.pid, sig);
  }

  // Stopping the job: the others were told (failure) -> SIGTERM -> SIGKILL.
  enum class Stop { None, Told, Termed, Killed };
  void begin_stop() {
    if (stop_ != Stop::None) return;
    stop_ = Stop::Told;
    next_step_ = Clock::now() + kTellGrace;
  }
  void terminate_all() {
    if (stop_ == Stop::Termed || stop_ == Stop::Killed) return;
    signal_all(SIGTERM);
    stop_ = Stop::Termed;
    next_step_ = Clock::now() + kKillGrace;
  }
  void kill_all() {
    signal_all(SIGKILL);
    stop_ = Stop::Killed;
    next_step_.reset();
  }

  void on_signal(int sig) {
    if (sig == SIGCHLD) return;
    if (sig == SIGPIPE) {  // stdout or stderr is gone: nowhere to put the job's output
      if (decide(128 + sig)) terminate_all();
      return;
    }
    // SIGINT/SIGTERM/SIGHUP: the PEs get SIGTERM, SIGKILL if they linger or on a repeat.
    if (got_signal_) {
      say(fmt::format("ucharmrun: SIG{} again; killing every PE\n", sigabbrev_np(sig)));
      kill_all();
      return;
    }
    got_signal_ = true;
    if (decide(128 + sig))
      say(fmt::format("ucharmrun: got SIG{}; stopping the job\n", sigabbrev_np(sig)));
    terminate_all();
  }

  void reap() {
    for (;;) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return;
      for (size_t r = 0; r < ranks_.size(); ++r) {
        Rank& rk = ranks_[r];
        if (rk.pid != pid) continue;
        rk.exited = true;
        rk.status = status;
        ++exited_;
        ClientState c;
        {
          std::lock_guard lk(g_clients_mu);
          c = clients_[r];
        }
        if (exit_code_) continue;  // the job is being stopped already
        // After PMIx_Finalize the rank ended in order (CmiExit(code)); a rank that joined
        // the job and left without finalizing has failed, even with code 0, since its
        // peers would wait for it forever. A program that never joins (not a ucharm
        // program) ends in order with code 0.
        const int code = code_of(status);
        if (c.finalized || (!c.connected && code == 0)) {
          if (code != 0 && !orderly_rank_) {
            orderly_code_ = code;
            orderly_rank_ = static_cast<int>(r);
            orderly_deadline_ = Clock::now() + kOrderlyGrace;
          }
        } else {
          fail(static_cast<int>(r), status);
        }
      }
    }
  }

  int supervise() {
    const auto start = Clock::now();
    std::optional<Clock::time_point> all_exited_at;
    for (;;) {
      std::vector<pollfd> fds;
      std::vector<std::pair<int, int>> who;  // (rank, 1 = stdout, 2 = stderr)
      fds.push_back({sig_fd_, POLLIN, 0});
      who.push_back({-1, 0});
      for (size_t r = 0; r < ranks_.size(); ++r) {
        if (ranks_[r].out_fd >= 0) { fds.push_back({ranks_[r].out_fd, POLLIN, 0}); who.push_back({int(r), 1}); }
        if (ranks_[r].err_fd >= 0) { fds.push_back({ranks_[r].err_fd, POLLIN, 0}); who.push_back({int(r), 2}); }
      }
      if (running() == 0) {
        if (fds.size() == 1) break;
        // The ranks are gone but something they started holds their output open.
        if (!all_exited_at) all_exited_at = Clock::now();
        if (Clock::now() - *all_exited_at > kDrainGrace) {
          for (Rank& rk : ranks_) {
            for (int* fd : {&rk.out_fd, &rk.err_fd})
              if (*fd >= 0) { ::close(*fd); *fd = -1; }
          }
          break;
        }
      }
      ::poll(fds.data(), fds.size(), 100);
      for (size_t k = 0; k < fds.size(); ++k) {
        if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        auto [r, stream] = who[k];
        if (r < 0) {
          signalfd_siginfo si;
          while (::read(sig_fd_, &si, sizeof si) == sizeof si) on_signal(static_cast<int>(si.ssi_signo));
          reap();
          continue;
        }
        Rank& rk = ranks_[static_cast<size_t>(r)];
        if (stream == 1) forward(r, rk.out_fd, rk.out_partial, stdout);
        else forward(r, rk.err_fd, rk.err_partial, stderr);
      }
      reap();
      const auto now = Clock::now();
      if (opt_.timeout > 0 && !exit_code_ &&
          now - start > std::chrono::duration<double>(opt_.timeout)) {
        decide(kExitTimeout);
        say(fmt::format("ucharmrun: the job ran past --timeout {} s; stopping it\n", opt_.timeout));
        terminate_all();
      }
      if (orderly_deadline_ && now > *orderly_deadline_ && running() && !exit_code_) {
        const int r = *orderly_rank_;
        decide(*orderly_code_);
        say(fmt::format("ucharmrun: rank {} (PE {}) ended the job with code {}, but {} PEs are "
                        "still running {} s later; stopping them\n", r, r, *orderly_code_,
                        running(), kOrderlyGrace.count()));
        notify_failure(r, fmt::format("ended the job with code {}", *orderly_code_));
        begin_stop();
      }
      if (next_step_ && now > *next_step_) {
        if (stop_ == Stop::Told) terminate_all();
        else kill_all();
      }
    }
    return exit_code_.value_or(orderly_code_.value_or(0));
  }

  Options opt_;
  std::vector<Rank> ranks_;
  std::vector<ClientState> clients_;
  std::string exec_path_;
  char nspace_[PMIX_MAX_NSLEN + 1] = {};
  std::string tmpdir_;
  int dir_fd_ = -1;
  bool server_up_ = false, nspace_registered_ = false;
  sigset_t old_mask_{};
  int sig_fd_ = -1;
  size_t exited_ = 0;
  bool got_signal_ = false;
  Stop stop_ = Stop::None;
  std::optional<Clock::time_point> next_step_;
  std::optional<int> exit_code_;      // decided by the first failure, timeout or signal
  std::optional<int> orderly_code_;   // a non-zero code a rank ended in order with
  std::optional<int> orderly_rank_;
  std::optional<Clock::time_point> orderly_deadline_;
};

// ---- command line ----------------------------------------------------------------------

constexpr int kMaxPes = 4096;
constexpr const char* kUsage = "Usage: ucharmrun -n N [options] [--] program [args...]";

const char* const kHelp = R"(ucharmrun: start a ucharm program on N local PEs under an embedded PMIx server.

Usage: ucharmrun -n N [options] [--] program [args...]

Options (before the program; everything from the program on is the program's):
  -n N, --np N      number of PEs (processes), 1 to 4096 (required)
  -p, --prefix      prefix each output line with "[rank] "
  --no-bind         do not bind PEs to cores (UCHARM_BIND=0 for the ranks)
  -v, --verbose     print the start-up banner (PEs, binding, UCX, transports)
  --timeout S       stop the job after S seconds (a decimal number; 0: no limit)
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
  125      ucharmrun itself failed (PMIx server, fork, temporary folder)
  126      the program exists but cannot be executed
  127      the program was not found
Messages from ucharmrun itself start with "ucharmrun:".

Signals: on SIGINT, SIGTERM or SIGHUP every PE gets SIGTERM, then SIGKILL 3 s later
(a second signal: SIGKILL at once). PEs die with ucharmrun, even on kill -9.
When a PE fails, the others are told (they print which PE died and exit); any still
running 2 s later get SIGTERM, then SIGKILL 3 s after. The first cause (failure, timeout,
signal) decides the exit code.
Cleanup: ucharmrun keeps its PMIx files in $TMPDIR/ucharmrun.PID.XXXXXX and removes it
when it ends; folders left by a ucharmrun that was killed are removed by the next one.
)";

struct UsageError {
  std::string msg;
};

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

// Returns the options, or nothing when --help was printed.
std::optional<Options> parse_command_line(int argc, char** argv) {
  Options o;
  bool have_np = false;
  int i = 1;
  for (; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.size() < 2 || a[0] != '-') break;  // the program
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
  if (i >= argc) throw UsageError{"no program given"};
  o.command.assign(argv + i, argv + argc);
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread starts: the PEs inherit UCX_MEM_EVENTS=no where nothing on this
  // host needs UCX's memory hooks (0.4 s of every PE's start-up otherwise).
  ucharm::machine::configure_memory_events();
  std::optional<Options> o;
  try {
    o = parse_command_line(argc, argv);
  } catch (const UsageError& e) {
    say(fmt::format("ucharmrun: {}\n{}\nRun 'ucharmrun --help' for the options and exit codes.\n",
                    e.msg, kUsage));
    return kExitUsage;
  }
  if (!o) return 0;
  return Launcher(std::move(*o)).run();
}
