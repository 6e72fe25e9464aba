// The large-count datatype constructors (MPI-4.0 MPI_Type_*_c) whose block lengths may pass
// an int: while every value fits, the int constructor's body; a block longer than that
// becomes one element of a made type of its elements (large::Big), and the whole an
// MPI_Type_create_struct of the blocks at their byte displacements (the same type map,
// bounds and size; MPI_Type_get_envelope then names MPI_COMBINER_STRUCT). The other _c
// constructors are gen_mpi.py's adapters (large.h).
#include "large.h"

#include "checks.h"

#include <memory>
#include <vector>

using namespace ampi;

namespace {
struct Blocks {
  std::vector<MPI_Count> lens;
  std::vector<MPI_Count> disps;  // bytes
  std::vector<MPI_Datatype> types;
};

bool all_fit(const MPI_Count* a, MPI_Count n) {
  for (MPI_Count i = 0; i < n; ++i)
    if (!large::fits(a[i])) return false;
  return true;
}

// The struct of the blocks; a long block as one element of a made type.
int as_struct(const char* fn, const Blocks& b, MPI_Datatype* newtype) {
  if (!large::fits(static_cast<long long>(b.lens.size())))
    return large::too_large(MPI_COMM_WORLD, fn, "count", static_cast<long long>(b.lens.size()));
  const std::size_t n = b.lens.size();
  std::vector<std::unique_ptr<large::Big>> made(n);
  std::vector<int> lens(n);
  std::vector<MPI_Aint> disps(n);
  std::vector<MPI_Datatype> types(n);
  for (std::size_t i = 0; i < n; ++i) {
    made[i] = std::make_unique<large::Big>(b.lens[i], b.types[i], true);
    lens[i] = made[i]->count();
    types[i] = made[i]->type();
    disps[i] = static_cast<MPI_Aint>(b.disps[i]);
  }
  return PMPI_Type_create_struct(static_cast<int>(n), lens.data(), disps.data(), types.data(), newtype);
}

int check_old(const char* fn, MPI_Datatype t) { return check_type(MPI_COMM_WORLD, fn, "oldtype", t); }
}  // namespace

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Type_vector_c(MPI_Count count, MPI_Count blocklength, MPI_Count stride, MPI_Datatype oldtype,
                       MPI_Datatype* newtype) {
  const char* fn = "MPI_Type_vector_c";
  if (count < 0 || !large::fits(count)) return large::too_large(MPI_COMM_WORLD, fn, "count", count);
  if (large::fits(count) && large::fits(blocklength) && large::fits(stride))
    return PMPI_Type_vector(static_cast<int>(count), static_cast<int>(blocklength), static_cast<int>(stride), oldtype,
                            newtype);
  if (int e = check_old(fn, oldtype)) return e;
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(oldtype, &lb, &extent);
  Blocks b;
  for (MPI_Count i = 0; i < count; ++i) {
    b.lens.push_back(blocklength);
    b.disps.push_back(i * stride * extent);
    b.types.push_back(oldtype);
  }
  return as_struct(fn, b, newtype);
}

int PMPI_Type_create_hvector_c(MPI_Count count, MPI_Count blocklength, MPI_Count stride, MPI_Datatype oldtype,
                               MPI_Datatype* newtype) {
  const char* fn = "MPI_Type_create_hvector_c";
  if (count < 0 || !large::fits(count)) return large::too_large(MPI_COMM_WORLD, fn, "count", count);
  if (large::fits(count) && large::fits(blocklength))
    return PMPI_Type_create_hvector(static_cast<int>(count), static_cast<int>(blocklength),
                                    static_cast<MPI_Aint>(stride), oldtype, newtype);
  if (int e = check_old(fn, oldtype)) return e;
  Blocks b;
  for (MPI_Count i = 0; i < count; ++i) {
    b.lens.push_back(blocklength);
    b.disps.push_back(i * stride);
    b.types.push_back(oldtype);
  }
  return as_struct(fn, b, newtype);
}

