// Probe and matched probe: Probe/Iprobe, Mprobe/Improbe and Mrecv/Imrecv, and what a
// status says (Get_count, Get_elements).
#include "pt2pt/pt2pt.h"
#include "pt2pt/status.h"
#include "pt2pt/wire.h"
#include "checks.h"
#include "rank.h"

using namespace ampi;
using namespace ampi::pt2pt;

namespace {
constexpr std::int32_t kProbeProcNull = -2;
// A probe of MPI_PROC_NULL: its status, MPI_ERROR left alone (single completion, §3.2.5).
void probe_null_status(MPI_Status* status) {
  MPI_Status st;
  proc_null_status(&st);
  status_out(status, st);
}
// What the four probes share: checks the arguments (an error: *rc, and -1), then finds the
// first matching unexpected message, waiting for one (`blocking`) or after one scheduler
// step (else; -1 when none). kProbeProcNull for MPI_PROC_NULL.
std::int32_t probe_find(const char* fn, int source, int tag, MPI_Comm comm, bool blocking, int* rc, P2p*& pp) {
  Comm* c;
  TypeFacts f;
  *rc = check_recv(fn, nullptr, 0, MPI_BYTE, source, tag, comm, c, f);
  if (*rc) return -1;
  if (source == MPI_PROC_NULL) return kProbeProcNull;
  P2p& p = current_rank()->p2p();
  pp = &p;
  const std::uint32_t ctx = c->ctx(Ctx::P2P);
  std::int32_t u = p.find_unexpected(ctx, source, tag);
  if (u >= 0) return u;
  if (!blocking) {
    rank_poll();
    return p.find_unexpected(ctx, source, tag);
  }
  CthThread self = CthSelf();
  rank_wait([&] {
    if ((u = p.find_unexpected(ctx, source, tag)) >= 0) return true;
    P2p::add_waiter(p.probe_waiter, p.more_probe_waiters, self);  // a new arrival clears it, waking us
    return false;
  });
  P2p::remove_waiter(p.probe_waiter, p.more_probe_waiters, self);
  return u;
}
// Mprobe/Improbe that found message u or MPI_PROC_NULL: its status, and the message handle
// (the message leaves the unexpected queue for the matched ones).
void hand_out(P2p* p, std::int32_t u, MPI_Comm comm, MPI_Message* message, MPI_Status* status) {
  if (u == kProbeProcNull) {
    *message = MPI_MESSAGE_NO_PROC;
    probe_null_status(status);
    return;
  }
  fill_status_from_msg(status, p->unexpected_msg(u), comm);
  *message = p->keep_matched(p->take_unexpected(u), comm);
}
}  // namespace

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  int rc;
  P2p* p = nullptr;
  const std::int32_t u = probe_find("MPI_Iprobe", source, tag, comm, false, &rc, p);
  if (rc) return rc;
  *flag = u >= 0 || u == kProbeProcNull;
  if (u == kProbeProcNull) probe_null_status(status);
  else if (u >= 0) fill_status_from_msg(status, p->unexpected_msg(u), comm);
  return MPI_SUCCESS;
}

int PMPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status* status) {
  int rc;
  P2p* p = nullptr;
  const std::int32_t u = probe_find("MPI_Probe", source, tag, comm, true, &rc, p);
  if (rc) return rc;
  if (u == kProbeProcNull) probe_null_status(status);
  else fill_status_from_msg(status, p->unexpected_msg(u), comm);
  return MPI_SUCCESS;
}

// Matched probes: the message leaves the unexpected queue at the probe, so that no other
// receive (another thread of the rank, a wildcard) can take it before MPI_Mrecv.
int PMPI_Improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message, MPI_Status* status) {
  int rc;
  P2p* p = nullptr;
  const std::int32_t u = probe_find("MPI_Improbe", source, tag, comm, false, &rc, p);
  if (rc) return rc;
  *flag = u >= 0 || u == kProbeProcNull;
  if (*flag) hand_out(p, u, comm, message, status);
  return MPI_SUCCESS;
}

int PMPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status) {
  int rc;
  P2p* p = nullptr;
  const std::int32_t u = probe_find("MPI_Mprobe", source, tag, comm, true, &rc, p);
  if (rc) return rc;
  hand_out(p, u, comm, message, status);
  return MPI_SUCCESS;
}

namespace {
// Starts the receive of a matched message into request *request (MPI_Mrecv/Imrecv).
int start_mrecv(const char* fn, void* buf, int count, MPI_Datatype datatype, MPI_Message* message,
                MPI_Request* request) {
  Rank* r = current_rank();
  P2p& p = r->p2p();
  if (*message == MPI_MESSAGE_NO_PROC) {
    *message = MPI_MESSAGE_NULL;
    Comm* world = comm_get(MPI_COMM_WORLD);
    TypeFacts f;
    type_facts(MPI_BYTE, f);
    return irecv_with(r, buf, count, datatype, f, MPI_PROC_NULL, 0, *world, Ctx::P2P, request);
  }
  MPI_Comm comm = MPI_COMM_NULL;
  void* msg = p.take_matched(*message, &comm);
  if (!msg) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "message handle %d names no message taken by MPI_Mprobe/MPI_Improbe (already received?)", *message);
  Comm* c = comm_get(comm);
  TypeFacts f;
  if (int rc = check_buffer(comm, fn, c, buf, count, datatype, f)) {
    *message = p.keep_matched(msg, comm);  // still the program's to receive
    return rc;
  }
  *message = MPI_MESSAGE_NULL;
  return irecv_with(r, buf, count, datatype, f, wire(msg).src, wire(msg).tag, *c, Ctx::P2P, request, msg);
}
}  // namespace

int PMPI_Imrecv(void* buf, int count, MPI_Datatype datatype, MPI_Message* message, MPI_Request* request) {
  return start_mrecv("MPI_Imrecv", buf, count, datatype, message, request);
}

int PMPI_Mrecv(void* buf, int count, MPI_Datatype datatype, MPI_Message* message, MPI_Status* status) {
  MPI_Request h;
  if (int rc = start_mrecv("MPI_Mrecv", buf, count, datatype, message, &h)) return rc;
  P2p& p = current_rank()->p2p();
  wait_one(p, h);
  const MPI_Comm comm = p.req(h).comm;
  MPI_Status st;
  const int err = finish(p, &h, &st);
  status_out(status, st);
  return err ? status_error("MPI_Mrecv", comm, st) : MPI_SUCCESS;
}

int PMPI_Get_count(const MPI_Status* status, MPI_Datatype datatype, int* count) {
  if (int rc = check_committed(MPI_COMM_WORLD, "MPI_Get_count", "datatype", datatype)) return rc;
  const std::size_t size = type_size(datatype);
  const auto bytes = static_cast<std::size_t>(status->ucharm_bytes);
  if (size == 0) *count = bytes == 0 ? 0 : MPI_UNDEFINED;
  else *count = bytes % size || bytes / size > INT_MAX ? MPI_UNDEFINED : static_cast<int>(bytes / size);
  return MPI_SUCCESS;
}

int PMPI_Get_elements(const MPI_Status* status, MPI_Datatype datatype, int* count) {
  if (int rc = check_committed(MPI_COMM_WORLD, "MPI_Get_elements", "datatype", datatype)) return rc;
  long long n = type_basic_elements(datatype, static_cast<std::size_t>(status->ucharm_bytes));
  *count = n < 0 || n > INT_MAX ? MPI_UNDEFINED : static_cast<int>(n);  // MPI_Get_elements_x: all of it
  return MPI_SUCCESS;
}

int PMPI_Status_set_elements(MPI_Status* status, MPI_Datatype datatype, int count) {
  return PMPI_Status_set_elements_x(status, datatype, count);  // datatype/queries.cpp
}

}  // extern "C"
#pragma GCC visibility pop
