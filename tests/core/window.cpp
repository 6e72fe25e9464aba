// One-sided windows (ck::CkWindow): core_window MODE [cuda], under ucharmrun. Each mode
// checks itself and ends with "MODE ok" from PE 0 and exit 0, or aborts naming what failed.
//   ring   max(3, 2 x PEs) elements in a ring, a window between each pair of neighbours.
//          Each element: 1000 notified puts (8 or 64 bytes) to its right neighbour issued
//          before either end is exposed (they wait in the end), checked in order by the
//          neighbour as its count rises (wait_notify); a get of the neighbour's buffer;
//          100 fetch_adds and 21 compare_swaps on its words (results checked); a put,
//          flush and empty notified put, after which the neighbour checks the put's data
//          and the atomics' words; an on_notify callback. `cuda`: the exposed buffers and
//          sources are cudaMalloc'd (no atomics: they need host memory).
//   range  element 0 puts past the end of element 1's buffer: the job must stop naming
//          the window, the offset, the length and the buffer's size.
#include <ucharm/charm.h>

#ifdef UCHARM_TEST_CUDA
#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;
ck::readonly<bool> useCuda;

constexpr std::size_t kK = 1000, kRec = 64;
constexpr std::size_t kPub = kK * kRec, kPlain = kPub + 4096, kWords = kPlain + 4096, kSize = kWords + 64;

void expect(bool ok, const char* what) {
  if (!ok) CkAbort("check failed on PE %d: %s", CkMyPe(), what);
}
unsigned char pattern(int who, std::size_t i, int salt) { return static_cast<unsigned char>(who * 13 + i * 7 + salt); }

// Host or device memory, filled and read through host copies.
struct Area {
  void* p = nullptr;
  std::size_t n = 0;
  bool gpu = false;
  Area() = default;
  Area(std::size_t bytes, bool cuda) : n(bytes), gpu(cuda) {
#ifdef UCHARM_TEST_CUDA
    if (gpu) {
      expect(cudaMalloc(&p, n) == cudaSuccess && cudaMemset(p, 0, n) == cudaSuccess, "cudaMalloc");
      return;
    }
#endif
    p = std::calloc(n, 1);
  }
  Area(const Area&) = delete;
  Area& operator=(const Area&) = delete;
  Area(Area&& o) noexcept : p(std::exchange(o.p, nullptr)), n(o.n), gpu(o.gpu) {}
  Area& operator=(Area&& o) noexcept {
    std::swap(p, o.p);
    std::swap(n, o.n);
    std::swap(gpu, o.gpu);
    return *this;
  }
  ~Area() {
#ifdef UCHARM_TEST_CUDA
    if (gpu) {
      if (p) cudaFree(p);
      return;
    }
#endif
    std::free(p);
  }
  char* at(std::size_t off) const { return static_cast<char*>(p) + off; }
  void write(std::size_t off, const void* src, std::size_t len) {
#ifdef UCHARM_TEST_CUDA
    if (gpu) {
      expect(cudaMemcpy(at(off), src, len, cudaMemcpyHostToDevice) == cudaSuccess, "cudaMemcpy to device");
      return;
    }
#endif
    std::memcpy(at(off), src, len);
  }
  void read(std::size_t off, void* dst, std::size_t len) const {
#ifdef UCHARM_TEST_CUDA
    if (gpu) {
      expect(cudaMemcpy(dst, at(off), len, cudaMemcpyDeviceToHost) == cudaSuccess, "cudaMemcpy from device");
      return;
    }
#endif
    std::memcpy(dst, at(off), len);
  }
};

struct Ring : ck::ArrayElement<Ring> {
  static constexpr auto threaded_entries() { return ck::entries<&Ring::run, &Ring::range>; }
  int n = 0;
  ck::CkWindow left, right;
  Area mine, records, plain;
  int signaled = 0;
  explicit Ring(int total) : n(total) {}
  int left_of() const { return (thisIndex + n - 1) % n; }
  int right_of() const { return (thisIndex + 1) % n; }
  void run();
  void range();
  void on_signal(std::uint64_t count) {
    expect(count >= kK + 1, "on_notify ran before its count was reached");
    ++signaled;
  }
  void finish();
};

struct Main : ck::MainChare<Main> {
  std::string mode;
  int total = 0;
  ck::ArrayProxy<Ring> ring;
  explicit Main(ck::MainArgs args) {
    expect(args.argc >= 2, "usage: core_window MODE [cuda]");
    mode = args.argv[1];
    mainProxy = thisProxy;
    useCuda = args.argc >= 3 && std::string(args.argv[2]) == "cuda";
    total = std::max(3, 2 * CkNumPes());
    ring = ck::ArrayProxy<Ring>::create(ck::dims(total), ck::Map::round_robin, total);
    if (mode == "ring") ring.send<&Ring::run>();
    else if (mode == "range") ring.send<&Ring::range>();
    else CkAbort("unknown mode '%s'", mode.c_str());
  }
  void ring_done(int n) {
    expect(n == total, "every element done");
    ring.send<&Ring::finish>();
  }
  void ring_closed(int n) {
    expect(n == total, "every element closed its windows");
    CkPrintf("ring ok: %d elements, %zu notified puts per window%s\n", total, kK, *useCuda ? " (CUDA buffers)" : "");
    CkExit(0);
  }
};