// Indexed and hindexed (`bytes`: displacements in bytes, else in extents of oldtype), with
// one block length for all (`same`) or one each.
static int indexed(const char* fn, MPI_Count count, const MPI_Count* lens, MPI_Count same, const MPI_Count* displs,
                   bool bytes, MPI_Datatype oldtype, MPI_Datatype* newtype) {
  if (count < 0 || !large::fits(count)) return large::too_large(MPI_COMM_WORLD, fn, "count", count);
  if (count > 0 && ((!lens && same < 0) || !displs)) return null_arg(MPI_COMM_WORLD, fn, "an array");
  const int n = static_cast<int>(count);
  const bool lens_fit = lens ? all_fit(lens, count) : large::fits(same);
  if (lens_fit && (bytes || all_fit(displs, count))) {
    std::vector<int> l(static_cast<std::size_t>(n)), d(static_cast<std::size_t>(n));
    std::vector<MPI_Aint> a(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      l[static_cast<std::size_t>(i)] = static_cast<int>(lens ? lens[i] : same);
      d[static_cast<std::size_t>(i)] = bytes ? 0 : static_cast<int>(displs[i]);
      a[static_cast<std::size_t>(i)] = static_cast<MPI_Aint>(displs[i]);
    }
    if (lens)
      return bytes ? PMPI_Type_create_hindexed(n, l.data(), a.data(), oldtype, newtype)
                   : PMPI_Type_indexed(n, l.data(), d.data(), oldtype, newtype);
    return bytes ? PMPI_Type_create_hindexed_block(n, static_cast<int>(same), a.data(), oldtype, newtype)
                 : PMPI_Type_create_indexed_block(n, static_cast<int>(same), d.data(), oldtype, newtype);
  }
  if (int e = check_old(fn, oldtype)) return e;
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(oldtype, &lb, &extent);
  Blocks b;
  for (int i = 0; i < n; ++i) {
    b.lens.push_back(lens ? lens[i] : same);
    b.disps.push_back(bytes ? displs[i] : displs[i] * extent);
    b.types.push_back(oldtype);
  }
  return as_struct(fn, b, newtype);
}

int PMPI_Type_indexed_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                        const MPI_Count array_of_displacements[], MPI_Datatype oldtype, MPI_Datatype* newtype) {
  return indexed("MPI_Type_indexed_c", count, array_of_blocklengths, -1, array_of_displacements, false, oldtype,
                 newtype);
}

int PMPI_Type_create_hindexed_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                                const MPI_Count array_of_displacements[], MPI_Datatype oldtype,
                                MPI_Datatype* newtype) {
  return indexed("MPI_Type_create_hindexed_c", count, array_of_blocklengths, -1, array_of_displacements, true,
                 oldtype, newtype);
}

int PMPI_Type_create_indexed_block_c(MPI_Count count, MPI_Count blocklength, const MPI_Count array_of_displacements[],
                                     MPI_Datatype oldtype, MPI_Datatype* newtype) {
  if (blocklength < 0) return error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Type_create_indexed_block_c", "blocklength is negative");
  return indexed("MPI_Type_create_indexed_block_c", count, nullptr, blocklength, array_of_displacements, false,
                 oldtype, newtype);
}

int PMPI_Type_create_hindexed_block_c(MPI_Count count, MPI_Count blocklength, const MPI_Count array_of_displacements[],
                                      MPI_Datatype oldtype, MPI_Datatype* newtype) {
  if (blocklength < 0) return error(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Type_create_hindexed_block_c", "blocklength is negative");
  return indexed("MPI_Type_create_hindexed_block_c", count, nullptr, blocklength, array_of_displacements, true,
                 oldtype, newtype);
}

int PMPI_Type_create_struct_c(MPI_Count count, const MPI_Count array_of_blocklengths[],
                              const MPI_Count array_of_displacements[], const MPI_Datatype array_of_types[],
                              MPI_Datatype* newtype) {
  const char* fn = "MPI_Type_create_struct_c";
  if (count < 0 || !large::fits(count)) return large::too_large(MPI_COMM_WORLD, fn, "count", count);
  if (count > 0 && (!array_of_blocklengths || !array_of_displacements || !array_of_types))
    return null_arg(MPI_COMM_WORLD, fn, "an array");
  const int n = static_cast<int>(count);
  if (all_fit(array_of_blocklengths, count)) {
    std::vector<int> l(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) l[static_cast<std::size_t>(i)] = static_cast<int>(array_of_blocklengths[i]);
    return PMPI_Type_create_struct(n, l.data(), reinterpret_cast<const MPI_Aint*>(array_of_displacements),
                                   array_of_types, newtype);
  }
  Blocks b;
  for (int i = 0; i < n; ++i) {
    if (int e = check_type(MPI_COMM_WORLD, fn, "array_of_types[i]", array_of_types[i])) return e;
    b.lens.push_back(array_of_blocklengths[i]);
    b.disps.push_back(array_of_displacements[i]);
    b.types.push_back(array_of_types[i]);
  }
  return as_struct(fn, b, newtype);
}

}  // extern "C"
#pragma GCC visibility pop
