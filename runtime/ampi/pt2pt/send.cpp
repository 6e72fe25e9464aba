// MPI_Send and MPI_Recv in every mode (standard, ready, synchronous, buffered), blocking and
// nonblocking, Sendrecv(_replace), and the buffer of buffered sends.
#include "pt2pt/pt2pt.h"
#include "pt2pt/status.h"
#include "pt2pt/wire.h"
#include "checks.h"
#include "rank.h"

using namespace ampi;
using namespace ampi::pt2pt;

namespace ampi::pt2pt {
int check_buffer(MPI_Comm comm, const char* fn, Comm* c, const void* buf, int count, MPI_Datatype t, TypeFacts& f) {
  // The common checks (checks.h) run only to report a failure: this is every send's path.
  if (!c) [[unlikely]] return bad_comm(comm, fn);
  if (count < 0) [[unlikely]] return check_count(comm, fn, "count", count);
  if (!type_facts(t, f) || (t >= UCHARM_MPI_PREDEFINED_TYPES && type_freed(t))) [[unlikely]] {
    const int rc = check_committed(comm, fn, "datatype", t);
    return rc ? rc : error(comm, MPI_ERR_TYPE, fn, "invalid datatype %s", type_name(t).c_str());
  }
  if (count > 0 && !buf && f.size > 0 && f.lb == 0)
    return error(comm, MPI_ERR_BUFFER, fn, "buffer is NULL with count %d", count);
  return MPI_SUCCESS;
}

int check_send(const char* fn, const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
               Comm*& c, TypeFacts& f) {
  c = comm_get(comm);
  if (int rc = check_buffer(comm, fn, c, buf, count, t, f)) return rc;
  if (dest != MPI_PROC_NULL && (dest < 0 || dest >= c->size()))
    return error(comm, MPI_ERR_RANK, fn, "destination rank %d is out of range [0, %d)", dest, c->size());
  if (tag < 0 || tag > UCHARM_MPI_TAG_UB) return error(comm, MPI_ERR_TAG, fn, "invalid tag %d", tag);
  return MPI_SUCCESS;
}

int check_recv(const char* fn, const void* buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm,
               Comm*& c, TypeFacts& f) {
  c = comm_get(comm);
  if (int rc = check_buffer(comm, fn, c, buf, count, t, f)) return rc;
  if (src != MPI_PROC_NULL && src != MPI_ANY_SOURCE && (src < 0 || src >= c->size()))
    return error(comm, MPI_ERR_RANK, fn, "source rank %d is out of range [0, %d)", src, c->size());
  if (tag != MPI_ANY_TAG && (tag < 0 || tag > UCHARM_MPI_TAG_UB))
    return error(comm, MPI_ERR_TAG, fn, "invalid tag %d", tag);
  return MPI_SUCCESS;
}

// The standard and ready modes are one send here (a ready send's receive is posted by
// definition). The buffered mode always copies the data into the message, whatever its
// size: a buffered send must complete without the receiver.
int checked_send(const char* fn, const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
                 bool buffered = false) {
  Comm* c;
  TypeFacts f;
  if (int rc = check_send(fn, buf, count, t, dest, tag, comm, c, f)) [[unlikely]] return rc;
  if (dest != MPI_PROC_NULL && inline_send_ok(buf, count, f, *c, dest)) [[likely]] {  // buffered: copied now
    send_inline(current_rank(), static_cast<const char*>(buf) + f.lb, static_cast<std::size_t>(count) * f.size, dest,
                tag, *c, Ctx::P2P, !buffered);
    return MPI_SUCCESS;
  }
  if (!buffered || dest == MPI_PROC_NULL) return send_with(current_rank(), buf, count, t, f, dest, tag, *c, Ctx::P2P);
  start_send(current_rank(), buf, count, t, f, dest, tag, *c, Ctx::P2P, 0, 0, count > 0 && is_device(buf), false);
  return MPI_SUCCESS;
}
int checked_isend(const char* fn, const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
                  MPI_Request* request, bool buffered = false) {
  Comm* c;
  TypeFacts f;
  if (int rc = check_send(fn, buf, count, t, dest, tag, comm, c, f)) [[unlikely]] return rc;
  if (!buffered || dest == MPI_PROC_NULL) return isend_with(current_rank(), buf, count, t, f, dest, tag, *c, Ctx::P2P, request);
  P2p& p = current_rank()->p2p();
  MPI_Request h = p.alloc(ReqKind::Send);
  empty_status(&p.req(h).status);
  start_send(current_rank(), buf, count, t, f, dest, tag, *c, Ctx::P2P, 0, 0, count > 0 && is_device(buf), false);
  p.mark_complete(h);
  *request = h;
  return MPI_SUCCESS;
}

}  // namespace ampi::pt2pt

