// MPI calls from OS threads of the program (threads.h): the hand-off to the PE, which
// threads belong to which rank (pthread_create/pthread_join, interposed), what keeps a
// rank from moving, and OpenMP (libgomp) beside user-level ranks.
#include "threads.h"

#include "internal.h"
#include "rank.h"

#include <dlfcn.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <unordered_map>

extern "C" void* __tls_get_addr(void*);

namespace ampi::threads {

constinit thread_local Kind t_kind UCHARM_AMPI_HEAP_TLS = Kind::Unknown;

namespace {

thread_local Rank* t_rank = nullptr;  // a Kind::OfRank thread's rank (it cannot move meanwhile)

void futex_wait(std::atomic<int>* w, int expected, const timespec* timeout) {
  ::syscall(SYS_futex, reinterpret_cast<int*>(w), FUTEX_WAIT_PRIVATE, expected, timeout, nullptr, 0);
}
void futex_wake(std::atomic<int>* w) {
  ::syscall(SYS_futex, reinterpret_cast<int*>(w), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

// A waiter registered by a thread of the PE: woken from the scheduler (never resumed there
// directly), nothing to do when it is the thread running now.
void wake(CthThread w) {
  if (w && w != CthSelf()) CthAwaken(w);
}

const char* level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    default: return "MPI_THREAD_MULTIPLE";
  }
}

// ---- the hand-off ----------------------------------------------------------------------------
// On the calling thread's stack while it waits: no allocation per call.
struct Call : CmiForeignWork {
  void (*fn)(void*) = nullptr;
  void* ctx = nullptr;
  Rank* rank = nullptr;
  const char* name = nullptr;
  int rc = MPI_SUCCESS;
  std::atomic<int> done{0};
};

// The call runs in a user-level thread of the PE as the rank (a blocking call suspends it,
// and the PE runs the rank's own thread and the other ranks meanwhile).
void proxy_main(void* p) {
  auto* c = static_cast<Call*>(p);
  Rank* r = c->rank;
  g_running.rank = r;
  r->load_getopt();
  const int level = r->thread_level;
  if (!r->initialized || r->finalized) {
    c->rc = MPI_ERR_OTHER;
    std::fprintf(stderr, "ucharm AMPI: %s was called by a thread of rank %d %s\n", c->name, r->world_rank(),
                 r->finalized ? "after MPI_Finalize" : "before MPI_Init_thread");
  } else if (level < MPI_THREAD_SERIALIZED) {
    c->rc = error(MPI_COMM_WORLD, MPI_ERR_OTHER, c->name,
                  "called by a thread other than rank %d's main thread, but the rank's thread level is %s: "
                  "ask MPI_Init_thread for MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE",
                  r->world_rank(), level_name(level));
  } else if (level == MPI_THREAD_SERIALIZED && (r->foreign_calls > 1 || r->main_in_mpi)) {
    c->rc = error(MPI_COMM_WORLD, MPI_ERR_OTHER, c->name,
                  "two threads of rank %d are in MPI at once (%s), which MPI_THREAD_SERIALIZED forbids: "
                  "ask MPI_Init_thread for MPI_THREAD_MULTIPLE",
                  r->world_rank(),
                  r->main_in_mpi ? "its main thread waits in an MPI call" : "another of its threads' calls runs");
  } else {
    c->fn(c->ctx);
  }
  r = static_cast<Rank*>(CthGetData(CthSelf()));
  --r->foreign_calls;
  if (r->foreign_calls == 0) wake(std::exchange(r->calls_waiter, nullptr));
  g_running.rank = nullptr;
  c->done.store(1, std::memory_order_release);
  futex_wake(&c->done);  // c may be gone once done is seen: only its address is used
}

void run_call(CmiForeignWork* w) {
  auto* c = static_cast<Call*>(w);
  ++c->rank->foreign_calls;
  CthThread t = CthCreate(proxy_main, c, rank_stack_size());
  CthSetData(t, c->rank);
  CthAwaken(t);
}

// ---- threads the ranks start ---------------------------------------------------------------
// One per thread started from a rank: found by pthread_join (by its pthread_t), told by the
// thread when its start routine is over; the PE then counts it out (run on the PE).
struct Record {
  CmiForeignWork work;
  Rank* rank = nullptr;
  bool omp = false;        // started by the OpenMP runtime (its pool), not by the program
  bool counted_out = false;  // the PE has seen it end (the PE's field)
};
std::mutex g_records_lock;
std::unordered_map<pthread_t, Record*> g_records;

void thread_ended(CmiForeignWork* w) {
  auto* rec = reinterpret_cast<Record*>(w);  // work is the first member
  Rank* r = rec->rank;
  rec->counted_out = true;
  --(rec->omp ? r->omp_threads : r->program_threads);
  wake(std::exchange(r->join_waiter, nullptr));
  notify_pe();
}

struct Start {
  void* (*fn)(void*);
  void* arg;
  Record* rec;
};

// Tells the PE at the end of the start routine, also through pthread_exit or cancellation
// (glibc unwinds the thread's stack then).
struct EndGuard {
  Record* rec;
  ~EndGuard() {
    if (rec) CmiPushForeignWork(&rec->work);
  }
};

void* thread_start(void* p) {
  const Start s = *static_cast<Start*>(p);
  std::free(p);
  if (s.rec) {
    t_kind = Kind::OfRank;
    t_rank = s.rec->rank;
  }
  EndGuard guard{s.rec};
  return s.fn(s.arg);
}

// ---- OpenMP (libgomp) ------------------------------------------------------------------------
// libgomp keeps each OS thread's OpenMP state (its team, its thread pool, its control
// variables) in one TLS block. The ranks of a PE share its OS thread: each gets its own
// copy of that block, loaded while its thread runs, so that two ranks' parallel regions
// never share a team or pool, also when one waits in MPI inside its region.
struct Omp {
  bool looked = false;
  std::size_t modid = 0;  // libgomp's TLS module (0: libgomp is not loaded)
  std::size_t size = 0;
  const unsigned char* image = nullptr;  // its initial TLS image
  std::size_t image_size = 0;
  int (*pause_all)(int) = nullptr;  // omp_pause_resource_all
  int (*level)() = nullptr;         // omp_get_level
  int (*thread_num)() = nullptr;
  int (*num_threads)() = nullptr;
  void* handle = nullptr;
};
Omp g_omp;

int find_gomp(dl_phdr_info* info, std::size_t, void*) {
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  const char* base = std::strrchr(name, '/');
  base = base ? base + 1 : name;
  if (std::strncmp(base, "libgomp.so", 10) != 0) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_TLS) continue;
    g_omp.modid = info->dlpi_tls_modid;
    g_omp.size = ph.p_memsz;
    g_omp.image = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    g_omp.image_size = ph.p_filesz;
  }
  return 1;
}

