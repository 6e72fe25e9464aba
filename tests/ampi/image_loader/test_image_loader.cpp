// Tests of runtime/ampi's ELF loader (image_loader.h): program images built here (prog_*.c,
// prog_*.cpp) and an AMPI program as ucharm_add_ampi_executable builds it, loaded at chosen
// addresses inside a region this test reserves, without the MPI runtime.
#include "image_loader.h"

#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>

#include "page_perms.h"
#include <sys/mman.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

// prog_c.c's hook_value: this executable's definition comes first in the global scope, as
// an interposer (libucharm-ampi's exit) does for a real program.
extern "C" __attribute__((visibility("default"), noinline)) int hook_value() { return 2; }

namespace {

std::string read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A region like the one isomalloc reserves: fixed address, PROT_NONE; one slot per copy.
constexpr std::uintptr_t kRegion = 0x300000000000;
constexpr std::size_t kSlot = std::size_t{64} << 20;
constexpr std::size_t kSlots = 8;

class ImageLoaderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    void* p = ::mmap(reinterpret_cast<void*>(kRegion), kSlot * kSlots, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    ASSERT_EQ(p, reinterpret_cast<void*>(kRegion)) << "cannot reserve the test region";
  }
  static void* slot(std::size_t i) { return reinterpret_cast<void*>(kRegion + i * kSlot); }

  static ampi::LoadedImage load(const std::string& bytes, std::size_t i) {
    std::string error;
    auto image = ampi::LoadedImage::load(bytes.data(), bytes.size(), slot(i), kSlot, error);
    if (!image) throw std::runtime_error("load failed: " + error);
    return std::move(*image);
  }
  static std::string load_error(const std::string& bytes, std::size_t room = kSlot, void* base = slot(7)) {
    std::string error;
    auto image = ampi::LoadedImage::load(bytes.data(), bytes.size(), base, room, error);
    EXPECT_FALSE(image.has_value());
    return error;
  }
  template <typename F>
  static F fn(const ampi::LoadedImage& image, const char* name) {
    void* p = image.symbol(name);
    if (p == nullptr) throw std::runtime_error(std::string("no symbol ") + name);
    return reinterpret_cast<F>(p);
  }
};


bool inside(const ampi::LoadedImage& image, const void* p) {
  auto a = reinterpret_cast<std::uintptr_t>(p);
  return a >= image.base() && a < image.base() + image.span();
}

TEST_F(ImageLoaderTest, CProgramRunsAtTheChosenAddress) {
  std::string bytes = read_file(PROG_C_PATH);
  ampi::LoadedImage image = load(bytes, 0);
  EXPECT_EQ(image.base(), kRegion);
  const ampi::ImageInfo& info = image.info();
  EXPECT_TRUE(info.symbolic);
  EXPECT_GT(info.relative_relocs, 0u);
  EXPECT_GT(info.symbol_relocs, 0u);
  EXPECT_GE(info.segments.size(), 2u);
  EXPECT_NE(info.eh_frame, 0u);
  EXPECT_LT(info.relro_start, info.relro_end);
  EXPECT_EQ(image.span() % 4096, 0u);
  EXPECT_EQ(fn<int (*)()>(image, "table_last")(), 0) << "BSS is zero before the constructors";
  image.run_initializers(0, nullptr, nullptr);
  image.run_initializers(0, nullptr, nullptr);  // once only
  EXPECT_EQ(*fn<int*>(image, "ctor_runs"), 1);
  EXPECT_EQ(fn<int (*)()>(image, "table_last")(), 42);
  EXPECT_EQ(fn<int (*)(int, int)>(image, "apply")(0, 9), 10);
  EXPECT_EQ(fn<int (*)(int, int)>(image, "apply")(1, 9), 18);
  EXPECT_EQ(fn<std::size_t (*)(int)>(image, "name_length")(0), 5u);
  EXPECT_EQ(fn<void* (*)()>(image, "strlen_address")(), ::dlsym(RTLD_DEFAULT, "strlen"));
  EXPECT_EQ(fn<int (*)()>(image, "sorted")(), 1);
  char buf[32];
  EXPECT_EQ(fn<int (*)(char*, std::size_t)>(image, "format")(buf, sizeof buf), 6);
  EXPECT_STREQ(buf, "7-beta");
  EXPECT_EQ(fn<int (*)()>(image, "hook")(), 2) << "the global scope's definition comes first";
  EXPECT_EQ(fn<int (*)()>(image, "local")(), 3) << "from a library only the image needs";
  EXPECT_EQ(fn<int (*)()>(image, "version_v1")(), 11) << "versioned@V1, not the default V2";
  EXPECT_EQ(fn<int (*)()>(image, "weak_is_null")(), 1);
  EXPECT_TRUE(inside(image, fn<int* (*)()>(image, "counter_address")()));
  EXPECT_EQ(image.symbol("no_such_symbol"), nullptr);
  EXPECT_EQ(image.symbol("hook_value"), nullptr) << "undefined in the image";
  // Protections: code r-x, RELRO r--, data rw-.
  EXPECT_EQ(page_perms(reinterpret_cast<std::uintptr_t>(image.symbol("apply"))).substr(0, 3), "r-x");
  EXPECT_EQ(page_perms(info.relro_start).substr(0, 3), "r--");
  EXPECT_EQ(page_perms(reinterpret_cast<std::uintptr_t>(image.symbol("counter"))).substr(0, 3), "rw-");
}

