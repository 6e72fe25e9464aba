// Communicators, groups, attributes, error handlers, topologies and info objects of a rank.
// Every rank has its own table of each (handles are indices into the calling rank's table),
// since ranks are virtual processes that may share an OS process.
//
// Contexts: a new communicator needs a matching context that no member uses for another
// communicator. Each rank keeps `next_context` (above every context it has used); the
// creation, collective over the parent, takes the maximum over the participants (an
// Allreduce on the parent's collective context) and every participant moves past it.
// The communicators one MPI_Comm_split makes share that context: their members are
// disjoint. MPI_Comm_create_group, collective only over the group, agrees among the group
// members alone, on the parent's collective context with a tag made from the user's tag.
#include "internal.h"

#include <ucharm/charm.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ampi {

namespace {

enum class TopoKind { None, Cart, Graph };
struct Topology {
  TopoKind kind = TopoKind::None;
  std::vector<int> dims, periods;  // Cart
  std::vector<int> index, edges;   // Graph
};

struct CommSlot {
  std::unique_ptr<Comm> comm;
  std::string name;
  std::map<int, void*> attrs;  // keyval -> value
  Topology topo;
};

struct Group {
  std::vector<int> members;  // world ranks, by rank in the group
};

struct Keyval {
  MPI_Comm_copy_attr_function* copy = nullptr;
  MPI_Comm_delete_attr_function* del = nullptr;
  void* extra = nullptr;
  int refs = 0;  // the handle (until freed) + attributes that use it; 0: the slot is free
  bool freed = false;
};

struct Errh {
  MPI_Comm_errhandler_function* fn = nullptr;
  int refs = 0;  // handles the user holds + communicators using it; 0: the slot is free
};

using Info = std::vector<std::pair<std::string, std::string>>;  // in insertion order

// Predefined attribute keyvals (mpi.h): MPI_TAG_UB .. MPI_LASTUSEDCODE.
constexpr int kFirstUserKeyval = MPI_LASTUSEDCODE + 1;
constexpr int kFirstUserComm = 3;       // after NULL, WORLD, SELF
constexpr int kFirstUserGroup = 2;      // after NULL, EMPTY
constexpr int kFirstUserErrh = 3;       // after NULL, ARE_FATAL, RETURN
constexpr int kFirstUserInfo = 2;       // after NULL, ENV

}  // namespace

struct CommTable {
  std::vector<CommSlot> comms;  // indexed by handle; comm null: free or never used
  std::vector<std::unique_ptr<Group>> groups;
  std::vector<Keyval> keyvals;
  std::vector<Errh> errhs;
  std::vector<std::unique_ptr<Info>> infos;
  std::uint32_t next_context = 4;  // 0: MPI_COMM_WORLD, 2: MPI_COMM_SELF
  // Values of the predefined attributes (MPI_Attr_get hands out pointers to them).
  int attr_values[kFirstUserKeyval] = {};
};

void CommTableDeleter::operator()(CommTable* t) const { delete t; }

CommTablePtr comm_table_new(int world_rank, int world_size) {
  CommTablePtr t(new CommTable);
  t->comms.resize(kFirstUserComm);
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
  t->comms[MPI_COMM_WORLD].comm = std::move(world);
  t->comms[MPI_COMM_WORLD].name = "MPI_COMM_WORLD";
  t->comms[MPI_COMM_SELF].comm = std::move(self);
  t->comms[MPI_COMM_SELF].name = "MPI_COMM_SELF";
  t->groups.resize(kFirstUserGroup);
  t->groups[MPI_GROUP_EMPTY] = std::make_unique<Group>();
  t->keyvals.resize(kFirstUserKeyval);
  t->errhs.resize(kFirstUserErrh);
  t->errhs[MPI_ERRORS_ARE_FATAL].refs = 1;
  t->errhs[MPI_ERRORS_RETURN].refs = 1;
  t->infos.resize(kFirstUserInfo);
  t->infos[MPI_INFO_ENV] = std::make_unique<Info>();
  t->attr_values[MPI_TAG_UB] = UCHARM_MPI_TAG_UB;
  t->attr_values[MPI_HOST] = MPI_PROC_NULL;
  t->attr_values[MPI_IO] = MPI_ANY_SOURCE;  // every rank can do I/O
  t->attr_values[MPI_WTIME_IS_GLOBAL] = 0;
  t->attr_values[MPI_APPNUM] = 0;
  t->attr_values[MPI_UNIVERSE_SIZE] = world_size;
  t->attr_values[MPI_LASTUSEDCODE] = MPI_ERR_LASTCODE;
  return t;
}

Comm* comm_get(MPI_Comm c) {
  CommTable& t = my_comms();
  if (c <= 0 || static_cast<std::size_t>(c) >= t.comms.size()) return nullptr;
  return t.comms[static_cast<std::size_t>(c)].comm.get();
}

MPI_Comm_errhandler_function* errhandler_function(MPI_Errhandler h) {
  CommTable& t = my_comms();
  if (h < kFirstUserErrh || static_cast<std::size_t>(h) >= t.errhs.size()) return nullptr;
  return t.errhs[static_cast<std::size_t>(h)].fn;
}

