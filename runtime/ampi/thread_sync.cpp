// The program's thread synchronization, seen from a rank's thread on the PE (threads.h).
// A rank runs on the PE's OS thread: where it would block that thread (a mutex another
// thread holds, a condition variable, a thread barrier, a semaphore, a sleep or a yield in
// a spin loop) while the rank's other threads wait in MPI, nothing could run their calls,
// nor the PE's other ranks. Called from the program's code on the PE, once the program has
// started threads, these wait in the runtime instead (the PE runs the calls of the rank's
// threads and the other ranks meanwhile); anywhere else they are glibc's. Other threads
// that release what a rank's thread may wait for (unlock, signal, post, a barrier's last
// arrival) wake the PE (CmiPushForeignWork).
#include "threads.h"

#include "internal.h"
#include "rank.h"

#include <dlfcn.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <new>
#include <string_view>
#include <vector>

namespace ampi::threads {
namespace {

// ---- which code is the program's ------------------------------------------------------------
// The text of the runtime's and the system's libraries: their locks and sleeps are their own
// business. Everything else (the program's copy, its own libraries) is the program.
struct Range {
  std::uintptr_t lo, hi;
};
constexpr int kRangesMax = 64;
Range g_ranges[kRangesMax];
std::atomic<int> g_range_count{0};

int add_ranges(dl_phdr_info* info, std::size_t, void* count) {
  std::string_view name = info->dlpi_name ? info->dlpi_name : "";
  if (const auto slash = name.find_last_of('/'); slash != std::string_view::npos) name = name.substr(slash + 1);
  bool system = name.empty();  // the executable: the loader, which is the runtime's
  for (std::string_view lib : {"libucharm", "libucs", "libucp", "libuct", "libucm", "libpmix", "libevent", "libhwloc",
                               "libstdc++", "libc.so", "libm.so", "libgcc_s", "libgomp", "libomp", "libiomp5",
                               "libcuda", "libnvidia", "ld-linux", "libasan", "libubsan", "libz", "libnuma",
                               "libudev", "libpthread", "librt", "libdl", "libcudart", "libcublas", "libcufft",
                               "libcurand", "libcusparse", "libcusolver", "libnccl", "libnvrtc", "libcupti"})
    if (name.starts_with(lib)) system = true;
  if (!system) return 0;
  int& n = *static_cast<int*>(count);
  for (int i = 0; i < info->dlpi_phnum && n < kRangesMax; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    g_ranges[n++] = {lo, lo + ph.p_memsz};
  }
  return 0;
}

}  // namespace

bool program_code(const void* caller) {
  const int n = g_range_count.load(std::memory_order_acquire);
  if (n == 0) return false;  // not looked yet: glibc's behaviour
  const auto a = reinterpret_cast<std::uintptr_t>(caller);
  for (int i = 0; i < n; ++i)
    if (a >= g_ranges[i].lo && a < g_ranges[i].hi) return false;
  return true;
}

namespace {

// A rank's thread (or a call run for it) on the PE, in the program's code, once the program
// has threads: the waits below apply.
inline Rank* waiting_rank(const void* caller) {
  if (t_kind != Kind::Pe || !heap::g_threads.load(std::memory_order_relaxed)) return nullptr;
  Rank* r = g_running.rank;
  if (!r || !CthSelf() || !program_code(caller)) return nullptr;
  return r;
}

// ---- the PE's waiters ------------------------------------------------------------------------
// Threads of the PE waiting for something another OS thread changes: woken (to look again)
// by notify(), which pushes one work item at most at a time.
struct Waiters {
  std::vector<CthThread> threads;  // the PE's
  std::atomic<bool> any{false};
  std::atomic<bool> queued{false};
  CmiForeignWork work;
};
Waiters g_waiters;

void wake_waiters(CmiForeignWork*) {
  g_waiters.queued.store(false, std::memory_order_seq_cst);
  std::vector<CthThread> all;
  all.swap(g_waiters.threads);
  g_waiters.any.store(false, std::memory_order_seq_cst);
  CthThread self = CthSelf();
  for (CthThread t : all)
    if (t != self) CthAwaken(t);
}

void notify() {
  if (g_waiters.any.load(std::memory_order_seq_cst) && !g_waiters.queued.exchange(true)) {
    g_waiters.work.run = wake_waiters;
    CmiPushForeignWork(&g_waiters.work);
  }
}

// Waits on the PE until `ready()` (which may take what it waits for, as a trylock does).
template <class Ready>
void pe_wait(Ready&& ready) {
  heap::RuntimeScope runtime;
  OutsideMpi outside;
  CthThread self = CthSelf();
  rank_wait([&] {
    if (ready()) return true;
    if (std::find(g_waiters.threads.begin(), g_waiters.threads.end(), self) == g_waiters.threads.end())
      g_waiters.threads.push_back(self);
    g_waiters.any.store(true, std::memory_order_seq_cst);
    return ready();  // again: a change made before `any` was seen set woke nobody
  });
  std::erase(g_waiters.threads, self);
}

// Waits on the PE until `ready()` or the deadline on `clock` (false: the deadline came).
// Polls (runs the scheduler's steps, naps briefly when there is nothing to do): no one
// would wake a suspended thread at the deadline.
template <class Ready>
bool pe_wait_until(clockid_t clock, const timespec& deadline, Ready&& ready) {
  heap::RuntimeScope runtime;
  OutsideMpi outside;
  for (;;) {
    if (ready()) return true;
    timespec now;
    ::clock_gettime(clock, &now);
    if (now.tv_sec > deadline.tv_sec || (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec))
      return false;
    if (!CsdScheduleStepInThread()) {
      rank_yield();
      const timespec nap{0, 50000};
      ::syscall(SYS_nanosleep, &nap, nullptr);
    }
  }
}

timespec after(clockid_t clock, const timespec& d) {
  timespec t;
  ::clock_gettime(clock, &t);
  t.tv_sec += d.tv_sec;
  t.tv_nsec += d.tv_nsec;
  if (t.tv_nsec >= 1000000000L) {
    t.tv_nsec -= 1000000000L;
    ++t.tv_sec;
  }
  return t;
}

template <class Fn>
Fn next(const char* name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));
}

