// Stream-ordered point-to-point (MPICH's MPIX extensions): MPIX_Stream objects naming a CUDA
// stream, communicators bound to one (MPIX_Stream_comm_create), and sends and receives
// enqueued on it: MPIX_Send/Recv_enqueue, MPIX_Isend/Irecv_enqueue + MPIX_Wait(all)_enqueue.
//
// An enqueued operation is a Converse stream point (converse.h, "Stream-ordered transfers"):
// when the stream reaches it, this PE runs the rank's ordinary nonblocking Isend/Irecv
// (matching, device transfers, everything as for MPI_Isend/MPI_Irecv) from a scheduler
// handler; a poller watches the request, and its completion releases the stream's wait. The
// blocking forms make the stream wait at once; the I-forms only when MPIX_Wait_enqueue is
// called. The host never waits for the GPU, and the rank's thread never blocks.
//
// Device buffers travel through pinned host buffers copied on the stream (converse.h,
// "Stream-ordered transfers": UCX did not complete device transfers while a stream waited
// for the PE): a send's data is copied out before its point, a receive's copied in after the
// stream's wait for it (MPIX_Recv_enqueue at once, MPIX_Irecv_enqueue at its
// MPIX_Wait_enqueue), the whole receive buffer. Contiguous datatypes only there.
// UCHARM_STREAM_STAGING=0 hands device buffers to the ordinary device path instead.
//
// An enqueued operation's request is not an ordinary MPI_Request: it is complete only through
// MPIX_Wait_enqueue / MPIX_Waitall_enqueue (MPI_Wait & co. report an invalid request).
// State is per process (non-SMP: one PE), as are CUDA streams; a rank with enqueued operations
// pending must not migrate (its stream belongs to this process).
#include "pt2pt/pt2pt.h"
#include "checks.h"
#include "heap.h"
#include "rank.h"

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

