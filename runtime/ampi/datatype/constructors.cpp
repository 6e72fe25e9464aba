// The type constructors: contiguous, vector, indexed, struct, subarray, resized, dup.
#include "datatype/type.h"
#include "checks.h"

#include <climits>

namespace ampi::dt {

int check_blocklengths(int count, const int* blocklengths, const char* fn) {
  for (int i = 0; i < count; ++i)
    if (blocklengths[i] < 0)
      return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "array_of_blocklengths[%d] is negative (%d)", i, blocklengths[i]);
  return MPI_SUCCESS;
}

// The checks every constructor makes on its oldtype and newtype.
int check_old_new(MPI_Datatype oldtype, MPI_Datatype* newtype, const char* fn) {
  if (int rc = check_type(MPI_COMM_WORLD, fn, "oldtype", oldtype)) return rc;
  return check_ptr(MPI_COMM_WORLD, fn, "newtype", newtype);
}

int make_vector(int count, int blocklength, std::ptrdiff_t stride_bytes, MPI_Datatype oldtype,
                MPI_Datatype* newtype, const char* fn, Recipe r) {
  if (int rc = check_count(MPI_COMM_WORLD, fn, "count", count)) return rc;
  if (blocklength < 0) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "blocklength is negative (%d)", blocklength);
  if (int rc = check_old_new(oldtype, newtype, fn)) return rc;
  // One block, then `count` copies of it: a block that is one run stays one run.
  Builder blk;
  blk.add(layout(oldtype), 0, static_cast<std::size_t>(blocklength));
  Builder b;
  b.add(blk.finish(false), 0, static_cast<std::size_t>(count), stride_bytes);
  r.types = {oldtype};
  return new_handle(b.finish(false), std::move(r), newtype, fn);
}

template <class Disp>
int make_indexed(int count, const int* blocklengths, const Disp* displacements, std::ptrdiff_t unit,
                 MPI_Datatype oldtype, MPI_Datatype* newtype, const char* fn, int combiner) {
  if (int rc = check_count(MPI_COMM_WORLD, fn, "count", count)) return rc;
  if (count > 0) {
    if (int rc = check_ptr(MPI_COMM_WORLD, fn, "array_of_blocklengths", blocklengths)) return rc;
    if (int rc = check_ptr(MPI_COMM_WORLD, fn, "array_of_displacements", displacements)) return rc;
    if (int rc = check_blocklengths(count, blocklengths, fn)) return rc;
  }
  if (int rc = check_old_new(oldtype, newtype, fn)) return rc;
  const Layout& old = layout(oldtype);
  Builder b;
  for (int i = 0; i < count; ++i) b.add(old, static_cast<std::ptrdiff_t>(displacements[i]) * unit, blocklengths[i]);
  // MPI's argument order: count, then blocklength(s), then integer displacements; byte
  // displacements are addresses.
  Recipe r{combiner, {count}, {}, {oldtype}};
  if (combiner == MPI_COMBINER_INDEXED_BLOCK || combiner == MPI_COMBINER_HINDEXED_BLOCK)
    r.ints.push_back(count > 0 ? blocklengths[0] : 0);
  else r.ints.insert(r.ints.end(), blocklengths, blocklengths + count);
  for (int i = 0; i < count; ++i) {
    if (combiner == MPI_COMBINER_HINDEXED || combiner == MPI_COMBINER_HINDEXED_BLOCK)
      r.addrs.push_back(static_cast<MPI_Aint>(displacements[i]));
    else r.ints.push_back(static_cast<int>(displacements[i]));
  }
  return new_handle(b.finish(false), std::move(r), newtype, fn);
}

int make_struct(int count, const int* blocklengths, const MPI_Aint* displacements, const MPI_Datatype* types,
                MPI_Datatype* newtype, const char* fn) {
  if (int rc = check_count(MPI_COMM_WORLD, fn, "count", count)) return rc;
  if (count > 0) {
    if (int rc = check_ptr(MPI_COMM_WORLD, fn, "array_of_blocklengths", blocklengths)) return rc;
    if (int rc = check_ptr(MPI_COMM_WORLD, fn, "array_of_displacements", displacements)) return rc;
    if (int rc = check_ptr(MPI_COMM_WORLD, fn, "array_of_types", types)) return rc;
    if (int rc = check_blocklengths(count, blocklengths, fn)) return rc;
  }
  for (int i = 0; i < count; ++i) {
    if (live(types[i])) continue;
    char what[48];
    std::snprintf(what, sizeof what, "array_of_types[%d]", i);
    return bad_type(MPI_COMM_WORLD, fn, what, types[i]);
  }
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "newtype", newtype)) return rc;
  Builder b;
  for (int i = 0; i < count; ++i) b.add(layout(types[i]), displacements[i], blocklengths[i]);
  Recipe r{MPI_COMBINER_STRUCT, {count}, {displacements, displacements + count}, {types, types + count}};
  r.ints.insert(r.ints.end(), blocklengths, blocklengths + count);
  return new_handle(b.finish(true), std::move(r), newtype, fn);
}
}  // namespace ampi::dt

