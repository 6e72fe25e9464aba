// device: every PE sends many buffers (0 B to 16 MiB) to the next PE with CmiSendDevice
// and tells it the tags in one host message; the receiver posts CmiRecvDevice for each.
#include "common.h"

namespace testprog::device {

const std::vector<std::size_t> kSizes = {0, 1, 8, 4096, 32769, 1 << 20, 16 << 20, 100, 7};
struct Entry { std::uint64_t size, tag; };
int h_meta, h_sent, h_got, h_report;
std::vector<Buf> out, in;
int sends_left = 0, recvs_left = 0, reports = 0, from = 0;

void maybe_report() {
  if (sends_left == 0 && recvs_left == 0) {
    sends_left = -1;
    CmiSyncSendAndFree(0, msg_size<int>(), make_msg(h_report, 0));
  }
}
void sent(void* msg) { CmiFree(msg); --sends_left; maybe_report(); }
void got(void* msg) {
  int i = payload<int>(msg);
  CmiFree(msg);
  const Buf& b = in[static_cast<std::size_t>(i)];
  if (!matches(b, static_cast<std::uint64_t>(from), b.size()))
    CmiAbort("device: buffer %d (%zu bytes) from PE %d corrupted", i, b.size(), from);
  --recvs_left;
  maybe_report();
}
void meta(void* msg) {
  from = CmiMsgSourcePe(msg);
  const auto* e = reinterpret_cast<const Entry*>(CmiMsgPayload(msg));
  const std::size_t n = (CmiMsgSize(msg) - CmiMsgHeaderSizeBytes) / sizeof(Entry);
  in.clear();
  in.resize(n);
  recvs_left = static_cast<int>(n);
  for (std::size_t i = 0; i < n; ++i) {
    in[i].resize(e[i].size);
    CmiRecvDevice(in[i].data(), in[i].size(), e[i].tag, make_msg(h_got, static_cast<int>(i)));
  }
  CmiFree(msg);
}
void report(void* msg) {
  CmiFree(msg);
  if (++reports == CmiNumPes()) {
    CmiPrintf("device ok\n");
    CmiExit(0);
  }
}
void start(const Args& a) {
  h_meta = CmiRegisterHandler(meta);
  h_sent = CmiRegisterHandler(sent);
  h_got = CmiRegisterHandler(got);
  h_report = CmiRegisterHandler(report);
  const int to = (CmiMyPe() + 1) % CmiNumPes();
  std::vector<Entry> entries;
  out.clear();
  out.resize(kSizes.size());
  sends_left = static_cast<int>(kSizes.size());
  for (std::size_t i = 0; i < kSizes.size(); ++i) {
    out[i].resize(kSizes[i]);
    fill(out[i], static_cast<std::uint64_t>(CmiMyPe()), kSizes[i]);
    CmiDeviceBuffer b{out[i].data(), out[i].size(), 0};
    if (a.cuda && CmiGetMemoryType(out[i].data()) != CmiMemoryType::Cuda)
      CmiAbort("device: cudaMalloc'd buffer %zu not recognised as CUDA memory", i);
    CmiSendDevice(to, b, make_msg(h_sent, 0));
    entries.push_back({kSizes[i], b.tag});
  }
  std::size_t bytes = CmiMsgHeaderSizeBytes + entries.size() * sizeof(Entry);
  void* m = CmiAlloc(bytes);
  std::memcpy(CmiMsgPayload(m), entries.data(), entries.size() * sizeof(Entry));
  CmiSetHandler(m, h_meta);
  CmiSyncSendAndFree(to, bytes, m);
}

}  // namespace testprog::device