namespace {

template <class T>
std::size_t free_slot(std::vector<T>& v, std::size_t first, bool (*is_free)(const T&)) {
  for (std::size_t i = first; i < v.size(); ++i)
    if (is_free(v[i])) return i;
  v.emplace_back();
  return v.size() - 1;
}

CommSlot* slot_of(MPI_Comm c) {
  CommTable& t = my_comms();
  if (c <= 0 || static_cast<std::size_t>(c) >= t.comms.size() || !t.comms[static_cast<std::size_t>(c)].comm)
    return nullptr;
  return &t.comms[static_cast<std::size_t>(c)];
}

Group* group_get(MPI_Group g) {
  CommTable& t = my_comms();
  if (g <= 0 || static_cast<std::size_t>(g) >= t.groups.size()) return nullptr;
  return t.groups[static_cast<std::size_t>(g)].get();
}

MPI_Group group_new(std::vector<int> members) {
  if (members.empty()) return MPI_GROUP_EMPTY;
  CommTable& t = my_comms();
  const std::size_t h = free_slot<std::unique_ptr<Group>>(t.groups, kFirstUserGroup,
                                                          [](const std::unique_ptr<Group>& g) { return !g; });
  t.groups[h] = std::make_unique<Group>(Group{std::move(members)});
  return static_cast<MPI_Group>(h);
}

Info* info_get(MPI_Info i) {
  CommTable& t = my_comms();
  if (i <= 0 || static_cast<std::size_t>(i) >= t.infos.size()) return nullptr;
  return t.infos[static_cast<std::size_t>(i)].get();
}

Keyval* keyval_get(int k) {
  CommTable& t = my_comms();
  if (k < kFirstUserKeyval || static_cast<std::size_t>(k) >= t.keyvals.size()) return nullptr;
  Keyval& kv = t.keyvals[static_cast<std::size_t>(k)];
  return kv.refs > 0 && !kv.freed ? &kv : nullptr;
}

void keyval_release(int k) {
  Keyval& kv = my_comms().keyvals[static_cast<std::size_t>(k)];
  if (--kv.refs == 0) kv = Keyval{};
}

bool errh_valid(MPI_Errhandler h) {
  CommTable& t = my_comms();
  return h > 0 && static_cast<std::size_t>(h) < t.errhs.size() && t.errhs[static_cast<std::size_t>(h)].refs > 0;
}
void errh_ref(MPI_Errhandler h) {
  if (h >= kFirstUserErrh) ++my_comms().errhs[static_cast<std::size_t>(h)].refs;
}
void errh_unref(MPI_Errhandler h) {
  if (h < kFirstUserErrh) return;
  Errh& e = my_comms().errhs[static_cast<std::size_t>(h)];
  if (--e.refs == 0) e = Errh{};
}

// MPI_COMM_NULL is named: passing it (e.g. MPI_Comm_free of a split's MPI_COMM_NULL result)
// is the usual mistake.
int bad_comm(MPI_Comm comm, const char* fn) {
  if (comm == MPI_COMM_NULL) return error(comm, MPI_ERR_COMM, fn, "the communicator is MPI_COMM_NULL");
  return error(comm, MPI_ERR_COMM, fn, "invalid communicator %d", comm);
}
int null_arg(MPI_Comm comm, const char* fn, const char* what) {
  return error(comm, MPI_ERR_ARG, fn, "%s is NULL", what);
}

// Position of each world rank in `members`.
std::unordered_map<int, int> index_of(const std::vector<int>& members) {
  std::unordered_map<int, int> m;
  m.reserve(members.size());
  for (std::size_t i = 0; i < members.size(); ++i) m.emplace(members[i], static_cast<int>(i));
  return m;
}

// Collective over `over`: a context unused by every participant (on `tag` of over's
// collective context). Returns an MPI code.
int agree_context(Comm& over, int tag, std::uint32_t* out) {
  CommTable& t = my_comms();
  unsigned long long mine = t.next_context, all = 0;
  if (int e = coll_allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, over, tag)) return e;
  *out = static_cast<std::uint32_t>(all);
  t.next_context = static_cast<std::uint32_t>(all) + 2;
  return MPI_SUCCESS;
}

// A new communicator of the calling rank (a member of `members`, at `rank`).
MPI_Comm comm_add(std::uint32_t context, std::vector<int> members, int rank, MPI_Errhandler eh) {
  CommTable& t = my_comms();
  const std::size_t h = free_slot<CommSlot>(t.comms, kFirstUserComm, [](const CommSlot& s) { return !s.comm; });
  auto c = std::make_unique<Comm>();
  c->handle = static_cast<MPI_Comm>(h);
  c->context = context;
  c->members = std::move(members);
  c->rank = rank;
  c->errhandler = eh;
  errh_ref(eh);
  t.comms[h] = CommSlot{};
  t.comms[h].comm = std::move(c);
  return static_cast<MPI_Comm>(h);
}

// Runs the delete callbacks of c's attributes and frees the communicator.
int comm_destroy(MPI_Comm handle) {
  CommSlot* s = slot_of(handle);
  int rc = MPI_SUCCESS;
  while (!s->attrs.empty()) {
    auto it = s->attrs.begin();
    const int k = it->first;
    void* v = it->second;
    s->attrs.erase(it);
    Keyval& kv = my_comms().keyvals[static_cast<std::size_t>(k)];
    if (kv.del) {
      const int e = kv.del(handle, k, v, kv.extra);
      if (e && !rc) rc = e;
    }
    keyval_release(k);
    s = slot_of(handle);  // a callback may have created communicators (the table moved)
  }
  errh_unref(s->comm->errhandler);
  *s = CommSlot{};
  return rc;
}

// Comm_split's core, collective over `parent`: members with the same color, ordered by
// (key, rank in parent). MPI_UNDEFINED: no new communicator.
int split(Comm& parent, int color, int key, MPI_Comm* out, const char* fn) {
  CommTable& t = my_comms();
  const int n = parent.size();
  int mine[3] = {color, key, static_cast<int>(t.next_context)};
  std::vector<int> all(3 * static_cast<std::size_t>(n));
  const int tag = coll_tag(parent);
  if (int e = coll_allgather(mine, 3, MPI_INT, all.data(), parent, tag))
    return error(parent.handle, e, fn, "the exchange of colors and keys failed");
  std::uint32_t context = 0;
  for (int i = 0; i < n; ++i) context = std::max(context, static_cast<std::uint32_t>(all[3 * static_cast<std::size_t>(i) + 2]));
  t.next_context = context + 2;
  *out = MPI_COMM_NULL;
  if (color == MPI_UNDEFINED) return MPI_SUCCESS;
  std::vector<int> ranks;  // parent ranks of my color
  for (int i = 0; i < n; ++i)
    if (all[3 * static_cast<std::size_t>(i)] == color) ranks.push_back(i);
  std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) {
    return all[3 * static_cast<std::size_t>(a) + 1] < all[3 * static_cast<std::size_t>(b) + 1];
  });
  std::vector<int> members(ranks.size());
  int rank = 0;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    members[i] = parent.members[static_cast<std::size_t>(ranks[i])];
    if (ranks[i] == parent.rank) rank = static_cast<int>(i);
  }
  *out = comm_add(context, std::move(members), rank, parent.errhandler);
  return MPI_SUCCESS;
}

// Collective over `parent`: a new communicator of parent's first `nnodes` ranks (the
// topology constructors: no reordering); MPI_COMM_NULL for the others.
int comm_prefix(Comm& parent, int nnodes, MPI_Comm* out, const char* fn) {
  std::uint32_t context = 0;
  if (int e = agree_context(parent, coll_tag(parent), &context))
    return error(parent.handle, e, fn, "the context agreement failed");
  *out = MPI_COMM_NULL;
  if (parent.rank >= nnodes) return MPI_SUCCESS;
  std::vector<int> members(parent.members.begin(), parent.members.begin() + nnodes);
  *out = comm_add(context, std::move(members), parent.rank, parent.errhandler);
  return MPI_SUCCESS;
}

int copy_string(const std::string& s, char* out, int max, int* len) {
  const std::size_t n = std::min(s.size(), static_cast<std::size_t>(max - 1));
  std::memcpy(out, s.data(), n);
  out[n] = '\0';
  if (len) *len = static_cast<int>(n);
  return MPI_SUCCESS;
}

