// MPI-3 one-sided communication (RMA): what the sources of rma/ share. Private to rma/.
//
// Active messages: every operation is one Converse message to the PE of the target rank,
// handled there by the runtime (on_rma), not by the target's thread: passive-target
// operations progress while the target rank computes in another thread of its PE or blocks
// in any MPI call. Each PE handles its messages one at a time, so every accumulate is
// atomic per element, and the runtime keeps the messages of a pair of PEs in order: a flush
// is one message behind the operations, answered when they are done. Targets on the
// origin's own PE are handled at once, in the origin's thread (same order).
//   window.cpp  creation (create, allocate, allocate_shared, dynamic + attach), free, the
//               handle directory, names, info, group, attributes, error handlers
//   ops.cpp     Put, Get, Accumulate, Get_accumulate, Fetch_and_op, Compare_and_swap and
//               their request forms; the target's side of each (on_rma)
//   execute.cpp the data work of an operation at the target's memory (store, load, accumulate)
//   mapped.cpp  Put/Get/accumulates by loads and stores into memory this process maps
//   sync.cpp    fence, post/start/complete/wait/test, locks, flush, sync
//
// A rank with an open window cannot move (its window memory and the PE others send to are
// fixed): AMPI_Migrate and AMPI_Migrate_to_pe stop naming the window (rma_check_can_move).
#pragma once

#include "internal.h"
#include "rank.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ampi::rma {

// What every member tells the others at creation (allgathered).
inline constexpr std::size_t kDescMax = 496;  // a region descriptor this long or shorter travels
struct Member {
  std::int32_t pe = 0;         // where its rank runs (fixed while the window is open)
  std::int32_t handle = 0;     // its window's handle in its process (messages name it)
  std::int32_t disp_unit = 1;
  std::int32_t device = 0;     // its memory is CUDA device memory
  std::int64_t size = 0;
  std::uint64_t base = 0;      // for MPI_Win_shared_query (ranks of one process)
  std::uint32_t desc_len = 0;  // its memory registered for one-sided access: the descriptor
  std::int32_t pid = 0;        // Win_allocate memory in a memfd (`memfd` >= 0) of process pid
  std::int32_t memfd = -1;
  char host[40] = {};          // the host's boot id: which members share this machine
  char desc[kDescMax];
};

enum class LockState : std::uint8_t { None, Shared, Exclusive, NoCheck };

// An operation in flight whose answer lands in origin memory (Get, Get_accumulate, ...).
struct Pending {
  void* buf = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Request req = MPI_REQUEST_NULL;  // Rget & co.: completed with the answer
  int target = -1;                     // -1: the slot is free
};

struct Win {
  MPI_Win handle = MPI_WIN_NULL;
  Rank* rank = nullptr;          // the owner (it cannot move while the window is open)
  MPI_Comm comm = MPI_COMM_NULL; // the runtime's own copy of the creation communicator
  int me = 0, n = 0;             // this rank in the window, and the window's size
  std::vector<int> world;        // world rank of each member
  std::vector<Member> members;
  // This rank's memory.
  void* base = nullptr;
  MPI_Aint size = 0;
  int disp_unit = 1;
  int flavor = MPI_WIN_FLAVOR_CREATE;
  int model = MPI_WIN_UNIFIED;
  bool device = false;
  void* owned = nullptr;         // allocated by the window (Win_allocate; shared: rank 0's block)
  struct Region {
    std::uintptr_t lo, hi;
    bool device;
  };
  std::vector<Region> attached;  // dynamic windows
  // Names, info, attributes, error handler.
  std::string name;
  std::vector<std::pair<std::string, std::string>> info;
  std::vector<std::pair<int, void*>> attrs;
  MPI_Errhandler errhandler = MPI_ERRORS_ARE_FATAL;
  // ---- origin side
  std::vector<std::uint32_t> pending;   // answers awaited, by target
  std::uint32_t pending_total = 0;
  std::vector<std::uint8_t> dirty;      // operations sent since the target last confirmed
  std::vector<LockState> locks;         // passive target: what this rank holds, by target
  int locks_held = 0;
  bool lock_all = false;                // MPI_Win_lock_all: shared locks taken on first use
  bool lock_all_nocheck = false;
  bool fence_open = false;              // between fences (not after MPI_MODE_NOSUCCEED)
  bool access = false;                  // Win_start .. Win_complete
  std::vector<int> access_group;        // window ranks
  std::vector<std::uint8_t> in_access;  // by target
  std::vector<std::uint32_t> posts;     // Win_post notices received, not yet used, by target
  std::vector<Pending> slots;
  std::vector<int> free_slots;
  std::vector<char> scratch;            // runs of the target datatype being encoded
  // The direct path (one-sided Converse RMA): this rank's memory registered, the others'
  // attached (nullptr: reached by messages only: same PE, dynamic, shared or nothing to reach).
  CmiRmaRegion* region = nullptr;
  std::vector<CmiRmaRemote*> remotes;
  std::vector<std::uint8_t> direct_dirty; // direct puts since the target last confirmed
  std::vector<std::uint32_t> direct_open; // direct operations not completed yet, by target
  // The mapped path (mapped.cpp): members whose memory this process can load and store
  // (ranks of this process; Win_allocate memory of ranks of this host), by rank; empty or
  // nullptr: none.
  std::vector<char*> mapped;
  std::vector<std::size_t> mapped_len;  // peers' memory this process mapped (munmap at free)
  int memfd = -1;                       // Win_allocate memory shared with this host's processes
  std::size_t memfd_len = 0;
  std::vector<char> answer;             // mapped_update's answers before they are unpacked
  std::size_t direct_min = 0;           // contiguous Put/Get this large go direct (0: never)
  // ---- target side
  bool exposure = false;                // Win_post .. Win_wait / Win_test
  int exposure_size = 0;
  std::uint32_t completes = 0;          // Win_complete notices received
  int excl = -1;                        // the holder of the exclusive lock
  int shared = 0;                       // holders of shared locks
  std::deque<std::pair<int, LockState>> lock_queue;
  CthThread waiter = nullptr;           // the owner's thread waiting in a call of this window
  std::vector<CthThread> more_waiters;  // further threads of the owner waiting at once (MPI_THREAD_MULTIPLE)
  bool ready = false;                   // every member's facts are in (creation is done here)
  std::uint32_t quick_waits = 0;        // waits that were over at once (win_wait)
  std::vector<void*> early;             // messages that came before (handled when ready)
};

