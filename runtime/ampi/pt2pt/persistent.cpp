// Persistent requests: Send_init (every mode), Recv_init, Start, Startall.
#include "pt2pt/pt2pt.h"
#include "pt2pt/wire.h"
#include "checks.h"
#include "rank.h"

using namespace ampi;
using namespace ampi::pt2pt;

namespace ampi::pt2pt {
void start_persistent_send(Rank* r, MPI_Request h, Comm& c, Ctx ctx) {
  P2p& p = r->p2p();
  Request& q = p.req(h);
  if (q.peer == MPI_PROC_NULL) {
    proc_null_status(&q.status);
    p.mark_complete(h);
    return;
  }
  const bool on_device = q.count > 0 && is_device(q.sbuf);
  q.on_device = on_device;
  TypeFacts f;
  type_facts(q.type, f);
  const bool device = !q.buffered && goes_direct(q.count, f, on_device);
  start_send(r, q.sbuf, q.count, q.type, f, q.peer, q.tag, c, ctx, q.sync ? h : 0, device && !q.sync ? h : 0,
             on_device, device);
  if (!q.sync && !device) p.mark_complete(h);
}

void start_persistent_recv(Rank* r, MPI_Request h, Comm& c, Ctx ctx) {
  P2p& p = r->p2p();
  Request& q = p.req(h);
  if (q.peer == MPI_PROC_NULL) {
    proc_null_status(&q.status);
    p.mark_complete(h);
    return;
  }
  q.context = c.ctx(ctx);
  type_facts(q.type, q.facts);
  q.device = q.count > 0 && is_device(q.buf);
  std::int32_t u = p.find_unexpected(q.context, q.peer, q.tag);
  if (u >= 0) deliver(r, h, p.take_unexpected(u));
  else p.post(h);
}
}  // namespace ampi::pt2pt

#pragma GCC visibility push(default)
extern "C" {

namespace {
// `buffered`: Bsend_init: each Start copies the data into the message and completes at once,
// whatever its size (a buffered send never waits for the receiver).
int init_persistent(const char* fn, bool is_send, bool sync, bool buffered, const void* buf, int count, MPI_Datatype t, int peer,
                    int tag, MPI_Comm comm, MPI_Request* request) {
  Comm* c;
  TypeFacts f;
  if (int rc = is_send ? check_send(fn, buf, count, t, peer, tag, comm, c, f) : check_recv(fn, buf, count, t, peer, tag, comm, c, f))
    return rc;
  P2p& p = current_rank()->p2p();
  MPI_Request h = p.alloc(is_send ? ReqKind::Send : ReqKind::Recv);
  Request& q = p.req(h);
  q.persistent = true;
  q.sync = sync;
  q.buffered = buffered;
  q.buf = const_cast<void*>(buf);
  q.sbuf = buf;
  q.count = count;
  q.type = t;
  q.peer = peer;
  q.tag = tag;
  q.comm = comm;
  if (t >= UCHARM_MPI_PREDEFINED_TYPES) {  // the program may free the type before Start
    type_retain(t);
    q.holds_type = true;
  }
  *request = h;
  return MPI_SUCCESS;
}
}  // namespace

int PMPI_Send_init(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                   MPI_Request* request) {
  return init_persistent("MPI_Send_init", true, false, false, buf, count, datatype, dest, tag, comm, request);
}
int PMPI_Ssend_init(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                    MPI_Request* request) {
  return init_persistent("MPI_Ssend_init", true, true, false, buf, count, datatype, dest, tag, comm, request);
}
int PMPI_Rsend_init(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                    MPI_Request* request) {
  return init_persistent("MPI_Rsend_init", true, false, false, buf, count, datatype, dest, tag, comm, request);
}
int PMPI_Bsend_init(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                    MPI_Request* request) {
  return init_persistent("MPI_Bsend_init", true, false, true, buf, count, datatype, dest, tag, comm, request);
}
int PMPI_Recv_init(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                   MPI_Request* request) {
  return init_persistent("MPI_Recv_init", false, false, false, buf, count, datatype, source, tag, comm, request);
}

int PMPI_Start(MPI_Request* request) {
  Rank* r = current_rank();
  P2p& p = r->p2p();
  if (*request == MPI_REQUEST_NULL || !p.valid(*request) || !p.req(*request).persistent)
    return error(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Start", "request %d is not a persistent request", *request);
  Request& q = p.req(*request);
  if (q.active) return error(q.comm, MPI_ERR_REQUEST, "MPI_Start", "request %d is already active", *request);
  if (q.ext_kind == ReqExtKind::PersistentColl) return pcoll_start(*request);
  if (q.ext_kind == ReqExtKind::Partitioned) return part_start(*request);
  Comm* c = comm_get(q.comm);
  if (!c) return error(q.comm, MPI_ERR_COMM, "MPI_Start", "the request's communicator was freed");
  const MPI_Request h = *request;
  q.active = true;
  q.complete = false;
  q.matched = false;
  empty_status(&q.status);
  if (q.kind == ReqKind::Send) start_persistent_send(r, h, *c, Ctx::P2P);
  else start_persistent_recv(r, h, *c, Ctx::P2P);
  return MPI_SUCCESS;
}

int PMPI_Startall(int count, MPI_Request array_of_requests[]) {
  for (int i = 0; i < count; ++i)
    if (int rc = PMPI_Start(&array_of_requests[i])) return rc;
  return MPI_SUCCESS;
}

}
#pragma GCC visibility pop