void look_for_omp() {
  if (g_omp.looked) return;
  g_omp.looked = true;
  heap::RuntimeScope runtime;
  heap::find_process_code();
  ::dl_iterate_phdr(find_gomp, nullptr);
  if (!g_omp.modid) return;
  g_omp.handle = ::dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!g_omp.handle) {
    g_omp.modid = 0;
    return;
  }
  g_omp.pause_all = reinterpret_cast<int (*)(int)>(::dlsym(g_omp.handle, "omp_pause_resource_all"));
  g_omp.level = reinterpret_cast<int (*)()>(::dlsym(g_omp.handle, "omp_get_level"));
  g_omp.thread_num = reinterpret_cast<int (*)()>(::dlsym(g_omp.handle, "omp_get_thread_num"));
  g_omp.num_threads = reinterpret_cast<int (*)()>(::dlsym(g_omp.handle, "omp_get_num_threads"));
}

unsigned char* omp_block() {
  struct {
    unsigned long modid, offset;
  } index{g_omp.modid, 0};
  return static_cast<unsigned char*>(__tls_get_addr(&index));
}

void omp_reset_block(unsigned char* b) {
  std::memcpy(b, g_omp.image, g_omp.image_size);
  std::memset(b + g_omp.image_size, 0, g_omp.size - g_omp.image_size);
}

void* real_gomp(const char* name) {
  look_for_omp();
  void* f = g_omp.handle ? ::dlsym(g_omp.handle, name) : nullptr;
  if (!f) {
    std::fprintf(stderr, "ucharm AMPI: %s: libgomp's function was not found\n", name);
    std::abort();
  }
  return f;
}

// A parallel region started by a rank's thread on the PE: its share of the work done, the
// master waits for the team's other threads in the runtime (their MPI calls are run by
// this PE meanwhile, and so are the other ranks) before libgomp's closing barrier, where
// it would block the PE's OS thread.
struct Region {
  CmiForeignWork work;  // first: pushed by the last thread done, it wakes the master
  void (*fn)(void*) = nullptr;
  void* data = nullptr;
  std::atomic<int> finished{0};  // threads other than the master that are done
  int others = -1;               // the team's size less one (known once the master runs)
  bool all_done = false;         // the PE ran `work`: the region may end (the PE's field)
  CthThread waiter = nullptr;
};

