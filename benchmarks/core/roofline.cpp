// Message Roofline (seed 003) of the GPU paths between two PEs: for n messages per
// synchronization (1, 4, 16, 64) and message sizes B from 8 B to --max-bytes (8, then the
// powers of 4 from 16; n * B at most 256 MiB), the time of one synchronization: n messages
// of B bytes from PE 0 to PE 1 and the signal that tells the receiver they all arrived.
//
// WHAT IS TIMED. One-way = half of a ping-pong in which PE 1 answers with the same pattern
// (n messages of B bytes back, then its own synchronization), averaged over a step's
// rounds after a warm-up. The exception is cudaMemcpyPeerAsync, which has no peer process
// to answer: n copies on one stream, then cudaStreamSynchronize (the host's wait is part
// of the figure).
//   kernel   "device window: kernel put": one persistent kernel per side; per round n
//            ck::device::put (one block of 256 threads, Coop::Block; a grid of up to one
//            1024-thread block per SM for B >= 256 KiB, each block signal_add-ing its share),
//            one signal, and the peer's kernel waits, then answers. GPU time (globaltimer).
//   stream   "device window: put_on_stream": n put_on_stream + signal_on_stream, and
//            wait_on_stream for the answer; the peer wait_on_stream, then answers on its
//            stream. Every round is enqueued at once (the host never waits inside the
//            loop); CUDA events on PE 0's stream.
//   channel  "channel (tag path)": PE 1 has n receives posted (device buffers, message k
//            at offset k * B); when all n have completed it posts the next round's and
//            sends n back; PE 0 likewise. Wall clock.
//   memcpy   "cudaMemcpyPeerAsync": the copy-engine ceiling, in PE 0's process with both
//            GPUs (skipped with a note where both PEs use one GPU).
//   window   "one-sided put_notify (UCX)": ck::CkWindow, n put_notify (each message
//            notified: the window orders only a notified put's own data before its count),
//            the peer's on_notify(count + n) answers the same way. Wall clock.
//   flush    "one-sided put + flush + put_notify (UCX)": n - 1 puts, a flush, and the last
//            message as the one notified put (n = 1: that put alone); the peer's
//            on_notify(count + 1) answers the same way. Wall clock.
// Steps alternate (each repetition sweeps every size, n and path in turn); the figure is
// the median of --reps repetitions. A step runs about --target-ms of rounds (3 .. 1000;
// at most 20 where both PEs share a GPU, whose kernels time-slice without MPS).
//
//   ucharmrun -n 2 core_roofline [--csv FILE] [--max-bytes 64M] [--reps 5]
//                                [--paths kernel,stream,channel,memcpy,window,flush] [--mem cuda|host]
// PE p uses GPU p % count (RF_DEVICE=d: every PE on GPU d). Without a CUDA device it prints
// one "skipped" line and exits 0. --mem host: the channel and one-sided paths on host
// memory (no GPU needed). CSV: `path,msgs_per_sync,bytes,usec_per_sync`, for
// tools/message_roofline.py.
#include <ucharm/charm.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "../common/sizes.h"
#include "roofline.h"

