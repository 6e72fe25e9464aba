// A rank's communicators, groups, attribute keyvals, error handlers and info objects, its
// derived datatypes and user ops (the CommTable of internal.h; pup.cpp packs it for a move)
// and what the sources of comm/ share. Private to comm/.
#pragma once

#include "handles.h"
#include "heap.h"
#include "internal.h"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ampi {
namespace cm {

enum class TopoKind { None, Cart, Graph, DistGraph };
struct Topology {
  TopoKind kind = TopoKind::None;
  std::vector<int> dims, periods;  // Cart
  std::vector<int> index, edges;   // Graph
  // DistGraph (distgraph.cpp): this rank's in- and out-neighbours and their weights.
  std::vector<int> sources, source_weights, destinations, dest_weights;
  bool weighted = false;
};

// A communicator's attributes, (keyval, value) in the order they were first set: MPI_Finalize
// deletes MPI_COMM_SELF's in reverse set order (MPI 3.1 §8.7.1). Few per communicator: a vector.
using Attrs = std::vector<std::pair<int, void*>>;
inline Attrs::iterator attr_find(Attrs& a, int keyval) {
  return std::find_if(a.begin(), a.end(), [keyval](const auto& p) { return p.first == keyval; });
}

struct CommSlot {
  std::unique_ptr<Comm> comm;
  std::string name;
  Attrs attrs;
  Topology topo;
};

struct Group {
  std::vector<int> members;  // world ranks, by rank in the group
};

// What a keyval's attributes hang on (MPI keeps communicator, datatype and window keyvals
// apart). The callbacks have the same C type (MPI_Comm, MPI_Datatype and MPI_Win are int);
// window attributes live on the window (rma/window.cpp).
enum class KeyKind : unsigned char { Comm, Type, Win };

struct Keyval {
  MPI_Comm_copy_attr_function* copy = nullptr;
  MPI_Comm_delete_attr_function* del = nullptr;
  void* extra = nullptr;
  int refs = 0;  // the handle (until freed) + attributes that use it; 0: the slot is free
  bool freed = false;
  KeyKind kind = KeyKind::Comm;
};

struct Errh {
  MPI_Comm_errhandler_function* fn = nullptr;
  int refs = 0;  // handles the user holds + communicators using it; 0: the slot is free
};

using Info = std::vector<std::pair<std::string, std::string>>;  // in insertion order

// Predefined attribute keyvals (mpi.h): MPI_TAG_UB .. MPI_LASTUSEDCODE, then AMPI_MY_WTH .. AMPI_MY_HOME_WTH.
constexpr int kFirstUserKeyval = UCHARM_MPI_LAST_PREDEFINED_KEYVAL + 1;
constexpr int kFirstUserComm = 3;       // after NULL, WORLD, SELF
constexpr int kFirstUserGroup = 2;      // after NULL, EMPTY
constexpr int kFirstUserErrh = 3;       // after NULL, ARE_FATAL, RETURN
constexpr int kFirstUserInfo = 2;       // after NULL, ENV

}  // namespace cm

struct CommTable {
  using CommSlot = cm::CommSlot;
  using Group = cm::Group;
  using Keyval = cm::Keyval;
  using Errh = cm::Errh;
  using Info = cm::Info;
  std::vector<CommSlot> comms;  // indexed by handle; comm null: free or never used
  std::vector<std::unique_ptr<Group>> groups;
  std::vector<Keyval> keyvals;
  // This rank's datatype attributes, by handle; MPI_Type_free deletes a type's entry.
  std::map<MPI_Datatype, cm::Attrs> type_attrs;
  // This rank's derived datatypes and user ops (handles.h: found by handle from anywhere).
  TypeTablePtr types;
  OpTablePtr ops;
  std::vector<Errh> errhs;
  std::vector<std::unique_ptr<Info>> infos;
  std::uint32_t next_context = 4;  // 0: MPI_COMM_WORLD, 2: MPI_COMM_SELF
  int agreements = 0;                 // context agreements in flight (an idup's beside another)
  std::vector<std::uint32_t> claimed;  // contexts an agreement in its check round holds
  std::deque<std::size_t> freed_comms;  // freed communicator handles, least recently freed first
  // Error codes the program added (errhan/user.cpp), from MPI_ERR_LASTCODE + 1 on: each
  // code's class and string.
  std::vector<std::pair<int, std::string>> user_errors;
  // Values of the predefined attributes. MPI_Attr_get hands out pointers to a copy in the
  // rank's own heap (its slice: a pointer the program keeps stays valid after a move),
  // made at the first such call (0: not yet).
  int attr_values[cm::kFirstUserKeyval] = {};
  std::uintptr_t attr_copy = 0;
};

