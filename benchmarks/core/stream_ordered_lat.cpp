// One-way latency of an 8-byte stream-ordered channel ping-pong, kernel to kernel:
//   stream-ordered  each side's stream does recv_enqueue -> tiny kernel -> send_enqueue
//                   (element 0 starts: kernel -> send_enqueue -> recv_enqueue); the host
//                   never waits; timed with CUDA events on element 0's stream
//   host-sync       the same hops with the host in the loop: kernel, cudaStreamSynchronize,
//                   CkChannel send, and the receive's completion runs the next kernel
//   event chain     (the peer figure) cudaMemcpyPeerAsync between a stream on GPU 0 and one
//                   on GPU 1 of one process, each waiting on the other's event: no host,
//                   no network layer (GPU 0 with itself where there is one GPU)
// Medians of --reps alternating runs of --iters round trips (the first --warm not timed).
//   ucharmrun -n 2 core_stream_ordered_lat [--iters 2000] [--warm 200] [--reps 5]
// PE p uses GPU p % count (SO_DEVICE=n: every PE on GPU n).
#include <ucharm/charm.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "stream_ordered_lat_kernels.h"

namespace {

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;

constexpr int kWindow = 16;  // iterations enqueued ahead (the driver's queue is finite)

enum Kind : int { kEnqueue = 0, kHostSync = 1, kChain = 2, kKinds = 3 };
const char* kind_name(int k) {
  static const char* names[] = {"stream-ordered channel (send/recv_enqueue)", "host-synchronous channel",
                                "event-chained cudaMemcpyPeerAsync"};
  return names[k];
}

struct Bench;

struct Main : ck::MainChare<Main> {
  ck::ArrayProxy<Bench> peers;
  int iters = 2000, warm = 200, reps = 5;
  int rep = 0, kind = 0, reports = 0;
  double figure = 0;
  std::vector<double> us[kKinds];

  explicit Main(ck::MainArgs args);
  void ready() { next(); }
  void next();
  void report(int k, double v) {
    figure = std::max(figure, v);  // element 0's (element 1 reports 0)
    if (++reports < 2) return;
    us[k].push_back(figure);
    advance();
  }
  void advance() {
    if (++kind == kKinds) {
      kind = 0;
      ++rep;
    }
    next();
  }
  static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  }
  void finish() {
    const int n = solat::device_count();
    CkPrintf("# 8 B one-way latency, kernel to kernel: %d PEs, %d visible GPU(s), medians of %d alternating runs "
             "of %d round trips (%d warm-up)\n",
             CkNumPes(), n, reps, iters, warm);
    CkPrintf("# event chain between GPU 0 and GPU %d in one process\n", n >= 2 ? 1 : 0);
    const double chain = median(us[kChain]);
    CkPrintf("%-46s %12s %14s   runs (us)\n", "path", "one-way us", "vs chain");
    for (int k = 0; k < kKinds; ++k) {
      std::string runs;
      for (double v : us[k]) runs += fmt_us(v) + " ";
      CkPrintf("%-46s %12.2f %14.2f   %s\n", kind_name(k), median(us[k]), median(us[k]) / chain, runs.c_str());
    }
    CkExit(0);
  }
  static std::string fmt_us(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", v);
    return b;
  }
};

struct Bench : ck::ArrayElement<Bench> {
  ck::CkChannel ch;
  std::uint64_t* buf = nullptr;
  void* stream = nullptr;
  void* t0 = nullptr;
  void* t1 = nullptr;
  int iters = 0, warm = 0, enqueued = 0, completed = 0;
  double wall0 = 0;
  std::uint64_t expect = 0;  // buf's value after the runs so far (element 0)

  Bench() {
    ch = ck::CkChannel(thisProxy[thisIndex], thisProxy[1 - thisIndex], 0);
    const int n = solat::device_count();
    if (n == 0) CkAbort("core_stream_ordered_lat needs a CUDA device; none is visible");
    const char* fixed = std::getenv("SO_DEVICE");
    solat::set_device(fixed ? std::atoi(fixed) : CkMyPe() % n);
    solat::preload();  // before any stream waits for this PE (stream_ordered_lat_kernels.h)
    buf = static_cast<std::uint64_t*>(solat::device_alloc(8));
    stream = solat::stream_create();
    t0 = solat::event_create();
    t1 = solat::event_create();
    contribute(ck::CkCallback::to<&Main::ready>(*mainProxy));
  }
  bool first() const { return thisIndex == 0; }
  CUstream_st* s() const { return static_cast<CUstream_st*>(stream); }

