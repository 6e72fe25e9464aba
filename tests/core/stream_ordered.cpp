// Stream-ordered channel transfers (CkChannel::send_enqueue / recv_enqueue) between two
// chares (elements 0 and 1 of an array), run through ucharmrun by test_stream_ordered.cpp:
//   stream_ordered gpu        element 0: fill -> send_enqueue -> recv_enqueue -> check;
//                             element 1: recv_enqueue -> reply (+1) -> send_enqueue; 1000
//                             rounds of 8 B, then 20 of 1 MiB, 32 rounds enqueued ahead of
//                             the streams (the host never waits), kernels slow on purpose. SO_DEVICE=n puts
//                             every PE on GPU n (else PE p uses GPU p % count); SO_ROUNDS=n
//                             changes the 8 B round count; SO_HOSTBUF=1 uses pinned host
//                             buffers (written and read by the kernels through UVA);
//                             SO_WINDOW=n enqueues n rounds ahead instead of 32.
//   stream_ordered early      a CkChannel::send on a stream before the peer's id is known:
//                             element 0 fills (slowly), sends and destroys the stream, all
//                             at once (the send leaves once the id is in); element 1 must
//                             get the fill
//   stream_ordered notready   send_enqueue before the peer's id is known: an error
//   stream_ordered nocontext  recv_enqueue with no CUDA context (or no CUDA): an error
// Prints "stream ordered ok" on success.
#include <ucharm/charm.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#ifdef SO_HAVE_KERNELS
#include "stream_ordered_kernels.h"
#endif

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;
ck::readonly<std::string> testMode;

namespace {
constexpr std::size_t kBig = std::size_t{1} << 20;  // bytes
constexpr int kBigRounds = 20;
constexpr unsigned kDelayNs = 20000;  // the kernels around each transfer take >= 20 us
constexpr std::uint64_t kEarlyA = 7000001;  // "early": the value filled and sent
constexpr int kWindow = 32;  // rounds enqueued ahead of the streams (the driver's queue is finite)
}  // namespace

struct Peer : ck::ArrayElement<Peer> {
  ck::CkChannel ch;
  std::uint64_t* sbuf = nullptr;
  std::uint64_t* rbuf = nullptr;
  int* errors = nullptr;
  void* stream = nullptr;
  std::uint64_t host_word = 0;
  bool host_bufs = false;

  Peer();
  ~Peer() override;
  int small_rounds = 0, enqueued = 0, completed = 0;
  double t0 = 0;

  void run();
  void enqueue_round();
  void round_done(std::size_t bytes);
  void finished();
  void early_received(std::size_t bytes);
};

struct Main : ck::MainChare<Main> {
  ck::ArrayProxy<Peer> peers;
  explicit Main(ck::MainArgs args) {
    mainProxy = thisProxy;
    testMode = args.argc > 1 ? args.argv[1] : "gpu";
    peers = ck::ArrayProxy<Peer>::create(ck::dims(2), ck::Map::block);
  }
  void all_open() { peers.send<&Peer::run>(); }
  void done(int errors) {
    if (errors) {
      CkPrintf("stream ordered: %d wrong values\n", errors);
      CkExit(1);
    }
    CkPrintf("stream ordered ok\n");
    CkExit(0);
  }
};

Peer::Peer() {
  const std::string& mode = *testMode;
  ch = ck::CkChannel(thisProxy[thisIndex], thisProxy[1 - thisIndex], 0);
  if (mode == "notready" && thisIndex == 0) {
    ch.send_enqueue(&host_word, sizeof host_word, nullptr);
    CkAbort("a send_enqueue before the channel was ready was accepted");
  }
  if (mode == "nocontext" && thisIndex == 0) {  // no CUDA call was made: no context is current
    ch.recv_enqueue(&host_word, sizeof host_word, nullptr);
    CkAbort("a recv_enqueue without CUDA was accepted");
  }
#ifdef SO_HAVE_KERNELS
  if (mode == "gpu") {
    // Everything that may wait for the device happens here, before any stream of this PE
    // waits for it (allocations, the kernels' module load: stream_ordered_kernels.h).
    const int n = sotest::device_count();
    if (n == 0) CkAbort("stream_ordered gpu needs a CUDA device; none is visible");
    const char* fixed = std::getenv("SO_DEVICE");
    sotest::set_device(fixed ? std::atoi(fixed) : CkMyPe() % n);
    sotest::preload();
    host_bufs = std::getenv("SO_HOSTBUF") != nullptr;  // pinned host buffers (kernels use them through UVA)
    sbuf = static_cast<std::uint64_t*>(host_bufs ? sotest::host_alloc(kBig) : sotest::device_alloc(kBig));
    rbuf = static_cast<std::uint64_t*>(host_bufs ? sotest::host_alloc(kBig) : sotest::device_alloc(kBig));
    errors = static_cast<int*>(sotest::device_alloc(sizeof(int)));
    stream = sotest::stream_create();
  }
  if (mode == "early") {  // the channel is not ready yet: its peer's id comes in a message
    sotest::set_device(CkMyPe() % std::max(1, sotest::device_count()));
    sotest::preload();
    sbuf = static_cast<std::uint64_t*>(sotest::device_alloc(kBig));
    rbuf = static_cast<std::uint64_t*>(sotest::device_alloc(kBig));
    errors = static_cast<int*>(sotest::device_alloc(sizeof(int)));
    stream = sotest::stream_create();
    constexpr std::size_t words = kBig / sizeof(std::uint64_t);
    if (ch.ready()) CkAbort("early: the channel was ready in the constructor (the test needs it not to be)");
    if (thisIndex == 0) {
      sotest::launch_fill(stream, sbuf, words, kEarlyA, kDelayNs);
      ch.send(sbuf, kBig, ck::CkCallback::ignore(), static_cast<CUstream_st*>(stream));
      sotest::stream_destroy(stream);  // CUDA keeps it until its work is done; the send leaves later
      stream = nullptr;
    } else {
      ch.recv(rbuf, kBig, ck::CkCallback::to<&Peer::early_received>(thisProxy[thisIndex]));
    }
  }
#endif
  // The peer's channel setup message reaches this PE before the reduction's result does.
  contribute(ck::CkCallback::to<&Main::all_open>(*mainProxy));
}