TEST_F(ImageLoaderTest, MainRunsWithArguments) {
  std::string bytes = read_file(PROG_C_PATH);
  ampi::LoadedImage image = load(bytes, 0);
  image.run_initializers(0, nullptr, nullptr);
  char a0[] = "prog", a1[] = "x", a2[] = "four";
  char* argv[] = {a0, a1, a2, nullptr};
  testing::internal::CaptureStdout();
  int rc = fn<int (*)(int, char**)>(image, "main")(3, argv);
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "image main: 3 arguments\n");
  EXPECT_EQ(rc, 304);
}

TEST_F(ImageLoaderTest, TwoCopiesHaveSeparateGlobals) {
  std::string bytes = read_file(PROG_C_PATH);
  ampi::LoadedImage a = load(bytes, 0);
  ampi::LoadedImage b = load(bytes, 1);
  a.run_initializers(0, nullptr, nullptr);
  b.run_initializers(0, nullptr, nullptr);
  auto bump_a = fn<int (*)()>(a, "bump"), bump_b = fn<int (*)()>(b, "bump");
  EXPECT_EQ(bump_a(), 8);
  EXPECT_EQ(bump_a(), 9);
  EXPECT_EQ(bump_b(), 8);
  EXPECT_EQ(*fn<int*>(a, "counter"), 9);
  EXPECT_EQ(*fn<int*>(b, "counter"), 8);
  EXPECT_EQ(fn<std::uintptr_t>(b, "bump") - fn<std::uintptr_t>(a, "bump"), kSlot);
  EXPECT_TRUE(inside(b, fn<int* (*)()>(b, "counter_address")()));
  EXPECT_EQ(*fn<int*>(b, "ctor_runs"), 1);
}

TEST_F(ImageLoaderTest, ExitHandlersRunOnceInReverseOrder) {
  std::string bytes = read_file(PROG_C_PATH);
  ampi::LoadedImage image = load(bytes, 0);
  image.run_finalizers();  // before the initializers: nothing
  image.run_initializers(0, nullptr, nullptr);
  EXPECT_EQ(image.pending_finalizers(), 2u);
  auto log = fn<const char* (*)()>(image, "exit_log_text");
  EXPECT_STREQ(log(), "");
  image.run_finalizers();
  EXPECT_STREQ(log(), "21D") << "atexit handlers in reverse, then the destructor functions";
  EXPECT_EQ(image.pending_finalizers(), 0u);
  image.run_finalizers();
  EXPECT_STREQ(log(), "21D");
}

TEST_F(ImageLoaderTest, ReloadingAtTheSameBaseStartsFresh) {
  std::string bytes = read_file(PROG_C_PATH);
  {
    ampi::LoadedImage image = load(bytes, 2);
    image.run_initializers(0, nullptr, nullptr);
    fn<int (*)()>(image, "bump")();
    EXPECT_EQ(*fn<int*>(image, "counter"), 8);
  }
  EXPECT_EQ(page_perms(kRegion + 2 * kSlot), "---p") << "the range is a reservation again";
  ampi::LoadedImage image = load(bytes, 2);
  EXPECT_EQ(*fn<int*>(image, "counter"), 7);
}

