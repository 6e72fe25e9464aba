// RMA synchronization: fence, post/start/complete/wait/test, locks, flush, sync.
//
// Completion: the messages of a pair of PEs arrive in order, so an operation is done at its
// target once a later message from the same origin has been handled there. A flush sends
// one kFlush to each target written since its last confirmation and waits for the kAcks
// (and for every answer still due: Get & co.). Targets on the origin's own PE were handled
// when issued: nothing to wait for. Fence = flush of all + barrier. Locks: each target keeps
// a queue of requests (first come, first granted while compatible); MPI_Win_lock waits for
// the grant, unlock waits for the kAck that follows the target's handling of every earlier
// operation. MPI_Win_lock_all takes its shared locks lazily, at the first operation to each
// target (its own one at once, for local loads and stores).
#include "rma/rma.h"
#include "comm/comms.h"

#include <atomic>

namespace ampi::rma {

namespace {

bool grantable(const Win& w, LockState s) {
  return w.excl < 0 && (s == LockState::Shared || w.shared == 0);
}
void take(Win& w, int from, LockState s) {
  if (s == LockState::Exclusive) w.excl = from;
  else ++w.shared;
  send_ctl(w, from, kGrant);
}

// Sends a kFlush to t if operations went there since it last confirmed (not on this PE), and
// flushes the direct puts to it.
void request_flush(Win& w, int t) {
  const auto i = static_cast<std::size_t>(t);
  if (w.direct_dirty[i]) {
    w.direct_dirty[i] = 0;
    ++w.pending[i];
    ++w.pending_total;
    CmiRmaFlush(w.members[i].pe, done_msg(w, t, -1));
  }
  if (!w.dirty[i]) return;
  w.dirty[i] = 0;
  if (w.members[i].pe == CmiMyPe()) return;  // handled when issued
  ++w.pending[i];
  ++w.pending_total;
  send_ctl(w, t, kFlush);
}

void wait_target(Win& w, int t) {
  win_wait(w, [&w, t] { return w.pending[static_cast<std::size_t>(t)] == 0; });
}
void wait_all(Win& w) {
  win_wait(w, [&w] { return w.pending_total == 0; });
}

// Acquires lock `s` on target t: one request, waits for the grant.
void acquire(Win& w, int t, LockState s) {
  ++w.pending[static_cast<std::size_t>(t)];
  ++w.pending_total;
  send_ctl(w, t, kLock, s);
  wait_target(w, t);
  w.locks[static_cast<std::size_t>(t)] = s;
}

// Direct operations to t are over and their puts done at t (they do not travel with the
// messages: a lock must not pass on while a direct Get still reads).
void settle_direct(Win& w, int t) {
  const auto i = static_cast<std::size_t>(t);
  win_wait(w, [&w, i] { return w.direct_open[i] == 0; });
  if (!w.direct_dirty[i]) return;
  w.direct_dirty[i] = 0;
  ++w.pending[i];
  ++w.pending_total;
  CmiRmaFlush(w.members[i].pe, done_msg(w, t, -1));
  wait_target(w, t);
}

// Releases the lock this rank holds on t (sent behind its operations) and waits for the kAck.
void release(Win& w, int t) {
  const auto i = static_cast<std::size_t>(t);
  settle_direct(w, t);
  if (w.locks[i] == LockState::NoCheck) {
    request_flush(w, t);
  } else {
    w.dirty[i] = 0;
    ++w.pending[i];
    ++w.pending_total;
    send_ctl(w, t, kUnlock);
  }
  w.locks[i] = LockState::None;
}

int check_target(Win* w, const char* fn, int rank) {
  if (rank < 0 || rank >= w->n)
    return win_error(w, MPI_ERR_RANK, fn, "rank %d is not in the window (size %d)", rank, w->n);
  return MPI_SUCCESS;
}

// The window ranks of `group`'s members; MPI_ERR_GROUP / MPI_ERR_RANK if it is none or names a
// rank outside the window.
int group_ranks(Win* w, const char* fn, MPI_Group group, std::vector<int>* out) {
  cm::Group* g = cm::group_get(group);
  if (!g) return win_error(w, MPI_ERR_GROUP, fn, "invalid group %d", group);
  out->clear();
  for (int world : g->members) {
    auto it = std::find(w->world.begin(), w->world.end(), world);
    if (it == w->world.end())
      return win_error(w, MPI_ERR_RANK, fn, "world rank %d of the group is not in the window", world);
    out->push_back(static_cast<int>(it - w->world.begin()));
  }
  return MPI_SUCCESS;
}

}  // namespace

int access_check(Win& w, int t, const char* fn) {
  const auto i = static_cast<std::size_t>(t);
  if (w.locks[i] != LockState::None || w.fence_open || (w.access && w.in_access[i])) return MPI_SUCCESS;
  if (w.lock_all) {
    if (w.lock_all_nocheck) w.locks[i] = LockState::NoCheck;
    else acquire(w, t, LockState::Shared);
    return MPI_SUCCESS;
  }
  return win_error(&w, MPI_ERR_RMA_SYNC, fn,
                   "no RMA epoch is open to target rank %d (MPI_Win_fence, MPI_Win_start, MPI_Win_lock or "
                   "MPI_Win_lock_all opens one)",
                   t);
}

void on_lock(Win& w, int from, LockState s) {
  if (w.lock_queue.empty() && grantable(w, s)) take(w, from, s);
  else w.lock_queue.emplace_back(from, s);
}

void on_unlock(Win& w, int from) {
  if (w.excl == from) w.excl = -1;
  else if (w.shared > 0) --w.shared;
  send_ctl(w, from, kAck);
  while (!w.lock_queue.empty() && grantable(w, w.lock_queue.front().second)) {
    const auto [who, s] = w.lock_queue.front();
    w.lock_queue.pop_front();
    take(w, who, s);
  }
}

}  // namespace ampi::rma