Peer::~Peer() {
#ifdef SO_HAVE_KERNELS
  ch.close();
  for (void* p : {static_cast<void*>(sbuf), static_cast<void*>(rbuf)})
    if (p) host_bufs ? sotest::host_free(p) : sotest::device_free(p);
  if (errors) sotest::device_free(errors);
  if (stream) sotest::stream_destroy(stream);
#endif
}

void Peer::run() {
#ifdef SO_HAVE_KERNELS
  if (*testMode == "early") {
    if (thisIndex == 0) contribute(0, ck::Reducer::sum, ck::CkCallback::to<&Main::done>(*mainProxy));
    return;
  }
  if (!ch.ready()) CkAbort("element %d: the channel is not ready after the reduction", thisIndex);
  const char* r = std::getenv("SO_ROUNDS");
  small_rounds = r ? std::atoi(r) : 1000;
  t0 = CkWallTimer();
  const char* w = std::getenv("SO_WINDOW");
  const int window = w ? std::max(1, std::atoi(w)) : kWindow;
  while (enqueued < std::min(small_rounds + kBigRounds, window)) enqueue_round();
  CkPrintf("element %d on PE %d: the first %d rounds enqueued in %.2f ms (the host did not wait)\n", thisIndex,
           CkMyPe(), enqueued, (CkWallTimer() - t0) * 1e3);
#endif
}

// Round k's kernels and transfers, all asynchronous. The round's last operation tells this
// element (round_done), which enqueues the round kWindow ahead.
void Peer::enqueue_round() {
#ifdef SO_HAVE_KERNELS
  const int round = enqueued++;
  const bool big = round >= small_rounds;
  const std::size_t words = big ? kBig / sizeof(std::uint64_t) : 1;
  const std::size_t bytes = words * sizeof(std::uint64_t);
  const std::uint64_t v = static_cast<std::uint64_t>(round + 1) * 1000003u;
  const auto cb = ck::CkCallback::to<&Peer::round_done>(thisProxy[thisIndex]);
  auto* s = static_cast<CUstream_st*>(stream);
  if (thisIndex == 0) {
    sotest::launch_fill(stream, sbuf, words, v, kDelayNs);
    ch.send_enqueue(sbuf, bytes, s);
    ch.recv_enqueue(rbuf, bytes, s, cb);
    sotest::launch_check(stream, rbuf, words, v + 1, errors);
  } else {
    ch.recv_enqueue(rbuf, bytes, s);
    sotest::launch_reply(stream, rbuf, sbuf, words, kDelayNs);
    ch.send_enqueue(sbuf, bytes, s, cb);
  }
#endif
}

void Peer::round_done(std::size_t) {
  ++completed;
  if (enqueued < small_rounds + kBigRounds) enqueue_round();
  if (completed == small_rounds + kBigRounds) finished();
}

// The last operation has completed; the stream then still runs the last check.
void Peer::finished() {
#ifdef SO_HAVE_KERNELS
  const std::string err = sotest::stream_sync(stream);
  if (!err.empty()) CkAbort("element %d: the stream failed: %s", thisIndex, err.c_str());
  const int bad = sotest::read_int(errors);
  CkPrintf("element %d: %d rounds in %.2f s, %d wrong values; %zu stream operations still open on PE %d\n",
           thisIndex, completed, CkWallTimer() - t0, bad, CmiStreamOpsOpen(), CkMyPe());
  contribute(bad, ck::Reducer::sum, ck::CkCallback::to<&Main::done>(*mainProxy));
#endif
}

// Element 1 of "early": the data must be element 0's first fill.
void Peer::early_received(std::size_t bytes) {
#ifdef SO_HAVE_KERNELS
  if (bytes != kBig) CkAbort("early: %zu bytes arrived, %zu were sent", bytes, kBig);
  sotest::launch_check(stream, rbuf, kBig / sizeof(std::uint64_t), kEarlyA, errors);
  const std::string err = sotest::stream_sync(stream);
  if (!err.empty()) CkAbort("early: the stream failed: %s", err.c_str());
  const int bad = sotest::read_int(errors);
  CkPrintf("early: %d of %zu words differ from the data the stream held at the send\n", bad,
           kBig / sizeof(std::uint64_t));
  contribute(bad, ck::Reducer::sum, ck::CkCallback::to<&Main::done>(*mainProxy));
#endif
}

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
