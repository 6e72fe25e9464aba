// stream (GPU): operations that name a CUDA stream wait for the work queued on it. Each PE
// sends to the next. The sender's stream holds a 100 ms host function, then the copy
// that writes the data, then the send; the receiver's stream holds a 100 ms host function,
// then a memset of the destination, then the receive. Without stream ordering the data
// leaves unwritten, or lands before the memset overwrites it. Both the GPU Messaging
// (CmiSendDevice) and the Channel path are checked, at 64 B and 4 MiB.
#include "common.h"

#include <unistd.h>

namespace testprog::stream {

#ifdef UCHARM_TEST_CUDA
constexpr std::size_t kSizes[] = {64, 4 << 20};
constexpr int kOps = 4;  // {device, channel} x kSizes
struct Op { std::uint64_t size, tag; };
int h_meta, h_got, h_sent, h_report;
cudaStream_t s_send, s_recv;
void* src[kOps];
void* dst[kOps];
char* pinned = nullptr;  // the pattern each sender writes
int left = 0, reports = 0;
void CUDART_CB hold(void*) { ::usleep(100 * 1000); }
void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) CmiAbort("stream: %s: %s", what, cudaGetErrorString(e));
}
char pattern(int pe, int op) { return static_cast<char>(0x10 + 16 * op + pe); }
void done_one() {
  if (--left == 0) CmiSyncSendAndFree(0, msg_size<int>(), make_msg(h_report, 0));
}
void got(void* msg) {
  const int i = payload<int>(msg);
  CmiFree(msg);
  const std::size_t n = kSizes[i % 2];
  // Work queued on the receive's stream after the completion sees the data.
  std::vector<char> h(n);
  check_cuda(cudaMemcpyAsync(h.data(), dst[i], n, cudaMemcpyDeviceToHost, s_recv), "copy back");
  check_cuda(cudaStreamSynchronize(s_recv), "synchronize");
  const int from = (CmiMyPe() + CmiNumPes() - 1) % CmiNumPes();
  for (std::size_t k = 0; k < n; ++k)
    if (h[k] != pattern(from, i))
      CmiAbort("stream: %s %zu B: byte %zu is %#x, expected %#x (%s)", i < 2 ? "device" : "channel", n, k,
               static_cast<unsigned>(static_cast<unsigned char>(h[k])), static_cast<unsigned>(pattern(from, i)),
               static_cast<unsigned char>(h[k]) == 0xEE ? "the receive did not wait for its stream"
                                                        : "the send did not wait for its stream");
  done_one();
}
void sent(void* msg) { CmiFree(msg); done_one(); }
// Queues, on `s`, a 100 ms hold and then `then`.
template <class F>
void after_hold(cudaStream_t s, F&& then) {
  check_cuda(cudaLaunchHostFunc(s, hold, nullptr), "cudaLaunchHostFunc");
  then();
}
void recv_into(int i, std::uint64_t tag, bool channel) {
  after_hold(s_recv, [&] { check_cuda(cudaMemsetAsync(dst[i], 0xEE, kSizes[i % 2], s_recv), "memset"); });
  void* done = make_msg(h_got, i);
  if (channel) CmiChannelRecv(dst[i], kSizes[i % 2], tag, done, s_recv);
  else CmiRecvDevice(dst[i], kSizes[i % 2], tag, done, s_recv);
}
void meta(void* msg) {
  const Op* ops = reinterpret_cast<const Op*>(CmiMsgPayload(msg));
  for (int i = 0; i < 2; ++i) recv_into(i, ops[i].tag, false);
  CmiFree(msg);
}
void report(void* msg) {
  CmiFree(msg);
  if (++reports == CmiNumPes()) {
    CmiPrintf("stream ok\n");
    CmiExit(0);
  }
}
void start(const Args&) {
  h_meta = CmiRegisterHandler(meta);
  h_got = CmiRegisterHandler(got);
  h_sent = CmiRegisterHandler(sent);
  h_report = CmiRegisterHandler(report);
  check_cuda(cudaStreamCreateWithFlags(&s_send, cudaStreamNonBlocking), "stream");
  check_cuda(cudaStreamCreateWithFlags(&s_recv, cudaStreamNonBlocking), "stream");
  check_cuda(cudaMallocHost(&pinned, kSizes[1] * kOps), "cudaMallocHost");
  for (int i = 0; i < kOps; ++i) {
    check_cuda(cudaMalloc(&src[i], kSizes[1]), "cudaMalloc");
    check_cuda(cudaMalloc(&dst[i], kSizes[1]), "cudaMalloc");
    check_cuda(cudaMemset(src[i], 0, kSizes[1]), "cudaMemset");
    std::memset(pinned + i * kSizes[1], pattern(CmiMyPe(), i), kSizes[1]);
  }
  left = 2 * kOps;  // each op's send and receive completion
  CmiBarrier();
  const int to = (CmiMyPe() + 1) % CmiNumPes();
  const int from = (CmiMyPe() + CmiNumPes() - 1) % CmiNumPes();
  // Channel receives first (their memsets queue behind the holds), then all sends.
  for (int i = 2; i < kOps; ++i) recv_into(i, CmiChannelTag(40 + static_cast<unsigned>(from), i), true);
  after_hold(s_send, [] {});
  Op ops[2];
  for (int i = 0; i < kOps; ++i) {
    const std::size_t n = kSizes[i % 2];
    check_cuda(cudaMemcpyAsync(src[i], pinned + i * kSizes[1], n, cudaMemcpyHostToDevice, s_send), "copy");
    if (i < 2) {
      CmiDeviceBuffer b{src[i], n, 0, s_send};
      CmiSendDevice(to, b, make_msg(h_sent, 0));
      ops[i] = {n, b.tag};
    } else {
      CmiChannelSend(to, src[i], n, CmiChannelTag(40 + static_cast<unsigned>(CmiMyPe()), i), make_msg(h_sent, 0),
                     s_send);
    }
  }
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof ops);
  std::memcpy(CmiMsgPayload(m), ops, sizeof ops);
  CmiSetHandler(m, h_meta);
  CmiSyncSendAndFree(to, CmiMsgHeaderSizeBytes + sizeof ops, m);
}
#else
void start(const Args&) { CmiAbort("stream needs a build with CUDA"); }
#endif

}  // namespace testprog::stream
