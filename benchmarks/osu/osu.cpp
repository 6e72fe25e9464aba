// OSU-style latency and bandwidth between a chare on PE 0 and one on PE 1, in four modes:
//   host     host buffers in an ordinary entry message (std::span argument)
//   staging  GPU buffers copied to host, sent as host, copied back (the paper's "-H")
//   gpumsg   GPU Messaging API: CkDeviceBuffer argument + post entry method
//   channel  Channel API: CkChannel send/recv
// Latency: ping-pong, one-way = round trip / 2. Bandwidth: a window of 64 messages, then
// one acknowledgement; MB/s = bytes moved / time. Buffers are CUDA memory with --mem cuda.
//   ucharmrun -n 2 osu --mode gpumsg --mem cuda [--test lat|bw] [--min 1] [--max 4M] [--csv out.csv]
#include <ucharm/charm.h>

#ifdef UCHARM_BENCH_CUDA
#include <cuda_runtime.h>
#endif

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "../common/sizes.h"

namespace {

struct Config {
  std::string mode = "host", mem = "host", test = "lat", csv;
  std::size_t min = 1, max = 4u << 20;
  int iters = 1000, warmup = 100, window = 64;
  void pup(PUP::er& p) { p | mode; p | mem; p | test; p | csv; p | min; p | max; p | iters; p | warmup; p | window; }
};

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;
ck::readonly<Config> cfg;

// A buffer in host or GPU memory.
struct Buffer {
  char* p = nullptr;
  bool dev = false;
  void alloc(std::size_t n, bool on_gpu) {
    dev = on_gpu;
#ifdef UCHARM_BENCH_CUDA
    if (dev) {
      if (cudaMalloc(&p, n ? n : 1) != cudaSuccess) CkAbort("cudaMalloc(%zu) failed", n);
      cudaMemset(p, 1, n);
      return;
    }
#else
    if (dev) CkAbort("--mem cuda needs a build with CUDA");
#endif
    p = static_cast<char*>(std::malloc(n ? n : 1));
    std::memset(p, 1, n);
  }
};

// Host staging as an application would tune it: pinned host memory and asynchronous copies
// on the PE's own non-blocking stream (a copy on the legacy default stream would also wait
// for the streams UCX uses), waited for before the data is used.
struct Stager {
  char* host = nullptr;
#ifdef UCHARM_BENCH_CUDA
  cudaStream_t stream = nullptr;
#endif
  void alloc(std::size_t n, bool gpu) {
#ifdef UCHARM_BENCH_CUDA
    if (gpu) {
      if (cudaMallocHost(&host, n ? n : 1) != cudaSuccess || cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
        CkAbort("staging: pinned host buffer or stream allocation failed");
      return;
    }
#endif
    (void)gpu;
    host = static_cast<char*>(std::malloc(n ? n : 1));
  }
  void copy(void* dst, const void* src, std::size_t n, bool to_device) {
#ifdef UCHARM_BENCH_CUDA
    if (stream) {
      if (cudaMemcpyAsync(dst, src, n, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
          cudaStreamSynchronize(stream) != cudaSuccess)
        CkAbort("staging: copy of %zu bytes failed", n);
      return;
    }
#endif
    (void)to_device;
    std::memcpy(dst, src, n);
  }
};

struct Peer : ck::ArrayElement<Peer> {
  static constexpr auto post_entries() { return ck::post_list<ck::post<&Peer::dev_msg, &Peer::dev_post>>{}; }

  Buffer send_buf, recv_buf;   // device (or host) data buffers
  Stager stage;                // host staging buffer
  ck::CkChannel ch;
  std::size_t size = 0;
  int left = 0, window_got = 0;
  long expect = 0;  // element 1, channel mode: messages of this size still to come
  bool lat = true;
  double t0 = 0;

  Peer() {
#ifdef UCHARM_BENCH_CUDA
    if (cfg->mem == "cuda") {
      int n = 0;
      if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) CkAbort("--mem cuda: no CUDA device visible");
      cudaSetDevice(CkMyPe() % n);
    }
#endif
    const bool gpu = cfg->mem == "cuda" && cfg->mode != "host";  // host mode: host memory by definition
    send_buf.alloc(cfg->max, gpu);
    recv_buf.alloc(cfg->max, gpu);
    stage.alloc(cfg->max, gpu);
    ch = ck::CkChannel(thisProxy[thisIndex], thisProxy[1 - thisIndex]);
  }
  int other() const { return 1 - thisIndex; }
  const std::string& mode() const { return cfg->mode; }

  // Element 0 starts a size; element 1 gets told the size first.
  void begin(std::size_t bytes, int count) {
    size = bytes;
    lat = cfg->test == "lat";
    left = count;
    window_got = 0;
    expect = lat ? count : static_cast<long>(count) * cfg->window;
    if (mode() == "channel" && thisIndex == 1) {
      if (lat) post_channel_recv();
      else post_channel_window();
    }
    if (thisIndex == 0) {
      if (mode() == "channel" && lat) post_channel_recv();
      t0 = CkWallTimer();
      if (lat) send_one();
      else send_window();
    }
  }

  // ---- one message in the chosen mode ----
  void send_one() {
    const std::string& m = mode();
    if (m == "host") {
      thisProxy[other()].send<&Peer::host_msg>(std::span<const char>(send_buf.p, size));
    } else if (m == "staging") {
      stage.copy(stage.host, send_buf.p, size, false);
      thisProxy[other()].send<&Peer::staged_msg>(std::span<const char>(stage.host, size));
    } else if (m == "gpumsg") {
      thisProxy[other()].send<&Peer::dev_msg>(ck::CkDeviceBuffer(send_buf.p, size));
    } else {
      ch.send(send_buf.p, size, ck::CkCallback::ignore());
    }
  }
  void post_channel_recv() { ch.recv(recv_buf.p, size, ck::CkCallback::to<&Peer::chan_got>(thisProxy[thisIndex])); }
  // Bandwidth: like OSU's receiver, post the whole window's receives at once.
  void post_channel_window() {
    for (int i = 0; i < cfg->window; ++i) post_channel_recv();
  }

  // ---- arrivals ----
  void host_msg(std::span<const char>) { arrived(); }
  void staged_msg(std::span<const char> data) {
    stage.copy(recv_buf.p, data.data(), data.size(), true);
    arrived();
  }
  void dev_post(ck::CkDeviceBuffer& b) { b.ptr = recv_buf.p; }
  void dev_msg(ck::CkDeviceBuffer) { arrived(); }
  void chan_got(std::size_t) {
    arrived();
  }

  void arrived() {
    if (lat) {
      if (thisIndex == 1) {  // bounce
        if (mode() == "channel" && --expect > 0) post_channel_recv();
        send_one();
        return;
      }
      if (--left > 0) {
        if (mode() == "channel") post_channel_recv();
        send_one();
        return;
      }
      report((CkWallTimer() - t0) * 1e6 / (2.0 * count_of()));
      return;
    }
    // bandwidth: element 1 counts a window, posts the next one's receives, acknowledges
    if (++window_got == cfg->window) {
      window_got = 0;
      expect -= cfg->window;
      if (mode() == "channel" && expect > 0) post_channel_window();
      thisProxy[0].send<&Peer::ack>();
    }
  }
  void send_window() {
    for (int i = 0; i < cfg->window; ++i) send_one();
  }
  void ack() {
    if (--left > 0) {
      send_window();
      return;
    }
    double secs = CkWallTimer() - t0;
    report(static_cast<double>(size) * cfg->window * count_of() / secs / 1e6);
  }
  int counted = 0;
  int count_of() const { return counted; }
  void report(double value);
  void set_count(int n) { counted = n; }
};

struct Main : ck::MainChare<Main> {
  ck::ArrayProxy<Peer> peers;
  std::size_t size = 0;
  bool warming = true;
  FILE* csv = nullptr;