// Attribute calls shared by the MPI-1 and MPI-2 names.
int attr_set(MPI_Comm comm, int keyval, void* value, const char* fn) {
  CommSlot* s = slot_of(comm);
  if (!s) return bad_comm(comm, fn);
  if (keyval > 0 && keyval < kFirstUserKeyval)
    return error(comm, MPI_ERR_KEYVAL, fn, "keyval %d is predefined: its attribute cannot be set", keyval);
  Keyval* kv = keyval_get(keyval);
  if (!kv) return error(comm, MPI_ERR_KEYVAL, fn, "invalid keyval %d", keyval);
  auto it = s->attrs.find(keyval);
  if (it != s->attrs.end()) {
    void* old = it->second;
    if (kv->del) {
      if (int e = kv->del(comm, keyval, old, kv->extra))
        return error(comm, e, fn, "the delete callback of keyval %d failed (%d)", keyval, e);
    }
    s = slot_of(comm);
    s->attrs[keyval] = value;
    return MPI_SUCCESS;
  }
  ++kv->refs;
  s->attrs[keyval] = value;
  return MPI_SUCCESS;
}

// A user keyval that still has a handle or attributes (a freed one keeps its attributes).
bool keyval_live(int keyval) {
  CommTable& t = my_comms();
  return keyval >= kFirstUserKeyval && static_cast<std::size_t>(keyval) < t.keyvals.size() &&
         t.keyvals[static_cast<std::size_t>(keyval)].refs != 0;
}

int attr_get(MPI_Comm comm, int keyval, void* value, int* flag, const char* fn) {
  CommSlot* s = slot_of(comm);
  if (!s) return bad_comm(comm, fn);
  if (!value) return null_arg(comm, fn, "attribute_val");
  if (!flag) return null_arg(comm, fn, "flag");
  // Predefined attributes: a pointer to the int value (on every communicator).
  if (keyval > 0 && keyval < kFirstUserKeyval) {
    *static_cast<void**>(value) = &my_comms().attr_values[keyval];
    *flag = 1;
    return MPI_SUCCESS;
  }
  if (!keyval_live(keyval)) return error(comm, MPI_ERR_KEYVAL, fn, "invalid keyval %d", keyval);
  auto it = s->attrs.find(keyval);
  *flag = it != s->attrs.end();
  if (*flag) *static_cast<void**>(value) = it->second;
  return MPI_SUCCESS;
}

int attr_delete(MPI_Comm comm, int keyval, const char* fn) {
  CommSlot* s = slot_of(comm);
  if (!s) return bad_comm(comm, fn);
  if (!keyval_live(keyval)) return error(comm, MPI_ERR_KEYVAL, fn, "invalid keyval %d", keyval);
  auto it = s->attrs.find(keyval);
  if (it == s->attrs.end()) return error(comm, MPI_ERR_KEYVAL, fn, "no attribute for keyval %d", keyval);
  Keyval& kv = my_comms().keyvals[static_cast<std::size_t>(keyval)];
  if (kv.del) {
    if (int e = kv.del(comm, keyval, it->second, kv.extra))
      return error(comm, e, fn, "the delete callback of keyval %d failed (%d)", keyval, e);
  }
  slot_of(comm)->attrs.erase(keyval);
  keyval_release(keyval);
  return MPI_SUCCESS;
}

int keyval_create(MPI_Comm_copy_attr_function* copy, MPI_Comm_delete_attr_function* del, int* keyval, void* extra,
                  const char* fn) {
  if (!keyval) return null_arg(MPI_COMM_NULL, fn, "keyval");
  CommTable& t = my_comms();
  const std::size_t k = free_slot<Keyval>(t.keyvals, kFirstUserKeyval, [](const Keyval& kv) { return kv.refs == 0; });
  t.keyvals[k] = Keyval{copy, del, extra, 1, false};
  *keyval = static_cast<int>(k);
  return MPI_SUCCESS;
}

int keyval_free(int* keyval, const char* fn) {
  if (!keyval) return null_arg(MPI_COMM_NULL, fn, "keyval");
  if (!keyval_get(*keyval)) return error(MPI_COMM_NULL, MPI_ERR_KEYVAL, fn, "invalid keyval %d", *keyval);
  my_comms().keyvals[static_cast<std::size_t>(*keyval)].freed = true;
  keyval_release(*keyval);
  *keyval = MPI_KEYVAL_INVALID;
  return MPI_SUCCESS;
}

// Copies the attributes of `from` onto the new `to` (MPI_Comm_dup) by their copy callbacks.
int attrs_copy(MPI_Comm from, MPI_Comm to, const char* fn) {
  const std::map<int, void*> attrs = slot_of(from)->attrs;  // callbacks may change the table
  for (const auto& [k, v] : attrs) {
    Keyval kv = my_comms().keyvals[static_cast<std::size_t>(k)];
    if (kv.copy == MPI_COMM_NULL_COPY_FN) continue;
    void* out = v;
    int flag = 1;
    if (kv.copy != MPI_COMM_DUP_FN) {
      flag = 0;
      if (int e = kv.copy(from, k, kv.extra, v, &out, &flag))
        return error(from, e, fn, "the copy callback of keyval %d failed (%d)", k, e);
    }
    if (flag) {
      ++my_comms().keyvals[static_cast<std::size_t>(k)].refs;
      slot_of(to)->attrs[k] = out;
    }
  }
  return MPI_SUCCESS;
}

int errhandler_set(MPI_Comm comm, MPI_Errhandler h, const char* fn) {
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  if (!errh_valid(h)) return error(comm, MPI_ERR_ARG, fn, "invalid error handler %d", h);
  errh_ref(h);
  errh_unref(c->errhandler);
  c->errhandler = h;
  return MPI_SUCCESS;
}

int errhandler_get(MPI_Comm comm, MPI_Errhandler* h, const char* fn) {
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  if (!h) return null_arg(comm, fn, "errhandler");
  *h = c->errhandler;
  errh_ref(*h);  // a new reference: the user frees it with MPI_Errhandler_free
  return MPI_SUCCESS;
}

int errhandler_create(MPI_Comm_errhandler_function* f, MPI_Errhandler* h, const char* fn) {
  if (!f) return null_arg(MPI_COMM_NULL, fn, "function");
  if (!h) return null_arg(MPI_COMM_NULL, fn, "errhandler");
  CommTable& t = my_comms();
  const std::size_t i = free_slot<Errh>(t.errhs, kFirstUserErrh, [](const Errh& e) { return e.refs == 0; });
  t.errhs[i] = Errh{f, 1};
  *h = static_cast<MPI_Errhandler>(i);
  return MPI_SUCCESS;
}

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

