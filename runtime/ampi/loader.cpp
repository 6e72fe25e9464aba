// The loader: main() of every program built by ampicc / ucharm_add_ampi_executable.
//
// The user's program is a position-independent shared object appended to this executable
// (program_image.h). Each rank gets a private copy of it, so its globals and statics are
// the rank's own even when many ranks share a process ("+vp N").
//
// Ranks with an isomalloc slice (CmiIsomallocInit succeeded: the default): the copy is
// loaded by ucharm's own ELF loader (image_loader.h) into a block of the rank's slice, so
// it sits at the same addresses in every process and moves with the rank (README.md
// "Privatization"). The program's libraries are loaded once per process by glibc.
//
// Ranks without one (no isomalloc, AddressSanitizer builds): the bytes go into a new memfd
// per rank and dlopen loads that file. glibc keys loaded objects on the file (device,
// inode) and on the path, so a distinct file under a distinct path is a distinct copy with
// its own data, BSS, TLS block and static constructors; the shared libraries the program
// needs (libc, libucharm-ampi, ...) stay one copy each. dlmopen would also give copies but
// duplicates every dependency, the runtime included, and glibc allows only 16 namespaces.
#include "image_loader.h"
#include "internal.h"
#include "program_image.h"


#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

// libucharm-ampi's (loader_support.cpp): a program links it, not libucharm-converse.
namespace ampi::loader {
CmiIsoSlice* switch_heap(CmiIsoSlice* slice);
bool isomalloc_init(int& argc, char** argv);  // CmiIsomallocInit
void* slice_alloc_pages(CmiIsoSlice* slice, std::size_t bytes);
void slice_free(CmiIsoSlice* slice, void* p);
CmiIsoSlice* slice_of(const void* p);
std::size_t slice_bytes();
}  // namespace ampi::loader

// NUL-separated words, ended by an empty one: run-time options ampicc linked into this
// executable (-balancer); absent (null) otherwise.
extern "C" [[gnu::weak]] const char ucharm_ampi_default_args[];

namespace {

constexpr const char* kName = "ucharm AMPI loader";

// malloc & co. allocate from `slice` (nullptr: glibc's heap) for the scope.
class HeapScope {
 public:
  explicit HeapScope(CmiIsoSlice* slice) : saved_(ampi::loader::switch_heap(slice)) {}
  ~HeapScope() { ampi::loader::switch_heap(saved_); }
  HeapScope(const HeapScope&) = delete;
  HeapScope& operator=(const HeapScope&) = delete;

 private:
  CmiIsoSlice* saved_;
};

// The program's bytes, mapped from /proc/self/exe, and the copies loaded so far.
class ProgramImage {
 public:
  ProgramImage(int argc, char** argv) : argc_(argc), argv_(argv) {}
  ~ProgramImage() {
    if (map_ != MAP_FAILED) ::munmap(map_, map_size_);
  }
  ProgramImage(const ProgramImage&) = delete;
  ProgramImage& operator=(const ProgramImage&) = delete;

  // Maps this executable and finds the program in it; false after printing why.
  // The program's libraries now, before the runtime loads anything of its own (UCX's
  // transports, the CUDA driver: they differ between processes): with address randomization
  // off they then land at the same addresses in every process, so the references a rank's
  // copy holds into them (its GOT, function pointers) stay valid when it moves. A failure
  // is reported when the first copy is loaded.
  void preload_libraries() {
    std::string error;
    (void)libraries(error);
  }

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
    // $ORIGIN in the program's library paths is this executable's folder, as for any
    // program (glibc would take the folder of the memfd a copy is loaded from).
    char exe[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
      origin_.assign(exe, static_cast<std::size_t>(n));
      const std::size_t slash = origin_.rfind('/');
      origin_.erase(slash == 0 ? 1 : slash);
    }
    return true;
  }