namespace ampi {
namespace {

using namespace pt2pt;

constexpr MPI_Request kEnqueueBase = 0x40000000;  // enqueued operations' request handles

struct StreamRec {
  void* cuda = nullptr;  // the cudaStream_t; nullptr: a stream object without one (MPI_INFO_NULL)
  bool live = false;
  int comms = 0;  // communicators bound to it
};

struct Op {
  Rank* rank = nullptr;
  bool send = false, blocking = false;
  bool started = false, complete = false, waited = false;
  void* buf = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int peer = 0, tag = 0;
  MPI_Comm comm = MPI_COMM_NULL;
  void* stream = nullptr;
  CmiStreamOp sop{};
  MPI_Request req = MPI_REQUEST_NULL;  // the ordinary request, once started
  MPI_Status status{};
  MPI_Status* status_out = nullptr;  // filled at completion (the caller keeps it valid)
  void* staged = nullptr;      // the pinned buffer a device buffer's data goes through
  void* stage_dev = nullptr;   // a staged receive: the device buffer it is copied into
  std::size_t stage_bytes = 0;
  bool stage_in_done = false;  // the copy into stage_dev is enqueued
};

bool staging_on() {
  static const bool on = [] {
    const char* e = std::getenv("UCHARM_STREAM_STAGING");
    return !(e && std::strcmp(e, "0") == 0);
  }();
  return on;
}

struct EnqueueState {
  std::vector<StreamRec> streams;  // MPIX_Stream = index + 1
  std::deque<Op> ops;              // stable addresses; op index = request - kEnqueueBase
  std::vector<int> free_ops;
  std::vector<int> watching;       // started, not complete
  int poller = 0;
  std::vector<std::pair<int, int>> keyvals;  // (world rank, its keyval for the stream attribute)
};
EnqueueState& st() {
  static EnqueueState s;  // this PE's (non-SMP: one per process)
  return s;
}

int stream_keyval_delete(MPI_Comm, int, void* value, void*) {
  const auto h = static_cast<int>(reinterpret_cast<std::intptr_t>(value));
  EnqueueState& s = st();
  if (h >= 1 && h <= static_cast<int>(s.streams.size())) --s.streams[static_cast<std::size_t>(h - 1)].comms;
  return MPI_SUCCESS;
}

// The calling rank's keyval for "this communicator's MPIX_Stream" (created on first use).
int stream_keyval() {
  EnqueueState& s = st();
  const int me = current_rank()->world_rank();
  for (auto& [r, k] : s.keyvals)
    if (r == me) return k;
  int k = MPI_KEYVAL_INVALID;
  PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, stream_keyval_delete, &k, nullptr);
  s.keyvals.emplace_back(me, k);
  return k;
}

// The stream bound to `comm` (0: none).
int stream_of(MPI_Comm comm) {
  void* v = nullptr;
  int flag = 0;
  if (PMPI_Comm_get_attr(comm, stream_keyval(), &v, &flag) != MPI_SUCCESS || !flag) return 0;
  return static_cast<int>(reinterpret_cast<std::intptr_t>(v));
}

StreamRec* stream_rec(MPIX_Stream h) {
  EnqueueState& s = st();
  if (h < 1 || h > static_cast<int>(s.streams.size())) return nullptr;
  StreamRec& r = s.streams[static_cast<std::size_t>(h - 1)];
  return r.live ? &r : nullptr;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// ---- starting and finishing enqueued operations ---------------------------------------------

void finish_op(int i);

bool watch_poll(void*) {
  EnqueueState& s = st();
  bool any = false;
  for (std::size_t k = 0; k < s.watching.size();) {
    const int i = s.watching[k];
    Op& o = s.ops[static_cast<std::size_t>(i)];
    if (!o.rank->p2p().req(o.req).complete) {
      ++k;
      continue;
    }
    s.watching[k] = s.watching.back();
    s.watching.pop_back();
    finish_op(i);
    any = true;
  }
  if (s.watching.empty() && s.poller) {
    CmiRemovePoller(s.poller);
    s.poller = 0;
  }
  return any;
}

void release_op(int i) {
  EnqueueState& s = st();
  Op& o = s.ops[static_cast<std::size_t>(i)];
  if (o.staged && o.stage_dev && !o.stage_in_done) CmiStreamStageRelease(o.staged);  // never waited for
  o = Op{};
  s.free_ops.push_back(i);
}

// The request completed: status out, the stream's waits pass.
void finish_op(int i) {
  Op& o = st().ops[static_cast<std::size_t>(i)];
  P2p& p = o.rank->p2p();
  o.status = p.req(o.req).status;
  p.release(o.req);
  o.req = MPI_REQUEST_NULL;
  o.complete = true;
  if (o.status_out) *o.status_out = o.status;
  if (o.send && o.staged) CmiStreamStageRelease(o.staged);  // the data has left
  CmiStreamOpDone(o.sop);
  if (o.blocking || o.waited) release_op(i);
}

// The stream has reached operation `i` (a scheduler handler, outside every rank's thread):
// it starts as the rank's MPI_Isend / MPI_Irecv would.
void op_ready(void* msg) {
  int i = 0;
  std::memcpy(&i, CmiMsgPayload(msg), sizeof i);
  CmiFree(msg);
  EnqueueState& s = st();
  Op& o = s.ops[static_cast<std::size_t>(i)];
  heap::RuntimeScope scope;
  Rank* const saved = g_running.rank;
  g_running.rank = o.rank;  // the rank's tables (communicators, datatypes)
  Comm* c = comm_get(o.comm);
  TypeFacts f;
  if (!c || !type_facts(o.type, f))
    CkAbort("AMPI: rank %d: the communicator or datatype of an MPIX_%s_enqueue was freed before its stream reached "
            "it",
            o.rank->world_rank(), o.send ? "Send" : "Recv");
  if (o.send) isend_with(o.rank, o.buf, o.count, o.type, f, o.peer, o.tag, *c, Ctx::P2P, &o.req);
  else irecv_with(o.rank, o.buf, o.count, o.type, f, o.peer, o.tag, *c, Ctx::P2P, &o.req);
  g_running.rank = saved;
  o.started = true;
  s.watching.push_back(i);
  if (!s.poller) s.poller = CmiAddPoller(watch_poll, nullptr);
  watch_poll(nullptr);  // completed at once (a small send, a matched receive)
}

// Checks and enqueues; *out: the operation's index.
int enqueue(const char* fn, bool send, bool blocking, const void* buf, int count, MPI_Datatype type, int peer,
            int tag, MPI_Comm comm, MPI_Status* status, int* out) {
  Comm* c;
  TypeFacts f;
  if (int rc = send ? check_send(fn, buf, count, type, peer, tag, comm, c, f)
                    : check_recv(fn, buf, count, type, peer, tag, comm, c, f))
    return rc;
  const int h = stream_of(comm);
  if (h == 0)
    return error(comm, MPI_ERR_COMM, fn,
                 "the communicator has no stream (make one with MPIX_Stream_comm_create from an MPIX_Stream)");
  StreamRec* sr = stream_rec(h);
  if (!sr) return error(comm, MPI_ERR_COMM, fn, "the communicator's MPIX_Stream %d was freed", h);
  if (!sr->cuda)
    return error(comm, MPI_ERR_COMM, fn,
                 "the communicator's MPIX_Stream has no CUDA stream (create it with info \"type\" = "
                 "\"cudaStream_t\" and \"value\" = the stream, MPIX_Info_set_hex)");
  if (const char* why = CmiStreamOpsUnavailable()) return error(comm, MPI_ERR_OTHER, fn, "%s", why);
  if (count > 0 && !f.contiguous && is_device(buf))
    return error(comm, MPI_ERR_TYPE, fn, "a device buffer with a non-contiguous datatype (%s) is not supported here",
                 type_name(type).c_str());
  if (static_cast<std::size_t>(count) * f.size > static_cast<std::size_t>(INT32_MAX) && is_device(buf))
    return error(comm, MPI_ERR_COUNT, fn, "a device buffer of more than 2^31-1 bytes is not supported here");
  EnqueueState& s = st();
  int i;
  if (!s.free_ops.empty()) {
    i = s.free_ops.back();
    s.free_ops.pop_back();
  } else {
    i = static_cast<int>(s.ops.size());
    s.ops.emplace_back();
  }
  Op& o = s.ops[static_cast<std::size_t>(i)];
  o = Op{};
  o.rank = current_rank();
  o.send = send;
  o.blocking = blocking;
  o.buf = const_cast<void*>(buf);
  o.count = count;
  o.type = type;
  o.peer = peer;
  o.tag = tag;
  o.comm = comm;
  o.stream = sr->cuda;
  o.status_out = status == MPI_STATUS_IGNORE ? nullptr : status;
  if (count > 0 && f.size > 0 && staging_on() && is_device(buf)) {
    const std::size_t bytes = static_cast<std::size_t>(count) * f.size;
    char* data = static_cast<char*>(o.buf) + f.lb;
    if (send) o.staged = CmiStreamStageOut(o.stream, data, bytes);
    else {
      o.staged = CmiStreamStageBuffer(bytes);
      o.stage_dev = data;
      o.stage_bytes = bytes;
    }
    o.buf = o.staged;
    o.count = static_cast<int>(bytes);
    o.type = MPI_BYTE;
  }
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof i);
  std::memcpy(CmiMsgPayload(m), &i, sizeof i);
  CmiSetHandler(m, ck::ConverseHandler<&op_ready>::handler());
  o.sop = CmiStreamEnqueue(o.stream, m, blocking);
  if (blocking && o.stage_dev) {
    CmiStreamStageIn(o.stream, o.stage_dev, o.staged, o.stage_bytes);
    o.stage_in_done = true;
  }
  *out = i;
  return MPI_SUCCESS;
}

int wait_enqueue(const char* fn, MPI_Request* request, MPI_Status* status) {
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "request", request)) return rc;
  if (*request == MPI_REQUEST_NULL) return MPI_SUCCESS;
  EnqueueState& s = st();
  const int i = *request - kEnqueueBase;
  Op* o = i >= 0 && i < static_cast<int>(s.ops.size()) ? &s.ops[static_cast<std::size_t>(i)] : nullptr;
  if (!o || !o->rank || o->rank != current_rank() || o->blocking || o->waited)
    return error(MPI_COMM_WORLD, MPI_ERR_REQUEST, fn,
                 "request %d is not a pending MPIX_Isend_enqueue / MPIX_Irecv_enqueue request of this rank",
                 *request);
  CmiStreamEnqueueWait(o->stream, o->sop);
  if (o->stage_dev && !o->stage_in_done) {  // a staged receive: its data reaches the device buffer now
    CmiStreamStageIn(o->stream, o->stage_dev, o->staged, o->stage_bytes);
    o->stage_in_done = true;
  }
  *request = MPI_REQUEST_NULL;
  if (o->complete) {
    if (status != MPI_STATUS_IGNORE) *status = o->status;
    release_op(i);
  } else {
    o->waited = true;
    o->status_out = status == MPI_STATUS_IGNORE ? nullptr : status;
  }
  return MPI_SUCCESS;
}

}  // namespace
}  // namespace ampi

