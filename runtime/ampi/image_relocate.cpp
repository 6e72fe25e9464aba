// The program's ELF loader, second half (image_loader.h): mapping the segments at the
// chosen base, relocating, protecting, registering .eh_frame; LoadedImage itself.
#include "image_loader_internal.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <unordered_map>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/lsan_interface.h>
#define UCHARM_IMAGE_ASAN 1
#endif

// libgcc's unwinder: frames of code it cannot find through dl_iterate_phdr.
extern "C" void __register_frame(void* begin);
extern "C" void __deregister_frame(void* begin);
// The unwinder's lookup: registering only queues the frames; the first lookup that reaches
// them sorts them into tables it mallocs (whatever heap is current then).
struct UnwindBases {
  void* tbase;
  void* dbase;
  void* func;
};
extern "C" const void* _Unwind_Find_FDE(void* pc, UnwindBases* bases);

namespace ampi {
namespace {

constexpr std::size_t kPage = 4096;
std::uintptr_t page_down(std::uintptr_t a) { return a & ~(kPage - 1); }
std::uintptr_t page_up(std::uintptr_t a) { return (a + kPage - 1) & ~(kPage - 1); }

int prot_of(const Elf64_Phdr& p) {
  return ((p.p_flags & PF_R) ? PROT_READ : 0) | ((p.p_flags & PF_W) ? PROT_WRITE : 0) |
         ((p.p_flags & PF_X) ? PROT_EXEC : 0);
}

const char* reloc_name(std::uint32_t type) {
  switch (type) {
    case R_X86_64_COPY: return "R_X86_64_COPY (a copy relocation: the object is an executable, not a shared object)";
    case R_X86_64_IRELATIVE: return "R_X86_64_IRELATIVE (an indirect function: ifunc or target_clones)";
    case R_X86_64_TPOFF64: return "R_X86_64_TPOFF64 (initial-exec thread_local: compile with -fPIC and the default TLS model)";
    case R_X86_64_TLSDESC: return "R_X86_64_TLSDESC (TLS descriptors: -mtls-dialect=gnu2)";
    case R_X86_64_PC32: return "R_X86_64_PC32 (text relocation: code not compiled with -fPIC)";
    case R_X86_64_32: return "R_X86_64_32 (text relocation: code not compiled with -fPIC)";
    case R_X86_64_32S: return "R_X86_64_32S (text relocation: code not compiled with -fPIC)";
    case R_X86_64_PC64: return "R_X86_64_PC64";
    default: return nullptr;
  }
}

// Reads the DWARF-encoded pointer at `p` of .eh_frame_hdr (the encodings ld writes).
bool read_encoded(std::uint8_t enc, std::uintptr_t p, std::uintptr_t hdr, std::uintptr_t& out) {
  if (enc == 0xff) return false;  // DW_EH_PE_omit
  std::int64_t v = 0;
  switch (enc & 0x0f) {
    case 0x00: case 0x04: case 0x0c: { std::int64_t x; std::memcpy(&x, reinterpret_cast<void*>(p), 8); v = x; break; }
    case 0x03: { std::uint32_t x; std::memcpy(&x, reinterpret_cast<void*>(p), 4); v = x; break; }
    case 0x0b: { std::int32_t x; std::memcpy(&x, reinterpret_cast<void*>(p), 4); v = x; break; }
    default: return false;
  }
  switch (enc & 0x70) {
    case 0x00: out = static_cast<std::uintptr_t>(v); return true;
    case 0x10: out = p + static_cast<std::uintptr_t>(v); return true;    // pcrel
    case 0x30: out = hdr + static_cast<std::uintptr_t>(v); return true;  // datarel
    default: return false;
  }
}

// The bytes a DWARF pointer encoding takes (the fixed-size ones ld writes), 0 if unknown.
std::size_t encoded_size(std::uint8_t enc) {
  switch (enc & 0x0f) {
    case 0x00: case 0x04: case 0x0c: return 8;
    case 0x03: case 0x0b: return 4;
    default: return 0;
  }
}

class Relocator {
 public:
  Relocator(LoadedImage::State& s, std::string& error) : s_(s), error_(error) {}