namespace {

enum Path : int { kKernel, kStream, kChannel, kMemcpy, kWindow, kFlush, kPaths };
const char* const kKeys[kPaths] = {"kernel", "stream", "channel", "memcpy", "window", "flush"};
const char* path_name(int p, bool host) {
  static const char* const dev[kPaths] = {"device window: kernel put", "device window: put_on_stream",
                                          "channel (tag path)", "cudaMemcpyPeerAsync", "one-sided put_notify (UCX)",
                                          "one-sided put + flush + put_notify (UCX)"};
  static const char* const hst[kPaths] = {"", "", "channel (tag path) [host memory]", "",
                                          "one-sided put_notify (UCX) [host memory]",
                                          "one-sided put + flush + put_notify (UCX) [host memory]"};
  return host ? hst[p] : dev[p];
}
constexpr int kMsgsPerSync[] = {1, 4, 16, 64};
constexpr long long kMaxPerSync = 256ll << 20;  // n * B cap
constexpr long long kGridFrom = 256 << 10;      // kernel path: a grid from this message size
constexpr long long kBytesPerBlock = 64 << 10;  // ... with a block per this many bytes

struct Config {
  std::string mem = "cuda";
  int paths = 0;        // bit p: path p runs
  long long cap = 0;    // the largest n * B: each buffer's size
  double target_us = 5000;
  bool shared = false;  // both PEs on one GPU
  void pup(PUP::er& p) { p | mem; p | paths; p | cap; p | target_us; p | shared; }
};

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;
ck::readonly<Config> cfg;

// The GPU of PE `pe` and of the other PE (RF_DEVICE: all on one); stops on a bad RF_DEVICE.
void pick_devices(int pe, int count, int& dev, int& peer) {
  if (const char* fixed = std::getenv("RF_DEVICE")) {
    char* end = nullptr;
    const long d = std::strtol(fixed, &end, 10);
    if (end == fixed || *end || d < 0 || d >= count)
      CkAbort("roofline: RF_DEVICE=%s is not a device number below %d (the visible GPUs)", fixed, count);
    dev = peer = static_cast<int>(d);
    return;
  }
  dev = pe % count;
  peer = (pe + 1) % count;
}

// A buffer in GPU or host memory, freed with its owner.
struct Buffer {
  unsigned char* p = nullptr;
  bool dev = false;
  Buffer() = default;
  Buffer(std::size_t n, bool on_gpu) : dev(on_gpu) {
    p = static_cast<unsigned char*>(on_gpu ? rfbench::device_alloc(n) : std::calloc(n ? n : 1, 1));
    if (!p) CkAbort("roofline: cannot allocate %zu bytes of host memory", n);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer& operator=(Buffer&& o) noexcept {
    std::swap(p, o.p);
    std::swap(dev, o.dev);
    return *this;
  }
  ~Buffer() {
    if (dev) rfbench::device_free(p);
    else std::free(p);
  }
};

struct Bench;

struct Main : ck::MainChare<Main> {
  struct Step {
    int path, n;
    long long bytes;
    int iters, blocks;
  };
  ck::ArrayProxy<Bench> peers;
  std::string csv;
  long long max_bytes = 64ll << 20;
  int reps = 5;
  bool host = false;
  std::vector<long long> sizes;
  std::vector<Step> steps;
  std::size_t at = 0;
  std::map<std::tuple<int, int, long long>, std::vector<double>> results;
  std::vector<std::string> notes;

  explicit Main(ck::MainArgs a);
  void go(int max_blocks);  // every element is set up; the most blocks a kernel may use
  void next();
  void result(double us) {
    const Step& s = steps[at];
    results[{s.path, s.n, s.bytes}].push_back(us);
    if (++at % (steps.size() / static_cast<std::size_t>(reps)) == 0)
      CkPrintf("# repetition %zu of %d done\n", at / (steps.size() / static_cast<std::size_t>(reps)), reps);
    next();
  }
  // Rounds for a step: about target_us of an estimated round trip (10 us, 2 us per
  // message, 50 GB/s), so small messages get many and the largest a few.
  int iters_for(int n, long long bytes) const {
    const double est = 2 * (10 + n * (2 + static_cast<double>(bytes) / 50e3));
    const int hi = cfg->shared ? 20 : 1000;
    return std::clamp(static_cast<int>(cfg->target_us / est), 3, hi);
  }
  static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  }
  void report();
};

struct Bench : ck::ArrayElement<Bench> {
  Buffer src, dw_buf, ch_buf, win_buf, peer_dst;  // before the windows: they close first
  ck::CkDeviceWindow dwin;
  ck::CkChannel ch;
  ck::CkWindow win;
  void* stream = nullptr;
  std::uint64_t* ns = nullptr;  // kernel timing result (device memory)
  int dev = -1, peer_dev = -1;
  std::uint64_t flag = 0;   // device window: the flag value each side has reached
  std::uint64_t notes = 0;  // one-sided: notified puts received from the peer so far
  int per_round = 0;        // one-sided: notified puts per round (n, or 1 after a flush)
  // The running channel / one-sided step.
  int n = 0, warm = 0, rounds = 0, round = 0, got = 0;
  std::size_t bytes = 0;
  double t0 = 0;

