// Completion: the wait and test families, Request_free / Request_get_status, cancel.
#include "pt2pt/pt2pt.h"
#include "pt2pt/status.h"
#include "pt2pt/wire.h"
#include "checks.h"
#include "errhan/grequest.h"
#include "rank.h"

using namespace ampi;
using namespace ampi::pt2pt;

namespace ampi::pt2pt {
int status_error(const char* fn, MPI_Comm comm, const MPI_Status& st) {
  if (st.MPI_ERROR == MPI_ERR_TRUNCATE)
    return error(comm, MPI_ERR_TRUNCATE, fn, "message of %lld bytes from rank %d (tag %d) is larger than the receive buffer",
                 st.ucharm_bytes, st.MPI_SOURCE, st.MPI_TAG);
  if (st.MPI_ERROR != MPI_SUCCESS) return error(comm, st.MPI_ERROR, fn, "the operation failed");
  return MPI_SUCCESS;
}

// Finishes a completed request for Wait/Test: status out, request freed (or made inactive).
// Returns the request's error class (MPI_SUCCESS normally).
int finish(P2p& p, MPI_Request* h, MPI_Status* st) {
  Request& q = p.req(*h);
  if (q.kind == ReqKind::Generalized) return grequest_finish(p, h, st);
  const int err = q.status.MPI_ERROR;
  if (st) *st = q.status;
  if (q.persistent) {
    if (st && q.ext_kind == ReqExtKind::Partitioned) part_status(q, st);
    p.deactivate(*h);
  } else {
    p.release(*h);
    *h = MPI_REQUEST_NULL;
  }
  return err;
}

bool inactive(P2p& p, MPI_Request h) {
  return h == MPI_REQUEST_NULL || (p.req(h).persistent && !p.req(h).active);
}

// Lets the scheduler run (messages arrive, other ranks run) and comes back: what a polling
// call (Test, Iprobe) does when it finds nothing, so that polling loops make progress.
void poll_yield() { rank_poll(); }

int check_request(P2p& p, MPI_Request h, const char* fn) {
  if (h != MPI_REQUEST_NULL && !p.valid(h))
    return error(MPI_COMM_WORLD, MPI_ERR_REQUEST, fn, "invalid request %d", h);
  return MPI_SUCCESS;
}

int check_requests(P2p& p, int n, const MPI_Request* reqs, const char* fn) {
  for (int i = 0; i < n; ++i)
    if (int rc = check_request(p, reqs[i], fn)) return rc;
  return MPI_SUCCESS;
}

// ---- the any/some family (Waitany, Testany, Waitsome, Testsome) ----------------------------------------
// Their cost is what has completed, not what is pending: they read the rank's ready list
// (P2p::mark_complete) and find a completed request's index in the array from where the
// last scan of that array saw it (Request::stamp, slot; P2p::WaitSet), checked against the
// array (reqs[slot] == h). A scan (every handle checked and stamped, O(n)) happens when a
// call gets another array than the last, or meets a completed request it cannot place: the
// program may have put new requests into the array between calls. A completed request that
// a scan of this call did not find in the array is parked (taken off the ready list) until
// the next scan, so later calls skip it. Before concluding that nothing in the array is
// complete (and waiting, or reporting none), a call that has not scanned scans when a
// parked request might have been put into the array since, or when no active request is
// known to be left in it.
namespace {
constexpr int kNone = -1, kEmpty = -2, kFailed = -3;

struct AnyCall {
  P2p& p;
  int n;
  MPI_Request* reqs;
  const char* fn;
  bool scanned = false;
  int rc = MPI_SUCCESS;
};

bool rescan(AnyCall& c) {
  c.scanned = true;
  P2p::WaitSet& w = c.p.wait_set;
  if ((c.rc = check_requests(c.p, c.n, c.reqs, c.fn))) {
    w.reqs = nullptr;
    w.n = -1;
    return true;
  }
  w.reqs = c.reqs;
  w.n = c.n;
  if (++w.gen == 0) w.gen = 1;  // 0 means "stamped by no scan"
  w.active = 0;
  for (int i = 0; i < c.n; ++i) {
    if (inactive(c.p, c.reqs[i])) continue;
    Request& q = c.p.req(c.reqs[i]);
    q.stamp = w.gen;
    q.slot = i;
    ++w.active;
  }
  c.p.unpark_all();
  return false;
}

// A call begins: a scan unless its array is the one scanned last. True on an invalid handle.
bool begin(AnyCall& c) {
  const P2p::WaitSet& w = c.p.wait_set;
  if (w.gen && w.reqs == c.reqs && w.n == c.n) return false;
  return rescan(c);
}

// The index of a completed request of the array, from the ready list; kNone; kFailed.
int next_ready(AnyCall& c) {
  P2p& p = c.p;
  for (MPI_Request h = p.ready_head(); h;) {
    Request& q = p.req(h);
    if (q.stamp == p.wait_set.gen && q.slot >= 0 && q.slot < c.n && c.reqs[q.slot] == h) return q.slot;
    if (!c.scanned) {  // new since the last scan, or moved: look at the array again
      if (rescan(c)) return kFailed;
      h = p.ready_head();
      continue;
    }
    const MPI_Request next = q.rnext;
    p.park(h);  // not in this array (the scan of this call would have stamped it)
    h = next;
  }
  return kNone;
}

// next_ready, or when nothing is complete: kEmpty when no request of the array is active.
int ready_index(AnyCall& c) {
  for (;;) {
    const int i = next_ready(c);
    if (i != kNone) return i;
    const P2p::WaitSet& w = c.p.wait_set;
    if (c.scanned || (!c.p.any_parked() && w.active > 0)) return w.active > 0 ? kNone : kEmpty;
    if (rescan(c)) return kFailed;
  }
}

// Testany/Testsome: ready_index, and if nothing is complete yet, again after one round of
// progress (so a test can see what has arrived meanwhile).
int ready_index_polled(AnyCall& c) {
  const int i = ready_index(c);
  if (i != kNone) return i;
  poll_yield();
  return ready_index(c);
}

// Waits until some request of the rank completes (any_waiter: P2p::complete wakes it).
void wait_any_completion(P2p& p) {
  CthThread self = CthSelf();
  rank_wait([&] {
    if (p.ready_head()) return true;
    P2p::add_waiter(p.any_waiter, p.more_any_waiters, self);
    return false;
  });
  P2p::remove_waiter(p.any_waiter, p.more_any_waiters, self);
}

// Waitany/Testany: finishes request i: *indx, *status, and the call's result through the
// request's communicator's handler.
int finish_one(AnyCall& c, int i, int* indx, MPI_Status* status) {
  *indx = i;
  const MPI_Comm comm = c.p.req(c.reqs[i]).comm;
  MPI_Status st;
  const int err = finish(c.p, &c.reqs[i], &st);
  status_out(status, st);
  return err ? status_error(c.fn, comm, st) : MPI_SUCCESS;
}

int none_active_one(int* indx, MPI_Status* status) {
  *indx = MPI_UNDEFINED;
  empty_status(status);
  return MPI_SUCCESS;
}

// Waitsome/Testsome: finishes request `first` and every other completed request of the array.
int finish_some(AnyCall& c, int first, int* outcount, int* indices, MPI_Status* statuses) {
  int done = 0;
  bool failed = false;
  MPI_Comm err_comm = MPI_COMM_WORLD;  // the first failed request's: its handler decides
  for (int i = first; i >= 0; i = next_ready(c)) {
    MPI_Request& h = c.reqs[i];
    const MPI_Comm comm = c.p.req(h).comm;
    MPI_Status st;
    if (finish(c.p, &h, &st) && !failed) {
      failed = true;
      err_comm = comm;
    }
    if (statuses) statuses[done] = st;
    indices[done++] = i;
  }
  *outcount = done;
  if (c.rc) return c.rc;
  if (failed) return error(err_comm, MPI_ERR_IN_STATUS, c.fn, "a request failed (see the statuses)");
  return MPI_SUCCESS;
}

}  // namespace
}  // namespace ampi::pt2pt

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Wait(MPI_Request* request, MPI_Status* status) {
  P2p& p = current_rank()->p2p();
  if (int rc = check_request(p, *request, "MPI_Wait")) return rc;
  if (inactive(p, *request)) {
    empty_status(status);
    return MPI_SUCCESS;
  }
  wait_one(p, *request);
  const MPI_Comm comm = p.req(*request).comm;
  MPI_Status st;
  int err = finish(p, request, &st);
  status_out(status, st);
  return err ? status_error("MPI_Wait", comm, st) : MPI_SUCCESS;
}

int PMPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  P2p& p = current_rank()->p2p();
  if (int rc = check_request(p, *request, "MPI_Test")) return rc;
  if (inactive(p, *request)) {
    *flag = 1;
    empty_status(status);
    return MPI_SUCCESS;
  }
  if (!p.req(*request).complete) poll_yield();
  if (!p.req(*request).complete) {
    *flag = 0;
    return MPI_SUCCESS;
  }
  *flag = 1;
  const MPI_Comm comm = p.req(*request).comm;
  MPI_Status st;
  int err = finish(p, request, &st);
  status_out(status, st);
  return err ? status_error("MPI_Test", comm, st) : MPI_SUCCESS;
}

int PMPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[]) {
  P2p& p = current_rank()->p2p();
  if (int rc = check_requests(p, count, array_of_requests, "MPI_Waitall")) return rc;
  bool any_error = false;
  MPI_Comm err_comm = MPI_COMM_WORLD;  // the first failed request's: its handler decides
  for (int i = 0; i < count; ++i) {
    MPI_Request& h = array_of_requests[i];
    MPI_Status* st = array_of_statuses ? &array_of_statuses[i] : nullptr;
    if (inactive(p, h)) {
      empty_status(st);
      continue;
    }
    wait_one(p, h);
    const MPI_Comm comm = p.req(h).comm;
    MPI_Status s;
    if (finish(p, &h, &s) && !any_error) {
      any_error = true;
      err_comm = comm;
    }
    if (st) *st = s;
  }
  if (any_error) return error(err_comm, MPI_ERR_IN_STATUS, "MPI_Waitall", "a request failed (see the statuses)");
  return MPI_SUCCESS;
}

