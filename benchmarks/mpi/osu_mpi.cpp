// OSU-style MPI micro-benchmarks, one source for ucharm's AMPI and any MPI library:
//   latency    ping-pong between ranks 0 and 1; one-way latency = round trip / 2
//   bw         rank 0 sends a window of Isends, Waitall, rank 1 acknowledges; MB/s
//   bibw       both ranks send a window to each other at once; MB/s both ways together
//   allreduce  MPI_Allreduce (float sum) on every rank; average latency over ranks
// Sizes double from min to max; messages above 8 KiB get a tenth of the iterations and
// warm-up (a fifth for the bandwidth tests), as OSU does. `-d cuda` puts the buffers in
// GPU memory (rank r uses GPU r mod count) and hands device pointers to MPI; with
// `--staging` they are copied through pinned host buffers around every transfer instead.
// Output: OSU's table ("# Size          Latency (us)" and rows "size value"); --csv adds
// rows test,mode,mem,size,value for tools/osu_table.py (mode: ampi/ompi/mpi or staging).
//   mpirun -np 2 osu_mpi_ompi -t latency -m 8:4M
//   ucharmrun -n 2 osu_mpi_ampi -t bw -d cuda
#include <mpi.h>

#ifdef OSU_MPI_CUDA
#include <cuda_runtime.h>
#endif

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../common/sizes.h"
#include "mpi_common.h"  // examples/jacobi3d/mpi (include path)

// No mutable globals: under AMPI several ranks share one process.
namespace {

using mpi_common::mpi_name;

enum class Test { Latency, Bandwidth, BiBandwidth, Allreduce };
constexpr std::size_t kLarge = 8192;  // above this, fewer iterations (OSU's large-message limit)

struct Options {
  std::vector<Test> tests;
  std::size_t min = 1, max = 4u << 20;
  bool min_given = false;
  int iters = -1, warmup = -1, window = 64, precision = 2;
  bool cuda = false, staging = false;
  std::string csv;
};

// An error every rank detects alike (bad options): see mpi_common::fail_all.
[[noreturn]] void fail(int rank, const std::string& why) { mpi_common::fail_all("osu_mpi", rank, why); }

// A rank-local failure (a CUDA call): named, then the job ends.
[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "osu_mpi: %s\n", what);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

// The benchmark's buffers. `send`/`recv` are what MPI sees: device memory with -d cuda,
// pinned host memory when staging, else ordinary host memory. With staging, `dev_send`
// and `dev_recv` hold the data on the GPU and every transfer copies through the host.
class Buffers {
 public:
  Buffers(std::size_t bytes, bool cuda, bool staging, int rank) : cuda_(cuda), staging_(cuda && staging) {
    const std::size_t n = bytes ? bytes : 1;
#ifdef OSU_MPI_CUDA
    if (cuda_) {
      int count = 0;
      if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) die("-d cuda: no CUDA device visible");
      device_ = rank % count;
      bind();
      if (cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess) die("cudaStreamCreate failed");
      char* d[2] = {nullptr, nullptr};
      for (char*& p : d) {
        if (cudaMalloc(&p, n) != cudaSuccess) die("cudaMalloc failed");
        if (cudaMemset(p, 1, n) != cudaSuccess) die("cudaMemset failed");
      }
      if (cudaDeviceSynchronize() != cudaSuccess) die("cudaDeviceSynchronize failed");
      if (staging_) {
        dev_send_ = d[0];
        dev_recv_ = d[1];
        if (cudaMallocHost(&send_, n) != cudaSuccess || cudaMallocHost(&recv_, n) != cudaSuccess)
          die("cudaMallocHost failed");
        std::memset(send_, 1, n);
        std::memset(recv_, 0, n);
      } else {
        send_ = d[0];
        recv_ = d[1];
      }
      return;
    }
#else
    (void)rank;
    if (cuda_) die("-d cuda: this build has no CUDA");
#endif
    send_ = static_cast<char*>(std::malloc(n));
    recv_ = static_cast<char*>(std::malloc(n));
    if (!send_ || !recv_) die("out of host memory for the buffers");
    std::memset(send_, 1, n);
    std::memset(recv_, 0, n);
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  ~Buffers() {
#ifdef OSU_MPI_CUDA
    if (cuda_) {
      bind();
      if (staging_) {
        cudaFreeHost(send_);
        cudaFreeHost(recv_);
        cudaFree(dev_send_);
        cudaFree(dev_recv_);
      } else {
        cudaFree(send_);
        cudaFree(recv_);
      }
      cudaStreamDestroy(stream_);
      return;
    }
#endif
    std::free(send_);
    std::free(recv_);
  }

