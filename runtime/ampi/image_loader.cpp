// The program's ELF loader (image_loader.h; README.md "Loading a copy at a chosen address").
// The ELF reading (headers, dynamic section, symbol tables, hash tables) and the binding of
// exit handlers and thread_local variables are here; mapping and relocation in
// image_relocate.cpp.
#include "image_loader_internal.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>

// libc's and ld.so's own, for handlers and TLS that are not an image's.
extern "C" int __cxa_atexit(void (*fn)(void*), void* arg, void* dso) noexcept;
extern "C" void __cxa_finalize(void* dso);
extern "C" int __cxa_thread_atexit_impl(void (*fn)(void*), void* obj, void* dso) noexcept;
extern "C" void* __tls_get_addr(void* ti);

namespace ampi {
namespace {

// The loaded images by address range: the exit-handler functions bound into the images
// get only a dso handle (or their caller's address) and must find the image it belongs to.
// Process-wide by nature, like libc's own atexit list; never destroyed, so an image
// destroyed during exit still finds it.
class Registry {
 public:
  void add(LoadedImage::State* s) {
    std::lock_guard lock(mutex_);
    images_.push_back(s);
  }
  void remove(LoadedImage::State* s) {
    std::lock_guard lock(mutex_);
    std::erase(images_, s);
  }
  LoadedImage::State* find(const void* address) {
    auto a = reinterpret_cast<std::uintptr_t>(address);
    std::lock_guard lock(mutex_);
    for (LoadedImage::State* s : images_) {
      if (a >= s->info.base && a < s->info.base + s->info.span) return s;
    }
    return nullptr;
  }