// ---- info ---------------------------------------------------------------------------------
int check_key(const char* fn, const char* key) {
  if (!key) return null_arg(MPI_COMM_NULL, fn, "key");
  const std::size_t n = std::strlen(key);
  if (n == 0 || n > MPI_MAX_INFO_KEY)
    return error(MPI_COMM_NULL, MPI_ERR_INFO_KEY, fn, "key \"%.40s\" is empty or longer than %d characters", key,
                 MPI_MAX_INFO_KEY);
  return MPI_SUCCESS;
}
Info::iterator info_find(Info& info, const char* key) {
  return std::find_if(info.begin(), info.end(), [&](const auto& kv) { return kv.first == key; });
}
int bad_info(const char* fn, MPI_Info i) { return error(MPI_COMM_NULL, MPI_ERR_INFO, fn, "invalid info object %d", i); }

// ---- groups -------------------------------------------------------------------------------
int bad_group(const char* fn, MPI_Group g) {
  return error(MPI_COMM_NULL, MPI_ERR_GROUP, fn, "invalid group %d", g);
}

// The ranks of `ranges` (first, last, stride triples) in g; MPI_ERR_RANK/ARG on bad ones.
int expand_ranges(const char* fn, int size, int n, int ranges[][3], std::vector<int>* out) {
  if (n < 0) return error(MPI_COMM_NULL, MPI_ERR_ARG, fn, "n is negative (%d)", n);
  if (n > 0 && !ranges) return null_arg(MPI_COMM_NULL, fn, "ranges");
  std::vector<char> seen(static_cast<std::size_t>(size), 0);
  for (int i = 0; i < n; ++i) {
    const int first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
    if (stride == 0) return error(MPI_COMM_NULL, MPI_ERR_ARG, fn, "ranges[%d] has stride 0", i);
    if (first < 0 || first >= size || last < 0 || last >= size)
      return error(MPI_COMM_NULL, MPI_ERR_RANK, fn, "ranges[%d] = (%d, %d, %d) leaves the group (size %d)", i, first,
                   last, stride, size);
    if ((stride > 0 && first > last) || (stride < 0 && first < last)) continue;
    for (long long r = first; stride > 0 ? r <= last : r >= last; r += stride) {
      if (seen[static_cast<std::size_t>(r)])
        return error(MPI_COMM_NULL, MPI_ERR_RANK, fn, "rank %lld appears twice in the ranges", r);
      seen[static_cast<std::size_t>(r)] = 1;
      out->push_back(static_cast<int>(r));
    }
  }
  return MPI_SUCCESS;
}

int check_rank_list(const char* fn, int size, int n, const int* ranks) {
  if (n < 0) return error(MPI_COMM_NULL, MPI_ERR_ARG, fn, "n is negative (%d)", n);
  if (n > size) return error(MPI_COMM_NULL, MPI_ERR_ARG, fn, "n (%d) is larger than the group (%d)", n, size);
  if (n > 0 && !ranks) return null_arg(MPI_COMM_NULL, fn, "ranks");
  std::vector<char> seen(static_cast<std::size_t>(size), 0);
  for (int i = 0; i < n; ++i) {
    if (ranks[i] < 0 || ranks[i] >= size)
      return error(MPI_COMM_NULL, MPI_ERR_RANK, fn, "ranks[%d] = %d is not in the group (size %d)", i, ranks[i], size);
    if (seen[static_cast<std::size_t>(ranks[i])])
      return error(MPI_COMM_NULL, MPI_ERR_RANK, fn, "rank %d appears twice", ranks[i]);
    seen[static_cast<std::size_t>(ranks[i])] = 1;
  }
  return MPI_SUCCESS;
}

// The two groups of a two-group call.
int two_groups(const char* fn, MPI_Group group1, MPI_Group group2, Group*& a, Group*& b) {
  a = group_get(group1);
  if (!a) return bad_group(fn, group1);
  b = group_get(group2);
  if (!b) return bad_group(fn, group2);
  return MPI_SUCCESS;
}

// Group_union, _intersection and _difference: the members of the first group that the second
// has (or lacks), the union then adding the second's members the first lacks.
enum class SetOp { Union, Intersection, Difference };
int group_set_op(const char* fn, MPI_Group group1, MPI_Group group2, MPI_Group* newgroup, SetOp op) {
  Group* a = nullptr;
  Group* b = nullptr;
  if (int e = two_groups(fn, group1, group2, a, b)) return e;
  if (!newgroup) return null_arg(MPI_COMM_NULL, fn, "newgroup");
  std::vector<int> m;
  if (op == SetOp::Union) {
    m = a->members;
    const auto in_a = index_of(a->members);
    for (int w : b->members)
      if (!in_a.count(w)) m.push_back(w);
  } else {
    const auto in_b = index_of(b->members);
    const bool keep = op == SetOp::Intersection;
    for (int w : a->members)
      if ((in_b.count(w) != 0) == keep) m.push_back(w);
  }
  *newgroup = group_new(std::move(m));
  return MPI_SUCCESS;
}

// Group_incl/_excl (a list of `ranks`) and Group_range_incl/_excl (`ranges` triples): the
// members at the ranks, in their order (incl), or all the others, in the group's order (excl).
enum class Subset { Incl, Excl, RangeIncl, RangeExcl };
int group_subset(const char* fn, MPI_Group group, int n, const int* ranks, int (*ranges)[3], Subset how,
                 MPI_Group* newgroup) {
  Group* g = group_get(group);
  if (!g) return bad_group(fn, group);
  if (!newgroup) return null_arg(MPI_COMM_NULL, fn, "newgroup");
  const int size = static_cast<int>(g->members.size());
  std::vector<int> list;
  if (how == Subset::RangeIncl || how == Subset::RangeExcl) {
    if (int e = expand_ranges(fn, size, n, ranges, &list)) return e;
  } else {
    if (int e = check_rank_list(fn, size, n, ranks)) return e;
    list.assign(ranks, ranks + n);
  }
  std::vector<int> m;
  if (how == Subset::Incl || how == Subset::RangeIncl) {
    for (int r : list) m.push_back(g->members[static_cast<std::size_t>(r)]);
  } else {
    std::vector<char> drop(g->members.size(), 0);
    for (int r : list) drop[static_cast<std::size_t>(r)] = 1;
    for (std::size_t i = 0; i < g->members.size(); ++i)
      if (!drop[i]) m.push_back(g->members[i]);
  }
  *newgroup = group_new(std::move(m));
  return MPI_SUCCESS;
}

