// Data access (MPI 3.1 §13.4): explicit offsets, individual and shared file pointers,
// ordered, nonblocking (I-forms: a task of the rank, the file pointers advanced at the call),
// split collectives (the work done at _begin, the outcome handed over at _end), seek and
// positions. Every access maps the view's data to file ranges (view.cpp) and moves them
// with pread/pwrite (io_segs) or, for the collective calls, with two-phase collective
// buffering (collective.cpp). Atomic mode holds a byte-range lock (fcntl F_OFD_SETLKW: per
// open file description, so ranks of one process exclude each other too) over the access's
// file range: overlapping accesses of concurrent ranks are then atomic with respect to each other.
#include "io/io.h"
#include "pt2pt/status.h"
#include "rank.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ampi::io {

namespace {

// Holds a byte-range lock while it lives (atomic mode).
class RangeLock {
 public:
  RangeLock(int fd, bool write, std::int64_t lo, std::int64_t hi) : fd_(fd) {
    struct flock fl{};
    fl.l_type = write ? F_WRLCK : F_RDLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = lo;
    fl.l_len = hi - lo;
    while (::fcntl(fd, F_OFD_SETLKW, &fl) != 0 && errno == EINTR) {}
    lo_ = lo;
    len_ = hi - lo;
  }
  ~RangeLock() {
    struct flock fl{};
    fl.l_type = F_UNLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = lo_;
    fl.l_len = len_;
    ::fcntl(fd_, F_OFD_SETLK, &fl);
  }
  RangeLock(const RangeLock&) = delete;
  RangeLock& operator=(const RangeLock&) = delete;

 private:
  int fd_;
  std::int64_t lo_ = 0, len_ = 0;
};

}  // namespace

int io_segs(File& f, Dir d, const std::vector<Seg>& segs, char* data, std::int64_t* done, const char* fn) {
  *done = 0;
  if (segs.empty()) return MPI_SUCCESS;
  std::unique_ptr<RangeLock> lock;
  if (f.atomic)
    lock = std::make_unique<RangeLock>(f.fd, d == Dir::Write, segs.front().off, segs.back().off + segs.back().len);
  std::int64_t at = 0;
  for (const Seg& s : segs) {
    std::int64_t k = 0;
    while (k < s.len) {
      const std::size_t want = static_cast<std::size_t>(std::min<std::int64_t>(s.len - k, 1 << 30));
      const ssize_t n = d == Dir::Write ? ::pwrite(f.fd, data + at + k, want, s.off + k)
                                        : ::pread(f.fd, data + at + k, want, s.off + k);
      if (n < 0) {
        if (errno == EINTR) continue;
        *done = at + k;
        return file_error(&f, errno_class(errno), fn, "%s: %s at byte %lld: %s", f.path.c_str(),
                          d == Dir::Write ? "write" : "read", static_cast<long long>(s.off + k), std::strerror(errno));
      }
      if (n == 0) {  // the end of the file (reads): the data read so far
        *done = at + k;
        return MPI_SUCCESS;
      }
      k += n;
    }
    at += s.len;
  }
  *done = at;
  return MPI_SUCCESS;
}

