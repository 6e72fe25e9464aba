// Partitioned point-to-point (MPI-4.0 §4): MPI_Psend_init, MPI_Precv_init, MPI_Pready,
// MPI_Pready_range, MPI_Pready_list, MPI_Parrived; MPI_Start/Startall begin a round,
// Wait/Test end it, Request_free frees the request.
//
// One message per round: the send request is a persistent send of the whole buffer
// (partitions x count elements) that MPI_Pready of the last partition starts; the receive
// request is a persistent receive of the whole buffer posted at MPI_Start. So a partition is
// reported arrived (MPI_Parrived) when the whole message is in; the sender's and receiver's
// partition counts may differ (only the type signatures of the wholes must match). Device
// buffers go as any persistent send does (pt2pt/transfer.cpp: whole or in pieces).
//
// The message travels on the communicator's collective context under a negative tag that no
// collective and no program uses: the k-th partitioned send of a rank to a peer with a given
// tag matches the peer's k-th partitioned receive from it with that tag (MPI-4.0 §4.2.1:
// in the order of the init calls, whatever order the rounds start in), so k is in the tag:
// INT_MIN + (k mod 2047) * 2^20 + (tag mod 2^20). Two pairs could mix only with 2047 pairs of
// one peer and tag alive at once, or tags equal modulo 2^20 initialized in different orders.
#include "pt2pt/pt2pt.h"
#include "checks.h"
#include "rank.h"

#include <climits>
#include <vector>

using namespace ampi;
using namespace ampi::pt2pt;

namespace {
constexpr int kTagBits = 20, kPairMod = 2047;

struct Part {
  int partitions = 0;
  MPI_Count per = 0;  // elements of the type per partition
  int user_tag = 0;
  int left = 0;       // a send's partitions not marked ready in this round
  std::vector<std::uint8_t> ready;
};

Part& part_of(Request& q) { return *static_cast<Part*>(q.ext); }

int wire_tag(P2p& p, std::uint32_t context, int peer, int tag, bool send) {
  const int low = tag & ((1 << kTagBits) - 1);
  std::uint16_t& n = p.part_pairs[P2p::PartKey{context, peer, low, send}];
  const int k = n;
  n = static_cast<std::uint16_t>((n + 1) % kPairMod);
  return INT_MIN + (k << kTagBits) + low;
}

int init(const char* fn, bool send, const void* buf, int partitions, MPI_Count count, MPI_Datatype t, int peer,
         int tag, MPI_Comm comm, MPI_Request* request) {
  if (int e = check_ptr(comm, fn, "request", request)) return e;
  if (partitions < 0) return error(comm, MPI_ERR_ARG, fn, "partitions is negative (%d)", partitions);
  if (count < 0) return error(comm, MPI_ERR_COUNT, fn, "count is negative (%lld)", static_cast<long long>(count));
  const MPI_Count total = count * partitions;
  if (partitions > 0 && (total / partitions != count || total > INT_MAX))
    return error(comm, MPI_ERR_COUNT, fn, "partitions x count = %d x %lld elements: more than %d are not supported",
                 partitions, static_cast<long long>(count), INT_MAX);
  if (!send && (peer == MPI_ANY_SOURCE || tag == MPI_ANY_TAG))
    return error(comm, peer == MPI_ANY_SOURCE ? MPI_ERR_RANK : MPI_ERR_TAG, fn,
                 "a partitioned receive takes no MPI_ANY_SOURCE or MPI_ANY_TAG");
  Comm* c;
  TypeFacts f;
  const int n = static_cast<int>(total);
  if (int rc = send ? check_send(fn, buf, n, t, peer, tag, comm, c, f) : check_recv(fn, buf, n, t, peer, tag, comm, c, f))
    return rc;
  P2p& p = current_rank()->p2p();
  const MPI_Request h = p.alloc(send ? ReqKind::Send : ReqKind::Recv);
  Request& q = p.req(h);
  q.persistent = true;
  q.buf = const_cast<void*>(buf);
  q.sbuf = buf;
  q.count = n;
  q.type = t;
  q.peer = peer;
  q.tag = peer == MPI_PROC_NULL ? tag : wire_tag(p, c->context, peer, tag, send);
  q.comm = comm;
  empty_status(&q.status);
  if (t >= UCHARM_MPI_PREDEFINED_TYPES) {  // the program may free the type before Start
    type_retain(t);
    q.holds_type = true;
  }
  auto* part = new Part;
  part->partitions = partitions;
  part->per = count;
  part->user_tag = tag;
  part->ready.assign(send ? static_cast<std::size_t>(partitions) : 0, 0);
  q.ext_kind = ReqExtKind::Partitioned;
  q.ext = part;
  *request = h;
  return MPI_SUCCESS;
}

// The partitioned send request h, active; else the error.
int active_send(P2p& p, MPI_Request h, const char* fn, Request** out) {
  if (h == MPI_REQUEST_NULL || !p.valid(h) || p.req(h).ext_kind != ReqExtKind::Partitioned)
    return error(MPI_COMM_WORLD, MPI_ERR_REQUEST, fn, "request %d is not a partitioned request", h);
  Request& q = p.req(h);
  if (q.kind != ReqKind::Send) return error(q.comm, MPI_ERR_REQUEST, fn, "request %d is a partitioned receive", h);
  if (!q.active) return error(q.comm, MPI_ERR_REQUEST, fn, "request %d is not active (MPI_Start it first)", h);
  *out = &q;
  return MPI_SUCCESS;
}

// Marks partition i ready; the whole buffer goes when the last one is.
int ready(Rank* r, MPI_Request h, Request& q, int i, const char* fn) {
  Part& part = part_of(q);
  if (i < 0 || i >= part.partitions)
    return error(q.comm, MPI_ERR_ARG, fn, "partition %d is out of range [0, %d)", i, part.partitions);
  if (part.ready[static_cast<std::size_t>(i)])
    return error(q.comm, MPI_ERR_ARG, fn, "partition %d is already marked ready in this round", i);
  part.ready[static_cast<std::size_t>(i)] = 1;
  if (--part.left > 0) return MPI_SUCCESS;
  Comm* c = comm_get(q.comm);
  if (!c) return error(q.comm, MPI_ERR_COMM, fn, "the request's communicator was freed");
  start_persistent_send(r, h, *c, Ctx::Coll);
  return MPI_SUCCESS;
}
}  // namespace