// Condition variables: a waiter on the PE is not in glibc's queue; it looks again after
// every signal or broadcast of any condition variable (a spurious wake-up, which POSIX
// allows).
std::atomic<unsigned> g_signals{0};

// Thread barriers: the program's pthread_barrier_t holds this (every use goes through the
// functions below).
struct Barrier {
  std::atomic<unsigned> generation;
  std::atomic<unsigned> arrived;
  unsigned count;
};
static_assert(sizeof(Barrier) <= sizeof(pthread_barrier_t) && alignof(Barrier) <= alignof(pthread_barrier_t));

}  // namespace

void scan_program_code() {
  if (g_range_count.load(std::memory_order_acquire) > 0) return;
  int n = 0;
  ::dl_iterate_phdr(add_ranges, &n);
  g_range_count.store(n, std::memory_order_release);
}

void notify_pe() { notify(); }

}  // namespace ampi::threads

using namespace ampi;
using namespace ampi::threads;

#pragma GCC visibility push(default)
extern "C" {

int pthread_mutex_lock(pthread_mutex_t* m) {
  using Fn = int (*)(pthread_mutex_t*);
  static const Fn lock = next<Fn>("pthread_mutex_lock");
  static const Fn trylock = next<Fn>("pthread_mutex_trylock");
  if (!waiting_rank(__builtin_return_address(0))) return lock(m);
  // A loop that takes and drops a lock to look at what other threads change (a barrier
  // made of a counter) would never let the PE run: now and then it does.
  thread_local unsigned locks = 0;
  if ((++locks & 15) == 0) {
    heap::RuntimeScope runtime;
    OutsideMpi outside;
    rank_poll();
  }
  int rc = trylock(m);
  if (rc != EBUSY) return rc;
  pe_wait([&] { return (rc = trylock(m)) != EBUSY; });
  return rc;
}

int pthread_mutex_unlock(pthread_mutex_t* m) {
  using Fn = int (*)(pthread_mutex_t*);
  static const Fn unlock = next<Fn>("pthread_mutex_unlock");
  const int rc = unlock(m);
  notify();
  return rc;
}

int pthread_cond_signal(pthread_cond_t* c) {
  using Fn = int (*)(pthread_cond_t*);
  static const Fn signal = next<Fn>("pthread_cond_signal");
  g_signals.fetch_add(1, std::memory_order_seq_cst);
  const int rc = signal(c);
  notify();
  return rc;
}

int pthread_cond_broadcast(pthread_cond_t* c) {
  using Fn = int (*)(pthread_cond_t*);
  static const Fn broadcast = next<Fn>("pthread_cond_broadcast");
  g_signals.fetch_add(1, std::memory_order_seq_cst);
  const int rc = broadcast(c);
  notify();
  return rc;
}

int pthread_cond_wait(pthread_cond_t* c, pthread_mutex_t* m) {
  using Fn = int (*)(pthread_cond_t*, pthread_mutex_t*);
  static const Fn wait = next<Fn>("pthread_cond_wait");
  if (!waiting_rank(__builtin_return_address(0))) return wait(c, m);
  const unsigned seen = g_signals.load(std::memory_order_seq_cst);
  pthread_mutex_unlock(m);
  pe_wait([&] { return g_signals.load(std::memory_order_seq_cst) != seen; });
  using Lock = int (*)(pthread_mutex_t*);
  static const Lock trylock = next<Lock>("pthread_mutex_trylock");
  int rc = trylock(m);
  if (rc == EBUSY) pe_wait([&] { return (rc = trylock(m)) != EBUSY; });
  return rc;
}

int pthread_cond_timedwait(pthread_cond_t* c, pthread_mutex_t* m, const timespec* abstime) {
  using Fn = int (*)(pthread_cond_t*, pthread_mutex_t*, const timespec*);
  static const Fn wait = next<Fn>("pthread_cond_timedwait");
  if (!waiting_rank(__builtin_return_address(0))) return wait(c, m, abstime);
  const unsigned seen = g_signals.load(std::memory_order_seq_cst);
  pthread_mutex_unlock(m);
  // The condition's clock is glibc's secret: CLOCK_REALTIME, the default.
  const bool signalled =
      pe_wait_until(CLOCK_REALTIME, *abstime, [&] { return g_signals.load(std::memory_order_seq_cst) != seen; });
  using Lock = int (*)(pthread_mutex_t*);
  static const Lock trylock = next<Lock>("pthread_mutex_trylock");
  int rc = trylock(m);
  if (rc == EBUSY) pe_wait([&] { return (rc = trylock(m)) != EBUSY; });
  return rc != 0 ? rc : signalled ? 0 : ETIMEDOUT;
}

int pthread_barrier_init(pthread_barrier_t* b, const pthread_barrierattr_t*, unsigned count) {
  if (count == 0) return EINVAL;
  auto* x = new (b) Barrier;
  x->generation.store(0);
  x->arrived.store(0);
  x->count = count;
  return 0;
}

int pthread_barrier_destroy(pthread_barrier_t* b) {
  return reinterpret_cast<Barrier*>(b)->arrived.load() != 0 ? EBUSY : 0;
}

int pthread_barrier_wait(pthread_barrier_t* b) {
  auto* x = reinterpret_cast<Barrier*>(b);
  const unsigned gen = x->generation.load(std::memory_order_acquire);
  if (x->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == x->count) {
    x->arrived.store(0, std::memory_order_relaxed);  // nobody enters the next round before the release
    x->generation.fetch_add(1, std::memory_order_acq_rel);
    ::syscall(SYS_futex, reinterpret_cast<unsigned*>(&x->generation), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
              nullptr, 0);
    notify();
    return PTHREAD_BARRIER_SERIAL_THREAD;
  }
  if (waiting_rank(__builtin_return_address(0))) {
    pe_wait([&] { return x->generation.load(std::memory_order_acquire) != gen; });
    return 0;
  }
  while (x->generation.load(std::memory_order_acquire) == gen)
    ::syscall(SYS_futex, reinterpret_cast<unsigned*>(&x->generation), FUTEX_WAIT_PRIVATE, gen, nullptr, nullptr, 0);
  return 0;
}

int sem_wait(sem_t* s) {
  using Fn = int (*)(sem_t*);
  static const Fn wait = next<Fn>("sem_wait");
  static const Fn trywait = next<Fn>("sem_trywait");
  if (!waiting_rank(__builtin_return_address(0))) return wait(s);
  int rc = 0;
  pe_wait([&] { return (rc = trywait(s)) == 0 || errno != EAGAIN; });
  return rc;
}

int sem_post(sem_t* s) {
  using Fn = int (*)(sem_t*);
  static const Fn post = next<Fn>("sem_post");
  const int rc = post(s);
  notify();
  return rc;
}

// A yield lets the PE run (a program's spin loop: the rank's threads' calls, other ranks).
int sched_yield(void) {
  using Fn = int (*)();
  static const Fn yield = next<Fn>("sched_yield");
  if (!waiting_rank(__builtin_return_address(0))) return yield();
  heap::RuntimeScope runtime;
  OutsideMpi outside;
  rank_poll();
  return 0;
}

// Sleeps: the PE runs meanwhile (polled: no one wakes it at the end).
int nanosleep(const timespec* req, timespec* rem) {
  if (!req || !waiting_rank(__builtin_return_address(0))) return static_cast<int>(::syscall(SYS_nanosleep, req, rem));
  if (req->tv_nsec < 0 || req->tv_nsec >= 1000000000L) {
    errno = EINVAL;
    return -1;
  }
  pe_wait_until(CLOCK_MONOTONIC, after(CLOCK_MONOTONIC, *req), [] { return false; });
  if (rem) *rem = timespec{0, 0};
  return 0;
}

int usleep(useconds_t us) {
  const timespec req{static_cast<time_t>(us / 1000000), static_cast<long>(us % 1000000) * 1000};
  if (!waiting_rank(__builtin_return_address(0))) return static_cast<int>(::syscall(SYS_nanosleep, &req, nullptr));
  pe_wait_until(CLOCK_MONOTONIC, after(CLOCK_MONOTONIC, req), [] { return false; });
  return 0;
}

unsigned sleep(unsigned seconds) {
  const timespec req{static_cast<time_t>(seconds), 0};
  if (!waiting_rank(__builtin_return_address(0))) {
    timespec rem{0, 0};
    if (::syscall(SYS_nanosleep, &req, &rem) != 0) return static_cast<unsigned>(rem.tv_sec);
    return 0;
  }
  pe_wait_until(CLOCK_MONOTONIC, after(CLOCK_MONOTONIC, req), [] { return false; });
  return 0;
}

}  // extern "C"
#pragma GCC visibility pop