 private:
  std::mutex mutex_;
  std::vector<LoadedImage::State*> images_;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed (see above)
  return *r;
}

LoadedImage::State* owner(const void* dso, const void* caller) {
  LoadedImage::State* s = dso != nullptr ? registry().find(dso) : nullptr;
  return s != nullptr ? s : registry().find(caller);
}

// ---- what the image's references to these names are bound to ---------------------------------
int image_cxa_atexit(void (*fn)(void*), void* arg, void* dso) noexcept {
  if (LoadedImage::State* s = owner(dso, __builtin_return_address(0))) {
    s->handlers.push_back({fn, nullptr, arg});
    return 0;
  }
  return __cxa_atexit(fn, arg, dso);
}

int image_thread_atexit(void (*fn)(void*), void* obj, void* dso) noexcept {
  if (LoadedImage::State* s = owner(dso, __builtin_return_address(0))) {
    s->handlers.push_back({fn, nullptr, obj});
    return 0;
  }
  return __cxa_thread_atexit_impl(fn, obj, dso);
}

int image_atexit(void (*fn)()) noexcept {
  if (LoadedImage::State* s = owner(nullptr, __builtin_return_address(0))) {
    s->handlers.push_back({reinterpret_cast<void (*)(void*)>(fn), nullptr, nullptr});
    return 0;
  }
  return __cxa_atexit(reinterpret_cast<void (*)(void*)>(fn), nullptr, nullptr);
}

int image_on_exit(void (*fn)(int, void*), void* arg) noexcept {
  if (LoadedImage::State* s = owner(nullptr, __builtin_return_address(0))) {
    s->handlers.push_back({nullptr, fn, arg});
    return 0;
  }
  using OnExit = int (*)(void (*)(int, void*), void*);
  static const auto libc_on_exit = reinterpret_cast<OnExit>(::dlsym(RTLD_NEXT, "on_exit"));
  return libc_on_exit != nullptr ? libc_on_exit(fn, arg) : -1;
}

void image_cxa_finalize(void* dso) {
  if (LoadedImage::State* s = registry().find(dso)) {
    s->run_handlers();
    return;
  }
  __cxa_finalize(dso);
}

// The image's thread_local block is one per image (DTPMOD64 holds its address, far above
// any module id glibc hands out); anything else is ld.so's.
struct TlsIndex {
  std::uintptr_t module;
  std::uintptr_t offset;
};
constexpr std::uintptr_t kFirstImageModule = std::uintptr_t{1} << 32;

[[gnu::force_align_arg_pointer]] void* image_tls_get_addr(TlsIndex* ti) {
  if (ti->module >= kFirstImageModule) return reinterpret_cast<char*>(ti->module) + ti->offset;
  return __tls_get_addr(ti);
}

}  // namespace

void register_image(LoadedImage::State* s) { registry().add(s); }
void unregister_image(LoadedImage::State* s) { registry().remove(s); }

void* bound_by_loader(const char* name) {
  struct Entry {
    const char* name;
    void* fn;
  };
  static const Entry entries[] = {
      {"__cxa_atexit", reinterpret_cast<void*>(&image_cxa_atexit)},
      {"__cxa_thread_atexit_impl", reinterpret_cast<void*>(&image_thread_atexit)},
      {"__cxa_thread_atexit", reinterpret_cast<void*>(&image_thread_atexit)},
      {"atexit", reinterpret_cast<void*>(&image_atexit)},
      {"on_exit", reinterpret_cast<void*>(&image_on_exit)},
      {"__cxa_finalize", reinterpret_cast<void*>(&image_cxa_finalize)},
      {"__tls_get_addr", reinterpret_cast<void*>(&image_tls_get_addr)},
  };
  for (const Entry& e : entries) {
    if (std::strcmp(e.name, name) == 0) return e.fn;
  }
  return nullptr;
}

UCHARM_IMAGE_CALLS_IMAGE void LoadedImage::State::run_handlers() {
  while (!handlers.empty()) {  // a handler may register another: it runs too
    ExitHandler h = handlers.back();
    handlers.pop_back();
    if (h.fn != nullptr) h.fn(h.arg);
    else h.on_exit_fn(0, h.arg);
  }
}

// ---- reading the ELF file ------------------------------------------------------------------------
bool ElfFile::parse(const char* bytes, std::size_t bytes_size, std::string& error) {
  data = bytes;
  size = bytes_size;
  if (size < sizeof(Elf64_Ehdr) || std::memcmp(bytes, ELFMAG, SELFMAG) != 0) {
    error = "not an ELF file";
    return false;
  }
  std::memcpy(&header, bytes, sizeof header);
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
      header.e_machine != EM_X86_64) {
    error = "not an x86-64 ELF object (only x86-64 is supported)";
    return false;
  }
  if (header.e_type != ET_DYN) {
    error = "not a shared object (ELF type " + std::to_string(header.e_type) + ", want ET_DYN)";
    return false;
  }
  if (header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phoff > size ||
      header.e_phnum > (size - header.e_phoff) / sizeof(Elf64_Phdr)) {
    error = "corrupt ELF file: program headers outside the file";
    return false;
  }
  phdrs.resize(header.e_phnum);
  std::memcpy(phdrs.data(), bytes + header.e_phoff, header.e_phnum * sizeof(Elf64_Phdr));
  for (const Elf64_Phdr& p : phdrs) {
    if (p.p_type == PT_LOAD || p.p_type == PT_DYNAMIC || p.p_type == PT_TLS) {
      if (p.p_offset > size || p.p_filesz > size - p.p_offset || p.p_filesz > p.p_memsz) {
        error = "corrupt ELF file: a segment lies outside the file";
        return false;
      }
    }
    if (p.p_type == PT_DYNAMIC) dynamic = &p;
  }
  // .dynsym's size, for a linear scan when there is no hash table.
  if (header.e_shentsize == sizeof(Elf64_Shdr) && header.e_shoff <= size &&
      header.e_shnum <= (size - header.e_shoff) / sizeof(Elf64_Shdr)) {
    for (unsigned i = 0; i < header.e_shnum; ++i) {
      Elf64_Shdr sh;
      std::memcpy(&sh, bytes + header.e_shoff + i * sizeof sh, sizeof sh);
      if (sh.sh_type == SHT_DYNSYM && sh.sh_entsize == sizeof(Elf64_Sym)) dynsym_count = sh.sh_size / sizeof(Elf64_Sym);
    }
  }
  if (dynamic == nullptr) {
    error = "the ELF object has no dynamic section (not a shared object built with -shared)";
    return false;
  }
  return true;
}

