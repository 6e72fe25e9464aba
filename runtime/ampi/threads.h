// OS threads of the program inside a rank (MPI_THREAD_SERIALIZED / MPI_THREAD_MULTIPLE):
// pthreads and OpenMP threads a rank starts may call MPI. The PE's OS thread runs the ranks
// (user-level threads) and owns all MPI state; another OS thread never touches it: its call
// is handed to the PE (CmiPushForeignWork), which runs it in a user-level thread of its own
// as the calling thread's rank, while the calling thread sleeps on a futex. Private to
// runtime/ampi; threads.cpp.
#pragma once

#include "heap.h"

#include <cstdint>

namespace ampi {
class Rank;
}

namespace ampi::threads {

// What the calling OS thread is to AMPI. Zero (Unknown) in every thread until set: the
// PE's thread marks itself at start-up, a thread a rank starts is marked in it.
enum class Kind : std::uint8_t { Unknown = 0, Pe = 1, OfRank = 2 };
// constinit: no initialization function, so the check below is one load.
extern constinit thread_local Kind t_kind UCHARM_AMPI_HEAP_TLS;

// The check every generated PMPI_X makes first: one thread-local load and compare.
inline bool on_pe_thread() { return t_kind == Kind::Pe; }
void mark_pe_thread();  // the calling thread is its process's PE (before any rank runs)

// The rank the calling OS thread belongs to: the running rank on the PE's thread, the
// rank that started it (directly or through its threads) elsewhere; nullptr for none.
Rank* thread_rank();

// From a thread that is not the PE's: runs `fn(ctx)` on the PE as the calling thread's rank
// and returns when it has run (MPI_SUCCESS), or returns an MPI error class without running
// it (the thread belongs to no rank, or the rank's thread level does not allow it), having
// printed why. `name` is the MPI function, for messages.
int call_on_pe(const char* name, void (*fn)(void*), void* ctx);
template <class F>
int forward(const char* name, F& body) {
  return call_on_pe(name, [](void* p) { (*static_cast<F*>(p))(); }, &body);
}

// While the running rank's thread waits for the program (a join, a lock, the end of a
// parallel region), not in an MPI call: MPI_THREAD_SERIALIZED lets its other threads call.
class OutsideMpi {
 public:
  OutsideMpi();
  ~OutsideMpi();
  OutsideMpi(const OutsideMpi&) = delete;
  OutsideMpi& operator=(const OutsideMpi&) = delete;

 private:
  bool main_ = false;  // the rank's own thread (the one MPI_THREAD_SERIALIZED looks at)
};

// Whether this process sees the threads a rank starts (its pthread_create is the runtime's):
// what MPI_THREAD_SERIALIZED and MULTIPLE need. Probed once, with a thread.
bool threads_seen();

// Why `r` cannot move now because of its threads ("" when it can): program threads still
// running, an OpenMP region active, a call of one of its threads in flight. `fn` names
// the calling function in the message; `buf` holds it.
const char* move_obstacle(Rank* r, char* buf, std::size_t size);
// Before a rank that may move leaves: its idle OpenMP threads are let go (their pool is
// the rank's and belongs to this process).
void before_move(Rank* r);

// OpenMP (libgomp) state of the PE's OS thread, one per rank (threads.cpp): saved when a
// rank's thread suspends and loaded when it resumes, so that ranks sharing the OS thread
// each have their own team and thread pool.
void omp_switch_out(Rank* r);
void omp_switch_in(Rank* r);
void omp_rank_done(Rank* r);
// The rank's copy of the program (and so its libraries) is loaded: the OpenMP runtime, if
// any, is looked for before the program's code runs.
void program_loaded();

// thread_sync.cpp: the program's mutexes, condition variables, thread barriers, semaphores,
// yields and sleeps wait in the runtime when a rank's thread on the PE would block it.
void scan_program_code();  // which code is the runtime's and the system's (once, when loaded)
void notify_pe();          // something a waiter on the PE may wait for changed (any thread)
// `caller` is the program's code (its copy, its own libraries), not the runtime's or a
// system library's (false until scan_program_code ran).
bool program_code(const void* caller);  // the rank's main returned: its pool is let go

}  // namespace ampi::threads