// ---- window.cpp ------------------------------------------------------------------------------------
// The window of handle h in this process; nullptr when none.
Win* win_of(MPI_Win h);
// The calling rank's window `h`, or nullptr after reporting MPI_ERR_WIN (*rc set).
Win* my_win(MPI_Win h, const char* fn, int* rc);
// An error of call `fn` on window w: its error handler decides (MPI_ERRORS_ARE_FATAL by default).
int win_error(Win* w, int code, const char* fn, const char* fmt, ...) __attribute__((format(printf, 4, 5)));
// A name for messages: "window 3 (\"name\")".
std::string win_label(const Win& w);

// ---- the wire format of operations (ops.cpp) ---------------------------------------------------
// A run of a target layout: `n` items of predefined type `basic`, `reps` times, `stride`
// bytes apart, from `off` (bytes from the target address).
struct Run {
  std::int64_t off;
  std::uint64_t n;
  std::uint64_t reps;
  std::int64_t stride;
  std::int32_t basic;
  std::int32_t pad;
};
// ---- execute.cpp: the target's data work (also done in place by mapped.cpp) ----
// n items of basic from packed bytes into memory (store) and back (load); `dev`: the
// memory is CUDA device memory (types without gaps only).
void store(char* dst, const char* src, std::size_t n, MPI_Datatype basic, bool dev);
void load(char* dst, const char* src, std::size_t n, MPI_Datatype basic, bool dev);
// Carries out data operation `msg` (Hdr, runs, data) on memory at `at`; an answer (Get,
// Get_accumulate, Compare_and_swap) is written to `out`.
void execute(char* at, bool dev, void* msg, char* out);
// ---- ops.cpp (messages) ----
// Message kinds (Hdr::kind).
// kDone: a direct operation or flush completed here (Converse runs it; `from` names the target).
enum Kind : std::uint8_t {
  kPut, kGet, kAcc, kGetAcc, kCas, kReply, kFlush, kAck, kLock, kGrant, kUnlock, kPost, kComplete, kDone
};
struct Hdr {
  std::uint8_t kind;
  std::uint8_t lock;           // kLock: LockState
  std::uint16_t pad = 0;
  std::int32_t win;            // the receiver's window handle (in its process)
  std::int32_t from;           // the sender's rank in the window
  std::int32_t token;          // the origin's Pending slot (answered operations and their kReply)
  std::int32_t op;             // accumulates
  std::int32_t nruns;          // target layout runs after the header
  std::uint64_t disp;          // target byte offset from the base (dynamic: the address)
  std::uint64_t bytes;         // data bytes after the runs
  std::int32_t type;           // kCas: the element type
  std::int32_t pad2 = 0;
};
// MPI_Rget outside any epoch (AMPI_Iget, iget.cpp): the target's memory as the operation
// finds it when it gets there.
int get_any_time(void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp, int tcount,
                 MPI_Datatype ttype, MPI_Win win, MPI_Request* req, const char* fn);
