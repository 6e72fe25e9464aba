// Communicators and groups of a rank.
#include "internal.h"

#include <ucharm/charm.h>

namespace ampi {

struct CommTable {
  std::vector<std::unique_ptr<Comm>> comms;  // indexed by handle; null: free or never used
};

void CommTableDeleter::operator()(CommTable* t) const { delete t; }

CommTablePtr comm_table_new(int world_rank, int world_size) {
  CommTablePtr t(new CommTable);
  t->comms.resize(3);
  auto world = std::make_unique<Comm>();
  world->handle = MPI_COMM_WORLD;
  world->context = 0;
  world->members.resize(static_cast<std::size_t>(world_size));
  for (int i = 0; i < world_size; ++i) world->members[static_cast<std::size_t>(i)] = i;
  world->rank = world_rank;
  auto self = std::make_unique<Comm>();
  self->handle = MPI_COMM_SELF;
  self->context = 2;
  self->members = {world_rank};
  self->rank = 0;
  t->comms[MPI_COMM_WORLD] = std::move(world);
  t->comms[MPI_COMM_SELF] = std::move(self);
  return t;
}

Comm* comm_get(MPI_Comm c) {
  CommTable& t = my_comms();
  if (c <= 0 || static_cast<std::size_t>(c) >= t.comms.size()) return nullptr;
  return t.comms[static_cast<std::size_t>(c)].get();
}

}  // namespace ampi

using namespace ampi;

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Comm_size(MPI_Comm comm, int* size) {
  Comm* c = comm_get(comm);
  if (!c) return error(comm, MPI_ERR_COMM, "MPI_Comm_size", "invalid communicator %d", comm);
  if (!size) return error(comm, MPI_ERR_ARG, "MPI_Comm_size", "size is NULL");
  *size = c->size();
  return MPI_SUCCESS;
}

int PMPI_Comm_rank(MPI_Comm comm, int* rank) {
  Comm* c = comm_get(comm);
  if (!c) return error(comm, MPI_ERR_COMM, "MPI_Comm_rank", "invalid communicator %d", comm);
  if (!rank) return error(comm, MPI_ERR_ARG, "MPI_Comm_rank", "rank is NULL");
  *rank = c->rank;
  return MPI_SUCCESS;
}

}
#pragma GCC visibility pop

namespace ampi {
MPI_Comm_errhandler_function* errhandler_function(MPI_Errhandler) { return nullptr; }
}  // namespace ampi
