// Intercommunicators (MPI-3.1 §6.6): Intercomm_create and _merge, the queries, and the
// intercommunicator forms of Comm_dup, split, create and compare (comm.cpp hands them here).
//
// Representation (internal.h): an intercommunicator is a Comm whose `members` is the remote
// group and whose `rank` is the position in the local group, so point-to-point needs nothing
// of its own: a destination names a remote rank, and the source a receiver sees is the
// sender's local rank, which is its rank in the receiver's remote group. `inter->local` is
// the local group as an intracommunicator on context + 2 (collectives within one group).
//
// What one group knows (its members, colours, keys) reaches the other through the leaders
// (local rank 0): they swap it over the intercommunicator's collective context and each
// broadcasts the other group's part within its group. Contexts are agreed by the
// communicators' agreement (comm/table.cpp) over a view of both groups as one (both_groups);
// Intercomm_create, before any such view exists, does the same through the leaders.
#include "comm/comms.h"
#include "checks.h"

#include <algorithm>
#include <memory>
#include <numeric>

namespace ampi::cm {

namespace {

int tag_after(int tag, int k) { return (tag + k) & (kCollTagFree - 1); }

// Within a group (`local`): `v` (significant at `root`) reaches every member; tags `tag` and
// the next one (the size, then the data).
int bcast_vector(std::vector<int>& v, int root, Comm& local, int tag) {
  int n = static_cast<int>(v.size());
  if (int e = coll_bcast(&n, 1, MPI_INT, root, local, tag)) return e;
  v.resize(static_cast<std::size_t>(n));
  return n ? coll_bcast(v.data(), n, MPI_INT, root, local, tag_after(tag, 1)) : MPI_SUCCESS;
}

// Point-to-point exchange of two vectors with `peer` of `over` (size first): sends `mine`,
// receives into `theirs`.
int swap_with(Comm& over, int peer, int tag, const std::vector<int>& mine, std::vector<int>* theirs) {
  int n = static_cast<int>(mine.size()), m = 0;
  MPI_Request rq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  if (int e = isend(&n, 1, MPI_INT, peer, tag, over, Ctx::Coll, &rq[0])) return e;
  if (n) {
    if (int e = isend(mine.data(), n, MPI_INT, peer, tag, over, Ctx::Coll, &rq[1])) return e;
  }
  int rc = recv(&m, 1, MPI_INT, peer, tag, over, Ctx::Coll, nullptr);
  if (!rc) {
    theirs->resize(static_cast<std::size_t>(m));
    if (m) rc = recv(theirs->data(), m, MPI_INT, peer, tag, over, Ctx::Coll, nullptr);
  }
  const int w = wait_all(2, rq, nullptr);
  return rc ? rc : w;
}

// Collective over both groups of `ic`: `mine` (the same on every member of this group) for
// the other group's. Tags tag .. tag + 2.
int swap_groups(Comm& ic, int tag, const std::vector<int>& mine, std::vector<int>* theirs) {
  Comm& local = ic.inter->local;
  if (local.rank == 0) {
    if (int e = swap_with(ic, 0, tag, mine, theirs)) return e;
  }
  return bcast_vector(*theirs, 0, local, tag_after(tag, 1));
}

// Both groups as one communicator, on the intercommunicator's collective context (tags
// from its coll_tag keep this apart from its collectives): the group whose leader has the
// lower world rank first. What agreements over both groups run on.
Comm both_groups(const Comm& ic) {
  const std::vector<int>& mine = ic.inter->local.members;
  const bool first = mine[0] < ic.members[0];
  Comm all;
  all.handle = ic.handle;
  all.context = ic.context;
  all.members = first ? mine : ic.members;
  const std::vector<int>& second = first ? ic.members : mine;
  all.members.insert(all.members.end(), second.begin(), second.end());
  all.rank = ic.rank + (first ? 0 : ic.size());
  all.errhandler = ic.errhandler;
  return all;
}

// A context free on every member of both groups, with room for the local side (+2): the
// communicators' agreement (comm/table.cpp) over both groups. `check`: MPI_Comm_idup's
// (another creation may run beside it).
int agree_inter_context(Comm& ic, int tag, std::uint32_t* out, bool check = false) {
  Comm all = both_groups(ic);
  if (int e = agree_context(all, tag, out, 0, nullptr, check)) return e;
  CommTable& t = my_comms();
  t.next_context = std::max(t.next_context, *out + 4);
  return MPI_SUCCESS;
}

// MPI_Intercomm_create's check round (as the agreements over a communicator have one):
// whether `context` is in use on any member of either group, or held by an agreement in its
// check round (an MPI_Comm_idup in flight); held here meanwhile. Within the group on
// `local` (tags tag, tag + 1, tag + 2), between the leaders on `peer` (leaders only) with
// `ptag`.
int anyone_uses(std::uint32_t context, Comm& local, int local_leader, Comm* peer, int remote_leader, int ptag,
                int tag, bool* any) {
  const bool taken = context_in_use(context);
  if (!taken) context_claim(context);
  int mine = taken ? 1 : 0, group = 0;
  int rc = coll_allreduce(&mine, &group, 1, MPI_INT, MPI_MAX, local, tag);
  std::vector<int> both{group};
  if (!rc && peer) {
    std::vector<int> other;
    rc = swap_with(*peer, remote_leader, ptag, {group}, &other);
    if (!rc) both.push_back(other.at(0));
  }
  if (!rc) rc = bcast_vector(both, local_leader, local, tag_after(tag, 1));
  if (!taken) context_unclaim(context);
  *any = !rc && std::any_of(both.begin(), both.end(), [](int x) { return x != 0; });
  return rc;
}

// Reserves n consecutive collective tags of c; returns the first.
int tags(Comm& c, int n) {
  const int first = coll_tag(c);
  for (int i = 1; i < n; ++i) coll_tag(c);
  return first;
}

}  // namespace

MPI_Comm inter_add(std::uint32_t context, std::vector<int> local, int rank, std::vector<int> remote,
                   MPI_Errhandler eh) {
  const MPI_Comm h = comm_add(context, std::move(remote), rank, eh);
  auto in = std::make_shared<Intercomm>();
  in->local.handle = h;
  in->local.context = context + 2;
  in->local.members = std::move(local);
  in->local.rank = rank;
  in->local.errhandler = eh;
  comm_get(h)->inter = std::move(in);
  return h;
}

int inter_compare(const Comm& a, const Comm& b) {
  if (!a.inter || !b.inter) return MPI_UNEQUAL;
  const int l = compare_members(a.inter->local.members, b.inter->local.members);
  const int r = compare_members(a.members, b.members);
  if (l == MPI_IDENT && r == MPI_IDENT) return MPI_CONGRUENT;
  return l != MPI_UNEQUAL && r != MPI_UNEQUAL ? MPI_SIMILAR : MPI_UNEQUAL;
}

int inter_dup(MPI_Comm comm, MPI_Comm* newcomm, const char* fn) {
  Comm* c = comm_get(comm);
  std::uint32_t context = 0;
  if (int e = agree_inter_context(*c, tags(*c, 4), &context)) return error(comm, e, fn, "the context agreement failed");
  c = comm_get(comm);
  const MPI_Comm h = inter_add(context, c->inter->local.members, c->rank, c->members, c->errhandler);
  if (int e = attrs_copy(comm, h, fn)) {
    comm_destroy(h);
    return e;
  }
  *newcomm = h;
  return MPI_SUCCESS;
}

// Nonblocking: the agreement runs in a task of the rank, so the program may communicate
// (on the intercommunicator too) before it waits. *newcomm is written when the request
// completes; attributes are copied then (if comm still exists).
int inter_idup(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request) {
  Comm* c = comm_get(comm);
  struct Idup {
    Comm ic;  // a copy: the program may free comm before the request completes
    int tag;
    MPI_Comm* out;
    Attrs attrs;          // copied at the call, as MPI_Comm_idup (comm.cpp) does
    int copy_failed = 0;
  };
  const int tag = tags(*c, 4);
  auto* k = new Idup{*c, tag, newcomm, {}, 0};
  k->copy_failed = attrs_copy_out(comm, &k->attrs, "MPI_Comm_idup");
  *request = start_task(
      +[](void* arg) -> int {
        std::unique_ptr<Idup> k(static_cast<Idup*>(arg));
        std::uint32_t context = 0;
        if (int e = agree_inter_context(k->ic, k->tag, &context, true)) {
          for (const auto& a : k->attrs) keyval_release(a.first);
          return e;
        }
        const Comm& p = k->ic;
        const MPI_Comm h = inter_add(context, p.inter->local.members, p.rank, p.members, p.errhandler);
        slot_of(h)->attrs = std::move(k->attrs);
        if (k->copy_failed) {
          comm_destroy(h);
          return k->copy_failed;
        }
        *k->out = h;
        return MPI_SUCCESS;
      },
      k);
  return MPI_SUCCESS;
}

// Split: the local group of the result is this group's members of the caller's color, the
// remote group the other group's members of that color (each ordered by key, then rank);
// MPI_COMM_NULL where either is empty.
int inter_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm, const char* fn) {
  Comm* c = comm_get(comm);
  Comm& local = c->inter->local;
  const int t = tags(*c, 8);
  const int n = local.size();
  int mine[2] = {color, key};
  std::vector<int> all(2 * static_cast<std::size_t>(n));
  if (int e = coll_allgather(mine, 2, MPI_INT, all.data(), local, t))
    return error(comm, e, fn, "the exchange of colors and keys failed");
  std::vector<int> remote;
  if (int e = swap_groups(*c, tag_after(t, 1), all, &remote))
    return error(comm, e, fn, "the exchange of colors and keys failed");
  // One context for every colour (their members are disjoint), agreed over both groups.
  std::uint32_t context = 0;
  if (int e = agree_inter_context(*comm_get(comm), tag_after(t, 4), &context))
    return error(comm, e, fn, "the context agreement failed");
  *newcomm = MPI_COMM_NULL;
  if (color == MPI_UNDEFINED) return MPI_SUCCESS;
  // The world ranks of `group`'s members of my color, by (key, rank); my position in them.
  const auto pick = [color](const std::vector<int>& kv, const std::vector<int>& group, int me, int* pos) {
    std::vector<int> ranks;
    for (std::size_t i = 0; 2 * i < kv.size(); ++i)
      if (kv[2 * i] == color) ranks.push_back(static_cast<int>(i));
    std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) {
      return kv[2 * static_cast<std::size_t>(a) + 1] < kv[2 * static_cast<std::size_t>(b) + 1];
    });
    std::vector<int> out;
    for (int r : ranks) {
      if (r == me) *pos = static_cast<int>(out.size());
      out.push_back(group[static_cast<std::size_t>(r)]);
    }
    return out;
  };
  int pos = 0, unused = 0;
  c = comm_get(comm);
  std::vector<int> l = pick(all, c->inter->local.members, c->rank, &pos);
  std::vector<int> r = pick(remote, c->members, -1, &unused);
  if (r.empty()) return MPI_SUCCESS;
  *newcomm = inter_add(context, std::move(l), pos, std::move(r), c->errhandler);
  return MPI_SUCCESS;
}

