// ucharmrun: starts N local processes of a ucharm program under a PMIx server embedded
// here. Forwards their output (optionally prefixed with the rank), forwards SIGINT and
// SIGTERM, and when a rank fails tells the others (a PMIx event), stops them and exits
// with the first failing code. Multi-node runs go through mpirun or srun --mpi=pmix.
#include <fcntl.h>
#include <pmix.h>
#include <pmix_server.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
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

[[noreturn]] void die(const std::string& msg, int code = 1) {
  fmt::print(stderr, "ucharmrun: {}\n", msg);
  std::exit(code);
}

void check(pmix_status_t rc, const char* what) {
  if (rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED)
    die(fmt::format("{} failed: {}", what, PMIx_Error_string(rc)));
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
    resolve_program();
    block_signals();
    start_server();
    register_job();
    for (int r = 0; r < opt_.np; ++r) spawn(r);
    int code = supervise();
    PMIx_server_deregister_nspace(nspace_, nullptr, nullptr);
    PMIx_server_finalize();
    std::error_code ec;
    std::filesystem::remove_all(tmpdir_, ec);
    return code;
  }

 private:
  void resolve_program() {
    const std::string& prog = opt_.command.front();
    if (prog.find('/') != std::string::npos) {
      if (::access(prog.c_str(), X_OK) != 0)
        die(fmt::format("cannot run '{}': {}", prog, std::strerror(errno)), 127);
      return;
    }
    const char* path = std::getenv("PATH");
    std::string p = path ? path : "/usr/bin:/bin";
    for (size_t start = 0; start <= p.size();) {
      size_t end = p.find(':', start);
      if (end == std::string::npos) end = p.size();
      std::string cand = p.substr(start, end - start) + "/" + prog;
      if (::access(cand.c_str(), X_OK) == 0) return;
      start = end + 1;
    }
    die(fmt::format("cannot run '{}': not found in PATH", prog), 127);
  }

  // Signals arrive through a signalfd in the main loop; PMIx's threads (created next)
  // inherit the blocked mask, children get the old mask back before exec.
  void block_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, s);
    if (::sigprocmask(SIG_BLOCK, &set, &old_mask_) != 0) die("sigprocmask failed");
    sig_fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sig_fd_ < 0) die(fmt::format("signalfd: {}", std::strerror(errno)));
  }

  void start_server() {
    std::string base = std::filesystem::temp_directory_path().string() + "/ucharmrun.XXXXXX";
    std::vector<char> buf(base.begin(), base.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) die(fmt::format("mkdtemp: {}", std::strerror(errno)));
    tmpdir_ = buf.data();

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
    check(PMIx_server_init(&module, info, 2), "PMIx_server_init");
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    clients_.assign(static_cast<size_t>(opt_.np), ClientState{});
    g_clients = &clients_;
  }

  void register_job() {
    std::snprintf(nspace_, sizeof nspace_, "ucharmrun.%d", static_cast<int>(::getpid()));
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    std::string peers;
    for (int r = 0; r < opt_.np; ++r) peers += (r ? "," : "") + std::to_string(r);
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
    check(PMIx_server_register_nspace(nspace_, opt_.np, info.data(), i, Completion::op_cb, &c),
          "PMIx_server_register_nspace");
    check(c.wait(), "registering the job with the PMIx server");
    for (size_t k = 0; k < i; ++k) PMIX_INFO_DESTRUCT(&info[k]);
    std::free(node_map);
    std::free(proc_map);
  }

  void spawn(int r) {
    pmix_proc_t proc;
    PMIX_LOAD_PROCID(&proc, nspace_, static_cast<pmix_rank_t>(r));
    Completion c;
    check(PMIx_server_register_client(&proc, ::geteuid(), ::getegid(), nullptr,
                                      Completion::op_cb, &c),
          "PMIx_server_register_client");
    check(c.wait(), "registering a client");
    // A malloc'd argv-style array, as PMIx_server_setup_fork extends it with realloc.
    size_t n = 0;
    while (environ[n]) ++n;
    char** env = static_cast<char**>(std::calloc(n + 3, sizeof(char*)));
    size_t k = 0;
    for (; k < n; ++k) env[k] = ::strdup(environ[k]);
    if (opt_.verbose) env[k++] = ::strdup("UCHARM_VERBOSE=1");
    if (opt_.no_bind) env[k++] = ::strdup("UCHARM_BIND=0");
    check(PMIx_server_setup_fork(&proc, &env), "PMIx_server_setup_fork");

    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
      die(fmt::format("pipe: {}", std::strerror(errno)));
    std::vector<char*> argv;
    for (auto& a : opt_.command) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) die(fmt::format("fork: {}", std::strerror(errno)));
    if (pid == 0) {
      // No orphans: the child dies with the launcher, even on kill -9 of the launcher.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(err[1], STDERR_FILENO);
      ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
      ::execvpe(argv[0], argv.data(), env);
      std::fprintf(stderr, "ucharmrun: exec '%s' failed: %s\n", argv[0], std::strerror(errno));
      ::_exit(127);
    }
    for (char** e = env; *e; ++e) std::free(*e);
    std::free(env);
    ::close(out[1]);
    ::close(err[1]);
    Rank& rk = ranks_[static_cast<size_t>(r)];
    rk.pid = pid;
    rk.out_fd = out[0];
    rk.err_fd = err[0];
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

  void emit(int r, const std::string& lines, FILE* to) {
    if (!opt_.prefix) {
      std::fwrite(lines.data(), 1, lines.size(), to);
    } else {
      for (size_t s = 0; s < lines.size();) {
        size_t e = lines.find('\n', s);
        fmt::print(to, "[{}] {}\n", r, std::string_view(lines).substr(s, e - s));
        s = e + 1;
      }
    }
    std::fflush(to);
  }

  static std::string describe(int status) {
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "exited (code 0) without finishing the job";
    if (WIFSIGNALED(status))
      return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
    return fmt::format("exited with code {}", WEXITSTATUS(status));
  }
  static int code_of(int status) {
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  }

  // A rank failed: tell the rest (they report it and exit), then stop them.
  void fail(int r, int status) {
    if (!first_failure_) {
      first_failure_ = code_of(status);
      std::string why = describe(status);
      std::string amsg;
      {
        std::lock_guard lk(g_clients_mu);
        amsg = clients_[static_cast<size_t>(r)].abort_msg;
      }
      fmt::print(stderr, "ucharmrun: rank {} (pid {}) {}{}; stopping the job\n", r,
                 ranks_[static_cast<size_t>(r)].pid, why,
                 amsg.empty() ? "" : ", after aborting: " + amsg);
      std::fflush(stderr);
      notify_failure(r, amsg.empty() ? why : "aborted: " + amsg);
      kill_deadline_ = Clock::now() + std::chrono::seconds(3);
    }
  }

  void notify_failure(int r, const std::string& why) {
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
        if (interrupted_) continue;
        // After PMIx_Finalize the rank ended in order (CmiExit(code)); a rank that joined
        // the job and left without finalizing has failed, even with code 0, since its
        // peers would wait for it forever.
        if (c.finalized || (!c.connected && code_of(status) == 0)) {
          if (code_of(status) != 0 && !orderly_code_) orderly_code_ = code_of(status);
        } else {
          fail(static_cast<int>(r), status);
        }
      }
    }
  }

  int supervise() {
    const auto start = Clock::now();
    bool termed = false;
    for (;;) {
      std::vector<pollfd> fds;
      std::vector<std::pair<int, int>> who;  // (rank, 1 = stdout, 2 = stderr)
      fds.push_back({sig_fd_, POLLIN, 0});
      who.push_back({-1, 0});
      for (size_t r = 0; r < ranks_.size(); ++r) {
        if (ranks_[r].out_fd >= 0) { fds.push_back({ranks_[r].out_fd, POLLIN, 0}); who.push_back({int(r), 1}); }
        if (ranks_[r].err_fd >= 0) { fds.push_back({ranks_[r].err_fd, POLLIN, 0}); who.push_back({int(r), 2}); }
      }
      if (fds.size() == 1 && exited_ == ranks_.size()) break;
      ::poll(fds.data(), fds.size(), 200);
      for (size_t k = 0; k < fds.size(); ++k) {
        if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        auto [r, stream] = who[k];
        if (r < 0) {
          signalfd_siginfo si;
          while (::read(sig_fd_, &si, sizeof si) == sizeof si) {
            if (si.ssi_signo == SIGCHLD) continue;
            // SIGINT/SIGTERM/SIGHUP: pass on to the ranks, then stop them if they linger.
            interrupted_ = static_cast<int>(si.ssi_signo);
            signal_all(static_cast<int>(si.ssi_signo));
            if (!kill_deadline_) kill_deadline_ = Clock::now() + std::chrono::seconds(3);
          }
          reap();
          continue;
        }
        Rank& rk = ranks_[static_cast<size_t>(r)];
        if (stream == 1) forward(r, rk.out_fd, rk.out_partial, stdout);
        else forward(r, rk.err_fd, rk.err_partial, stderr);
      }
      reap();
      auto now = Clock::now();
      if (opt_.timeout > 0 && !timed_out_ &&
          now - start > std::chrono::duration<double>(opt_.timeout)) {
        timed_out_ = true;
        fmt::print(stderr, "ucharmrun: the job ran past --timeout {} s; stopping it\n", opt_.timeout);
        signal_all(SIGTERM);
        kill_deadline_ = now + std::chrono::seconds(2);
        termed = true;
      }
      if (kill_deadline_ && now > *kill_deadline_) {
        signal_all(termed ? SIGKILL : SIGTERM);
        kill_deadline_ = now + std::chrono::seconds(2);
        termed = true;
      }
    }
    if (timed_out_) return 124;
    if (first_failure_) return *first_failure_;
    if (interrupted_) return 128 + interrupted_;
    return orderly_code_.value_or(0);
  }

  Options opt_;
  std::vector<Rank> ranks_;
  std::vector<ClientState> clients_;
  char nspace_[PMIX_MAX_NSLEN + 1] = {};
  std::string tmpdir_;
  sigset_t old_mask_{};
  int sig_fd_ = -1;
  size_t exited_ = 0;
  int interrupted_ = 0;
  bool timed_out_ = false;
  std::optional<int> first_failure_;
  std::optional<int> orderly_code_;
  std::optional<Clock::time_point> kill_deadline_;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"ucharmrun: start a ucharm program on N local PEs under an embedded PMIx server"};
  app.add_option("-n,--np", o.np, "number of PEs (processes)")->required()->check(CLI::Range(1, 4096));
  app.add_flag("-p,--prefix", o.prefix, "prefix each output line with [rank]");
  app.add_flag("--no-bind", o.no_bind, "do not bind PEs to cores");
  app.add_flag("-v,--verbose", o.verbose, "print the start-up banner (PEs, binding, UCX, transports)");
  app.add_option("--timeout", o.timeout, "stop the job after this many seconds (exit 124)")
      ->check(CLI::NonNegativeNumber);
  app.footer("Usage: ucharmrun -n N [options] program [args...]");
  // Everything from the program name on belongs to the program.
  app.prefix_command();
  try {
    app.parse(argc, argv);
    o.command = app.remaining();
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (o.command.empty()) {
    fmt::print(stderr, "ucharmrun: no program given\nUsage: ucharmrun -n N [options] program [args...]\n");
    return 2;
  }
  return Launcher(std::move(o)).run();
}