  // Loads rank's private copy into its slice, runs its static constructors (allocating in
  // the slice) and returns its main; nullptr after printing why. `*image`: the LoadedImage,
  // in the slice. Called in the rank's thread, in runtime context.
  ampi::MainFn load_into_slice(int rank, CmiIsoSlice* slice, void** image) {
    HeapScope runtime(nullptr);  // glibc's bookkeeping (dlopen, the unwinder) stays the process's
    std::string error;
    std::shared_ptr<ampi::ImageLibraries> libs = libraries(error);
    if (libs == nullptr) return fail(rank, "loading the program's libraries", error.c_str());
    const std::size_t span = ampi::LoadedImage::span_of(bytes_, size_, error);
    if (span == 0) return fail(rank, "reading the program", error.c_str());
    void* base = ampi::loader::slice_alloc_pages(slice, span);
    if (base == nullptr) {
      std::fprintf(stderr,
                   "%s: cannot load rank %d's copy of the program: its %zu bytes do not fit in "
                   "the rank's isomalloc slice (%zu bytes; raise +isomalloc-slice=SIZE)\n",
                   kName, rank, span, ampi::loader::slice_bytes());
      return nullptr;
    }
    ampi::LoadedImage* loaded = nullptr;
    {
      // The image's own records (its State, exit handler list) are the rank's: they move.
      HeapScope in_slice(slice);
      auto img = ampi::LoadedImage::load(bytes_, size_, base, span, error, libs, ampi::ImageMemory::heap_block);
      if (img) loaded = new ampi::LoadedImage(std::move(*img));
    }
    if (loaded == nullptr) {
      ampi::loader::slice_free(slice, base);
      return fail(rank, "loading it into the rank's isomalloc slice (ucharm's ELF loader)", error.c_str());
    }
    loaded->enter();
    void* main_fn = loaded->symbol("main");
    if (main_fn == nullptr) return no_main();
    {
      std::lock_guard lock(mutex_);
      resident_.push_back(loaded);
    }
    *image = loaded;
    {
      HeapScope in_slice(slice);
      loaded->run_initializers(argc_, argv_, environ);
    }
    return reinterpret_cast<ampi::MainFn>(main_fn);
  }

  // The rank's copy leaves with its slice: this process forgets it, its memory untouched.
  void departed(void* image) {
    HeapScope runtime(nullptr);
    auto* loaded = static_cast<ampi::LoadedImage*>(image);
    loaded->leave();
    std::lock_guard lock(mutex_);
    std::erase(resident_, loaded);
  }

  // A rank's copy came with its slice (same addresses): this process knows it from now on.
  void arrived(void* image) {
    HeapScope runtime(nullptr);
    auto* loaded = static_cast<ampi::LoadedImage*>(image);
    std::string error;
    std::shared_ptr<ampi::ImageLibraries> libs = libraries(error);
    if (libs == nullptr || !loaded->arrived(std::move(libs), error)) {
      std::fprintf(stderr, "%s: a rank's copy of the program arrived but cannot run here: %s\n", kName,
                   error.c_str());
      std::abort();
    }
    std::lock_guard lock(mutex_);
    resident_.push_back(loaded);
  }

  // At a normal exit: what exit() runs for a dlopen'ed copy (atexit handlers, static
  // destructors), for every copy resident here, each with its rank's heap.
  static void finalize_resident(int, void* self) {
    auto* p = static_cast<ProgramImage*>(self);
    HeapScope runtime(nullptr);
    std::vector<ampi::LoadedImage*> images;
    {
      std::lock_guard lock(p->mutex_);
      images.swap(p->resident_);
    }
    for (auto it = images.rbegin(); it != images.rend(); ++it) {
      HeapScope in_slice(ampi::loader::slice_of(*it));
      (*it)->run_finalizers();
    }
  }

  // Loads a new private copy for `rank` and returns its main; nullptr after printing why.
  ampi::MainFn load_copy(int rank) {
    // PEs that are threads of one process may load copies at the same time.
    std::lock_guard lock(mutex_);
    int fd = ::memfd_create("ucharm-ampi-program", MFD_CLOEXEC);
    if (fd < 0) return fail(rank, "memfd_create", std::strerror(errno));
    if (std::string error; !ampi::write_program(fd, bytes_, size_, origin_, error)) {
      ::close(fd);
      return fail(rank, "the copy's memfd", error.c_str());
    }
    std::string path = unique_path(fd, copies_++);
    // The name glibc records for the copy must never come to mean another file: a tool that
    // reopens loaded objects by name (a sanitizer's leak check at exit) would read whatever
    // file later gets this fd number (a rank's output file, empty until exit flushes it:
    // SIGBUS). So the copy is opened through a symlink in a fresh private directory, both
    // removed at once: the recorded name then names nothing. (Without a writable temporary
    // directory, the /proc/self/fd path itself.)
    void* handle = ampi::dlopen_unnamed(path, RTLD_NOW | RTLD_LOCAL, "program");
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
    if (main_fn == nullptr) return no_main();
    return reinterpret_cast<ampi::MainFn>(main_fn);
  }

