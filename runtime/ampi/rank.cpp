// Start-up: AMPI's options, the rank array, each rank's thread running the program's main,
// the job's exit code; MPI_Init/Finalize/Abort and the environment queries.
#include "rank.h"
#include "threads.h"
#include "checks.h"
#include "comm/comms.h"
#include "heap.h"
#include "extensions.h"

#include <dlfcn.h>
#include <sys/random.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cfenv>
#include <cstring>
#include <ctime>
#include <string_view>

namespace ampi {

namespace {

struct Options {
  int vp = 0;                           // ranks; 0: one per PE
  std::size_t stack = std::size_t{8} << 20;  // each rank's stack (mapped lazily)
  bool staging = false;                 // +ampi-staging
  std::size_t direct_min = std::size_t{256} << 10;  // +ampi-direct-min (0: never)
  int coll_crowded = -1;                // +ampi-coll-crowded: 0 or 1; -1: from the job's shape
};

// The CUDA driver's current context, saved and restored around a rank's waits. Found only
// if the driver is already loaded when the ranks start (the machine layer and UCX load it
// where there is a GPU); otherwise there is nothing to keep.
struct CudaContext {
  using Get = int (*)(void**);
  using Set = int (*)(void*);
  Get get = nullptr;
  Set set = nullptr;
  bool looked = false;
  void find() {
    if (looked) return;
    looked = true;
    if (void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) {
      get = reinterpret_cast<Get>(dlsym(h, "cuCtxGetCurrent"));
      set = reinterpret_cast<Set>(dlsym(h, "cuCtxSetCurrent"));
      if (!get || !set) get = nullptr, set = nullptr;
    }
  }
};

// What every PE of the process knows about the program (set once, before the runtime starts).
struct Process {
  const Program* program = nullptr;
  Options options;
  char** argv = nullptr;  // after the runtime removed its options (null-terminated)
  CudaContext cuda;
  // Ranks get isomalloc slices (and can move): the region is reserved, the layout is fixed
  // (no address randomization) and the heap is ours (not a sanitizer's).
  bool migratable = false;
  // The process's id: a rank's code that runs in another one is in a child it forked.
  pid_t pid = 0;
};
Process& process() {
  static Process p;
  return p;
}

[[noreturn]] void usage_error(const char* fmt, const char* arg) {
  std::fprintf(stderr, "ucharm AMPI: ");
  std::fprintf(stderr, fmt, arg);
  std::fprintf(stderr, "\n");
  std::exit(2);
}

// A child the rank forked (fork, or popen/system's own) is a plain process: its exit ends
// it alone, with stdio flushed; the runtime's exit handlers (the PE's, UCX's, the other
// ranks' program copies') belong to the parent and must not run there.
bool in_forked_child() { return process().pid != 0 && getpid() != process().pid; }
[[noreturn]] void end_forked_child(int code) {
  std::fflush(nullptr);
  _exit(code);
}

// The host's monotonic clock, in seconds: one clock for every process of a host.
double monotonic_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

bool parse_size(std::string_view v, std::size_t& out) {
  std::size_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || n == 0) return false;
  std::string_view suffix(p, static_cast<std::size_t>(v.data() + v.size() - p));
  if (suffix == "k" || suffix == "K") n <<= 10;
  else if (suffix == "m" || suffix == "M") n <<= 20;
  else if (!suffix.empty()) return false;
  out = n;
  return true;
}

bool is_number(const char* s) {
  if (!*s) return false;
  for (; *s; ++s)
    if (*s < '0' || *s > '9') return false;
  return true;
}

// A byte count that may be 0.
bool parse_bytes(std::string_view v, std::size_t& out) {
  if (v == "0") {
    out = 0;
    return true;
  }
  return parse_size(v, out);
}

// Takes AMPI's options out of argv: +vp N (or +vp=N, +vpN), +ampi-stacksize=BYTES,
// +ampi-staging, and Charm++'s spellings: +mapping MAP (initial placement, extensions.cpp),
// +ampiEnableMigrateToPe (AMPI_Migrate_to_pe is always enabled here), +LBDebug N (N > 0:
// +LBDebug, for the core; 0: off). Environment: UCHARM_AMPI_VP, UCHARM_AMPI_STACKSIZE,
// UCHARM_AMPI_STAGING=1.
void parse_options(int& argc, char** argv, Options& o) {
  if (const char* v = std::getenv("UCHARM_AMPI_VP")) {
    std::size_t n;
    if (!parse_size(v, n) || n > (1u << 24)) usage_error("UCHARM_AMPI_VP=%s: give a positive number of ranks", v);
    o.vp = static_cast<int>(n);
  }
  if (const char* v = std::getenv("UCHARM_AMPI_STACKSIZE"))
    if (!parse_size(v, o.stack)) usage_error("UCHARM_AMPI_STACKSIZE=%s: give bytes (suffix k or m allowed)", v);
  if (const char* v = std::getenv("UCHARM_AMPI_STAGING")) o.staging = std::strcmp(v, "0") != 0;
  if (const char* v = std::getenv("UCHARM_AMPI_DIRECT_MIN"))
    if (!parse_bytes(v, o.direct_min)) usage_error("UCHARM_AMPI_DIRECT_MIN=%s: give bytes (suffix k or m allowed; 0: never)", v);
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    std::string_view a(argv[i]);
    const bool vp_glued = a.size() > 3 && a.starts_with("+vp") && a[3] >= '0' && a[3] <= '9';
    if (a == "+vp" || a.starts_with("+vp=") || vp_glued) {
      const char* val = a == "+vp" ? (i + 1 < argc ? argv[++i] : nullptr) : argv[i] + (vp_glued ? 3 : 4);
      if (!val) usage_error("%s needs a number of ranks: +vp N", argv[i]);
      std::size_t n;
      if (!parse_size(val, n) || n > (1u << 24)) usage_error("+vp %s: give a positive number of ranks", val);
      o.vp = static_cast<int>(n);
    } else if (a.starts_with("+ampi-stacksize=") || a.starts_with("+tcharm_stacksize=")) {
      const char* val = std::strchr(argv[i], '=') + 1;
      if (!parse_size(val, o.stack) || o.stack < (64u << 10))
        usage_error("%s: give at least 64k bytes (suffix k or m allowed)", argv[i]);
    } else if (a.starts_with("+ampi-direct-min=")) {
      if (!parse_bytes(argv[i] + 17, o.direct_min))
        usage_error("%s: give bytes (suffix k or m allowed; 0: never)", argv[i]);
    } else if (a.starts_with("+ampi-coll-crowded=")) {
      const std::string_view v = a.substr(19);
      if (v != "0" && v != "1" && v != "auto") usage_error("%s: give 0, 1 or auto", argv[i]);
      o.coll_crowded = v == "auto" ? -1 : v == "1";
    } else if (a == "+ampi-staging" || a == "+ampi_staging") {
      o.staging = true;
    } else if (a == "+mapping" || a.starts_with("+mapping=")) {
      const char* val = a == "+mapping" ? (i + 1 < argc ? argv[++i] : nullptr) : argv[i] + 9;
      if (!val || !*val) usage_error("%s needs a mapping: BLOCK_MAP, RR_MAP, MAPFILE or a file of PE numbers", argv[i]);
      if (const std::string err = set_rank_mapping(val); !err.empty()) usage_error("%s", err.c_str());
    } else if (a == "+ampiEnableMigrateToPe") {
      // Charm++ needs it for AMPI_Migrate_to_pe; here that call always works.
    } else if ((a == "+LBDebug" && i + 1 < argc && is_number(argv[i + 1])) || a.starts_with("+LBDebug=")) {
      // Charm++'s +LBDebug takes a verbosity level; the core's is a flag.
      const char* level = a == "+LBDebug" ? argv[++i] : argv[i] + 9;
      if (!is_number(level)) usage_error("%s: give a verbosity level (a number; 0: off)", argv[i]);
      if (std::strtol(level, nullptr, 10) > 0) argv[kept++] = const_cast<char*>("+LBDebug");
    } else {
      argv[kept++] = argv[i];
    }
  }
  argv[kept] = nullptr;
  argc = kept;
}

}  // namespace