TEST_F(ImageLoaderTest, CxxProgram) {
  std::string bytes = read_file(PROG_CXX_PATH);
  ampi::LoadedImage image = load(bytes, 3);
  image.run_initializers(0, nullptr, nullptr);
  auto events = fn<const char* (*)()>(image, "events");
  EXPECT_STREQ(events(), "ab");
  EXPECT_STREQ(fn<const char* (*)()>(image, "greeting_text")(), "hello from a loaded image");
  EXPECT_EQ(fn<int (*)()>(image, "squares_sum")(), 30);
  EXPECT_EQ(fn<int (*)(const char*)>(image, "number")("two"), 2);
  EXPECT_EQ(fn<int (*)(const char*, int)>(image, "append_number")("four", 4), 4);
  EXPECT_EQ(fn<int (*)(const char*)>(image, "number")("four"), 4);
  EXPECT_EQ(fn<int (*)(int)>(image, "virtual_call")(0), 1);
  EXPECT_EQ(fn<int (*)(int)>(image, "virtual_call")(1), 2);
  EXPECT_EQ(fn<int (*)()>(image, "rtti")(), 1);
  EXPECT_EQ(fn<int (*)()>(image, "own_exception")(), 42);
  EXPECT_EQ(fn<int (*)()>(image, "library_exception")(), 7);
  EXPECT_EQ(fn<int (*)(int)>(image, "function_object")(3), 16);
  EXPECT_EQ(fn<int (*)()>(image, "local_static")(), 1);
  // An exception leaving the image unwinds through its frames into ours.
  try {
    fn<void (*)(int)>(image, "throw_out_c")(9);
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "image error");
  }
  std::size_t pending = image.pending_finalizers();
  EXPECT_GE(pending, 6u) << "two Tracked, a string, a vector, a map, the local static";
  image.run_finalizers();
  EXPECT_STREQ(events(), "abl~l~b~a") << "destructors in reverse order of construction";
  image.run_finalizers();
  EXPECT_STREQ(events(), "abl~l~b~a");
}

TEST_F(ImageLoaderTest, ThreadLocalsAreOneBlockPerImage) {
  std::string bytes = read_file(PROG_TLS_PATH);
  ampi::LoadedImage a = load(bytes, 4);
  ampi::LoadedImage b = load(bytes, 5);
  EXPECT_GT(a.info().tls_size, 0u);
  EXPECT_GT(a.info().tls_relocs, 0u);
  a.run_initializers(0, nullptr, nullptr);
  b.run_initializers(0, nullptr, nullptr);
  EXPECT_EQ(fn<int (*)()>(a, "tls_bump")(), 6);
  EXPECT_EQ(fn<int (*)()>(a, "tls_bump")(), 7);
  EXPECT_EQ(fn<int (*)()>(b, "tls_bump")(), 6);
  EXPECT_EQ(fn<int (*)()>(a, "tls_static_bump")(), 101);
  EXPECT_EQ(fn<int (*)()>(b, "tls_static_bump")(), 101);
  EXPECT_EQ(fn<int (*)()>(a, "tls_pointer_ok")(), 1);
  int* address = fn<int* (*)()>(a, "tls_address")();
  EXPECT_TRUE(inside(a, address)) << "the block lies in the image's span (it moves with it)";
  EXPECT_FALSE(inside(b, address));
  int* from_thread = nullptr;
  std::thread([&] { from_thread = fn<int* (*)()>(a, "tls_address")(); }).join();
  EXPECT_EQ(from_thread, address) << "one block per image, not per thread";
  EXPECT_EQ(fn<int (*)()>(a, "tls_with_dtor")(), 3);
  a.run_finalizers();
  EXPECT_STREQ(fn<const char* (*)()>(a, "tls_dtor_log")(), "T");
}

// The object of an AMPI program as ucharm_add_ampi_executable builds it (tests/ampi/privatize:
// C and C++, a thread_local, needs libucharm-ampi), its main called as a rank would.
TEST_F(ImageLoaderTest, AmpiProgramObject) {
  std::string bytes = read_file(AMPI_PROGRAM_PATH);
  std::string error;
  auto libraries = ampi::ImageLibraries::open(bytes.data(), bytes.size(), error);
  ASSERT_NE(libraries, nullptr) << error;
  for (std::size_t i : {std::size_t{0}, std::size_t{1}}) {
    auto image = ampi::LoadedImage::load(bytes.data(), bytes.size(), slot(i), kSlot, error, libraries);
    ASSERT_TRUE(image.has_value()) << error;
    EXPECT_TRUE(image->info().symbolic);
    image->run_initializers(0, nullptr, nullptr);
    auto main_fn = fn<int (*)(int, char**)>(*image, "main");
    char a0[] = "copies", a1[] = "3";
    char* argv[] = {a0, a1, nullptr};
    EXPECT_EQ(main_fn(2, argv), 1) << "copy " << i;
    EXPECT_EQ(main_fn(2, argv), 2) << "copy " << i;
    image->run_finalizers();
  }
}