  bool relr() {
    const ImageTables& t = s_.tables;
    auto* entries = reinterpret_cast<const std::uint64_t*>(t.relr);
    std::uint64_t* where = nullptr;
    for (std::size_t i = 0; i < t.relr_size / sizeof(std::uint64_t); ++i) {
      std::uint64_t e = entries[i];
      if ((e & 1) == 0) {  // an address: relocate it, the next bitmap starts after it
        if (!t.inside(t.base + e, 8)) return corrupt("a DT_RELR address outside the image");
        where = reinterpret_cast<std::uint64_t*>(t.base + e);
        *where++ += t.base;
        ++s_.info.relative_relocs;
      } else {  // a bitmap of the 63 words from `where`
        if (where == nullptr) return corrupt("a DT_RELR bitmap before any address");
        for (int bit = 0; bit < 63; ++bit) {
          if (((e >> (bit + 1)) & 1) == 0) continue;
          if (!t.inside(reinterpret_cast<std::uintptr_t>(where + bit), 8)) return corrupt("DT_RELR outside the image");
          where[bit] += t.base;
          ++s_.info.relative_relocs;
        }
        where += 63;
      }
    }
    return true;
  }

  bool rela(std::uintptr_t table, std::size_t bytes) {
    const auto* r = reinterpret_cast<const Elf64_Rela*>(table);
    for (std::size_t i = 0; i < bytes / sizeof(Elf64_Rela); ++i) {
      if (!apply(r[i])) return false;
    }
    return true;
  }

 private:
  bool apply(const Elf64_Rela& r) {
    const ImageTables& t = s_.tables;
    std::uint32_t type = ELF64_R_TYPE(r.r_info), sym = ELF64_R_SYM(r.r_info);
    if (type == R_X86_64_NONE) return true;
    if (!t.inside(t.base + r.r_offset, 8)) return corrupt("a relocation outside the image");
    auto* where = reinterpret_cast<std::uint64_t*>(t.base + r.r_offset);
    std::uint64_t value = 0;
    switch (type) {
      case R_X86_64_RELATIVE:
        *where = t.base + static_cast<std::uint64_t>(r.r_addend);
        ++s_.info.relative_relocs;
        return true;
      case R_X86_64_64:
      case R_X86_64_GLOB_DAT:
      case R_X86_64_JUMP_SLOT:
        if (!symbol_value(sym, value)) return false;
        *where = value + (type == R_X86_64_64 ? static_cast<std::uint64_t>(r.r_addend) : 0);
        ++s_.info.symbol_relocs;
        return true;
      case R_X86_64_DTPMOD64:
        if (!own_tls(sym)) return false;
        *where = s_.tls_block;  // image_tls_get_addr (image_loader.cpp) reads it
        ++s_.info.tls_relocs;
        return true;
      case R_X86_64_DTPOFF64:
        if (!own_tls(sym)) return false;
        *where = (sym != 0 ? t.symtab[sym].st_value : 0) + static_cast<std::uint64_t>(r.r_addend);
        ++s_.info.tls_relocs;
        return true;
      default: {
        const char* name = reloc_name(type);
        error_ = "unsupported relocation type " +
                 (name != nullptr ? std::string(name) : std::to_string(type)) +
                 (sym != 0 ? std::string(" for symbol ") + t.name(t.symtab[sym]) : std::string());
        return false;
      }
    }
  }

  // A TLS relocation must name the image's own thread_local block.
  bool own_tls(std::uint32_t sym) {
    if (s_.tls_block == 0) return corrupt("a TLS relocation in an image without PT_TLS");
    if (sym != 0 && s_.tables.symtab[sym].st_shndx == SHN_UNDEF) {
      error_ = std::string("the program uses thread_local variable ") + s_.tables.name(s_.tables.symtab[sym]) +
               " of another library, which this loader does not support";
      return false;
    }
    return true;
  }

