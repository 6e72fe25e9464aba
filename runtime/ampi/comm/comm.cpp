// Communicators: size and rank, compare, dup, split, create, free, names, MPI-3 additions.
#include "comm/comms.h"
#include "checks.h"

#include <ucharm/charm.h>

#include <algorithm>
#include <cstring>

namespace ampi::cm {

}  // namespace ampi::cm

using namespace ampi;
using namespace ampi::cm;

#pragma GCC visibility push(default)
extern "C" {

// ---- communicators ---------------------------------------------------------------------
int PMPI_Comm_size(MPI_Comm comm, int* size) {
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, "MPI_Comm_size");
  if (!size) return error(comm, MPI_ERR_ARG, "MPI_Comm_size", "size is NULL");
  *size = c->inter ? c->inter->local.size() : c->size();
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
  if (a->inter || b->inter) {
    *result = inter_compare(*a, *b);
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
  if (c->inter) return inter_dup(comm, newcomm, fn);
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
  if (c->inter) return inter_split(comm, color, key, newcomm, fn);
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
  if (c->inter) return not_inter(comm, fn);
  return split(*c, split_type == MPI_UNDEFINED ? MPI_UNDEFINED : CmiMyPe(), key, newcomm, fn);
}

int PMPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  const char* fn = "MPI_Comm_create";
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  if (!newcomm) return null_arg(comm, fn, "newcomm");
  if (c->inter) return inter_create(comm, group, newcomm, fn);
  // A bad group on one member must not leave the others waiting in the agreement: every
  // member takes part, with its own verdict, and all learn of any failure.
  Group* g = group_get(group);
  int mine = g ? MPI_SUCCESS : MPI_ERR_GROUP, outsider = -1, myrank = MPI_UNDEFINED;
  std::vector<int> members;
  if (g) {
    const auto in_comm = index_of(c->members);
    const int me = c->members[static_cast<std::size_t>(c->rank)];
    for (std::size_t i = 0; i < g->members.size() && !mine; ++i) {
      if (!in_comm.count(g->members[i])) mine = MPI_ERR_GROUP, outsider = g->members[i];
      if (g->members[i] == me) myrank = static_cast<int>(i);
    }
    members = g->members;
  }
  std::uint32_t context = 0;
  int failed = MPI_SUCCESS;
  if (int e = agree_context(*c, coll_tag(*c), &context, mine, &failed))
    return error(comm, e, fn, "the context agreement failed");
  *newcomm = MPI_COMM_NULL;
  if (!g) return error(comm, MPI_ERR_GROUP, fn, "invalid group %d", group);
  if (mine)
    return error(comm, mine, fn, "the group holds world rank %d, which is not in the communicator", outsider);
  if (failed) return error(comm, failed, fn, "another member's group argument is invalid: no communicator was made");
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
  if (c->inter) return not_inter(comm, fn);
  Group* g = group_get(group);
  if (!g) return error(comm, MPI_ERR_GROUP, fn, "invalid group %d", group);
  int myrank = MPI_UNDEFINED;
  if (int e = rank_in_group(comm, *c, *g, fn, &myrank)) return e;
  *newcomm = MPI_COMM_NULL;
  if (myrank == MPI_UNDEFINED) return MPI_SUCCESS;
  // Only the group's members take part: they agree among themselves on the parent's
  // collective context, with a tag of the user's outside the range of the parent's own
  // collectives, addressing each other by parent rank (agree_context_among).
  const auto in_parent = index_of(c->members);
  std::vector<int> ranks;
  ranks.reserve(g->members.size());
  for (int w : g->members) ranks.push_back(in_parent.at(w));
  std::uint32_t context = 0;
  if (int e = agree_context_among(*c, ranks, kCollTagFree + (tag & (kCollTagFree - 1)), &context))
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
  *group = group_new(c->inter ? c->inter->local.members : c->members);
  return MPI_SUCCESS;
}

// MPI_Comm_test_inter, remote_size, remote_group: intercomm.cpp.

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

// ---- MPI-3 communicator additions --------------------------------------------------------
// Info hints are accepted and ignored (MPI allows an implementation to ignore any hint).
int PMPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm) {
  (void)info;
  return PMPI_Comm_dup(comm, newcomm);
}

// Nonblocking: the context agreement runs in a task of the rank (as a nonblocking
// collective does), so the program may communicate before it waits. The attributes are
// copied at the call, as MPI_Comm_dup would copy them then (MPI 3.1 §6.4.2): what the
// program sets or deletes on comm before the request completes is not the new one's.
// *newcomm is written when the request completes.
int PMPI_Comm_idup(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request) {
  if (Comm* ic = comm_get(comm); ic && ic->inter && newcomm && request) return inter_idup(comm, newcomm, request);
  const char* fn = "MPI_Comm_idup";
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  if (!newcomm) return null_arg(comm, fn, "newcomm");
  if (!request) return null_arg(comm, fn, "request");
  struct Idup {
    Comm parent;  // a copy: the program may free comm before the request completes
    int tag;
    MPI_Comm* out;
    Topology topo;
    Attrs attrs;          // the copies made at the call
    int copy_failed = 0;  // a copy callback's error: the new communicator is freed at once
  };
  auto* k = new Idup{*c, coll_tag(*c), newcomm, slot_of(comm)->topo, {}, 0};
  // The copy callbacks may call MPI (and fail): the task starts whatever they do, so the
  // other members are not left waiting in the agreement.
  k->copy_failed = attrs_copy_out(comm, &k->attrs, fn);
  *request = start_task(
      +[](void* arg) -> int {
        std::unique_ptr<Idup> k(static_cast<Idup*>(arg));
        std::uint32_t context = 0;
        const int e = agree_context(k->parent, k->tag, &context, 0, nullptr, true);
        --my_comms().agreements;
        if (e) {
          for (const auto& a : k->attrs) keyval_release(a.first);
          return e;
        }
        const Comm& p = k->parent;
        const MPI_Comm h = comm_add(context, p.members, p.rank, p.errhandler);
        CommSlot* s = slot_of(h);
        s->topo = std::move(k->topo);
        s->attrs = std::move(k->attrs);
        if (k->copy_failed) {
          comm_destroy(h);
          return k->copy_failed;
        }
        *k->out = h;
        return MPI_SUCCESS;
      },
      k);
  // In flight from now on, before its task runs: a creation started meanwhile checks its
  // context (agree_context), since this one has not read next_context yet.
  ++my_comms().agreements;
  request_set_comm(*request, comm);
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

}  // extern "C"
#pragma GCC visibility pop