void region_done(CmiForeignWork* w) {
  auto* reg = reinterpret_cast<Region*>(w);
  reg->all_done = true;
  wake(std::exchange(reg->waiter, nullptr));
}

void region_body(void* p) {
  auto* reg = static_cast<Region*>(p);
  if (on_pe_thread() && g_omp.thread_num() == 0) {
    reg->others = g_omp.num_threads() - 1;
    reg->fn(reg->data);
    CthThread self = CthSelf();
    // Until the PE has run the last thread's work (not merely seen the count: the work is
    // in the region, which ends with this frame). Runtime code: glibc's heap meanwhile.
    heap::RuntimeScope runtime;
    OutsideMpi outside;
    rank_wait([&] {
      if (reg->others == 0 || reg->all_done) return true;
      reg->waiter = self;
      return false;
    });
    reg->waiter = nullptr;
    return;
  }
  reg->fn(reg->data);
  // The last one wakes the master (only it can push: the work is pushed once).
  if (reg->finished.fetch_add(1, std::memory_order_acq_rel) + 1 == g_omp.num_threads() - 1)
    CmiPushForeignWork(&reg->work);
}

// Runs `start(body, &region)` for a region a rank's thread starts on the PE; anything else
// goes straight to libgomp.
template <class Start>
void parallel(void (*fn)(void*), void* data, Start start) {
  Rank* r = on_pe_thread() ? g_running.rank : nullptr;
  if (!r || CthSelf() != r->thread()) return start(fn, data);
  look_for_omp();
  Region reg;
  reg.fn = fn;
  reg.data = data;
  reg.work.run = region_done;
  ++r->omp_regions;
  start(region_body, &reg);
  r = static_cast<Rank*>(CthGetData(CthSelf()));
  --r->omp_regions;
}

std::atomic<int> g_creates{0};  // calls of the pthread_create below (threads_seen)

void* probe_thread(void*) { return nullptr; }

}  // namespace

void mark_pe_thread() { t_kind = Kind::Pe; }

// The rank is looked up again at the end (the object of a rank that moved is another).
OutsideMpi::OutsideMpi() {
  Rank* r = t_kind == Kind::Pe ? g_running.rank : nullptr;
  main_ = r && CthSelf() == r->thread();
  if (main_) ++r->outside_mpi;
}
OutsideMpi::~OutsideMpi() {
  if (main_) --static_cast<Rank*>(CthGetData(CthSelf()))->outside_mpi;
}

bool threads_seen() {
  static int seen = -1;
  if (seen >= 0) return seen != 0;
  using Create = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  using Join = int (*)(pthread_t, void**);
  heap::RuntimeScope runtime;
  // The functions the program's own calls reach (a sanitizer's interceptors come first).
  const auto create = reinterpret_cast<Create>(::dlsym(RTLD_DEFAULT, "pthread_create"));
  const auto join = reinterpret_cast<Join>(::dlsym(RTLD_DEFAULT, "pthread_join"));
  const int before = g_creates.load();
  pthread_t t;
  if (!create || !join || create(&t, nullptr, probe_thread, nullptr) != 0) {
    seen = 0;
    return false;
  }
  join(t, nullptr);
  seen = g_creates.load() > before ? 1 : 0;
  return seen != 0;
}


Rank* thread_rank() {
  if (t_kind == Kind::Pe) return g_running.rank;
  return t_kind == Kind::OfRank ? t_rank : nullptr;
}

int call_on_pe(const char* name, void (*fn)(void*), void* ctx) {
  Rank* r = t_kind == Kind::OfRank ? t_rank : nullptr;
  if (!r) {
    std::fprintf(stderr,
                 "ucharm AMPI: %s was called from a thread that belongs to no MPI rank (only a rank's own thread "
                 "and the threads it starts may call MPI): MPI_ERR_OTHER\n",
                 name);
    std::fflush(stderr);
    return MPI_ERR_OTHER;
  }
  Call c;
  c.run = run_call;
  c.fn = fn;
  c.ctx = ctx;
  c.rank = r;
  c.name = name;
  CmiPushForeignWork(&c);
  bool told = false;
  while (c.done.load(std::memory_order_acquire) == 0) {
    const timespec limit{10, 0};
    futex_wait(&c.done, 0, &limit);
    if (!told && c.done.load(std::memory_order_acquire) == 0 && errno == ETIMEDOUT) {
      told = true;  // said once: a long wait can be legitimate (a receive nobody sends yet)
      std::fprintf(stderr,
                   "ucharm AMPI: a thread of rank %d has waited 10 s in %s; if the PE does not run it, the rank's "
                   "main thread holds the PE's OS thread outside MPI (an OpenMP barrier, critical section or lock, "
                   "a mutex or condition variable) while this thread is in MPI\n",
                   r->world_rank(), name);
      std::fflush(stderr);
    }
  }
  return c.rc;
}