 private:
  // The program's libraries, opened once per process (by the first copy loaded or arriving
  // here); the first call also arranges for the copies' finalizers at exit.
  std::shared_ptr<ampi::ImageLibraries> libraries(std::string& error) {
    std::lock_guard lock(mutex_);
    if (libraries_ == nullptr) {
      ampi::ProcessHeapHooks hooks;
      hooks.enter = [] { return static_cast<void*>(ampi::loader::switch_heap(nullptr)); };
      hooks.leave = [](void* saved) { ampi::loader::switch_heap(static_cast<CmiIsoSlice*>(saved)); };
      libraries_ = ampi::ImageLibraries::open(bytes_, size_, error, hooks, origin_);
      if (libraries_ != nullptr && ::on_exit(&ProgramImage::finalize_resident, this) != 0) {
        error = "cannot register the copies' finalizers with on_exit";
        libraries_.reset();
      }
    }
    return libraries_;
  }

  static ampi::MainFn no_main() {
    std::fprintf(stderr,
                 "%s: the program defines no main (or not with default visibility): an "
                 "MPI program needs int main(int, char**)\n",
                 kName);
    return nullptr;
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
  std::string origin_;  // the folder of this executable, for $ORIGIN
  int argc_;
  char** argv_;  // the command line the copies' constructors get, as glibc gives it
  std::mutex mutex_;
  unsigned long copies_ = 0;
  std::vector<void*> handles_;
  std::shared_ptr<ampi::ImageLibraries> libraries_;
  std::vector<ampi::LoadedImage*> resident_;  // copies in slices that are in this process
};

// The run-time options the program was linked with (ampicc -balancer NAME) go before the
// command line's own, so an option given there wins (the last one counts).
char** with_linked_defaults(int& argc, char** argv) {
  const char* words = ucharm_ampi_default_args;
  if (words == nullptr || *words == '\0') return argv;
  static std::vector<char*> all;
  all.push_back(argv[0]);
  for (const char* w = words; *w != '\0'; w += std::strlen(w) + 1) all.push_back(const_cast<char*>(w));
  for (int i = 1; i < argc; ++i) all.push_back(argv[i]);
  argc = static_cast<int>(all.size());
  all.push_back(nullptr);
  return all.data();
}

ampi::MainFn main_for(void* context, int rank, CmiIsoSlice* slice, void** image) {
  *image = nullptr;
  auto* p = static_cast<ProgramImage*>(context);
  return slice != nullptr ? p->load_into_slice(rank, slice, image) : p->load_copy(rank);
}
void departed(void* context, void* image) { static_cast<ProgramImage*>(context)->departed(image); }
void arrived(void* context, void* image) { static_cast<ProgramImage*>(context)->arrived(image); }

}  // namespace

int main(int argc, char** argv) {
  // First: may re-execute the program with address randomization off. Without a region,
  // ranks get no slices and keep dlopen'ed copies (rank.cpp says why when migration is
  // asked for).
#if !defined(__SANITIZE_ADDRESS__)
  const bool slices = ampi::loader::isomalloc_init(argc, argv);
#else
  const bool slices = false;
#endif  // (AddressSanitizer builds: no isomalloc; its malloc replaces the rank heaps anyway,
        // and UCX's CMA probe crashes ASan's process_vm_readv interceptor in a re-executed,
        // non-randomized process)
  // Static: exit() from a rank does not unwind this frame, the copies' finalizers run at
  // exit (on_exit, registered later, so run before this is destroyed), and
  // ucharm_ampi_start returns only when every rank of this process has ended.
  argv = with_linked_defaults(argc, argv);
  static ProgramImage image(argc, argv);
  if (!image.open()) return 1;
  if (slices) image.preload_libraries();
  static ampi::Program program;
  program.context = &image;
  program.main_for = &main_for;
  program.departed = &departed;
  program.arrived = &arrived;
  program.privatized = true;
  program.how = "one private copy of the program per rank";
  return ucharm_ampi_start(argc, argv, &program);
}
