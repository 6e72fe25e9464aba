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
    q.active = false;
    q.complete = false;
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

// The calling thread waits until one of the active requests completes.
void wait_for_any(P2p& p, int n, const MPI_Request* reqs) {
  CthThread self = CthSelf();
  rank_wait([&] {
    bool any = false;
    for (int i = 0; i < n; ++i) {
      if (inactive(p, reqs[i])) continue;
      Request& q = p.req(reqs[i]);
      if (q.complete) any = true;
      else q.waiter = self;  // the first to complete clears its own and wakes us
    }
    return any;
  });
  for (int i = 0; i < n; ++i)
    if (!inactive(p, reqs[i])) p.req(reqs[i]).waiter = nullptr;
}

// Waitany/Testany: finishes the first complete active request (true, with *indx, *status
// and in `rc` the call's result through the request's communicator's handler); false when
// none is complete. `any_active`: some request is active.
bool take_one(P2p& p, int n, MPI_Request* reqs, int* indx, MPI_Status* status, const char* fn, bool& any_active,
              int& rc) {
  for (int i = 0; i < n; ++i) {
    MPI_Request& h = reqs[i];
    if (inactive(p, h)) continue;
    any_active = true;
    if (!p.req(h).complete) continue;
    *indx = i;
    const MPI_Comm comm = p.req(h).comm;
    MPI_Status st;
    const int err = finish(p, &h, &st);
    status_out(status, st);
    rc = err ? status_error(fn, comm, st) : MPI_SUCCESS;
    return true;
  }
  return false;
}

int none_active_one(int* indx, MPI_Status* status) {
  *indx = MPI_UNDEFINED;
  empty_status(status);
  return MPI_SUCCESS;
}

std::pair<int, int> active_and_complete(P2p& p, int n, const MPI_Request* reqs) {
  int active = 0, complete = 0;
  for (int i = 0; i < n; ++i) {
    if (inactive(p, reqs[i])) continue;
    ++active;
    if (p.req(reqs[i]).complete) ++complete;
  }
  return {active, complete};
}

// Waitsome/Testsome: finishes every complete active request (MPI_UNDEFINED when none is active).
int take_some(P2p& p, int n, MPI_Request* reqs, int* outcount, int* indices, MPI_Status* statuses, const char* fn) {
  if (active_and_complete(p, n, reqs).first == 0) {
    *outcount = MPI_UNDEFINED;
    return MPI_SUCCESS;
  }
  int done = 0;
  bool failed = false;
  MPI_Comm err_comm = MPI_COMM_WORLD;  // the first failed request's: its handler decides
  for (int i = 0; i < n; ++i) {
    MPI_Request& h = reqs[i];
    if (inactive(p, h) || !p.req(h).complete) continue;
    const MPI_Comm comm = p.req(h).comm;
    MPI_Status st;
    if (finish(p, &h, &st) && !failed) {
      failed = true;
      err_comm = comm;
    }
    if (statuses) statuses[done] = st;
    indices[done++] = i;
  }
  *outcount = done;
  if (failed) return error(err_comm, MPI_ERR_IN_STATUS, fn, "a request failed (see the statuses)");
  return MPI_SUCCESS;
}

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
  P2p& p = current_rank()->p2p();
  if (int rc = check_requests(p, count, array_of_requests, "MPI_Waitany")) return rc;
  for (;;) {
    bool any_active = false;
    int rc;
    if (take_one(p, count, array_of_requests, indx, status, "MPI_Waitany", any_active, rc)) return rc;
    if (!any_active) return none_active_one(indx, status);
    wait_for_any(p, count, array_of_requests);
  }
}

int PMPI_Testany(int count, MPI_Request array_of_requests[], int* indx, int* flag, MPI_Status* status) {
  P2p& p = current_rank()->p2p();
  if (int rc = check_requests(p, count, array_of_requests, "MPI_Testany")) return rc;
  for (int pass = 0; pass < 2; ++pass) {
    bool any_active = false;
    int rc;
    *flag = 1;
    if (take_one(p, count, array_of_requests, indx, status, "MPI_Testany", any_active, rc)) return rc;
    if (!any_active) return none_active_one(indx, status);
    if (pass == 0) poll_yield();
  }
  *indx = MPI_UNDEFINED;
  *flag = 0;
  return MPI_SUCCESS;
}

int PMPI_Testsome(int incount, MPI_Request array_of_requests[], int* outcount, int array_of_indices[],
                  MPI_Status array_of_statuses[]) {
  P2p& p = current_rank()->p2p();
  if (int rc = check_requests(p, incount, array_of_requests, "MPI_Testsome")) return rc;
  if (active_and_complete(p, incount, array_of_requests).second == 0) poll_yield();
  return take_some(p, incount, array_of_requests, outcount, array_of_indices, array_of_statuses, "MPI_Testsome");
}

int PMPI_Waitsome(int incount, MPI_Request array_of_requests[], int* outcount, int array_of_indices[],
                  MPI_Status array_of_statuses[]) {
  P2p& p = current_rank()->p2p();
  if (int rc = check_requests(p, incount, array_of_requests, "MPI_Waitsome")) return rc;
  for (;;) {
    auto [active, complete] = active_and_complete(p, incount, array_of_requests);
    if (active == 0 || complete > 0) break;
    wait_for_any(p, incount, array_of_requests);
  }
  return take_some(p, incount, array_of_requests, outcount, array_of_indices, array_of_statuses, "MPI_Waitsome");
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
    q.status.ucharm_bytes = 0;
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