// The calling rank's rank in g (MPI_UNDEFINED when not a member); every member of g must be
// in c (Comm_create, Comm_create_group).
int rank_in_group(MPI_Comm comm, const Comm& c, const Group& g, const char* fn, int* myrank) {
  const auto in_comm = index_of(c.members);
  const int me = c.members[static_cast<std::size_t>(c.rank)];
  *myrank = MPI_UNDEFINED;
  for (std::size_t i = 0; i < g.members.size(); ++i) {
    if (!in_comm.count(g.members[i]))
      return error(comm, MPI_ERR_GROUP, fn, "the group holds world rank %d, which is not in the communicator",
                   g.members[i]);
    if (g.members[i] == me) *myrank = static_cast<int>(i);
  }
  return MPI_SUCCESS;
}

int compare_members(const std::vector<int>& a, const std::vector<int>& b) {
  if (a == b) return MPI_IDENT;
  if (a.size() != b.size()) return MPI_UNEQUAL;
  std::vector<int> sa = a, sb = b;
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  return sa == sb ? MPI_SIMILAR : MPI_UNEQUAL;
}

}  // namespace
}  // namespace ampi

using namespace ampi;

#pragma GCC visibility push(default)
extern "C" {

// ---- communicators ---------------------------------------------------------------------
int PMPI_Comm_size(MPI_Comm comm, int* size) {
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, "MPI_Comm_size");
  if (!size) return error(comm, MPI_ERR_ARG, "MPI_Comm_size", "size is NULL");
  *size = c->size();
  return MPI_SUCCESS;
}

int PMPI_Comm_rank(MPI_Comm comm, int* rank) {
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, "MPI_Comm_rank");
  if (!rank) return error(comm, MPI_ERR_ARG, "MPI_Comm_rank", "rank is NULL");
  *rank = c->rank;
  return MPI_SUCCESS;
}

int PMPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int* result) {
  const char* fn = "MPI_Comm_compare";
  Comm* a = comm_get(comm1);
  if (!a) return bad_comm(comm1, fn);
  Comm* b = comm_get(comm2);
  if (!b) return bad_comm(comm2, fn);
  if (!result) return null_arg(comm1, fn, "result");
  if (comm1 == comm2) {
    *result = MPI_IDENT;
    return MPI_SUCCESS;
  }
  const int r = compare_members(a->members, b->members);
  *result = r == MPI_IDENT ? MPI_CONGRUENT : r;
  return MPI_SUCCESS;
}

int PMPI_Comm_dup(MPI_Comm comm, MPI_Comm* newcomm) {
  const char* fn = "MPI_Comm_dup";
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  if (!newcomm) return null_arg(comm, fn, "newcomm");
  std::uint32_t context = 0;
  if (int e = agree_context(*c, coll_tag(*c), &context)) return error(comm, e, fn, "the context agreement failed");
  c = comm_get(comm);
  const MPI_Comm h = comm_add(context, c->members, c->rank, c->errhandler);
  slot_of(h)->topo = slot_of(comm)->topo;
  if (int e = attrs_copy(comm, h, fn)) {
    comm_destroy(h);
    return e;
  }
  *newcomm = h;
  return MPI_SUCCESS;
}

int PMPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  const char* fn = "MPI_Comm_split";
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  if (!newcomm) return null_arg(comm, fn, "newcomm");
  if (color < 0 && color != MPI_UNDEFINED)
    return error(comm, MPI_ERR_ARG, fn, "color %d is negative (only MPI_UNDEFINED may be)", color);
  return split(*c, color, key, newcomm, fn);
}

// MPI_COMM_TYPE_SHARED: the ranks in the same OS process (one PE each), the only ones
// that share memory here (shared-memory windows between processes do not exist). The
// grouping is that of the call: a rank that migrates later keeps its communicator.
int PMPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* newcomm) {
  const char* fn = "MPI_Comm_split_type";
  (void)info;
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  if (!newcomm) return null_arg(comm, fn, "newcomm");
  if (split_type != MPI_COMM_TYPE_SHARED && split_type != MPI_UNDEFINED)
    return error(comm, MPI_ERR_ARG, fn, "unknown split_type %d (MPI_COMM_TYPE_SHARED or MPI_UNDEFINED)", split_type);
  return split(*c, split_type == MPI_UNDEFINED ? MPI_UNDEFINED : CmiMyPe(), key, newcomm, fn);
}

int PMPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  const char* fn = "MPI_Comm_create";
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  if (!newcomm) return null_arg(comm, fn, "newcomm");
  Group* g = group_get(group);
  if (!g) return error(comm, MPI_ERR_GROUP, fn, "invalid group %d", group);
  int myrank = MPI_UNDEFINED;
  if (int e = rank_in_group(comm, *c, *g, fn, &myrank)) return e;
  std::vector<int> members = g->members;
  std::uint32_t context = 0;
  if (int e = agree_context(*c, coll_tag(*c), &context)) return error(comm, e, fn, "the context agreement failed");
  *newcomm = MPI_COMM_NULL;
  c = comm_get(comm);
  if (myrank != MPI_UNDEFINED) *newcomm = comm_add(context, std::move(members), myrank, c->errhandler);
  return MPI_SUCCESS;
}

int PMPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm) {
  const char* fn = "MPI_Comm_create_group";
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  if (!newcomm) return null_arg(comm, fn, "newcomm");
  if (tag < 0) return error(comm, MPI_ERR_TAG, fn, "tag %d is negative", tag);
  Group* g = group_get(group);
  if (!g) return error(comm, MPI_ERR_GROUP, fn, "invalid group %d", group);
  int myrank = MPI_UNDEFINED;
  if (int e = rank_in_group(comm, *c, *g, fn, &myrank)) return e;
  *newcomm = MPI_COMM_NULL;
  if (myrank == MPI_UNDEFINED) return MPI_SUCCESS;
  // Only the group's members take part: they agree among themselves, through a
  // communicator of the group on the parent's collective context and a tag of the
  // user's, outside the range of the parent's own collectives.
  Comm over;
  over.handle = comm;
  over.context = c->context;
  over.members = g->members;
  over.rank = myrank;
  over.errhandler = c->errhandler;
  std::uint32_t context = 0;
  if (int e = agree_context(over, kCollTagFree + (tag & (kCollTagFree - 1)), &context))
    return error(comm, e, fn, "the context agreement failed");
  c = comm_get(comm);
  *newcomm = comm_add(context, g->members, myrank, c->errhandler);
  return MPI_SUCCESS;
}