// ---- bodies that name Main's entries ----------------------------------------------------------
std::uint64_t record_word(int from, std::size_t j) { return std::uint64_t(from) << 32 | (j + 1); }

void Ring::run() {
#ifdef UCHARM_TEST_CUDA
  if (*useCuda) {
    int devs = 0;
    if (cudaGetDeviceCount(&devs) != cudaSuccess || devs == 0) CkAbort("'cuda': no CUDA device visible");
    cudaSetDevice(CkMyPe() % devs);
  }
#else
  if (*useCuda) CkAbort("'cuda' needs a build with CUDA");
#endif
  const bool gpu = *useCuda;
  mine = Area(kSize, gpu);
  records = Area(kK * kRec, gpu);
  plain = Area(4096, gpu);
  std::vector<unsigned char> h(4096);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = pattern(thisIndex, i, 1);
  mine.write(kPub, h.data(), h.size());
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = pattern(thisIndex, i, 2);
  plain.write(0, h.data(), h.size());
  std::vector<std::uint64_t> rec(kK * kRec / 8);
  for (std::size_t j = 0; j < kK; ++j)
    for (std::size_t w = 0; w < kRec / 8; ++w) rec[j * kRec / 8 + w] = record_word(thisIndex, j);
  records.write(0, rec.data(), kK * kRec);

  left = ck::CkWindow(thisProxy[thisIndex], thisProxy[left_of()], 0);
  right = ck::CkWindow(thisProxy[thisIndex], thisProxy[right_of()], 0);
  // Issued before either end is exposed: they wait in `right`, in order.
  for (std::size_t j = 0; j < kK; ++j) right.put_notify(j * kRec, records.at(j * kRec), j % 2 ? kRec : 8);
  left.on_notify(kK + 1, ck::CkCallback::to<&Ring::on_signal>(thisProxy[thisIndex]));
  left.expose(mine.p, mine.n);
  right.expose(nullptr, 0);  // this end only writes

  // The left neighbour's records, checked in order as the count rises.
  std::uint64_t seen = 0;
  std::vector<std::uint64_t> r(kRec / 8);
  while (seen < kK) {
    // (kK + 1: the neighbour's last, empty notified put may already be in)
    const std::uint64_t c = std::min<std::uint64_t>(left.wait_notify(seen + 1), kK);
    expect(c > seen, "wait_notify returned a count below the one asked for");
    for (std::size_t j = seen; j < c; ++j) {
      mine.read(j * kRec, r.data(), kRec);
      if (r[0] != record_word(left_of(), j) || (j % 2 && r.back() != record_word(left_of(), j)))
        CkAbort("element %d: notification %zu counted before its data arrived (record holds %#llx)", thisIndex, j,
                static_cast<unsigned long long>(r[0]));
    }
    seen = c;
  }

  // Get the right neighbour's pattern.
  Area got(4096, gpu);
  right.get_wait(kPub, got.p, 4096);
  expect(right.ready() && right.peer_bytes() == kSize && left.local_bytes() == kSize, "sizes");
  got.read(0, h.data(), 4096);
  for (std::size_t i = 0; i < h.size(); ++i) expect(h[i] == pattern(right_of(), i, 1), "get data");

  if (!gpu) {  // atomics: on the right neighbour's words, from this element only
    for (std::uint64_t k = 0; k < 100; ++k) expect(right.fetch_add_wait(kWords, 1) == k, "fetch_add result");
    for (std::uint64_t k = 0; k < 20; ++k) expect(right.compare_swap_wait(kWords + 8, k, k + 1) == k, "compare_swap");
    expect(right.compare_swap_wait(kWords + 8, 999, 5) == 20, "a failed compare_swap returns the word");
  }
  // A plain put is there after a flush; an empty notified put says so.
  right.put_wait(kPlain, plain.p, 4096);
  right.flush_wait();
  right.put_notify(kPlain, plain.p, 0);
  expect(left.wait_notify(kK + 1) == kK + 1, "the last notification");
  mine.read(kPlain, h.data(), 4096);
  for (std::size_t i = 0; i < h.size(); ++i) expect(h[i] == pattern(left_of(), i, 2), "flushed put data");
  if (!gpu) {
    std::uint64_t w[2];
    mine.read(kWords, w, sizeof w);
    expect(w[0] == 100 && w[1] == 20, "the atomics' words");
  }
  contribute(1, ck::Reducer::sum, ck::CkCallback::to<&Main::ring_done>(*mainProxy));
}

void Ring::finish() {
  expect(signaled == 1, "on_notify callback ran once");
  left.close();
  right.close();
  expect(!left.is_open(), "closed");
  contribute(1, ck::Reducer::sum, ck::CkCallback::to<&Main::ring_closed>(*mainProxy));
}

void Ring::range() {
  left = ck::CkWindow(thisProxy[thisIndex], thisProxy[left_of()], 0);
  right = ck::CkWindow(thisProxy[thisIndex], thisProxy[right_of()], 0);
  mine = Area(kSize, false);
  left.expose(mine.p, mine.n);
  right.expose(mine.p, mine.n);
  if (thisIndex == 0) {
    char x[16] = {};
    right.put_wait(kSize - 4, x, sizeof x);
    CkPrintf("range: the put was not refused\n");
  }
}


}  // namespace

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