// ---- the dynamic section, symbols, versions and hash tables of a mapped image -----------------
bool ImageTables::read(std::uintptr_t image_base, std::size_t image_span, const Elf64_Dyn* dyn,
                       std::string& error) {
  base = image_base;
  span = image_span;
  auto ptr = [&](std::uint64_t vaddr) { return base + vaddr; };
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    std::uint64_t v = dyn->d_un.d_val;
    switch (dyn->d_tag) {
      case DT_STRTAB: strtab = reinterpret_cast<const char*>(ptr(v)); break;
      case DT_STRSZ: strsz = v; break;
      case DT_SYMTAB: symtab = reinterpret_cast<const Elf64_Sym*>(ptr(v)); break;
      case DT_HASH: sysv_hash = reinterpret_cast<const std::uint32_t*>(ptr(v)); break;
      case DT_GNU_HASH: gnu_hash = reinterpret_cast<const std::uint32_t*>(ptr(v)); break;
      case DT_VERSYM: versym = reinterpret_cast<const std::uint16_t*>(ptr(v)); break;
      case DT_VERNEED: verneed = ptr(v); break;
      case DT_VERNEEDNUM: verneed_count = v; break;
      case DT_RELA: rela = ptr(v); break;
      case DT_RELASZ: rela_size = v; break;
      case DT_RELAENT: rela_ent = v; break;
      case DT_REL: case DT_RELSZ:
        error = "the image has DT_REL relocations (without addends), which x86-64 objects never use";
        return false;
      case DT_JMPREL: jmprel = ptr(v); break;
      case DT_PLTRELSZ: jmprel_size = v; break;
      case DT_PLTREL: plt_is_rela = v == DT_RELA; break;
      case DT_RELR: relr = ptr(v); break;
      case DT_RELRSZ: relr_size = v; break;
      case DT_RELRENT: relr_ent = v; break;
      case DT_INIT: init = ptr(v); break;
      case DT_FINI: fini = ptr(v); break;
      case DT_INIT_ARRAY: init_array = ptr(v); break;
      case DT_INIT_ARRAYSZ: init_array_size = v; break;
      case DT_FINI_ARRAY: fini_array = ptr(v); break;
      case DT_FINI_ARRAYSZ: fini_array_size = v; break;
      case DT_SYMBOLIC: symbolic = true; break;
      case DT_FLAGS:
        if (v & DF_SYMBOLIC) symbolic = true;
        if (v & DF_STATIC_TLS) static_tls = true;
        break;
      default: break;
    }
  }
  if (strtab == nullptr || symtab == nullptr) {
    error = "corrupt ELF file: no dynamic symbol or string table";
    return false;
  }
  auto at = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
  if (!inside(at(symtab), sizeof(Elf64_Sym)) || (sysv_hash != nullptr && (!inside(at(sysv_hash), 8) || sysv_hash[0] == 0)) ||
      (gnu_hash != nullptr && (!inside(at(gnu_hash), 16) || gnu_hash[0] == 0)) ||
      (versym != nullptr && !inside(at(versym), 2)) || (verneed != 0 && !inside(verneed, sizeof(Elf64_Verneed)))) {
    error = "corrupt ELF file: a symbol, hash or version table lies outside the image";
    return false;
  }
  if ((rela_size != 0 && rela_ent != sizeof(Elf64_Rela)) || (jmprel_size != 0 && !plt_is_rela) ||
      (relr_size != 0 && relr_ent != sizeof(std::uint64_t))) {
    error = "corrupt ELF file: unexpected relocation entry size or DT_PLTREL";
    return false;
  }
  for (auto [start, bytes] : {std::pair{rela, rela_size}, {jmprel, jmprel_size}, {relr, relr_size},
                              {init_array, init_array_size}, {fini_array, fini_array_size},
                              {reinterpret_cast<std::uintptr_t>(strtab), strsz}}) {
    if (bytes != 0 && !inside(start, bytes)) {
      error = "corrupt ELF file: a dynamic table lies outside the image";
      return false;
    }
  }
  symbol_count = count_symbols();
  return true;
}