// ---- the main chare: creates the ranks, collects their exit codes -------------------------------
class Main : public ck::MainChare<Main> {
 public:
  explicit Main(const ck::MainArgs&) {
    const Options& o = process().options;
    int n = o.vp > 0 ? o.vp : CkNumPes();
    if (n > CkNumPes() && !process().program->privatized)
      CkAbort("+vp %d puts several MPI ranks in one process, but this program's globals cannot be "
              "privatized (%s): build it with ampicc or ucharm_add_ampi_executable",
              n, process().program->how);
    auto ranks = ck::ArrayProxy<Rank>::create(ck::dims(n), rank_map(n), RankArgs{thisProxy, n});
    ranks.send<&Rank::start>();
  }
  explicit Main(CkMigrateMessage*) {}  // restarted from a checkpoint: nothing to keep
  // Every rank's main returned: the job's exit code is the largest (0 when all returned 0).
  void done(int code) { CkExit(code); }
};

Rank::Rank(RankArgs a) : main_(a.main), world_size_(a.world_size) {
  usesAtSync = true;  // AMPI_Migrate balances at sync points
  comms_ = comm_table_new(thisIndex, world_size_);
  for (char** a = process().argv; *a; ++a) args_.emplace_back(*a);
  for (std::string& s : args_) argv_.push_back(s.data());
  argv_.push_back(nullptr);
  if (getrandom(&jmp_key, sizeof jmp_key, GRND_NONBLOCK) != sizeof jmp_key)  // no entropy yet: still distinct
    jmp_key = (static_cast<std::uint64_t>(std::time(nullptr)) * 0x9e3779b97f4a7c15ull) ^
              reinterpret_cast<std::uintptr_t>(this) ^ (static_cast<std::uint64_t>(thisIndex) << 40);
  route_add(this);  // last: messages that came before it are delivered now
}

