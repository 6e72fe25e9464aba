// Distributed graph topologies (MPI-3.1 §7.5.4-7.5.5): Dist_graph_create(_adjacent),
// Dist_graph_neighbors(_count); and the neighbour lists of every topology kind that the
// neighbourhood collectives use (topo_neighbors, internal.h).
//
// Ranks keep their order (reorder is a hint MPI lets an implementation ignore). For
// Dist_graph_create, where any rank may name any edge, every rank gathers all edges and
// keeps its own, in the order of (the rank that named it, its position there): both ends of
// an edge see the same order, which the neighbourhood collectives match in.
#include "comm/comms.h"
#include "checks.h"

#include <algorithm>

namespace ampi {

using namespace cm;

int topo_neighbors(MPI_Comm comm, const char* fn, std::vector<int>* sources, std::vector<int>* destinations) {
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  const Topology& t = slot_of(comm)->topo;
  sources->clear();
  destinations->clear();
  switch (t.kind) {
    case TopoKind::Cart:
      // Per dimension the neighbour below, then the one above (MPI_Cart_shift by 1).
      for (int d = 0; d < static_cast<int>(t.dims.size()); ++d) {
        int below = MPI_PROC_NULL, above = MPI_PROC_NULL;
        if (int e = PMPI_Cart_shift(comm, d, 1, &below, &above)) return e;
        sources->push_back(below);
        sources->push_back(above);
      }
      *destinations = *sources;
      return MPI_SUCCESS;
    case TopoKind::Graph: {
      const auto r = static_cast<std::size_t>(c->rank);
      const int first = r > 0 ? t.index[r - 1] : 0;
      sources->assign(t.edges.begin() + first, t.edges.begin() + t.index[r]);
      *destinations = *sources;
      return MPI_SUCCESS;
    }
    case TopoKind::DistGraph:
      *sources = t.sources;
      *destinations = t.destinations;
      return MPI_SUCCESS;
    case TopoKind::None:
      break;
  }
  return error(comm, MPI_ERR_TOPOLOGY, fn, "communicator %d has no topology (Cartesian, graph or distributed graph)",
               comm);
}

}  // namespace ampi

namespace {

using namespace ampi;
using namespace ampi::cm;

// `n` ranks at `ranks`, each a rank of comm (`what` names them in messages).
int check_ranks(MPI_Comm comm, const char* fn, const char* what, int n, const int* ranks, int size) {
  if (n > 0 && !ranks) return null_arg(comm, fn, what);
  for (int i = 0; i < n; ++i)
    if (ranks[i] < 0 || ranks[i] >= size)
      return error(comm, MPI_ERR_RANK, fn, "%s[%d] = %d is not a rank of the communicator (size %d)", what, i, ranks[i],
                   size);
  return MPI_SUCCESS;
}

int check_weights(MPI_Comm comm, const char* fn, const char* what, int n, const int* w) {
  if (w == MPI_UNWEIGHTED || n == 0) return MPI_SUCCESS;
  if (!w || w == MPI_WEIGHTS_EMPTY) return null_arg(comm, fn, what);
  for (int i = 0; i < n; ++i)
    if (w[i] < 0) return error(comm, MPI_ERR_ARG, fn, "%s[%d] is negative (%d)", what, i, w[i]);
  return MPI_SUCCESS;
}

// The new communicator (comm_old's ranks, in order) with topology `t`.
int make(Comm& c, const char* fn, Topology t, MPI_Comm* out) {
  if (int e = comm_prefix(c, c.size(), out, fn)) return e;
  slot_of(*out)->topo = std::move(t);
  return MPI_SUCCESS;
}

// comm_old of Dist_graph_create(_adjacent): an intracommunicator; and somewhere to put the new one.
int check_old(MPI_Comm comm_old, const char* fn, const MPI_Comm* comm_dist_graph, Comm*& c) {
  c = comm_get(comm_old);
  if (!c) return bad_comm(comm_old, fn);
  if (c->inter) return not_inter(comm_old, fn);
  if (!comm_dist_graph) return null_arg(comm_old, fn, "comm_dist_graph");
  return MPI_SUCCESS;
}

int dist_graph_of(MPI_Comm comm, const char* fn, Topology*& t) {
  if (!comm_get(comm)) return bad_comm(comm, fn);
  t = &slot_of(comm)->topo;
  if (t->kind != TopoKind::DistGraph)
    return error(comm, MPI_ERR_TOPOLOGY, fn, "communicator %d has no distributed graph topology", comm);
  return MPI_SUCCESS;
}

}  // namespace

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[], const int sourceweights[],
                                    int outdegree, const int destinations[], const int destweights[], MPI_Info info,
                                    int reorder, MPI_Comm* comm_dist_graph) {
  const char* fn = "MPI_Dist_graph_create_adjacent";
  (void)info;
  (void)reorder;
  Comm* c = nullptr;
  if (int e = check_old(comm_old, fn, comm_dist_graph, c)) return e;
  if (indegree < 0 || outdegree < 0)
    return error(comm_old, MPI_ERR_ARG, fn, "indegree (%d) and outdegree (%d) must not be negative", indegree,
                 outdegree);
  if (int e = check_ranks(comm_old, fn, "sources", indegree, sources, c->size())) return e;
  if (int e = check_ranks(comm_old, fn, "destinations", outdegree, destinations, c->size())) return e;
  if (int e = check_weights(comm_old, fn, "sourceweights", indegree, sourceweights)) return e;
  if (int e = check_weights(comm_old, fn, "destweights", outdegree, destweights)) return e;
  Topology t;
  t.kind = TopoKind::DistGraph;
  t.weighted = sourceweights != MPI_UNWEIGHTED;
  t.sources.assign(sources, sources + indegree);
  t.destinations.assign(destinations, destinations + outdegree);
  if (t.weighted && indegree > 0) t.source_weights.assign(sourceweights, sourceweights + indegree);
  if (destweights != MPI_UNWEIGHTED && destweights != MPI_WEIGHTS_EMPTY && outdegree > 0)
    t.dest_weights.assign(destweights, destweights + outdegree);
  t.source_weights.resize(t.sources.size(), 1);
  t.dest_weights.resize(t.destinations.size(), 1);
  return make(*c, fn, std::move(t), comm_dist_graph);
}