  // ---- stream-ordered: a window of kWindow iterations enqueued ahead of the streams ----
  void run_enqueue(int n, int w) {
    if (!ch.ready()) CkAbort("the channel is not ready");
    iters = n;
    warm = w;
    enqueued = completed = 0;
    while (enqueued < std::min(iters, kWindow)) enqueue_one();
  }
  void enqueue_one() {
    const int i = enqueued++;
    const auto cb = ck::CkCallback::to<&Bench::iteration_done>(thisProxy[thisIndex]);
    if (first()) {
      if (i == warm) solat::event_record(t0, stream);
      solat::launch_bump(stream, buf);
      ch.send_enqueue(buf, 8, s());
      ch.recv_enqueue(buf, 8, s(), cb);
      if (i == iters - 1) solat::event_record(t1, stream);
    } else {
      ch.recv_enqueue(buf, 8, s());
      solat::launch_bump(stream, buf);
      ch.send_enqueue(buf, 8, s(), cb);
    }
  }
  void iteration_done(std::size_t) {
    ++completed;
    if (enqueued < iters) enqueue_one();
    if (completed < iters) return;
    double us = 0;
    if (first()) {
      us = solat::event_ms(t0, t1) * 1000.0 / (2.0 * (iters - warm));
      expect += 2u * static_cast<std::uint64_t>(iters);
      check();
    }
    mainProxy->send<&Main::report>(static_cast<int>(kEnqueue), us);
  }

  // ---- host-synchronous: the host waits for the kernel, then sends ----
  void run_hostsync(int n, int w) {
    iters = n;
    warm = w;
    completed = 0;
    if (first()) hop();
    else ch.recv(buf, 8, ck::CkCallback::to<&Bench::received>(thisProxy[thisIndex]));
  }
  void hop() {  // kernel, wait for it, send, (element 0) post the receive of the answer
    if (first() && completed == warm) wall0 = CkWallTimer();
    solat::launch_bump(stream, buf);
    solat::stream_sync(stream);
    ch.send(buf, 8, ck::CkCallback::ignore());
    if (first()) ch.recv(buf, 8, ck::CkCallback::to<&Bench::received>(thisProxy[thisIndex]));
  }
  void received(std::size_t) {
    if (!first()) {
      ++completed;
      hop();
      if (completed < iters) ch.recv(buf, 8, ck::CkCallback::to<&Bench::received>(thisProxy[thisIndex]));
      else mainProxy->send<&Main::report>(static_cast<int>(kHostSync), 0.0);
      return;
    }
    if (++completed < iters) return hop();
    const double us = (CkWallTimer() - wall0) * 1e6 / (2.0 * (iters - warm));
    expect += 2u * static_cast<std::uint64_t>(iters);
    check();
    mainProxy->send<&Main::report>(static_cast<int>(kHostSync), us);
  }

  void check() {
    solat::stream_sync(stream);
    const std::uint64_t v = solat::read_u64(buf);
    if (v != expect)
      CkAbort("element 0: the buffer holds %llu after the run, expected %llu", static_cast<unsigned long long>(v),
              static_cast<unsigned long long>(expect));
  }
};

Main::Main(ck::MainArgs args) {
  mainProxy = thisProxy;
  CLI::App app{"stream-ordered channel latency"};
  app.add_option("--iters", iters)->check(CLI::Range(2, 1000000));
  app.add_option("--warm", warm)->check(CLI::NonNegativeNumber);
  app.add_option("--reps", reps)->check(CLI::Range(1, 1000));
  try {
    app.parse(args.argc, args.argv);
  } catch (const CLI::ParseError& e) {
    CkPrintf("%s\n", app.help().c_str());
    CkExit(app.exit(e) == 0 ? 0 : 1);
  }
  if (warm >= iters) warm = iters / 2;
  if (CkNumPes() != 2) CkPrintf("note: %d PEs; the figures are for 2 (ucharmrun -n 2)\n", CkNumPes());
  peers = ck::ArrayProxy<Bench>::create(ck::dims(2), ck::Map::block);
}
void Main::next() {
  if (rep == reps) return finish();
  reports = 0;
  figure = 0;
  if (kind == kEnqueue) peers.send<&Bench::run_enqueue>(iters, warm);
  else if (kind == kHostSync) peers.send<&Bench::run_hostsync>(iters, warm);
  else {  // in this process (PE 0): GPU 0 and GPU 1 (or GPU 0 twice)
    const int n = solat::device_count();
    us[kChain].push_back(solat::peer_chain_us(0, n >= 2 ? 1 : 0, iters, warm));
    return advance();
  }
}

}  // namespace

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