Rank::Rank(CkMigrateMessage*) : world_size_(0) {
  usesAtSync = true;
  threads::mark_pe_thread();
  heap::prepare_process();  // a restarted process starts no rank itself
}

Rank::~Rank() {
  std::free(omp_saved);
  // Packed and sent: its thread and slice (with the program's copy) left with the message.
  if (leaving_ && thread_ && slice_) {
    if (image_ && process().program->departed) process().program->departed(process().program->context, image_);
    heap::release_process_state();
    CthMigratableRelease(thread_);
  }
}

void Rank::image_arrived() {
  if (image_ && process().program->arrived) process().program->arrived(process().program->context, image_);
}

void Rank::start() {
  // Let the memory-type component open the CUDA driver, if there is one, before looking.
  (void)CmiGetMemoryType(nullptr);
  process().cuda.find();
  threads::mark_pe_thread();
  heap::prepare_process();
  const std::size_t stack = process().options.stack;
  if (process().migratable) slice_ = CmiIsomallocSlice(thisIndex);
  thread_ = slice_ ? CthCreateMigratable(&Rank::thread_main, nullptr, slice_, stack)
                   : CthCreate(&Rank::thread_main, nullptr, stack);
  CthSetData(thread_, this);
  CthAwaken(thread_);
}

namespace {
// The rank's command line as main gets it: in the rank's own heap (its slice, when it has
// one), so that argv stays valid wherever the rank goes.
char** copy_argv(const std::vector<std::string>& args) {
  auto** argv = static_cast<char**>(std::malloc((args.size() + 1) * sizeof(char*)));
  if (!argv) CkAbort("out of memory copying the command line");
  for (std::size_t i = 0; i < args.size(); ++i) {
    argv[i] = static_cast<char*>(std::malloc(args[i].size() + 1));
    if (!argv[i]) CkAbort("out of memory copying the command line");
    std::memcpy(argv[i], args[i].c_str(), args[i].size() + 1);
  }
  argv[args.size()] = nullptr;
  return argv;
}
}  // namespace

