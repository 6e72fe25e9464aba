// Device windows against the limits, two PEs (element 0 on PE 0, element 1 on PE 1; PE p
// on GPU p % count, or every PE on GPU $DW_DEVICE), medians of alternating runs:
//   8 B one-way: kernel ping-pong with put_signal/wait (both kernels persistent); a raw
//   flag ping-pong on the same mapping (own code); the stream-ordered chain
//   (put_on_stream + signal_on_stream / wait_on_stream, the host never waits); the
//   event-chained cudaMemcpyPeerAsync chain in one process (PE 0 with both GPUs).
//   Bandwidth 1-256 MiB: a grid-wide kernel put, put_on_stream, cudaMemcpyPeerAsync.
//   ucharmrun -n 2 device_window_lat [iters=20000] [max MiB=256] [reps=5]
#include <ucharm/charm.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "device_window_lat.h"

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;
ck::readonly<int> numIters;
ck::readonly<long long> maxBytes;

namespace {
enum Phase : int { WindowPP, RawPP, StreamChain, PeerChain, BwPut, BwStream, BwPeer, kPhases };
const char* const kNames[kPhases] = {"kernel put_signal/wait (window)", "raw flag ping-pong (same mapping)",
                                     "stream-ordered put+signal/wait", "event-chained cudaMemcpyPeerAsync",
                                     "kernel put (grid)", "put_on_stream", "cudaMemcpyPeerAsync"};
constexpr std::size_t kRawOff = 4096;  // the raw ping-pong's word in each buffer
double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

struct Bench;

struct Main : ck::MainChare<Main> {
  struct Step {
    int phase;
    long long bytes;
  };
  ck::ArrayProxy<Bench> peers;
  std::vector<Step> steps;
  std::size_t at = 0;
  std::map<std::pair<int, long long>, std::vector<double>> results;

  explicit Main(ck::MainArgs a);
  void go() { next(); }
  void next();
  void result(double v) {
    results[{steps[at].phase, steps[at].bytes}].push_back(v);
    ++at;
    next();
  }
  static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  }
  void report() {
    CkPrintf("\n8 B one-way latency (us), median of %zu alternating runs [min .. max]\n",
             results[{WindowPP, 8}].size());
    for (int p : {WindowPP, RawPP, StreamChain, PeerChain}) {
      auto& v = results[{p, 8}];
      CkPrintf("  %-40s %8.3f  [%.3f .. %.3f]\n", kNames[p], median(v), *std::min_element(v.begin(), v.end()),
               *std::max_element(v.begin(), v.end()));
    }
    const double w = median(results[{WindowPP, 8}]), raw = median(results[{RawPP, 8}]);
    const double sc = median(results[{StreamChain, 8}]), pc = median(results[{PeerChain, 8}]);
    CkPrintf("  window / raw flag: %.2fx; stream-ordered / event chain: %.2fx\n", w / raw, sc / pc);
    CkPrintf("\nbandwidth GB/s (1e9 B/s), median of 3 alternating runs of 5 transfers\n");
    CkPrintf("  %10s %12s %12s %12s %10s %10s\n", "bytes", "kernel put", "put_on_strm", "MemcpyPeer", "put/peer",
             "strm/peer");
    for (long long b = 1 << 20; b <= *maxBytes; b *= 4) {
      const double k = median(results[{BwPut, b}]), s = median(results[{BwStream, b}]), m = median(results[{BwPeer, b}]);
      CkPrintf("  %10lld %12.1f %12.1f %12.1f %9.1f%% %9.1f%%\n", b, k, s, m, 100 * k / m, 100 * s / m);
    }
    CkExit(0);
  }
};

struct Bench : ck::ArrayElement<Bench> {
  ck::CkDeviceWindow win;
  void* buf = nullptr;
  void* src = nullptr;
  void* stream = nullptr;
  unsigned long long* ns = nullptr;
  int dev = 0, peer_dev = 0;
  unsigned long long next_flag = 0, next_raw = 0;