  bool on(int p) const { return (cfg->paths >> p) & 1; }
  bool first() const { return thisIndex == 0; }
  Bench() {
    const bool gpu = cfg->mem == "cuda";
    const auto cap = static_cast<std::size_t>(cfg->cap);
    if (gpu) {
      const char* why = "";
      const int count = rfbench::device_count(&why);
      if (count == 0) CkAbort("roofline: PE %d sees no CUDA device (%s)", CkMyPe(), why);
      pick_devices(CkMyPe(), count, dev, peer_dev);
      rfbench::set_device(dev);
      stream = rfbench::stream_create();
      ns = static_cast<std::uint64_t*>(rfbench::device_alloc(sizeof *ns));
    }
    src = Buffer(cap, gpu);
    if (on(kChannel)) {
      ch_buf = Buffer(cap, gpu);
      ch = ck::CkChannel(thisProxy[thisIndex], thisProxy[1 - thisIndex], 0);
    }
    if (on(kWindow) || on(kFlush)) {
      win_buf = Buffer(cap, gpu);
      win = ck::CkWindow(thisProxy[thisIndex], thisProxy[1 - thisIndex], 1);
      win.expose(win_buf.p, cap);
    }
    if (on(kKernel) || on(kStream)) {
      dw_buf = Buffer(cap, gpu);
      dwin = ck::CkDeviceWindow(thisProxy[thisIndex], thisProxy[1 - thisIndex], 2, dw_buf.p, cap,
                                ck::CkCallback::to<&Bench::mapped>(thisProxy[thisIndex]));
    } else {
      thisProxy[thisIndex].send<&Bench::mapped>();
    }
  }
  // Set up: element 0 describes the pair; both tell the main chare how many blocks a
  // kernel may use (one without peer atomics; half the SMs where the GPU is shared).
  void mapped() {
    int blocks = 1;
    if (dwin.is_open() && dwin.device_handle().remote_atomics) {
      const int sms = rfbench::multiprocessors(dev);
      blocks = std::max(1, cfg->shared ? sms / 2 : sms);
    }
    if (first() && dev >= 0)
      CkPrintf("# PE 0 on GPU %d, PE 1 on GPU %d%s; device window: %s, peer atomics %s\n", dev, peer_dev,
               cfg->shared ? " (shared: kernels time-slice unless CUDA MPS runs)" : "",
               !dwin.is_open() ? "not used" : dwin.same_process() ? "same process" : "CUDA IPC",
               dwin.is_open() && dwin.device_handle().remote_atomics ? "yes" : "no");
    contribute(blocks, ck::Reducer::min, ck::CkCallback::to<&Main::go>(*mainProxy));
  }
  void finish(double us) { contribute(us, ck::Reducer::max, ck::CkCallback::to<&Main::result>(*mainProxy)); }

  // One step; element 0's figure (one-way us per synchronization) goes to the main chare.
  void phase(int path, int msgs, long long b, int iters, int blocks) {
    n = msgs;
    bytes = static_cast<std::size_t>(b);
    warm = std::max(1, iters / 10);
    rounds = warm + iters;
    round = got = 0;
    switch (path) {
      case kKernel: {
        const ck::DeviceWindowHandle h = dwin.device_handle();
        const int g = bytes >= static_cast<std::size_t>(kGridFrom)
                          ? static_cast<int>(std::clamp<long long>(b / kBytesPerBlock, 1, blocks))
                          : 1;
        rfbench::launch_put_pingpong(stream, h, first(), g, n, bytes, warm, iters, flag, src.p, ns);
        flag += static_cast<std::uint64_t>(g) * rounds;
        rfbench::stream_sync(stream);
        return finish(first() ? rfbench::read_u64(ns) / 1e3 / (2.0 * iters) : 0);
      }
      case kStream:
        return stream_step(iters);
      case kMemcpy:
        return finish(first() ? memcpy_step(iters) : 0);
      case kChannel:
        post_recvs();
        if (first()) send_round();
        return;
      case kWindow:
      case kFlush:
        per_round = path == kWindow ? n : 1;
        win.on_notify(notes + per_round, ck::CkCallback::to<&Bench::notified>(thisProxy[thisIndex]));
        if (first()) put_round();
        return;
    }
  }

  void stream_step(int iters) {
    void* e0 = rfbench::event_create();
    void* e1 = rfbench::event_create();
    for (int i = 1; i <= rounds; ++i) {
      const std::uint64_t v = flag + static_cast<std::uint64_t>(i);
      if (first() && i == warm + 1) rfbench::event_record(e0, stream);
      if (!first()) dwin.wait_on_stream(stream, v);
      for (int k = 0; k < n; ++k) dwin.put_on_stream(stream, k * bytes, src.p + k * bytes, bytes);
      dwin.signal_on_stream(stream, v);
      if (first()) dwin.wait_on_stream(stream, v);
    }
    flag += static_cast<std::uint64_t>(rounds);
    double us = 0;
    if (first()) {
      rfbench::event_record(e1, stream);
      us = rfbench::event_elapsed_us(e0, e1) / (2.0 * iters);
    }
    rfbench::stream_sync(stream);
    rfbench::event_destroy(e0);
    rfbench::event_destroy(e1);
    finish(us);
  }