void Rank::thread_main(void*) {
  // The rank object is looked up, never kept across a wait: after a move it is another one.
  Rank* self = static_cast<Rank*>(CthGetData(CthSelf()));
  g_running.rank = self;
  self->load_getopt();  // a fresh getopt state, as a new process has
  self->run_since = CmiWallTimer();
  // A rank starts as a process does: no CUDA context current (not another rank's).
  if (const CudaContext& c = process().cuda; c.set) c.set(nullptr);
  MainFn fn = process().program->main_for(process().program->context, self->thisIndex, self->slice_, &self->image_);
  if (!fn) CkAbort("rank %d: the program's main could not be loaded (see above)", self->thisIndex);
  threads::program_loaded();
  // From here the program's code runs: what it allocates is the rank's.
  heap::g_active = self->slice_;
  char** argv = copy_argv(self->args_);
  // A rank starts with no floating-point exception raised, as a process does: the runtime's
  // own arithmetic on this thread is not the program's (gfortran's STOP reports raised ones).
  std::feclearexcept(FE_ALL_EXCEPT);
  const int code = fn(static_cast<int>(self->args_.size()), argv);
  if (in_forked_child()) end_forked_child(code);  // a child the rank forked returned from main
  heap::g_active = nullptr;
  self = current_rank();
  threads::omp_rank_done(self);  // its OpenMP pool goes; the OS thread's state is fresh for the next rank
  if (self->initialized && !self->finalized) {
    // The others may wait for it forever: end the job, as mpirun does for a process that
    // exits between MPI_Init and MPI_Finalize.
    std::fprintf(stderr,
                 "ucharm AMPI: rank %d returned from main (code %d) without calling MPI_Finalize: ending the job\n",
                 self->thisIndex, code);
    std::fflush(stderr);
    CkExit((code & 0xff) != 0 ? code & 0xff : 1);
  }
  self->finish(code);
  g_running.rank = nullptr;  // the thread ends here
}

void Rank::finish(int code) {
  // Exit statuses are 8 bits: -1 ends the job with 255, as it would a process.
  contribute(code & 0xff, ck::Reducer::max, ck::CkCallback::to<&Main::done>(main_));
}

Running g_running;

void Rank::pup_context(PUP::er& p) {
  // The time the rank has seen when it leaves: where the clock here is behind it (another
  // host, or a restart after a reboot), the offset makes up the difference.
  double seen = monotonic_now() + wtime_offset;
  p | seen;
  p | wtime_offset;
  if (p.isUnpacking())
    if (const double now = monotonic_now(); now + wtime_offset < seen) wtime_offset = seen - now;
  p | jmp_key;
}

// CLOCK_MONOTONIC is one clock on a host: with every process on one host, the ranks' clocks
// are the same clock (no offset arises when a rank moves between them).
bool wtime_is_global() { return CmiNumHosts() == 1; }

void Rank::save_getopt() { getopt_ = Getopt{optind, opterr, optopt, optarg}; }
void Rank::load_getopt() {
  optind = getopt_.ind;
  opterr = getopt_.err;
  optopt = getopt_.opt;
  optarg = getopt_.arg;
}