  Bench() {
    const int n = dwbench::device_count();
    if (n == 0) CkAbort("device_window_lat needs a CUDA device");
    const char* fixed = std::getenv("DW_DEVICE");
    dev = fixed ? std::atoi(fixed) : CkMyPe() % n;
    peer_dev = fixed ? dev : (CkMyPe() + 1) % n;
    dwbench::set_device(dev);
    buf = dwbench::device_alloc(static_cast<std::size_t>(*maxBytes));
    src = dwbench::device_alloc(static_cast<std::size_t>(*maxBytes));
    ns = static_cast<unsigned long long*>(dwbench::device_alloc(8));
    stream = dwbench::stream_create();
    win = ck::CkDeviceWindow(thisProxy[thisIndex], thisProxy[1 - thisIndex], 0, buf,
                             static_cast<std::size_t>(*maxBytes), ck::CkCallback::to<&Bench::mapped>(thisProxy[thisIndex]));
  }
  void mapped() {
    if (thisIndex == 0)
      CkPrintf("window mapped: GPU %d (PE %d) <-> GPU %d, %s, peer atomics %s\n", dev, CkMyPe(), peer_dev,
               win.same_process() ? "same process" : "CUDA IPC", win.device_handle().remote_atomics ? "yes" : "no");
    contribute(ck::CkCallback::to<&Main::go>(*mainProxy));
  }
  // Runs one measurement (blocking: the two elements are in two processes); element 0's
  // figure goes to the main chare (us one-way, or GB/s).
  void phase(int p, long long bytes) {
    const bool first = thisIndex == 0;
    const int iters = *numIters, warm = std::max(1, iters / 10), hops = std::min(iters, 2000);
    double r = 0;
    switch (p) {
      case WindowPP:
        dwbench::launch_window_pingpong(stream, win.device_handle(), first, warm, iters, next_flag, src, ns);
        next_flag += warm + iters;
        dwbench::stream_sync(stream);
        r = first ? dwbench::read_u64(ns) / 1e3 / (2.0 * iters) : 0;
        break;
      case RawPP:
        dwbench::launch_raw_pingpong(stream, win.device_handle(), kRawOff, first, warm, iters, next_raw, ns);
        next_raw += warm + iters;
        dwbench::stream_sync(stream);
        r = first ? dwbench::read_u64(ns) / 1e3 / (2.0 * iters) : 0;
        break;
      case StreamChain: {
        const double t0 = now_us();
        for (int i = 1; i <= hops; ++i) {
          const unsigned long long v = next_flag + i;
          if ((i & 1) == (first ? 1 : 0)) {  // this side sends hop i
            win.put_on_stream(stream, 0, src, 8);
            win.signal_on_stream(stream, v);
          } else {
            win.wait_on_stream(stream, v);
          }
        }
        next_flag += hops;
        dwbench::stream_sync(stream);
        r = first ? (now_us() - t0) / hops : 0;
        break;
      }
      case PeerChain:
        if (first) r = dwbench::peer_chain_us(dev, peer_dev, 8, hops);
        break;
      case BwPut:
        if (first) r = dwbench::kernel_put_gbs(stream, win.device_handle(), src, static_cast<std::size_t>(bytes), 5);
        break;
      case BwStream:
        if (first) {
          dwbench::Timer t = dwbench::timer_start(stream);
          for (int k = 0; k < 5; ++k) win.put_on_stream(stream, 0, src, static_cast<std::size_t>(bytes));
          r = bytes * 5.0 / (dwbench::timer_stop_ms(stream, t) * 1e6);
        }
        break;
      case BwPeer:
        if (first) r = dwbench::memcpy_peer_gbs(dev, peer_dev, static_cast<std::size_t>(bytes), 5);
        break;
    }
    contribute(r, ck::Reducer::max, ck::CkCallback::to<&Main::result>(*mainProxy));
  }
};

Main::Main(ck::MainArgs a) {
  mainProxy = thisProxy;
  numIters = a.argc > 1 ? std::atoi(a.argv[1]) : 20000;
  const long long max_mib = a.argc > 2 ? std::atoll(a.argv[2]) : 256;
  const int reps = a.argc > 3 ? std::atoi(a.argv[3]) : 5;
  maxBytes = std::max(1ll, max_mib) << 20;
  if (CkNumPes() != 2) CkAbort("device_window_lat runs on 2 PEs (ucharmrun -n 2)");
  for (int r = 0; r < reps; ++r)
    for (int p : {WindowPP, RawPP, StreamChain, PeerChain}) steps.push_back({p, 8});
  for (long long mib = 1; mib <= max_mib; mib *= 4)
    for (int r = 0; r < 3; ++r)
      for (int p : {BwPut, BwStream, BwPeer}) steps.push_back({p, mib << 20});
  peers = ck::ArrayProxy<Bench>::create(ck::dims(2), ck::Map::block);
}
void Main::next() {
  if (at < steps.size()) {
    peers.send<&Bench::phase>(steps[at].phase, steps[at].bytes);
    return;
  }
  report();
}
int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