  // S of a relocation: the image's own definition (it is linked -Bsymbolic), else the
  // loader's function (exit handlers, TLS), else what glibc's scopes give.
  bool symbol_value(std::uint32_t index, std::uint64_t& out) {
    const ImageTables& t = s_.tables;
    if (index == 0) return out = 0, true;
    if (t.symbol_count != 0 && index >= t.symbol_count) return corrupt("a relocation names a symbol past .dynsym");
    const Elf64_Sym& sym = t.symtab[index];
    if (sym.st_shndx != SHN_UNDEF) {
      if (ELF64_ST_TYPE(sym.st_info) == STT_GNU_IFUNC) {
        error_ = std::string("the program defines indirect function ") + t.name(sym) +
                 " (ifunc or target_clones), which this loader does not support";
        return false;
      }
      out = sym.st_shndx == SHN_ABS ? sym.st_value : t.base + sym.st_value;
      return true;
    }
    if (auto it = cache_.find(index); it != cache_.end()) return out = it->second, true;
    const char* name = t.name(sym);
    void* p = bound_by_loader(name);
    const char* version = t.version(index);
    if (p == nullptr) p = s_.libraries->resolve(name, version);
    if (p == nullptr && ELF64_ST_BIND(sym.st_info) != STB_WEAK) {
      error_ = std::string("undefined symbol ") + name + (version != nullptr ? std::string("@") + version : "") +
               ": no library the program needs defines it";
      return false;
    }
    ++s_.info.external_symbols;
    out = reinterpret_cast<std::uint64_t>(p);
    cache_.emplace(index, out);
    return true;
  }

  bool corrupt(const char* what) {
    error_ = std::string("corrupt ELF file: ") + what;
    return false;
  }

  LoadedImage::State& s_;
  std::string& error_;
  std::unordered_map<std::uint32_t, std::uint64_t> cache_;
};

// The start of .eh_frame from PT_GNU_EH_FRAME, checked to end with a zero terminator inside
// the image (what __register_frame walks to); 0 if the image has none.
bool find_eh_frame(const ElfFile& elf, LoadedImage::State& s, std::uintptr_t& out, std::string& error) {
  out = 0;
  const ImageTables& t = s.tables;
  for (const Elf64_Phdr& p : elf.phdrs) {
    if (p.p_type != PT_GNU_EH_FRAME) continue;
    std::uintptr_t hdr = t.base + p.p_vaddr, frame = 0;
    if (!t.inside(hdr, 4 + 8) || *reinterpret_cast<const std::uint8_t*>(hdr) != 1 ||
        !read_encoded(*reinterpret_cast<const std::uint8_t*>(hdr + 1), hdr + 4, hdr, frame)) {
      error = "unsupported .eh_frame_hdr (version or pointer encoding)";
      return false;
    }
    // The first entry of the header's search table: a pc that has an FDE.
    auto* h = reinterpret_cast<const std::uint8_t*>(hdr);
    std::size_t ptr_size = encoded_size(h[1]), count_size = encoded_size(h[2]);
    std::uintptr_t count = 0, entry = hdr + 4 + ptr_size + count_size, pc = 0;
    if (h[2] != 0xff && h[3] != 0xff && ptr_size != 0 && count_size != 0 && t.inside(entry, 8) &&
        read_encoded(h[2], hdr + 4 + ptr_size, hdr, count) && count != 0 && read_encoded(h[3], entry, hdr, pc))
      s.unwind_probe = pc;
    for (std::uintptr_t q = frame;;) {
      std::uint32_t len = 0;
      if (!t.inside(q, 4)) break;
      std::memcpy(&len, reinterpret_cast<void*>(q), 4);
      if (len == 0) {
        out = frame;
        return true;
      }
      std::uint64_t step = 4 + std::uint64_t{len};
      if (len == 0xffffffffu) {
        if (!t.inside(q + 4, 8)) break;
        std::memcpy(&step, reinterpret_cast<void*>(q + 4), 8);
        step += 12;
      }
      q += step;
    }
    error = "the image's .eh_frame has no terminator (link with the compiler driver, which adds crtend)";
    return false;
  }
  return true;
}

}  // namespace

bool protect(const LoadedImage::State& s, std::string& error) {
  std::uintptr_t base = s.info.base, end = base;
  for (const ImageSegment& seg : s.info.segments) end = std::max(end, page_up(seg.start + seg.mem_size));
  // A page no segment covers: nothing may touch it, but a byte copy of a heap block reads it.
  const int gap = s.memory == ImageMemory::heap_block ? PROT_READ : PROT_NONE;
  std::vector<int> page_prot((end - base) / kPage, 0);
  for (const ImageSegment& seg : s.info.segments) {
    if (seg.mem_size == 0) continue;
    for (std::uintptr_t a = page_down(seg.start); a < seg.start + seg.mem_size; a += kPage)
      page_prot[(a - base) / kPage] |= seg.prot;
  }
  for (int& p : page_prot) p = p == 0 ? gap : p;
  for (std::size_t i = 0; i < page_prot.size();) {
    std::size_t j = i;
    while (j < page_prot.size() && page_prot[j] == page_prot[i]) ++j;
    if (::mprotect(reinterpret_cast<void*>(base + i * kPage), (j - i) * kPage, page_prot[i]) != 0) {
      error = std::string("mprotect: ") + std::strerror(errno);
      return false;
    }
    i = j;
  }
  std::uintptr_t lo = s.info.relro_start, hi = s.info.relro_end;
  if (hi > lo && ::mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ) != 0) {
    error = std::string("mprotect (RELRO): ") + std::strerror(errno);
    return false;
  }
  return true;
}