namespace ampi {
void request_set_comm(MPI_Request h, MPI_Comm comm) { current_rank()->p2p().req(h).comm = comm; }
}  // namespace ampi

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Send(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return checked_send("MPI_Send", buf, count, datatype, dest, tag, comm);
}

int PMPI_Rsend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return checked_send("MPI_Rsend", buf, count, datatype, dest, tag, comm);
}

int PMPI_Bsend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  return checked_send("MPI_Bsend", buf, count, datatype, dest, tag, comm, true);
}

int PMPI_Ssend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  Comm* c;
  TypeFacts f;
  if (int rc = check_send("MPI_Ssend", buf, count, datatype, dest, tag, comm, c, f)) return rc;
  MPI_Request h;
  ampi::issend(buf, count, datatype, dest, tag, *c, Ctx::P2P, &h);
  return wait_all(1, &h, nullptr);
}

int PMPI_Isend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request* request) {
  return checked_isend("MPI_Isend", buf, count, datatype, dest, tag, comm, request);
}

int PMPI_Irsend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                MPI_Request* request) {
  return checked_isend("MPI_Irsend", buf, count, datatype, dest, tag, comm, request);
}

int PMPI_Ibsend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                MPI_Request* request) {
  return checked_isend("MPI_Ibsend", buf, count, datatype, dest, tag, comm, request, true);
}

int PMPI_Issend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                MPI_Request* request) {
  Comm* c;
  TypeFacts f;
  if (int rc = check_send("MPI_Issend", buf, count, datatype, dest, tag, comm, c, f)) return rc;
  return ampi::issend(buf, count, datatype, dest, tag, *c, Ctx::P2P, request);
}

int PMPI_Recv(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status* status) {
  Comm* c;
  TypeFacts f;
  if (int rc = check_recv("MPI_Recv", buf, count, datatype, source, tag, comm, c, f)) [[unlikely]] return rc;
  MPI_Status st;
  if (recv_with(current_rank(), buf, count, datatype, f, source, tag, *c, Ctx::P2P, &st) != MPI_SUCCESS) [[unlikely]] {
    status_out(status, st);
    return status_error("MPI_Recv", comm, st);
  }
  status_out(status, st);
  return MPI_SUCCESS;
}

int PMPI_Irecv(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
               MPI_Request* request) {
  Comm* c;
  TypeFacts f;
  if (int rc = check_recv("MPI_Irecv", buf, count, datatype, source, tag, comm, c, f)) [[unlikely]] return rc;
  Rank* r = current_rank();
  const int rc = irecv_with(r, buf, count, datatype, f, source, tag, *c, Ctx::P2P, request);
  if (datatype >= UCHARM_MPI_PREDEFINED_TYPES) {  // still pending: the program may free the type now
    Request& q = r->p2p().req(*request);
    if (!q.complete) {
      type_retain(datatype);
      q.holds_type = true;
    }
  }
  return rc;
}

int PMPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  Comm* c;
  TypeFacts sf, rf;
  if (int rc = check_send("MPI_Sendrecv", sendbuf, sendcount, sendtype, dest, sendtag, comm, c, sf)) return rc;
  if (int rc = check_recv("MPI_Sendrecv", recvbuf, recvcount, recvtype, source, recvtag, comm, c, rf)) return rc;
  MPI_Request r[2];
  Rank* rank = current_rank();
  irecv_with(rank, recvbuf, recvcount, recvtype, rf, source, recvtag, *c, Ctx::P2P, &r[0]);
  isend_with(rank, sendbuf, sendcount, sendtype, sf, dest, sendtag, *c, Ctx::P2P, &r[1]);
  MPI_Status st[2];
  wait_all(2, r, st);
  status_out(status, st[0]);
  return status_error("MPI_Sendrecv", comm, st[0]);
}

int PMPI_Sendrecv_replace(void* buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source,
                          int recvtag, MPI_Comm comm, MPI_Status* status) {
  Comm* c;
  TypeFacts f;
  if (int rc = check_send("MPI_Sendrecv_replace", buf, count, datatype, dest, sendtag, comm, c, f)) return rc;
  if (int rc = check_recv("MPI_Sendrecv_replace", buf, count, datatype, source, recvtag, comm, c, f)) return rc;
  // The outgoing data must not be overwritten by the incoming: a send copied into its
  // message is safe; one that goes as a transfer (device or large host data) would only
  // leave once the peer receives, and the peer may be waiting for us the same way, so it is
  // sent from a packed host copy instead.
  MPI_Request r[2];
  const bool on_device = count > 0 && is_device(buf);
  std::vector<char> copy;
  if (goes_direct(count, f, on_device)) {
    copy.resize(static_cast<std::size_t>(count) * f.size);
    if (on_device) copy_any(copy.data(), static_cast<const char*>(buf) + f.lb, copy.size());
    else type_pack(buf, count, datatype, copy.data());
    ampi::isend(copy.data(), static_cast<int>(copy.size()), MPI_BYTE, dest, sendtag, *c, Ctx::P2P, &r[1]);
  } else {
    ampi::isend(buf, count, datatype, dest, sendtag, *c, Ctx::P2P, &r[1]);
  }
  ampi::irecv(buf, count, datatype, source, recvtag, *c, Ctx::P2P, &r[0]);
  MPI_Status st[2];
  wait_all(2, r, st);
  status_out(status, st[0]);
  return status_error("MPI_Sendrecv_replace", comm, st[0]);
}

// Buffered sends never need the program's buffer (the runtime copies the data into its
// messages), but the buffer is kept so that MPI_Buffer_detach hands it back, as MPI says.
int PMPI_Buffer_attach(void* buffer, int size) {
  const char* fn = "MPI_Buffer_attach";
  if (size < 0) return error(MPI_COMM_WORLD, MPI_ERR_BUFFER, fn, "size is negative (%d)", size);
  if (size > 0 && !buffer) return null_arg(MPI_COMM_WORLD, fn, "buffer");
  Rank::BsendBuffer& b = current_rank()->bsend_buffer;
  if (b.attached)
    return error(MPI_COMM_WORLD, MPI_ERR_BUFFER, fn, "a buffer is already attached (detach it first)");
  b = Rank::BsendBuffer{buffer, size, true};
  return MPI_SUCCESS;
}

int PMPI_Buffer_detach(void* buffer_addr, int* size) {
  const char* fn = "MPI_Buffer_detach";
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "buffer_addr", buffer_addr)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "size", size)) return rc;
  Rank::BsendBuffer& b = current_rank()->bsend_buffer;
  *static_cast<void**>(buffer_addr) = b.attached ? b.buffer : nullptr;
  *size = b.attached ? b.size : 0;
  b = Rank::BsendBuffer{};
  return MPI_SUCCESS;
}

}  // extern "C"
#pragma GCC visibility pop