void outside_rank() {
  CkAbort("an MPI function was called outside an MPI rank's thread: was the program built with ampicc or "
          "ucharm_add_ampi_executable (which start the ranks)?");
}
int world_rank() { return current_rank()->world_rank(); }
int world_size() { return current_rank()->world_size(); }
CommTable& my_comms() { return current_rank()->comms(); }
bool staging_forced() { return process().options.staging; }
bool cuda_loaded() { return process().cuda.get != nullptr; }
std::size_t direct_min() { return process().options.direct_min; }
int coll_crowded_setting() { return process().options.coll_crowded; }
std::size_t rank_stack_size() { return process().options.stack; }
int vp_requested() { return process().options.vp; }

namespace {
// Around a switch away from the calling rank's thread: while others run, no rank is the
// running one; back here, this thread's rank is again, with its CUDA context.
template <class Wait>
void switch_away(Wait wait) {
  Rank* self = g_running.rank;
  g_running.rank = nullptr;
  // The rank's own thread (not a task or a call run for another of its threads) carries
  // its OpenMP state, and is in an MPI call unless it waits to join a thread.
  const bool main = self && CthSelf() == self->thread();
  if (main) {
    self->main_in_mpi = self->outside_mpi == 0;
    threads::omp_switch_out(self);
  }
  if (self) {
    self->save_getopt();
    if (self->measuring && self->run_since >= 0)  // the balancer's measure of the rank
      self->setObjTime(self->getObjTime() + (CmiWallTimer() - self->run_since));
  }
  const CudaContext& c = process().cuda;
  if (!c.get) {
    wait();
  } else {
    void* ctx = nullptr;
    c.get(&ctx);
    wait();
    void* now = nullptr;
    c.get(&now);
    if (now != ctx) c.set(ctx);
  }
  // Looked up again: a rank that moved meanwhile is another object (CthSetData names it).
  if (self) self = static_cast<Rank*>(CthGetData(CthSelf()));
  g_running.rank = self;
  if (main && self) {
    self->main_in_mpi = false;
    threads::omp_switch_in(self);
  }
  if (self) {
    self->load_getopt();
    self->run_since = CmiWallTimer();
  }
}
}  // namespace

void rank_suspend() { switch_away([] { CthSuspend(); }); }
void rank_yield() { switch_away([] { CthYield(); }); }
void rank_poll() {
  if (!CsdScheduleStepInThread()) rank_yield();
}

}  // namespace ampi

using namespace ampi;

namespace ampi {
const char* rank_migration_unavailable() {
#if defined(__SANITIZE_ADDRESS__)
  return "this is an AddressSanitizer build, whose malloc replaces the one that gives each rank its own "
         "heap (isomalloc)";
#else
  if (!CmiIsomallocReady())
    return *CmiIsomallocError() ? CmiIsomallocError() : "no isomalloc region (the program was not started by the AMPI loader)";
  if (!CmiIsomallocCanMigrate()) return CmiIsomallocError();
  return process().migratable ? "" : "isomalloc is not available";
#endif
}
}  // namespace ampi

extern "C" int ucharm_ampi_start(int argc, char** argv, const Program* program) {
  Process& p = process();
  p.program = program;
  p.pid = getpid();
  threads::mark_pe_thread();  // non-SMP: the process's main thread is its PE
#if !defined(__SANITIZE_ADDRESS__)
  p.migratable = CmiIsomallocReady() && CmiIsomallocCanMigrate();
#endif
  parse_options(argc, argv, p.options);
  p.argv = argv;
  return ck::start<Main>(argc, argv);
}