using namespace ampi;
using namespace ampi::rma;

#pragma GCC visibility push(default)
extern "C" {

// ---- active target: fence ------------------------------------------------------------------------------
int PMPI_Win_fence(int assert, MPI_Win win) {
  const char* fn = "MPI_Win_fence";
  int rc;
  Win* w = my_win(win, fn, &rc);
  if (!w) return rc;
  if (w->locks_held || w->lock_all || w->access || w->exposure)
    return win_error(w, MPI_ERR_RMA_SYNC, fn, "another epoch (lock, start or post) is open on the window");
  for (int t = 0; t < w->n; ++t) request_flush(*w, t);
  wait_all(*w);
  if (!(assert & MPI_MODE_NOPRECEDE) || !(assert & MPI_MODE_NOSUCCEED)) {
    // Everyone's operations of the epoch are done (each waited for its own) before anyone
    // reads the results or starts the next epoch.
    Comm& wc = *comm_get(w->comm);
    if ((rc = coll_barrier(wc, coll_tag(wc)))) return rc;
  }
  w->fence_open = !(assert & MPI_MODE_NOSUCCEED);
  return MPI_SUCCESS;
}

// ---- active target: post / start / complete / wait / test -----------------------------------------------
int PMPI_Win_post(MPI_Group group, int assert, MPI_Win win) {
  const char* fn = "MPI_Win_post";
  int rc;
  Win* w = my_win(win, fn, &rc);
  if (!w) return rc;
  if (w->exposure) return win_error(w, MPI_ERR_RMA_SYNC, fn, "an exposure epoch is open already");
  std::vector<int> origins;
  if ((rc = group_ranks(w, fn, group, &origins))) return rc;
  w->exposure = true;
  w->exposure_size = static_cast<int>(origins.size());
  if (!(assert & MPI_MODE_NOCHECK))
    for (int o : origins) send_ctl(*w, o, kPost);
  return MPI_SUCCESS;
}

int PMPI_Win_start(MPI_Group group, int assert, MPI_Win win) {
  const char* fn = "MPI_Win_start";
  int rc;
  Win* w = my_win(win, fn, &rc);
  if (!w) return rc;
  if (w->access) return win_error(w, MPI_ERR_RMA_SYNC, fn, "an access epoch is open already");
  if ((rc = group_ranks(w, fn, group, &w->access_group))) return rc;
  if (!(assert & MPI_MODE_NOCHECK))  // each target must have posted
    for (int t : w->access_group) {
      auto& p = w->posts[static_cast<std::size_t>(t)];
      win_wait(*w, [&p] { return p > 0; });
      --p;
    }
  for (int t : w->access_group) w->in_access[static_cast<std::size_t>(t)] = 1;
  w->access = true;
  return MPI_SUCCESS;
}

int PMPI_Win_complete(MPI_Win win) {
  const char* fn = "MPI_Win_complete";
  int rc;
  Win* w = my_win(win, fn, &rc);
  if (!w) return rc;
  if (!w->access) return win_error(w, MPI_ERR_RMA_SYNC, fn, "no access epoch is open (MPI_Win_start)");
  for (int t : w->access_group) {
    settle_direct(*w, t);
    wait_target(*w, t);  // answers due (Get & co.) are in
    w->dirty[static_cast<std::size_t>(t)] = 0;
    w->in_access[static_cast<std::size_t>(t)] = 0;
    send_ctl(*w, t, kComplete);  // behind the epoch's operations
  }
  w->access = false;
  w->access_group.clear();
  return MPI_SUCCESS;
}

int PMPI_Win_wait(MPI_Win win) {
  const char* fn = "MPI_Win_wait";
  int rc;
  Win* w = my_win(win, fn, &rc);
  if (!w) return rc;
  if (!w->exposure) return win_error(w, MPI_ERR_RMA_SYNC, fn, "no exposure epoch is open (MPI_Win_post)");
  const auto need = static_cast<std::uint32_t>(w->exposure_size);
  win_wait(*w, [w, need] { return w->completes >= need; });
  w->completes -= need;
  w->exposure = false;
  return MPI_SUCCESS;
}

int PMPI_Win_test(MPI_Win win, int* flag) {
  const char* fn = "MPI_Win_test";
  int rc;
  Win* w = my_win(win, fn, &rc);
  if (!w) return rc;
  if (!flag) return win_error(w, MPI_ERR_ARG, fn, "flag is NULL");
  if (!w->exposure) return win_error(w, MPI_ERR_RMA_SYNC, fn, "no exposure epoch is open (MPI_Win_post)");
  const auto need = static_cast<std::uint32_t>(w->exposure_size);
  if (w->completes < need) rank_poll();
  *flag = w->completes >= need;
  if (*flag) {
    w->completes -= need;
    w->exposure = false;
  }
  return MPI_SUCCESS;
}

// ---- passive target --------------------------------------------------------------------------------
int PMPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win) {
  const char* fn = "MPI_Win_lock";
  int rc;
  Win* w = my_win(win, fn, &rc);
  if (!w) return rc;
  if (lock_type != MPI_LOCK_EXCLUSIVE && lock_type != MPI_LOCK_SHARED)
    return win_error(w, MPI_ERR_LOCKTYPE, fn, "lock type %d is neither MPI_LOCK_EXCLUSIVE nor MPI_LOCK_SHARED",
                     lock_type);
  if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
  if ((rc = check_target(w, fn, rank))) return rc;
  if (w->lock_all || w->locks[static_cast<std::size_t>(rank)] != LockState::None)
    return win_error(w, MPI_ERR_RMA_SYNC, fn, "rank %d is locked already by this rank", rank);
  if (assert & MPI_MODE_NOCHECK) w->locks[static_cast<std::size_t>(rank)] = LockState::NoCheck;
  else acquire(*w, rank, lock_type == MPI_LOCK_EXCLUSIVE ? LockState::Exclusive : LockState::Shared);
  ++w->locks_held;
  return MPI_SUCCESS;
}

