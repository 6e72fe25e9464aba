// Groups: of a communicator, set operations, subsets, rank translation.
#include "comm/comms.h"
#include "checks.h"

#include <algorithm>

namespace ampi::cm {

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

}  // namespace ampi::cm

using namespace ampi;
using namespace ampi::cm;

#pragma GCC visibility push(default)
extern "C" {

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

}  // extern "C"
#pragma GCC visibility pop
