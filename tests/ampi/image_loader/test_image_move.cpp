// A program image loaded into a block of an isomalloc slice (as the AMPI loader loads a
// rank's copy) moves as bytes: packed with the slice, left (leave), the slice released,
// unpacked at the same addresses, arrived. After the move its code runs, keeps its globals,
// throws and catches, registers a new exit handler (a function-local static initialized
// only now) and its finalizers run. Links libucharm-ampi for its malloc, which follows the
// heap switch the loader uses; main() calls CmiIsomallocInit first, as the loader does.
#include "image_loader.h"

#include <gtest/gtest.h>

#include "page_perms.h"
#include <ucharm/converse.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace ampi::loader {
CmiIsoSlice* switch_heap(CmiIsoSlice* slice);  // libucharm-ampi (loader_support.cpp)
}

namespace {

std::string read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// malloc & co. allocate from `slice` for the scope (as a rank's code does).
struct InSlice {
  CmiIsoSlice* saved;
  explicit InSlice(CmiIsoSlice* s) : saved(ampi::loader::switch_heap(s)) {}
  ~InSlice() { ampi::loader::switch_heap(saved); }
};


template <typename F>
F fn(const ampi::LoadedImage& image, const char* name) {
  void* p = image.symbol(name);
  if (p == nullptr) throw std::runtime_error(std::string("no symbol ") + name);
  return reinterpret_cast<F>(p);
}

TEST(ImageMove, ImageInASliceMovesWithIt) {
  ASSERT_TRUE(CmiIsomallocReady()) << CmiIsomallocError();
  const std::string bytes = read_file(PROG_CXX_PATH);
  std::string error;
  auto libs = ampi::ImageLibraries::open(bytes.data(), bytes.size(), error);
  ASSERT_NE(libs, nullptr) << error;
  const std::size_t span = ampi::LoadedImage::span_of(bytes.data(), bytes.size(), error);
  ASSERT_GT(span, 0u) << error;

  CmiIsoSlice* slice = CmiIsomallocSlice(5);
  ASSERT_NE(slice, nullptr) << CmiIsomallocError();
  void* base = CmiIsoMemalign(slice, 4096, span);
  ASSERT_NE(base, nullptr);
  ampi::LoadedImage* image = nullptr;
  {
    InSlice in(slice);
    auto loaded = ampi::LoadedImage::load(bytes.data(), bytes.size(), base, span, error, libs,
                                          ampi::ImageMemory::heap_block);
    ASSERT_TRUE(loaded.has_value()) << error;
    image = new ampi::LoadedImage(std::move(*loaded));
  }
  EXPECT_EQ(CmiIsoSliceOf(image), slice) << "the LoadedImage lives in the slice";
  EXPECT_FALSE(image->entered());
  image->enter();
  EXPECT_TRUE(image->entered());
  {
    InSlice in(slice);
    image->run_initializers(0, nullptr, nullptr);
  }
  auto events = fn<const char* (*)()>(*image, "events");
  EXPECT_STREQ(events(), "ab");
  {
    InSlice in(slice);
    EXPECT_EQ(fn<int (*)(const char*, int)>(*image, "append_number")("four", 4), 4);  // a map node in the slice
    EXPECT_EQ(fn<int (*)()>(*image, "own_exception")(), 42);
  }
  // Every page of the image is readable (a byte copy reads them all); code is not writable.
  for (std::uintptr_t a = image->base(); a < image->base() + image->span(); a += 4096)
    ASSERT_EQ(page_perms(a)[0], 'r') << "page " << std::hex << a;
  const std::uintptr_t code = reinterpret_cast<std::uintptr_t>(image->symbol("own_exception"));
  EXPECT_EQ(page_perms(code), "r-xp");
  const std::size_t handlers = image->pending_finalizers();

  // Moving: pack, leave, release (the pages go), unpack at the same addresses, arrive.
  std::vector<char> pack(CmiIsoSlicePackSize(slice));
  ASSERT_EQ(CmiIsoSlicePack(slice, pack.data()), pack.size());
  image->leave();
  EXPECT_FALSE(image->entered());
  CmiIsoSliceRelease(slice);
  EXPECT_EQ(page_perms(code), "---p") << "the image's pages left with the slice";
  slice = CmiIsoSliceUnpack(pack.data(), pack.size());
  ASSERT_NE(slice, nullptr) << CmiIsomallocError();
  EXPECT_EQ(page_perms(code), "rw-p") << "the bytes arrive read-write";
  ASSERT_TRUE(image->arrived(libs, error)) << error;
  EXPECT_TRUE(image->entered());
  EXPECT_EQ(page_perms(code), "r-xp") << "protections set again";

  {
    InSlice in(slice);
    EXPECT_STREQ(events(), "ab");
    EXPECT_EQ(fn<int (*)(const char*)>(*image, "number")("four"), 4);
    EXPECT_EQ(fn<int (*)()>(*image, "own_exception")(), 42);
    EXPECT_EQ(fn<int (*)()>(*image, "library_exception")(), 7);
    EXPECT_EQ(fn<int (*)()>(*image, "local_static")(), 1);  // first call: a new exit handler
    try {
      fn<void (*)(int)>(*image, "throw_out_c")(9);
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "image error");
    }
  }
  EXPECT_EQ(image->pending_finalizers(), handlers + 1);
  {
    InSlice in(slice);
    image->run_finalizers();
  }
  EXPECT_STREQ(events(), "abl~l~b~a");
  EXPECT_EQ(CmiIsoSliceCheck(slice), nullptr);
  image->leave();  // the slice goes: nothing of this process may point into it
  CmiIsoSliceRelease(slice);
}

}  // namespace

int main(int argc, char** argv) {
  CmiIsomallocInit(argc, argv);  // as the AMPI loader: randomization off first
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