  char* send() const { return send_; }
  char* recv() const { return recv_; }

  // Staging: the device data goes to the host buffer before a send...
  void before_send(std::size_t bytes) { copy(send_, dev_send_, bytes, false); }
  // ...and comes from it after a receive.
  void after_recv(std::size_t bytes) { copy(dev_recv_, recv_, bytes, true); }

  // The CUDA current device belongs to the OS thread, which AMPI's other ranks share.
  void bind() const {
#ifdef OSU_MPI_CUDA
    if (cuda_ && cudaSetDevice(device_) != cudaSuccess) die("cudaSetDevice failed");
#endif
  }

 private:
  void copy(void* dst, const void* src, std::size_t bytes, bool to_device) {
    if (!staging_ || bytes == 0) return;
#ifdef OSU_MPI_CUDA
    bind();
    if (cudaMemcpyAsync(dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, stream_) !=
            cudaSuccess ||
        cudaStreamSynchronize(stream_) != cudaSuccess)
      die("staging copy failed");
#else
    (void)dst;
    (void)src;
    (void)to_device;
#endif
  }

  bool cuda_ = false, staging_ = false;
  char* send_ = nullptr;
  char* recv_ = nullptr;
  char* dev_send_ = nullptr;
  char* dev_recv_ = nullptr;
#ifdef OSU_MPI_CUDA
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
#endif
};

struct Counts {
  int iters, warmup;
};

// OSU's defaults per test, and fewer repetitions for large messages.
Counts counts_for(Test t, std::size_t size, const Options& o) {
  int iters = 0, warmup = 0, divisor = 10;
  switch (t) {
    case Test::Latency: iters = 10000; warmup = 1000; break;
    case Test::Bandwidth:
    case Test::BiBandwidth: iters = 100; warmup = 10; divisor = 5; break;
    case Test::Allreduce: iters = 1000; warmup = 100; break;
  }
  if (o.iters >= 0) iters = o.iters;
  if (o.warmup >= 0) warmup = o.warmup;
  if (size > kLarge) {
    iters = std::max(1, iters / divisor);
    warmup = warmup / divisor;
  }
  return {std::max(1, iters), std::max(0, warmup)};
}

// One-way latency (us) measured on rank 0.
double latency(Buffers& b, std::size_t size, Counts c, int rank) {
  const int n = static_cast<int>(size);
  double t0 = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < c.warmup + c.iters; ++i) {
    if (i == c.warmup) t0 = MPI_Wtime();
    if (rank == 0) {
      b.before_send(size);
      MPI_Send(b.send(), n, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
      MPI_Recv(b.recv(), n, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      b.after_recv(size);
    } else if (rank == 1) {
      MPI_Recv(b.recv(), n, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      b.after_recv(size);
      b.before_send(size);
      MPI_Send(b.send(), n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
    }
  }
  return (MPI_Wtime() - t0) * 1e6 / (2.0 * c.iters);
}

// Bandwidth (MB/s) measured on rank 0. As in OSU, the window's receives share one buffer
// (its contents are never read).
double bandwidth(Buffers& b, std::size_t size, Counts c, int window, bool both_ways, int rank, std::vector<MPI_Request>& req) {
  const int n = static_cast<int>(size);
  const int other = 1 - rank;
  char ack = 0;
  double t0 = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < c.warmup + c.iters; ++i) {
    if (i == c.warmup) t0 = MPI_Wtime();
    int nreq = 0;
    const bool receives = both_ways || rank == 1, sends = both_ways || rank == 0;
    if (receives)
      for (int w = 0; w < window; ++w) MPI_Irecv(b.recv(), n, MPI_CHAR, other, 2, MPI_COMM_WORLD, &req[nreq++]);
    if (sends)
      for (int w = 0; w < window; ++w) {
        b.before_send(size);
        MPI_Isend(b.send(), n, MPI_CHAR, other, 2, MPI_COMM_WORLD, &req[nreq++]);
      }
    MPI_Waitall(nreq, req.data(), MPI_STATUSES_IGNORE);
    if (receives)
      for (int w = 0; w < window; ++w) b.after_recv(size);
    if (!both_ways) {  // the receiver's acknowledgement closes the window
      if (rank == 0) MPI_Recv(&ack, 1, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      else MPI_Send(&ack, 1, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
    }
  }
  const double secs = MPI_Wtime() - t0;
  return static_cast<double>(size) * window * c.iters * (both_ways ? 2 : 1) / secs / 1e6;
}

// Allreduce latency (us): each rank's average, averaged over ranks (on rank 0).
double allreduce(Buffers& b, std::size_t size, Counts c, int size_ranks) {
  const int count = static_cast<int>(size / sizeof(float));
  double t0 = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < c.warmup + c.iters; ++i) {
    if (i == c.warmup) t0 = MPI_Wtime();
    b.before_send(size);
    MPI_Allreduce(b.send(), b.recv(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    b.after_recv(size);
  }
  const double mine = (MPI_Wtime() - t0) * 1e6 / c.iters;
  double sum = 0;
  MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  return sum / size_ranks;
}

const char* test_key(Test t) {
  switch (t) {
    case Test::Latency: return "lat";
    case Test::Bandwidth: return "bw";
    case Test::BiBandwidth: return "bibw";
    default: return "allreduce";
  }
}

void run_test(Test t, const Options& o, Buffers& b, int rank, int ranks, FILE* csv) {
  static constexpr const char* kTitle[] = {"latency", "bandwidth", "bidirectional bandwidth", "allreduce latency"};
  static constexpr const char* kColumn[] = {"# Size          Latency (us)", "# Size      Bandwidth (MB/s)",
                                            "# Size      Bandwidth (MB/s)", "# Size       Avg Latency(us)"};
  const int ti = static_cast<int>(t);
  const char* mem = o.cuda ? "cuda" : "host";
  if (rank == 0) {
    std::printf("# ucharm MPI benchmark (OSU-style): %s, %s, %s memory%s, %d ranks\n", kTitle[ti], mpi_name(), mem,
                o.cuda && o.staging ? " staged through the host" : "", ranks);
    std::printf("%s\n", kColumn[ti]);
    std::fflush(stdout);
  }
  std::vector<MPI_Request> req(2 * static_cast<std::size_t>(o.window));
  // Allreduce works on floats: its sizes start at one float.
  std::size_t size = t == Test::Allreduce && o.min < sizeof(float) ? sizeof(float) : o.min;
  for (; size <= o.max; size = size ? size * 2 : 1) {
    const Counts c = counts_for(t, size, o);
    double v = 0;
    switch (t) {
      case Test::Latency: v = latency(b, size, c, rank); break;
      case Test::Bandwidth: v = bandwidth(b, size, c, o.window, false, rank, req); break;
      case Test::BiBandwidth: v = bandwidth(b, size, c, o.window, true, rank, req); break;
      case Test::Allreduce: v = allreduce(b, size, c, ranks); break;
    }
    b.bind();
    if (rank == 0) {
      std::printf("%-10zu%18.*f\n", size, o.precision, v);
      std::fflush(stdout);
      if (csv)
        std::fprintf(csv, "%s,%s,%s,%zu,%.4f\n", test_key(t), o.cuda && o.staging ? "staging" : mpi_name(), mem, size, v);
    }
  }
}

int run_main(int argc, char** argv) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);

  Options o;
  CLI::App app{"OSU-style MPI latency, bandwidth, bidirectional bandwidth and allreduce latency"};
  std::string test = "latency", sizes, device = "host";
  app.add_option("-t,--test", test, "latency, bw, bibw, allreduce or all")
      ->check(CLI::IsMember({"latency", "bw", "bibw", "allreduce", "all"}));
  app.add_option("-m,--message-size", sizes, "[min:]max in bytes, suffix k or M (default 1:4M; allreduce from 4)");
  app.add_option("-i,--iterations", o.iters, "timed iterations per size (default per test, as OSU; a tenth above 8 KiB)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("-x,--warmup", o.warmup, "untimed iterations per size first")->check(CLI::NonNegativeNumber);
  app.add_option("-d,--device", device, "buffer memory: host or cuda")->check(CLI::IsMember({"host", "cuda"}));
  app.add_option("-W,--window", o.window, "messages per window in bw and bibw (default 64)")->check(CLI::PositiveNumber);
  app.add_flag("--staging", o.staging, "with -d cuda: copy through pinned host buffers around every transfer");
  app.add_option("-p,--precision", o.precision, "decimals in the table (default 2, as OSU)")->check(CLI::Range(0, 9));
  app.add_option("--csv", o.csv, "append rows test,mode,mem,size,value to this file (rank 0)");
  if (!mpi_common::parse_args(app, argc, argv, "osu_mpi", rank)) return 0;
  if (!sizes.empty()) {
    const auto colon = sizes.find(':');
    try {
      if (colon == std::string::npos) {
        o.max = ucharm::bench::parse_bytes(sizes);
      } else {
        o.min = ucharm::bench::parse_bytes(sizes.substr(0, colon));
        o.max = ucharm::bench::parse_bytes(sizes.substr(colon + 1));
      }
    } catch (const std::exception&) {
      fail(rank, "-m " + sizes + ": expected [min:]max in bytes, such as 8:4M");
    }
    if (o.min > o.max) fail(rank, "-m " + sizes + ": min is above max");
    if (o.max > static_cast<std::size_t>(1u << 30)) fail(rank, "-m " + sizes + ": max is above 1 GiB");
  }
  o.cuda = device == "cuda";
  if (o.staging && !o.cuda) fail(rank, "--staging needs -d cuda (host buffers are sent as they are)");
  if (test == "all") o.tests = {Test::Latency, Test::Bandwidth, Test::BiBandwidth, Test::Allreduce};
  else if (test == "latency") o.tests = {Test::Latency};
  else if (test == "bw") o.tests = {Test::Bandwidth};
  else if (test == "bibw") o.tests = {Test::BiBandwidth};
  else o.tests = {Test::Allreduce};
  const bool p2p = std::any_of(o.tests.begin(), o.tests.end(), [](Test t) { return t != Test::Allreduce; });
  if (p2p && ranks != 2) fail(rank, "latency, bw and bibw run on exactly 2 ranks (" + std::to_string(ranks) + " here)");

  FILE* csv = nullptr;
  if (rank == 0 && !o.csv.empty() && !(csv = std::fopen(o.csv.c_str(), "a")))
    std::fprintf(stderr, "osu_mpi: cannot open %s for appending; no CSV rows\n", o.csv.c_str());
  {
    Buffers b(o.max, o.cuda, o.staging, rank);
    for (Test t : o.tests) run_test(t, o, b, rank, ranks, csv);
  }
  if (csv) std::fclose(csv);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int status = run_main(argc, argv);
  MPI_Finalize();
  return status;
}
