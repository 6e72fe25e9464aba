// Private to image_loader.cpp and image_relocate.cpp: the ELF views they share and the
// state of a LoadedImage.
#pragma once

#include "image_loader.h"

#include <elf.h>

// On functions that call the image's initializers and exit handlers with glibc's
// conventions (an atexit handler through void(*)(void*), DT_INIT_ARRAY with argc, argv, envp
// whatever it declares): Clang's -fsanitize=function would report those calls.
#if defined(__clang__)
#define UCHARM_IMAGE_CALLS_IMAGE __attribute__((no_sanitize("function")))
#else
#define UCHARM_IMAGE_CALLS_IMAGE
#endif

namespace ampi {

// The file's header and program headers, checked against its size.
struct ElfFile {
  const char* data = nullptr;
  std::size_t size = 0;
  Elf64_Ehdr header{};
  std::vector<Elf64_Phdr> phdrs;
  const Elf64_Phdr* dynamic = nullptr;  // into phdrs
  std::size_t dynsym_count = 0;         // from the section headers, if any (0: unknown)
  bool parse(const char* bytes, std::size_t size, std::string& error);
};

enum class LookupMethod { gnu_hash, sysv_hash, linear };

// The dynamic section of a mapped image: pointers are absolute (base + d_ptr).
struct ImageTables {
  std::uintptr_t base = 0;
  std::size_t span = 0;
  const char* strtab = nullptr;
  std::size_t strsz = 0;
  const Elf64_Sym* symtab = nullptr;
  std::size_t symbol_count = 0;  // 0: unknown (no hash table)
  const std::uint32_t* sysv_hash = nullptr;
  const std::uint32_t* gnu_hash = nullptr;
  const std::uint16_t* versym = nullptr;
  std::uintptr_t verneed = 0;
  std::uint64_t verneed_count = 0;
  std::uintptr_t rela = 0, jmprel = 0, relr = 0;
  std::size_t rela_size = 0, rela_ent = sizeof(Elf64_Rela), jmprel_size = 0, relr_size = 0,
              relr_ent = sizeof(std::uint64_t);
  bool plt_is_rela = true;
  std::uintptr_t init = 0, fini = 0, init_array = 0, fini_array = 0;
  std::size_t init_array_size = 0, fini_array_size = 0;
  bool symbolic = false;
  bool static_tls = false;  // DF_STATIC_TLS: initial-exec TLS

  bool read(std::uintptr_t base, std::size_t span, const Elf64_Dyn* dyn, std::string& error);
  bool inside(std::uintptr_t start, std::size_t bytes) const;
  const char* name(const Elf64_Sym& s) const;
  // The version an undefined symbol asks for (.gnu.version_r), or null.
  const char* version(std::size_t index) const;
  const Elf64_Sym* lookup(const char* name, LookupMethod method) const;

 private:
  std::size_t count_symbols() const;
  bool defines(std::size_t index, const char* name) const;
};

// The loader's own function for a name the image's references must not reach libc with
// (exit handlers, __tls_get_addr), or null.
void* bound_by_loader(const char* name);

struct ExitHandler {
  void (*fn)(void*);
  void (*on_exit_fn)(int, void*);
  void* arg;
};

// The image's layout from its program headers (span_of, map_and_relocate).
struct ImageLayout {
  std::size_t image_end = 0;  // the segments' end, from base, page aligned
  std::size_t tls_start = 0;  // the thread_local block, from base (0: none)
  std::size_t span = 0;       // all of it, page aligned
  const Elf64_Phdr* tls = nullptr;
};
bool layout_of(const ElfFile& elf, ImageLayout& out, std::string& error);

// Everything a LoadedImage is. With ImageMemory::heap_block it lives in the block's heap
// and moves with the image as bytes: its process-local fields (libraries, the unwinder
// registration, the registry entry) are given up by leave() and rebuilt by arrived().
struct LoadedImage::State {
  ImageInfo info;
  ImageTables tables;
  std::shared_ptr<ImageLibraries> libraries;
  std::uintptr_t tls_block = 0;       // the image's thread_local block (0: none)
  std::vector<ExitHandler> handlers;  // atexit order
  ImageMemory memory = ImageMemory::reservation;
  std::uintptr_t eh_frame = 0;        // .eh_frame (0: none)
  std::uintptr_t unwind_probe = 0;    // a pc with an FDE (0: unknown), to build the unwinder's tables
  bool initialized = false, finalized = false;
  bool registered = false;            // in the registry (image_loader.cpp)
  bool frames_registered = false;     // .eh_frame registered with libgcc

  ~State();
  void run_handlers();
};

// The registry of loaded images that the bound exit-handler functions search (image_loader.cpp).
void register_image(LoadedImage::State* s);
void unregister_image(LoadedImage::State* s);

// Maps, relocates and protects the image (image_relocate.cpp); false after setting `error`.
bool map_and_relocate(const ElfFile& elf, LoadedImage::State& s, std::size_t room, std::string& error);
// Each page of the image gets its segment's protection, then RELRO read-only (image_relocate.cpp).
bool protect(const LoadedImage::State& s, std::string& error);
// .eh_frame with libgcc's unwinder (image_relocate.cpp).
void register_frames(LoadedImage::State& s);
void deregister_frames(LoadedImage::State& s);

}  // namespace ampi
