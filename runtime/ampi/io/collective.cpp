// Two-phase collective buffering for the _all calls (ROMIO's scheme, written anew): the
// members agree on the file range that the call touches, split it into one contiguous
// domain per aggregator, and exchange data so that each aggregator accesses its domain in
// large contiguous pieces: for a write it gathers every member's pieces of its domain and
// writes each window of `cb_buffer_size` bytes with one pwrite (reading the window first
// only where the pieces leave holes in it); for a read it reads each window with one pread
// and sends every member its pieces. The messages go over the file's own communicator's
// collective context with the four tags the call took.
//
// Hints: cb_nodes (aggregators; default one per process, the lowest rank of each),
// cb_buffer_size (default 16 MiB), romio_cb_write / romio_cb_read ("disable" makes the _all
// calls independent accesses; "enable"/"automatic": two-phase).
#include "io/io.h"

#include <ucharm/converse.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

namespace ampi::io {

bool two_phase_enabled(File& f, Dir d) {
  if (file_comm(f).size() < 2) return false;
  const std::string v = hint(f, d == Dir::Write ? "romio_cb_write" : "romio_cb_read");
  return v != "disable";
}

namespace {

struct Range {
  std::int64_t lo, hi;  // hi <= lo: no data
  std::int32_t node, pad;
};

// A piece of a member's data for one aggregator: file offset and length.
struct Piece {
  std::int64_t off, len;
};

int exchange_error(File& f, int rc, const char* fn) {
  return file_error(&f, rc, fn, "the collective exchange among the members failed");
}

// Moves whole pieces between the file and `buf` (the window [lo, hi) of the file).
int window_io(File& f, Dir d, std::int64_t lo, std::int64_t hi, char* buf, const char* fn) {
  std::int64_t k = 0;
  while (k < hi - lo) {
    const auto want = static_cast<std::size_t>(std::min<std::int64_t>(hi - lo - k, 1 << 30));
    const ssize_t n = d == Dir::Write ? ::pwrite(f.fd, buf + k, want, lo + k) : ::pread(f.fd, buf + k, want, lo + k);
    if (n < 0) {
      if (errno == EINTR) continue;
      return file_error(&f, errno_class(errno), fn, "%s: %s at byte %lld: %s", f.path.c_str(),
                        d == Dir::Write ? "write" : "read", static_cast<long long>(lo + k), std::strerror(errno));
    }
    if (n == 0) {  // beyond the end of the file: zeros
      std::memset(buf + k, 0, static_cast<std::size_t>(hi - lo - k));
      break;
    }
    k += n;
  }
  return MPI_SUCCESS;
}

// Moves the file's bytes from `off` on to or from the pieces of memory `iov` names, back to
// back (preadv/pwritev, IOV_MAX at a time): no window buffer and no copy of ours. Beyond
// the end of the file a read gives zeros.
int vector_io(File& f, Dir d, std::int64_t off, std::vector<iovec>& iov, const char* fn) {
  std::size_t i = 0;
  while (i < iov.size()) {
    const int cnt = static_cast<int>(std::min<std::size_t>(iov.size() - i, IOV_MAX));
    const ssize_t n = d == Dir::Write ? ::pwritev(f.fd, &iov[i], cnt, off) : ::preadv(f.fd, &iov[i], cnt, off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return file_error(&f, errno_class(errno), fn, "%s: %s at byte %lld: %s", f.path.c_str(),
                        d == Dir::Write ? "write" : "read", static_cast<long long>(off), std::strerror(errno));
    }
    if (n == 0) {
      if (d == Dir::Write)
        return file_error(&f, MPI_ERR_IO, fn, "%s: write at byte %lld moved nothing", f.path.c_str(),
                          static_cast<long long>(off));
      for (; i < iov.size(); ++i) std::memset(iov[i].iov_base, 0, iov[i].iov_len);  // beyond the end
      break;
    }
    off += n;
    for (auto left = static_cast<std::size_t>(n); left > 0;) {  // past what moved (maybe inside an entry)
      if (left >= iov[i].iov_len) {
        left -= iov[i].iov_len;
        ++i;
      } else {
        iov[i].iov_base = static_cast<char*>(iov[i].iov_base) + left;
        iov[i].iov_len -= left;
        left = 0;
      }
    }
  }
  return MPI_SUCCESS;
}

class Lock {  // atomic mode: the window's byte range
 public:
  Lock(const File& f, bool write, std::int64_t lo, std::int64_t hi) : fd_(f.atomic ? f.fd : -1), lo_(lo), len_(hi - lo) {
    if (fd_ < 0) return;
    struct flock fl{};
    fl.l_type = write ? F_WRLCK : F_RDLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = lo_;
    fl.l_len = len_;
    while (::fcntl(fd_, F_OFD_SETLKW, &fl) != 0 && errno == EINTR) {}
  }
  ~Lock() {
    if (fd_ < 0) return;
    struct flock fl{};
    fl.l_type = F_UNLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = lo_;
    fl.l_len = len_;
    ::fcntl(fd_, F_OFD_SETLK, &fl);
  }