// Create: `group` is a subset of the local group; the result joins it with the group the
// other side passed. MPI_COMM_NULL outside the group or where either group is empty.
int inter_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm, const char* fn) {
  Comm* c = comm_get(comm);
  Group* g = group_get(group);
  if (!g) return error(comm, MPI_ERR_GROUP, fn, "invalid group %d", group);
  const auto in_local = index_of(c->inter->local.members);
  const int me = c->inter->local.members[static_cast<std::size_t>(c->rank)];
  int myrank = MPI_UNDEFINED;
  for (std::size_t i = 0; i < g->members.size(); ++i) {
    if (!in_local.count(g->members[i]))
      return error(comm, MPI_ERR_GROUP, fn, "the group holds world rank %d, which is not in the local group",
                   g->members[i]);
    if (g->members[i] == me) myrank = static_cast<int>(i);
  }
  std::vector<int> members = g->members;
  std::uint32_t context = 0;
  const int t = tags(*c, 7);
  if (int e = agree_inter_context(*c, t, &context)) return error(comm, e, fn, "the context agreement failed");
  std::vector<int> remote;
  c = comm_get(comm);
  if (int e = swap_groups(*c, tag_after(t, 4), members, &remote))
    return error(comm, e, fn, "the exchange of groups failed");
  *newcomm = MPI_COMM_NULL;
  if (myrank == MPI_UNDEFINED || remote.empty()) return MPI_SUCCESS;
  *newcomm = inter_add(context, std::move(members), myrank, std::move(remote), c->errhandler);
  return MPI_SUCCESS;
}

