// The handle tables of a rank: creating and freeing communicators (contexts), groups,
// keyvals, error handlers and info slots.
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
#include "comm/comms.h"
#include "checks.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace ampi {
using namespace cm;

void CommTableDeleter::operator()(CommTable* t) const { delete t; }

CommTablePtr comm_table_new(int world_rank, int world_size) {
  CommTablePtr t(new CommTable);
  HandleSpace::process().init(world_size);
  t->types = type_table_new(world_rank);
  t->ops = op_table_new(world_rank);
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
  t->attr_values[MPI_WTIME_IS_GLOBAL] = wtime_is_global() ? 1 : 0;
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

namespace cm {

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
// Position of each world rank in `members`.
std::unordered_map<int, int> index_of(const std::vector<int>& members) {
  std::unordered_map<int, int> m;
  m.reserve(members.size());
  for (std::size_t i = 0; i < members.size(); ++i) m.emplace(members[i], static_cast<int>(i));
  return m;
}

namespace {
// The element-wise maximum of `n` values over the participants of an agreement, in place.
struct Exchange {
  virtual int max(unsigned long long* v, int n) = 0;
};
// Over a communicator: an Allreduce on its collective context.
struct OverComm final : Exchange {
  Comm& over;
  int tag;
  OverComm(Comm& o, int t) : over(o), tag(t) {}
  int max(unsigned long long* v, int n) override {
    unsigned long long in[4];
    std::copy(v, v + n, in);
    return coll_allreduce(in, v, n, MPI_UNSIGNED_LONG_LONG, MPI_MAX, over, tag);
  }
};
// Over some members of `parent` only (MPI_Comm_create_group), named by their parent ranks:
// the first gathers and answers. The messages' sources are parent ranks, so two calls in a
// row over different groups with the same tag never take each other's messages (each pair
// of ranks exchanges in call order).
struct OverGroup final : Exchange {
  Comm& parent;
  const std::vector<int>& ranks;  // parent ranks; ranks[0] leads
  int tag;
  OverGroup(Comm& p, const std::vector<int>& r, int t) : parent(p), ranks(r), tag(t) {}
  int max(unsigned long long* v, int n) override {
    if (ranks[0] != parent.rank) {
      if (int e = send(v, n, MPI_UNSIGNED_LONG_LONG, ranks[0], tag, parent, Ctx::Coll)) return e;
      return recv(v, n, MPI_UNSIGNED_LONG_LONG, ranks[0], tag, parent, Ctx::Coll, nullptr);
    }
    for (std::size_t i = 1; i < ranks.size(); ++i) {
      unsigned long long other[4];
      if (int e = recv(other, n, MPI_UNSIGNED_LONG_LONG, ranks[i], tag, parent, Ctx::Coll, nullptr)) return e;
      for (int j = 0; j < n; ++j) v[j] = std::max(v[j], other[j]);
    }
    for (std::size_t i = 1; i < ranks.size(); ++i)
      if (int e = send(v, n, MPI_UNSIGNED_LONG_LONG, ranks[i], tag, parent, Ctx::Coll)) return e;
    return MPI_SUCCESS;
  }
};

// A communicator of this rank uses `c` (an intercommunicator takes 4 contexts from its own).
bool context_taken(const CommTable& t, std::uint32_t c) {
  auto near = [c](std::uint32_t k) { return k <= c + 3 && c <= k + 3; };
  for (const CommSlot& s : t.comms)
    if (s.comm && near(s.comm->context)) return true;
  return std::any_of(t.claimed.begin(), t.claimed.end(), near);
}

// The agreement: the largest next_context of the participants (and of `floor`), and
// whether any failed. A rank may run two at once, when an MPI_Comm_idup is in flight
// beside another creation; both could then pick the same context. So while one is in
// flight on any participant (or for an idup, always), a second round checks that the
// context is free on every participant (each claims it meanwhile) and else tries above.
int agree(Exchange& x, bool always_check, std::uint32_t* out, int my_error, int* failed) {
  CommTable& t = my_comms();
  const bool check = always_check || t.agreements > 0;
  ++t.agreements;
  std::uint32_t floor = 0;
  int rc = MPI_SUCCESS;
  for (;;) {
    unsigned long long v[3] = {std::max<unsigned long long>(floor, t.next_context),
                               static_cast<unsigned long long>(my_error > 0 ? my_error : 0), check ? 1u : 0u};
    if ((rc = x.max(v, 3))) break;
    if (failed) *failed = static_cast<int>(v[1]);
    if (v[1]) break;
    const auto c = static_cast<std::uint32_t>(v[0]);
    if (v[2]) {
      const bool taken = context_taken(t, c);
      if (!taken) t.claimed.push_back(c);
      unsigned long long bad = taken ? 1 : 0;
      rc = x.max(&bad, 1);
      if (!taken) t.claimed.erase(std::find(t.claimed.begin(), t.claimed.end(), c));
      if (rc) break;
      if (bad) {
        floor = c + 4;
        continue;
      }
    }
    *out = c;
    t.next_context = std::max(t.next_context, c + 4);
    break;
  }
  --t.agreements;
  return rc;
}
}  // namespace

// Collective over `over`: a context unused by every participant (on `tag` of over's
// collective context). `my_error`: this participant cannot go on (an MPI code, e.g. its
// group argument is bad); every participant then learns of it (*failed: the largest code)
// and none makes a communicator. `always_check`: see agree (MPI_Comm_idup). Returns an MPI
// code of the exchange itself.
int agree_context(Comm& over, int tag, std::uint32_t* out, int my_error, int* failed, bool always_check) {
  OverComm x(over, tag);
  return agree(x, always_check, out, my_error, failed);
}

// For an agreement made elsewhere (MPI_Intercomm_create, comm/intercomm.cpp): whether this
// rank uses context c (or an agreement in its check round holds it); claim/unclaim hold it.
bool context_in_use(std::uint32_t c) { return context_taken(my_comms(), c); }
void context_claim(std::uint32_t c) { my_comms().claimed.push_back(c); }
void context_unclaim(std::uint32_t c) {
  auto& v = my_comms().claimed;
  v.erase(std::find(v.begin(), v.end(), c));
}

// The same among some members of `parent` (their parent ranks; MPI_Comm_create_group).
int agree_context_among(Comm& parent, const std::vector<int>& ranks, int tag, std::uint32_t* out) {
  OverGroup x(parent, ranks, tag);
  return agree(x, false, out, 0, nullptr);
}

// A new communicator of the calling rank (a member of `members`, at `rank`).
// A freed handle is reused only after kCommReuseAfter others were freed since, least recently
// freed first: requests and messages of the program may still name a freed communicator for
// a while (a stale handle then names nothing rather than a new communicator).
MPI_Comm comm_add(std::uint32_t context, std::vector<int> members, int rank, MPI_Errhandler eh) {
  constexpr std::size_t kCommReuseAfter = 64;
  CommTable& t = my_comms();
  std::size_t h;
  if (t.freed_comms.size() > kCommReuseAfter) {
    h = t.freed_comms.front();
    t.freed_comms.pop_front();
  } else {
    h = t.comms.size();
    t.comms.emplace_back();
  }
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
      const int e = user_call([&] { return kv.del(handle, k, v, kv.extra); });
      if (e && !rc) rc = e;
    }
    keyval_release(k);
    s = slot_of(handle);  // a callback may have created communicators (the table moved)
  }
  errh_unref(s->comm->errhandler);
  *s = CommSlot{};
  my_comms().freed_comms.push_back(static_cast<std::size_t>(handle));
  return rc;
}