int PMPI_Comm_free(MPI_Comm* comm) {
  const char* fn = "MPI_Comm_free";
  if (!comm) return null_arg(MPI_COMM_NULL, fn, "comm");
  if (*comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF)
    return error(*comm, MPI_ERR_COMM, fn, "%s cannot be freed", *comm == MPI_COMM_WORLD ? "MPI_COMM_WORLD" : "MPI_COMM_SELF");
  if (!comm_get(*comm)) return bad_comm(*comm, fn);
  const MPI_Comm h = *comm;
  const int e = comm_destroy(h);
  *comm = MPI_COMM_NULL;
  if (e) return error(MPI_COMM_NULL, e, fn, "an attribute's delete callback failed (%d)", e);
  return MPI_SUCCESS;
}

int PMPI_Comm_group(MPI_Comm comm, MPI_Group* group) {
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, "MPI_Comm_group");
  if (!group) return null_arg(comm, "MPI_Comm_group", "group");
  *group = group_new(c->members);
  return MPI_SUCCESS;
}

int PMPI_Comm_test_inter(MPI_Comm comm, int* flag) {
  if (!comm_get(comm)) return bad_comm(comm, "MPI_Comm_test_inter");
  if (!flag) return null_arg(comm, "MPI_Comm_test_inter", "flag");
  *flag = 0;  // no intercommunicators here
  return MPI_SUCCESS;
}

int PMPI_Comm_remote_size(MPI_Comm comm, int* size) {
  (void)size;
  if (!comm_get(comm)) return bad_comm(comm, "MPI_Comm_remote_size");
  return error(comm, MPI_ERR_COMM, "MPI_Comm_remote_size", "communicator %d is not an intercommunicator", comm);
}

int PMPI_Comm_remote_group(MPI_Comm comm, MPI_Group* group) {
  (void)group;
  if (!comm_get(comm)) return bad_comm(comm, "MPI_Comm_remote_group");
  return error(comm, MPI_ERR_COMM, "MPI_Comm_remote_group", "communicator %d is not an intercommunicator", comm);
}

int PMPI_Comm_set_name(MPI_Comm comm, const char* comm_name) {
  CommSlot* s = slot_of(comm);
  if (!s) return bad_comm(comm, "MPI_Comm_set_name");
  if (!comm_name) return null_arg(comm, "MPI_Comm_set_name", "comm_name");
  s->name.assign(comm_name, strnlen(comm_name, MPI_MAX_OBJECT_NAME - 1));
  return MPI_SUCCESS;
}

int PMPI_Comm_get_name(MPI_Comm comm, char* comm_name, int* resultlen) {
  CommSlot* s = slot_of(comm);
  if (!s) return bad_comm(comm, "MPI_Comm_get_name");
  if (!comm_name) return null_arg(comm, "MPI_Comm_get_name", "comm_name");
  if (!resultlen) return null_arg(comm, "MPI_Comm_get_name", "resultlen");
  return copy_string(s->name, comm_name, MPI_MAX_OBJECT_NAME, resultlen);
}

// ---- error handlers ------------------------------------------------------------------
int PMPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler) {
  return errhandler_set(comm, errhandler, "MPI_Comm_set_errhandler");
}
int PMPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler) {
  return errhandler_set(comm, errhandler, "MPI_Errhandler_set");
}
int PMPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler* errhandler) {
  return errhandler_get(comm, errhandler, "MPI_Comm_get_errhandler");
}
int PMPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler* errhandler) {
  return errhandler_get(comm, errhandler, "MPI_Errhandler_get");
}
int PMPI_Comm_create_errhandler(MPI_Comm_errhandler_function* function, MPI_Errhandler* errhandler) {
  return errhandler_create(function, errhandler, "MPI_Comm_create_errhandler");
}
int PMPI_Errhandler_create(MPI_Handler_function* function, MPI_Errhandler* errhandler) {
  return errhandler_create(function, errhandler, "MPI_Errhandler_create");
}
int PMPI_Errhandler_free(MPI_Errhandler* errhandler) {
  const char* fn = "MPI_Errhandler_free";
  if (!errhandler) return null_arg(MPI_COMM_NULL, fn, "errhandler");
  if (!errh_valid(*errhandler)) return error(MPI_COMM_NULL, MPI_ERR_ARG, fn, "invalid error handler %d", *errhandler);
  errh_unref(*errhandler);  // communicators using it keep it alive
  *errhandler = MPI_ERRHANDLER_NULL;
  return MPI_SUCCESS;
}

// ---- attributes ------------------------------------------------------------------------
int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function* comm_copy_attr_fn,
                            MPI_Comm_delete_attr_function* comm_delete_attr_fn, int* comm_keyval, void* extra_state) {
  return keyval_create(comm_copy_attr_fn, comm_delete_attr_fn, comm_keyval, extra_state, "MPI_Comm_create_keyval");
}
int PMPI_Keyval_create(MPI_Copy_function* copy_fn, MPI_Delete_function* delete_fn, int* keyval, void* extra_state) {
  return keyval_create(copy_fn, delete_fn, keyval, extra_state, "MPI_Keyval_create");
}
int PMPI_Comm_free_keyval(int* comm_keyval) { return keyval_free(comm_keyval, "MPI_Comm_free_keyval"); }
int PMPI_Keyval_free(int* keyval) { return keyval_free(keyval, "MPI_Keyval_free"); }
int PMPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void* attribute_val) {
  return attr_set(comm, comm_keyval, attribute_val, "MPI_Comm_set_attr");
}
int PMPI_Attr_put(MPI_Comm comm, int keyval, void* attribute_val) {
  return attr_set(comm, keyval, attribute_val, "MPI_Attr_put");
}
int PMPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void* attribute_val, int* flag) {
  return attr_get(comm, comm_keyval, attribute_val, flag, "MPI_Comm_get_attr");
}
int PMPI_Attr_get(MPI_Comm comm, int keyval, void* attribute_val, int* flag) {
  return attr_get(comm, keyval, attribute_val, flag, "MPI_Attr_get");
}
int PMPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval) {
  return attr_delete(comm, comm_keyval, "MPI_Comm_delete_attr");
}
int PMPI_Attr_delete(MPI_Comm comm, int keyval) { return attr_delete(comm, keyval, "MPI_Attr_delete"); }

// ---- groups ----------------------------------------------------------------------------
int PMPI_Group_size(MPI_Group group, int* size) {
  Group* g = group_get(group);
  if (!g) return bad_group("MPI_Group_size", group);
  if (!size) return null_arg(MPI_COMM_NULL, "MPI_Group_size", "size");
  *size = static_cast<int>(g->members.size());
  return MPI_SUCCESS;
}

int PMPI_Group_rank(MPI_Group group, int* rank) {
  Group* g = group_get(group);
  if (!g) return bad_group("MPI_Group_rank", group);
  if (!rank) return null_arg(MPI_COMM_NULL, "MPI_Group_rank", "rank");
  const auto it = std::find(g->members.begin(), g->members.end(), world_rank());
  *rank = it == g->members.end() ? MPI_UNDEFINED : static_cast<int>(it - g->members.begin());
  return MPI_SUCCESS;
}

int PMPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2, int ranks2[]) {
  const char* fn = "MPI_Group_translate_ranks";
  Group* a = nullptr;
  Group* b = nullptr;
  if (int e = two_groups(fn, group1, group2, a, b)) return e;
  if (n < 0) return error(MPI_COMM_NULL, MPI_ERR_ARG, fn, "n is negative (%d)", n);
  if (n > 0 && (!ranks1 || !ranks2)) return null_arg(MPI_COMM_NULL, fn, "ranks1 or ranks2");
  const auto in_b = index_of(b->members);
  for (int i = 0; i < n; ++i) {
    if (ranks1[i] == MPI_PROC_NULL) {
      ranks2[i] = MPI_PROC_NULL;
      continue;
    }
    if (ranks1[i] < 0 || ranks1[i] >= static_cast<int>(a->members.size()))
      return error(MPI_COMM_NULL, MPI_ERR_RANK, fn, "ranks1[%d] = %d is not in group1 (size %zu)", i, ranks1[i],
                   a->members.size());
    const auto it = in_b.find(a->members[static_cast<std::size_t>(ranks1[i])]);
    ranks2[i] = it == in_b.end() ? MPI_UNDEFINED : it->second;
  }
  return MPI_SUCCESS;
}

int PMPI_Group_compare(MPI_Group group1, MPI_Group group2, int* result) {
  const char* fn = "MPI_Group_compare";
  Group* a = nullptr;
  Group* b = nullptr;
  if (int e = two_groups(fn, group1, group2, a, b)) return e;
  if (!result) return null_arg(MPI_COMM_NULL, fn, "result");
  *result = compare_members(a->members, b->members);
  return MPI_SUCCESS;
}

int PMPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group* newgroup) {
  return group_set_op("MPI_Group_union", group1, group2, newgroup, SetOp::Union);
}

int PMPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group* newgroup) {
  return group_set_op("MPI_Group_intersection", group1, group2, newgroup, SetOp::Intersection);
}

int PMPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group* newgroup) {
  return group_set_op("MPI_Group_difference", group1, group2, newgroup, SetOp::Difference);
}

int PMPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group* newgroup) {
  return group_subset("MPI_Group_incl", group, n, ranks, nullptr, Subset::Incl, newgroup);
}

int PMPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group* newgroup) {
  return group_subset("MPI_Group_excl", group, n, ranks, nullptr, Subset::Excl, newgroup);
}

int PMPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group* newgroup) {
  return group_subset("MPI_Group_range_incl", group, n, nullptr, ranges, Subset::RangeIncl, newgroup);
}

int PMPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group* newgroup) {
  return group_subset("MPI_Group_range_excl", group, n, nullptr, ranges, Subset::RangeExcl, newgroup);
}

int PMPI_Group_free(MPI_Group* group) {
  const char* fn = "MPI_Group_free";
  if (!group) return null_arg(MPI_COMM_NULL, fn, "group");
  if (!group_get(*group)) return bad_group(fn, *group);
  if (*group >= kFirstUserGroup) my_comms().groups[static_cast<std::size_t>(*group)].reset();
  *group = MPI_GROUP_NULL;  // MPI_GROUP_EMPTY itself stays
  return MPI_SUCCESS;
}