int not_inter(MPI_Comm comm, const char* fn) {
  return error(comm, MPI_ERR_COMM, fn, "communicator %d is an intercommunicator (this call needs an intracommunicator)",
               comm);
}

}  // namespace ampi::cm

using namespace ampi;
using namespace ampi::cm;

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Comm_test_inter(MPI_Comm comm, int* flag) {
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, "MPI_Comm_test_inter");
  if (!flag) return null_arg(comm, "MPI_Comm_test_inter", "flag");
  *flag = c->inter != nullptr;
  return MPI_SUCCESS;
}

int PMPI_Comm_remote_size(MPI_Comm comm, int* size) {
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, "MPI_Comm_remote_size");
  if (!size) return null_arg(comm, "MPI_Comm_remote_size", "size");
  if (!c->inter)
    return error(comm, MPI_ERR_COMM, "MPI_Comm_remote_size", "communicator %d is not an intercommunicator", comm);
  *size = c->size();
  return MPI_SUCCESS;
}

int PMPI_Comm_remote_group(MPI_Comm comm, MPI_Group* group) {
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, "MPI_Comm_remote_group");
  if (!group) return null_arg(comm, "MPI_Comm_remote_group", "group");
  if (!c->inter)
    return error(comm, MPI_ERR_COMM, "MPI_Comm_remote_group", "communicator %d is not an intercommunicator", comm);
  *group = group_new(c->members);
  return MPI_SUCCESS;
}