using namespace ampi;
using namespace ampi::dt;

#pragma GCC visibility push(default)
// MPI_Type_create_f90_integer/real/complex (MPI 3.1 §17.1.9): the type of the smallest
// Fortran kind with that precision and range, as a type of its own whose envelope is
// MPI_COMBINER_F90_* with the parameters. Programs may not free them and call these in loops:
// the rank keeps one per parameters (TypeTable::f90_types).
namespace {
int f90_type(int combiner, int p, int r, MPI_Datatype base, MPI_Datatype* newtype, const char* fn) {
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "newtype", newtype)) return rc;
  std::vector<int>& known = mine().f90_types;
  for (std::size_t i = 0; i + 3 < known.size(); i += 4)
    if (known[i] == combiner && known[i + 1] == p && known[i + 2] == r && live(known[i + 3])) {
      *newtype = known[i + 3];
      return MPI_SUCCESS;
    }
  Recipe recipe{combiner, {}, {}, {}};
  recipe.ints = combiner == MPI_COMBINER_F90_INTEGER ? std::vector<int>{r} : std::vector<int>{p, r};
  if (int rc = new_handle(layout(base), std::move(recipe), newtype, fn)) return rc;
  find(*newtype)->committed = true;  // predefined in the standard's sense: usable at once
  known.insert(known.end(), {combiner, p, r, *newtype});
  return MPI_SUCCESS;
}

// REAL(4): 6 digits, range 10^37; REAL(8): 15 digits, 10^307 (REAL(16) has no type here).
MPI_Datatype f90_real_kind(int p, int r, MPI_Datatype k4, MPI_Datatype k8) {
  const int pp = p == MPI_UNDEFINED ? 0 : p, rr = r == MPI_UNDEFINED ? 0 : r;
  if (pp < 0 || rr < 0) return MPI_DATATYPE_NULL;
  if (pp <= 6 && rr <= 37) return k4;
  if (pp <= 15 && rr <= 307) return k8;
  return MPI_DATATYPE_NULL;
}

}  // namespace

extern "C" {

int PMPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype* newtype) {
  const char* fn = "MPI_Type_contiguous";
  if (int rc = check_count(MPI_COMM_WORLD, fn, "count", count)) return rc;
  if (int rc = check_old_new(oldtype, newtype, fn)) return rc;
  Builder b;
  b.add(layout(oldtype), 0, static_cast<std::size_t>(count));
  return new_handle(b.finish(false), Recipe{MPI_COMBINER_CONTIGUOUS, {count}, {}, {oldtype}}, newtype, fn);
}

int PMPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype, MPI_Datatype* newtype) {
  std::ptrdiff_t ext = type_valid(oldtype) ? type_extent(oldtype) : 0;
  return make_vector(count, blocklength, stride * ext, oldtype, newtype, "MPI_Type_vector",
                     Recipe{MPI_COMBINER_VECTOR, {count, blocklength, stride}, {}, {}});
}

int PMPI_Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype, MPI_Datatype* newtype) {
  return make_vector(count, blocklength, stride, oldtype, newtype, "MPI_Type_hvector",
                     Recipe{MPI_COMBINER_HVECTOR, {count, blocklength}, {stride}, {}});
}

int PMPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                             MPI_Datatype* newtype) {
  return make_vector(count, blocklength, stride, oldtype, newtype, "MPI_Type_create_hvector",
                     Recipe{MPI_COMBINER_HVECTOR, {count, blocklength}, {stride}, {}});
}

int PMPI_Type_indexed(int count, const int array_of_blocklengths[], const int array_of_displacements[],
                      MPI_Datatype oldtype, MPI_Datatype* newtype) {
  std::ptrdiff_t ext = type_valid(oldtype) ? type_extent(oldtype) : 0;
  return make_indexed(count, array_of_blocklengths, array_of_displacements, ext, oldtype, newtype,
                      "MPI_Type_indexed", MPI_COMBINER_INDEXED);
}

