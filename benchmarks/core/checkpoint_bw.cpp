// Checkpoint bandwidth against a plain write of the same bytes (issue 18's target: a
// checkpoint writes at >= 50% of the bandwidth of a plain sequential write). An array of
// --elements-per-pe elements per PE holds --bytes of state in all; each round does, in turn:
//   checkpoint  CkStartCheckpoint(--dir): quiescence, every element's pup() into one buffer
//               per PE, a checksum, one file per PE written and fsync'ed, renamed; PE 0's
//               manifest (fsync, rename), an fsync of the directory, the old files removed
//   plain       every PE writes the same number of bytes from one buffer to one file in
//               the same directory: write() loop, fsync, close, rename, fsync of the directory
//   parts       every PE times what a checkpoint adds to the write, on the same bytes: a
//               fresh zeroed buffer (what the packer grows), the copy into it, XXH3 over it
// Both writes are timed at the main chare (start to completion callback); the first round is
// a warm-up. Bandwidth = bytes / median time; the ratio is checkpoint / plain bandwidth.
//   ucharmrun -n 2 core_checkpoint_bw [--bytes 268435456] [--elements-per-pe 4] [--rounds 5]
//                                     [--dir checkpoint_bw.ckpt] [--keep] [--checkpoint-only]
#include <ucharm/charm.h>

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;
ck::CkCallback on_ready();
ck::CkCallback on_plain_done();
ck::CkCallback on_parts_done();

// Pseudo-random bytes (the file system sees no pattern to exploit).
void fill(std::vector<char>& v, std::uint64_t seed) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (std::size_t i = 0; i + 8 <= v.size(); i += 8) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    std::memcpy(v.data() + i, &x, 8);
  }
}

// The checkpointed state: `data`, and nothing else of size.
struct Chunk : ck::ArrayElement<Chunk> {
  std::vector<char> data;
  explicit Chunk(std::size_t bytes) : data(bytes) {
    fill(data, static_cast<std::uint64_t>(thisIndex) + 1);
    contribute(on_ready());
  }
  explicit Chunk(CkMigrateMessage*) {}
  void pup(PUP::er& p) override { p | data; }
};

double now() { return CkWallTimer(); }

[[noreturn]] void io_fail(const char* what, const std::string& path) {
  CkAbort("core_checkpoint_bw: cannot %s %s: %s", what, path.c_str(), std::strerror(errno));
}

// One branch per PE: the plain write and the parts, from a buffer of this PE's state size.
struct Writer : ck::Group<Writer> {
  std::vector<char> buf;
  std::string dir;
  explicit Writer(std::size_t bytes, std::string d) : buf(bytes), dir(std::move(d)) {
    fill(buf, 1000 + static_cast<std::uint64_t>(CkMyPe()));
    contribute(on_ready());
  }
  // Written by every checkpoint (groups are), but never restarted: no state of its own.
  explicit Writer(CkMigrateMessage*) {}
  void pup(PUP::er&) override {}

