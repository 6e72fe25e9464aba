// MPI-IO (MPI 3.1 chapter 13): what the sources of io/ share. Private to io/.
//
// A file is a per-rank record (`File`, in the rank's `FileTable`): its path, access mode,
// the runtime's own copy of the communicator it was opened on, the view, the individual
// file pointer, hints, atomicity and error handler. The file layer is POSIX: every rank
// opens the path itself (its own descriptor, so a move reopens it in the new process),
// reads and writes with pread/pwrite at byte offsets computed from the view.
//   file.cpp        open/close/delete, size, amode, group, info (hints), error handlers,
//                   c2f/f2c, atomicity, sync; the table and its pup (a move or a restart
//                   reopens every file)
//   view.cpp        set_view/get_view, datareps (native, internal, external32), the view's
//                   flattened filetype and the mapping of a range of the view's data to
//                   file byte ranges, get_type_extent, get_byte_offset, Register_datarep
//   access.cpp      every read/write family: explicit offsets, individual and shared file
//                   pointers, ordered, nonblocking (a task of the rank), split collectives
//   collective.cpp  two-phase collective buffering for the _all calls
//
// The shared file pointer lives in a hidden file beside the file (".<name>.shfp.<id>"),
// created at open by the communicator's rank 0 and removed at close: an 8-byte counter in
// etype units, read and advanced under an exclusive open-file-description lock (fcntl
// F_OFD_SETLKW), so every process and every rank of a process sees one pointer.
#pragma once

#include "internal.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ampi::io {

// One contiguous range of the file.
struct Seg {
  std::int64_t off = 0;
  std::int64_t len = 0;
};

enum class Rep : std::uint8_t { Native, Internal, External32 };

struct File {
  MPI_File handle = MPI_FILE_NULL;
  std::string path;
  int amode = 0;
  MPI_Comm comm = MPI_COMM_NULL;  // the runtime's own duplicate (MPI_ERRORS_RETURN)
  int fd = -1;                    // opened O_RDWR for MPI_MODE_WRONLY too, where allowed
  bool readable = true;           // fd can be read (collective writes fill holes by reading)
  int shfp_fd = -1;               // the hidden shared-pointer file (-1: not available)
  std::string shfp_path;
  std::string shfp_error;         // why it is not available
  MPI_Errhandler errhandler = MPI_ERRORS_RETURN;
  bool atomic = false;
  // The view.
  MPI_Offset disp = 0;
  MPI_Datatype etype = MPI_BYTE;
  MPI_Datatype filetype = MPI_BYTE;
  Rep rep = Rep::Native;
  // Derived from the view (rebuilt after a move: `flat_ok` false).
  bool flat_ok = false;
  std::vector<Seg> flat;          // one filetype's data ranges, offsets from its start
  std::vector<std::int64_t> prefix;  // data bytes before each range
  std::int64_t ft_size = 0, ft_extent = 0, e_size = 1;
  MPI_Offset pos = 0;             // individual file pointer, in etypes
  std::vector<std::pair<std::string, std::string>> hints;
  // A split collective begun and not yet ended.
  bool split_active = false;
  int split_kind = 0;             // which begin (checks the matching end)
  const void* split_buf = nullptr;
  MPI_Status split_status{};
  int split_rc = MPI_SUCCESS;
};

struct FileTable {
  std::vector<std::unique_ptr<File>> files;  // handle - 1
  MPI_Errhandler null_errhandler = MPI_ERRORS_RETURN;  // MPI_FILE_NULL's (open, delete)
};

// ---- file.cpp ----
FileTable& my_files();
// The calling rank's file for handle `fh`, or nullptr (then *rc holds the error, reported
// through MPI_FILE_NULL's handler).
File* file_get(MPI_File fh, const char* fn, int* rc);
// An error on file f (nullptr: MPI_FILE_NULL) through its error handler.
int file_error(File* f, int code, const char* fn, const char* fmt, ...) __attribute__((format(printf, 4, 5)));
// The MPI error class of an errno value from open/read/write.
int errno_class(int e);
// A hint's value ("" when not set).
std::string hint(const File& f, const char* key);
long long hint_int(const File& f, const char* key, long long dflt);
Comm& file_comm(File& f);

// ---- view.cpp ----
// Builds f's flattened filetype if needed.
void view_flatten(File& f);
// The file ranges holding the view's data bytes [from, from + n) (from, n: data bytes from
// the view's start), appended to `out`, merging neighbours.
void view_map(File& f, std::int64_t from, std::int64_t n, std::vector<Seg>& out);
// Converts `n` bytes of packed native data of `count` t's into / out of the view's datarep
// in place or into `out` (same size: checked at set_view).
// `rep`: the view's representation when the access was started.
int rep_to_file(File& f, Rep rep, const void* buf, int count, MPI_Datatype t, std::vector<char>& out, const char* fn);
int rep_from_file(File& f, Rep rep, const std::vector<char>& in, std::size_t bytes, void* buf, int count,
                  MPI_Datatype t, const char* fn);
void view_reset(File& f);
// The position (in etypes) of the first data of the view at or after file byte `b`.
std::int64_t view_position_of(File& f, std::int64_t b);  // the default view: disp 0, MPI_BYTE, MPI_BYTE, native

// ---- collective.cpp ----
enum class Dir : std::uint8_t { Read, Write };
inline constexpr int kTwoPhaseTags = 5;  // a collective access takes this many tags at its call
// Two-phase collective access over f's communicator: this rank's `segs` (file ranges in
// ascending order) with `data` (their bytes in order: filled for reads). `tags`: the
// collective tags taken at the call (every member fails alike when one failed). Returns the bytes this rank read (reads) or wrote.
int two_phase(File& f, Dir d, const std::vector<Seg>& segs, char* data, const int* tags, std::int64_t* done,
              const char* fn);
bool two_phase_enabled(File& f, Dir d);

// ---- access.cpp ----
// Pread/pwrite of `segs` with `data` (atomic mode: under a byte-range lock). `done`: bytes.
int io_segs(File& f, Dir d, const std::vector<Seg>& segs, char* data, std::int64_t* done, const char* fn);

}  // namespace ampi::io

