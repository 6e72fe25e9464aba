// Core state shared by the core's source files (not installed). One Core per PE
// (non-SMP); everything here has hidden visibility.
#pragma once

#include <ucharm/charm.h>

#include "lb_strategy.h"
#include "trace.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace ck::detail {

// ---- registry (registry.cpp) ----------------------------------------------------------------
struct Registered {
  std::string name;
  std::uint32_t* slot;
};
struct CtorInfo {
  Constructor make;
  const std::type_info* cls;
  bool migration = false;  // the migration constructor (C(CkMigrateMessage*) or C())
  bool rebuildable = false;  // migration: the class has one of those constructors
  RestartSource restart_source = nullptr;  // migration, groups: C::ckRestartSource
};
struct Registry {
  std::vector<std::pair<Registered, EntryInfo>> entries_in;
  std::vector<std::pair<Registered, CtorInfo>> ctors_in;
  std::vector<std::pair<Registered, int (*)(const Index&, const Index&, int)>> maps_in;
  std::vector<std::pair<Registered, UserCombine>> reducers_in;
  std::vector<std::pair<Registered, void (*)(void*)>> handlers_in;
  std::vector<EntryInfo> entries;
  std::vector<CtorInfo> ctors;
  std::vector<int (*)(const Index&, const Index&, int)> maps;
  std::vector<UserCombine> reducers;
  std::vector<void (*)(void*)> handlers;  // Converse handlers of layers above (ck::ConverseHandler)
  std::vector<ReadonlyBase*> readonlies;  // static-initialisation order: the same binary everywhere
};
Registry& registry();
// Gives every registered thing its index (sorted by name: the same on every PE).
void assign_indices();
// "&Main::done" out of a registration name (a __PRETTY_FUNCTION__), for messages.
std::string entry_name(const char* registered);
std::string demangle(const char* name);

// ---- load balancing (lb.cpp) ------------------------------------------------------------------
struct ObjLoad {  // one element in a PE's report
  std::uint64_t collection;
  Index idx;
  double load;
  bool migratable;
  void pup(PUP::er& p) { p | collection; p | idx; p | load; p | migratable; }
};
struct CommEdge {  // bytes one element sent another since the last step
  std::uint64_t from_collection;
  Index from;
  std::uint64_t to_collection;
  Index to;
  double bytes;
  void pup(PUP::er& p) { p | from_collection; p | from; p | to_collection; p | to; p | bytes; }
};
struct Move {
  std::uint64_t collection;
  Index idx;
  std::int32_t from, to;
  void pup(PUP::er& p) { p | collection; p | idx; p | from; p | to; }
};

struct LbState {
  // options
  std::string balancer = "GreedyRefineLB";
  lb::Strategy strategy = nullptr;
  double period = 0;  // +LBPeriod: at least this many seconds between balancing steps
  bool off = false;   // +LBOff: AtSync resumes at once
  bool debug = false;  // +LBDebug: PE 0 prints what moved
  std::uint32_t every = 1;  // +LBEvery K: balance at every K-th AtSync
  // this PE
  bool measuring_idle = false;  // from the first AtSync on
  double idle = 0, idle_since = -1, since = 0;  // idle seconds since `since` (the last step)
  std::uint32_t step = 0;  // the step being gathered
  bool reported = false, started = false, decided = false;
  int expected_arrivals = 0, arrivals = 0;
  // PE 0
  int reports = 0, done = 0;
  std::vector<std::pair<int, std::vector<ObjLoad>>> gathered;
  std::vector<double> background;  // per PE, from the reports
  std::vector<CommEdge> edges;
  double last_time = -1e300;
};


// ---- per-PE state -------------------------------------------------------------------------------
constexpr int kTreeBranching = 4;