// Every rank contributes [weighted, (source, destination, weight)...] for the edges it names.
int PMPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[], const int degrees[],
                           const int destinations[], const int weights[], MPI_Info info, int reorder,
                           MPI_Comm* comm_dist_graph) {
  const char* fn = "MPI_Dist_graph_create";
  (void)info;
  (void)reorder;
  Comm* c = nullptr;
  if (int e = check_old(comm_old, fn, comm_dist_graph, c)) return e;
  if (n < 0) return error(comm_old, MPI_ERR_ARG, fn, "n is negative (%d)", n);
  const int size = c->size();
  if (int e = check_ranks(comm_old, fn, "sources", n, sources, size)) return e;
  if (int e = check_counts(comm_old, fn, "degrees", degrees, n)) return e;
  long long edges = 0;
  for (int i = 0; i < n; ++i) edges += degrees[i];
  if (edges > (1 << 28)) return error(comm_old, MPI_ERR_ARG, fn, "too many edges (%lld)", edges);
  const int m = static_cast<int>(edges);
  if (int e = check_ranks(comm_old, fn, "destinations", m, destinations, size)) return e;
  if (int e = check_weights(comm_old, fn, "weights", m, weights)) return e;
  std::vector<int> mine{weights != MPI_UNWEIGHTED ? 1 : 0};
  for (int i = 0, k = 0; i < n; ++i)
    for (int j = 0; j < degrees[i]; ++j, ++k) {
      const bool w = weights != MPI_UNWEIGHTED && weights != MPI_WEIGHTS_EMPTY;
      mine.insert(mine.end(), {sources[i], destinations[k], w ? weights[k] : 1});
    }
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  if (int e = PMPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm_old)) return e;
  long long total = 0;
  for (int i = 0; i < size; ++i) {
    displs[static_cast<std::size_t>(i)] = static_cast<int>(total);
    total += lens[static_cast<std::size_t>(i)];
  }
  if (total > 0x7fffffff) return error(comm_old, MPI_ERR_ARG, fn, "the graph has too many edges");
  std::vector<int> all(static_cast<std::size_t>(total));
  if (int e = PMPI_Allgatherv(mine.data(), len, MPI_INT, all.data(), lens.data(), displs.data(), MPI_INT, comm_old))
    return e;
  c = comm_get(comm_old);
  Topology t;
  t.kind = TopoKind::DistGraph;
  for (int i = 0; i < size; ++i) {
    const std::size_t at = static_cast<std::size_t>(displs[static_cast<std::size_t>(i)]);
    t.weighted = t.weighted || all[at] != 0;
    for (std::size_t e = at + 1; e + 2 < at + static_cast<std::size_t>(lens[static_cast<std::size_t>(i)]); e += 3) {
      if (all[e] == c->rank) {
        t.destinations.push_back(all[e + 1]);
        t.dest_weights.push_back(all[e + 2]);
      }
      if (all[e + 1] == c->rank) {
        t.sources.push_back(all[e]);
        t.source_weights.push_back(all[e + 2]);
      }
    }
  }
  return make(*c, fn, std::move(t), comm_dist_graph);
}

int PMPI_Dist_graph_neighbors_count(MPI_Comm comm, int* indegree, int* outdegree, int* weighted) {
  const char* fn = "MPI_Dist_graph_neighbors_count";
  Topology* t = nullptr;
  if (int e = dist_graph_of(comm, fn, t)) return e;
  if (!indegree || !outdegree || !weighted) return null_arg(comm, fn, "indegree, outdegree or weighted");
  *indegree = static_cast<int>(t->sources.size());
  *outdegree = static_cast<int>(t->destinations.size());
  *weighted = t->weighted;
  return MPI_SUCCESS;
}

int PMPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[], int sourceweights[], int maxoutdegree,
                              int destinations[], int destweights[]) {
  const char* fn = "MPI_Dist_graph_neighbors";
  Topology* t = nullptr;
  if (int e = dist_graph_of(comm, fn, t)) return e;
  if (maxindegree < 0 || maxoutdegree < 0)
    return error(comm, MPI_ERR_ARG, fn, "maxindegree (%d) and maxoutdegree (%d) must not be negative", maxindegree,
                 maxoutdegree);
  const int in = std::min(maxindegree, static_cast<int>(t->sources.size()));
  const int out = std::min(maxoutdegree, static_cast<int>(t->destinations.size()));
  if ((in > 0 && !sources) || (out > 0 && !destinations)) return null_arg(comm, fn, "sources or destinations");
  const auto wanted = [](const int* w) { return w && w != MPI_UNWEIGHTED && w != MPI_WEIGHTS_EMPTY; };
  for (int i = 0; i < in; ++i) {
    sources[i] = t->sources[static_cast<std::size_t>(i)];
    if (t->weighted && wanted(sourceweights)) sourceweights[i] = t->source_weights[static_cast<std::size_t>(i)];
  }
  for (int i = 0; i < out; ++i) {
    destinations[i] = t->destinations[static_cast<std::size_t>(i)];
    if (t->weighted && wanted(destweights)) destweights[i] = t->dest_weights[static_cast<std::size_t>(i)];
  }
  return MPI_SUCCESS;
}

}  // extern "C"
#pragma GCC visibility pop