int PMPI_Testall(int count, MPI_Request array_of_requests[], int* flag, MPI_Status array_of_statuses[]) {
  P2p& p = current_rank()->p2p();
  if (int rc = check_requests(p, count, array_of_requests, "MPI_Testall")) return rc;
  auto all_done = [&] {
    for (int i = 0; i < count; ++i)
      if (!inactive(p, array_of_requests[i]) && !p.req(array_of_requests[i]).complete) return false;
    return true;
  };
  if (!all_done()) poll_yield();
  if (!all_done()) {
    *flag = 0;
    return MPI_SUCCESS;
  }
  *flag = 1;
  return PMPI_Waitall(count, array_of_requests, array_of_statuses);
}

int PMPI_Waitany(int count, MPI_Request array_of_requests[], int* indx, MPI_Status* status) {
  AnyCall c{current_rank()->p2p(), count, array_of_requests, "MPI_Waitany"};
  if (begin(c)) return c.rc;
  for (;;) {
    const int i = ready_index(c);
    if (i >= 0) return finish_one(c, i, indx, status);
    if (i == kFailed) return c.rc;
    if (i == kEmpty) return none_active_one(indx, status);
    wait_any_completion(c.p);
  }
}

int PMPI_Testany(int count, MPI_Request array_of_requests[], int* indx, int* flag, MPI_Status* status) {
  AnyCall c{current_rank()->p2p(), count, array_of_requests, "MPI_Testany"};
  if (begin(c)) return c.rc;
  const int i = ready_index_polled(c);
  if (i == kFailed) return c.rc;
  *flag = i != kNone;
  if (i >= 0) return finish_one(c, i, indx, status);
  if (i == kEmpty) return none_active_one(indx, status);
  *indx = MPI_UNDEFINED;
  return MPI_SUCCESS;
}

