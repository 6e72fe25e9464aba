// A small ELF loader for the program's shared object (README.md "Loading a copy at a chosen
// address"): it maps one private copy of the program at an address the caller chooses, so
// a rank's code, globals and return addresses can sit at the same addresses in every
// process (rank migration). x86-64 ELF shared objects only.
//
// What glibc's dlopen does that this loader leaves to glibc: finding and loading the
// libraries the program needs (DT_NEEDED with its RPATH/RUNPATH). ImageLibraries dlopens
// the program once as a template whose initializers and finalizers are removed, which loads
// them; each LoadedImage binds its undefined symbols in glibc's global scope first (where
// interposers such as libucharm-ampi's exit live), then in the template's dependencies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ampi {

// Where glibc's dynamic-linker calls allocate (dlsym, dlvsym, dladdr1 keep per-thread
// state and error strings): a caller whose malloc follows a switchable heap (AMPI: a rank's
// slice while its copy loads) returns to its process heap for them. Null: no switch.
struct ProcessHeapHooks {
  void* (*enter)() = nullptr;         // returns what leave() restores
  void (*leave)(void* saved) = nullptr;
};

// Writes all `size` bytes to `fd` (retrying short writes and EINTR); false on an error (errno).
[[gnu::visibility("default")]] bool write_all(int fd, const char* bytes, std::size_t size);

// Writes the program's shared object [bytes, bytes+size) into `fd` (a memfd glibc is to
// load): as it is, except that $ORIGIN in its DT_NEEDED, DT_RPATH and DT_RUNPATH strings
// becomes `origin`, the folder of the file the program came from (glibc would take the
// memfd's). Empty `origin`: as it is. False after setting `error`.
[[gnu::visibility("default")]] bool write_program(int fd, const char* bytes, std::size_t size,
                                                  const std::string& origin, std::string& error);

// dlopen(path, flags) of a memfd's /proc/self/fd path through a symlink `name` in a fresh
// private directory, both removed at once: the name glibc records for the object never
// comes to mean another file once the fd number is reused (a tool that reopens loaded
// objects by name, such as a sanitizer's leak check at exit, would read that file).
[[gnu::visibility("default")]] void* dlopen_unnamed(std::string path, int flags, const char* name);

// The libraries a program needs, loaded once per process and shared by its copies.
class [[gnu::visibility("default")]] ImageLibraries {
 public:
  // Parses the ELF object in [bytes, bytes+size) and dlopens a copy of it with its
  // initializers and finalizers removed (its constructors never run), RTLD_LOCAL; $ORIGIN
  // in its library paths means `origin` (write_program). Null after setting `error`.
  static std::shared_ptr<ImageLibraries> open(const char* bytes, std::size_t size, std::string& error,
                                              ProcessHeapHooks hooks = {}, const std::string& origin = {});
  ~ImageLibraries();
  ImageLibraries(const ImageLibraries&) = delete;
  ImageLibraries& operator=(const ImageLibraries&) = delete;

  // The address of an undefined symbol of the program as glibc would bind it: global scope
  // first, then the template's dependencies (never the template's own definitions); with
  // `version` (from .gnu.version_r) through dlvsym, falling back to dlsym. Null if none.
  void* resolve(const char* name, const char* version) const;

 private:
  ImageLibraries() = default;
  ProcessHeapHooks hooks_;
  void* handle_ = nullptr;          // the template
  const void* template_map_ = nullptr;  // its link_map, to refuse its own definitions
};

struct ImageSegment {
  std::uintptr_t start = 0;  // base + p_vaddr
  std::size_t mem_size = 0;  // p_memsz (bytes past file_size are zero)
  std::size_t file_size = 0;
  int prot = 0;              // PROT_* after loading (before RELRO)
};

// What load() did.
struct ImageInfo {
  std::uintptr_t base = 0;
  std::size_t span = 0;                 // bytes from base, page aligned
  std::vector<ImageSegment> segments;   // the PT_LOAD segments, in file order
  std::uintptr_t relro_start = 0, relro_end = 0;  // made read-only after relocation (0, 0: none)
  std::uintptr_t eh_frame = 0;          // registered with the unwinder (0: the image has none)
  bool symbolic = false;                // DT_SYMBOLIC or DF_SYMBOLIC (-Bsymbolic)
  std::size_t relative_relocs = 0;      // R_X86_64_RELATIVE and DT_RELR words
  std::size_t symbol_relocs = 0;        // R_X86_64_64, GLOB_DAT, JUMP_SLOT
  std::size_t tls_relocs = 0;           // R_X86_64_DTPMOD64, DTPOFF64
  std::size_t external_symbols = 0;     // undefined symbols bound outside the image
  std::size_t tls_size = 0;             // the image's thread_local block (0: none)
  std::size_t init_functions = 0;       // DT_INIT (0 or 1) + DT_INIT_ARRAY entries
  std::size_t fini_functions = 0;       // DT_FINI (0 or 1) + DT_FINI_ARRAY entries
};