TEST_F(ImageLoaderTest, PackedRelativeRelocations) {
  if (std::strlen(PROG_C_RELR_PATH) == 0) GTEST_SKIP() << "the linker has no -z pack-relative-relocs";
  std::string bytes = read_file(PROG_C_RELR_PATH);
  ampi::LoadedImage image = load(bytes, 0);
  image.run_initializers(0, nullptr, nullptr);
  EXPECT_GT(image.info().relative_relocs, 0u);
  EXPECT_EQ(fn<int (*)(int, int)>(image, "apply")(1, 4), 8);
  EXPECT_EQ(fn<std::size_t (*)(int)>(image, "name_length")(1), 4u);
  EXPECT_TRUE(inside(image, fn<int* (*)()>(image, "counter_address")()));
}

TEST_F(ImageLoaderTest, SysvHashTable) {
  std::string bytes = read_file(PROG_C_SYSV_PATH);
  ampi::LoadedImage image = load(bytes, 0);
  image.run_initializers(0, nullptr, nullptr);
  EXPECT_EQ(fn<int (*)()>(image, "bump")(), 8);
  EXPECT_EQ(image.symbol("no_such_symbol"), nullptr);
}

// Without a hash table, symbol() scans .dynsym (its size from the section headers). glibc
// needs one, so the libraries come from the unchanged file.
TEST_F(ImageLoaderTest, LinearSymbolScan) {
  std::string bytes = read_file(PROG_C_PATH);
  std::string error;
  auto libraries = ampi::ImageLibraries::open(bytes.data(), bytes.size(), error);
  ASSERT_NE(libraries, nullptr) << error;
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  int hidden = 0;
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, bytes.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type != PT_DYNAMIC) continue;
    for (std::size_t off = ph.p_offset; off + sizeof(Elf64_Dyn) <= ph.p_offset + ph.p_filesz; off += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      std::memcpy(&d, bytes.data() + off, sizeof d);
      if (d.d_tag != DT_GNU_HASH && d.d_tag != DT_HASH) continue;
      d.d_tag = DT_DEBUG;  // ignored by the loader
      std::memcpy(bytes.data() + off, &d, sizeof d);
      ++hidden;
    }
  }
  ASSERT_GE(hidden, 1);
  auto image = ampi::LoadedImage::load(bytes.data(), bytes.size(), slot(6), kSlot, error, libraries);
  ASSERT_TRUE(image.has_value()) << error;
  image->run_initializers(0, nullptr, nullptr);
  EXPECT_EQ(fn<int (*)()>(*image, "bump")(), 8);
  EXPECT_EQ(fn<int (*)()>(*image, "local")(), 3);
  EXPECT_EQ(image->symbol("no_such_symbol"), nullptr);
  EXPECT_EQ(image->symbol("hook_value"), nullptr);
}

TEST_F(ImageLoaderTest, RefusesWhatItCannotLoad) {
  EXPECT_EQ(load_error("this is not an ELF file, just some text bytes........................."),
            "not an ELF file");
  std::string bytes = read_file(PROG_C_PATH);
  EXPECT_EQ(load_error(bytes.substr(0, 40)), "not an ELF file");
  EXPECT_NE(load_error(bytes, 4096).find("needs"), std::string::npos);
  EXPECT_NE(load_error(bytes, kSlot, reinterpret_cast<void*>(kRegion + 100)).find("page size"), std::string::npos);
  std::string truncated = bytes.substr(0, 200);
  EXPECT_NE(load_error(truncated).find("corrupt"), std::string::npos) << load_error(truncated);
  std::string wrong_machine = bytes;
  wrong_machine[18] = 0x28;  // e_machine: ARM
  EXPECT_NE(load_error(wrong_machine).find("x86-64"), std::string::npos);
  EXPECT_NE(load_error(read_file(PROG_IFUNC_PATH)).find("ifunc"), std::string::npos);
  EXPECT_NE(load_error(read_file(PROG_INITIAL_EXEC_PATH)).find("initial-exec"), std::string::npos);
  std::string missing = load_error(read_file(PROG_UNDEFINED_PATH));
  EXPECT_NE(missing.find("undefined symbol missing_function"), std::string::npos) << missing;
  // A failed load gives the range back as a reservation.
  EXPECT_EQ(page_perms(kRegion + 7 * kSlot), "---p");
}

}  // namespace
