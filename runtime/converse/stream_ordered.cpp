// Stream-ordered transfers: operations enqueued on a CUDA stream, started by this PE when the
// stream reaches them, their completion written where the stream waits (converse.h,
// "Stream-ordered transfers"; the words and their polling are the machine layer's).
//
// While any point waits for its stream, one poller is registered: it asks the machine layer
// which streams have arrived. Channel transfers start inside the poller (no scheduler hop);
// their records are pooled Converse blocks, so nothing is allocated per operation.
//
// Device buffers are staged through pinned host buffers copied on the stream (machine.h,
// "Staging": UCX did not complete device transfers while a stream waited for the PE);
// UCHARM_STREAM_STAGING=0 hands them to UCX directly instead.
#include <ucharm/converse.h>
#include <ucharm/machine.h>

#include <cstdlib>
#include <cstring>

#include "converse_internal.h"

namespace lrts = ucharm::machine;

namespace ucharm::converse {
namespace {

int g_poller = 0;  // this PE's poller id while points wait; 0: none (non-SMP: one PE)

bool poll_streams(void*) {
  const int n = lrts::LrtsStreamPoll();
  if (lrts::LrtsStreamOpsWaiting() == 0 && g_poller) {
    CmiRemovePoller(g_poller);
    g_poller = 0;
  }
  return n > 0;
}

lrts::StreamOp to_lrts(CmiStreamOp op) { return {op.slot, op.seq}; }
CmiStreamOp from_lrts(lrts::StreamOp op) { return {op.slot, op.seq}; }

CmiStreamOp enqueue(void* stream, lrts::Completion on_ready, bool stream_waits) {
  const lrts::StreamOp op = lrts::LrtsStreamEnqueue(stream, on_ready, stream_waits);
  if (!g_poller) g_poller = CmiAddPoller(poll_streams, nullptr);
  return from_lrts(op);
}

void enqueue_msg(void* msg) {
  if (msg) CsdEnqueue(msg);
}

// A channel transfer waiting for its stream (a pooled CmiAlloc block; its header unused).
struct Transfer {
  bool send;
  int pe;
  void* ptr;
  std::size_t size;
  lrts::MemoryType mem;
  std::uint64_t tag;
  void* done_msg;
  lrts::StreamOp op;
  void* staged_send;  // a send's staging buffer, released once the data has left
};

bool staging_on() {
  static const bool on = [] {
    const char* e = std::getenv("UCHARM_STREAM_STAGING");
    return !(e && std::strcmp(e, "0") == 0);
  }();
  return on;
}

void transfer_done(void* ctx) {
  auto* t = static_cast<Transfer*>(ctx);
  if (t->staged_send) lrts::LrtsStreamStageRelease(t->staged_send);
  lrts::LrtsStreamOpDone(t->op);
  void* done = t->done_msg;
  CmiFree(t);
  enqueue_msg(done);
}

void transfer_ready(void* ctx) {
  auto* t = static_cast<Transfer*>(ctx);
  if (t->send) lrts::LrtsChannelSend(t->pe, t->ptr, t->size, t->mem, t->tag, {transfer_done, t});
  else lrts::LrtsChannelRecv(t->ptr, t->size, t->mem, t->tag, {transfer_done, t});
}

CmiStreamOp enqueue_transfer(bool send, int pe, void* ptr, std::size_t size, std::uint64_t tag, void* stream,
                             bool stream_waits, void* done_msg) {
  if (const char* why = CmiStreamOpsUnavailable())
    CmiAbort("%s on CUDA stream %p: %s", send ? "CmiChannelSendEnqueue" : "CmiChannelRecvEnqueue", stream, why);
  auto* t = static_cast<Transfer*>(CmiAlloc(sizeof(Transfer)));
  *t = Transfer{send, pe, ptr, size, lrts::LrtsMemoryType(ptr), tag, done_msg, {}, nullptr};
  void* dev = nullptr;  // a staged receive's device buffer
  if (t->mem == lrts::MemoryType::Cuda && size > 0 && staging_on()) {
    if (send) t->ptr = t->staged_send = lrts::LrtsStreamStageOut(stream, ptr, size);
    else {
      dev = ptr;
      t->ptr = lrts::LrtsStreamStageBuffer(size);
      stream_waits = true;  // the copy into the device buffer follows the receive
    }
    t->mem = lrts::MemoryType::Host;
  }
  // The record exists before the point: the poller may run it as soon as it is enqueued.
  const CmiStreamOp op = enqueue(stream, {transfer_ready, t}, stream_waits);
  t->op = to_lrts(op);
  if (dev) lrts::LrtsStreamStageIn(stream, dev, t->ptr, size);
  return op;
}

}  // namespace
}  // namespace ucharm::converse

using namespace ucharm::converse;

const char* CmiStreamOpsUnavailable() { return lrts::LrtsStreamOpsUnavailable(); }

CmiStreamOp CmiStreamEnqueue(void* stream, void* ready_msg, bool stream_waits) {
  if (const char* why = CmiStreamOpsUnavailable()) CmiAbort("CmiStreamEnqueue on CUDA stream %p: %s", stream, why);
  return enqueue(stream, {enqueue_msg, ready_msg}, stream_waits);
}

void CmiStreamOpDone(CmiStreamOp op) { lrts::LrtsStreamOpDone(to_lrts(op)); }
bool CmiStreamOpIsDone(CmiStreamOp op) { return lrts::LrtsStreamOpIsDone(to_lrts(op)); }

void CmiStreamEnqueueWait(void* stream, CmiStreamOp op) {
  if (const char* why = CmiStreamOpsUnavailable()) CmiAbort("CmiStreamEnqueueWait on CUDA stream %p: %s", stream, why);
  lrts::LrtsStreamWaitOp(stream, to_lrts(op));
}

std::size_t CmiStreamOpsOpen() { return lrts::LrtsStreamOpsOpen(); }

void* CmiStreamStageOut(void* stream, const void* dev, std::size_t size) {
  void* host = lrts::LrtsStreamStageOut(stream, dev, size);
  if (!g_poller) g_poller = CmiAddPoller(poll_streams, nullptr);
  return host;
}
void* CmiStreamStageBuffer(std::size_t size) { return lrts::LrtsStreamStageBuffer(size); }
void CmiStreamStageIn(void* stream, void* dev, void* host, std::size_t size) {
  lrts::LrtsStreamStageIn(stream, dev, host, size);
  if (!g_poller) g_poller = CmiAddPoller(poll_streams, nullptr);
}
void CmiStreamStageRelease(void* host) { lrts::LrtsStreamStageRelease(host); }

CmiStreamOp CmiChannelSendEnqueue(int pe, const void* ptr, std::size_t size, std::uint64_t tag, void* stream,
                                  bool stream_waits, void* done_msg) {
  if (pe < 0 || pe >= CmiNumPes())
    CmiAbort("CmiChannelSendEnqueue: destination PE %d is out of range [0, %d)", pe, CmiNumPes());
  return enqueue_transfer(true, pe, const_cast<void*>(ptr), size, tag, stream, stream_waits, done_msg);
}

CmiStreamOp CmiChannelRecvEnqueue(void* ptr, std::size_t size, std::uint64_t tag, void* stream, bool stream_waits,
                                  void* done_msg) {
  return enqueue_transfer(false, CmiMyPe(), ptr, size, tag, stream, stream_waits, done_msg);
}
