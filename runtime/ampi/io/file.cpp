// MPI-IO files: open/close/delete, size, amode, group, hints, atomicity, sync, error
// handlers (c2f/f2c are comm/c2f.cpp's identity), and the rank's file table with its pup (a move or a restart reopens
// every open file by its path in the new process; the contents are not packed).
#include "io/io.h"
#include "comm/comms.h"
#include "heap.h"
#include "rank.h"

#include <ucharm/charm.h>

#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ampi {

void FileTableDeleter::operator()(io::FileTable* t) const {
  // The rank ends or leaves this process: its descriptors close here (the files stay open
  // for MPI in the rank's new process, which reopens them).
  for (auto& f : t->files)
    if (f) {
      if (f->fd >= 0) ::close(f->fd);
      if (f->shfp_fd >= 0) ::close(f->shfp_fd);
    }
  delete t;
}

FileTablePtr file_table_new() { return FileTablePtr(new io::FileTable); }

namespace io {

FileTable& my_files() {
  FileTablePtr& t = current_rank()->files();
  if (!t) t = file_table_new();
  return *t;
}

int file_error(File* f, int code, const char* fn, const char* fmt, ...) {
  char what[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  const MPI_Errhandler h = f ? f->errhandler : my_files().null_errhandler;
  if (h == MPI_ERRORS_RETURN) return code;
  if (MPI_Comm_errhandler_function* fun = errhandler_function(h)) {
    MPI_File handle = f ? f->handle : MPI_FILE_NULL;
    int err = code;
    heap::UserScope user(nullptr);  // the program's code: its allocations are the rank's
    reinterpret_cast<MPI_File_errhandler_function*>(fun)(&handle, &err);
    return code;
  }
  CkAbort("%s: %s (%s), on MPI rank %d", fn, what, error_class_name(code), world_rank());
}

File* file_get(MPI_File fh, const char* fn, int* rc) {
  FileTable& t = my_files();
  if (fh > 0 && static_cast<std::size_t>(fh) <= t.files.size() && t.files[static_cast<std::size_t>(fh) - 1])
    return t.files[static_cast<std::size_t>(fh) - 1].get();
  *rc = file_error(nullptr, MPI_ERR_FILE, fn, "invalid file handle %d%s", fh,
                   fh == MPI_FILE_NULL ? " (MPI_FILE_NULL)" : "");
  return nullptr;
}

int errno_class(int e) {
  switch (e) {
    case ENOENT: return MPI_ERR_NO_SUCH_FILE;
    case EEXIST: return MPI_ERR_FILE_EXISTS;
    case EACCES:
    case EPERM: return MPI_ERR_ACCESS;
    case EROFS: return MPI_ERR_READ_ONLY;
    case ENOSPC:
    case EFBIG: return MPI_ERR_NO_SPACE;
    case EDQUOT: return MPI_ERR_QUOTA;
    case ENAMETOOLONG:
    case EISDIR:
    case ENOTDIR:
    case ELOOP:
    case EINVAL: return MPI_ERR_BAD_FILE;
    case ETXTBSY: return MPI_ERR_FILE_IN_USE;
    default: return MPI_ERR_IO;
  }
}

std::string hint(const File& f, const char* key) {
  for (const auto& [k, v] : f.hints)
    if (k == key) return v;
  return {};
}

long long hint_int(const File& f, const char* key, long long dflt) {
  const std::string v = hint(f, key);
  if (v.empty()) return dflt;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  return end && *end == 0 && x > 0 ? x : dflt;
}

Comm& file_comm(File& f) { return *comm_get(f.comm); }

namespace {

int open_flags(int amode) {
  int fl = O_CLOEXEC;
  if (amode & MPI_MODE_RDONLY) fl |= O_RDONLY;
  else fl |= O_RDWR;  // WRONLY too where the file allows: collective writes read holes first
  return fl;
}

// Opens f's path for f.amode (plus `extra`: O_CREAT, O_EXCL); a write-only file whose
// permissions refuse reading is opened O_WRONLY (f.readable false). -1 and errno on failure.
int open_path(File& f, int extra) {
  f.readable = true;
  int fd = ::open(f.path.c_str(), open_flags(f.amode) | extra, 0666);
  if (fd < 0 && errno == EACCES && (f.amode & MPI_MODE_WRONLY)) {
    fd = ::open(f.path.c_str(), (open_flags(f.amode) & ~O_RDWR) | O_WRONLY | extra, 0666);
    f.readable = false;
  }
  return fd;
}

// Every member's (code, errno): the first failure wins, the same on all.
struct Outcome {
  std::int32_t code = MPI_SUCCESS, err = 0, rank = -1, extra = 0;
};
int agree(Comm& c, Outcome mine, Outcome* first) {
  std::vector<Outcome> all(static_cast<std::size_t>(c.size()));
  if (int rc = coll_allgather(&mine, sizeof mine, MPI_BYTE, all.data(), c, coll_tag(c))) return rc;
  *first = Outcome{};
  for (int r = 0; r < c.size(); ++r)
    if (all[static_cast<std::size_t>(r)].code != MPI_SUCCESS) {
      *first = all[static_cast<std::size_t>(r)];
      first->rank = r;
      break;
    }
  return MPI_SUCCESS;
}

// Unique per open: the process of rank 0, its world rank (ranks of one process open files
// on their own MPI_COMM_SELF at once) and the duplicate communicator's context.
std::string shfp_name(const std::string& path, int pid, int world0, std::uint32_t context) {
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + base + ".shfp." + std::to_string(pid) + "." + std::to_string(world0) + "." +
         std::to_string(context);
}

int check_amode(int amode, std::string* why) {
  const int access = (amode & MPI_MODE_RDONLY ? 1 : 0) + (amode & MPI_MODE_WRONLY ? 1 : 0) +
                     (amode & MPI_MODE_RDWR ? 1 : 0);
  const int known = MPI_MODE_CREATE | MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE |
                    MPI_MODE_UNIQUE_OPEN | MPI_MODE_EXCL | MPI_MODE_APPEND | MPI_MODE_SEQUENTIAL;
  if (amode & ~known) *why = "unknown bits in amode " + std::to_string(amode);
  else if (access != 1) *why = "exactly one of MPI_MODE_RDONLY, MPI_MODE_WRONLY and MPI_MODE_RDWR must be given";
  else if ((amode & MPI_MODE_RDONLY) && (amode & (MPI_MODE_CREATE | MPI_MODE_EXCL)))
    *why = "MPI_MODE_RDONLY with MPI_MODE_CREATE or MPI_MODE_EXCL";
  else if ((amode & MPI_MODE_RDWR) && (amode & MPI_MODE_SEQUENTIAL))
    *why = "MPI_MODE_RDWR with MPI_MODE_SEQUENTIAL";
  else return MPI_SUCCESS;
  return MPI_ERR_AMODE;
}

// The hints an info object carries, merged into f's (a later value of a key wins).
int merge_hints(File& f, MPI_Info info) {
  if (info == MPI_INFO_NULL) return MPI_SUCCESS;
  cm::Info* in = cm::info_get(info);
  if (!in) return MPI_ERR_INFO;
  for (const auto& [k, v] : *in) {
    bool found = false;
    for (auto& [hk, hv] : f.hints)
      if (hk == k) hv = v, found = true;
    if (!found) f.hints.emplace_back(k, v);
  }
  return MPI_SUCCESS;
}

std::unique_ptr<File>& slot_for(FileTable& t, MPI_File* h) {
  for (std::size_t i = 0; i < t.files.size(); ++i)
    if (!t.files[i]) {
      *h = static_cast<MPI_File>(i + 1);
      return t.files[i];
    }
  t.files.emplace_back();
  *h = static_cast<MPI_File>(t.files.size());
  return t.files.back();
}

void close_fds(File& f) {
  if (f.fd >= 0) ::close(f.fd);
  if (f.shfp_fd >= 0) ::close(f.shfp_fd);
  f.fd = f.shfp_fd = -1;
}

// The shared file pointer's hidden file: rank 0 makes it (initial value `init`).
int make_shfp(File& f, std::int64_t init) {
  const int fd = ::open(f.shfp_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  int e = 0;
  if (::pwrite(fd, &init, sizeof init, 0) != static_cast<ssize_t>(sizeof init)) e = errno ? errno : EIO;
  f.shfp_fd = fd;
  return e;
}

void open_shfp(File& f) {
  if (f.shfp_fd >= 0) return;
  f.shfp_fd = ::open(f.shfp_path.c_str(), O_RDWR | O_CLOEXEC);
  if (f.shfp_fd < 0)
    f.shfp_error = "its hidden file " + f.shfp_path + " could not be opened: " + std::strerror(errno);
}

}  // namespace

int reopen(File& f, std::string* why) {
  f.fd = open_path(f, 0);
  if (f.fd < 0) {
    *why = std::strerror(errno);
    return errno_class(errno);
  }
  if (f.shfp_error.empty()) open_shfp(f);
  f.flat_ok = false;
  return MPI_SUCCESS;
}

}  // namespace io

// ---- pup -------------------------------------------------------------------------------------
void pup_file_state(PUP::er& p, FileTablePtr& t) {
  bool present = t != nullptr;
  p | present;
  if (!present) return;
  if (p.isUnpacking()) t = file_table_new();
  p | t->null_errhandler;
  std::uint64_t n = t->files.size();
  p | n;
  if (p.isUnpacking()) t->files.resize(static_cast<std::size_t>(n));
  for (auto& slot : t->files) {
    bool has = slot != nullptr;
    p | has;
    if (!has) continue;
    if (p.isUnpacking()) slot = std::make_unique<io::File>();
    io::File& f = *slot;
    p | f.handle;
    p | f.path;
    p | f.amode;
    p | f.comm;
    p | f.shfp_path;
    p | f.shfp_error;
    p | f.errhandler;
    p | f.atomic;
    p | f.disp;
    p | f.etype;
    p | f.filetype;
    auto rep = static_cast<std::uint8_t>(f.rep);
    p | rep;
    f.rep = static_cast<io::Rep>(rep);
    p | f.pos;
    std::uint64_t nh = f.hints.size();
    p | nh;
    if (p.isUnpacking()) f.hints.resize(static_cast<std::size_t>(nh));
    for (auto& [k, v] : f.hints) {
      p | k;
      p | v;
    }
    p | f.split_active;
    p | f.split_kind;
    auto bits = reinterpret_cast<std::uintptr_t>(f.split_buf);
    p | bits;
    f.split_buf = reinterpret_cast<const void*>(bits);
    p.bytes(&f.split_status, sizeof f.split_status);
    p | f.split_rc;
    if (p.isUnpacking()) {
      std::string why;
      if (io::reopen(f, &why) != MPI_SUCCESS)
        CkAbort("MPI-IO: file %s, open on this MPI rank, cannot be opened again on PE %d after the rank moved or "
                "restarted: %s",
                f.path.c_str(), CkMyPe(), why.c_str());
    }
  }
}

}  // namespace ampi

using namespace ampi;
using namespace ampi::io;

#pragma GCC visibility push(default)
extern "C" {

int PMPI_File_open(MPI_Comm comm, const char* filename, int amode, MPI_Info info, MPI_File* fh) {
  const char* fn = "MPI_File_open";
  Comm* c = comm_get(comm);
  if (!c) return file_error(nullptr, MPI_ERR_COMM, fn, "invalid communicator %d", comm);
  if (c->inter) return file_error(nullptr, MPI_ERR_COMM, fn, "a file cannot be opened on an intercommunicator");
  if (!filename || !fh) return file_error(nullptr, MPI_ERR_ARG, fn, "%s is NULL", filename ? "fh" : "filename");
  if (info != MPI_INFO_NULL && !cm::info_get(info)) return file_error(nullptr, MPI_ERR_INFO, fn, "invalid info %d", info);
  std::string why;
  if (int e = check_amode(amode, &why)) return file_error(nullptr, e, fn, "%s: %s", filename, why.c_str());
  // A "prefix:" of ROMIO's file-system names ("ufs:", "nfs:") is accepted and dropped.
  std::string path = filename;
  if (const std::size_t colon = path.find(':'); colon != std::string::npos && colon > 1 &&
                                                 path.find('/') > colon)
    path = path.substr(colon + 1);
  if (path.empty()) return file_error(nullptr, MPI_ERR_BAD_FILE, fn, "the file name is empty");

  auto f = std::make_unique<File>();
  f->path = path;
  f->amode = amode;
  if (int rc = PMPI_Comm_dup(comm, &f->comm)) return file_error(nullptr, rc, fn, "duplicating the communicator failed");
  PMPI_Comm_set_errhandler(f->comm, MPI_ERRORS_RETURN);
  Comm& d = file_comm(*f);
  merge_hints(*f, info);
  view_reset(*f);

  // Rank 0 creates (MPI_MODE_CREATE, MPI_MODE_EXCL) and makes the shared pointer's file;
  // then the others open what it made. Every member learns the first failure.
  Outcome mine;
  if (d.rank == 0) {
    int fl = 0;
    if (amode & MPI_MODE_CREATE) fl |= O_CREAT;
    if (amode & MPI_MODE_EXCL) fl |= O_EXCL;
    f->fd = open_path(*f, fl);
    if (f->fd < 0) mine = Outcome{errno_class(errno), errno, 0, 0};
    mine.extra = static_cast<std::int32_t>(getpid());
  }
  Outcome first;
  std::vector<Outcome> all(static_cast<std::size_t>(d.size()));
  int rc = coll_allgather(&mine, sizeof mine, MPI_BYTE, all.data(), d, coll_tag(d));
  const int pid0 = all[0].extra;
  if (!rc && all[0].code == MPI_SUCCESS) {
    f->shfp_path = shfp_name(path, pid0, d.members[0], d.context);
    std::int64_t init = 0;
    if (d.rank == 0) {
      if (amode & MPI_MODE_APPEND) {
        struct stat sb{};
        if (::fstat(f->fd, &sb) == 0) init = sb.st_size;
      }
      if (int e = make_shfp(*f, init))
        f->shfp_error = "its hidden file " + f->shfp_path + " could not be made: " + std::strerror(e);
    }
    if (d.size() > 1 && (rc = coll_barrier(d, coll_tag(d))) == MPI_SUCCESS) {
      mine = Outcome{};
      if (d.rank != 0) {
        f->fd = open_path(*f, 0);
        if (f->fd < 0) mine = Outcome{errno_class(errno), errno, 0, 0};
        else open_shfp(*f);
      }
      rc = agree(d, mine, &first);
    }
  } else if (!rc) {
    first = all[0];
    first.rank = 0;
  }
  if (rc || first.code != MPI_SUCCESS) {
    close_fds(*f);
    if (d.rank == 0 && !f->shfp_path.empty()) ::unlink(f->shfp_path.c_str());
    PMPI_Comm_free(&f->comm);
    if (rc) return file_error(nullptr, rc, fn, "%s: the members could not agree", path.c_str());
    return file_error(nullptr, first.code, fn, "%s: %s%s", path.c_str(), std::strerror(first.err),
                      first.rank == 0 ? "" : (" (on rank " + std::to_string(first.rank) + ")").c_str());
  }
  if (amode & MPI_MODE_APPEND) {
    struct stat sb{};
    if (::fstat(f->fd, &sb) == 0) f->pos = sb.st_size;
  }
  FileTable& t = my_files();
  MPI_File h;
  std::unique_ptr<File>& slot = slot_for(t, &h);
  f->handle = h;
  slot = std::move(f);
  *fh = h;
  return MPI_SUCCESS;
}

int PMPI_File_close(MPI_File* fh) {
  const char* fn = "MPI_File_close";
  if (!fh) return file_error(nullptr, MPI_ERR_ARG, fn, "fh is NULL");
  int rc;
  File* f = file_get(*fh, fn, &rc);
  if (!f) return rc;
  Comm& d = file_comm(*f);
  // Every member is done with the file (and the shared pointer) before rank 0 removes anything.
  if (f->fd >= 0 && (f->amode & MPI_MODE_RDONLY) == 0) ::fsync(f->fd);
  rc = coll_barrier(d, coll_tag(d));
  if (d.rank == 0) {
    if (!f->shfp_path.empty()) ::unlink(f->shfp_path.c_str());
    if (f->amode & MPI_MODE_DELETE_ON_CLOSE) ::unlink(f->path.c_str());
  }
  if ((f->amode & MPI_MODE_DELETE_ON_CLOSE) && d.size() > 1 && !rc) rc = coll_barrier(d, coll_tag(d));
  close_fds(*f);
  view_reset(*f);
  cm::errh_unref(f->errhandler);
  PMPI_Comm_free(&f->comm);
  my_files().files[static_cast<std::size_t>(*fh) - 1].reset();
  *fh = MPI_FILE_NULL;
  return rc;
}

int PMPI_File_delete(const char* filename, MPI_Info info) {
  const char* fn = "MPI_File_delete";
  (void)info;
  if (!filename) return file_error(nullptr, MPI_ERR_ARG, fn, "filename is NULL");
  std::string path = filename;
  if (const std::size_t colon = path.find(':'); colon != std::string::npos && colon > 1 && path.find('/') > colon)
    path = path.substr(colon + 1);
  if (::unlink(path.c_str()) != 0)
    return file_error(nullptr, errno_class(errno), fn, "%s: %s", path.c_str(), std::strerror(errno));
  return MPI_SUCCESS;
}

namespace {
// rank 0 changes the size; every member learns the outcome.
int resize(MPI_File fh, MPI_Offset size, bool preallocate, const char* fn) {
  int rc;
  File* f = file_get(fh, fn, &rc);
  if (!f) return rc;
  if (size < 0) return file_error(f, MPI_ERR_ARG, fn, "size %lld is negative", size);
  if (f->amode & MPI_MODE_RDONLY) return file_error(f, MPI_ERR_READ_ONLY, fn, "%s was opened MPI_MODE_RDONLY", f->path.c_str());
  if (f->amode & MPI_MODE_SEQUENTIAL)
    return file_error(f, MPI_ERR_UNSUPPORTED_OPERATION, fn, "%s was opened MPI_MODE_SEQUENTIAL", f->path.c_str());
  Comm& d = file_comm(*f);
  Outcome mine, first;
  if (d.rank == 0) {
    int e = 0;
    if (preallocate) {
      struct stat sb{};
      if (::fstat(f->fd, &sb) != 0) e = errno;
      else if (size > sb.st_size) e = ::posix_fallocate(f->fd, 0, size);
    } else if (::ftruncate(f->fd, size) != 0) {
      e = errno;
    }
    if (e) mine = Outcome{errno_class(e), e, 0, 0};
  }
  if ((rc = agree(d, mine, &first))) return file_error(f, rc, fn, "the members could not agree");
  if (first.code) return file_error(f, first.code, fn, "%s: %s", f->path.c_str(), std::strerror(first.err));
  return MPI_SUCCESS;
}
}  // namespace

int PMPI_File_set_size(MPI_File fh, MPI_Offset size) { return resize(fh, size, false, "MPI_File_set_size"); }
int PMPI_File_preallocate(MPI_File fh, MPI_Offset size) { return resize(fh, size, true, "MPI_File_preallocate"); }

int PMPI_File_get_size(MPI_File fh, MPI_Offset* size) {
  const char* fn = "MPI_File_get_size";
  int rc;
  File* f = file_get(fh, fn, &rc);
  if (!f) return rc;
  if (!size) return file_error(f, MPI_ERR_ARG, fn, "size is NULL");
  struct stat sb{};
  if (::fstat(f->fd, &sb) != 0) return file_error(f, MPI_ERR_IO, fn, "%s: %s", f->path.c_str(), std::strerror(errno));
  *size = sb.st_size;
  return MPI_SUCCESS;
}

int PMPI_File_get_amode(MPI_File fh, int* amode) {
  int rc;
  File* f = file_get(fh, "MPI_File_get_amode", &rc);
  if (!f) return rc;
  if (!amode) return file_error(f, MPI_ERR_ARG, "MPI_File_get_amode", "amode is NULL");
  *amode = f->amode;
  return MPI_SUCCESS;
}

int PMPI_File_get_group(MPI_File fh, MPI_Group* group) {
  int rc;
  File* f = file_get(fh, "MPI_File_get_group", &rc);
  if (!f) return rc;
  if (!group) return file_error(f, MPI_ERR_ARG, "MPI_File_get_group", "group is NULL");
  return PMPI_Comm_group(f->comm, group);
}

int PMPI_File_set_info(MPI_File fh, MPI_Info info) {
  const char* fn = "MPI_File_set_info";
  int rc;
  File* f = file_get(fh, fn, &rc);
  if (!f) return rc;
  if (merge_hints(*f, info)) return file_error(f, MPI_ERR_INFO, fn, "invalid info %d", info);
  return MPI_SUCCESS;
}

int PMPI_File_get_info(MPI_File fh, MPI_Info* info_used) {
  const char* fn = "MPI_File_get_info";
  int rc;
  File* f = file_get(fh, fn, &rc);
  if (!f) return rc;
  if (!info_used) return file_error(f, MPI_ERR_ARG, fn, "info_used is NULL");
  if ((rc = PMPI_Info_create(info_used))) return rc;
  // The hints in effect: the collective-buffering defaults, then what the program set.
  const std::string defaults[][2] = {
      {"cb_buffer_size", std::to_string(hint_int(*f, "cb_buffer_size", 16 << 20))},
      {"romio_cb_read", hint(*f, "romio_cb_read").empty() ? "automatic" : hint(*f, "romio_cb_read")},
      {"romio_cb_write", hint(*f, "romio_cb_write").empty() ? "automatic" : hint(*f, "romio_cb_write")},
  };
  for (const auto& kv : defaults) PMPI_Info_set(*info_used, kv[0].c_str(), kv[1].c_str());
  for (const auto& [k, v] : f->hints)
    if (k != "cb_buffer_size" && k != "romio_cb_read" && k != "romio_cb_write")
      PMPI_Info_set(*info_used, k.c_str(), v.c_str());
  return MPI_SUCCESS;
}

int PMPI_File_set_atomicity(MPI_File fh, int flag) {
  const char* fn = "MPI_File_set_atomicity";
  int rc;
  File* f = file_get(fh, fn, &rc);
  if (!f) return rc;
  Comm& d = file_comm(*f);
  Outcome mine{flag ? 1 : 0, 0, 0, 0}, first;
  // Every member must pass the same flag (collective): any disagreement is MPI_ERR_NOT_SAME.
  std::vector<Outcome> all(static_cast<std::size_t>(d.size()));
  if ((rc = coll_allgather(&mine, sizeof mine, MPI_BYTE, all.data(), d, coll_tag(d))))
    return file_error(f, rc, fn, "the members could not agree");
  for (const Outcome& o : all)
    if (o.code != mine.code) return file_error(f, MPI_ERR_NOT_SAME, fn, "the members passed different flags");
  (void)first;
  f->atomic = flag != 0;
  return MPI_SUCCESS;
}

int PMPI_File_get_atomicity(MPI_File fh, int* flag) {
  int rc;
  File* f = file_get(fh, "MPI_File_get_atomicity", &rc);
  if (!f) return rc;
  if (!flag) return file_error(f, MPI_ERR_ARG, "MPI_File_get_atomicity", "flag is NULL");
  *flag = f->atomic ? 1 : 0;
  return MPI_SUCCESS;
}

int PMPI_File_sync(MPI_File fh) {
  const char* fn = "MPI_File_sync";
  int rc;
  File* f = file_get(fh, fn, &rc);
  if (!f) return rc;
  if (f->split_active) return file_error(f, MPI_ERR_OTHER, fn, "a split collective is still active on the file");
  int e = 0;
  if ((f->amode & MPI_MODE_RDONLY) == 0 && ::fsync(f->fd) != 0) e = errno;
  Comm& d = file_comm(*f);
  Outcome first;
  if ((rc = agree(d, Outcome{e ? errno_class(e) : 0, e, 0, 0}, &first)))
    return file_error(f, rc, fn, "the members could not agree");
  if (first.code) return file_error(f, first.code, fn, "%s: fsync: %s", f->path.c_str(), std::strerror(first.err));
  return MPI_SUCCESS;
}

int PMPI_File_create_errhandler(MPI_File_errhandler_function* file_errhandler_fn, MPI_Errhandler* errhandler) {
  return cm::errhandler_create(reinterpret_cast<MPI_Comm_errhandler_function*>(file_errhandler_fn), errhandler,
                               "MPI_File_create_errhandler");
}

int PMPI_File_set_errhandler(MPI_File file, MPI_Errhandler errhandler) {
  const char* fn = "MPI_File_set_errhandler";
  File* f = nullptr;
  if (file != MPI_FILE_NULL) {
    int rc;
    if (!(f = file_get(file, fn, &rc))) return rc;
  }
  if (!cm::errh_valid(errhandler)) return file_error(f, MPI_ERR_ARG, fn, "invalid error handler %d", errhandler);
  MPI_Errhandler& slot = f ? f->errhandler : my_files().null_errhandler;
  cm::errh_ref(errhandler);
  cm::errh_unref(slot);
  slot = errhandler;
  return MPI_SUCCESS;
}

int PMPI_File_get_errhandler(MPI_File file, MPI_Errhandler* errhandler) {
  const char* fn = "MPI_File_get_errhandler";
  File* f = nullptr;
  if (file != MPI_FILE_NULL) {
    int rc;
    if (!(f = file_get(file, fn, &rc))) return rc;
  }
  if (!errhandler) return file_error(f, MPI_ERR_ARG, fn, "errhandler is NULL");
  *errhandler = f ? f->errhandler : my_files().null_errhandler;
  cm::errh_ref(*errhandler);  // a new reference: the program frees it with MPI_Errhandler_free
  return MPI_SUCCESS;
}

int PMPI_File_call_errhandler(MPI_File fh, int errorcode) {
  const char* fn = "MPI_File_call_errhandler";
  File* f = nullptr;
  if (fh != MPI_FILE_NULL) {
    int rc;
    if (!(f = file_get(fh, fn, &rc))) return rc;
  }
  file_error(f, errorcode, fn, "the program raised error code %d", errorcode);
  return MPI_SUCCESS;
}

}  // extern "C"
#pragma GCC visibility pop
