// ucharmrun's parts (internal to this folder): the command line (options.cpp), the job
// folder (job_folder.cpp), the embedded PMIx server (pmix_server.cpp), starting the ranks
// (launcher.cpp), the local-rank variables (local_env.cpp), a private CUDA MPS daemon
// (mps.cpp) and supervising the ranks (supervision.cpp).
#pragma once

#include <pmix_common.h>
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdio>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ucharmrun {

using Clock = std::chrono::steady_clock;

// ---- exit codes and messages (options.cpp) ----------------------------------------------

// ucharmrun's own exit codes (the job's code otherwise); `--help` lists them all.
constexpr int kExitUsage = 2;          // bad ucharmrun command line
constexpr int kExitTimeout = 124;      // --timeout reached
constexpr int kExitLauncher = 125;     // ucharmrun itself failed
constexpr int kExitCannotExec = 126;   // the program exists but cannot be executed
constexpr int kExitNotFound = 127;     // the program was not found

// Messages go out with plain writes: stderr may be a closed pipe, which must not throw.
void say(const std::string& text);
std::string errno_text(int err);

// ucharmrun cannot start or run the job; `code` is its exit code.
struct LaunchError {
  std::string msg;
  int code = kExitLauncher;
};

// ---- the command line (options.cpp) ----------------------------------------------------

// --mps / UCHARM_MPS: a private CUDA MPS control daemon for PEs that share a GPU.
enum class MpsMode { Auto, On, Off };

struct Options {
  int np = 1;
  bool prefix = false;
  bool no_bind = false;
  bool verbose = false;
  double timeout = 0;  // seconds for the whole run, restarts included; 0: none
  int restart_on_failure = 0;  // --restart-on-failure N: restarts after a rank died
  MpsMode mps = MpsMode::Auto;  // --mps, else UCHARM_MPS, else auto
  // ++server, ++server-port N, ++server-auth FILE, ++server-ip ADDR (charmrun's CCS
  // options): passed to the PEs as UCHARM_SERVER* variables (PE 0 runs the server).
  std::vector<std::string> server_env;
  std::vector<std::string> command;
};

extern const char* const kUsage;

struct UsageError {
  std::string msg;
};

// Returns the options, or nothing when --help was printed; throws UsageError.
std::optional<Options> parse_command_line(int argc, char** argv);

// ---- the job folder (job_folder.cpp) ---------------------------------------------------

// $TMPDIR/ucharmrun.PID.XXXXXX, holding the PMIx server's files, locked (flock) while the
// launcher lives and removed when it ends; folders of killed launchers are removed first.
class JobFolder {
 public:
  JobFolder() = default;
  JobFolder(const JobFolder&) = delete;
  JobFolder& operator=(const JobFolder&) = delete;
  ~JobFolder() { remove(); }

  void create(bool verbose);  // throws LaunchError
  void remove();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// An executable file `name` in PATH (a name with a '/' is taken as it is): its path, or
// nothing; `first_err` gets the first error other than "not there" (EACCES, EISDIR...).
std::optional<std::string> find_in_path(const std::string& name, int* first_err = nullptr);

// ---- the local-rank variables (local_env.cpp) -------------------------------------------

// The variables that programs and libraries read to pick a GPU, for PE `r` of `np` (all on
// this host): LOCAL_RANK, the MPI launchers' names (Open MPI, MPICH/Hydra, MVAPICH), and
// SLURM_LOCALID/SLURM_PROCID only where the launcher's environment has them already (from
// a Slurm step or batch script, where they describe the launcher, not the PE).
// "NAME=VALUE" strings; inherited values of these names are replaced.
std::vector<std::string> local_rank_env(int r, int np);
// Whether "NAME=..." sets one of the names local_rank_env may set.
bool is_local_rank_var(std::string_view entry);

// ---- CUDA MPS (mps.cpp) -----------------------------------------------------------------

// How many GPUs the PEs can see: the entries of /proc/driver/nvidia/gpus, else the "GPU n:"
// lines of `nvidia-smi -L`, restricted by CUDA_VISIBLE_DEVICES as CUDA reads it (up to
// the first entry that is not a device).
int visible_gpu_count();
// The count that CUDA_VISIBLE_DEVICES=`cvd` leaves of `physical` GPUs (null: all).
int restrict_to_visible(int physical, const char* cvd);

// A CUDA MPS control daemon private to this job: its pipe and log directories live in the
// job folder (mode 0700), it is started before the first PE and told to quit after the
// last one has ended, however the job ends. It never changes a GPU setting.
class MpsDaemon {
 public:
  MpsDaemon() = default;
  MpsDaemon(const MpsDaemon&) = delete;
  MpsDaemon& operator=(const MpsDaemon&) = delete;
  ~MpsDaemon() { stop(); }

  // Starts the daemon if `mode` asks for it: On always, Auto when the job has more PEs than
  // the host has GPUs, nvidia-cuda-mps-control is in PATH and no MPS daemon is reachable
  // yet. A failed start is one warning (Auto) or a LaunchError (On).
  void start(MpsMode mode, int np, const std::string& folder, bool verbose);
  // Quits the daemon (and its servers) and waits for it to end; does nothing without one.
  void stop();
  bool running() const { return running_; }
  // CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY for the PEs (empty: none started).
  const std::vector<std::string>& rank_env() const { return rank_env_; }

 private:
  bool launch(std::string& why);  // false with the reason when the daemon did not come up

  std::string tool_, pipe_dir_, log_dir_;
  std::vector<std::string> rank_env_;
  bool running_ = false, verbose_ = false;
};

// A folder of a killed launcher may hold a daemon that still runs: it is told to quit
// before the folder is removed (nothing happens when none answers).
void quit_stale_mps(const std::string& folder, bool verbose);

// ---- the PMIx server (pmix_server.cpp) -------------------------------------------------

// What PMIx told us about each rank; written on PMIx's thread, read by the main loop.
struct ClientState {
  bool connected = false;  // called PMIx_Init
  bool finalized = false;  // called PMIx_Finalize: an orderly end, whatever the exit code
  std::string abort_msg;   // called PMIx_Abort
};

// The embedded server (one per process, as libpmix allows): one job of np local ranks.
class PmixServer {
 public:
  PmixServer() = default;
  PmixServer(const PmixServer&) = delete;
  PmixServer& operator=(const PmixServer&) = delete;
  ~PmixServer() { shut_down(); }

  void start(const std::string& tmpdir, int np);  // throws LaunchError
  // A fresh namespace per attempt (ucharmrun.PID, then ucharmrun.PID.rK), so nothing of
  // a failed attempt (clients, events, data) reaches the next. Throws LaunchError.
  void register_job(int attempt);
  void end_job();  // deregisters the attempt's namespace (every rank has ended)
  // Registers rank r and adds its PMIx variables to `env` (a malloc'd argv-style array).
  void setup_client(int r, char*** env);
  // Tells the other ranks that rank r failed, and why (a PMIx event).
  void notify_failure(int r, const std::string& why);
  ClientState client(int r) const;  // a snapshot
  void shut_down();

 private:
  friend struct Upcalls;
  mutable std::mutex mu_;  // guards clients_ and nspace_ (PMIx's thread reads them)
  std::vector<ClientState> clients_;
  int np_ = 0;
  char nspace_[PMIX_MAX_NSLEN + 1] = {};  // the current attempt's
  bool up_ = false, registered_ = false;
};

// ---- +trace (trace_merge.cpp) -------------------------------------------------------------

// The FILE of a `+trace FILE` (or `+trace=FILE`) among the program's arguments.
std::optional<std::string> trace_file(const std::vector<std::string>& command);
// Joins the PEs' parts of trace `file` into `file` once every rank has ended; removes the
// parts unless the job failed or one is missing. Returns a note for the user ("" if none).
std::string merge_trace(const std::string& file, int np, bool job_failed);

// ---- --restart-on-failure (restart.cpp) -------------------------------------------------

// The environment variables every rank gets: the file where PE 0 records the directory of
// each complete checkpoint (one absolute path, written by tmp + rename), and the attempt
// (0 first, then 1.. after each restart).
constexpr const char* kRecordVar = "UCHARM_CHECKPOINT_RECORD";
constexpr const char* kAttemptVar = "UCHARM_RESTART_ATTEMPT";

// The checkpoint directory named by the record file: nothing when there is no record yet;
// throws LaunchError when the file holds something other than one absolute path.
std::optional<std::string> read_checkpoint_record(const std::string& file);
// `command` with `+restart DIR` (or `+restart=DIR`) replaced by `dir`, or appended.
std::vector<std::string> with_restart(std::vector<std::string> command, const std::string& dir);

// ---- the job (launcher.cpp starts it, supervision.cpp watches it) ----------------------

struct Rank {
  pid_t pid = -1;
  int out_fd = -1, err_fd = -1;
  std::string out_partial, err_partial;
  bool exited = false;
  int status = 0;
};

class Launcher {
 public:
  explicit Launcher(Options o)
      : opt_(std::move(o)), ranks_(static_cast<size_t>(opt_.np)), command_(opt_.command) {}
  int run();

 private:
  // launcher.cpp: starting the job.
  void resolve_program();
  void block_signals();
  int run_attempt();  // throws LaunchError
  void spawn(int r);
  void shut_down();

  // restart.cpp: whether and how the job starts again after an attempt ended with `code`.
  bool prepare_restart(int code);
  void reset_attempt();

  // supervision.cpp: output, failures, signals, the stopping steps.
  int supervise();
  void forward(int r, int& fd, std::string& partial, FILE* to);
  void emit(int r, const std::string& lines, FILE* to);
  size_t running() const { return ranks_.size() - exited_; }
  bool decide(int code);
  void fail(int r, int status);
  void signal_all(int sig);
  void begin_stop();
  void terminate_all();
  void kill_all();
  void on_signal(int sig);
  void reap();

  Options opt_;
  std::vector<Rank> ranks_;
  JobFolder folder_;
  PmixServer server_;
  MpsDaemon mps_;  // after folder_: destroyed (quit) before the folder is removed
  std::string exec_path_;
  std::vector<std::string> command_;  // this attempt's program and arguments
  std::string record_path_;           // UCHARM_CHECKPOINT_RECORD, in the job folder
  int attempt_ = 0;
  std::optional<Clock::time_point> deadline_;  // --timeout, over every attempt
  sigset_t old_mask_{};
  int sig_fd_ = -1;
  size_t exited_ = 0;
  bool got_signal_ = false;
  bool output_closed_ = false;  // got SIGPIPE
  // Stopping the job: the others were told (failure) -> SIGTERM -> SIGKILL.
  enum class Stop { None, Told, Termed, Killed };
  Stop stop_ = Stop::None;
  std::optional<Clock::time_point> next_step_;
  std::optional<int> exit_code_;      // decided by the first failure, timeout or signal
  std::optional<int> orderly_code_;   // a non-zero code a rank ended in order with
  std::optional<int> orderly_rank_;
  std::optional<Clock::time_point> orderly_deadline_;
  // The rank that died and decided this attempt's end (killed by a signal, or left the
  // job without finalizing or aborting): what --restart-on-failure restarts after.
  struct Death {
    int rank = 0;
    int status = 0;
  };
  std::optional<Death> death_;
};

}  // namespace ucharmrun
