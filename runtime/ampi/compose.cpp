// ucharm-ampi-compose EXECUTABLE PROGRAM.so
// Makes the linked loader EXECUTABLE the MPI program: appends PROGRAM.so and the trailer
// (program_image.h) to it, in place. ampicc and ucharm_add_ampi_executable run it after
// linking the two parts; it needs no runtime library, so it runs at build time anywhere.
#include "program_image.h"

#include <elf.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace {

// Whether the shared object exports a defined `main` the loader can find with dlsym: a
// missing main is a build error, as when linking any program.
bool exports_main(const std::vector<char>& so) {
  auto at = [&](std::uint64_t off, std::uint64_t len) { return off <= so.size() && len <= so.size() - off; };
  Elf64_Ehdr eh;
  if (!at(0, sizeof eh)) return false;
  std::memcpy(&eh, so.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || !at(eh.e_shoff, std::uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr)))
    return false;
  auto section = [&](unsigned i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, so.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
    return sh;
  };
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sym = section(i);
    if (sym.sh_type != SHT_DYNSYM || sym.sh_link >= eh.e_shnum || !at(sym.sh_offset, sym.sh_size)) continue;
    Elf64_Shdr str = section(sym.sh_link);
    if (!at(str.sh_offset, str.sh_size)) return false;
    for (std::uint64_t off = 0; off + sizeof(Elf64_Sym) <= sym.sh_size; off += sizeof(Elf64_Sym)) {
      Elf64_Sym s;
      std::memcpy(&s, so.data() + sym.sh_offset + off, sizeof s);
      if (s.st_shndx == SHN_UNDEF || s.st_name >= str.sh_size || ELF64_ST_TYPE(s.st_info) != STT_FUNC ||
          ELF64_ST_VISIBILITY(s.st_other) != STV_DEFAULT)
        continue;
      const char* name = so.data() + str.sh_offset + s.st_name;
      if (str.sh_size - s.st_name >= sizeof "main" && std::memcmp(name, "main", sizeof "main") == 0) return true;
    }
  }
  return false;
}

int fail(const char* what, const char* path) {
  std::fprintf(stderr, "ucharm-ampi-compose: %s %s: %s\n", what, path, std::strerror(errno));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr,
                 "usage: ucharm-ampi-compose EXECUTABLE PROGRAM.so\n"
                 "  appends the MPI program PROGRAM.so to the linked AMPI loader EXECUTABLE\n");
    return 2;
  }
  const char* exe = argv[1];
  const char* so = argv[2];
  std::ifstream in(so, std::ios::binary);
  if (!in) return fail("cannot read", so);
  std::vector<char> program((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (program.empty()) {
    std::fprintf(stderr, "ucharm-ampi-compose: %s is empty\n", so);
    return 1;
  }

  if (!exports_main(program)) {
    std::fprintf(stderr,
                 "ucharm-ampi-compose: %s defines no main (with default visibility): an MPI "
                 "program needs int main(int, char**)\n",
                 so);
    return 1;
  }

  std::fstream out(exe, std::ios::binary | std::ios::in | std::ios::out);
  if (!out) return fail("cannot open", exe);
  out.seekg(0, std::ios::end);
  auto exe_size = static_cast<std::uint64_t>(out.tellg());
  // A file that already ends with a program was composed before: appending again would
  // hide the old program behind the new one and waste the space.
  if (exe_size > sizeof(ampi::ProgramTrailer)) {
    ampi::ProgramTrailer old{};
    out.seekg(static_cast<std::streamoff>(exe_size - sizeof old));
    out.read(reinterpret_cast<char*>(&old), sizeof old);
    if (out && ampi::trailer_valid(old, exe_size)) {
      std::fprintf(stderr, "ucharm-ampi-compose: %s already holds a program (link the loader again)\n", exe);
      return 1;
    }
    out.clear();
  }
  ampi::ProgramTrailer t{};
  t.offset = exe_size;
  t.size = program.size();
  std::memcpy(t.magic, ampi::kProgramMagic, sizeof t.magic);
  out.seekp(0, std::ios::end);
  out.write(program.data(), static_cast<std::streamsize>(program.size()));
  out.write(reinterpret_cast<const char*>(&t), sizeof t);
  out.close();
  if (!out) return fail("cannot write", exe);
  // Executable for whoever may read it (the linker made it so already; this keeps it so).
  struct stat st {};
  if (::stat(exe, &st) != 0 || ::chmod(exe, st.st_mode | ((st.st_mode & 0444) >> 2)) != 0)
    return fail("cannot make executable", exe);
  return 0;
}