namespace cm {

// Calls the program back (an attribute copy or delete callback): what it allocates is the
// rank's (heap.h), so it moves with the rank.
template <class F>
int user_call(F call) {
  heap::UserScope user(nullptr);
  return call();
}

template <class T>
std::size_t free_slot(std::vector<T>& v, std::size_t first, bool (*is_free)(const T&)) {
  for (std::size_t i = first; i < v.size(); ++i)
    if (is_free(v[i])) return i;
  v.emplace_back();
  return v.size() - 1;
}

// ---- table.cpp ----
CommSlot* slot_of(MPI_Comm c);
Group* group_get(MPI_Group g);
MPI_Group group_new(std::vector<int> members);
Info* info_get(MPI_Info i);
Keyval* keyval_get(int k);
void keyval_release(int k);
bool errh_valid(MPI_Errhandler h);
void errh_ref(MPI_Errhandler h);
void errh_unref(MPI_Errhandler h);
std::unordered_map<int, int> index_of(const std::vector<int>& members);
int agree_context(Comm& over, int tag, std::uint32_t* out, int my_error = 0, int* failed = nullptr,
                  bool always_check = false);
int agree_context_among(Comm& parent, const std::vector<int>& ranks, int tag, std::uint32_t* out);
bool context_in_use(std::uint32_t c);
void context_claim(std::uint32_t c);
void context_unclaim(std::uint32_t c);
MPI_Comm comm_add(std::uint32_t context, std::vector<int> members, int rank, MPI_Errhandler eh);
int comm_destroy(MPI_Comm handle);
int split(Comm& parent, int color, int key, MPI_Comm* out, const char* fn);
int comm_prefix(Comm& parent, int nnodes, MPI_Comm* out, const char* fn);
int copy_string(const std::string& s, char* out, int max, int* len);

// ---- attributes.cpp ----
int attr_set(MPI_Comm comm, int keyval, void* value, const char* fn);
bool keyval_live(int keyval);
int attr_get(MPI_Comm comm, int keyval, void* value, int* flag, const char* fn);
int attr_delete(MPI_Comm comm, int keyval, const char* fn);
int keyval_create(MPI_Comm_copy_attr_function* copy, MPI_Comm_delete_attr_function* del, int* keyval, void* extra,
                  const char* fn, KeyKind kind = KeyKind::Comm);
int keyval_free(int* keyval, const char* fn, KeyKind kind = KeyKind::Comm);
int attrs_copy(MPI_Comm from, MPI_Comm to, const char* fn);
// The copies of from's attributes (as attrs_copy makes them) for a communicator made later.
int attrs_copy_out(MPI_Comm from, Attrs* out, const char* fn);
int attrs_delete_all(MPI_Comm comm);  // MPI_Finalize: every attribute of MPI_COMM_SELF, last set first
int errhandler_set(MPI_Comm comm, MPI_Errhandler h, const char* fn);
int errhandler_get(MPI_Comm comm, MPI_Errhandler* h, const char* fn);
int errhandler_create(MPI_Comm_errhandler_function* f, MPI_Errhandler* h, const char* fn);

// ---- topology.cpp ----
Topology* topo_of(MPI_Comm comm);
int topo_check(MPI_Comm comm, const char* fn, TopoKind kind, Comm*& c, Topology*& t);
int cart_of(MPI_Comm comm, const char* fn, Comm*& c, Topology*& t);
int graph_of(MPI_Comm comm, const char* fn, Comm*& c, Topology*& t);
long long wrap_coord(long long x, int d, bool periodic);
void coords_of(const Topology& t, int rank, int* coords, int maxdims);
int check_dims(MPI_Comm comm, const char* fn, int ndims, const int* dims, long long* nnodes);
int check_graph(MPI_Comm comm, const char* fn, int nnodes, const int* index, const int* edges, int size);

// ---- intercomm.cpp ----
// A new intercommunicator of the calling rank (at `rank` in `local`; `remote`: the other group).
MPI_Comm inter_add(std::uint32_t context, std::vector<int> local, int rank, std::vector<int> remote,
                   MPI_Errhandler eh);
// MPI_Comm_compare, MPI_Comm_dup, split and create when `comm` is an intercommunicator.
int inter_compare(const Comm& a, const Comm& b);
int inter_dup(MPI_Comm comm, MPI_Comm* newcomm, const char* fn);
// MPI_Comm_idup of an intercommunicator (arguments checked): the agreement runs in a task.
int inter_idup(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request);
int inter_split(MPI_Comm comm, int color, int key, MPI_Comm* newcomm, const char* fn);
int inter_create(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm, const char* fn);
// Reports comm as an intercommunicator where the call needs an intracommunicator.
int not_inter(MPI_Comm comm, const char* fn);

// ---- info.cpp ----
int check_key(const char* fn, const char* key);
Info::iterator info_find(Info& info, const char* key);
int bad_info(const char* fn, MPI_Info i);

// ---- group.cpp ----
int bad_group(const char* fn, MPI_Group g);
int expand_ranges(const char* fn, int size, int n, int ranges[][3], std::vector<int>* out);
int check_rank_list(const char* fn, int size, int n, const int* ranks);
int two_groups(const char* fn, MPI_Group group1, MPI_Group group2, Group*& a, Group*& b);
int rank_in_group(MPI_Comm comm, const Comm& c, const Group& g, const char* fn, int* myrank);
int compare_members(const std::vector<int>& a, const std::vector<int>& b);

}  // namespace cm
}  // namespace ampi
