// Cartesian and graph topologies.
#include "comm/comms.h"
#include "checks.h"

#include <algorithm>
#include <cstring>

namespace ampi::cm {

// ---- topologies -----------------------------------------------------------------------
Topology* topo_of(MPI_Comm comm) {
  CommSlot* s = slot_of(comm);
  return s ? &s->topo : nullptr;
}

// The communicator and its topology, which must be of `kind` (Cart or Graph).
int topo_check(MPI_Comm comm, const char* fn, TopoKind kind, Comm*& c, Topology*& t) {
  c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  t = topo_of(comm);
  if (t->kind != kind)
    return error(comm, MPI_ERR_TOPOLOGY, fn, "communicator %d has no %s topology", comm,
                 kind == TopoKind::Cart ? "Cartesian" : "graph");
  return MPI_SUCCESS;
}
int cart_of(MPI_Comm comm, const char* fn, Comm*& c, Topology*& t) {
  return topo_check(comm, fn, TopoKind::Cart, c, t);
}
int graph_of(MPI_Comm comm, const char* fn, Comm*& c, Topology*& t) {
  return topo_check(comm, fn, TopoKind::Graph, c, t);
}

// x moved into 0..d-1 along a periodic dimension; -1 outside a non-periodic one.
long long wrap_coord(long long x, int d, bool periodic) {
  if (periodic) {
    x %= d;
    if (x < 0) x += d;
    return x;
  }
  return x < 0 || x >= d ? -1 : x;
}

void coords_of(const Topology& t, int rank, int* coords, int maxdims) {
  const int nd = static_cast<int>(t.dims.size());
  for (int i = nd - 1; i >= 0; --i) {
    const int d = t.dims[static_cast<std::size_t>(i)];
    if (i < maxdims) coords[i] = rank % d;
    rank /= d;
  }
}

int check_dims(MPI_Comm comm, const char* fn, int ndims, const int* dims, long long* nnodes) {
  if (ndims < 0) return error(comm, MPI_ERR_DIMS, fn, "ndims is negative (%d)", ndims);
  if (ndims > 0 && !dims) return null_arg(comm, fn, "dims");
  *nnodes = 1;
  for (int i = 0; i < ndims; ++i) {
    if (dims[i] <= 0) return error(comm, MPI_ERR_DIMS, fn, "dims[%d] is %d (must be positive)", i, dims[i]);
    *nnodes *= dims[i];
    if (*nnodes > 0x7fffffff) return error(comm, MPI_ERR_DIMS, fn, "the grid has more than 2^31 points");
  }
  return MPI_SUCCESS;
}

int check_graph(MPI_Comm comm, const char* fn, int nnodes, const int* index, const int* edges, int size) {
  if (nnodes < 0) return error(comm, MPI_ERR_ARG, fn, "nnodes is negative (%d)", nnodes);
  if (nnodes > size)
    return error(comm, MPI_ERR_ARG, fn, "the graph has %d nodes, more than the communicator's %d ranks", nnodes, size);
  if (nnodes > 0 && !index) return null_arg(comm, fn, "index");
  int prev = 0;
  for (int i = 0; i < nnodes; ++i) {
    if (index[i] < prev) return error(comm, MPI_ERR_ARG, fn, "index[%d] (%d) is smaller than the one before", i, index[i]);
    prev = index[i];
  }
  if (prev > 0 && !edges) return null_arg(comm, fn, "edges");
  for (int i = 0; i < prev; ++i)
    if (edges[i] < 0 || edges[i] >= nnodes)
      return error(comm, MPI_ERR_ARG, fn, "edges[%d] (%d) is not a node of the graph (0..%d)", i, edges[i], nnodes - 1);
  return MPI_SUCCESS;
}

}  // namespace ampi::cm

using namespace ampi;
using namespace ampi::cm;

#pragma GCC visibility push(default)
extern "C" {

// ---- Cartesian and graph topologies -------------------------------------------------------
int PMPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[], int reorder,
                     MPI_Comm* comm_cart) {
  const char* fn = "MPI_Cart_create";
  (void)reorder;  // ranks keep their order (a valid choice)
  Comm* c = comm_get(comm_old);
  if (!c) return bad_comm(comm_old, fn);
  if (c->inter) return not_inter(comm_old, fn);
  if (!comm_cart) return null_arg(comm_old, fn, "comm_cart");
  long long nnodes = 1;
  if (int e = check_dims(comm_old, fn, ndims, dims, &nnodes)) return e;
  if (ndims > 0 && !periods) return null_arg(comm_old, fn, "periods");
  if (nnodes > c->size())
    return error(comm_old, MPI_ERR_ARG, fn, "the grid has %lld points, more than the communicator's %d ranks", nnodes,
                 c->size());
  if (int e = comm_prefix(*c, static_cast<int>(nnodes), comm_cart, fn)) return e;
  if (*comm_cart != MPI_COMM_NULL) {
    Topology& t = slot_of(*comm_cart)->topo;
    t.kind = TopoKind::Cart;
    t.dims.assign(dims, dims + ndims);
    t.periods.resize(static_cast<std::size_t>(ndims));
    for (int i = 0; i < ndims; ++i) t.periods[static_cast<std::size_t>(i)] = periods[i] != 0;
  }
  return MPI_SUCCESS;
}