// Where an image goes (LoadedImage::load).
enum class ImageMemory {
  // [base, base+room) is a PROT_NONE reservation (or free) of the caller: load() maps the
  // image there, enters it in this process (enter()) and destruction turns the range back
  // into a reservation.
  reservation,
  // [base, base+room) is a block of a heap (a rank's isomalloc slice) that moves to other
  // processes as bytes: gaps between segments are readable (a byte copy reads every page),
  // the caller calls enter() (in its runtime context: the unwinder's registration and the
  // table of loaded images must not allocate in the block's heap), leave() before the
  // bytes go and arrived() where they land; destruction makes the range read-write again.
  heap_block,
};

// One private copy of a program at a chosen address. Movable, not copyable. Destroying it
// leaves this process (leave()) and gives the range back (ImageMemory); it does not run the
// finalizers.
class [[gnu::visibility("default")]] LoadedImage {
 public:
  // The bytes from its base that the ELF shared object in [bytes, bytes+size) needs
  // (segments and thread_local block, page aligned): the `room` load() needs. 0 after
  // setting `error`.
  static std::size_t span_of(const char* bytes, std::size_t size, std::string& error);

  // Loads the ELF shared object in [bytes, bytes+size) at `base` (page aligned;
  // [base, base+room) reserved by the caller as PROT_NONE, or free): maps every PT_LOAD
  // segment at base + p_vaddr with MAP_FIXED (file bytes copied, BSS zero), applies the
  // dynamic relocations (DT_RELA, DT_JMPREL eagerly, DT_RELR), binds undefined symbols
  // through `libraries` (ImageLibraries::open of the same bytes; null: opened here), sets
  // the segment protections and PT_GNU_RELRO, and registers .eh_frame with libgcc's
  // unwinder. The image's __cxa_atexit, atexit, __cxa_finalize and
  // __cxa_thread_atexit_impl are bound to this object's list (run_finalizers), and its
  // thread_local variables (PT_TLS, general and local dynamic model) to one block per image.
  // Nothing runs in the image yet. Empty after setting `error`.
  // With ImageMemory::heap_block the image is not yet entered in this process (no .eh_frame
  // registration, not in the table the exit-handler functions search): call enter().
  static std::optional<LoadedImage> load(const char* bytes, std::size_t size, void* base,
                                         std::size_t room, std::string& error,
                                         std::shared_ptr<ImageLibraries> libraries = nullptr,
                                         ImageMemory memory = ImageMemory::reservation);

  // This process knows the image: .eh_frame registered with libgcc's unwinder (its lazily
  // built search tables built now, in the caller's heap), in the process's table of loaded
  // images. load() does it for a reservation. Idempotent.
  void enter();
  // This process forgets the image (its memory is about to go, e.g. packed with a rank
  // that moves): .eh_frame deregistered, out of the table, the libraries let go. The
  // image's memory is neither read nor changed (the State's process-local fields aside).
  void leave();
  // The image's memory (this object and its State included) came as bytes from another
  // process, at the same addresses (packed there before or after its leave()): its
  // process-local fields are rebuilt, not destroyed (the libraries are this process's
  // `libraries`, opened from the same program), the segment protections are set again
  // (the bytes arrive read-write) and the image is entered here. False after setting
  // `error` (the image is then not entered).
  bool arrived(std::shared_ptr<ImageLibraries> libraries, std::string& error);
  bool entered() const;

  LoadedImage(LoadedImage&&) noexcept;
  LoadedImage& operator=(LoadedImage&&) noexcept;
  ~LoadedImage();

  // DT_INIT, then DT_INIT_ARRAY in order, each called as glibc calls them (argc, argv,
  // envp). Once; later calls do nothing.
  void run_initializers(int argc, char** argv, char** envp);
  // The exit handlers the image registered (atexit, __cxa_atexit: C++ static destructors;
  // __cxa_thread_atexit_impl: thread_local destructors) in reverse order of registration,
  // then DT_FINI_ARRAY in reverse, then DT_FINI: what exit() would run for it. Each handler
  // runs once; a handler registered meanwhile runs too. Only after run_initializers; once.
  void run_finalizers();
  // Exit handlers recorded and not yet run.
  std::size_t pending_finalizers() const;

  // A defined symbol of the image (e.g. "main"), by its dynamic symbol table (GNU hash,
  // else SysV hash, else a linear scan); null if the image defines none by that name.
  void* symbol(const char* name) const;
  std::uintptr_t base() const;
  std::size_t span() const;  // bytes from base the image occupies (page aligned)
  const ImageInfo& info() const;

  struct State;  // image_loader.cpp

 private:
  explicit LoadedImage(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace ampi
