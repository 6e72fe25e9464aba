// Device windows between two chares (elements 0 and 1 of an array): kernel ping-pongs at
// every cooperation level, the stream-ordered forms (also mixed with a kernel-side wait),
// and misuse. Run through ucharmrun by test_device_window.cpp:
//   device_window gpu            1 PE (same process) or 2 PEs (IPC); DW_DEVICE=n puts
//                                every PE on GPU n, else PE p uses GPU p % count
//   device_window hostptr|closed|notready|kernel_oob|stream_oob     (errors)
// Prints "device window ok" on success.
#include <ucharm/charm.h>

#include <cstdlib>
#include <string>
#include <vector>

#ifdef DW_HAVE_KERNELS
#include "device_window_kernels.h"
#endif

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;
ck::readonly<std::string> testMode;

namespace {
constexpr std::size_t kBuf = 1 << 20;
constexpr int kRounds = 10;
}  // namespace

struct Peer : ck::ArrayElement<Peer> {
  ck::CkDeviceWindow win;
  void* buf = nullptr;
  void* scratch = nullptr;
  void* stream = nullptr;
  int* errors = nullptr;
  std::vector<char> host_buf;

  Peer();
  ~Peer() override;
  void mapped();
  void run();
  void finish();
};

struct Main : ck::MainChare<Main> {
  ck::ArrayProxy<Peer> peers;
  explicit Main(ck::MainArgs args) {
    mainProxy = thisProxy;
    testMode = args.argc > 1 ? args.argv[1] : "gpu";
    peers = ck::ArrayProxy<Peer>::create(ck::dims(2), ck::Map::block);
  }
  void all_mapped() { peers.send<&Peer::run>(); }
  void all_launched() { peers.send<&Peer::finish>(); }
  void done(int errors) {
    if (errors) {
      CkPrintf("device window: %d bad bytes\n", errors);
      CkExit(1);
    }
    CkPrintf("device window ok\n");
    CkExit(0);
  }
};

Peer::Peer() {
  const std::string& mode = *testMode;
  const int peer = 1 - thisIndex;
  if (mode == "hostptr") {  // a host buffer is refused at expose, with or without a GPU
    host_buf.resize(4096);
    win = ck::CkDeviceWindow(thisProxy[thisIndex], thisProxy[peer], 0, host_buf.data(), host_buf.size());
    CkAbort("a host pointer was accepted");
  }
  if (mode == "closed") {  // stream operations and the handle of a closed window
    ck::CkDeviceWindow w;
    w.signal_on_stream(nullptr, 1);
    CkAbort("a closed window was accepted");
  }
#ifdef DW_HAVE_KERNELS
  const int n = dwtest::device_count();
  if (n == 0) CkAbort("mode %s needs a CUDA device; none is visible", mode.c_str());
  const char* fixed = std::getenv("DW_DEVICE");
  dwtest::set_device(fixed ? std::atoi(fixed) : CkMyPe() % n);
  buf = dwtest::device_alloc(kBuf);
  scratch = dwtest::device_alloc(kBuf);
  errors = static_cast<int*>(dwtest::device_alloc(sizeof(int)));
  stream = dwtest::stream_create();
  if (mode == "notready" && thisIndex == 1) return;  // never opens its end: element 0 stays unmapped
  win = ck::CkDeviceWindow(thisProxy[thisIndex], thisProxy[peer], 0, buf, kBuf,
                           ck::CkCallback::to<&Peer::mapped>(thisProxy[thisIndex]));
  if (mode == "notready" && thisIndex == 0 && !win.ready()) {
    (void)win.device_handle();
    CkAbort("the handle of an unmapped window was given");
  }
#else
  CkAbort("mode %s needs a build with CUDA", mode.c_str());
#endif
}

Peer::~Peer() {
#ifdef DW_HAVE_KERNELS
  win.close();
  if (buf) dwtest::device_free(buf);
  if (scratch) dwtest::device_free(scratch);
  if (errors) dwtest::device_free(errors);
  if (stream) dwtest::stream_destroy(stream);
#endif
}

void Peer::mapped() {
  CkPrintf("element %d on PE %d: window mapped (%s, peer buffer %zu bytes)\n", thisIndex, CkMyPe(),
           win.same_process() ? "same process: plain pointers" : "CUDA IPC", win.remote_bytes());
  contribute(ck::CkCallback::to<&Main::all_mapped>(*mainProxy));
}

// Launches everything asynchronously (both elements may share this PE), then reports.
void Peer::run() {
#ifdef DW_HAVE_KERNELS
  const std::string& mode = *testMode;
  const bool first = thisIndex == 0;
  const ck::DeviceWindowHandle h = win.device_handle();
  if (mode == "kernel_oob") {
    if (first) dwtest::launch_put(stream, h, kBuf - 4, 8, scratch);
  } else if (mode == "stream_oob") {
    if (first) win.put_on_stream(stream, kBuf, scratch, 1);
  } else {
    // Kernels: 3 cooperation levels x 3 sizes, kRounds each way (DW_PHASES=kernels or
    // streams runs one part only).
    const char* phases = std::getenv("DW_PHASES");
    const bool kernels = !phases || std::string(phases) != "streams";
    const bool streams = !phases || std::string(phases) != "kernels";
    unsigned long long base = 0;
    for (int coop = 0; coop < 3 && kernels; ++coop)
      for (std::size_t bytes : {std::size_t{8}, std::size_t{1000}, std::size_t{65536}}) {
        dwtest::launch_pingpong(stream, h, first, kRounds, bytes, coop, base, scratch, errors);
        base += kRounds;
      }
    // Streams: each side puts round k at offset (k + 1) * 64 KiB (past the kernels' 64 KiB:
    // the peer's last kernel check may still be reading that) and signals; then waits for
    // the peer's and checks. Round 2 waits inside a kernel instead (a stream signal, a
    // kernel wait).
    const std::size_t bytes = 65536;
    for (int k = 0; k < 3 && streams; ++k) {
      const unsigned long long v = base + 1 + k;
      dwtest::launch_fill(stream, scratch, bytes, v, thisIndex);
      win.put_on_stream(stream, (k + 1) * bytes, scratch, bytes);
      win.signal_on_stream(stream, v);
      if (k == 2) {
        dwtest::launch_wait_check(stream, h, v, (k + 1) * bytes, bytes, v, 1 - thisIndex, errors);
      } else {
        win.wait_on_stream(stream, v);
        dwtest::launch_check(stream, static_cast<char*>(buf) + (k + 1) * bytes, bytes, v, 1 - thisIndex, errors);
      }
    }
  }
#endif
  contribute(ck::CkCallback::to<&Main::all_launched>(*mainProxy));
}

void Peer::finish() {
  int bad = 0;
#ifdef DW_HAVE_KERNELS
  const std::string err = dwtest::stream_sync(stream);
  if (!err.empty()) CkAbort("element %d: a device-window kernel failed: %s", thisIndex, err.c_str());
  bad = dwtest::read_int(errors);
#endif
  contribute(bad, ck::Reducer::sum, ck::CkCallback::to<&Main::done>(*mainProxy));
}

int main(int argc, char** argv) {
  // With one PE both elements' kernels share this process, and each waits for the other's.
  // CUDA's lazy loading (the default since 12.2) loads a kernel at its first launch and may
  // wait for running kernels to do so: the second launch would wait for a kernel that waits
  // for a launch this thread has not made yet. Kernels are loaded at start-up instead.
  setenv("CUDA_MODULE_LOADING", "EAGER", 0);
  return ck::start<Main>(argc, argv);
}