// Balanced factors, largest first: each prime factor (largest first) goes to the free
// dimension that is smallest so far.
int PMPI_Dims_create(int nnodes, int ndims, int dims[]) {
  const char* fn = "MPI_Dims_create";
  if (nnodes <= 0) return error(MPI_COMM_NULL, MPI_ERR_ARG, fn, "nnodes is %d (must be positive)", nnodes);
  if (ndims < 0) return error(MPI_COMM_NULL, MPI_ERR_DIMS, fn, "ndims is negative (%d)", ndims);
  if (ndims > 0 && !dims) return null_arg(MPI_COMM_NULL, fn, "dims");
  long long fixed = 1;
  int nfree = 0;
  for (int i = 0; i < ndims; ++i) {
    if (dims[i] < 0) return error(MPI_COMM_NULL, MPI_ERR_DIMS, fn, "dims[%d] is negative (%d)", i, dims[i]);
    if (dims[i] == 0)
      ++nfree;
    else
      fixed *= dims[i];
  }
  if (nnodes % fixed != 0)
    return error(MPI_COMM_NULL, MPI_ERR_DIMS, fn, "%d nodes cannot fill the fixed dimensions (product %lld)", nnodes,
                 fixed);
  int rest = static_cast<int>(nnodes / fixed);
  if (nfree == 0) {
    if (rest != 1)
      return error(MPI_COMM_NULL, MPI_ERR_DIMS, fn, "the fixed dimensions (product %lld) do not make %d nodes", fixed,
                   nnodes);
    return MPI_SUCCESS;
  }
  std::vector<int> primes;
  for (int p = 2; static_cast<long long>(p) * p <= rest; ++p)
    while (rest % p == 0) {
      primes.push_back(p);
      rest /= p;
    }
  if (rest > 1) primes.push_back(rest);
  std::vector<int> f(static_cast<std::size_t>(nfree), 1);
  for (auto it = primes.rbegin(); it != primes.rend(); ++it) *std::min_element(f.begin(), f.end()) *= *it;
  std::sort(f.begin(), f.end(), std::greater<int>());
  std::size_t k = 0;
  for (int i = 0; i < ndims; ++i)
    if (dims[i] == 0) dims[i] = f[k++];
  return MPI_SUCCESS;
}

int PMPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]) {
  Comm* c = nullptr;
  Topology* t = nullptr;
  if (int e = cart_of(comm, "MPI_Cart_get", c, t)) return e;
  const int nd = static_cast<int>(t->dims.size());
  if (maxdims < 0) return error(comm, MPI_ERR_ARG, "MPI_Cart_get", "maxdims is negative (%d)", maxdims);
  for (int i = 0; i < std::min(nd, maxdims); ++i) {
    if (dims) dims[i] = t->dims[static_cast<std::size_t>(i)];
    if (periods) periods[i] = t->periods[static_cast<std::size_t>(i)];
  }
  if (coords) coords_of(*t, c->rank, coords, maxdims);
  return MPI_SUCCESS;
}

int PMPI_Cartdim_get(MPI_Comm comm, int* ndims) {
  Comm* c = nullptr;
  Topology* t = nullptr;
  if (int e = cart_of(comm, "MPI_Cartdim_get", c, t)) return e;
  if (!ndims) return null_arg(comm, "MPI_Cartdim_get", "ndims");
  *ndims = static_cast<int>(t->dims.size());
  return MPI_SUCCESS;
}

int PMPI_Cart_rank(MPI_Comm comm, const int coords[], int* rank) {
  const char* fn = "MPI_Cart_rank";
  Comm* c = nullptr;
  Topology* t = nullptr;
  if (int e = cart_of(comm, fn, c, t)) return e;
  if (!rank) return null_arg(comm, fn, "rank");
  const int nd = static_cast<int>(t->dims.size());
  if (nd > 0 && !coords) return null_arg(comm, fn, "coords");
  int r = 0;
  for (int i = 0; i < nd; ++i) {
    const int d = t->dims[static_cast<std::size_t>(i)];
    const long long x = wrap_coord(coords[i], d, t->periods[static_cast<std::size_t>(i)] != 0);
    if (x < 0)
      return error(comm, MPI_ERR_ARG, fn, "coords[%d] = %d is outside the non-periodic dimension (0..%d)", i, coords[i],
                   d - 1);
    r = r * d + static_cast<int>(x);
  }
  *rank = r;
  return MPI_SUCCESS;
}

int PMPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[]) {
  const char* fn = "MPI_Cart_coords";
  Comm* c = nullptr;
  Topology* t = nullptr;
  if (int e = cart_of(comm, fn, c, t)) return e;
  if (rank < 0 || rank >= c->size())
    return error(comm, MPI_ERR_RANK, fn, "rank %d is out of range (size %d)", rank, c->size());
  if (maxdims < static_cast<int>(t->dims.size()))
    return error(comm, MPI_ERR_ARG, fn, "maxdims (%d) is less than the number of dimensions (%zu)", maxdims,
                 t->dims.size());
  if (!t->dims.empty() && !coords) return null_arg(comm, fn, "coords");
  coords_of(*t, rank, coords, maxdims);
  return MPI_SUCCESS;
}

int PMPI_Cart_shift(MPI_Comm comm, int direction, int disp, int* rank_source, int* rank_dest) {
  const char* fn = "MPI_Cart_shift";
  Comm* c = nullptr;
  Topology* t = nullptr;
  if (int e = cart_of(comm, fn, c, t)) return e;
  const int nd = static_cast<int>(t->dims.size());
  if (direction < 0 || direction >= nd)
    return error(comm, MPI_ERR_ARG, fn, "direction %d is out of range (%d dimensions)", direction, nd);
  if (!rank_source || !rank_dest) return null_arg(comm, fn, "rank_source or rank_dest");
  std::vector<int> coords(static_cast<std::size_t>(nd));
  coords_of(*t, c->rank, coords.data(), nd);
  const int d = t->dims[static_cast<std::size_t>(direction)];
  const bool periodic = t->periods[static_cast<std::size_t>(direction)] != 0;
  auto neighbour = [&](long long x) {
    x = wrap_coord(x, d, periodic);
    if (x < 0) return MPI_PROC_NULL;
    std::vector<int> cc = coords;
    cc[static_cast<std::size_t>(direction)] = static_cast<int>(x);
    int r = 0;
    for (int i = 0; i < nd; ++i) r = r * t->dims[static_cast<std::size_t>(i)] + cc[static_cast<std::size_t>(i)];
    return r;
  };
  const long long me = coords[static_cast<std::size_t>(direction)];
  *rank_dest = neighbour(me + disp);
  *rank_source = neighbour(me - disp);
  return MPI_SUCCESS;
}

int PMPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm* newcomm) {
  const char* fn = "MPI_Cart_sub";
  Comm* c = nullptr;
  Topology* t = nullptr;
  if (int e = cart_of(comm, fn, c, t)) return e;
  if (!newcomm) return null_arg(comm, fn, "newcomm");
  const int nd = static_cast<int>(t->dims.size());
  if (nd > 0 && !remain_dims) return null_arg(comm, fn, "remain_dims");
  std::vector<int> coords(static_cast<std::size_t>(nd));
  coords_of(*t, c->rank, coords.data(), nd);
  // Color: the position along the dropped dimensions; the rank order within a color is
  // the row-major order of the kept ones (the parent's rank order).
  int color = 0;
  std::vector<int> dims, periods;
  for (int i = 0; i < nd; ++i) {
    const auto k = static_cast<std::size_t>(i);
    if (remain_dims[i]) {
      dims.push_back(t->dims[k]);
      periods.push_back(t->periods[k]);
    } else {
      color = color * t->dims[k] + coords[k];
    }
  }
  if (int e = split(*c, color, c->rank, newcomm, fn)) return e;
  Topology& nt = slot_of(*newcomm)->topo;
  nt.kind = TopoKind::Cart;
  nt.dims = std::move(dims);
  nt.periods = std::move(periods);
  return MPI_SUCCESS;
}