using namespace ampi;
using namespace ampi::pt2pt;

#pragma GCC visibility push(default)
extern "C" {

int PMPIX_Info_set_hex(MPI_Info info, const char* key, const void* value, int value_size) {
  const char* fn = "MPIX_Info_set_hex";
  if (value_size < 0) return error(MPI_COMM_NULL, MPI_ERR_ARG, fn, "value_size is negative (%d)", value_size);
  if (value_size > 0 && !value) return null_arg(MPI_COMM_NULL, fn, "value");
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (int k = 0; k < value_size; ++k) {
    const unsigned char b = static_cast<const unsigned char*>(value)[k];
    hex += kDigits[b >> 4];
    hex += kDigits[b & 15];
  }
  return PMPI_Info_set(info, key, hex.c_str());
}

int PMPIX_Stream_create(MPI_Info info, MPIX_Stream* stream) {
  const char* fn = "MPIX_Stream_create";
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "stream", stream)) return rc;
  void* cuda = nullptr;
  if (info != MPI_INFO_NULL) {
    char type[64] = {};
    int flag = 0;
    if (int rc = PMPI_Info_get(info, "type", sizeof type - 1, type, &flag)) return rc;
    if (flag) {
      if (std::strcmp(type, "cudaStream_t") != 0)
        return error(MPI_COMM_WORLD, MPI_ERR_INFO_VALUE, fn,
                     "info \"type\" is \"%s\"; the stream type supported is \"cudaStream_t\"", type);
      char value[64] = {};
      if (int rc = PMPI_Info_get(info, "value", sizeof value - 1, value, &flag)) return rc;
      if (!flag)
        return error(MPI_COMM_WORLD, MPI_ERR_INFO_VALUE, fn,
                     "info \"type\" is \"cudaStream_t\" but there is no \"value\" (set it with "
                     "MPIX_Info_set_hex(info, \"value\", &stream, sizeof stream))");
      const std::size_t len = std::strlen(value);
      unsigned char bytes[sizeof(void*)] = {};
      bool ok = len == 2 * sizeof bytes;
      for (std::size_t k = 0; ok && k < sizeof bytes; ++k) {
        const int hi = hex_digit(value[2 * k]), lo = hex_digit(value[2 * k + 1]);
        ok = hi >= 0 && lo >= 0;
        bytes[k] = static_cast<unsigned char>(hi * 16 + lo);
      }
      if (!ok)
        return error(MPI_COMM_WORLD, MPI_ERR_INFO_VALUE, fn,
                     "info \"value\" \"%s\" is not a cudaStream_t in hexadecimal (%zu digits, as "
                     "MPIX_Info_set_hex writes)",
                     value, 2 * sizeof bytes);
      std::memcpy(&cuda, bytes, sizeof cuda);
#ifndef UCHARM_AMPI_CUDA
      return error(MPI_COMM_WORLD, MPI_ERR_OTHER, fn, "a cudaStream_t stream: AMPI was built without CUDA");
#endif
      if (const char* why = CmiStreamOpsUnavailable())
        return error(MPI_COMM_WORLD, MPI_ERR_OTHER, fn, "a cudaStream_t stream cannot be used here: %s", why);
    }
  }
  EnqueueState& s = st();
  s.streams.push_back(StreamRec{cuda, true, 0});
  *stream = static_cast<MPIX_Stream>(s.streams.size());
  return MPI_SUCCESS;
}