  // The same steps as the core's file write (checkpoint.cpp write_file, then the directory).
  void plain() {
    const std::string path = dir + "/plain.pe" + std::to_string(CkMyPe());
    const std::string tmp = path + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) io_fail("create", tmp);
    const char* p = buf.data();
    std::size_t left = buf.size();
    while (left > 0) {
      const ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) io_fail("write", tmp);
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0) io_fail("sync", tmp);
    ::close(fd);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) io_fail("rename to", path);
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
    contribute(on_plain_done());
  }

  // Seconds for: a fresh zeroed buffer, the copy into it, its XXH3 (max over PEs).
  void parts() {
    double t = now();
    std::vector<char> out;
    out.resize(buf.size(), 0);
    const double zero = now() - t;
    t = now();
    std::memcpy(out.data(), buf.data(), buf.size());
    const double copy = now() - t;
    t = now();
    volatile std::uint64_t h = XXH3_64bits(out.data(), out.size());
    (void)h;
    const double hash = now() - t;
    contribute(std::vector<double>{zero, copy, hash}, ck::Reducer::max, on_parts_done());
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Main : ck::MainChare<Main> {
  std::size_t bytes = 256u << 20;
  int per_pe = 4, rounds = 5, round = 0, ready_count = 0;
  std::string dir = "checkpoint_bw.ckpt";
  bool keep = false, only = false;
  std::size_t elem_bytes = 0, pe_bytes = 0;
  double t0 = 0;
  std::vector<double> ck_s, plain_s, zero_s, copy_s, hash_s;
  std::uintmax_t ck_bytes = 0;
  ck::ArrayProxy<Chunk> chunks;
  ck::GroupProxy<Writer> writers;

  explicit Main(ck::MainArgs args) {
    CLI::App app{"checkpoint bandwidth vs a plain write of the same bytes"};
    app.add_option("--bytes", bytes, "state in all (split evenly over the elements)")->check(CLI::PositiveNumber);
    app.add_option("--elements-per-pe", per_pe, "array elements per PE")->check(CLI::PositiveNumber);
    app.add_option("--rounds", rounds, "rounds counted (after one warm-up round)")->check(CLI::Range(1, 1000));
    app.add_option("--dir", dir, "directory for the checkpoints and the plain files");
    app.add_flag("--keep", keep, "leave the directory (default: removed at the end)");
    app.add_flag("--checkpoint-only", only, "no plain writes or parts (to profile the checkpoint alone)");
    try {
      app.parse(args.argc, args.argv);
    } catch (const CLI::ParseError& e) {
      std::exit(app.exit(e));
    }
    const std::size_t elements = static_cast<std::size_t>(per_pe) * static_cast<std::size_t>(CkNumPes());
    elem_bytes = bytes / elements / 8 * 8;
    if (elem_bytes == 0) CkAbort("core_checkpoint_bw: --bytes %zu is less than 8 per element", bytes);
    pe_bytes = elem_bytes * static_cast<std::size_t>(per_pe);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) CkAbort("core_checkpoint_bw: cannot create %s: %s", dir.c_str(), ec.message().c_str());
    dir = fs::absolute(dir).lexically_normal().string();
    mainProxy = thisProxy;
    // The block map gives each PE per_pe consecutive elements: pe_bytes of state per PE.
    chunks = ck::ArrayProxy<Chunk>::create(ck::dims(static_cast<int>(elements)), ck::Map::block, elem_bytes);
    writers = ck::GroupProxy<Writer>::create(pe_bytes, dir);
  }
  explicit Main(CkMigrateMessage*) {}
  void pup(PUP::er&) override {}  // a checkpoint of the benchmark is never restarted

  void ready() {
    if (++ready_count == 2) checkpoint();
  }

  void checkpoint() {
    t0 = now();
    ck::CkStartCheckpoint(dir.c_str(), ck::CkCallback::to<&Main::checkpointed>(thisProxy));
  }
  void checkpointed() {
    const double s = now() - t0;
    if (round > 0) ck_s.push_back(s);
    ck_bytes = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string n = e.path().filename().string();
      if (n == "manifest" || (n.rfind("pe", 0) == 0 && n.find(".ckpt") != std::string::npos)) ck_bytes += e.file_size();
    }
    if (only) {
      if (++round <= rounds) return checkpoint();
      CkPrintf("checkpoint: median %.4f s, %ju bytes written\n", median(ck_s), ck_bytes);
      return finish();
    }
    t0 = now();
    writers.send<&Writer::plain>();
  }
  void plain_done() {
    if (round > 0) plain_s.push_back(now() - t0);
    writers.send<&Writer::parts>();
  }
  void parts_done(std::vector<double> p) {
    if (round > 0) {
      zero_s.push_back(p[0]);
      copy_s.push_back(p[1]);
      hash_s.push_back(p[2]);
    }
    if (++round <= rounds) return checkpoint();
    report();
  }

  void report() {
    const double mib = 1024.0 * 1024.0;
    const double plain_bytes = static_cast<double>(pe_bytes) * CkNumPes();
    const double c = median(ck_s), w = median(plain_s);
    const double cbw = static_cast<double>(ck_bytes) / c / mib, wbw = plain_bytes / w / mib;
    CkPrintf("checkpoint_bw: %d PEs, %d elements of %zu bytes per PE (%.1f MiB per PE, %.1f MiB in all), "
             "%d rounds after 1 warm-up, dir %s\n",
             CkNumPes(), per_pe, elem_bytes, static_cast<double>(pe_bytes) / mib, plain_bytes / mib, rounds,
             dir.c_str());
    CkPrintf("checkpoint:  median %.4f s (min %.4f, max %.4f), %ju bytes written, %.1f MiB/s\n", c,
             *std::min_element(ck_s.begin(), ck_s.end()), *std::max_element(ck_s.begin(), ck_s.end()), ck_bytes, cbw);
    CkPrintf("plain write: median %.4f s (min %.4f, max %.4f), %.0f bytes written, %.1f MiB/s\n", w,
             *std::min_element(plain_s.begin(), plain_s.end()), *std::max_element(plain_s.begin(), plain_s.end()),
             plain_bytes, wbw);
    CkPrintf("checkpoint / plain bandwidth: %.1f%% (target >= 50%%)\n", 100.0 * cbw / wbw);
    CkPrintf("parts per PE (median of the slowest PE): zeroed buffer %.4f s, copy %.4f s, xxh3 %.4f s\n",
             median(zero_s), median(copy_s), median(hash_s));
    finish();
  }
  void finish() {
    if (!keep) {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
    CkExit(0);
  }
};

ck::CkCallback on_ready() { return ck::CkCallback::to<&Main::ready>(*mainProxy); }
ck::CkCallback on_plain_done() { return ck::CkCallback::to<&Main::plain_done>(*mainProxy); }
ck::CkCallback on_parts_done() { return ck::CkCallback::to<&Main::parts_done>(*mainProxy); }

}  // namespace

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
