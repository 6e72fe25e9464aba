// One-sided window ping-pong (OSU-style table): two array elements on PEs 0 and 1, each
// with a ck::CkWindow to the other. Element 0 put_notify's `size` bytes into element 1's
// buffer; element 1's on_notify callback answers the same way; one-way latency is half
// the round trip. Host memory, or CUDA memory with --device (one GPU per PE when there
// are several).
//   ucharmrun -n 2 core_window_latency [--min 8] [--max 4M] [--iters 10000] [--warmup 1000] [--device]
#include <ucharm/charm.h>

#include <CLI/CLI.hpp>

#ifdef UCHARM_BENCH_CUDA
#include <cuda_runtime.h>
#endif

#include <cstdlib>
#include <cstring>
#include <string>

#include "../common/sizes.h"

namespace {

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;

struct Settings {
  std::size_t min = 8, max = 4u << 20;
  int iters = 10000, warmup = 1000;
  bool device = false;
  void pup(PUP::er& p) {
    p | min;
    p | max;
    p | iters;
    p | warmup;
    p | device;
  }
};

// A buffer of `n` bytes in host or CUDA memory (the window registers it as it is).
void* allocate(std::size_t n, bool device) {
#ifdef UCHARM_BENCH_CUDA
  if (device) {
    int devs = 0;
    if (cudaGetDeviceCount(&devs) != cudaSuccess || devs == 0) CkAbort("--device: no CUDA device visible");
    cudaSetDevice(CkMyPe() % devs);
    void* p = nullptr;
    if (cudaMalloc(&p, n) != cudaSuccess || cudaMemset(p, 1, n) != cudaSuccess)
      CkAbort("--device: cudaMalloc of %zu bytes failed", n);
    return p;
  }
#else
  if (device) CkAbort("--device needs a build with CUDA");
#endif
  void* p = std::malloc(n);
  std::memset(p, 1, n);
  return p;
}
void release(void* p, bool device) {
#ifdef UCHARM_BENCH_CUDA
  if (device) {
    cudaFree(p);
    return;
  }
#endif
  (void)device;
  std::free(p);
}

struct Pp : ck::ArrayElement<Pp> {
  Settings s;
  ck::CkWindow win;
  void* buf = nullptr;  // exposed: the peer writes here
  void* src = nullptr;  // what this side writes to the peer
  std::uint64_t expected = 0;  // notifications this side has waited for so far
  std::size_t size = 0;
  int trips = 0, total = 0;
  double t0 = 0;
  ~Pp() {
    win.close();
    if (buf) release(buf, s.device);
    if (src) release(src, s.device);
  }
  void setup(Settings settings);
  void start(std::size_t bytes, int iters);
  void got(std::uint64_t count);
  void arm() { win.on_notify(++expected, ck::CkCallback::to<&Pp::got>(thisProxy[thisIndex])); }
  void send() { win.put_notify(0, src, size); }
};

struct Main : ck::MainChare<Main> {
  Settings s;
  std::size_t size = 0;
  ck::ArrayProxy<Pp> pp;
  explicit Main(ck::MainArgs args) {
    CLI::App app{"one-sided window ping-pong"};
    ucharm::bench::SizeRange sizes(app, "8", "4M");
    app.add_option("--iters", s.iters)->check(CLI::PositiveNumber);
    app.add_option("--warmup", s.warmup)->check(CLI::NonNegativeNumber);
    app.add_flag("--device", s.device, "CUDA buffers (one GPU per PE when there are several)");
    try {
      app.parse(args.argc, args.argv);
      sizes.parse(s.min, s.max);
    } catch (const CLI::ParseError& e) {
      std::exit(app.exit(e));
    } catch (const std::exception& e) {
      CkAbort("core_window_latency: %s", e.what());
    }
    if (CkNumPes() < 2) CkAbort("core_window_latency needs at least 2 PEs (ucharmrun -n 2 ...)");
    if (s.min == 0 || s.min > s.max) CkAbort("core_window_latency: need 0 < --min <= --max");
    mainProxy = thisProxy;
    pp = ck::ArrayProxy<Pp>::create(ck::dims(2), ck::Map::round_robin);
    pp.send<&Pp::setup>(s);
  }
  void ready(int n) {
    if (n != 2) CkAbort("core_window_latency: %d of 2 elements set up", n);
    CkPrintf("# ucharm CkWindow put_notify ping-pong (on_notify), element on PE 0 <-> PE 1, %s memory, %d PEs\n",
             s.device ? "CUDA" : "host", CkNumPes());
    CkPrintf("%-12s %16s %18s\n", "# size(B)", "latency(us)", "bandwidth(MB/s)");
    size = s.min;
    pp.send<&Pp::start>(size, ucharm::bench::iterations_for(size, s.iters));
  }
  void result(double us) {
    CkPrintf("%-12zu %16.3f %18.2f\n", size, us, static_cast<double>(size) / us);
    if (size >= s.max) CkExit(0);
    size *= 2;
    pp.send<&Pp::start>(size, ucharm::bench::iterations_for(size, s.iters));
  }
};

void Pp::setup(Settings settings) {
  s = settings;
  buf = allocate(s.max, s.device);
  src = allocate(s.max, s.device);
  win = ck::CkWindow(thisProxy[thisIndex], thisProxy[1 - thisIndex], 0);
  win.expose(buf, s.max);
  contribute(1, ck::Reducer::sum, ck::CkCallback::to<&Main::ready>(*mainProxy));
}

// Both elements get it; element 0 starts. Its first `warmup` round trips are not timed.
void Pp::start(std::size_t bytes, int iters) {
  size = bytes;
  trips = 0;
  total = iters + s.warmup;
  arm();
  if (thisIndex == 0) {
    if (s.warmup == 0) t0 = CkWallTimer();
    send();
  }
}

void Pp::got(std::uint64_t) {
  if (thisIndex == 1) {  // answer; the next one may already be on its way
    if (++trips < total) arm();
    send();
    return;
  }
  if (++trips == s.warmup) t0 = CkWallTimer();
  if (trips == total) {
    mainProxy->send<&Main::result>((CkWallTimer() - t0) * 1e6 / (2.0 * (total - s.warmup)));
    return;
  }
  arm();
  send();
}

}  // namespace

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