int PMPIX_Stream_free(MPIX_Stream* stream) {
  const char* fn = "MPIX_Stream_free";
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "stream", stream)) return rc;
  StreamRec* r = stream_rec(*stream);
  if (!r) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "%d is not an MPIX_Stream (or was freed)", *stream);
  if (r->comms > 0)
    return error(MPI_COMM_WORLD, MPI_ERR_OTHER, fn, "the stream is still bound to %d communicator(s): free them first",
                 r->comms);
  r->live = false;
  *stream = MPIX_STREAM_NULL;
  return MPI_SUCCESS;
}

int PMPIX_Stream_comm_create(MPI_Comm comm, MPIX_Stream stream, MPI_Comm* newcomm) {
  const char* fn = "MPIX_Stream_comm_create";
  if (int rc = check_ptr(comm, fn, "newcomm", newcomm)) return rc;
  if (stream != MPIX_STREAM_NULL && !stream_rec(stream))
    return error(comm, MPI_ERR_ARG, fn, "%d is not an MPIX_Stream (or was freed)", stream);
  if (int rc = PMPI_Comm_dup(comm, newcomm)) return rc;  // collective: other ranks of this PE run
  if (stream == MPIX_STREAM_NULL) return MPI_SUCCESS;
  StreamRec* r = stream_rec(stream);
  if (!r) return error(comm, MPI_ERR_ARG, fn, "MPIX_Stream %d was freed during the call", stream);
  ++r->comms;  // the attribute's delete function takes it back when the communicator goes
  return PMPI_Comm_set_attr(*newcomm, stream_keyval(), reinterpret_cast<void*>(static_cast<std::intptr_t>(stream)));
}