bool ImageTables::inside(std::uintptr_t start, std::size_t bytes) const {
  return start >= base && start - base <= span && bytes <= span - (start - base);
}

std::size_t ImageTables::count_symbols() const {
  if (sysv_hash != nullptr) return sysv_hash[1];  // nchain
  if (gnu_hash == nullptr) return 0;               // the caller's section headers decide
  std::uint32_t nbuckets = gnu_hash[0], symoffset = gnu_hash[1], bloom_size = gnu_hash[2];
  const auto* buckets = reinterpret_cast<const std::uint32_t*>(
      reinterpret_cast<const std::uint64_t*>(gnu_hash + 4) + bloom_size);
  const std::uint32_t* chain = buckets + nbuckets;
  std::uint32_t last = 0;
  for (std::uint32_t b = 0; b < nbuckets; ++b) last = std::max(last, buckets[b]);
  if (last < symoffset) return symoffset;
  while ((chain[last - symoffset] & 1) == 0) ++last;
  return last + 1;
}

const char* ImageTables::name(const Elf64_Sym& s) const {
  return s.st_name < strsz ? strtab + s.st_name : "";
}

const char* ImageTables::version(std::size_t index) const {
  if (versym == nullptr || verneed == 0) return nullptr;
  std::uint16_t v = versym[index] & 0x7fff;
  if (v < 2) return nullptr;  // local or global: unversioned
  std::uintptr_t need = verneed;
  for (std::uint64_t i = 0; i < verneed_count; ++i) {
    const auto* vn = reinterpret_cast<const Elf64_Verneed*>(need);
    std::uintptr_t aux = need + vn->vn_aux;
    for (unsigned k = 0; k < vn->vn_cnt; ++k) {
      const auto* va = reinterpret_cast<const Elf64_Vernaux*>(aux);
      if (va->vna_other == v) return va->vna_name < strsz ? strtab + va->vna_name : nullptr;
      aux += va->vna_next;
    }
    need += vn->vn_next;
  }
  return nullptr;
}

namespace {
std::uint32_t gnu_hash_of(const char* s) {
  std::uint32_t h = 5381;
  for (; *s != 0; ++s) h = h * 33 + static_cast<unsigned char>(*s);
  return h;
}
std::uint32_t sysv_hash_of(const char* s) {
  std::uint32_t h = 0;
  for (; *s != 0; ++s) {
    h = (h << 4) + static_cast<unsigned char>(*s);
    std::uint32_t g = h & 0xf0000000u;
    if (g != 0) h ^= g >> 24;
    h &= ~g;
  }
  return h;
}
}  // namespace

bool ImageTables::defines(std::size_t index, const char* wanted) const {
  const Elf64_Sym& s = symtab[index];
  if (s.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s.st_info) == STT_TLS) return false;
  if (versym != nullptr && (versym[index] & 0x8000) != 0) return false;  // a hidden old version
  return std::strcmp(name(s), wanted) == 0;
}