int PMPI_Type_hindexed(int count, const int array_of_blocklengths[], const MPI_Aint array_of_displacements[],
                       MPI_Datatype oldtype, MPI_Datatype* newtype) {
  return make_indexed(count, array_of_blocklengths, array_of_displacements, 1, oldtype, newtype,
                      "MPI_Type_hindexed", MPI_COMBINER_HINDEXED);
}

int PMPI_Type_create_hindexed(int count, const int array_of_blocklengths[],
                              const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                              MPI_Datatype* newtype) {
  return make_indexed(count, array_of_blocklengths, array_of_displacements, 1, oldtype, newtype,
                      "MPI_Type_create_hindexed", MPI_COMBINER_HINDEXED);
}

int PMPI_Type_create_indexed_block(int count, int blocklength, const int array_of_displacements[],
                                   MPI_Datatype oldtype, MPI_Datatype* newtype) {
  const char* fn = "MPI_Type_create_indexed_block";
  if (int rc = check_count(MPI_COMM_WORLD, fn, "count", count)) return rc;
  if (blocklength < 0) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "blocklength is negative (%d)", blocklength);
  std::vector<int> lengths(static_cast<std::size_t>(count), blocklength);
  std::ptrdiff_t ext = type_valid(oldtype) ? type_extent(oldtype) : 0;
  return make_indexed(count, lengths.data(), array_of_displacements, ext, oldtype, newtype, fn,
                      MPI_COMBINER_INDEXED_BLOCK);
}

int PMPI_Type_struct(int count, const int array_of_blocklengths[], const MPI_Aint array_of_displacements[],
                     const MPI_Datatype array_of_types[], MPI_Datatype* newtype) {
  return make_struct(count, array_of_blocklengths, array_of_displacements, array_of_types, newtype,
                     "MPI_Type_struct");
}

int PMPI_Type_create_struct(int count, const int array_of_blocklengths[], const MPI_Aint array_of_displacements[],
                            const MPI_Datatype array_of_types[], MPI_Datatype* newtype) {
  return make_struct(count, array_of_blocklengths, array_of_displacements, array_of_types, newtype,
                     "MPI_Type_create_struct");
}

int PMPI_Type_create_subarray(int ndims, const int array_of_sizes[], const int array_of_subsizes[],
                              const int array_of_starts[], int order, MPI_Datatype oldtype,
                              MPI_Datatype* newtype) {
  const char* fn = "MPI_Type_create_subarray";
  if (ndims <= 0) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "ndims must be positive (%d)", ndims);
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "array_of_sizes", array_of_sizes)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "array_of_subsizes", array_of_subsizes)) return rc;
  if (int rc = check_ptr(MPI_COMM_WORLD, fn, "array_of_starts", array_of_starts)) return rc;
  if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "order is %d, not MPI_ORDER_C or MPI_ORDER_FORTRAN", order);
  for (int d = 0; d < ndims; ++d) {
    int size = array_of_sizes[d], sub = array_of_subsizes[d], start = array_of_starts[d];
    if (size <= 0) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "array_of_sizes[%d] is %d, not positive", d, size);
    if (sub < 0 || sub > size)
      return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "array_of_subsizes[%d] is %d, not in [0, %d]", d, sub, size);
    if (start < 0 || start > size - sub)
      return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn,
                   "array_of_starts[%d] is %d: the subarray [%d, %d) is not inside [0, %d)", d, start, start,
                   start + sub, size);
  }
  if (int rc = check_old_new(oldtype, newtype, fn)) return rc;
  const Layout& old = layout(oldtype);
  // Dimensions from the fastest-varying one out: stride[d] is the bytes between
  // consecutive indices of dimension d.
  std::vector<int> dims(static_cast<std::size_t>(ndims));
  for (int k = 0; k < ndims; ++k) dims[static_cast<std::size_t>(k)] = order == MPI_ORDER_C ? ndims - 1 - k : k;
  std::ptrdiff_t stride = old.extent(), offset = 0;
  Layout cur;
  for (int k = 0; k < ndims; ++k) {
    int d = dims[static_cast<std::size_t>(k)];
    Builder b;
    if (k == 0) {
      b.add(old, 0, static_cast<std::size_t>(array_of_subsizes[d]));
    } else {
      b.add(cur, 0, static_cast<std::size_t>(array_of_subsizes[d]), stride);
    }
    cur = b.finish(false);
    offset += static_cast<std::ptrdiff_t>(array_of_starts[d]) * stride;
    stride *= array_of_sizes[d];
  }
  Builder b;
  b.add(cur, offset, 1);
  // The subarray's extent is the whole array's (MPI defines it through create_resized).
  Recipe r{MPI_COMBINER_SUBARRAY, {ndims}, {}, {oldtype}};
  r.ints.insert(r.ints.end(), array_of_sizes, array_of_sizes + ndims);
  r.ints.insert(r.ints.end(), array_of_subsizes, array_of_subsizes + ndims);
  r.ints.insert(r.ints.end(), array_of_starts, array_of_starts + ndims);
  r.ints.push_back(order);
  return new_handle(resized(b.finish(false), 0, stride), std::move(r), newtype, fn);
}

int PMPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent, MPI_Datatype* newtype) {
  const char* fn = "MPI_Type_create_resized";
  if (int rc = check_old_new(oldtype, newtype, fn)) return rc;
  return new_handle(resized(layout(oldtype), lb, extent), Recipe{MPI_COMBINER_RESIZED, {}, {lb, extent}, {oldtype}},
                    newtype, fn);
}

int PMPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype* newtype) {
  const char* fn = "MPI_Type_dup";
  if (int rc = check_old_new(oldtype, newtype, fn)) return rc;
  Type* old = live(oldtype);
  bool committed = old->predefined || old->committed;
  if (int rc = new_handle(old->l, Recipe{MPI_COMBINER_DUP, {}, {}, {oldtype}}, newtype, fn)) return rc;
  find(*newtype)->committed = committed;  // MPI: the copy has the same committed state
  if (int rc = type_attrs_copy(oldtype, *newtype, fn)) {  // a copy callback failed: no new type
    PMPI_Type_free(newtype);
    *newtype = MPI_DATATYPE_NULL;
    return rc;
  }
  return MPI_SUCCESS;
}


int PMPI_Type_create_f90_integer(int r, MPI_Datatype* newtype) {
  const char* fn = "MPI_Type_create_f90_integer";
  // INTEGER(1..8): their ranges are 10^2, 10^4, 10^9, 10^18.
  MPI_Datatype t = r <= 2 ? MPI_INTEGER1 : r <= 4 ? MPI_INTEGER2 : r <= 9 ? MPI_INTEGER4 : r <= 18 ? MPI_INTEGER8
                                                                                              : MPI_DATATYPE_NULL;
  if (r < 0 || t == MPI_DATATYPE_NULL)
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "no Fortran integer kind has range r = %d (0 to 18 here)", r);
  return f90_type(MPI_COMBINER_F90_INTEGER, MPI_UNDEFINED, r, t, newtype, fn);
}

int PMPI_Type_create_f90_real(int p, int r, MPI_Datatype* newtype) {
  const char* fn = "MPI_Type_create_f90_real";
  MPI_Datatype t = f90_real_kind(p, r, MPI_REAL4, MPI_REAL8);
  if (t == MPI_DATATYPE_NULL)
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn,
                 "no Fortran real kind has precision p = %d and range r = %d (up to 15 and 307 here)", p, r);
  return f90_type(MPI_COMBINER_F90_REAL, p, r, t, newtype, fn);
}

int PMPI_Type_create_f90_complex(int p, int r, MPI_Datatype* newtype) {
  const char* fn = "MPI_Type_create_f90_complex";
  MPI_Datatype t = f90_real_kind(p, r, MPI_COMPLEX8, MPI_COMPLEX16);
  if (t == MPI_DATATYPE_NULL)
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn,
                 "no Fortran complex kind has precision p = %d and range r = %d (up to 15 and 307 here)", p, r);
  return f90_type(MPI_COMBINER_F90_COMPLEX, p, r, t, newtype, fn);
}

int PMPI_Type_create_hindexed_block(int count, int blocklength, const MPI_Aint array_of_displacements[],
                                    MPI_Datatype oldtype, MPI_Datatype* newtype) {
  const char* fn = "MPI_Type_create_hindexed_block";
  if (int rc = check_count(MPI_COMM_WORLD, fn, "count", count)) return rc;
  if (blocklength < 0) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "blocklength is negative (%d)", blocklength);
  std::vector<int> lengths(static_cast<std::size_t>(count), blocklength);
  return make_indexed(count, lengths.data(), array_of_displacements, 1, oldtype, newtype, fn,
                      MPI_COMBINER_HINDEXED_BLOCK);
}
}  // extern "C"
#pragma GCC visibility pop