// One step of this PE's scheduler (MPICH's name): a rank that waits for its stream polls with
// it (cudaStreamQuery in a loop) instead of blocking the PE in cudaStreamSynchronize, which
// would keep the PE from starting the very operations the stream waits for.
int PMPIX_Stream_progress(MPIX_Stream stream) {
  if (stream != MPIX_STREAM_NULL && !stream_rec(stream))
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPIX_Stream_progress", "%d is not an MPIX_Stream (or was freed)",
                 stream);
  rank_poll();
  return MPI_SUCCESS;
}

int PMPIX_Send_enqueue(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
  int i;
  return enqueue("MPIX_Send_enqueue", true, true, buf, count, datatype, dest, tag, comm, MPI_STATUS_IGNORE, &i);
}

int PMPIX_Recv_enqueue(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                       MPI_Status* status) {
  int i;
  return enqueue("MPIX_Recv_enqueue", false, true, buf, count, datatype, source, tag, comm, status, &i);
}

int PMPIX_Isend_enqueue(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                        MPI_Request* request) {
  if (int rc = check_ptr(comm, "MPIX_Isend_enqueue", "request", request)) return rc;
  int i;
  if (int rc = enqueue("MPIX_Isend_enqueue", true, false, buf, count, datatype, dest, tag, comm, MPI_STATUS_IGNORE, &i))
    return rc;
  *request = kEnqueueBase + i;
  return MPI_SUCCESS;
}

int PMPIX_Irecv_enqueue(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                        MPI_Request* request) {
  if (int rc = check_ptr(comm, "MPIX_Irecv_enqueue", "request", request)) return rc;
  int i;
  if (int rc = enqueue("MPIX_Irecv_enqueue", false, false, buf, count, datatype, source, tag, comm, MPI_STATUS_IGNORE,
                       &i))
    return rc;
  *request = kEnqueueBase + i;
  return MPI_SUCCESS;
}

int PMPIX_Wait_enqueue(MPI_Request* request, MPI_Status* status) {
  return wait_enqueue("MPIX_Wait_enqueue", request, status);
}

int PMPIX_Waitall_enqueue(int count, MPI_Request array_of_requests[], MPI_Status* array_of_statuses) {
  const char* fn = "MPIX_Waitall_enqueue";
  if (int rc = check_count(MPI_COMM_WORLD, fn, "count", count)) return rc;
  if (count > 0)
    if (int rc = check_ptr(MPI_COMM_WORLD, fn, "array_of_requests", array_of_requests)) return rc;
  for (int k = 0; k < count; ++k)
    if (int rc = wait_enqueue(fn, &array_of_requests[k],
                              array_of_statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &array_of_statuses[k]))
      return rc;
  return MPI_SUCCESS;
}

}  // extern "C"
#pragma GCC visibility pop