const Elf64_Sym* ImageTables::lookup(const char* wanted, LookupMethod method) const {
  if (method == LookupMethod::gnu_hash && gnu_hash != nullptr) {
    std::uint32_t nbuckets = gnu_hash[0], symoffset = gnu_hash[1], bloom_size = gnu_hash[2];
    const auto* buckets = reinterpret_cast<const std::uint32_t*>(
        reinterpret_cast<const std::uint64_t*>(gnu_hash + 4) + bloom_size);
    const std::uint32_t* chain = buckets + nbuckets;
    std::uint32_t h = gnu_hash_of(wanted);
    std::uint32_t i = buckets[h % nbuckets];
    if (i < symoffset) return nullptr;
    for (;; ++i) {
      std::uint32_t c = chain[i - symoffset];
      if ((c | 1) == (h | 1) && defines(i, wanted)) return &symtab[i];
      if (c & 1) return nullptr;
    }
  }
  if (method != LookupMethod::linear && sysv_hash != nullptr) {
    std::uint32_t nbucket = sysv_hash[0];
    const std::uint32_t* bucket = sysv_hash + 2;
    const std::uint32_t* chain = bucket + nbucket;
    for (std::uint32_t i = bucket[sysv_hash_of(wanted) % nbucket]; i != STN_UNDEF; i = chain[i]) {
      if (defines(i, wanted)) return &symtab[i];
    }
    return nullptr;
  }
  for (std::size_t i = 1; i < symbol_count; ++i) {
    if (defines(i, wanted)) return &symtab[i];
  }
  return nullptr;
}

// ---- the template: the program's libraries, loaded by glibc -----------------------------------
bool write_all(int fd, const char* p, std::size_t left) {
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

namespace {

// `s` with every $ORIGIN and ${ORIGIN} (the whole name: "$ORIGINAL" is not one) replaced by
// `origin` into `out`; false when there is none.
bool expand_origin(std::string_view s, const std::string& origin, std::string& out) {
  out.clear();
  bool any = false;
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = 0;
    if (s.substr(i, 9) == "${ORIGIN}") {
      len = 9;
    } else if (s.substr(i, 7) == "$ORIGIN") {
      const std::size_t j = i + 7;
      if (j == s.size() || !(std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) len = 7;
    }
    if (len != 0) {
      out += origin;
      i += len;
      any = true;
    } else {
      out += s[i++];
    }
  }
  return any;
}

}  // namespace

// The strings that name $ORIGIN are the file's own: glibc would expand it to the folder of
// the path the memfd was opened by. The expanded strings go into a new read-only segment
// after the image's last one, with a copy of the program headers that includes it (the old
// table has no room); the dynamic entries point there (a string is found at DT_STRTAB +
// d_val, wherever in the image that is).
bool write_program(int fd, const char* bytes, std::size_t size, const std::string& origin, std::string& error) {
  ElfFile elf;
  if (!elf.parse(bytes, size, error)) return false;
  struct Edit {
    std::size_t dyn_offset;  // of the Elf64_Dyn in the file
    std::string text;
  };
  std::vector<Edit> edits;
  std::uint64_t strtab = 0;
  if (!origin.empty()) {
    const Elf64_Phdr& d = *elf.dynamic;
    std::uint64_t strsz = 0;
    const auto each_dyn = [&](auto&& f) {
      for (std::size_t off = 0; off + sizeof(Elf64_Dyn) <= d.p_filesz; off += sizeof(Elf64_Dyn)) {
        Elf64_Dyn dyn;
        std::memcpy(&dyn, bytes + d.p_offset + off, sizeof dyn);
        if (dyn.d_tag == DT_NULL) break;
        f(dyn, d.p_offset + off);
      }
    };
    each_dyn([&](const Elf64_Dyn& dyn, std::size_t) {
      if (dyn.d_tag == DT_STRTAB) strtab = dyn.d_un.d_ptr;
      if (dyn.d_tag == DT_STRSZ) strsz = dyn.d_un.d_val;
    });
    // DT_STRTAB's place in the file: through the load segment that holds it.
    std::optional<std::size_t> strings;
    for (const Elf64_Phdr& p : elf.phdrs) {
      if (p.p_type == PT_LOAD && strtab >= p.p_vaddr && strtab < p.p_vaddr + p.p_filesz)
        strings = p.p_offset + (strtab - p.p_vaddr);
    }
    if (strings && *strings <= size) strsz = std::min<std::uint64_t>(strsz, size - *strings);
    if (strings) {
      each_dyn([&](const Elf64_Dyn& dyn, std::size_t at) {
        if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RPATH && dyn.d_tag != DT_RUNPATH) return;
        if (dyn.d_un.d_val >= strsz) return;
        const char* str = bytes + *strings + dyn.d_un.d_val;
        std::string text;
        if (expand_origin(std::string_view(str, ::strnlen(str, strsz - dyn.d_un.d_val)), origin, text))
          edits.push_back({at, std::move(text)});
      });
    }
  }
  if (!write_all(fd, bytes, size)) {
    error = std::string("writing the program into a memfd: ") + std::strerror(errno);
    return false;
  }
  if (edits.empty()) return true;

  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const auto align = [page](std::uint64_t v) { return (v + page - 1) / page * page; };
  std::uint64_t image_end = 0;
  for (const Elf64_Phdr& p : elf.phdrs) {
    if (p.p_type == PT_LOAD) image_end = std::max(image_end, p.p_vaddr + p.p_memsz);
  }
  const std::uint64_t vaddr = align(image_end), offset = align(size);
  std::vector<Elf64_Phdr> phdrs = elf.phdrs;
  Elf64_Phdr load{};
  load.p_type = PT_LOAD;  // last: the load segments stay in address order
  load.p_flags = PF_R;
  load.p_offset = offset;
  load.p_vaddr = load.p_paddr = vaddr;
  load.p_align = page;
  phdrs.push_back(load);
  const std::size_t table = phdrs.size() * sizeof(Elf64_Phdr);
  std::string segment(table, '\0');
  bool ok = true;
  for (const Edit& e : edits) {
    Elf64_Dyn dyn;
    std::memcpy(&dyn, bytes + e.dyn_offset, sizeof dyn);
    dyn.d_un.d_val = vaddr + segment.size() - strtab;
    segment += e.text;
    segment += '\0';
    ok = ok && ::pwrite(fd, &dyn, sizeof dyn, static_cast<off_t>(e.dyn_offset)) == sizeof dyn;
  }
  phdrs.back().p_filesz = phdrs.back().p_memsz = segment.size();
  for (Elf64_Phdr& p : phdrs) {
    if (p.p_type != PT_PHDR) continue;
    p.p_offset = offset;
    p.p_vaddr = p.p_paddr = vaddr;
    p.p_filesz = p.p_memsz = table;
  }
  std::memcpy(segment.data(), phdrs.data(), table);
  Elf64_Ehdr header = elf.header;
  header.e_phoff = offset;
  header.e_phnum = static_cast<Elf64_Half>(phdrs.size());
  ok = ok && ::pwrite(fd, &header, sizeof header, 0) == sizeof header &&
       ::pwrite(fd, segment.data(), segment.size(), static_cast<off_t>(offset)) ==
           static_cast<ssize_t>(segment.size());
  if (!ok) error = std::string("writing the program into a memfd: ") + std::strerror(errno);
  return ok;
}

