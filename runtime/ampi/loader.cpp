// The loader: main() of every program built by ampicc / ucharm_add_ampi_executable.
//
// The user's program is a position-independent shared object appended to this executable
// (program_image.h). Each rank gets a private copy of it, so its globals and statics are
// the rank's own even when many ranks share a process ("+vp N"): the bytes go into a new
// memfd per rank and dlopen loads that file. glibc keys loaded objects on the file
// (device, inode) and on the path, so a distinct file under a distinct path is a distinct
// copy with its own data, BSS, TLS block and static constructors; the shared libraries
// the program needs (libc, libucharm-ampi, ...) stay one copy each. dlmopen would also
// give copies but duplicates every dependency, the runtime included, and glibc allows only
// 16 namespaces.
#include "internal.h"
#include "program_image.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

constexpr const char* kName = "ucharm AMPI loader";

// The program's bytes, mapped from /proc/self/exe, and the copies loaded so far.
class ProgramImage {
 public:
  ~ProgramImage() {
    if (map_ != MAP_FAILED) ::munmap(map_, map_size_);
  }

  // Maps this executable and finds the program in it; false after printing why.
  bool open() {
    int fd = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      std::fprintf(stderr, "%s: cannot open /proc/self/exe: %s\n", kName, std::strerror(errno));
      return false;
    }
    struct stat st {};
    ampi::ProgramTrailer t{};
    bool found = ::fstat(fd, &st) == 0 && static_cast<std::uint64_t>(st.st_size) > sizeof t &&
                 ::pread(fd, &t, sizeof t, st.st_size - static_cast<off_t>(sizeof t)) == sizeof t &&
                 ampi::trailer_valid(t, static_cast<std::uint64_t>(st.st_size));
    if (!found) {
      ::close(fd);
      std::fprintf(stderr,
                   "%s: this executable holds no MPI program. It is the loader that ampicc, "
                   "ampicxx and the CMake function ucharm_add_ampi_executable put in front "
                   "of an MPI program: build the program with one of them and run that.\n",
                   kName);
      return false;
    }
    map_size_ = static_cast<std::size_t>(st.st_size);
    map_ = ::mmap(nullptr, map_size_, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map_ == MAP_FAILED) {
      std::fprintf(stderr, "%s: cannot map /proc/self/exe: %s\n", kName, std::strerror(errno));
      return false;
    }
    bytes_ = static_cast<const char*>(map_) + t.offset;
    size_ = t.size;
    return true;
  }

  // Loads a new private copy for `rank` and returns its main; nullptr after printing why.
  ampi::MainFn load_copy(int rank) {
    // PEs that are threads of one process may load copies at the same time.
    std::lock_guard lock(mutex_);
    int fd = ::memfd_create("ucharm-ampi-program", MFD_CLOEXEC);
    if (fd < 0) return fail(rank, "memfd_create", std::strerror(errno));
    if (!write_all(fd)) {
      int e = errno;
      ::close(fd);
      return fail(rank, "writing the program into a memfd", std::strerror(e));
    }
    std::string path = unique_path(fd, copies_++);
    // The name glibc records for the copy must never come to mean another file: a tool that
    // reopens loaded objects by name (a sanitizer's leak check at exit) would read whatever
    // file later gets this fd number (a rank's output file, empty until exit flushes it:
    // SIGBUS). So the copy is opened through a symlink in a fresh private directory, both
    // removed at once: the recorded name then names nothing. (Without a writable temporary
    // directory, the /proc/self/fd path itself.)
    std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/ucharm-ampi-XXXXXX";
    std::string link;
    if (::mkdtemp(dir.data()) != nullptr) {
      link = dir + "/program";
      if (::symlink(path.c_str(), link.c_str()) == 0) path = link;
      else link.clear();
    } else {
      dir.clear();
    }
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!link.empty()) ::unlink(link.c_str());
    if (!dir.empty()) ::rmdir(dir.c_str());
    ::close(fd);  // the mapping keeps the file's pages
    if (handle == nullptr) {
      const char* why = ::dlerror();
      why = why ? why : "unknown error";
      if (std::strstr(why, "static TLS") != nullptr) {
        std::fprintf(stderr,
                     "%s: cannot load rank %d's copy of the program: %s\n"
                     "  The program (or a library built into it) uses initial-exec TLS, which "
                     "needs room in glibc's static TLS block for every copy: compile it with "
                     "the default TLS model (-fPIC, no -ftls-model=initial-exec), or raise "
                     "GLIBC_TUNABLES=glibc.rtld.optional_static_tls, or run fewer ranks per "
                     "process (+vp).\n",
                     kName, rank, why);
        return nullptr;
      }
      return fail(rank, "dlopen", why);
    }
    for (void* h : handles_) {
      if (h == handle) return fail(rank, "dlopen", "returned an already loaded copy, not a private one");
    }
    handles_.push_back(handle);  // never closed: the rank's code and data live until exit
    void* main_fn = ::dlsym(handle, "main");
    if (main_fn == nullptr) {
      std::fprintf(stderr,
                   "%s: the program defines no main (or not with default visibility): an "
                   "MPI program needs int main(int, char**)\n",
                   kName);
      return nullptr;
    }
    return reinterpret_cast<ampi::MainFn>(main_fn);
  }

 private:
  bool write_all(int fd) const {
    const char* p = bytes_;
    std::size_t left = size_;
    while (left > 0) {
      ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    return true;
  }

  // "/proc/self/fd/<fd>" spelled differently for every copy. glibc first looks a dlopen
  // path up among the names of loaded objects, and fd numbers are reused once closed: the
  // same spelling would return the earlier copy. Empty and "." path components change
  // the string, not the file: copy k adds "/." for each 1 bit and "//" for each 0 bit of
  // k (no leading zeros, so distinct k give distinct strings of at most 2*64 characters).
  static std::string unique_path(int fd, unsigned long k) {
    std::string path = "/proc/self/fd";
    for (; k != 0; k >>= 1) path += (k & 1) ? "/." : "//";
    path += '/';
    path += std::to_string(fd);
    return path;
  }

  ampi::MainFn fail(int rank, const char* what, const char* why) {
    std::fprintf(stderr, "%s: cannot load rank %d's copy of the program: %s: %s\n", kName, rank,
                 what, why);
    return nullptr;
  }

  void* map_ = MAP_FAILED;
  std::size_t map_size_ = 0;
  const char* bytes_ = nullptr;
  std::size_t size_ = 0;
  std::mutex mutex_;
  unsigned long copies_ = 0;
  std::vector<void*> handles_;
};

ampi::MainFn main_for(void* context, int rank, CmiIsoSlice*, void** image) {
  *image = nullptr;
  return static_cast<ProgramImage*>(context)->load_copy(rank);
}

}  // namespace

int main(int argc, char** argv) {
  // Lives until the process ends: exit() from a rank does not unwind this frame, and
  // ucharm_ampi_start returns only when every rank of this process has ended.
  ProgramImage image;
  if (!image.open()) return 1;
  ampi::Program program;
  program.context = &image;
  program.main_for = &main_for;
  program.privatized = true;
  program.how = "one dlopen'ed copy of the program per rank";
  return ucharm_ampi_start(argc, argv, &program);
}