 private:
  int fd_;
  std::int64_t lo_, len_;
};

}  // namespace

int two_phase(File& f, Dir d, const std::vector<Seg>& segs, char* data, const int* tags, std::int64_t* done,
              const char* fn) {
  Comm& c = file_comm(f);
  const int n = c.size(), me = c.rank;
  *done = 0;
  // 1. Who touches what, and where each member runs.
  Range mine{0, 0, CmiMyPe(), 0};
  if (!segs.empty()) mine = Range{segs.front().off, segs.back().off + segs.back().len, CmiMyPe(), 0};
  std::vector<Range> all(static_cast<std::size_t>(n));
  if (int rc = coll_allgather(&mine, sizeof mine, MPI_BYTE, all.data(), c, tags[0])) return exchange_error(f, rc, fn);
  std::int64_t glo = LLONG_MAX, ghi = LLONG_MIN;
  for (const Range& r : all)
    if (r.hi > r.lo) glo = std::min(glo, r.lo), ghi = std::max(ghi, r.hi);
  if (glo >= ghi) return MPI_SUCCESS;  // nobody has data (every member sees it)

  // 2. The aggregators: cb_nodes of them spread over the ranks, or one per process.
  std::vector<int> aggs;
  const long long cb_nodes = hint_int(f, "cb_nodes", 0);
  if (cb_nodes > 0) {
    const int a = static_cast<int>(std::min<long long>(cb_nodes, n));
    for (int i = 0; i < a; ++i) aggs.push_back(static_cast<int>(static_cast<long long>(i) * n / a));
  } else {
    std::vector<int> seen;
    for (int r = 0; r < n; ++r)
      if (std::find(seen.begin(), seen.end(), all[static_cast<std::size_t>(r)].node) == seen.end()) {
        seen.push_back(all[static_cast<std::size_t>(r)].node);
        aggs.push_back(r);
      }
  }
  const int na = static_cast<int>(aggs.size());
  const std::int64_t dsize = (ghi - glo + na - 1) / na;
  auto domain_of = [&](std::int64_t off) { return static_cast<int>(std::min<std::int64_t>((off - glo) / dsize, na - 1)); };
  int my_agg = -1;
  for (int i = 0; i < na; ++i)
    if (aggs[static_cast<std::size_t>(i)] == me) my_agg = i;

  // 3. This member's pieces per aggregator (data for one aggregator is one slice of `data`:
  // both the pieces and the domains are in file order).
  std::vector<std::vector<Piece>> pieces(static_cast<std::size_t>(na));
  std::vector<std::int64_t> slice_at(static_cast<std::size_t>(na), 0), slice_len(static_cast<std::size_t>(na), 0);
  std::int64_t at = 0;
  for (const Seg& s : segs) {
    std::int64_t off = s.off, left = s.len;
    while (left > 0) {
      const int a = domain_of(off);
      const std::int64_t dend = a == na - 1 ? ghi : glo + (a + 1) * dsize;
      const std::int64_t take = std::min(left, dend - off);
      auto& v = pieces[static_cast<std::size_t>(a)];
      if (v.empty()) slice_at[static_cast<std::size_t>(a)] = at;
      if (!v.empty() && v.back().off + v.back().len == off) v.back().len += take;
      else v.push_back(Piece{off, take});
      slice_len[static_cast<std::size_t>(a)] += take;
      at += take;
      off += take;
      left -= take;
    }
  }

  // 4. Counts: every member tells every aggregator how many pieces and bytes it has there.
  std::vector<MPI_Request> reqs;
  std::vector<std::int64_t> counts_in(my_agg >= 0 ? 2 * static_cast<std::size_t>(n) : 0);
  std::vector<std::int64_t> counts_out(2 * static_cast<std::size_t>(na));
  for (int a = 0; a < na; ++a) {
    counts_out[2 * static_cast<std::size_t>(a)] = static_cast<std::int64_t>(pieces[static_cast<std::size_t>(a)].size());
    counts_out[2 * static_cast<std::size_t>(a) + 1] = slice_len[static_cast<std::size_t>(a)];
  }
  if (my_agg >= 0)
    for (int r = 0; r < n; ++r) {
      reqs.emplace_back();
      irecv(&counts_in[2 * static_cast<std::size_t>(r)], 2, MPI_INT64_T, r, tags[1], c, Ctx::Coll, &reqs.back());
    }
  for (int a = 0; a < na; ++a) {
    reqs.emplace_back();
    isend(&counts_out[2 * static_cast<std::size_t>(a)], 2, MPI_INT64_T, aggs[static_cast<std::size_t>(a)], tags[1], c,
          Ctx::Coll, &reqs.back());
  }
  if (int rc = wait_all(static_cast<int>(reqs.size()), reqs.data(), nullptr)) return exchange_error(f, rc, fn);
  reqs.clear();

  // 5. The pieces (and for writes their data) go to the aggregators.
  // An aggregator's own data never travels: for a write its pieces are read from `data`, for
  // a read its answer is written straight there (no message to itself, no copy of it).
  std::vector<std::vector<Piece>> theirs(my_agg >= 0 ? static_cast<std::size_t>(n) : 0);
  std::vector<std::unique_ptr<char[]>> their_data(theirs.size());  // uninitialized: filled whole
  auto too_big = [](std::int64_t b) { return b > INT_MAX; };
  if (my_agg >= 0)
    for (int r = 0; r < n; ++r) {
      const std::int64_t np = counts_in[2 * static_cast<std::size_t>(r)], nb = counts_in[2 * static_cast<std::size_t>(r) + 1];
      if (np == 0) continue;
      if (too_big(np * static_cast<std::int64_t>(sizeof(Piece))) || too_big(nb))
        return file_error(&f, MPI_ERR_IO, fn, "one exchange is larger than 2 GiB: set a larger cb_nodes");
      theirs[static_cast<std::size_t>(r)].resize(static_cast<std::size_t>(np));
      reqs.emplace_back();
      irecv(theirs[static_cast<std::size_t>(r)].data(), static_cast<int>(np * sizeof(Piece)), MPI_BYTE, r, tags[2], c,
            Ctx::Coll, &reqs.back());
      if (d == Dir::Write && r != me) {
        their_data[static_cast<std::size_t>(r)].reset(new char[static_cast<std::size_t>(nb)]);
        reqs.emplace_back();
        irecv(their_data[static_cast<std::size_t>(r)].get(), static_cast<int>(nb), MPI_BYTE, r, tags[2], c, Ctx::Coll,
              &reqs.back());
      }
    }
  for (int a = 0; a < na; ++a) {
    const auto& v = pieces[static_cast<std::size_t>(a)];
    if (v.empty()) continue;
    const int dest = aggs[static_cast<std::size_t>(a)];
    reqs.emplace_back();
    isend(v.data(), static_cast<int>(v.size() * sizeof(Piece)), MPI_BYTE, dest, tags[2], c, Ctx::Coll, &reqs.back());
    if (d == Dir::Write && a != my_agg) {
      reqs.emplace_back();
      isend(data + slice_at[static_cast<std::size_t>(a)], static_cast<int>(slice_len[static_cast<std::size_t>(a)]), MPI_BYTE,
            dest, tags[2], c, Ctx::Coll, &reqs.back());
    }
  }
  // Reads: post the receives of the answers now (they land in this member's slices).
  std::vector<MPI_Request> answers;
  if (d == Dir::Read)
    for (int a = 0; a < na; ++a) {
      if (pieces[static_cast<std::size_t>(a)].empty() || a == my_agg) continue;
      answers.emplace_back();
      irecv(data + slice_at[static_cast<std::size_t>(a)], static_cast<int>(slice_len[static_cast<std::size_t>(a)]), MPI_BYTE,
            aggs[static_cast<std::size_t>(a)], tags[3], c, Ctx::Coll, &answers.back());
    }
  if (int rc = wait_all(static_cast<int>(reqs.size()), reqs.data(), nullptr)) return exchange_error(f, rc, fn);
  reqs.clear();

  // 6. The aggregator's file access, window by window.
  int io_rc = MPI_SUCCESS;
  if (my_agg >= 0) {
    struct Ref {
      std::int64_t off, len;
      char* p;  // the piece's bytes: the sender's data (writes) or the answer (reads)
    };
    std::vector<Ref> refs;
    std::vector<std::unique_ptr<char[]>> replies(static_cast<std::size_t>(n));  // filled whole by the reads
    for (int r = 0; r < n; ++r) {
      const auto& v = theirs[static_cast<std::size_t>(r)];
      if (v.empty()) continue;
      char* base;
      if (r == me) {
        base = data + slice_at[static_cast<std::size_t>(my_agg)];  // this member's own slice
      } else if (d == Dir::Write) {
        base = their_data[static_cast<std::size_t>(r)].get();
      } else {
        replies[static_cast<std::size_t>(r)].reset(
            new char[static_cast<std::size_t>(counts_in[2 * static_cast<std::size_t>(r) + 1])]);
        base = replies[static_cast<std::size_t>(r)].get();
      }
      std::int64_t k = 0;
      for (const Piece& p : v) {
        refs.push_back(Ref{p.off, p.len, base + k});
        k += p.len;
      }
    }
    std::stable_sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) { return a.off < b.off; });
    const std::int64_t window = hint_int(f, "cb_buffer_size", 16 << 20);
    std::vector<char> buf;
    std::vector<iovec> iov;
    std::size_t first = 0;  // the first ref that may reach into the current window
    std::int64_t lo = refs.empty() ? 0 : refs.front().off;
    std::int64_t end = 0;
    for (const Ref& r : refs) end = std::max(end, r.off + r.len);
    while (!refs.empty() && lo < end && !io_rc) {
      // Skip to the next byte that some piece covers.
      while (first < refs.size() && refs[first].off + refs[first].len <= lo) ++first;
      if (first == refs.size()) break;
      lo = std::max(lo, refs[first].off);
      const std::int64_t hi = std::min(end, lo + window);
      // The pieces' extent within [lo, hi), and whether they cover it without holes.
      std::int64_t covered = lo, top = lo;
      bool holes = false;
      for (std::size_t i = first; i < refs.size() && refs[i].off < hi; ++i) {
        if (refs[i].off > covered) holes = true;
        covered = std::max(covered, std::min(hi, refs[i].off + refs[i].len));
        top = std::max(top, std::min(hi, refs[i].off + refs[i].len));
      }
      // Pieces back to back, none overlapping another and none leaving a hole (the usual
      // case: members' views interleave): the kernel moves them in place.
      iov.clear();
      std::int64_t at_end = lo;
      bool dense = !holes;
      for (std::size_t i = first; dense && i < refs.size() && refs[i].off < top; ++i) {
        const Ref& r = refs[i];
        const std::int64_t a = std::max(lo, r.off), b = std::min(top, r.off + r.len);
        if (b <= a) continue;
        if (a != at_end) dense = false;  // a hole or an overlap
        iov.push_back(iovec{r.p + (a - r.off), static_cast<std::size_t>(b - a)});
        at_end = b;
      }
      if (dense && at_end == top) {
        Lock lock(f, d == Dir::Write, lo, top);
        io_rc = vector_io(f, d, lo, iov, fn);
        lo = top;
        continue;
      }
      buf.resize(static_cast<std::size_t>(top - lo));
      {
        Lock lock(f, d == Dir::Write, lo, top);
        // A write window with holes is read first, so one pwrite keeps the bytes between
        // the pieces; where the file cannot be read, each piece is written by itself.
        const bool piecewise = d == Dir::Write && holes && !f.readable;
        if (d == Dir::Read || (holes && !piecewise)) io_rc = window_io(f, Dir::Read, lo, top, buf.data(), fn);
        for (std::size_t i = first; !io_rc && i < refs.size() && refs[i].off < top; ++i) {
          const Ref& r = refs[i];
          const std::int64_t a = std::max(lo, r.off), b = std::min(top, r.off + r.len);
          if (b <= a) continue;
          if (d == Dir::Write) std::memcpy(buf.data() + (a - lo), r.p + (a - r.off), static_cast<std::size_t>(b - a));
          else std::memcpy(r.p + (a - r.off), buf.data() + (a - lo), static_cast<std::size_t>(b - a));
        }
        if (!io_rc && d == Dir::Write && !piecewise) io_rc = window_io(f, Dir::Write, lo, top, buf.data(), fn);
        for (std::size_t i = first; piecewise && !io_rc && i < refs.size() && refs[i].off < top; ++i) {
          const std::int64_t a = std::max(lo, refs[i].off), b = std::min(top, refs[i].off + refs[i].len);
          if (b > a) io_rc = window_io(f, Dir::Write, a, b, buf.data() + (a - lo), fn);
        }
      }
      lo = top;
    }
    // Reads: every member gets its answer (zeros where the read failed).
    if (d == Dir::Read && io_rc)
      for (int r = 0; r < n; ++r) {
        if (theirs[static_cast<std::size_t>(r)].empty()) continue;
        const auto bytes = static_cast<std::size_t>(counts_in[2 * static_cast<std::size_t>(r) + 1]);
        std::memset(r == me ? data + slice_at[static_cast<std::size_t>(my_agg)] : replies[static_cast<std::size_t>(r)].get(),
                    0, bytes);
      }
    if (d == Dir::Read)
      for (int r = 0; r < n; ++r) {
        if (theirs[static_cast<std::size_t>(r)].empty() || r == me) continue;
        reqs.emplace_back();
        isend(replies[static_cast<std::size_t>(r)].get(), static_cast<int>(counts_in[2 * static_cast<std::size_t>(r) + 1]),
              MPI_BYTE, r, tags[3], c, Ctx::Coll, &reqs.back());
      }
    if (int rc = wait_all(static_cast<int>(reqs.size()), reqs.data(), nullptr); rc && !io_rc) io_rc = exchange_error(f, rc, fn);
  }
  if (int rc = wait_all(static_cast<int>(answers.size()), answers.data(), nullptr); rc && !io_rc)
    io_rc = exchange_error(f, rc, fn);

  // Every member learns whether any aggregator failed.
  int worst = io_rc;
  if (int rc = coll_allreduce(&io_rc, &worst, 1, MPI_INT, MPI_MAX, c, tags[4])) return exchange_error(f, rc, fn);
  if (worst != MPI_SUCCESS && io_rc == MPI_SUCCESS)
    io_rc = file_error(&f, worst, fn, "%s: another member's part of the collective access failed", f.path.c_str());

  // What this member's call moved: all of it (writes), or its data before the end of the file.
  std::int64_t total = 0;
  for (const Seg& s : segs) total += s.len;
  if (d == Dir::Write) {
    *done = total;
  } else {
    struct stat sb{};
    const std::int64_t eof = ::fstat(f.fd, &sb) == 0 ? sb.st_size : LLONG_MAX;
    for (const Seg& s : segs) {
      if (s.off + s.len <= eof) {
        *done += s.len;
        continue;
      }
      *done += std::max<std::int64_t>(0, eof - s.off);
      break;
    }
  }
  return io_rc;
}

}  // namespace ampi::io
