// MPI_Type_create_darray (MPI-3.1 §4.1.4): the part of a global array that one process of a
// process grid owns under block, cyclic(k) or no distribution per dimension (HPF's rules).
//
// The processes form a row-major grid of psizes whatever `order` says; `order` only says
// which dimension of the array varies fastest in memory. Per dimension, the process's
// indices are a list of blocks (start, length); the type takes, dimension by dimension from
// the fastest out, those blocks of the type built so far, and ends with lb 0 and the whole
// array's extent (prod(gsizes) * extent(oldtype)), as the standard's definition through
// MPI_Type_create_resized has it.
#include "datatype/type.h"
#include "checks.h"

#include <algorithm>
#include <vector>

namespace ampi::dt {
namespace {

struct Span {
  long long start, length;
};

// The indices of dimension `d` that grid coordinate `coord` owns; an MPI error when the
// distribution cannot be (a block too small to cover the dimension).
int owned(const char* fn, int d, int gsize, int distrib, int darg, int psize, int coord, std::vector<Span>* out) {
  out->clear();
  switch (distrib) {
    case MPI_DISTRIBUTE_NONE:
      out->push_back({0, gsize});
      return MPI_SUCCESS;
    case MPI_DISTRIBUTE_BLOCK: {
      const long long b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (gsize + psize - 1) / psize : darg;
      if (b * psize < gsize)
        return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn,
                     "array_of_dargs[%d] = %d: %d blocks of it do not cover array_of_gsizes[%d] = %d", d, darg, psize,
                     d, gsize);
      const long long start = coord * b;
      out->push_back({start, std::max(0LL, std::min(b, gsize - start))});
      return MPI_SUCCESS;
    }
    case MPI_DISTRIBUTE_CYCLIC: {
      const long long b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
      for (long long j = coord * b; j < gsize; j += b * psize) out->push_back({j, std::min(b, gsize - j)});
      return MPI_SUCCESS;
    }
  }
  return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "array_of_distribs[%d] is %d, not a distribution", d, distrib);
}

int check_args(const char* fn, int size, int rank, int ndims, const int* gsizes, const int* distribs,
               const int* dargs, const int* psizes, int order) {
  if (size <= 0) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "size must be positive (%d)", size);
  if (rank < 0 || rank >= size) return error(MPI_COMM_WORLD, MPI_ERR_RANK, fn, "rank %d is not in [0, %d)", rank, size);
  if (ndims <= 0) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "ndims must be positive (%d)", ndims);
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "array_of_gsizes", gsizes)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "array_of_distribs", distribs)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "array_of_dargs", dargs)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "array_of_psizes", psizes)) return rc;
  if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "order is %d, not MPI_ORDER_C or MPI_ORDER_FORTRAN", order);
  long long procs = 1;
  for (int d = 0; d < ndims; ++d) {
    if (gsizes[d] <= 0)
      return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "array_of_gsizes[%d] is %d, not positive", d, gsizes[d]);
    if (psizes[d] <= 0)
      return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "array_of_psizes[%d] is %d, not positive", d, psizes[d]);
    if (distribs[d] == MPI_DISTRIBUTE_NONE && psizes[d] != 1)
      return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn,
                   "dimension %d is not distributed (MPI_DISTRIBUTE_NONE) but array_of_psizes[%d] is %d, not 1", d, d,
                   psizes[d]);
    if (dargs[d] != MPI_DISTRIBUTE_DFLT_DARG && dargs[d] <= 0)
      return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "array_of_dargs[%d] is %d (positive or MPI_DISTRIBUTE_DFLT_DARG)",
                   d, dargs[d]);
    procs *= psizes[d];
  }
  if (procs != size)
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "the process grid has %lld processes, not size = %d", procs, size);
  return MPI_SUCCESS;
}

}  // namespace
}  // namespace ampi::dt

using namespace ampi;
using namespace ampi::dt;

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Type_create_darray(int size, int rank, int ndims, const int array_of_gsizes[], const int array_of_distribs[],
                            const int array_of_dargs[], const int array_of_psizes[], int order, MPI_Datatype oldtype,
                            MPI_Datatype* newtype) {
  const char* fn = "MPI_Type_create_darray";
  if (int rc = check_args(fn, size, rank, ndims, array_of_gsizes, array_of_distribs, array_of_dargs, array_of_psizes,
                          order))
    return rc;
  if (int rc = check_type(MPI_COMM_WORLD, fn, "oldtype", oldtype)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "newtype", newtype)) return rc;
  const auto u = [](int i) { return static_cast<std::size_t>(i); };
  // This process's grid coordinates, row-major.
  std::vector<int> coords(u(ndims));
  for (int d = ndims - 1, r = rank; d >= 0; --d) {
    coords[u(d)] = r % array_of_psizes[d];
    r /= array_of_psizes[d];
  }
  const Layout& old = layout(oldtype);
  std::ptrdiff_t stride = old.extent();  // bytes between consecutive indices of the dimension
  Layout cur;
  std::vector<Span> spans;
  for (int k = 0; k < ndims; ++k) {
    const int d = order == MPI_ORDER_C ? ndims - 1 - k : k;
    if (int rc = owned(fn, d, array_of_gsizes[d], array_of_distribs[d], array_of_dargs[d], array_of_psizes[d],
                       coords[u(d)], &spans))
      return rc;
    Builder b;
    const Layout& inner = k == 0 ? old : cur;
    const std::ptrdiff_t step = k == 0 ? old.extent() : stride;
    for (const Span& s : spans) b.add(inner, s.start * stride, static_cast<std::size_t>(s.length), step);
    cur = b.finish(false);
    stride *= array_of_gsizes[d];
  }
  Recipe r{MPI_COMBINER_DARRAY, {size, rank, ndims}, {}, {oldtype}};
  for (const int* a : {array_of_gsizes, array_of_distribs, array_of_dargs, array_of_psizes})
    r.ints.insert(r.ints.end(), a, a + ndims);
  r.ints.push_back(order);
  return new_handle(resized(std::move(cur), 0, stride), std::move(r), newtype, fn);
}

}  // extern "C"
#pragma GCC visibility pop