struct IndexHash {
  std::size_t operator()(const Index& i) const {
    std::uint64_t h = static_cast<std::uint32_t>(i.x[0]);
    for (int d = 1; d < kMaxDims; ++d) h = h * 0x9E3779B97F4A7C15ull ^ static_cast<std::uint32_t>(i.x[d]);
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

// One end of an object joining two elements (a CkChannel, CkWindow or CkDeviceWindow end),
// as its PE names it: (this element, the peer element, sub-id).
struct EndKey {
  std::uint64_t self_coll, peer_coll;
  Index self_idx, peer_idx;
  std::uint32_t sub;
  bool operator==(const EndKey& o) const {
    return self_coll == o.self_coll && peer_coll == o.peer_coll && self_idx == o.self_idx &&
           peer_idx == o.peer_idx && sub == o.sub;
  }
};
struct EndKeyHash {
  std::size_t operator()(const EndKey& k) const {
    IndexHash ih;
    std::uint64_t h = k.self_coll * 0x9E3779B97F4A7C15ull ^ k.peer_coll;
    h = h * 0x9E3779B97F4A7C15ull ^ ih(k.self_idx);
    h = h * 0x9E3779B97F4A7C15ull ^ ih(k.peer_idx);
    h = h * 0x9E3779B97F4A7C15ull ^ k.sub;
    return static_cast<std::size_t>(h ^ (h >> 31));
  }
};

// The runtime's private parts of an element (ChareBase befriends this).
struct ElementAccess {
  static ElementRuntime& rt(ChareBase* o) { return o->rt_; }
  static std::uint32_t& round(ChareBase* o) { return o->round_; }
  static void set_identity(ChareBase* o, const CollectionRef& r, const Index& i) { o->ref_ = r; o->index_ = i; }
};

// Where an element went (on a PE it left, and on its home PE): `moves` orders updates.
struct LocRecord {
  std::int32_t pe;
  std::uint32_t moves;
};

// A sender's view of one element: where to send (-1: its home) and the next sequence number.
struct RouteKey {
  std::uint64_t collection;
  Index idx;
  bool operator==(const RouteKey& o) const { return collection == o.collection && idx == o.idx; }
};
struct RouteHash {
  std::size_t operator()(const RouteKey& k) const { return IndexHash{}(k.idx) ^ (k.collection * 0x9E3779B97F4A7C15ull); }
};
struct Route {
  std::int32_t pe = -1;
  std::uint16_t seq = 0;
  std::uint32_t moves = 0;
};

struct CommHash {
  std::size_t operator()(const std::pair<RouteKey, RouteKey>& k) const {
    return RouteHash{}(k.first) * 31 ^ RouteHash{}(k.second);
  }
};

// A reduction tree child (over all PEs): the last round it sent and whether it promised the next.
struct RedChild {
  int pe;
  std::int64_t last_sent = -1;
  bool promised = false;
};

struct Collection {
  CollectionRef ref;
  const std::type_info* cls = nullptr;
  std::unordered_map<Index, ChareBase*, IndexHash> elements;
  std::vector<ChareBase*> local;  // in construction order (broadcasts walk this)
  ChareBase* single = nullptr;    // a group's or chare's one local element: no hash lookup
  std::unordered_map<Index, std::vector<void*>, IndexHash> waiting;  // for elements not yet here
  std::unordered_map<Index, LocRecord, IndexHash> where;  // elements that left (or, at home, live elsewhere)
  // Reductions (bulk arrays and groups) climb a tree over all PEs; elements may move, so a
  // PE sends a round up once its local elements have contributed and the children that
  // promised it have sent theirs; the root counts contributions (reductions.cpp).
  bool reducible = false;
  int local_expected = 0;  // elements this PE will hold once bulk creation is done
  std::int64_t red_total = 0;  // contributions per round (elements of the collection)
  std::map<std::uint32_t, int> owing;  // round -> local elements whose next contribution it is
  std::vector<RedChild> red_children;
  int red_parent = -1;
  bool red_promised = false;  // this PE will send round red_next_send
  std::uint32_t red_next_send = 0;  // rounds below were sent up (root: completed)
  // Numbered array broadcasts (the root numbers them; elements that move skip or catch up).
  std::uint16_t bcast_latest = 0;  // the last one delivered here
  std::vector<void*> bcast_history;  // the last kBcastHistory delivered here, oldest first
};
constexpr std::size_t kBcastHistory = 64;

struct RedState {
  bool has = false;
  Contribution c{};
  std::vector<char> data;
  CkCallback cb;
  std::int64_t count = 0;  // contributions combined here
};

struct FutureSlot {
  void* msg = nullptr;
  CthThread waiter = nullptr;
  FutureHandler handler = nullptr;  // future_create(handler): every value goes there
};

struct PendingDevice;
struct Sections;  // sections.cpp
struct CheckpointState;  // checkpoint.cpp

struct Core {
  int h_core = -1, h_readonly = -1, h_reduce = -1, h_qd_start = -1, h_qd_probe = -1, h_qd_reply = -1;
  int h_qd_report = -1, h_qd_reported = -1;
  bool initialized = false;
  std::vector<void*> early;  // messages that came before the readonly values
  std::string embedder_readonly;  // ck::set_embedder_readonly: after the readonly globals
  void (*embedder_readonly_arrived)(const std::string&) = nullptr;
  ChareBase* (*make_main)(const MainArgs&) = nullptr;
  std::unordered_map<std::uint64_t, std::unique_ptr<Collection>> collections;
  Collection* last = nullptr;  // one-entry cache: consecutive messages mostly hit one collection
  std::unordered_map<std::uint64_t, std::vector<void*>> waiting;  // for collections not yet here
  std::uint64_t next_serial = 0;
  int next_chare = 0;
  Constructing constructing;
  std::map<std::pair<std::uint64_t, std::uint32_t>, RedState> reductions;
  std::unordered_map<std::uint32_t, FutureSlot> futures;
  std::uint32_t next_future = 1;
  // quiescence detection: entry messages sent and processed on this PE, and those held
  // here for an element or collection that does not exist (yet): sent, not processed.
  std::uint64_t sent = 0, processed = 0, held = 0;
  bool undelivered_is_error = false;  // UCHARM_UNDELIVERED=error
  std::vector<CkCallback> qd_waiting;  // PE 0
  int qd_replies = 0;
  std::uint64_t qd_sum_sent = 0, qd_sum_processed = 0, qd_prev_sent = UINT64_MAX, qd_prev_processed = 0;
  std::uint64_t qd_sum_held = 0;
  bool qd_running = false;
  // GPU Messaging API
  int h_device_sent = -1, h_device_arrived = -1;
  // Sender completions, by id - 1: one slot per send in flight (a buffer may be sent several
  // times); freed slots are reused, so steady sending allocates nothing.
  std::vector<CkCallback> device_done;
  std::vector<std::uint32_t> device_done_free;
  std::vector<PendingDevice*> pending_free;  // receive records, reused
  const std::vector<CkDeviceBuffer>* unpack_dests = nullptr;  // set while an entry unpacks
  std::size_t unpack_next = 0;
  // Location manager: this PE's routes to elements (a cache; corrected when a message had
  // to be forwarded), and its handlers for location updates.
  std::unordered_map<RouteKey, Route, RouteHash> routes;
  Route* last_route = nullptr;  // nodes stay put; reset when a route is erased
  RouteKey last_route_key{};
  int h_loc_update = -1, h_loc_correct = -1, h_forget = -1, h_lb = -1;
  ChareBase* running = nullptr;  // the element whose entry method runs now
  LocationCounts loc_counts;
  LbState lb;
  // MetisLB: bytes sent between array elements since the last balancing step.
  bool lb_graph = false;
  std::unordered_map<std::pair<RouteKey, RouteKey>, double, CommHash> comm;
  std::unordered_map<std::uint64_t, std::uint16_t> bcast_serials;  // arrays this PE created: last number
  std::unordered_map<const std::type_info*, std::string> class_names;  // demangled, for traces
  std::shared_ptr<Sections> sections;  // section trees and handlers (sections.cpp)
  std::shared_ptr<CheckpointState> checkpoint;  // checkpoint.cpp
};
extern Core g_core;  // this PE's core state (non-SMP); reached only through core()
inline Core& core() { return g_core; }

// The entry table, without the function-static guard of registry() on the hot path.
extern const EntryInfo* g_entries;
inline const EntryInfo* core_entries() { return g_entries; }

// The PE that numbers an array's broadcasts (and a section's): the one that created it, or,
// after a restart on fewer PEs, that PE modulo the PE count.
inline int array_root(std::uint64_t id) { return static_cast<int>((id & 0xFFFFFF) % static_cast<std::uint64_t>(CmiNumPes())); }

// ---- indices ----------------------------------------------------------------------------------
inline std::int64_t linear(const Index& shape, const Index& i) {
  std::int64_t l = 0;
  for (int d = 0; d < shape.dims; ++d) l = l * shape.x[d] + i.x[d];
  return l;
}
inline std::int64_t total_elements(const Index& shape) {
  std::int64_t n = 1;
  for (int d = 0; d < shape.dims; ++d) n *= shape.x[d];
  return n;
}
template <class F>
void for_each_index(const Index& shape, F&& f) {
  Index i;
  i.dims = shape.dims;
  const std::int64_t n = total_elements(shape);
  for (std::int64_t l = 0; l < n; ++l) {
    std::int64_t rest = l;
    for (int d = shape.dims - 1; d >= 0; --d) {
      i.x[d] = static_cast<std::int32_t>(rest % shape.x[d]);
      rest /= shape.x[d];
    }
    f(i);
  }
}

inline int tree_children(int pos, int n) {
  int first = pos * kTreeBranching + 1;
  return first >= n ? 0 : std::min(kTreeBranching, n - first);
}

inline std::size_t args_len(void* msg) { return raw_length(msg); }  // less a trace trailer
// +trace: gives an element message a trailer with its flow id (a copy 8 bytes longer).
void trace_attach(void*& msg, std::size_t& total, int dest_pe);
inline std::uint64_t trace_flow_of(void* msg) {
  if (!(envelope(msg).flags & kEnvTraced)) return 0;
  std::uint64_t id;
  std::memcpy(&id, static_cast<char*>(msg) + CmiMsgSize(msg) - sizeof id, sizeof id);
  return id;
}
inline char* args_of(void* msg) { return CmiMsgPayload(msg) + sizeof(Envelope); }

// ---- collections and location (collections.cpp) ---------------------------------------------
Collection* find_collection(std::uint64_t id);
Collection& ensure_collection(const CollectionRef& ref, const std::type_info* cls);
// Creation messages: the CollectionRef, then the constructor's arguments.
inline const CollectionRef& creation_ref(void* msg) {
  return *reinterpret_cast<const CollectionRef*>(args_of(msg));
}
// Handles a creation or insertion message (and frees it).
void create_collection(void* msg);
// Handles a Destroy message (ChareBase::ckDestroy): the element goes, and a singleton
// chare's whole record with it.
void destroy_element(Collection& c, const Index& idx);
// One line per element or collection that messages are held for (empty: none).
std::string held_report();

// The location manager (location.cpp): where an element lives, finding it here, holding
// messages until it exists, and forwarding messages for elements that moved.
class LocationManager {
 public:
  // Where a sender sends: its cached route, else the element's home.
  static int pe_of(const CollectionRef& c, const Index& idx) { return home_pe(c, idx); }
  static ChareBase* find_local(Collection& c, const Index& idx) {
    if (c.single) return c.single;  // a group's or chare's one element
    auto it = c.elements.find(idx);
    return it == c.elements.end() ? nullptr : it->second;
  }
  static void hold(Collection& c, const Index& idx, void* msg) {
    c.waiting[idx].push_back(msg);
    ++core().held;
  }
  static void hold(std::uint64_t collection, void* msg) {
    core().waiting[collection].push_back(msg);
    ++core().held;
  }
};
// The demangled class name of a collection's elements (stable for the run).
const char* class_name(const std::type_info* cls);
// Runs an element message that is next in its sender's order (location.cpp calls it).
void deliver_in_order(Collection& c, ChareBase* obj, void* msg);
// Sends an element message (Invoke) along this PE's route, numbering it for its element.
void send_to_element(void* msg, std::size_t total, const CollectionRef& ref, const SendOpts& o);
// A message for an array element that is not here: forward it, or hold it.
void route_absent(Collection& c, void* msg);
// Delivers `msg` to `obj` if it is next in its sender's order (else keeps it, returns false).
bool in_order(ChareBase* obj, void* msg);
// Runs the messages kept by in_order that are now next.
void drain_early(Collection& c, ChareBase* obj, int src);
// The element is here now: tell its home, and the sender of a forwarded message.
void arrived_here(Collection& c, ChareBase* obj);
void correct_sender(const Collection& c, const Index& idx, int src, std::uint32_t moves);
void register_location_handlers();
// Migration (migrate.cpp).
void migrate_out(Collection& c, ChareBase* obj, int to, bool by_balancer);
void arrive_handler_msg(void* msg);  // an element's state (MsgKind::Arrive)
void forget_routes(std::uint64_t collection, const Index& idx);  // after a destroy
// The runtime's part of an element's state (migrations and checkpoints), before its pup().
void pup_runtime(PUP::er& p, ChareBase* obj, CollectionRef& ref, bool& by_balancer);
// The index of class `cls`'s migration constructor in registry().ctors (UINT32_MAX: none).
std::uint32_t find_migration_ctor(const std::type_info& cls);
// Checkpoints (checkpoint.cpp): the handler, +restart, and rebuilding this PE's objects.
struct CheckpointState;
void register_checkpoint_handler();
void set_restart_dir(const std::string& dir);  // +restart DIR
bool restart_requested();
void restart_load();       // in start-up, instead of building the main chare
// Reductions: the element's next round changed, or it came or left.
void owing_add(Collection& c, std::uint32_t round, int delta);
void reductions_recheck(Collection& c);
void setup_reduction_tree(Collection& c);
// Broadcasts (broadcast.cpp).
void broadcast_numbered(Collection& c, void* msg);  // deliver a numbered broadcast here
void broadcast_catch_up(Collection& c, ChareBase* obj);  // an element arrived: missed broadcasts
void number_broadcast(void* msg);  // at the root
void stamp_insertion(void* msg);   // at the root: the last broadcast number, for the new element
// Element bookkeeping shared by construction and arrival.
void element_added(Collection& c, ChareBase* obj);
void element_removed(Collection& c, ChareBase* obj);
// Load balancing (lb.cpp).
void lb_start();
void lb_element_added(ChareBase* obj);
void lb_arrived(ChareBase* obj);
void lb_account(ChareBase* obj, double seconds);
void lb_handler(void* msg);
// The PE becomes idle (true) or busy again (false): the balancer's background load.
void lb_idle(bool begin);
// Core options from argv (+balancer, +LB..., +trace); removes them.
void parse_core_options(int& argc, char** argv);
void register_core_options();  // with Converse, before ConverseInit

// ---- dispatch and threads (dispatch.cpp) ----------------------------------------------------
void dispatch(void* msg);
void run_entry(ChareBase* obj, std::uint32_t entry, void* msg);
// Runs a message's entry on an element (measured for the balancer, traced).
void call_entry(Collection& c, ChareBase* obj, void* msg);
// Runs an entry whose CkDeviceBuffer arguments unpack to `dests` (in parameter order).
void run_entry_with(ChareBase* obj, std::uint32_t entry, void* msg, const std::vector<CkDeviceBuffer>* dests);
struct ThreadCall {
  ChareBase* obj;
  std::uint32_t entry;
  void* msg;
  std::vector<CkDeviceBuffer> dests;  // GPU Messaging: where the device arguments landed
};
void thread_body(void* arg);  // arg: a ThreadCall* it owns

// ---- the other parts' handlers and hooks ----------------------------------------------------
void try_complete_reduction(std::uint64_t id, std::uint32_t round);  // reductions.cpp
void reduce_handler(void* msg);
void deliver_future(void* msg);  // futures.cpp
void qd_start_handler(void* msg);  // quiescence.cpp
void qd_probe_handler(void* msg);
void qd_reply_handler(void* msg);
void qd_report_handler(void* msg);
void qd_reported_handler(void* msg);
void start_device_invocation(ChareBase* obj, std::uint32_t entry, void* msg);  // gpu_messaging.cpp
void device_sent_handler(void* msg);
void device_arrived_handler(void* msg);
void register_channel_handler();  // channels.cpp
int open_channel_ends(std::uint64_t collection, const Index& idx);  // channel ends this element holds here
struct ChannelEnd;
// channel_enqueue.cpp: the tag of an end's next transfer in one direction (its counter
// advances) and the peer's PE; false for a send before the peer's incoming id is known.
bool channel_next_tag(ChannelEnd& e, bool send, std::uint64_t& tag, int& peer_pe);
void register_section_handlers();  // sections.cpp
// A reduction's combining and result (reductions.cpp), for section reductions.
void combine_contribution(RedState& st, const Contribution& c, const char* data, std::size_t len, std::uint64_t id,
                          std::uint32_t round);
std::vector<char> reduction_result(RedState& st);

}  // namespace ck::detail