void register_frames(LoadedImage::State& s) {
  if (s.eh_frame == 0 || s.frames_registered) return;
  __register_frame(reinterpret_cast<void*>(s.eh_frame));
  s.frames_registered = true;
  // Sorted now, in the caller's heap: a lookup from some rank's code would put the tables
  // in that rank's heap, which may leave the process before this image does.
  if (s.unwind_probe != 0) {
    UnwindBases bases{};
    (void)_Unwind_Find_FDE(reinterpret_cast<void*>(s.unwind_probe), &bases);
  }
}

void deregister_frames(LoadedImage::State& s) {
  if (!s.frames_registered) return;
  __deregister_frame(reinterpret_cast<void*>(s.eh_frame));
  s.frames_registered = false;
}

bool layout_of(const ElfFile& elf, ImageLayout& out, std::string& error) {
  std::uint64_t end = 0;
  out = {};
  for (const Elf64_Phdr& p : elf.phdrs) {
    if (p.p_type == PT_LOAD) {
      if (p.p_vaddr > (std::uint64_t{1} << 40) || p.p_memsz > (std::uint64_t{1} << 40)) {
        error = "corrupt ELF file: a segment beyond 1 TiB";
        return false;
      }
      end = std::max<std::uint64_t>(end, p.p_vaddr + p.p_memsz);
    }
    if (p.p_type == PT_TLS) out.tls = &p;
  }
  out.image_end = page_up(end);
  out.span = out.image_end;
  if (out.tls != nullptr) {
    std::uint64_t align = std::max<std::uint64_t>(out.tls->p_align, 1);
    if ((align & (align - 1)) != 0 || out.tls->p_memsz > (std::uint64_t{1} << 32)) {
      error = "corrupt ELF file: bad PT_TLS";
      return false;
    }
    if (align > kPage) {  // the block's place is chosen from the base, which is only page aligned
      error = "the program's thread_local block asks for alignment " + std::to_string(align) +
              ", above the page size this loader supports";
      return false;
    }
    // Page aligned bases keep the block's alignment.
    out.tls_start = (out.image_end + align - 1) & ~(align - 1);
    out.span = page_up(out.tls_start + out.tls->p_memsz);
  }
  return true;
}