// ---- Cartesian and graph topologies -------------------------------------------------------
int PMPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[], int reorder,
                     MPI_Comm* comm_cart) {
  const char* fn = "MPI_Cart_create";
  (void)reorder;  // ranks keep their order (a valid choice)
  Comm* c = comm_get(comm_old);
  if (!c) return bad_comm(comm_old, fn);
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
  *status = k == TopoKind::Cart ? MPI_CART : k == TopoKind::Graph ? MPI_GRAPH : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

int PMPI_Graph_create(MPI_Comm comm_old, int nnodes, const int index[], const int edges[], int reorder,
                      MPI_Comm* comm_graph) {
  const char* fn = "MPI_Graph_create";
  (void)reorder;
  Comm* c = comm_get(comm_old);
  if (!c) return bad_comm(comm_old, fn);
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

// ---- info objects ----------------------------------------------------------------------
int PMPI_Info_create(MPI_Info* info) {
  if (!info) return null_arg(MPI_COMM_NULL, "MPI_Info_create", "info");
  CommTable& t = my_comms();
  const std::size_t h = free_slot<std::unique_ptr<Info>>(t.infos, kFirstUserInfo,
                                                         [](const std::unique_ptr<Info>& i) { return !i; });
  t.infos[h] = std::make_unique<Info>();
  *info = static_cast<MPI_Info>(h);
  return MPI_SUCCESS;
}

int PMPI_Info_set(MPI_Info info, const char* key, const char* value) {
  const char* fn = "MPI_Info_set";
  Info* i = info_get(info);
  if (!i) return bad_info(fn, info);
  if (int e = check_key(fn, key)) return e;
  if (!value) return null_arg(MPI_COMM_NULL, fn, "value");
  const std::size_t n = std::strlen(value);
  if (n == 0 || n > MPI_MAX_INFO_VAL)
    return error(MPI_COMM_NULL, MPI_ERR_INFO_VALUE, fn, "the value of \"%s\" is empty or longer than %d characters",
                 key, MPI_MAX_INFO_VAL);
  auto it = info_find(*i, key);
  if (it != i->end())
    it->second = value;
  else
    i->emplace_back(key, value);
  return MPI_SUCCESS;
}

int PMPI_Info_get(MPI_Info info, const char* key, int valuelen, char* value, int* flag) {
  const char* fn = "MPI_Info_get";
  Info* i = info_get(info);
  if (!i) return bad_info(fn, info);
  if (int e = check_key(fn, key)) return e;
  if (!flag) return null_arg(MPI_COMM_NULL, fn, "flag");
  if (valuelen < 0) return error(MPI_COMM_NULL, MPI_ERR_ARG, fn, "valuelen is negative (%d)", valuelen);
  auto it = info_find(*i, key);
  *flag = it != i->end();
  if (!*flag) return MPI_SUCCESS;
  if (!value) return null_arg(MPI_COMM_NULL, fn, "value");
  // value has room for valuelen characters and the terminating NUL.
  const std::size_t n = std::min(it->second.size(), static_cast<std::size_t>(valuelen));
  std::memcpy(value, it->second.data(), n);
  value[n] = '\0';
  return MPI_SUCCESS;
}

int PMPI_Info_delete(MPI_Info info, const char* key) {
  const char* fn = "MPI_Info_delete";
  Info* i = info_get(info);
  if (!i) return bad_info(fn, info);
  if (int e = check_key(fn, key)) return e;
  auto it = info_find(*i, key);
  if (it == i->end()) return error(MPI_COMM_NULL, MPI_ERR_INFO_NOKEY, fn, "no key \"%s\"", key);
  i->erase(it);
  return MPI_SUCCESS;
}

int PMPI_Info_free(MPI_Info* info) {
  const char* fn = "MPI_Info_free";
  if (!info) return null_arg(MPI_COMM_NULL, fn, "info");
  if (!info_get(*info)) return bad_info(fn, *info);
  if (*info == MPI_INFO_ENV) return error(MPI_COMM_NULL, MPI_ERR_INFO, fn, "MPI_INFO_ENV cannot be freed");
  my_comms().infos[static_cast<std::size_t>(*info)].reset();
  *info = MPI_INFO_NULL;
  return MPI_SUCCESS;
}

int PMPI_Info_dup(MPI_Info info, MPI_Info* newinfo) {
  const char* fn = "MPI_Info_dup";
  if (!info_get(info)) return bad_info(fn, info);
  if (!newinfo) return null_arg(MPI_COMM_NULL, fn, "newinfo");
  if (int e = PMPI_Info_create(newinfo)) return e;
  *info_get(*newinfo) = *info_get(info);
  return MPI_SUCCESS;
}

int PMPI_Info_get_nkeys(MPI_Info info, int* nkeys) {
  Info* i = info_get(info);
  if (!i) return bad_info("MPI_Info_get_nkeys", info);
  if (!nkeys) return null_arg(MPI_COMM_NULL, "MPI_Info_get_nkeys", "nkeys");
  *nkeys = static_cast<int>(i->size());
  return MPI_SUCCESS;
}

int PMPI_Info_get_nthkey(MPI_Info info, int n, char* key) {
  const char* fn = "MPI_Info_get_nthkey";
  Info* i = info_get(info);
  if (!i) return bad_info(fn, info);
  if (n < 0 || n >= static_cast<int>(i->size()))
    return error(MPI_COMM_NULL, MPI_ERR_ARG, fn, "n = %d is out of range (%zu keys)", n, i->size());
  if (!key) return null_arg(MPI_COMM_NULL, fn, "key");
  return copy_string((*i)[static_cast<std::size_t>(n)].first, key, MPI_MAX_INFO_KEY + 1, nullptr);
}

int PMPI_Info_get_valuelen(MPI_Info info, const char* key, int* valuelen, int* flag) {
  const char* fn = "MPI_Info_get_valuelen";
  Info* i = info_get(info);
  if (!i) return bad_info(fn, info);
  if (int e = check_key(fn, key)) return e;
  if (!valuelen || !flag) return null_arg(MPI_COMM_NULL, fn, "valuelen or flag");
  auto it = info_find(*i, key);
  *flag = it != i->end();
  if (*flag) *valuelen = static_cast<int>(it->second.size());
  return MPI_SUCCESS;
}


// ---- MPI-3 communicator additions --------------------------------------------------------
// Info hints are accepted and ignored (MPI allows an implementation to ignore any hint).
int PMPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm) {
  (void)info;
  return PMPI_Comm_dup(comm, newcomm);
}

// The duplicate is made at once (a collective over comm, as Comm_dup); the request is
// already complete. Correct for every program that calls Comm_idup on all members before
// waiting on anything that another member completes only after its own Comm_idup.
int PMPI_Comm_idup(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request) {
  if (!request) return null_arg(comm, "MPI_Comm_idup", "request");
  if (int e = PMPI_Comm_dup(comm, newcomm)) return e;
  *request = start_task(+[](void*) -> int { return MPI_SUCCESS; }, nullptr);
  return MPI_SUCCESS;
}

int PMPI_Comm_set_info(MPI_Comm comm, MPI_Info info) {
  (void)info;
  if (!comm_get(comm)) return bad_comm(comm, "MPI_Comm_set_info");
  return MPI_SUCCESS;
}

// No hint is kept, so the info in use is empty.
int PMPI_Comm_get_info(MPI_Comm comm, MPI_Info* info_used) {
  if (!comm_get(comm)) return bad_comm(comm, "MPI_Comm_get_info");
  if (!info_used) return null_arg(comm, "MPI_Comm_get_info", "info_used");
  return PMPI_Info_create(info_used);
}

// Handles are ints, the same in C and Fortran.
int PMPI_Comm_c2f(MPI_Comm comm) { return comm; }
MPI_Comm PMPI_Comm_f2c(int comm) { return comm; }
int PMPI_Type_c2f(MPI_Datatype datatype) { return datatype; }
MPI_Datatype PMPI_Type_f2c(int datatype) { return datatype; }
int PMPI_Group_c2f(MPI_Group group) { return group; }
MPI_Group PMPI_Group_f2c(int group) { return group; }
int PMPI_Request_c2f(MPI_Request request) { return request; }
MPI_Request PMPI_Request_f2c(int request) { return request; }
int PMPI_Op_c2f(MPI_Op op) { return op; }
MPI_Op PMPI_Op_f2c(int op) { return op; }
int PMPI_Info_c2f(MPI_Info info) { return info; }
MPI_Info PMPI_Info_f2c(int info) { return info; }
int PMPI_Errhandler_c2f(MPI_Errhandler errhandler) { return errhandler; }
MPI_Errhandler PMPI_Errhandler_f2c(int errhandler) { return errhandler; }
int PMPI_Win_c2f(MPI_Win win) { return win; }
MPI_Win PMPI_Win_f2c(int win) { return win; }
int PMPI_File_c2f(MPI_File file) { return file; }
MPI_File PMPI_File_f2c(int file) { return file; }
int PMPI_Message_c2f(MPI_Message message) { return message; }
MPI_Message PMPI_Message_f2c(int message) { return message; }

// Kept here, not in datatypes.cpp: the datatype unit test links that file without p2p.cpp.
int PMPI_Get_elements_x(const MPI_Status* status, MPI_Datatype datatype, MPI_Count* count) {
  if (!count) return null_arg(MPI_COMM_WORLD, "MPI_Get_elements_x", "count");
  int n = 0;
  if (int rc = PMPI_Get_elements(status, datatype, &n)) return rc;
  *count = n;
  return MPI_SUCCESS;
}

// Addresses are plain byte addresses (MPI_Get_address returns the pointer's value).
MPI_Aint PMPI_Aint_add(MPI_Aint base, MPI_Aint disp) { return base + disp; }
MPI_Aint PMPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2) { return addr1 - addr2; }

}  // extern "C"
#pragma GCC visibility pop
