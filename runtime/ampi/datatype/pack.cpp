// Pack and unpack: inside the runtime (type_pack/type_unpack, the per-message path of
// derived types) and MPI_Pack/Unpack/Pack_size; basic-element counts and typed runs.
#include "datatype/type.h"
#include "checks.h"

#include <climits>

namespace ampi {
using namespace dt;

void type_pack(const void* buf, int count, MPI_Datatype t, void* out) {
  const Layout& l = layout(t);
  if (count <= 0 || l.size == 0) return;
  auto base = reinterpret_cast<std::uintptr_t>(buf);
  char* o = static_cast<char*>(out);
  if (l.contiguous) {
    std::memcpy(o, at(base, l.lb), static_cast<std::size_t>(count) * l.size);
    return;
  }
  for (int i = 0; i < count; ++i, base += static_cast<std::uintptr_t>(l.extent()))
    for (const Run& r : l.bytes) copy_run<true>(r, base, o);
}

void type_unpack(const void* in, std::size_t bytes, void* buf, int count, MPI_Datatype t) {
  const Layout& l = layout(t);
  if (count <= 0 || l.size == 0) return;
  bytes = std::min(bytes, static_cast<std::size_t>(count) * l.size);
  auto base = reinterpret_cast<std::uintptr_t>(buf);
  char* p = const_cast<char*>(static_cast<const char*>(in));
  if (l.contiguous) {
    std::memcpy(at(base, l.lb), p, bytes);
    return;
  }
  std::size_t whole = bytes / l.size;  // elements that arrived whole
  for (std::size_t i = 0; i < whole; ++i, base += static_cast<std::uintptr_t>(l.extent()))
    for (const Run& r : l.bytes) copy_run<false>(r, base, p);
  std::size_t left = bytes - whole * l.size;
  for (const Run& r : l.bytes) {
    for (std::size_t k = 0; k < r.reps && left > 0; ++k) {
      std::size_t n = std::min(left, r.count);
      std::memcpy(at(base, r.offset + static_cast<std::ptrdiff_t>(k) * r.stride), p, n);
      p += n;
      left -= n;
    }
    if (left == 0) break;
  }
}

// The bytes of the first `elements` basic elements of a sequence of t's (the inverse of
// type_basic_elements: MPI_Status_set_elements counts basic elements, not t's).
long long dt::bytes_of_elements(MPI_Datatype t, long long elements) {
  const Layout& l = layout(t);
  if (elements <= 0 || l.elements == 0) return 0;
  long long bytes = elements / l.elements * static_cast<long long>(l.size);
  long long left = elements % l.elements;
  for (const Run& r : l.items) {
    if (left == 0) break;
    const Basic& b = kBasics[r.basic];
    const long long run_elements = static_cast<long long>(r.count * r.reps) * b.elements;
    if (left >= run_elements) {
      bytes += static_cast<long long>(r.count * r.reps * b.size);
      left -= run_elements;
      continue;
    }
    bytes += left / b.elements * static_cast<long long>(b.size);
    if (left % b.elements) bytes += static_cast<long long>(b.part1);  // a pair's value without its index
    left = 0;
  }
  return bytes;
}

long long type_basic_elements(MPI_Datatype t, std::size_t bytes) {
  const Layout& l = layout(t);
  if (l.size == 0) return bytes == 0 ? 0 : MPI_UNDEFINED;
  long long n = static_cast<long long>(bytes / l.size) * l.elements;
  std::size_t left = bytes % l.size;
  for (const Run& r : l.items) {
    if (left == 0) break;
    const Basic& b = kBasics[r.basic];
    std::size_t run_bytes = r.count * r.reps * b.size;
    if (left >= run_bytes) {
      n += static_cast<long long>(r.count * r.reps) * b.elements;
      left -= run_bytes;
      continue;
    }
    n += static_cast<long long>(left / b.size) * b.elements;
    left %= b.size;
    if (left == b.part1 && b.part2 != 0) {  // the value of a pair without its index
      n += 1;
      left = 0;
    }
    break;
  }
  return left == 0 ? n : MPI_UNDEFINED;
}

void type_for_each_run(MPI_Datatype t, int count, TypeRunFn fn, void* ctx) {
  const Layout& l = layout(t);
  if (count <= 0 || l.items.empty()) return;
  if (l.items.size() == 1 && l.items[0].reps == 1 &&
      static_cast<std::ptrdiff_t>(l.items[0].count) * item_unit(l.items[0].basic) == l.extent()) {
    fn(ctx, l.items[0].offset, l.items[0].count * static_cast<std::size_t>(count), 1, 0, l.items[0].basic);
    return;
  }
  for (int i = 0; i < count; ++i) {
    std::ptrdiff_t base = static_cast<std::ptrdiff_t>(i) * l.extent();
    for (const Run& r : l.items) fn(ctx, base + r.offset, r.count, r.reps, r.stride, r.basic);
  }
}


namespace dt {

// Pack (`pack`) and Unpack: `count` elements of `datatype` go into (or come out of) the packed
// buffer `packed` of `size` bytes at *position; `need` is the bytes they take there.
int check_pack(MPI_Comm comm, const char* fn, bool pack, int count, MPI_Datatype datatype, const void* packed, int size,
               const int* position, std::size_t* need) {
  const char* count_name = pack ? "incount" : "outcount";
  const char* size_name = pack ? "outsize" : "insize";
  if (count < 0) return error(comm, MPI_ERR_COUNT, fn, "%s is negative (%d)", count_name, count);
  if (int rc = check_committed(comm, fn, "datatype", datatype)) return rc;
  if (!position) return error(comm, MPI_ERR_ARG, fn, "position is a null pointer");
  if (size < 0 || *position < 0 || *position > size)
    return error(comm, MPI_ERR_ARG, fn, "position %d is outside the buffer of %s %d", *position, size_name, size);
  *need = static_cast<std::size_t>(count) * type_size(datatype);
  const std::size_t left = static_cast<std::size_t>(size - *position);
  if (*need > left)
    return error(comm, MPI_ERR_TRUNCATE, fn, "%d x %s is %zu bytes; only %zu are left in the buffer (%s %d, position %d)",
                 count, type_name(datatype).c_str(), *need, left, size_name, size, *position);
  if (*need > 0 && !packed) return error(comm, MPI_ERR_ARG, fn, "%s is a null pointer", pack ? "outbuf" : "inbuf");
  return MPI_SUCCESS;
}

}  // namespace dt
}  // namespace ampi