// The leaders swap, over peer_comm (significant at the leaders only), their group's members
// and the highest context any member uses; each leader then broadcasts the other group's
// within its own. The leaders' messages use peer_comm's collective context with a tag made
// from the user's, in the range no collective of peer_comm uses. A check round then makes
// sure no member took the context meanwhile (an MPI_Comm_idup in flight), else tries above.
int PMPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm, int remote_leader, int tag,
                          MPI_Comm* newintercomm) {
  const char* fn = "MPI_Intercomm_create";
  Comm* c = comm_get(local_comm);
  if (!c) return bad_comm(local_comm, fn);
  if (c->inter) return not_inter(local_comm, fn);
  if (!newintercomm) return null_arg(local_comm, fn, "newintercomm");
  if (local_leader < 0 || local_leader >= c->size())
    return error(local_comm, MPI_ERR_RANK, fn, "local_leader %d is out of range [0, %d)", local_leader, c->size());
  if (tag < 0 || tag > UCHARM_MPI_TAG_UB) return error(local_comm, MPI_ERR_TAG, fn, "invalid tag %d", tag);
  const bool leader = c->rank == local_leader;
  Comm* peer = nullptr;
  if (leader) {
    if (!(peer = comm_get(peer_comm))) return bad_comm(peer_comm, fn);
    if (peer->inter) return not_inter(peer_comm, fn);
    if (remote_leader < 0 || remote_leader >= peer->size())
      return error(local_comm, MPI_ERR_RANK, fn, "remote_leader %d is out of range [0, %d) of peer_comm",
                   remote_leader, peer->size());
    if (remote_leader == peer->rank)
      return error(local_comm, MPI_ERR_RANK, fn, "remote_leader %d is the local leader itself", remote_leader);
  }
  const int t = tags(*c, 6);
  const int ptag = kCollTagFree | (tag & (kCollTagFree - 1));
  int mine = static_cast<int>(my_comms().next_context), lmax = 0;
  if (int e = coll_allreduce(&mine, &lmax, 1, MPI_INT, MPI_MAX, *c, t))
    return error(local_comm, e, fn, "the context agreement failed");
  // remote: [the other group's highest context, its members...]
  std::vector<int> remote;
  if (leader) {
    c = comm_get(local_comm);
    std::vector<int> msg{lmax};
    msg.insert(msg.end(), c->members.begin(), c->members.end());
    if (int e = swap_with(*comm_get(peer_comm), remote_leader, ptag, msg, &remote))
      return error(local_comm, e, fn, "the exchange between the leaders failed");
  }
  c = comm_get(local_comm);
  if (int e = bcast_vector(remote, local_leader, *c, tag_after(t, 1)))
    return error(local_comm, e, fn, "the broadcast of the remote group failed");
  if (remote.size() < 2) return error(local_comm, MPI_ERR_INTERN, fn, "the remote group is empty");
  auto context = static_cast<std::uint32_t>(std::max(lmax, remote[0]));
  for (bool any = true; any;) {
    if (int e = anyone_uses(context, *comm_get(local_comm), local_leader, leader ? comm_get(peer_comm) : nullptr,
                            remote_leader, ptag, tag_after(t, 3), &any))
      return error(local_comm, e, fn, "the context check failed");
    if (any) context += 4;
  }
  CommTable& table = my_comms();
  table.next_context = std::max(table.next_context, context + 4);
  c = comm_get(local_comm);
  remote.erase(remote.begin());
  const auto in_local = index_of(c->members);
  for (int w : remote)
    if (in_local.count(w))
      return error(local_comm, MPI_ERR_COMM, fn, "world rank %d is in both groups (they must be disjoint)", w);
  *newintercomm = inter_add(context, c->members, c->rank, std::move(remote), c->errhandler);
  return MPI_SUCCESS;
}