namespace {

enum class Ptr : std::uint8_t { Explicit, Individual, Shared };

void fill_status(MPI_Status* st, std::int64_t bytes) {
  if (!st || st == MPI_STATUS_IGNORE) return;
  const int keep = st->MPI_ERROR;
  *st = MPI_Status{};
  st->MPI_SOURCE = MPI_ANY_SOURCE;
  st->MPI_TAG = MPI_ANY_TAG;
  st->MPI_ERROR = keep;
  pt2pt::status_set_bytes(*st, bytes);
}

// The checks every data access shares.
File* check(MPI_File fh, Dir d, Ptr ptr, const void* buf, int count, MPI_Datatype t, const char* fn, int* rc) {
  File* f = file_get(fh, fn, rc);
  if (!f) return nullptr;
#define FAIL(code, ...)                         \
  do {                                          \
    *rc = file_error(f, code, fn, __VA_ARGS__); \
    return nullptr;                             \
  } while (0)
  if (count < 0) FAIL(MPI_ERR_COUNT, "count %d is negative", count);
  if (!type_committed(t)) FAIL(MPI_ERR_TYPE, "%s is not a committed datatype", type_name(t).c_str());
  view_flatten(*f);
  const auto bytes = static_cast<std::int64_t>(count) * static_cast<std::int64_t>(type_size(t));
  if (!buf && bytes > 0) FAIL(MPI_ERR_BUFFER, "buf is NULL");
  if (bytes % f->e_size != 0)
    FAIL(MPI_ERR_TYPE, "%lld bytes are not a whole number of etypes (%lld bytes each)", 
                static_cast<long long>(bytes), static_cast<long long>(f->e_size));
  if (d == Dir::Write && (f->amode & MPI_MODE_RDONLY))
    FAIL(MPI_ERR_READ_ONLY, "%s was opened MPI_MODE_RDONLY", f->path.c_str());
  if (d == Dir::Read && (f->amode & MPI_MODE_WRONLY))
    FAIL(MPI_ERR_ACCESS, "%s was opened MPI_MODE_WRONLY", f->path.c_str());
  if (ptr != Ptr::Shared && (f->amode & MPI_MODE_SEQUENTIAL))
    FAIL(MPI_ERR_UNSUPPORTED_OPERATION, "%s was opened MPI_MODE_SEQUENTIAL (only shared file pointers)",
         f->path.c_str());
  if (ptr == Ptr::Shared && f->shfp_fd < 0)
    FAIL(MPI_ERR_IO, "the shared file pointer of %s is not available: %s", f->path.c_str(),
                f->shfp_error.c_str());
  if (f->ft_size == 0 && bytes > 0) FAIL(MPI_ERR_TYPE, "the view's filetype holds no data");
  return f;
#undef FAIL
}

// The shared file pointer (etypes): *old = its value; then it becomes old + delta (add) or
// `delta` (set). Under an exclusive lock of the hidden file.
int shfp_update(File& f, std::int64_t delta, bool set, std::int64_t* old, const char* fn) {
  RangeLock lock(f.shfp_fd, true, 0, 8);
  std::int64_t v = 0;
  const ssize_t n = ::pread(f.shfp_fd, &v, sizeof v, 0);
  if (n < 0) return file_error(&f, MPI_ERR_IO, fn, "%s: %s", f.shfp_path.c_str(), std::strerror(errno));
  if (n != static_cast<ssize_t>(sizeof v)) v = 0;
  *old = v;
  const std::int64_t nv = set ? delta : v + delta;
  if (::pwrite(f.shfp_fd, &nv, sizeof nv, 0) != static_cast<ssize_t>(sizeof nv))
    return file_error(&f, MPI_ERR_IO, fn, "%s: %s", f.shfp_path.c_str(), std::strerror(errno));
  return MPI_SUCCESS;
}

// The transfer itself: `count` t's at `buf` to or from the file ranges `segs` (the view's
// data mapped when the access was started), in representation `rep`.
int execute(File& f, Dir d, const std::vector<Seg>& segs, Rep rep, void* buf, int count, MPI_Datatype t, bool coll,
            const int* tags, std::int64_t* done, const char* fn) {
  const auto bytes = static_cast<std::int64_t>(count) * static_cast<std::int64_t>(type_size(t));
  std::vector<char> data;
  int rc;
  const bool tp = coll && two_phase_enabled(f, d);
  // Memory that is one contiguous run, in the native representation, moves as it is: a
  // packed copy would double the memory of a large access (HDF5 writes a dataset above
  // 2 GiB in one call) and add a pass over its bytes. A read that stops at the end of the
  // file mid-element leaves that element's first bytes in the buffer (the status counts
  // whole elements only).
  TypeFacts facts;
  if (rep != Rep::External32 && bytes > 0 && type_facts(t, facts) && facts.contiguous) {
    char* p = static_cast<char*>(buf) + facts.lb;
    return tp ? two_phase(f, d, segs, p, tags, done, fn) : io_segs(f, d, segs, p, done, fn);
  }
  if (d == Dir::Write) {
    if ((rc = rep_to_file(f, rep, buf, count, t, data, fn))) {
      // The others still take part in a collective exchange (with no data from this rank).
      if (tp) two_phase(f, d, {}, nullptr, tags, done, fn);
      return rc;
    }
    rc = tp ? two_phase(f, d, segs, data.data(), tags, done, fn) : io_segs(f, d, segs, data.data(), done, fn);
    return rc;
  }
  data.resize(static_cast<std::size_t>(bytes));
  rc = tp ? two_phase(f, d, segs, data.data(), tags, done, fn) : io_segs(f, d, segs, data.data(), done, fn);
  if (int e = rep_from_file(f, rep, data, static_cast<std::size_t>(*done), buf, count, t, fn)) rc = rc ? rc : e;
  return rc;
}

// The file ranges of an access of `count` t's from data byte `from` of f's current view.
std::vector<Seg> plan(File& f, std::int64_t from, int count, MPI_Datatype t) {
  std::vector<Seg> segs;
  view_map(f, from, static_cast<std::int64_t>(count) * static_cast<std::int64_t>(type_size(t)), segs);
  return segs;
}

struct Call {
  MPI_File fh;
  Dir d;
  Ptr ptr;
  bool coll;
  bool ordered;
  MPI_Offset offset;
  void* buf;
  int count;
  MPI_Datatype t;
  const char* fn;
};

// Everything but the transfer: where it starts (advancing the file pointers), the tags of a
// collective. For nonblocking calls the pointers advance by the whole request.
int prepare(const Call& c, File& f, std::int64_t* from, int* tags) {
  const auto bytes = static_cast<std::int64_t>(c.count) * static_cast<std::int64_t>(type_size(c.t));
  const std::int64_t etypes = bytes / f.e_size;
  Comm& d = file_comm(f);
  if (c.coll)
    for (int i = 0; i < kTwoPhaseTags; ++i) tags[i] = coll_tag(d);
  switch (c.ptr) {
    case Ptr::Explicit:
      if (c.offset < 0) return file_error(&f, MPI_ERR_ARG, c.fn, "offset %lld is negative", c.offset);
      *from = c.offset * f.e_size;
      return MPI_SUCCESS;
    case Ptr::Individual:
      *from = f.pos * f.e_size;
      f.pos += etypes;
      return MPI_SUCCESS;
    case Ptr::Shared:
      break;
  }
  std::int64_t old = 0;
  if (!c.ordered) {
    if (int rc = shfp_update(f, etypes, false, &old, c.fn)) return rc;
    *from = old * f.e_size;
    return MPI_SUCCESS;
  }
  // Ordered: rank order; rank 0 advances the pointer by everyone's total.
  std::vector<std::int64_t> all(static_cast<std::size_t>(d.size()));
  if (int rc = coll_allgather(&etypes, 1, MPI_INT64_T, all.data(), d, coll_tag(d)))
    return file_error(&f, rc, c.fn, "the members could not agree");
  std::int64_t total = 0, before = 0;
  for (int r = 0; r < d.size(); ++r) {
    if (r == d.rank) before = total;
    total += all[static_cast<std::size_t>(r)];
  }
  std::int64_t base[2] = {0, 0};
  if (d.rank == 0) base[1] = shfp_update(f, total, false, &base[0], c.fn);
  if (int rc = coll_bcast(base, 2, MPI_INT64_T, 0, d, coll_tag(d)))
    return file_error(&f, rc, c.fn, "the members could not agree");
  if (base[1]) return file_error(&f, static_cast<int>(base[1]), c.fn, "the shared file pointer could not be advanced");
  *from = (base[0] + before) * f.e_size;
  return MPI_SUCCESS;
}

int blocking(const Call& c, MPI_Status* st) {
  int rc;
  File* f = check(c.fh, c.d, c.ptr, c.buf, c.count, c.t, c.fn, &rc);
  if (!f) return rc;
  if (c.coll && f->split_active)
    return file_error(f, MPI_ERR_OTHER, c.fn, "a split collective is still active on %s", f->path.c_str());
  std::int64_t from = 0;
  int tags[kTwoPhaseTags] = {};
  const MPI_Offset pos0 = f->pos;
  if ((rc = prepare(c, *f, &from, tags))) return rc;
  std::int64_t done = 0;
  rc = execute(*f, c.d, plan(*f, from, c.count, c.t), f->rep, c.buf, c.count, c.t, c.coll, tags, &done, c.fn);
  if (c.ptr == Ptr::Individual) f->pos = pos0 + done / f->e_size;  // a read stops at the end of the file
  fill_status(st, done);
  return rc;
}

// A nonblocking access: a task of the rank does the transfer, on the file ranges and in the
// representation of the view when the call was made (the view may change before it runs).
struct Job {
  MPI_File fh;
  Dir d;
  std::int64_t from;
  std::vector<Seg> segs;
  Rep rep;
  void* buf;
  int count;
  MPI_Datatype t;
  bool coll;
  int tags[kTwoPhaseTags];
  MPI_Request req = MPI_REQUEST_NULL;
  const char* fn;
};

int job_body(void* arg) {
  std::unique_ptr<Job> j(static_cast<Job*>(arg));
  int rc;
  File* f = file_get(j->fh, j->fn, &rc);
  std::int64_t done = 0;
  if (f) rc = execute(*f, j->d, j->segs, j->rep, j->buf, j->count, j->t, j->coll, j->tags, &done, j->fn);
  pt2pt::status_set_bytes(current_rank()->p2p().req(j->req).status, done);
  type_release(j->t);
  return rc;
}

int nonblocking(const Call& c, MPI_Request* request) {
  int rc;
  File* f = check(c.fh, c.d, c.ptr, c.buf, c.count, c.t, c.fn, &rc);
  if (!f) return rc;
  if (!request) return file_error(f, MPI_ERR_ARG, c.fn, "request is NULL");
  if (c.coll && f->split_active)
    return file_error(f, MPI_ERR_OTHER, c.fn, "a split collective is still active on %s", f->path.c_str());
  auto j = std::make_unique<Job>();
  if ((rc = prepare(c, *f, &j->from, j->tags))) return rc;
  j->segs = plan(*f, j->from, c.count, c.t);
  j->rep = f->rep;
  j->fh = c.fh;
  j->d = c.d;
  j->buf = c.buf;
  j->count = c.count;
  j->t = c.t;
  j->coll = c.coll;
  j->fn = c.fn;
  type_retain(c.t);
  Job* raw = j.release();
  // The task runs once this thread waits or yields: its request handle is known by then.
  const MPI_Request h = start_task(job_body, raw);
  raw->req = h;
  request_set_comm(h, f->comm);
  *request = h;
  return MPI_SUCCESS;
}

// Split collectives: which _begin is active (its _end must match).
enum SplitKind { kReadAt = 1, kWriteAt, kReadAll, kWriteAll, kReadOrdered, kWriteOrdered };

int split_begin(const Call& c, int kind) {
  int rc;
  File* f = file_get(c.fh, c.fn, &rc);
  if (!f) return rc;
  if (f->split_active)
    return file_error(f, MPI_ERR_OTHER, c.fn, "a split collective is already active on %s", f->path.c_str());
  Call all = c;
  MPI_Status st{};
  rc = blocking(all, &st);
  if ((f = file_get(c.fh, c.fn, &rc)) == nullptr) return rc;
  f->split_active = true;
  f->split_kind = kind;
  f->split_buf = c.buf;
  f->split_status = st;
  f->split_rc = rc;
  return rc;
}

int split_end(MPI_File fh, const void* buf, MPI_Status* status, int kind, const char* fn) {
  int rc;
  File* f = file_get(fh, fn, &rc);
  if (!f) return rc;
  if (!f->split_active || f->split_kind != kind)
    return file_error(f, MPI_ERR_OTHER, fn, "no matching split collective was begun on %s", f->path.c_str());
  if (buf != f->split_buf) return file_error(f, MPI_ERR_BUFFER, fn, "buf is not the buffer given to the _begin call");
  f->split_active = false;
  if (status && status != MPI_STATUS_IGNORE) {
    const int keep = status->MPI_ERROR;
    *status = f->split_status;
    status->MPI_ERROR = keep;
  }
  return f->split_rc;
}

// The file pointer's new value for a seek (etypes).
int seek_target(File& f, MPI_Offset offset, int whence, MPI_Offset current, MPI_Offset* out, const char* fn) {
  switch (whence) {
    case MPI_SEEK_SET: *out = offset; break;
    case MPI_SEEK_CUR: *out = current + offset; break;
    case MPI_SEEK_END: {
      struct stat sb{};
      if (::fstat(f.fd, &sb) != 0) return file_error(&f, MPI_ERR_IO, fn, "%s: %s", f.path.c_str(), std::strerror(errno));
      *out = view_position_of(f, sb.st_size) + offset;
      break;
    }
    default: return file_error(&f, MPI_ERR_ARG, fn, "whence %d is not MPI_SEEK_SET, MPI_SEEK_CUR or MPI_SEEK_END", whence);
  }
  if (*out < 0) return file_error(&f, MPI_ERR_ARG, fn, "the new position %lld is negative", *out);
  return MPI_SUCCESS;
}

}  // namespace
}  // namespace ampi::io