int PMPI_Win_unlock(int rank, MPI_Win win) {
  const char* fn = "MPI_Win_unlock";
  int rc;
  Win* w = my_win(win, fn, &rc);
  if (!w) return rc;
  if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
  if ((rc = check_target(w, fn, rank))) return rc;
  if (w->lock_all || w->locks[static_cast<std::size_t>(rank)] == LockState::None)
    return win_error(w, MPI_ERR_RMA_SYNC, fn, "rank %d is not locked by this rank (MPI_Win_lock)", rank);
  release(*w, rank);
  wait_target(*w, rank);
  --w->locks_held;
  return MPI_SUCCESS;
}

int PMPI_Win_lock_all(int assert, MPI_Win win) {
  const char* fn = "MPI_Win_lock_all";
  int rc;
  Win* w = my_win(win, fn, &rc);
  if (!w) return rc;
  if (w->lock_all || w->locks_held)
    return win_error(w, MPI_ERR_RMA_SYNC, fn, "a passive-target epoch is open already");
  w->lock_all = true;
  w->lock_all_nocheck = (assert & MPI_MODE_NOCHECK) != 0;
  return access_check(*w, w->me, fn);  // its own lock now: local loads and stores are covered
}

int PMPI_Win_unlock_all(MPI_Win win) {
  const char* fn = "MPI_Win_unlock_all";
  int rc;
  Win* w = my_win(win, fn, &rc);
  if (!w) return rc;
  if (!w->lock_all) return win_error(w, MPI_ERR_RMA_SYNC, fn, "no MPI_Win_lock_all epoch is open");
  for (int t = 0; t < w->n; ++t)
    if (w->locks[static_cast<std::size_t>(t)] != LockState::None) release(*w, t);
  wait_all(*w);
  w->lock_all = w->lock_all_nocheck = false;
  return MPI_SUCCESS;
}

