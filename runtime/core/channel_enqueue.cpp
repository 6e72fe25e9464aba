// CkChannel's stream-ordered forms (send_enqueue / recv_enqueue): the transfer is enqueued
// on a CUDA stream through Converse (CmiChannelSendEnqueue / CmiChannelRecvEnqueue), with
// the channel's tags taken now, in call order, like send/recv's.
//
// Quiescence detection counts an enqueued send as sent when it is issued and as processed
// when the peer's receive completes, as for send/recv: the receive's completion message
// (below) does it, whether or not a callback was given.
#include "internal.h"

#include <cstring>

namespace ck {

namespace {

struct EnqueueDone {
  CkCallback cb;
  std::uint64_t bytes;
  bool received;
};

void enqueue_done_handler(void* msg) {
  EnqueueDone d;
  std::memcpy(&d, CmiMsgPayload(msg), sizeof d);
  CmiFree(msg);
  if (d.received) ++detail::core().processed;
  if (!d.cb.is_ignore()) d.cb.send(static_cast<std::size_t>(d.bytes));
}

void* done_msg(const CkCallback& cb, std::size_t bytes, bool received) {
  if (!received && cb.is_ignore()) return nullptr;  // nothing to run: no message
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(EnqueueDone));
  const EnqueueDone d{cb, bytes, received};
  std::memcpy(CmiMsgPayload(m), &d, sizeof d);
  CmiSetHandler(m, ConverseHandler<&enqueue_done_handler>::handler());
  return m;
}

}  // namespace

void CkChannel::send_enqueue(const void* ptr, std::size_t size, CUstream_st* stream, const CkCallback& done) {
  if (!end_) CkAbort("CkChannel::send_enqueue on a channel that is not open");
  std::uint64_t tag = 0;
  int pe = 0;
  if (!detail::channel_next_tag(*end_, true, tag, pe))
    CkAbort("CkChannel::send_enqueue before the peer end's id has arrived (ready() is false): open the channel "
            "earlier and let the peer's setup message arrive (e.g. start after a reduction), or use "
            "CkChannel::with_ids");
  ++detail::core().sent;  // processed when the peer's receive completes (QD)
  CmiChannelSendEnqueue(pe, ptr, size, tag, stream, true, done_msg(done, size, false));
}

void CkChannel::recv_enqueue(void* ptr, std::size_t size, CUstream_st* stream, const CkCallback& done) {
  if (!end_) CkAbort("CkChannel::recv_enqueue on a channel that is not open");
  std::uint64_t tag = 0;
  int pe = 0;
  detail::channel_next_tag(*end_, false, tag, pe);
  CmiChannelRecvEnqueue(ptr, size, tag, stream, true, done_msg(done, size, true));
}

void CkChannel::send_enqueue(const void* ptr, std::size_t size, CUstream_st* stream) {
  send_enqueue(ptr, size, stream, CkCallback::ignore());
}

void CkChannel::recv_enqueue(void* ptr, std::size_t size, CUstream_st* stream) {
  recv_enqueue(ptr, size, stream, CkCallback::ignore());
}

}  // namespace ck