#pragma GCC visibility push(default)
extern "C" {

// exit() from a rank that has called MPI_Finalize ends that rank only, as it would end only
// its own process under mpirun: like a return from main with that code. Anywhere else
// (before MPI_Finalize: the job ends with that code, or 1 for exit(0), as OpenMPI aborts it; outside the
// ranks: the runtime's own exits) it is libc's exit. In a child a rank forked it ends the
// child alone (end_forked_child).
[[noreturn]] void exit(int code) noexcept {
  using Exit = void (*)(int);
  static const Exit libc_exit = reinterpret_cast<Exit>(dlsym(RTLD_NEXT, "exit"));
  if (in_forked_child()) end_forked_child(code);
  heap::g_active = nullptr;  // runtime code from here (the copies' finalizers: loader.cpp)
  if (CthThread t = CthSelf())
    if (auto* r = static_cast<Rank*>(CthGetData(t))) {
      if (r->finalized && !r->exited) {
        r->exited = true;
        threads::omp_rank_done(r);
        r->finish(code);
        g_running.rank = nullptr;
        for (;;) CthSuspend();  // this rank is done; its thread never runs again
      }
      if (r->initialized && !r->finalized && (code & 0xff) == 0) {
        // The others are cut off mid-job: not a success (mpirun fails such a job too).
        std::fprintf(stderr, "ucharm AMPI: rank %d called exit(0) before MPI_Finalize: ending the job with code 1\n",
                     r->world_rank());
        std::fflush(stderr);
        code = 1;
      }
    }
  libc_exit(code);
  __builtin_unreachable();
}

int PMPI_Init(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  Rank* r = current_rank();
  if (r->initialized) return error(MPI_COMM_WORLD, MPI_ERR_OTHER, "MPI_Init", "MPI is already initialized");
  r->initialized = true;
  return MPI_SUCCESS;
}

// Every level is provided as asked (threads.h: another thread's call is run by the PE as
// the thread's rank). SERIALIZED and MULTIPLE need the runtime to see the program's threads
// start (pthread_create, interposed): a probe thread checks that it does (a build whose
// pthread_create is another library's gives MPI_THREAD_FUNNELED and says why).
int PMPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  if (required < MPI_THREAD_SINGLE || required > MPI_THREAD_MULTIPLE)
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Init_thread",
                 "required = %d is not a thread level (MPI_THREAD_SINGLE ... MPI_THREAD_MULTIPLE)", required);
  int rc = PMPI_Init(argc, argv);
  int level = required;
  if (level >= MPI_THREAD_SERIALIZED && !threads::threads_seen()) {
    std::fprintf(stderr,
                 "ucharm AMPI: MPI_Init_thread: %s is not available: threads started by rank %d are not seen by "
                 "the runtime (pthread_create is not ucharm's here); MPI_THREAD_FUNNELED is provided\n",
                 required == MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE" : "MPI_THREAD_SERIALIZED", world_rank());
    level = MPI_THREAD_FUNNELED;
  }
  current_rank()->thread_level = level;
  if (provided) *provided = level;
  return rc;
}

// Also outside a rank's thread (an atexit handler or static destructor at the job's end,
// which MPI allows to ask): MPI has been initialized and finalized by then.
int PMPI_Initialized(int* flag) {
  Rank* r = threads::thread_rank();
  *flag = r ? r->initialized : 1;
  return MPI_SUCCESS;
}

int PMPI_Finalize(void) {
  Rank* r = current_rank();
  if (!r->initialized || r->finalized)
    return error(MPI_COMM_WORLD, MPI_ERR_OTHER, "MPI_Finalize", "MPI is %s",
                 r->finalized ? "already finalized" : "not initialized");
  // First, as MPI_Comm_free of MPI_COMM_SELF would (MPI 3.1 §8.7.1): the delete callbacks
  // of its attributes run, also of keyvals freed before (libraries hang their clean-up here).
  const int del = cm::attrs_delete_all(MPI_COMM_SELF);
  // Collective over the job, as MPI says: no rank leaves (and perhaps exit()s) while
  // another still communicates.
  Comm& world = *comm_get(MPI_COMM_WORLD);
  int rc = coll_barrier(world, coll_tag(world));
  r->finalized = true;
  if (del != MPI_SUCCESS && rc == MPI_SUCCESS)
    rc = error(MPI_COMM_WORLD, del, "MPI_Finalize", "a delete callback of an MPI_COMM_SELF attribute failed (%d)", del);
  return rc;
}

int PMPI_Finalized(int* flag) {
  Rank* r = threads::thread_rank();
  *flag = r ? r->finalized : 1;
  return MPI_SUCCESS;
}

