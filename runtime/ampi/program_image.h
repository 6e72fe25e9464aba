// The file layout of a program built by ampicc / ucharm_add_ampi_executable, shared by the
// loader (loader.cpp) and the tool that writes it (compose.cpp):
//
//   [ the loader executable ][ the program, a shared object ][ ProgramTrailer ]
//
// ELF executables ignore bytes after their last section, so the file still runs as the
// loader; the loader finds the program through the trailer at the end of /proc/self/exe.
#pragma once

#include <cstdint>
#include <cstring>

namespace ampi {

inline constexpr char kProgramMagic[16] = "ucharm-ampi-v1\n";  // 15 characters + NUL

struct ProgramTrailer {
  std::uint64_t offset;  // where the shared object starts in the file
  std::uint64_t size;    // its length in bytes
  char magic[16];        // kProgramMagic
};
static_assert(sizeof(ProgramTrailer) == 32);

inline bool trailer_valid(const ProgramTrailer& t, std::uint64_t file_size) {
  return std::memcmp(t.magic, kProgramMagic, sizeof kProgramMagic) == 0 && t.size > 0 &&
         t.offset <= file_size && t.size <= file_size - t.offset &&
         t.offset + t.size + sizeof(ProgramTrailer) == file_size;
}

}  // namespace ampi
