// The mapped path: Put and Get as plain loads and stores into memory this process can
// reach, with no message at all (as MPI libraries do within a node).
//   - ranks of this process (one PE, +vp): their window memory is in this address space;
//   - Win_allocate memory of ranks of other processes on this host: each such window's
//     memory is a memfd, which the other processes of the host map through
//     /proc/<pid>/fd/<fd> at creation (same user; a failed open leaves that member to the
//     other paths).
// A Put or Get done this way is complete at the target when the call returns; flushes have
// nothing to wait for. Accumulates keep going through the target's PE (their atomicity is
// the target handling one message at a time), and so do device memory and dynamic windows.
#include "rma/rma.h"
#include "pt2pt/pt2pt.h"

#include <atomic>
#include <sched.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace ampi::rma {

namespace {

// This machine's boot id: processes that report the same one share its memory.
void host_id(char (&out)[40]) {
  std::memset(out, 0, sizeof out);
  if (FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
    if (!std::fgets(out, sizeof out, f)) out[0] = 0;
    std::fclose(f);
  }
}

std::size_t page_round(std::size_t n) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return (n + page - 1) / page * page;
}

}  // namespace

void* map_allocate(Win& w, std::size_t size, Member* me) {
  host_id(me->host);
  me->pid = static_cast<std::int32_t>(getpid());
  if (size == 0 || !me->host[0]) return nullptr;
  const int fd = memfd_create("ampi-rma-window", MFD_CLOEXEC);
  if (fd < 0) return nullptr;
  const std::size_t len = page_round(acc_lock_offset(static_cast<std::int64_t>(size)) + 64);
  void* p = ftruncate(fd, static_cast<off_t>(len)) == 0 ? mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                                                         : MAP_FAILED;
  if (p == MAP_FAILED) {
    close(fd);
    return nullptr;
  }
  w.memfd = fd;
  w.memfd_len = len;
  me->memfd = fd;
  return p;
}

void map_peers(Win& w) {
  const auto n = static_cast<std::size_t>(w.n);
  w.mapped.assign(n, nullptr);
  w.mapped_len.assign(n, 0);
  if (w.flavor == MPI_WIN_FLAVOR_DYNAMIC) return;
  char host[40];
  host_id(host);
  // UCHARM_AMPI_RMA_MAPPED=0: only ranks of this process (tests of the other paths on one host).
  if (const char* v = std::getenv("UCHARM_AMPI_RMA_MAPPED"); v && std::strcmp(v, "0") == 0) host[0] = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const Member& m = w.members[i];
    if (m.size <= 0 || m.device) continue;
    if (m.pe == CmiMyPe()) {  // this process: the same address space
      w.mapped[i] = reinterpret_cast<char*>(m.base);
      continue;
    }
    if (m.memfd < 0 || !host[0] || std::strncmp(m.host, host, sizeof host) != 0) continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/fd/%d", m.pid, m.memfd);
    const int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) continue;
    const std::size_t len = page_round(acc_lock_offset(m.size) + 64);
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) continue;
    w.mapped[i] = static_cast<char*>(p);
    w.mapped_len[i] = len;
  }
}

void map_release_peers(Win& w) {
  for (std::size_t i = 0; i < w.mapped.size(); ++i)
    if (w.mapped_len[i]) munmap(w.mapped[i], w.mapped_len[i]);
  w.mapped.clear();
}

void map_release_own(Win& w) {
  if (w.memfd < 0) return;
  munmap(w.base, w.memfd_len);
  close(w.memfd);
  w.memfd = -1;
}

AccLock::AccLock(std::uint32_t* word) : word_(word) {
  if (!word_) return;
  std::atomic_ref<std::uint32_t> a(*word_);
  for (int spins = 0; a.exchange(1, std::memory_order_acquire) != 0;) {
    if (++spins == 64) {  // the holder may be off its core (more processes than cores)
      sched_yield();
      spins = 0;
    }
  }
}
AccLock::~AccLock() {
  if (word_) std::atomic_ref<std::uint32_t>(*word_).store(0, std::memory_order_release);
}

void mapped_update(Win& w, int t, void* msg, void* result, int count, MPI_Datatype type) {
  const Member& m = w.members[static_cast<std::size_t>(t)];
  char* base = w.mapped[static_cast<std::size_t>(t)];
  const Hdr& h = hdr(msg);
  const bool answered = h.kind == kGetAcc || h.kind == kCas;
  if (answered && w.answer.size() < h.bytes) w.answer.resize(h.bytes);
  {
    // Memory of another process: its lock word; memory of this process without one (not
    // from Win_allocate's memfd): only this PE updates it, one message at a time.
    AccLock guard(m.memfd >= 0 ? acc_lock_word(base, m.size) : nullptr);
    execute(base + h.disp, false, msg, answered ? w.answer.data() : nullptr);
  }
  if (answered && h.bytes) {
    TypeFacts f;
    type_facts(type, f);
    if (f.contiguous) pt2pt::copy_any(static_cast<char*>(result) + f.lb, w.answer.data(), h.bytes);
    else type_unpack(w.answer.data(), h.bytes, result, count, type);
  }
  CmiFree(msg);
}

int mapped_op(Win& w, const char* fn, bool put, void* origin, int count, MPI_Datatype t, int target,
              std::uint64_t disp, const Run* runs, int nruns) {
  char* at = w.mapped[static_cast<std::size_t>(target)] + disp;
  TypeFacts f;
  type_facts(t, f);
  const bool origin_dev = is_device(origin);
  // One run of items without gaps and a contiguous origin: one copy.
  if (nruns == 1 && runs[0].reps == 1 && f.contiguous &&
      static_cast<std::ptrdiff_t>(type_size(runs[0].basic)) == type_extent(runs[0].basic)) {
    char* o = static_cast<char*>(origin) + f.lb;
    const std::size_t bytes = runs[0].n * type_size(runs[0].basic);
    char* dst = put ? at + runs[0].off : o;
    const char* src = put ? o : at + runs[0].off;
    if (origin_dev) pt2pt::copy_any(dst, src, bytes);
    else std::memcpy(dst, src, bytes);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return MPI_SUCCESS;
  }
  if (origin_dev)
    return win_error(&w, MPI_ERR_TYPE, fn, "a non-contiguous datatype (%s) on device memory is not supported",
                     type_name(t).c_str());
  // Any layout: through a packed copy of the origin's data.
  const std::size_t bytes = static_cast<std::size_t>(count) * f.size;
  std::vector<char> packed(bytes ? bytes : 1);
  if (put) type_pack(origin, count, t, packed.data());
  const char* in = packed.data();
  char* out = packed.data();
  for (int i = 0; i < nruns; ++i)
    for (std::uint64_t k = 0; k < runs[i].reps; ++k) {
      char* b = at + runs[i].off + static_cast<std::int64_t>(k) * runs[i].stride;
      const auto basic = static_cast<MPI_Datatype>(runs[i].basic);
      const auto n = static_cast<std::size_t>(runs[i].n);
      if (put) {
        store(b, in, n, basic, false);
        in += n * type_size(basic);
      } else {
        load(out, b, n, basic, false);
        out += n * type_size(basic);
      }
    }
  if (!put) type_unpack(packed.data(), bytes, origin, count, t);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return MPI_SUCCESS;
}

}  // namespace ampi::rma