// Comm_split's core, collective over `parent`: members with the same color, ordered by
// (key, rank in parent). MPI_UNDEFINED: no new communicator.
int split(Comm& parent, int color, int key, MPI_Comm* out, const char* fn) {
  CommTable& t = my_comms();
  const int n = parent.size();
  // The 4th value: an agreement (an idup's) is in flight here, so the context must be
  // checked on every member as agree_context does.
  int mine[4] = {color, key, static_cast<int>(t.next_context), t.agreements > 0 ? 1 : 0};
  std::vector<int> all(4 * static_cast<std::size_t>(n));
  const int tag = coll_tag(parent);
  if (int e = coll_allgather(mine, 4, MPI_INT, all.data(), parent, tag))
    return error(parent.handle, e, fn, "the exchange of colors and keys failed");
  std::uint32_t context = 0;
  bool check = false;
  for (int i = 0; i < n; ++i) {
    context = std::max(context, static_cast<std::uint32_t>(all[4 * static_cast<std::size_t>(i) + 2]));
    check = check || all[4 * static_cast<std::size_t>(i) + 3] != 0;
  }
  if (!check) {
    t.next_context = context + 2;
  } else if (int e = agree_context(parent, tag, &context, 0, nullptr, true)) {
    return error(parent.handle, e, fn, "the context agreement failed");
  }
  *out = MPI_COMM_NULL;
  if (color == MPI_UNDEFINED) return MPI_SUCCESS;
  std::vector<int> ranks;  // parent ranks of my color
  for (int i = 0; i < n; ++i)
    if (all[4 * static_cast<std::size_t>(i)] == color) ranks.push_back(i);
  std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) {
    return all[4 * static_cast<std::size_t>(a) + 1] < all[4 * static_cast<std::size_t>(b) + 1];
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

}  // namespace cm
}  // namespace ampi