using namespace ampi;
using namespace ampi::dt;

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Pack(const void* inbuf, int incount, MPI_Datatype datatype, void* outbuf, int outsize, int* position,
              MPI_Comm comm) {
  std::size_t need = 0;
  if (int rc = check_pack(comm, "MPI_Pack", true, incount, datatype, outbuf, outsize, position, &need)) return rc;
  type_pack(inbuf, incount, datatype, static_cast<char*>(outbuf) + *position);
  *position += static_cast<int>(need);
  return MPI_SUCCESS;
}

int PMPI_Unpack(const void* inbuf, int insize, int* position, void* outbuf, int outcount, MPI_Datatype datatype,
                MPI_Comm comm) {
  std::size_t need = 0;
  if (int rc = check_pack(comm, "MPI_Unpack", false, outcount, datatype, inbuf, insize, position, &need)) return rc;
  type_unpack(static_cast<const char*>(inbuf) + *position, need, outbuf, outcount, datatype);
  *position += static_cast<int>(need);
  return MPI_SUCCESS;
}

int PMPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int* size) {
  const char* fn = "MPI_Pack_size";
  if (incount < 0) return error(comm, MPI_ERR_COUNT, fn, "incount is negative (%d)", incount);
  if (int rc = check_committed(comm, fn, "datatype", datatype)) return rc;
  if (!size) return error(comm, MPI_ERR_ARG, fn, "size is a null pointer");
  std::size_t need = static_cast<std::size_t>(incount) * type_size(datatype);
  if (need > static_cast<std::size_t>(INT_MAX))
    return error(comm, MPI_ERR_COUNT, fn, "%d x %s is %zu bytes, more than an int can say", incount,
                 type_name(datatype).c_str(), need);
  *size = static_cast<int>(need);
  return MPI_SUCCESS;
}

}  // extern "C"
#pragma GCC visibility pop
