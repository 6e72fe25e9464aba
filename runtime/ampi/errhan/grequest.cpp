// Generalized requests (MPI-3.1 §12.2): MPI_Grequest_start and MPI_Grequest_complete; Wait,
// Test, Request_free and Cancel call the program's functions through grequest.h.
// The request completes when the program calls MPI_Grequest_complete (from the rank's
// thread: a wait on it blocks the rank until then, running its other threads meanwhile).
#include "errhan/grequest.h"
#include "checks.h"
#include "heap.h"
#include "pt2pt/status.h"
#include "rank.h"

#include <cstdint>
#include <memory>
#include <type_traits>

namespace ampi {
namespace {

// What Request::buf holds for a generalized request.
struct Greq {
  MPI_Grequest_query_function* query;
  MPI_Grequest_free_function* free;
  MPI_Grequest_cancel_function* cancel;
  void* extra;
  bool user_freed = false;  // MPI_Request_free before completion: free_fn at completion
};

Greq* greq_of(P2p& p, MPI_Request h) {
  if (h == MPI_REQUEST_NULL || !p.valid(h) || p.req(h).kind != ReqKind::Generalized) return nullptr;
  return static_cast<Greq*>(p.req(h).buf);
}

// free_fn, then the request goes.
int release(P2p& p, MPI_Request h) {
  std::unique_ptr<Greq> g(static_cast<Greq*>(p.req(h).buf));
  p.req(h).buf = nullptr;
  int rc;
  {
    heap::UserScope user(nullptr);  // the program's code: what it allocates is the rank's
    rc = g->free(g->extra);
  }
  p.release(h);
  return rc;
}

// The status query_fn gives; its error (if any) in MPI_ERROR.
MPI_Status query(Greq* g) {
  MPI_Status s{};
  s.MPI_SOURCE = MPI_UNDEFINED;
  s.MPI_TAG = MPI_UNDEFINED;
  s.MPI_ERROR = MPI_SUCCESS;
  heap::UserScope user(nullptr);  // the program's code: what it allocates is the rank's
  if (const int rc = g->query(g->extra, &s); rc != MPI_SUCCESS) s.MPI_ERROR = rc;
  return s;
}

}  // namespace

int grequest_finish(P2p& p, MPI_Request* h, MPI_Status* st) {
  Greq* g = greq_of(p, *h);
  MPI_Status s = query(g);
  const int qrc = s.MPI_ERROR;
  const int frc = release(p, *h);
  *h = MPI_REQUEST_NULL;
  if (st) *st = s;
  return qrc != MPI_SUCCESS ? qrc : frc;
}

int grequest_status(P2p& p, MPI_Request h, MPI_Status* st) {
  Greq* g = greq_of(p, h);
  MPI_Status s = query(g);
  if (s.MPI_ERROR != MPI_SUCCESS)
    return error(MPI_COMM_WORLD, s.MPI_ERROR, "MPI_Request_get_status", "the generalized request's query_fn failed");
  pt2pt::status_out(st, s);
  return MPI_SUCCESS;
}

int grequest_free(P2p& p, MPI_Request* h) {
  Greq* g = greq_of(p, *h);
  const MPI_Request r = *h;
  *h = MPI_REQUEST_NULL;
  if (!p.req(r).complete) {
    g->user_freed = true;
    return MPI_SUCCESS;
  }
  if (int rc = release(p, r)) return error(MPI_COMM_WORLD, rc, "MPI_Request_free", "the request's free_fn failed");
  return MPI_SUCCESS;
}

void grequest_pup(PUP::er& p, Request& q) {
  if (p.isUnpacking()) q.buf = new Greq{};
  Greq& g = *static_cast<Greq*>(q.buf);
  auto bits = [&p](auto& ptr) {
    auto v = reinterpret_cast<std::uintptr_t>(ptr);
    p | v;
    ptr = reinterpret_cast<std::remove_reference_t<decltype(ptr)>>(v);
  };
  bits(g.query);
  bits(g.free);
  bits(g.cancel);
  bits(g.extra);
  p | g.user_freed;
}

void grequest_drop(Request& q) {
  delete static_cast<Greq*>(q.buf);
  q.buf = nullptr;
}

int grequest_cancel(P2p& p, MPI_Request h) {
  Greq* g = greq_of(p, h);
  int rc;
  {
    heap::UserScope user(nullptr);  // the program's code
    rc = g->cancel(g->extra, p.req(h).complete ? 1 : 0);
  }
  if (rc)
    return error(MPI_COMM_WORLD, rc, "MPI_Cancel", "the generalized request's cancel_fn failed");
  return MPI_SUCCESS;
}

}  // namespace ampi

using namespace ampi;

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Grequest_start(MPI_Grequest_query_function* query_fn, MPI_Grequest_free_function* free_fn,
                        MPI_Grequest_cancel_function* cancel_fn, void* extra_state, MPI_Request* request) {
  const char* fn = "MPI_Grequest_start";
  if (!query_fn || !free_fn || !cancel_fn) return null_arg(MPI_COMM_WORLD, fn, "query_fn, free_fn or cancel_fn");
  if (int e = check_ptr(MPI_COMM_WORLD, fn, "request", request)) return e;
  P2p& p = current_rank()->p2p();
  const MPI_Request h = p.alloc(ReqKind::Generalized);
  p.req(h).buf = new Greq{query_fn, free_fn, cancel_fn, extra_state};
  *request = h;
  return MPI_SUCCESS;
}

int PMPI_Grequest_complete(MPI_Request request) {
  P2p& p = current_rank()->p2p();
  Greq* g = greq_of(p, request);
  if (!g)
    return error(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Grequest_complete", "%d is not a generalized request", request);
  if (p.req(request).complete)
    return error(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Grequest_complete", "request %d is complete already", request);
  if (g->user_freed) {
    if (int rc = release(p, request))
      return error(MPI_COMM_WORLD, rc, "MPI_Grequest_complete", "the request's free_fn failed");
    return MPI_SUCCESS;
  }
  p.complete(request);
  return MPI_SUCCESS;
}

}  // extern "C"
#pragma GCC visibility pop