int PMPI_Cart_map(MPI_Comm comm, int ndims, const int dims[], const int periods[], int* newrank) {
  const char* fn = "MPI_Cart_map";
  (void)periods;
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  if (!newrank) return null_arg(comm, fn, "newrank");
  long long nnodes = 1;
  if (int e = check_dims(comm, fn, ndims, dims, &nnodes)) return e;
  if (nnodes > c->size())
    return error(comm, MPI_ERR_ARG, fn, "the grid has %lld points, more than the communicator's %d ranks", nnodes,
                 c->size());
  *newrank = c->rank < nnodes ? c->rank : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

int PMPI_Topo_test(MPI_Comm comm, int* status) {
  if (!comm_get(comm)) return bad_comm(comm, "MPI_Topo_test");
  if (!status) return null_arg(comm, "MPI_Topo_test", "status");
  const TopoKind k = topo_of(comm)->kind;
  *status = k == TopoKind::Cart        ? MPI_CART
            : k == TopoKind::Graph     ? MPI_GRAPH
            : k == TopoKind::DistGraph ? MPI_DIST_GRAPH
                                       : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

int PMPI_Graph_create(MPI_Comm comm_old, int nnodes, const int index[], const int edges[], int reorder,
                      MPI_Comm* comm_graph) {
  const char* fn = "MPI_Graph_create";
  (void)reorder;
  Comm* c = comm_get(comm_old);
  if (!c) return bad_comm(comm_old, fn);
  if (c->inter) return not_inter(comm_old, fn);
  if (!comm_graph) return null_arg(comm_old, fn, "comm_graph");
  if (int e = check_graph(comm_old, fn, nnodes, index, edges, c->size())) return e;
  if (int e = comm_prefix(*c, nnodes, comm_graph, fn)) return e;
  if (*comm_graph != MPI_COMM_NULL) {
    Topology& t = slot_of(*comm_graph)->topo;
    t.kind = TopoKind::Graph;
    t.index.assign(index, index + nnodes);
    t.edges.assign(edges, edges + (nnodes > 0 ? index[nnodes - 1] : 0));
  }
  return MPI_SUCCESS;
}

int PMPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[]) {
  Comm* c = nullptr;
  Topology* t = nullptr;
  if (int e = graph_of(comm, "MPI_Graph_get", c, t)) return e;
  for (int i = 0; i < std::min<int>(maxindex, static_cast<int>(t->index.size())); ++i)
    index[i] = t->index[static_cast<std::size_t>(i)];
  for (int i = 0; i < std::min<int>(maxedges, static_cast<int>(t->edges.size())); ++i)
    edges[i] = t->edges[static_cast<std::size_t>(i)];
  return MPI_SUCCESS;
}

int PMPI_Graphdims_get(MPI_Comm comm, int* nnodes, int* nedges) {
  Comm* c = nullptr;
  Topology* t = nullptr;
  if (int e = graph_of(comm, "MPI_Graphdims_get", c, t)) return e;
  if (!nnodes || !nedges) return null_arg(comm, "MPI_Graphdims_get", "nnodes or nedges");
  *nnodes = static_cast<int>(t->index.size());
  *nedges = static_cast<int>(t->edges.size());
  return MPI_SUCCESS;
}

int PMPI_Graph_neighbors_count(MPI_Comm comm, int rank, int* nneighbors) {
  const char* fn = "MPI_Graph_neighbors_count";
  Comm* c = nullptr;
  Topology* t = nullptr;
  if (int e = graph_of(comm, fn, c, t)) return e;
  if (rank < 0 || rank >= static_cast<int>(t->index.size()))
    return error(comm, MPI_ERR_RANK, fn, "rank %d is not a node of the graph", rank);
  if (!nneighbors) return null_arg(comm, fn, "nneighbors");
  const auto r = static_cast<std::size_t>(rank);
  *nneighbors = t->index[r] - (rank > 0 ? t->index[r - 1] : 0);
  return MPI_SUCCESS;
}

int PMPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[]) {
  const char* fn = "MPI_Graph_neighbors";
  Comm* c = nullptr;
  Topology* t = nullptr;
  if (int e = graph_of(comm, fn, c, t)) return e;
  if (rank < 0 || rank >= static_cast<int>(t->index.size()))
    return error(comm, MPI_ERR_RANK, fn, "rank %d is not a node of the graph", rank);
  const auto r = static_cast<std::size_t>(rank);
  const int first = rank > 0 ? t->index[r - 1] : 0;
  const int n = std::min(maxneighbors, t->index[r] - first);
  for (int i = 0; i < n; ++i) neighbors[i] = t->edges[static_cast<std::size_t>(first + i)];
  return MPI_SUCCESS;
}

int PMPI_Graph_map(MPI_Comm comm, int nnodes, const int index[], const int edges[], int* newrank) {
  const char* fn = "MPI_Graph_map";
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  if (!newrank) return null_arg(comm, fn, "newrank");
  if (int e = check_graph(comm, fn, nnodes, index, edges, c->size())) return e;
  *newrank = c->rank < nnodes ? c->rank : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

}  // extern "C"
#pragma GCC visibility pop