// The union of both groups: the group that passed high = false first; where both passed
// the same, the group whose leader has the lower world rank.
int PMPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm* newintracomm) {
  const char* fn = "MPI_Intercomm_merge";
  Comm* c = comm_get(intercomm);
  if (!c) return bad_comm(intercomm, fn);
  if (!c->inter)
    return error(intercomm, MPI_ERR_COMM, fn, "communicator %d is not an intercommunicator", intercomm);
  if (!newintracomm) return null_arg(intercomm, fn, "newintracomm");
  const int t = tags(*c, 8);
  std::uint32_t context = 0;
  if (int e = agree_inter_context(*c, t, &context)) return error(intercomm, e, fn, "the context agreement failed");
  c = comm_get(intercomm);
  // The leader's `high` decides for its group (MPI requires the same value on all members).
  int lhigh = high ? 1 : 0;
  if (int e = coll_bcast(&lhigh, 1, MPI_INT, 0, c->inter->local, tag_after(t, 4)))
    return error(intercomm, e, fn, "the exchange of high failed");
  std::vector<int> r;
  if (int e = swap_groups(*c, tag_after(t, 5), {lhigh}, &r)) return error(intercomm, e, fn, "the exchange of high failed");
  c = comm_get(intercomm);
  const std::vector<int>& mine = c->inter->local.members;
  const bool first = lhigh != r.at(0) ? !lhigh : mine[0] < c->members[0];
  std::vector<int> members = first ? mine : c->members;
  const std::vector<int>& second = first ? c->members : mine;
  members.insert(members.end(), second.begin(), second.end());
  const int rank = c->rank + (first ? 0 : c->size());
  *newintracomm = comm_add(context, std::move(members), rank, c->errhandler);
  return MPI_SUCCESS;
}

// No process is started by MPI_Comm_spawn (dynamic processes are not supported), so none
// has a parent: the standard's answer for such a process.
int PMPI_Comm_get_parent(MPI_Comm* parent) {
  if (int e = check_ptr(MPI_COMM_WORLD, "MPI_Comm_get_parent", "parent", parent)) return e;
  *parent = MPI_COMM_NULL;
  return MPI_SUCCESS;
}

}  // extern "C"
#pragma GCC visibility pop