  // In this process: a buffer on the other GPU, n copies to it, then the host waits.
  double memcpy_step(int iters) {
    if (!peer_dst.p) {
      rfbench::set_device(peer_dev);
      peer_dst = Buffer(static_cast<std::size_t>(cfg->cap), true);
      rfbench::set_device(dev);
      rfbench::enable_peer_access(peer_dev);
    }
    double start = 0;
    for (int i = 1; i <= rounds; ++i) {
      if (i == warm + 1) start = CkWallTimer();
      for (int k = 0; k < n; ++k)
        rfbench::memcpy_peer_async(peer_dst.p + k * bytes, peer_dev, src.p + k * bytes, dev, bytes, stream);
      rfbench::stream_sync(stream);
    }
    return (CkWallTimer() - start) * 1e6 / iters;
  }

  // ---- channel: n receives posted per round, n sends; the round ends when all n are in.
  void post_recvs() {
    for (int k = 0; k < n; ++k)
      ch.recv(ch_buf.p + k * bytes, bytes, ck::CkCallback::to<&Bench::received>(thisProxy[thisIndex]));
  }
  void send_round() {
    for (int k = 0; k < n; ++k) ch.send(src.p + k * bytes, bytes, ck::CkCallback::ignore());
  }
  void received(std::size_t) {
    if (++got < n) return;
    got = 0;
    ++round;
    if (!first()) {  // answer; the next round's receives are posted before the answer leaves
      if (round < rounds) post_recvs();
      send_round();
      if (round == rounds) finish(0);
      return;
    }
    if (round == warm) t0 = CkWallTimer();
    if (round == rounds) return finish((CkWallTimer() - t0) * 1e6 / (2.0 * (rounds - warm)));
    post_recvs();
    send_round();
  }