// A message of `payload` bytes for on_rma, header filled by the caller.
void* msg_alloc(std::size_t payload);
inline Hdr& hdr(void* msg) { return *reinterpret_cast<Hdr*>(CmiMsgPayload(msg)); }
// A data operation's runs and data, after its header.
inline const Run* runs_of(void* msg) { return reinterpret_cast<const Run*>(CmiMsgPayload(msg) + sizeof(Hdr)); }
inline char* data_of(void* msg) {
  return CmiMsgPayload(msg) + sizeof(Hdr) + sizeof(Run) * static_cast<std::size_t>(hdr(msg).nruns);
}
// A kDone message for window w, target t and Pending slot `token` (-1: none); `op`: it
// completes a direct operation (counted in direct_open), else a flush.
void* done_msg(Win& w, int t, int token, bool op = false);
// Handles the messages that came before the window was ready here, in their order.
void replay_early(Win& w);
// Sends a control message (no runs, no data) of `kind` to target `t`'s window.
void send_ctl(Win& w, int t, Kind kind, LockState lock = LockState::None);
// Delivers to window rank t: handled at once when t's rank is on this PE, else sent.
void send_to(Win& w, int t, void* msg, std::size_t payload);
// The thread waiting on w (if any) runs again.
void wake(Win& w);
// The calling rank waits until done() holds, running the scheduler meanwhile. A wait that
// is over at once still lets the PE progress every 16th time: a rank that spins on
// operations to itself (a lock-free list polling its own tail) must not starve the others'
// requests to it.
template <class Done>
void win_wait(Win& w, Done&& done) {
  if (done()) {
    if ((++w.quick_waits & 15) == 0) rank_poll();
    return;
  }
  CthThread self = CthSelf();
  rank_wait([&] {
    if (done()) return true;
    P2p::add_waiter(w.waiter, w.more_waiters, self);
    return false;
  });
  P2p::remove_waiter(w.waiter, w.more_waiters, self);
}

// ---- mapped.cpp -------------------------------------------------------------------------------------
// Win_allocate memory shared by a host's processes ends with a lock word (at a 64-byte
// boundary after the window's bytes): every accumulate applied to that memory, by the
// target's PE or by another process in place, holds it.
inline std::size_t acc_lock_offset(std::int64_t size) { return (static_cast<std::size_t>(size) + 63) / 64 * 64; }
inline std::uint32_t* acc_lock_word(char* base, std::int64_t size) {
  return reinterpret_cast<std::uint32_t*>(base + acc_lock_offset(size));
}
// Holds the lock word (nullptr: nothing) while it lives; spins, yielding the core now and then.
class AccLock {
 public:
  explicit AccLock(std::uint32_t* word);
  ~AccLock();
  AccLock(const AccLock&) = delete;
  AccLock& operator=(const AccLock&) = delete;

 private:
  std::uint32_t* word_;
};
// An accumulate-kind operation (`msg`, built for target t) carried out in place in t's
// mapped memory; the answer unpacked into result (count x type). Takes msg.
void mapped_update(Win& w, int t, void* msg, void* result, int count, MPI_Datatype type);
// Win_allocate's memory: a memfd mapped here (other processes of the host map it too), or
// nullptr (then the heap). Fills me's pid, memfd and host.
void* map_allocate(Win& w, std::size_t size, Member* me);
// After the members' exchange: maps what this process can reach by load and store.
void map_peers(Win& w);
// Win_free: unmaps the peers' memory (before the final barrier) and then its own.
void map_release_peers(Win& w);
void map_release_own(Win& w);
// A Put (`put`) or Get done by loads and stores into target t's mapped memory: complete at
// the target when it returns.
int mapped_op(Win& w, const char* fn, bool put, void* origin, int count, MPI_Datatype t, int target,
              std::uint64_t disp, const Run* runs, int nruns);

// ---- sync.cpp ---------------------------------------------------------------------------------------
// Whether an operation to target t may be issued now (an epoch is open to it); on first use
// of t under MPI_Win_lock_all, takes its shared lock. MPI_SUCCESS or the error's return.
int access_check(Win& w, int t, const char* fn);
// Target side of the synchronization messages.
void on_lock(Win& w, int from, LockState s);
void on_unlock(Win& w, int from);

}  // namespace ampi::rma