// The job ends with errorcode's low 8 bits (exit statuses have 8), except that a non-zero
// code whose low 8 bits are 0 (256, -256, ...) ends it with 1: an abort never looks like
// success. An abnormal end: no exit handlers run (CmiExitAbnormal).
int PMPI_Abort(MPI_Comm comm, int errorcode) {
  int code = errorcode & 0xff;
  if (code == 0 && errorcode != 0) code = 1;
  std::fprintf(stderr, "MPI_Abort called by rank %d (communicator %d) with error code %d%s\n", world_rank(), comm,
               errorcode, code == (errorcode & 0xff) ? "" : ": ending the job with exit code 1");
  std::fflush(stderr);
  CmiExitAbnormal(code);
}

// Both answer on any thread of a rank, without the PE.
int PMPI_Query_thread(int* provided) {
  Rank* r = threads::thread_rank();
  if (!r) return threads::call_on_pe("MPI_Query_thread", nullptr, nullptr);  // says why, MPI_ERR_OTHER
  if (!provided) return threads::on_pe_thread() ? null_arg(MPI_COMM_WORLD, "MPI_Query_thread", "provided") : MPI_ERR_ARG;
  *provided = std::atomic_ref<int>(r->thread_level).load(std::memory_order_relaxed);
  return MPI_SUCCESS;
}

// The main thread is the one that runs the rank's main (and called MPI_Init_thread).
int PMPI_Is_thread_main(int* flag) {
  Rank* r = threads::thread_rank();
  if (!r) return threads::call_on_pe("MPI_Is_thread_main", nullptr, nullptr);
  if (!flag) return threads::on_pe_thread() ? null_arg(MPI_COMM_WORLD, "MPI_Is_thread_main", "flag") : MPI_ERR_ARG;
  *flag = threads::on_pe_thread() && CthSelf() == r->thread();
  return MPI_SUCCESS;
}

int PMPI_Get_processor_name(char* name, int* resultlen) {
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  gethostname(host, sizeof host - 1);
  std::snprintf(name, MPI_MAX_PROCESSOR_NAME, "%s", host);
  *resultlen = static_cast<int>(std::strlen(name));
  return MPI_SUCCESS;
}

int PMPI_Get_version(int* version, int* subversion) {
  *version = MPI_VERSION;
  *subversion = MPI_SUBVERSION;
  return MPI_SUCCESS;
}

int PMPI_Get_library_version(char* version, int* resultlen) {
  std::snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING, "ucharm AMPI (MPI %d.%d subset)", MPI_VERSION,
                MPI_SUBVERSION);
  *resultlen = static_cast<int>(std::strlen(version));
  return MPI_SUCCESS;
}

// The host's monotonic clock (as MPI libraries use), plus the rank's offset: never going
// back, also across moves (Rank::pup_context).
double PMPI_Wtime(void) {
  const Rank* r = threads::thread_rank();
  return monotonic_now() + (r ? r->wtime_offset : 0.0);
}
double PMPI_Wtick(void) { return 1e-9; }

int PMPI_Pcontrol(const int level, ...) {
  (void)level;  // no profiling library of our own: MPI says this is then a no-op
  return MPI_SUCCESS;
}

int PMPI_Alloc_mem(MPI_Aint size, MPI_Info info, void* baseptr) {
  (void)info;
  void* p = std::malloc(size > 0 ? static_cast<std::size_t>(size) : 1);
  if (!p) return error(MPI_COMM_WORLD, MPI_ERR_NO_MEM, "MPI_Alloc_mem", "cannot allocate %ld bytes", static_cast<long>(size));
  *static_cast<void**>(baseptr) = p;
  return MPI_SUCCESS;
}

int PMPI_Free_mem(void* base) {
  std::free(base);
  return MPI_SUCCESS;
}

}
#pragma GCC visibility pop