using namespace ampi;
using namespace ampi::io;

#define IO_CALL(fh, d, ptr, coll, ordered, offset, buf, count, t, fn) \
  Call { fh, d, ptr, coll, ordered, offset, const_cast<void*>(static_cast<const void*>(buf)), count, t, fn }

#pragma GCC visibility push(default)
extern "C" {

// ---- explicit offsets
int PMPI_File_read_at(MPI_File fh, MPI_Offset offset, void* buf, int count, MPI_Datatype datatype, MPI_Status* status) {
  return blocking(IO_CALL(fh, Dir::Read, Ptr::Explicit, false, false, offset, buf, count, datatype, "MPI_File_read_at"), status);
}
int PMPI_File_read_at_all(MPI_File fh, MPI_Offset offset, void* buf, int count, MPI_Datatype datatype,
                          MPI_Status* status) {
  return blocking(IO_CALL(fh, Dir::Read, Ptr::Explicit, true, false, offset, buf, count, datatype, "MPI_File_read_at_all"), status);
}
int PMPI_File_write_at(MPI_File fh, MPI_Offset offset, const void* buf, int count, MPI_Datatype datatype,
                       MPI_Status* status) {
  return blocking(IO_CALL(fh, Dir::Write, Ptr::Explicit, false, false, offset, buf, count, datatype, "MPI_File_write_at"), status);
}
int PMPI_File_write_at_all(MPI_File fh, MPI_Offset offset, const void* buf, int count, MPI_Datatype datatype,
                           MPI_Status* status) {
  return blocking(IO_CALL(fh, Dir::Write, Ptr::Explicit, true, false, offset, buf, count, datatype, "MPI_File_write_at_all"),
                  status);
}
int PMPI_File_iread_at(MPI_File fh, MPI_Offset offset, void* buf, int count, MPI_Datatype datatype, MPI_Request* request) {
  return nonblocking(IO_CALL(fh, Dir::Read, Ptr::Explicit, false, false, offset, buf, count, datatype, "MPI_File_iread_at"), request);
}
int PMPI_File_iwrite_at(MPI_File fh, MPI_Offset offset, const void* buf, int count, MPI_Datatype datatype,
                        MPI_Request* request) {
  return nonblocking(IO_CALL(fh, Dir::Write, Ptr::Explicit, false, false, offset, buf, count, datatype, "MPI_File_iwrite_at"),
                     request);
}
int PMPI_File_iread_at_all(MPI_File fh, MPI_Offset offset, void* buf, int count, MPI_Datatype datatype,
                           MPI_Request* request) {
  return nonblocking(IO_CALL(fh, Dir::Read, Ptr::Explicit, true, false, offset, buf, count, datatype, "MPI_File_iread_at_all"),
                     request);
}
int PMPI_File_iwrite_at_all(MPI_File fh, MPI_Offset offset, const void* buf, int count, MPI_Datatype datatype,
                            MPI_Request* request) {
  return nonblocking(IO_CALL(fh, Dir::Write, Ptr::Explicit, true, false, offset, buf, count, datatype, "MPI_File_iwrite_at_all"),
                     request);
}

// ---- individual file pointers
int PMPI_File_read(MPI_File fh, void* buf, int count, MPI_Datatype datatype, MPI_Status* status) {
  return blocking(IO_CALL(fh, Dir::Read, Ptr::Individual, false, false, 0, buf, count, datatype, "MPI_File_read"), status);
}
int PMPI_File_read_all(MPI_File fh, void* buf, int count, MPI_Datatype datatype, MPI_Status* status) {
  return blocking(IO_CALL(fh, Dir::Read, Ptr::Individual, true, false, 0, buf, count, datatype, "MPI_File_read_all"), status);
}
int PMPI_File_write(MPI_File fh, const void* buf, int count, MPI_Datatype datatype, MPI_Status* status) {
  return blocking(IO_CALL(fh, Dir::Write, Ptr::Individual, false, false, 0, buf, count, datatype, "MPI_File_write"), status);
}
int PMPI_File_write_all(MPI_File fh, const void* buf, int count, MPI_Datatype datatype, MPI_Status* status) {
  return blocking(IO_CALL(fh, Dir::Write, Ptr::Individual, true, false, 0, buf, count, datatype, "MPI_File_write_all"), status);
}
int PMPI_File_iread(MPI_File fh, void* buf, int count, MPI_Datatype datatype, MPI_Request* request) {
  return nonblocking(IO_CALL(fh, Dir::Read, Ptr::Individual, false, false, 0, buf, count, datatype, "MPI_File_iread"), request);
}
int PMPI_File_iwrite(MPI_File fh, const void* buf, int count, MPI_Datatype datatype, MPI_Request* request) {
  return nonblocking(IO_CALL(fh, Dir::Write, Ptr::Individual, false, false, 0, buf, count, datatype, "MPI_File_iwrite"), request);
}
int PMPI_File_iread_all(MPI_File fh, void* buf, int count, MPI_Datatype datatype, MPI_Request* request) {
  return nonblocking(IO_CALL(fh, Dir::Read, Ptr::Individual, true, false, 0, buf, count, datatype, "MPI_File_iread_all"), request);
}
int PMPI_File_iwrite_all(MPI_File fh, const void* buf, int count, MPI_Datatype datatype, MPI_Request* request) {
  return nonblocking(IO_CALL(fh, Dir::Write, Ptr::Individual, true, false, 0, buf, count, datatype, "MPI_File_iwrite_all"),
                     request);
}

int PMPI_File_seek(MPI_File fh, MPI_Offset offset, int whence) {
  const char* fn = "MPI_File_seek";
  int rc;
  File* f = file_get(fh, fn, &rc);
  if (!f) return rc;
  if (f->amode & MPI_MODE_SEQUENTIAL)
    return file_error(f, MPI_ERR_UNSUPPORTED_OPERATION, fn, "%s was opened MPI_MODE_SEQUENTIAL", f->path.c_str());
  MPI_Offset to = 0;
  if ((rc = seek_target(*f, offset, whence, f->pos, &to, fn))) return rc;
  f->pos = to;
  return MPI_SUCCESS;
}

int PMPI_File_get_position(MPI_File fh, MPI_Offset* offset) {
  const char* fn = "MPI_File_get_position";
  int rc;
  File* f = file_get(fh, fn, &rc);
  if (!f) return rc;
  if (!offset) return file_error(f, MPI_ERR_ARG, fn, "offset is NULL");
  if (f->amode & MPI_MODE_SEQUENTIAL)
    return file_error(f, MPI_ERR_UNSUPPORTED_OPERATION, fn, "%s was opened MPI_MODE_SEQUENTIAL", f->path.c_str());
  *offset = f->pos;
  return MPI_SUCCESS;
}

// ---- shared file pointer
int PMPI_File_read_shared(MPI_File fh, void* buf, int count, MPI_Datatype datatype, MPI_Status* status) {
  return blocking(IO_CALL(fh, Dir::Read, Ptr::Shared, false, false, 0, buf, count, datatype, "MPI_File_read_shared"), status);
}
int PMPI_File_write_shared(MPI_File fh, const void* buf, int count, MPI_Datatype datatype, MPI_Status* status) {
  return blocking(IO_CALL(fh, Dir::Write, Ptr::Shared, false, false, 0, buf, count, datatype, "MPI_File_write_shared"), status);
}
int PMPI_File_iread_shared(MPI_File fh, void* buf, int count, MPI_Datatype datatype, MPI_Request* request) {
  return nonblocking(IO_CALL(fh, Dir::Read, Ptr::Shared, false, false, 0, buf, count, datatype, "MPI_File_iread_shared"), request);
}
int PMPI_File_iwrite_shared(MPI_File fh, const void* buf, int count, MPI_Datatype datatype, MPI_Request* request) {
  return nonblocking(IO_CALL(fh, Dir::Write, Ptr::Shared, false, false, 0, buf, count, datatype, "MPI_File_iwrite_shared"),
                     request);
}
int PMPI_File_read_ordered(MPI_File fh, void* buf, int count, MPI_Datatype datatype, MPI_Status* status) {
  return blocking(IO_CALL(fh, Dir::Read, Ptr::Shared, true, true, 0, buf, count, datatype, "MPI_File_read_ordered"), status);
}
int PMPI_File_write_ordered(MPI_File fh, const void* buf, int count, MPI_Datatype datatype, MPI_Status* status) {
  return blocking(IO_CALL(fh, Dir::Write, Ptr::Shared, true, true, 0, buf, count, datatype, "MPI_File_write_ordered"), status);
}

int PMPI_File_seek_shared(MPI_File fh, MPI_Offset offset, int whence) {
  const char* fn = "MPI_File_seek_shared";
  int rc;
  File* f = file_get(fh, fn, &rc);
  if (!f) return rc;
  if (f->shfp_fd < 0)
    return file_error(f, MPI_ERR_IO, fn, "the shared file pointer of %s is not available: %s", f->path.c_str(),
                      f->shfp_error.c_str());
  Comm& d = file_comm(*f);
  // Collective: every member passes the same offset and whence; rank 0 moves the pointer.
  std::int64_t mine[2] = {offset, whence};
  std::vector<std::int64_t> all(2 * static_cast<std::size_t>(d.size()));
  if ((rc = coll_allgather(mine, 2, MPI_INT64_T, all.data(), d, coll_tag(d))))
    return file_error(f, rc, fn, "the members could not agree");
  for (int r = 0; r < d.size(); ++r)
    if (all[2 * static_cast<std::size_t>(r)] != mine[0] || all[2 * static_cast<std::size_t>(r) + 1] != mine[1])
      return file_error(f, MPI_ERR_NOT_SAME, fn, "the members passed different offsets or whence");
  std::int64_t out[2] = {0, 0};
  if (d.rank == 0) {
    std::int64_t cur = 0, ignored;
    if (whence == MPI_SEEK_CUR) out[1] = shfp_update(*f, 0, false, &cur, fn);
    MPI_Offset to = 0;
    if (!out[1]) out[1] = seek_target(*f, offset, whence, cur, &to, fn);
    if (!out[1]) out[1] = shfp_update(*f, to, true, &ignored, fn);
  }
  if ((rc = coll_bcast(out, 2, MPI_INT64_T, 0, d, coll_tag(d)))) return file_error(f, rc, fn, "the members could not agree");
  if (out[1]) return file_error(f, static_cast<int>(out[1]), fn, "the shared file pointer could not be moved");
  return MPI_SUCCESS;
}

int PMPI_File_get_position_shared(MPI_File fh, MPI_Offset* offset) {
  const char* fn = "MPI_File_get_position_shared";
  int rc;
  File* f = file_get(fh, fn, &rc);
  if (!f) return rc;
  if (!offset) return file_error(f, MPI_ERR_ARG, fn, "offset is NULL");
  if (f->shfp_fd < 0)
    return file_error(f, MPI_ERR_IO, fn, "the shared file pointer of %s is not available: %s", f->path.c_str(),
                      f->shfp_error.c_str());
  std::int64_t v = 0;
  if ((rc = shfp_update(*f, 0, false, &v, fn))) return rc;
  *offset = v;
  return MPI_SUCCESS;
}

// ---- split collectives
int PMPI_File_read_at_all_begin(MPI_File fh, MPI_Offset offset, void* buf, int count, MPI_Datatype datatype) {
  return split_begin(IO_CALL(fh, Dir::Read, Ptr::Explicit, true, false, offset, buf, count, datatype, "MPI_File_read_at_all_begin"),
                     kReadAt);
}
int PMPI_File_read_at_all_end(MPI_File fh, void* buf, MPI_Status* status) {
  return split_end(fh, buf, status, kReadAt, "MPI_File_read_at_all_end");
}
int PMPI_File_write_at_all_begin(MPI_File fh, MPI_Offset offset, const void* buf, int count, MPI_Datatype datatype) {
  return split_begin(IO_CALL(fh, Dir::Write, Ptr::Explicit, true, false, offset, buf, count, datatype, "MPI_File_write_at_all_begin"),
                     kWriteAt);
}
int PMPI_File_write_at_all_end(MPI_File fh, const void* buf, MPI_Status* status) {
  return split_end(fh, buf, status, kWriteAt, "MPI_File_write_at_all_end");
}
int PMPI_File_read_all_begin(MPI_File fh, void* buf, int count, MPI_Datatype datatype) {
  return split_begin(IO_CALL(fh, Dir::Read, Ptr::Individual, true, false, 0, buf, count, datatype, "MPI_File_read_all_begin"),
                     kReadAll);
}
int PMPI_File_read_all_end(MPI_File fh, void* buf, MPI_Status* status) {
  return split_end(fh, buf, status, kReadAll, "MPI_File_read_all_end");
}
int PMPI_File_write_all_begin(MPI_File fh, const void* buf, int count, MPI_Datatype datatype) {
  return split_begin(IO_CALL(fh, Dir::Write, Ptr::Individual, true, false, 0, buf, count, datatype, "MPI_File_write_all_begin"),
                     kWriteAll);
}
int PMPI_File_write_all_end(MPI_File fh, const void* buf, MPI_Status* status) {
  return split_end(fh, buf, status, kWriteAll, "MPI_File_write_all_end");
}
int PMPI_File_read_ordered_begin(MPI_File fh, void* buf, int count, MPI_Datatype datatype) {
  return split_begin(IO_CALL(fh, Dir::Read, Ptr::Shared, true, true, 0, buf, count, datatype, "MPI_File_read_ordered_begin"),
                     kReadOrdered);
}
int PMPI_File_read_ordered_end(MPI_File fh, void* buf, MPI_Status* status) {
  return split_end(fh, buf, status, kReadOrdered, "MPI_File_read_ordered_end");
}
int PMPI_File_write_ordered_begin(MPI_File fh, const void* buf, int count, MPI_Datatype datatype) {
  return split_begin(IO_CALL(fh, Dir::Write, Ptr::Shared, true, true, 0, buf, count, datatype, "MPI_File_write_ordered_begin"),
                     kWriteOrdered);
}
int PMPI_File_write_ordered_end(MPI_File fh, const void* buf, MPI_Status* status) {
  return split_end(fh, buf, status, kWriteOrdered, "MPI_File_write_ordered_end");
}

}  // extern "C"
#pragma GCC visibility pop