namespace ampi {

int part_start(MPI_Request h) {
  Rank* r = current_rank();
  P2p& p = r->p2p();
  Request& q = p.req(h);
  Comm* c = comm_get(q.comm);
  if (!c) return error(q.comm, MPI_ERR_COMM, "MPI_Start", "the request's communicator was freed");
  Part& part = part_of(q);
  q.active = true;
  q.complete = false;
  q.matched = false;
  empty_status(&q.status);
  if (q.kind == ReqKind::Recv) {
    start_persistent_recv(r, h, *c, Ctx::Coll);
    return MPI_SUCCESS;
  }
  std::fill(part.ready.begin(), part.ready.end(), 0);
  part.left = part.partitions;
  if (part.left == 0 || q.peer == MPI_PROC_NULL) start_persistent_send(r, h, *c, Ctx::Coll);
  return MPI_SUCCESS;
}

void part_drop(Request& q) { delete static_cast<Part*>(q.ext); }

void part_pup(PUP::er& p, Request& q) {
  if (p.isUnpacking()) q.ext = new Part;
  Part& part = part_of(q);
  p | part.partitions;
  p | part.per;
  p | part.user_tag;
  p | part.left;
  p | part.ready;
}

void part_status(const Request& q, MPI_Status* st) {
  if (st->MPI_SOURCE != MPI_PROC_NULL) st->MPI_TAG = static_cast<const Part*>(q.ext)->user_tag;
}

}  // namespace ampi

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Psend_init(const void* buf, int partitions, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                    MPI_Comm comm, MPI_Info, MPI_Request* request) {
  return init("MPI_Psend_init", true, buf, partitions, count, datatype, dest, tag, comm, request);
}

int PMPI_Precv_init(void* buf, int partitions, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                    MPI_Comm comm, MPI_Info, MPI_Request* request) {
  return init("MPI_Precv_init", false, buf, partitions, count, datatype, source, tag, comm, request);
}

int PMPI_Pready(int partition, MPI_Request request) {
  Rank* r = current_rank();
  Request* q = nullptr;
  if (int e = active_send(r->p2p(), request, "MPI_Pready", &q)) return e;
  return ready(r, request, *q, partition, "MPI_Pready");
}

int PMPI_Pready_range(int partition_low, int partition_high, MPI_Request request) {
  Rank* r = current_rank();
  Request* q = nullptr;
  if (int e = active_send(r->p2p(), request, "MPI_Pready_range", &q)) return e;
  if (partition_low > partition_high)
    return error(q->comm, MPI_ERR_ARG, "MPI_Pready_range", "partition_low %d is above partition_high %d",
                 partition_low, partition_high);
  for (int i = partition_low; i <= partition_high; ++i)
    if (int e = ready(r, request, r->p2p().req(request), i, "MPI_Pready_range")) return e;
  return MPI_SUCCESS;
}

int PMPI_Pready_list(int length, const int array_of_partitions[], MPI_Request request) {
  Rank* r = current_rank();
  Request* q = nullptr;
  if (int e = active_send(r->p2p(), request, "MPI_Pready_list", &q)) return e;
  if (length < 0) return error(q->comm, MPI_ERR_ARG, "MPI_Pready_list", "length is negative (%d)", length);
  if (length > 0 && !array_of_partitions) return null_arg(q->comm, "MPI_Pready_list", "array_of_partitions");
  for (int i = 0; i < length; ++i)
    if (int e = ready(r, request, r->p2p().req(request), array_of_partitions[i], "MPI_Pready_list")) return e;
  return MPI_SUCCESS;
}

int PMPI_Parrived(MPI_Request request, int partition, int* flag) {
  P2p& p = current_rank()->p2p();
  if (request == MPI_REQUEST_NULL || !p.valid(request) || p.req(request).ext_kind != ReqExtKind::Partitioned)
    return error(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Parrived", "request %d is not a partitioned request", request);
  Request& q = p.req(request);
  if (q.kind != ReqKind::Recv)
    return error(q.comm, MPI_ERR_REQUEST, "MPI_Parrived", "request %d is a partitioned send", request);
  if (int e = check_ptr(q.comm, "MPI_Parrived", "flag", flag)) return e;
  const int n = part_of(q).partitions;
  if (partition < 0 || partition >= n)
    return error(q.comm, MPI_ERR_ARG, "MPI_Parrived", "partition %d is out of range [0, %d)", partition, n);
  if (!q.active) {  // an inactive request: its last round is complete (MPI-4.0 §4.2.2)
    *flag = 1;
    return MPI_SUCCESS;
  }
  if (!q.complete) rank_poll();  // a polling loop lets the message come
  *flag = p.req(request).complete ? 1 : 0;
  return MPI_SUCCESS;
}

}  // extern "C"
#pragma GCC visibility pop