  // ---- one-sided: per round, n notified puts, or n - 1 puts, a flush and one notified
  // put; the peer's notification count says all arrived.
  void put_round() {
    if (per_round == n) {
      for (int k = 0; k < n; ++k) win.put_notify(k * bytes, src.p + k * bytes, bytes);
      return;
    }
    for (int k = 0; k + 1 < n; ++k) win.put(k * bytes, src.p + k * bytes, bytes);
    if (n > 1) win.flush(ck::CkCallback::to<&Bench::flushed>(thisProxy[thisIndex]));
    else flushed(0);
  }
  void flushed(std::size_t) {
    const std::size_t last = (n - 1) * bytes;
    win.put_notify(last, src.p + last, bytes);
  }
  void notified(std::uint64_t) {
    notes += static_cast<std::uint64_t>(per_round);
    ++round;
    const auto again = [this] {
      win.on_notify(notes + per_round, ck::CkCallback::to<&Bench::notified>(thisProxy[thisIndex]));
    };
    if (!first()) {
      if (round < rounds) again();
      put_round();
      if (round == rounds) finish(0);
      return;
    }
    if (round == warm) t0 = CkWallTimer();
    if (round == rounds) return finish((CkWallTimer() - t0) * 1e6 / (2.0 * (rounds - warm)));
    again();
    put_round();
  }
};

Main::Main(ck::MainArgs a) {
  mainProxy = thisProxy;
  Config c;
  std::string max_text = "64M", paths_text;
  double target_ms = 5;
  CLI::App app{"Message Roofline of the GPU paths between two PEs"};
  app.add_option("--csv", csv, "write the medians to this CSV file (path,msgs_per_sync,bytes,usec_per_sync)");
  app.add_option("--max-bytes", max_text, "largest message (suffix k or M; at least 8)");
  app.add_option("--reps", reps, "alternating repetitions; the figure is their median")->check(CLI::Range(1, 1000));
  app.add_option("--paths", paths_text, "comma-separated: kernel,stream,channel,memcpy,window,flush (default: all)");
  app.add_option("--mem", c.mem, "cuda, or host (the channel and one-sided paths only)")
      ->check(CLI::IsMember({"cuda", "host"}));
  app.add_option("--target-ms", target_ms, "about this long per step")->check(CLI::Range(0.1, 10000.0));
  try {
    app.parse(a.argc, a.argv);
    max_bytes = static_cast<long long>(ucharm::bench::parse_bytes(max_text));
  } catch (const CLI::ParseError& e) {
    CkExit(app.exit(e) == 0 ? 0 : 1);
  } catch (const std::exception&) {
    CkAbort("roofline: bad --max-bytes '%s' (a byte count, suffix k or M)", max_text.c_str());
  }
  if (max_bytes < 8) CkAbort("roofline: --max-bytes %lld is below the smallest message (8 B)", max_bytes);
  if (CkNumPes() != 2) CkAbort("roofline runs on 2 PEs (ucharmrun -n 2 core_roofline), not %d", CkNumPes());
  host = c.mem == "host";
  c.target_us = target_ms * 1e3;

  // Paths: the default, or the list given (each name checked against the memory kind).
  const int host_paths = (1 << kChannel) | (1 << kWindow) | (1 << kFlush);
  if (paths_text.empty()) {
    c.paths = host ? host_paths : (1 << kPaths) - 1;
  } else {
    std::stringstream ss(paths_text);
    for (std::string key; std::getline(ss, key, ',');) {
      const auto it = std::find(std::begin(kKeys), std::end(kKeys), key);
      if (it == std::end(kKeys))
        CkAbort("roofline: --paths: unknown path '%s' (kernel, stream, channel, memcpy, window, flush)", key.c_str());
      const int p = static_cast<int>(it - std::begin(kKeys));
      if (host && !((host_paths >> p) & 1))
        CkAbort("roofline: --paths %s needs GPU memory (--mem host runs channel, window and flush only)", key.c_str());
      c.paths |= 1 << p;
    }
  }

  if (!host) {
    const char* why = "";
    const int count = rfbench::device_count(&why);
    if (count == 0) {
      CkPrintf("roofline: skipped: no CUDA device visible (%s); nothing measured\n", why);
      CkExit(0);
    }
    int dev = 0, peer = 0;
    pick_devices(0, count, dev, peer);
    c.shared = dev == peer;
    if (c.shared && ((c.paths >> kMemcpy) & 1)) {
      c.paths &= ~(1 << kMemcpy);
      notes.push_back("cudaMemcpyPeerAsync: skipped, both PEs use GPU " + std::to_string(dev) +
                      " (it needs two GPUs in one process)");
    }
  }

  sizes.push_back(8);
  for (long long b = 16; b <= max_bytes; b *= 4) sizes.push_back(b);
  if (sizes.back() < max_bytes) sizes.push_back(max_bytes);
  for (long long b : sizes)
    for (int m : kMsgsPerSync)
      if (m * b <= kMaxPerSync) c.cap = std::max(c.cap, m * b);
  cfg = c;
  CkPrintf("# Message Roofline, 2 PEs, %s memory, sizes 8 B .. %lld B, n in {1,4,16,64} (n*B <= 256 MiB), "
           "median of %d alternating repetitions; one-way us per synchronization (half a ping-pong; "
           "cudaMemcpyPeerAsync: n copies + stream sync)\n",
           c.mem.c_str(), max_bytes, reps);
  peers = ck::ArrayProxy<Bench>::create(ck::dims(2), ck::Map::block);
}

void Main::go(int max_blocks) {
  for (int r = 0; r < reps; ++r)
    for (long long b : sizes)
      for (int m : kMsgsPerSync) {
        if (m * b > kMaxPerSync) continue;
        for (int p = 0; p < kPaths; ++p)
          if ((cfg->paths >> p) & 1) steps.push_back({p, m, b, iters_for(m, b), max_blocks});
      }
  next();
}

void Main::next() {
  if (at == steps.size()) return report();
  const Step& s = steps[at];
  peers.send<&Bench::phase>(s.path, s.n, s.bytes, s.iters, s.blocks);
}

void Main::report() {
  FILE* out = nullptr;
  if (!csv.empty()) {
    out = std::fopen(csv.c_str(), "w");
    if (!out) CkAbort("roofline: cannot write %s", csv.c_str());
    std::fprintf(out, "path,msgs_per_sync,bytes,usec_per_sync\n");
  }
  for (int p = 0; p < kPaths; ++p) {
    if (!((cfg->paths >> p) & 1)) continue;
    CkPrintf("\n%s: one-way us per synchronization (GB/s = n * B / time)\n%12s", path_name(p, host), "bytes");
    for (int m : kMsgsPerSync) CkPrintf("  %20s", ("n=" + std::to_string(m)).c_str());
    CkPrintf("\n");
    for (long long b : sizes) {
      CkPrintf("%12lld", b);
      for (int m : kMsgsPerSync) {
        const auto it = results.find({p, m, b});
        if (it == results.end()) {
          CkPrintf("  %20s", "-");
          continue;
        }
        const double us = median(it->second);
        CkPrintf("  %10.3f (%7.2f)", us, m * static_cast<double>(b) / (us * 1e3));
        if (out) std::fprintf(out, "%s,%d,%lld,%.4f\n", path_name(p, host), m, b, us);
      }
      CkPrintf("\n");
    }
  }
  for (const std::string& note : notes) CkPrintf("note: %s\n", note.c_str());
  if (out) {
    std::fclose(out);
    CkPrintf("# wrote %s\n", csv.c_str());
  }
  CkExit(0);
}

}  // namespace

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