const char* move_obstacle(Rank* r, char* buf, std::size_t size) {
  if (r->program_threads > 0)
    std::snprintf(buf, size,
                  "rank %d has %d thread(s) it started still running (a running thread keeps using the rank's memory "
                  "in this process): join them before the rank moves",
                  r->world_rank(), r->program_threads.load());
  else if (r->omp_regions > 0)
    std::snprintf(buf, size, "rank %d is inside an OpenMP parallel region: move it outside any region",
                  r->world_rank());
  else if (r->foreign_calls > 0)
    std::snprintf(buf, size, "an MPI call of another thread of rank %d is in progress", r->world_rank());
  else
    return "";
  return buf;
}

void before_move(Rank* r) {
  look_for_omp();
  if (r->omp_threads == 0 || !g_omp.pause_all) return;
  // The rank's pool goes (its threads end); libgomp makes a new one where the rank lands.
  {
    heap::RuntimeScope runtime;
    g_omp.pause_all(2 /* omp_pause_hard */);
  }
  CthThread self = CthSelf();
  rank_wait([&] {
    Rank* now = static_cast<Rank*>(CthGetData(self));
    if (now->omp_threads == 0) return true;
    now->join_waiter = self;
    return false;
  });
  r = static_cast<Rank*>(CthGetData(self));
  std::free(r->omp_saved);
  r->omp_saved = nullptr;
}

void omp_switch_out(Rank* r) {
  if (!g_omp.looked) look_for_omp();
  if (!g_omp.modid) return;
  unsigned char* b = omp_block();
  if (!r->omp_saved) {
    r->omp_saved = std::malloc(g_omp.size);  // glibc's heap: runtime code
    if (!r->omp_saved) CkAbort("out of memory saving rank %d's OpenMP state", r->world_rank());
  }
  std::memcpy(r->omp_saved, b, g_omp.size);
  omp_reset_block(b);
}

void omp_switch_in(Rank* r) {
  if (!g_omp.modid || !r->omp_saved) return;
  std::memcpy(omp_block(), r->omp_saved, g_omp.size);
}

void program_loaded() {
  look_for_omp();
  scan_program_code();
}

void omp_rank_done(Rank* r) {
  if (!g_omp.looked) look_for_omp();
  if (g_omp.pause_all && r->omp_threads > 0) {
    heap::RuntimeScope runtime;
    g_omp.pause_all(2 /* omp_pause_hard */);
  }
  if (g_omp.modid) omp_reset_block(omp_block());
  std::free(r->omp_saved);
  r->omp_saved = nullptr;
}

}  // namespace ampi::threads

using namespace ampi;
using namespace ampi::threads;

#pragma GCC visibility push(default)
extern "C" {

// Which rank a new thread belongs to: the running rank when a rank's code starts it on the
// PE (the runtime's own threads excepted), the starting thread's rank when a thread of a
// rank starts it. The thread is counted until the PE sees it end (no move meanwhile).
int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg) {
  using Fn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  heap::RuntimeScope runtime;  // a thread's own records are the process's
  static const Fn next = reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, "pthread_create"));
  if (!next) return EAGAIN;
  g_creates.fetch_add(1, std::memory_order_relaxed);
  const void* caller = __builtin_return_address(0);
  heap::note_thread_start(runtime.saved(), caller);
  // Threads that libraries start for themselves (the CUDA runtime's, say) are not the rank's:
  // they would keep it from moving for ever and never call MPI.
  const bool omp = heap::is_process_code(caller);
  Rank* owner = nullptr;
  if (t_kind == Kind::Pe && g_running.rank && !heap::runtime_thread(caller)) owner = g_running.rank;
  else if (t_kind == Kind::OfRank && !heap::runtime_thread(caller)) owner = t_rank;
  if (!owner) return next(thread, attr, start, arg);
  auto* rec = new Record;
  rec->work.run = thread_ended;
  rec->rank = owner;
  rec->omp = omp;
  auto* s = static_cast<Start*>(std::malloc(sizeof(Start)));
  if (!s) {
    delete rec;
    return EAGAIN;
  }
  *s = Start{start, arg, rec};
  ++(rec->omp ? owner->omp_threads : owner->program_threads);
  const int rc = next(thread, attr, thread_start, s);
  if (rc != 0) {
    --(rec->omp ? owner->omp_threads : owner->program_threads);
    std::free(s);
    delete rec;
    return rc;
  }
  std::lock_guard lock(g_records_lock);
  g_records[*thread] = rec;
  return 0;
}