int PMPI_Win_flush(int rank, MPI_Win win) {
  const char* fn = "MPI_Win_flush";
  int rc;
  Win* w = my_win(win, fn, &rc);
  if (!w) return rc;
  if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
  if ((rc = check_target(w, fn, rank))) return rc;
  request_flush(*w, rank);
  wait_target(*w, rank);
  return MPI_SUCCESS;
}

int PMPI_Win_flush_all(MPI_Win win) {
  int rc;
  Win* w = my_win(win, "MPI_Win_flush_all", &rc);
  if (!w) return rc;
  for (int t = 0; t < w->n; ++t) request_flush(*w, t);
  wait_all(*w);
  return MPI_SUCCESS;
}

// Local completion: data leaves the origin buffer when issued; answers must be in.
int PMPI_Win_flush_local(int rank, MPI_Win win) {
  const char* fn = "MPI_Win_flush_local";
  int rc;
  Win* w = my_win(win, fn, &rc);
  if (!w) return rc;
  if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
  if ((rc = check_target(w, fn, rank))) return rc;
  wait_target(*w, rank);
  return MPI_SUCCESS;
}

int PMPI_Win_flush_local_all(MPI_Win win) {
  int rc;
  Win* w = my_win(win, "MPI_Win_flush_local_all", &rc);
  if (!w) return rc;
  wait_all(*w);
  return MPI_SUCCESS;
}

// The unified model: one copy of the memory; a fence for the compiler and the CPU.
int PMPI_Win_sync(MPI_Win win) {
  int rc;
  Win* w = my_win(win, "MPI_Win_sync", &rc);
  if (!w) return rc;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return MPI_SUCCESS;
}

}  // extern "C"
#pragma GCC visibility pop
