// The target's data work of an RMA operation (Put, Get, accumulates, Compare_and_swap) on
// memory at a given address: run by the target's PE for a message (ops.cpp) and in place by
// an origin that maps the target's memory (mapped.cpp).
#include "rma/rma.h"
#include "pt2pt/pt2pt.h"

#include <cstring>

namespace ampi::rma {

namespace {

// Calls fn(block, n, basic) for each block of the runs, in order.
template <class Fn>
void for_blocks(char* at, const Run* runs, int nruns, Fn&& fn) {
  for (int i = 0; i < nruns; ++i)
    for (std::uint64_t k = 0; k < runs[i].reps; ++k)
      fn(at + runs[i].off + static_cast<std::int64_t>(k) * runs[i].stride, static_cast<std::size_t>(runs[i].n),
         static_cast<MPI_Datatype>(runs[i].basic));
}

// An aligned scratch area of at least `bytes`, kept by the window between messages.
char* scratch_area(std::vector<std::max_align_t>& v, std::size_t bytes) {
  const std::size_t need = (bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t);
  if (v.size() < need) v.resize(need);
  return reinterpret_cast<char*>(v.data());
}

// block = in op block for n items (accumulate), through aligned copies: the packed data in
// the message need not be aligned for the type, and device memory is updated on the host.
void apply(char* block, const char* in, std::size_t n, MPI_Datatype basic, MPI_Op op, bool dev,
           std::vector<std::max_align_t>& tmp) {
  if (op == MPI_NO_OP || n == 0) return;
  const std::size_t ext = static_cast<std::size_t>(type_extent(basic));
  char* a = scratch_area(tmp, 2 * n * ext);
  char* b = a + n * ext;
  type_unpack(in, n * type_size(basic), a, static_cast<int>(n), basic);
  if (!dev) {
    op_apply(op, a, block, static_cast<int>(n), basic);
    return;
  }
  pt2pt::copy_any(b, block, n * ext);
  op_apply(op, a, b, static_cast<int>(n), basic);
  pt2pt::copy_any(block, b, n * ext);
}


std::vector<std::max_align_t>& acc_tmp() {
  // Scratch for accumulates on this PE (one message at a time).
  static std::vector<std::max_align_t> v;
  return v;
}


}  // namespace

// n items of basic between packed bytes and memory (device memory: only types without gaps).
void store(char* dst, const char* src, std::size_t n, MPI_Datatype basic, bool dev) {
  const std::size_t len = n * type_size(basic);
  if (static_cast<std::ptrdiff_t>(type_size(basic)) == type_extent(basic)) {
    if (dev) pt2pt::copy_any(dst, src, len);
    else std::memcpy(dst, src, len);
  } else {
    type_unpack(src, len, dst, static_cast<int>(n), basic);
  }
}
void load(char* dst, const char* src, std::size_t n, MPI_Datatype basic, bool dev) {
  const std::size_t len = n * type_size(basic);
  if (static_cast<std::ptrdiff_t>(type_size(basic)) == type_extent(basic)) {
    if (dev) pt2pt::copy_any(dst, src, len);
    else std::memcpy(dst, src, len);
  } else {
    type_pack(src, static_cast<int>(n), basic, dst);
  }
}

void execute(char* at, bool dev, void* msg, char* out) {
  const Hdr& h = hdr(msg);
  const Run* runs = runs_of(msg);
  const char* in = data_of(msg);
  switch (h.kind) {
    case kPut:
      for_blocks(at, runs, h.nruns, [&](char* b, std::size_t n, MPI_Datatype t) {
        store(b, in, n, t, dev);
        in += n * type_size(t);
      });
      break;
    case kAcc:
      for_blocks(at, runs, h.nruns, [&](char* b, std::size_t n, MPI_Datatype t) {
        apply(b, in, n, t, h.op, dev, acc_tmp());
        in += n * type_size(t);
      });
      break;
    case kGet:
    case kGetAcc:
      for_blocks(at, runs, h.nruns, [&](char* b, std::size_t n, MPI_Datatype t) {
        load(out, b, n, t, dev);
        out += n * type_size(t);
        if (h.kind == kGetAcc && h.op != MPI_NO_OP) {
          apply(b, in, n, t, h.op, dev, acc_tmp());
          in += n * type_size(t);
        }
      });
      break;
    case kCas: {
      const std::size_t s = type_size(h.type);
      pt2pt::copy_any(out, at, s);
      if (std::memcmp(out, in + s, s) == 0) pt2pt::copy_any(at, in, s);
      break;
    }
    default:
      break;
  }
}

}  // namespace ampi::rma