// A rank's thread joining a thread it started waits in the runtime (the PE runs the
// joined thread's MPI calls and the other ranks meanwhile), then joins.
int pthread_join(pthread_t thread, void** ret) {
  using Fn = int (*)(pthread_t, void**);
  static const Fn next = reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, "pthread_join"));
  if (!next) return EINVAL;
  Rank* r = t_kind == Kind::Pe ? g_running.rank : nullptr;
  if (!r || heap::is_process_code(__builtin_return_address(0))) return next(thread, ret);
  Record* rec = nullptr;
  {
    std::lock_guard lock(g_records_lock);
    if (auto it = g_records.find(thread); it != g_records.end()) rec = it->second;
  }
  if (!rec) return next(thread, ret);
  heap::RuntimeScope runtime;  // the wait runs the scheduler: runtime code
  CthThread self = CthSelf();
  OutsideMpi outside;
  rank_wait([&] {
    if (rec->counted_out) return true;
    static_cast<Rank*>(CthGetData(self))->join_waiter = self;
    return false;
  });
  r = static_cast<Rank*>(CthGetData(self));
  r->join_waiter = nullptr;
  const int rc = next(thread, ret);
  {
    std::lock_guard lock(g_records_lock);
    if (auto it = g_records.find(thread); it != g_records.end() && it->second == rec) g_records.erase(it);
  }
  delete rec;
  return rc;
}

// libgomp's entry points for a parallel region (GCC's code calls these): regions a rank's
// thread starts go through `parallel` above.
void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags) {
  using Fn = void (*)(void (*)(void*), void*, unsigned, unsigned);
  static const Fn real = reinterpret_cast<Fn>(real_gomp("GOMP_parallel"));
  parallel(fn, data, [&](void (*f)(void*), void* d) { real(f, d, num_threads, flags); });
}

void GOMP_parallel_sections(void (*fn)(void*), void* data, unsigned num_threads, unsigned count, unsigned flags) {
  using Fn = void (*)(void (*)(void*), void*, unsigned, unsigned, unsigned);
  static const Fn real = reinterpret_cast<Fn>(real_gomp("GOMP_parallel_sections"));
  parallel(fn, data, [&](void (*f)(void*), void* d) { real(f, d, num_threads, count, flags); });
}

#define UCHARM_GOMP_LOOP(NAME)                                                                        \
  void NAME(void (*fn)(void*), void* data, unsigned num_threads, long start, long end, long incr,     \
            long chunk, unsigned flags) {                                                             \
    using Fn = void (*)(void (*)(void*), void*, unsigned, long, long, long, long, unsigned);          \
    static const Fn real = reinterpret_cast<Fn>(real_gomp(#NAME));                                   \
    parallel(fn, data, [&](void (*f)(void*), void* d) { real(f, d, num_threads, start, end, incr, chunk, flags); }); \
  }
UCHARM_GOMP_LOOP(GOMP_parallel_loop_static)
UCHARM_GOMP_LOOP(GOMP_parallel_loop_dynamic)
UCHARM_GOMP_LOOP(GOMP_parallel_loop_guided)
UCHARM_GOMP_LOOP(GOMP_parallel_loop_nonmonotonic_dynamic)
UCHARM_GOMP_LOOP(GOMP_parallel_loop_nonmonotonic_guided)
#undef UCHARM_GOMP_LOOP

#define UCHARM_GOMP_LOOP_RUNTIME(NAME)                                                                \
  void NAME(void (*fn)(void*), void* data, unsigned num_threads, long start, long end, long incr,     \
            unsigned flags) {                                                                         \
    using Fn = void (*)(void (*)(void*), void*, unsigned, long, long, long, unsigned);                \
    static const Fn real = reinterpret_cast<Fn>(real_gomp(#NAME));                                   \
    parallel(fn, data, [&](void (*f)(void*), void* d) { real(f, d, num_threads, start, end, incr, flags); }); \
  }
UCHARM_GOMP_LOOP_RUNTIME(GOMP_parallel_loop_runtime)
UCHARM_GOMP_LOOP_RUNTIME(GOMP_parallel_loop_nonmonotonic_runtime)
UCHARM_GOMP_LOOP_RUNTIME(GOMP_parallel_loop_maybe_nonmonotonic_runtime)
#undef UCHARM_GOMP_LOOP_RUNTIME

}  // extern "C"
#pragma GCC visibility pop