bool map_and_relocate(const ElfFile& elf, LoadedImage::State& s, std::size_t room, std::string& error) {
  std::uintptr_t base = s.info.base;
  // The layout: the segments, then the thread_local block on its own pages.
  ImageLayout layout;
  if (!layout_of(elf, layout, error)) return false;
  const Elf64_Phdr* tls = layout.tls;
  std::uintptr_t image_end = base + layout.image_end, total_end = base + layout.span;
  std::uint64_t end = layout.image_end;
  if (tls != nullptr) {
    s.tls_block = base + layout.tls_start;
    s.info.tls_size = tls->p_memsz;
  }
  std::size_t span = total_end - base;
  if (span > room) {
    error = "the image needs " + std::to_string(span) + " bytes from its base, but only " +
            std::to_string(room) + " are available";
    return false;
  }
  void* m = ::mmap(reinterpret_cast<void*>(base), span, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (m == MAP_FAILED) {
    error = std::string("mmap at the image's base: ") + std::strerror(errno);
    return false;
  }
  s.info.span = span;  // from here on ~State gives the range back
#ifdef UCHARM_IMAGE_ASAN
  // A copy loaded where another was (whose globals' redzones are still poisoned) is not an
  // ODR violation; the image's globals hold heap pointers the leak checker must see.
  __asan_unpoison_memory_region(reinterpret_cast<void*>(base), span);
  __lsan_register_root_region(reinterpret_cast<void*>(base), span);
#endif
  for (const Elf64_Phdr& p : elf.phdrs) {
    if (p.p_type != PT_LOAD) continue;
    std::memcpy(reinterpret_cast<void*>(base + p.p_vaddr), elf.data + p.p_offset, p.p_filesz);
    s.info.segments.push_back({base + p.p_vaddr, p.p_memsz, p.p_filesz, prot_of(p)});
  }
  const Elf64_Phdr& d = *elf.dynamic;
  if (d.p_vaddr + d.p_memsz > page_up(end) || d.p_memsz < sizeof(Elf64_Dyn)) {
    error = "corrupt ELF file: the dynamic section lies outside the segments";
    return false;
  }
  if (!s.tables.read(base, image_end - base, reinterpret_cast<const Elf64_Dyn*>(base + d.p_vaddr), error))
    return false;
  s.info.symbolic = s.tables.symbolic;
  if (s.tables.symbol_count == 0) s.tables.symbol_count = elf.dynsym_count;  // no hash table
  if (s.tables.static_tls) {
    error = "the program uses initial-exec TLS (DF_STATIC_TLS: thread_local in code built with "
            "-ftls-model=initial-exec), which this loader does not support";
    return false;
  }
  if (s.libraries == nullptr) {
    s.libraries = ImageLibraries::open(elf.data, elf.size, error);
    if (s.libraries == nullptr) return false;
  }
  Relocator r(s, error);
  if (!r.relr() || !r.rela(s.tables.rela, s.tables.rela_size) || !r.rela(s.tables.jmprel, s.tables.jmprel_size))
    return false;
  if (tls != nullptr) {  // the initial values, relocated
    std::memcpy(reinterpret_cast<void*>(s.tls_block), reinterpret_cast<void*>(base + tls->p_vaddr), tls->p_filesz);
  }
  s.info.init_functions = (s.tables.init != 0 ? 1 : 0) + s.tables.init_array_size / 8;
  s.info.fini_functions = (s.tables.fini != 0 ? 1 : 0) + s.tables.fini_array_size / 8;
  for (const Elf64_Phdr& p : elf.phdrs) {
    if (p.p_type != PT_GNU_RELRO) continue;
    std::uintptr_t lo = page_down(base + p.p_vaddr), hi = page_down(base + p.p_vaddr + p.p_memsz);
    if (lo < base || hi > image_end) {
      error = "corrupt ELF file: PT_GNU_RELRO outside the segments";
      return false;
    }
    s.info.relro_start = lo;
    s.info.relro_end = hi;
  }
  std::uintptr_t eh_frame = 0;
  if (!find_eh_frame(elf, s, eh_frame, error) || !protect(s, error)) return false;
  s.eh_frame = s.info.eh_frame = eh_frame;  // registered by enter()
  return true;
}

LoadedImage::State::~State() {
  if (registered) unregister_image(this);
  deregister_frames(*this);
  if (info.span != 0 && memory == ImageMemory::heap_block) {  // an ordinary heap block again
    ::mprotect(reinterpret_cast<void*>(info.base), info.span, PROT_READ | PROT_WRITE);
  } else if (info.span != 0) {  // back to a reservation: the caller owns the range
#ifdef UCHARM_IMAGE_ASAN
    __lsan_unregister_root_region(reinterpret_cast<void*>(info.base), info.span);
    __asan_unpoison_memory_region(reinterpret_cast<void*>(info.base), info.span);
#endif
    ::mmap(reinterpret_cast<void*>(info.base), info.span, PROT_NONE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  }
}

std::optional<LoadedImage> LoadedImage::load(const char* bytes, std::size_t size, void* base, std::size_t room,
                                             std::string& error, std::shared_ptr<ImageLibraries> libraries,
                                             ImageMemory memory) {
  auto b = reinterpret_cast<std::uintptr_t>(base);
  if (b == 0 || b % kPage != 0) {
    error = "the image's base address must be a non-null multiple of the page size";
    return std::nullopt;
  }
  ElfFile elf;
  if (!elf.parse(bytes, size, error)) return std::nullopt;
  auto s = std::make_unique<State>();
  s->info.base = b;
  s->libraries = std::move(libraries);
  s->memory = memory;
  if (!map_and_relocate(elf, *s, room, error)) return std::nullopt;
  LoadedImage image(std::move(s));
  if (memory == ImageMemory::reservation) image.enter();
  return image;
}

std::size_t LoadedImage::span_of(const char* bytes, std::size_t size, std::string& error) {
  ElfFile elf;
  ImageLayout layout;
  if (!elf.parse(bytes, size, error) || !layout_of(elf, layout, error)) return 0;
  return layout.span;
}

void LoadedImage::enter() {
  register_frames(*state_);
  if (!state_->registered) {
    register_image(state_.get());
    state_->registered = true;
  }
}

void LoadedImage::leave() {
  if (state_->registered) unregister_image(state_.get());
  state_->registered = false;
  deregister_frames(*state_);
  state_->libraries.reset();
}

bool LoadedImage::arrived(std::shared_ptr<ImageLibraries> libraries, std::string& error) {
  State& s = *state_;
  // The sender's: its pointers mean nothing here, so they are overwritten, never released.
  std::construct_at(&s.libraries, std::move(libraries));
  s.registered = false;
  s.frames_registered = false;
  if (!protect(s, error)) return false;
  enter();
  return true;
}

bool LoadedImage::entered() const { return state_->registered; }

LoadedImage::LoadedImage(std::unique_ptr<State> state) : state_(std::move(state)) {}
LoadedImage::LoadedImage(LoadedImage&&) noexcept = default;
LoadedImage& LoadedImage::operator=(LoadedImage&&) noexcept = default;
LoadedImage::~LoadedImage() = default;

UCHARM_IMAGE_CALLS_IMAGE void LoadedImage::run_initializers(int argc, char** argv, char** envp) {
  if (state_->initialized) return;
  state_->initialized = true;
  using Init = void (*)(int, char**, char**);
  const ImageTables& t = state_->tables;
  if (t.init != 0) reinterpret_cast<Init>(t.init)(argc, argv, envp);
  const auto* array = reinterpret_cast<const std::uintptr_t*>(t.init_array);
  for (std::size_t i = 0; i < t.init_array_size / sizeof(std::uintptr_t); ++i) {
    if (array[i] != 0 && array[i] != ~std::uintptr_t{0}) reinterpret_cast<Init>(array[i])(argc, argv, envp);
  }
}

UCHARM_IMAGE_CALLS_IMAGE void LoadedImage::run_finalizers() {
  if (!state_->initialized || state_->finalized) return;
  state_->finalized = true;
  state_->run_handlers();
  const ImageTables& t = state_->tables;
  const auto* array = reinterpret_cast<const std::uintptr_t*>(t.fini_array);
  for (std::size_t i = t.fini_array_size / sizeof(std::uintptr_t); i-- > 0;) {
    if (array[i] != 0 && array[i] != ~std::uintptr_t{0}) reinterpret_cast<void (*)()>(array[i])();
  }
  if (t.fini != 0) reinterpret_cast<void (*)()>(t.fini)();
  state_->run_handlers();  // any registered by the finalizers
}

std::size_t LoadedImage::pending_finalizers() const { return state_->handlers.size(); }

void* LoadedImage::symbol(const char* name) const {
  const Elf64_Sym* s = state_->tables.lookup(name, LookupMethod::gnu_hash);
  if (s == nullptr) return nullptr;
  return reinterpret_cast<void*>(s->st_shndx == SHN_ABS ? s->st_value : state_->info.base + s->st_value);
}

std::uintptr_t LoadedImage::base() const { return state_->info.base; }
std::size_t LoadedImage::span() const { return state_->info.span; }
const ImageInfo& LoadedImage::info() const { return state_->info; }

}  // namespace ampi