  explicit Main(ck::MainArgs args) {
    Config c;
    CLI::App app{"OSU-style latency/bandwidth"};
    app.add_option("--mode", c.mode)->check(CLI::IsMember({"host", "staging", "gpumsg", "channel"}));
    app.add_option("--mem", c.mem)->check(CLI::IsMember({"host", "cuda"}));
    app.add_option("--test", c.test)->check(CLI::IsMember({"lat", "bw"}));
    ucharm::bench::SizeRange sizes(app, "1", "4M");
    app.add_option("--iters", c.iters)->check(CLI::PositiveNumber);
    app.add_option("--warmup", c.warmup)->check(CLI::NonNegativeNumber);
    app.add_option("--window", c.window)->check(CLI::PositiveNumber);
    app.add_option("--csv", c.csv, "append results to this CSV file");
    try {
      app.parse(args.argc, args.argv);
      sizes.parse(c.min, c.max);
    } catch (const CLI::ParseError& e) {
      std::exit(app.exit(e));
    } catch (const std::exception& e) {
      CkAbort("osu: %s", e.what());
    }
    if (CkNumPes() > 2) CkAbort("osu runs on 1 or 2 PEs");
    cfg = c;
    mainProxy = thisProxy;
    if (!c.csv.empty()) csv = std::fopen(c.csv.c_str(), "a");
    peers = ck::ArrayProxy<Peer>::create(ck::dims(2), ck::Map::round_robin);
    CkPrintf("# ucharm OSU %s, mode %s, %s memory, %d PEs\n", c.test == "lat" ? "latency" : "bandwidth",
             c.mode.c_str(), c.mem.c_str(), CkNumPes());
    CkPrintf("%-12s %16s\n", "# size(B)", c.test == "lat" ? "latency(us)" : "bandwidth(MB/s)");
    size = c.min;
    start_size();
  }
  int count() const {
    int n = ucharm::bench::iterations_for(size, cfg->iters);
    return cfg->test == "lat" ? n : std::max(5, n / cfg->window);
  }
  void start_size() {
    const int n = warming ? std::max(1, cfg->warmup / (cfg->test == "lat" ? 1 : cfg->window)) : count();
    peers.send<&Peer::set_count>(n);
    peers[1].send<&Peer::begin>(size, n);
    peers[0].send<&Peer::begin>(size, n);
  }
  void result(double v) {
    if (warming) {
      warming = false;
      start_size();
      return;
    }
    CkPrintf("%-12zu %16.3f\n", size, v);
    if (csv) std::fprintf(csv, "%s,%s,%s,%zu,%.4f\n", cfg->test.c_str(), cfg->mode.c_str(), cfg->mem.c_str(), size, v);
    if (size >= cfg->max) {
      if (csv) std::fclose(csv);
      CkExit(0);
    }
    size = size == 0 ? 1 : size * 2;
    warming = true;
    start_size();
  }
};

void Peer::report(double value) { mainProxy->send<&Main::result>(value); }

}  // namespace

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
