// The large-count routines' helpers (large.h).
#include "large.h"

#include "checks.h"

#include <climits>
#include <cstring>

namespace ampi::large {

Big::Big(MPI_Count count, MPI_Datatype t, bool uncommitted_ok) : type_(t) {
  if (count <= INT_MAX || !(uncommitted_ok ? type_valid(t) : type_committed(t))) {
    count_ = count < 0 ? -1 : count <= INT_MAX ? static_cast<int>(count) : -1;
    return;
  }
  constexpr MPI_Count kBlock = MPI_Count{1} << 30;
  const MPI_Count blocks = count / kBlock, rest = count % kBlock;
  MPI_Datatype block = MPI_DATATYPE_NULL;
  PMPI_Type_contiguous(static_cast<int>(kBlock), t, &block);
  const int lens[2] = {static_cast<int>(blocks), static_cast<int>(rest)};
  const MPI_Aint disps[2] = {0, static_cast<MPI_Aint>(blocks * kBlock) * type_extent(t)};
  const MPI_Datatype types[2] = {block, t};
  PMPI_Type_create_struct(rest ? 2 : 1, lens, disps, types, &made_);
  PMPI_Type_commit(&made_);
  PMPI_Type_free(&block);
  count_ = 1;
  type_ = made_;
}

Big::~Big() {
  if (made_ != MPI_DATATYPE_NULL) PMPI_Type_free(&made_);
}

int too_large(MPI_Comm comm, const char* fn, const char* what, long long v) {
  return error(comm, MPI_ERR_COUNT, fn, "%s = %lld is beyond 2^31 - 1, which this routine does not support yet", what, v);
}

int too_large_entry(MPI_Comm comm, const char* fn, const char* what, const Ints& a) {
  return error(comm, MPI_ERR_COUNT, fn, "%s[%d] = %lld is beyond 2^31 - 1, which this routine does not support yet",
               what, a.bad(), a.value());
}

int peers(MPI_Comm comm, const char* fn, bool send) {
  Comm* c = comm_get(comm);
  if (!c) return 0;
  if (std::strstr(fn, "eighbor")) {
    int kind = MPI_UNDEFINED;
    PMPI_Topo_test(comm, &kind);
    if (kind == MPI_UNDEFINED) return 0;
    std::vector<int> sources, destinations;
    if (topo_neighbors(comm, fn, &sources, &destinations)) return 0;
    return static_cast<int>(send ? destinations.size() : sources.size());
  }
  if (!send && c->inter && std::strstr(fn, "educe_scatter")) return c->inter->local.size();
  return c->size();
}

bool is_root(MPI_Comm comm, int root) {
  Comm* c = comm_get(comm);
  if (!c) return true;  // the body reports the communicator
  return c->inter ? root == MPI_ROOT : c->rank == root;
}

}  // namespace ampi::large