int PMPI_Testsome(int incount, MPI_Request array_of_requests[], int* outcount, int array_of_indices[],
                  MPI_Status array_of_statuses[]) {
  AnyCall c{current_rank()->p2p(), incount, array_of_requests, "MPI_Testsome"};
  if (begin(c)) return c.rc;
  const int i = ready_index_polled(c);
  if (i == kFailed) return c.rc;
  if (i == kEmpty) {
    *outcount = MPI_UNDEFINED;
    return MPI_SUCCESS;
  }
  if (i == kNone) {
    *outcount = 0;
    return MPI_SUCCESS;
  }
  return finish_some(c, i, outcount, array_of_indices, array_of_statuses);
}

int PMPI_Waitsome(int incount, MPI_Request array_of_requests[], int* outcount, int array_of_indices[],
                  MPI_Status array_of_statuses[]) {
  AnyCall c{current_rank()->p2p(), incount, array_of_requests, "MPI_Waitsome"};
  if (begin(c)) return c.rc;
  for (;;) {
    const int i = ready_index(c);
    if (i >= 0) return finish_some(c, i, outcount, array_of_indices, array_of_statuses);
    if (i == kFailed) return c.rc;
    if (i == kEmpty) {
      *outcount = MPI_UNDEFINED;
      return MPI_SUCCESS;
    }
    wait_any_completion(c.p);
  }
}

int PMPI_Request_free(MPI_Request* request) {
  P2p& p = current_rank()->p2p();
  if (*request == MPI_REQUEST_NULL || !p.valid(*request))
    return error(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Request_free", "invalid request %d", *request);
  Request& q = p.req(*request);
  if (q.kind == ReqKind::Generalized) return grequest_free(p, request);
  if (q.complete || (q.persistent && !q.active)) p.release(*request);
  else q.user_freed = true, q.persistent = false;
  *request = MPI_REQUEST_NULL;
  return MPI_SUCCESS;
}

int PMPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  P2p& p = current_rank()->p2p();
  if (int rc = check_request(p, request, "MPI_Request_get_status")) return rc;
  if (inactive(p, request)) {
    *flag = 1;
    empty_status(status);
    return MPI_SUCCESS;
  }
  if (!p.req(request).complete) poll_yield();
  *flag = p.req(request).complete;
  if (*flag && p.req(request).kind == ReqKind::Generalized) return grequest_status(p, request, status);
  if (*flag) status_out(status, p.req(request).status);
  return MPI_SUCCESS;
}

int PMPI_Cancel(MPI_Request* request) {
  P2p& p = current_rank()->p2p();
  if (*request == MPI_REQUEST_NULL || !p.valid(*request))
    return error(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Cancel", "invalid request %d", *request);
  Request& q = p.req(*request);
  if (q.kind == ReqKind::Generalized) return grequest_cancel(p, *request);
  // A receive not yet matched is taken back; a send has left already (it completes normally).
  if (q.kind == ReqKind::Recv && !q.complete && !q.matched && !(q.persistent && !q.active)) {
    p.unpost(*request);
    q.status.ucharm_cancelled = 1;
    q.status.MPI_SOURCE = MPI_ANY_SOURCE;
    q.status.MPI_TAG = MPI_ANY_TAG;
    status_set_bytes(q.status, 0);
    p.complete(*request);
  }
  return MPI_SUCCESS;
}

int PMPI_Test_cancelled(const MPI_Status* status, int* flag) {
  *flag = status->ucharm_cancelled;
  return MPI_SUCCESS;
}

int PMPI_Status_set_cancelled(MPI_Status* status, int flag) {
  status->ucharm_cancelled = flag;
  return MPI_SUCCESS;
}

}  // extern "C"
#pragma GCC visibility pop