namespace {

// The dynamic tags whose functions must not run in the template: each becomes a second
// DT_INIT_ARRAYSZ of 0 (glibc keeps the last of a repeated tag and never calls an array
// it has no DT_INIT_ARRAY for).
bool runs_code(std::int64_t tag) {
  switch (tag) {
    case DT_INIT: case DT_FINI: case DT_INIT_ARRAY: case DT_FINI_ARRAY: case DT_PREINIT_ARRAY:
    case DT_INIT_ARRAYSZ: case DT_FINI_ARRAYSZ: case DT_PREINIT_ARRAYSZ:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::shared_ptr<ImageLibraries> ImageLibraries::open(const char* bytes, std::size_t size, std::string& error,
                                                     ProcessHeapHooks hooks, const std::string& origin) {
  ElfFile elf;
  if (!elf.parse(bytes, size, error)) return nullptr;
  int fd = ::memfd_create("ucharm-ampi-template", MFD_CLOEXEC);
  if (fd < 0) {
    error = std::string("memfd_create: ") + std::strerror(errno);
    return nullptr;
  }
  if (!write_program(fd, bytes, size, origin, error)) {
    ::close(fd);
    return nullptr;
  }
  bool ok = true;
  // The dynamic section in the file, patched in the memfd only.
  const Elf64_Phdr& d = *elf.dynamic;
  for (std::size_t off = 0; ok && off + sizeof(Elf64_Dyn) <= d.p_filesz; off += sizeof(Elf64_Dyn)) {
    Elf64_Dyn dyn;
    std::memcpy(&dyn, bytes + d.p_offset + off, sizeof dyn);
    if (dyn.d_tag == DT_NULL) break;
    if (!runs_code(dyn.d_tag)) continue;
    dyn.d_tag = DT_INIT_ARRAYSZ;
    dyn.d_un.d_val = 0;
    ok = ::pwrite(fd, &dyn, sizeof dyn, static_cast<off_t>(d.p_offset + off)) == sizeof dyn;
  }
  if (!ok) {
    error = std::string("writing the template into a memfd: ") + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  // glibc returns an already loaded object when a dlopen path equals its name, and fd
  // numbers are reused: the name carries the memfd's inode (unique while it is mapped),
  // "/." for each 1 bit and "//" for each 0 bit (the path still names the fd). It is opened
  // through a symlink in a fresh private directory, both removed at once, so the name glibc
  // records never comes to mean another file (as loader.cpp does: a sanitizer reopens
  // loaded objects by name at exit).
  struct stat st {};
  ::fstat(fd, &st);
  std::string path = "/proc/self/fd";
  for (auto k = static_cast<unsigned long>(st.st_ino); k != 0; k >>= 1) path += (k & 1) ? "/." : "//";
  path += '/';
  path += std::to_string(fd);
  // Lazy: the template never runs, and an undefined function is then reported by the
  // loader itself, naming it.
  void* handle = dlopen_unnamed(path, RTLD_LAZY | RTLD_LOCAL, "template");
  ::close(fd);  // the mapping keeps the file
  if (handle == nullptr) {
    const char* why = ::dlerror();
    error = std::string("loading the program's libraries (dlopen of a template copy): ") +
            (why != nullptr ? why : "unknown error");
    return nullptr;
  }
  std::shared_ptr<ImageLibraries> libs(new ImageLibraries);
  libs->handle_ = handle;
  libs->hooks_ = hooks;
  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0) libs->template_map_ = map;
  return libs;
}

ImageLibraries::~ImageLibraries() {
  if (handle_ != nullptr) ::dlclose(handle_);
}

void* ImageLibraries::resolve(const char* name, const char* version) const {
  struct InProcessHeap {
    const ProcessHeapHooks& h;
    void* saved = h.enter != nullptr ? h.enter() : nullptr;
    ~InProcessHeap() {
      if (h.leave != nullptr) h.leave(saved);
    }
  } in_process_heap{hooks_};
  auto look = [&](void* scope) -> void* {
    void* p = version != nullptr ? ::dlvsym(scope, name, version) : nullptr;
    return p != nullptr ? p : ::dlsym(scope, name);
  };
  if (void* p = look(RTLD_DEFAULT)) return p;
  void* p = look(handle_);
  if (p == nullptr) return nullptr;
  // Never the template's own copy of something (the image has its own).
  Dl_info info{};
  void* map = nullptr;
  if (::dladdr1(p, &info, &map, RTLD_DL_LINKMAP) != 0 && map == template_map_) return nullptr;
  return p;
}

void* dlopen_unnamed(std::string path, int flags, const char* name) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") + "/ucharm-ampi-XXXXXX", link;
  if (::mkdtemp(dir.data()) != nullptr) {
    link = dir + "/" + name;
    if (::symlink(path.c_str(), link.c_str()) == 0) path = link;
    else link.clear();
  } else {
    dir.clear();  // no writable temporary directory: the /proc/self/fd path itself
  }
  void* handle = ::dlopen(path.c_str(), flags);
  if (!link.empty()) ::unlink(link.c_str());
  if (!dir.empty()) ::rmdir(dir.c_str());
  return handle;
}

}  // namespace ampi
