// The core runtime over Converse: the registry, collections and element location,
// message routing and buffering, entry invocation (plain and threaded), callbacks,
// reductions, futures, readonly distribution and quiescence detection.
#include <ucharm/charm.h>

#include <cxxabi.h>

#include <algorithm>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace ck {
namespace detail {
namespace {

// ---- registry -----------------------------------------------------------------------------------
struct Registered {
  std::string name;
  std::uint32_t* slot;
};
struct CtorInfo {
  Constructor make;
  const std::type_info* cls;
};
struct Registry {
  std::vector<std::pair<Registered, EntryInfo>> entries_in;
  std::vector<std::pair<Registered, CtorInfo>> ctors_in;
  std::vector<std::pair<Registered, int (*)(const Index&, const Index&, int)>> maps_in;
  std::vector<std::pair<Registered, UserCombine>> reducers_in;
  std::vector<EntryInfo> entries;
  std::vector<CtorInfo> ctors;
  std::vector<int (*)(const Index&, const Index&, int)> maps;
  std::vector<UserCombine> reducers;
  std::vector<ReadonlyBase*> readonlies;  // static-initialisation order: the same binary everywhere
};
Registry& registry() {
  static Registry r;  // used during static initialisation: must not depend on init order
  return r;
}

// Sorting by name gives every PE the same indices, whatever order the templates were
// instantiated in.
template <class T>
void assign(std::vector<std::pair<Registered, T>>& in, std::vector<T>& out) {
  std::sort(in.begin(), in.end(), [](const auto& a, const auto& b) { return a.first.name < b.first.name; });
  out.clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (i > 0 && in[i].first.name == in[i - 1].first.name) {  // one template, two registrations
      *in[i].first.slot = static_cast<std::uint32_t>(out.size() - 1);
      continue;
    }
    *in[i].first.slot = static_cast<std::uint32_t>(out.size());
    out.push_back(in[i].second);
  }
}

// "&Main::done" out of a registration name (a __PRETTY_FUNCTION__), for messages.
std::string entry_name(const char* registered) {
  std::string s = registered;
  auto at = s.find("X = ");
  if (at == std::string::npos) return s;
  auto end = s.find_first_of(";]", at);
  return s.substr(at + 4, end == std::string::npos ? std::string::npos : end - at - 4);
}

std::string demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : name;
  std::free(d);
  return out;
}

// ---- per-PE state -------------------------------------------------------------------------------
constexpr int kTreeBranching = 4;

struct IndexHash {
  std::size_t operator()(const Index& i) const {
    std::uint64_t h = static_cast<std::uint32_t>(i.x[0]);
    h = h * 0x9E3779B97F4A7C15ull ^ static_cast<std::uint32_t>(i.x[1]);
    h = h * 0x9E3779B97F4A7C15ull ^ static_cast<std::uint32_t>(i.x[2]);
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

struct Collection {
  CollectionRef ref;
  const std::type_info* cls = nullptr;
  std::unordered_map<Index, ChareBase*, IndexHash> elements;
  std::vector<ChareBase*> local;  // in construction order (broadcasts walk this)
  ChareBase* single = nullptr;    // a group's or chare's one local element: no hash lookup
  std::unordered_map<Index, std::vector<void*>, IndexHash> waiting;  // for elements not yet here
  // Reduction tree over the PEs that hold elements (bulk arrays and groups).
  bool reducible = false;
  int local_expected = 0;  // elements this PE will hold once bulk creation is done
  std::vector<int> red_pes;
  int red_pos = -1;
};

struct RedState {
  bool has = false;
  Contribution c{};
  std::vector<char> data;
  CkCallback cb;
  int local_got = 0;
  int children_got = 0;
};

struct FutureSlot {
  void* msg = nullptr;
  CthThread waiter = nullptr;
};

struct Core {
  int h_core = -1, h_readonly = -1, h_reduce = -1, h_qd_start = -1, h_qd_probe = -1, h_qd_reply = -1;
  bool initialized = false;
  std::vector<void*> early;  // messages that came before the readonly values
  ChareBase* (*make_main)(const MainArgs&) = nullptr;
  std::unordered_map<std::uint32_t, std::unique_ptr<Collection>> collections;
  Collection* last = nullptr;  // one-entry cache: consecutive messages mostly hit one collection
  std::unordered_map<std::uint32_t, std::vector<void*>> waiting;  // for collections not yet here
  std::uint32_t next_serial = 0;
  int next_chare = 0;
  Constructing constructing;
  std::map<std::pair<std::uint32_t, std::uint32_t>, RedState> reductions;
  std::unordered_map<std::uint32_t, FutureSlot> futures;
  std::uint32_t next_future = 1;
  // quiescence detection: entry messages sent and processed on this PE
  std::uint64_t sent = 0, processed = 0;
  std::vector<CkCallback> qd_waiting;  // PE 0
  int qd_replies = 0;
  std::uint64_t qd_sum_sent = 0, qd_sum_processed = 0, qd_prev_sent = UINT64_MAX, qd_prev_processed = 0;
  bool qd_running = false;
  // GPU Messaging API
  int h_device_sent = -1, h_device_arrived = -1;
  // Sender completions, by id - 1; freed slots are reused, so steady sending allocates nothing.
  std::vector<CkCallback> device_done;
  std::vector<std::uint32_t> device_done_free;
  std::vector<struct PendingDevice*> pending_free;  // receive records, reused
  const std::vector<CkDeviceBuffer>* unpack_dests = nullptr;  // set while an entry unpacks
  std::size_t unpack_next = 0;
};
Core g_core;  // this PE's core state (non-SMP); reached only through core()
inline Core& core() { return g_core; }

// The entry table, without the function-static guard of registry() on the hot path.
const EntryInfo* g_entries = nullptr;
inline const EntryInfo* core_entries() { return g_entries; }

Collection* find_collection(std::uint32_t id) {
  Core& k = core();
  if (k.last && k.last->ref.id == id) return k.last;
  auto it = k.collections.find(id);
  if (it == k.collections.end()) return nullptr;
  k.last = it->second.get();
  return k.last;
}

std::int64_t linear(const Index& shape, const Index& i) {
  std::int64_t l = 0;
  for (int d = 0; d < shape.dims; ++d) l = l * shape.x[d] + i.x[d];
  return l;
}
std::int64_t total_elements(const Index& shape) {
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

int tree_children(int pos, int n) {
  int first = pos * kTreeBranching + 1;
  return first >= n ? 0 : std::min(kTreeBranching, n - first);
}

std::size_t args_len(void* msg) { return CmiMsgSize(msg) - CmiMsgHeaderSizeBytes - sizeof(Envelope); }
char* args_of(void* msg) { return CmiMsgPayload(msg) + sizeof(Envelope); }

void dispatch(void* msg);

// ---- element location -------------------------------------------------------------------------
// The one place that says where an element lives, finds it here, or holds its messages
// until it exists. Elements stay on their home PE (the map's choice) today; migration
// would change this class (a home PE that knows and forwards to the current PE) and
// nothing in proxies or senders.
class LocationManager {
 public:
  static int pe_of(const CollectionRef& c, const Index& idx) { return home_pe(c, idx); }
  static ChareBase* find_local(Collection& c, const Index& idx) {
    if (c.single) return c.single;  // a group's or chare's one element
    auto it = c.elements.find(idx);
    return it == c.elements.end() ? nullptr : it->second;
  }
  static void hold(Collection& c, const Index& idx, void* msg) { c.waiting[idx].push_back(msg); }
  static void hold(std::uint32_t collection, void* msg) { core().waiting[collection].push_back(msg); }
};

// ---- element construction ---------------------------------------------------------------------
Collection& ensure_collection(const CollectionRef& ref, const std::type_info* cls) {
  Core& k = core();
  auto& slot = k.collections[ref.id];
  if (!slot) {
    slot = std::make_unique<Collection>();
    slot->ref = ref;
    slot->cls = cls;
  }
  return *slot;
}

void flush_waiting(std::vector<void*>& msgs) {
  std::vector<void*> todo;
  todo.swap(msgs);
  for (void* m : todo) dispatch(m);
}

// Creation messages: the CollectionRef, then the constructor's arguments.
const CollectionRef& creation_ref(void* msg) { return *reinterpret_cast<const CollectionRef*>(args_of(msg)); }

void construct_element(Collection& c, const Index& idx, void* msg) {
  Core& k = core();
  const Envelope& e = envelope(msg);
  if (c.elements.count(idx))
    CkAbort("element %s of collection %u is inserted twice", idx.str().c_str(), c.ref.id);
  k.constructing = Constructing{c.ref, idx};
  PUP::er p = PUP::er::unpacker(args_of(msg) + sizeof(CollectionRef), args_len(msg) - sizeof(CollectionRef));
  ChareBase* obj = registry().ctors[e.entry].make(p);
  c.elements.emplace(idx, obj);
  c.local.push_back(obj);
  if (c.ref.kind != Kind::Array) c.single = obj;
  auto w = c.waiting.find(idx);
  if (w != c.waiting.end()) {
    std::vector<void*> msgs = std::move(w->second);
    c.waiting.erase(w);
    flush_waiting(msgs);
  }
}

// Which PEs hold elements of a bulk array or group: the reduction tree spans those.
void setup_reduction_tree(Collection& c) {
  const int n = CmiNumPes(), me = CmiMyPe();
  c.red_pes.clear();
  if (c.ref.kind == Kind::Group) {
    for (int pe = 0; pe < n; ++pe) c.red_pes.push_back(pe);
    c.local_expected = 1;
  } else {
    std::vector<char> holds(static_cast<std::size_t>(n), 0);
    c.local_expected = 0;
    for_each_index(c.ref.shape, [&](const Index& i) {
      const int pe = LocationManager::pe_of(c.ref, i);
      holds[static_cast<std::size_t>(pe)] = 1;
      if (pe == me) ++c.local_expected;
    });
    for (int pe = 0; pe < n; ++pe)
      if (holds[static_cast<std::size_t>(pe)]) c.red_pes.push_back(pe);
  }
  auto it = std::find(c.red_pes.begin(), c.red_pes.end(), me);
  c.red_pos = it == c.red_pes.end() ? -1 : static_cast<int>(it - c.red_pes.begin());
  c.reducible = true;
}

void try_complete_reduction(std::uint32_t id, std::uint32_t round);
}  // namespace
void register_channel_handler();
namespace {

void create_collection(void* msg) {
  const Envelope& e = envelope(msg);
  const CtorInfo& ctor = registry().ctors[e.entry];
  const CollectionRef ref = creation_ref(msg);
  Collection& c = ensure_collection(ref, ctor.cls);
  switch (e.kind) {
    case MsgKind::CreateChare:
      construct_element(c, Index{}, msg);
      break;
    case MsgKind::CreateGroup:
      setup_reduction_tree(c);
      construct_element(c, Index{{CmiMyPe(), 0, 0}, 0}, msg);
      break;
    case MsgKind::CreateArray:
      setup_reduction_tree(c);
      for_each_index(ref.shape, [&](const Index& i) {
        if (LocationManager::pe_of(c.ref, i) == CmiMyPe()) construct_element(c, i, msg);
      });
      break;
    case MsgKind::Insert:
      construct_element(c, e.index(), msg);
      break;
    default:
      break;
  }
  CmiFree(msg);
  Core& k = core();
  auto w = k.waiting.find(c.ref.id);
  if (w != k.waiting.end()) {
    std::vector<void*> msgs = std::move(w->second);
    k.waiting.erase(w);
    flush_waiting(msgs);
  }
  // Child partials may have arrived before this PE knew the collection. Completing a
  // round erases it from the map, so collect the rounds first.
  std::vector<std::uint32_t> rounds;
  for (auto it = k.reductions.lower_bound({c.ref.id, 0});
       it != k.reductions.end() && it->first.first == c.ref.id; ++it)
    rounds.push_back(it->first.second);
  for (std::uint32_t r : rounds) try_complete_reduction(c.ref.id, r);
}

// ---- invocation -----------------------------------------------------------------------------------
struct ThreadCall {
  ChareBase* obj;
  std::uint32_t entry;
  void* msg;
  std::vector<CkDeviceBuffer> dests;  // GPU Messaging: where the device arguments landed
};

void run_entry(ChareBase* obj, std::uint32_t entry, void* msg) {
  PUP::er p = PUP::er::unpacker(args_of(msg), args_len(msg));
  core_entries()[entry].invoke(obj, p);
}

// Runs an entry whose CkDeviceBuffer arguments unpack to `dests` (in parameter order).
void run_entry_with(ChareBase* obj, std::uint32_t entry, void* msg, const std::vector<CkDeviceBuffer>* dests) {
  Core& k = core();
  k.unpack_dests = dests;
  k.unpack_next = 0;
  run_entry(obj, entry, msg);
  k.unpack_dests = nullptr;
}

void thread_body(void* arg) {
  std::unique_ptr<ThreadCall> call(static_cast<ThreadCall*>(arg));
  run_entry_with(call->obj, call->entry, call->msg, call->dests.empty() ? nullptr : &call->dests);
  CmiFree(call->msg);
}

// ---- GPU Messaging API: the receiving side ---------------------------------------------------
struct PendingDevice {
  ChareBase* obj;
  std::uint32_t entry;
  void* msg;
  int remaining;
  std::vector<CkDeviceBuffer> dests;
};

// Records are reused (their dests keep their capacity): no allocation per invocation.
PendingDevice* take_pending(ChareBase* obj, std::uint32_t entry, void* msg) {
  Core& k = core();
  PendingDevice* pd;
  if (k.pending_free.empty()) {
    pd = new PendingDevice{};
  } else {
    pd = k.pending_free.back();
    k.pending_free.pop_back();
  }
  pd->obj = obj;
  pd->entry = entry;
  pd->msg = msg;
  pd->remaining = 0;
  pd->dests.clear();
  return pd;
}

void finish_device_invocation(PendingDevice* pd) {
  const EntryInfo& info = core_entries()[pd->entry];
  if (info.threaded) {
    CthAwaken(CthCreate(thread_body, new ThreadCall{pd->obj, pd->entry, pd->msg, std::move(pd->dests)}));
  } else {
    run_entry_with(pd->obj, pd->entry, pd->msg, &pd->dests);
    CmiFree(pd->msg);
  }
  core().pending_free.push_back(pd);
}

void device_arrived_handler(void* msg) {
  PendingDevice* pd;
  std::memcpy(&pd, CmiMsgPayload(msg), sizeof pd);
  CmiFree(msg);
  ++core().processed;  // the sender counted this transfer as sent
  if (--pd->remaining == 0) finish_device_invocation(pd);
}

// The host message of an entry with device arguments arrived: run the post entry, post
// the receives, and run the entry once every buffer is in.
void start_device_invocation(ChareBase* obj, std::uint32_t entry, void* msg) {
  const EntryInfo& info = core_entries()[entry];
  PendingDevice* pd = take_pending(obj, entry, msg);
  CmiReference(msg);  // dispatch drops its reference when this returns
  PUP::er p = PUP::er::unpacker(args_of(msg), args_len(msg));
  info.post(obj, p, pd->dests);
  pd->remaining = 1;  // held until every receive is posted
  for (std::size_t i = 0; i < pd->dests.size(); ++i) {
    const CkDeviceBuffer& d = pd->dests[i];
    if (d.size == 0) continue;
    if (!d.ptr)
      CkAbort("the post entry method of %s left device argument %zu (%zu bytes) without a destination: set "
              "its ptr (the parameter must be a CkDeviceBuffer&)",
              entry_name(info.name).c_str(), i, d.size);
    ++pd->remaining;
    void* done = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof pd);
    std::memcpy(CmiMsgPayload(done), &pd, sizeof pd);
    CmiSetHandler(done, core().h_device_arrived);
    CmiRecvDevice(const_cast<void*>(d.ptr), d.size, d.tag, done, d.stream);
  }
  if (--pd->remaining == 0) finish_device_invocation(pd);
}

// ---- GPU Messaging API: the sending side -------------------------------------------------------
struct DeviceSent {
  std::uint32_t id;
  std::uint64_t size;
};
void device_sent_handler(void* msg) {
  DeviceSent s;
  std::memcpy(&s, CmiMsgPayload(msg), sizeof s);
  CmiFree(msg);
  Core& k = core();
  CkCallback cb = k.device_done[s.id - 1];
  k.device_done_free.push_back(s.id);
  cb.send(static_cast<std::size_t>(s.size));
}

// Runs entry `entry` on obj; a threaded entry gets its own thread (holding a reference to msg).
void call_entry(Collection& c, ChareBase* obj, void* msg) {
  const Envelope& e = envelope(msg);
  const EntryInfo& info = core_entries()[e.entry];
  // Same class: the common case, no dynamic_cast. Otherwise the entry may belong to a base.
  if (info.cls != c.cls && *info.cls != *c.cls && !info.accepts(obj))
    CkAbort("entry method %s called on an element of %s, a different chare class",
            entry_name(info.name).c_str(), demangle(c.cls->name()).c_str());
  if (info.sig != e.sig)
    CkAbort("entry method %s takes (%s) but was sent other argument types (a callback of the wrong type?)",
            entry_name(info.name).c_str(), info.sig_names().c_str());
  if (info.device_params > 0) {
    start_device_invocation(obj, e.entry, msg);
  } else if (info.threaded) {
    CmiReference(msg);
    CthAwaken(CthCreate(thread_body, new ThreadCall{obj, e.entry, msg, {}}));
  } else {
    run_entry(obj, e.entry, msg);
  }
}

void deliver_future(void* msg);
void call_function(void* msg) {
  const Envelope& e = envelope(msg);
  const EntryInfo& info = registry().entries[e.entry];
  if (info.sig != e.sig)
    CkAbort("callback function %s takes (%s) but was sent other argument types",
            entry_name(info.name).c_str(), info.sig_names().c_str());
  run_entry(nullptr, e.entry, msg);
}

void dispatch(void* msg) {
  Core& k = core();
  const Envelope& e = envelope(msg);
  switch (e.kind) {
    case MsgKind::CallFunction:
      ++k.processed;
      call_function(msg);
      CmiFree(msg);
      return;
    case MsgKind::FutureSet:
      ++k.processed;
      deliver_future(msg);
      return;
    case MsgKind::CreateChare:
    case MsgKind::CreateGroup:
    case MsgKind::CreateArray:
      ++k.processed;
      create_collection(msg);
      return;
    default:
      break;
  }
  Collection* c = find_collection(e.collection);
  if (!c && e.kind == MsgKind::Insert) c = &ensure_collection(creation_ref(msg), registry().ctors[e.entry].cls);
  if (!c) {  // created elsewhere, creation message not here yet
    LocationManager::hold(e.collection, msg);
    return;
  }
  if (e.kind == MsgKind::Insert) {
    ++k.processed;
    create_collection(msg);
    return;
  }
  if (e.kind == MsgKind::Broadcast) {
    ++k.processed;
    for (std::size_t i = 0; i < c->local.size(); ++i) call_entry(*c, c->local[i], msg);
    CmiFree(msg);
    return;
  }
  ChareBase* obj = LocationManager::find_local(*c, e.index());
  if (!obj) {  // inserted, but not yet
    LocationManager::hold(*c, e.index(), msg);
    return;
  }
  ++k.processed;
  call_entry(*c, obj, msg);
  CmiFree(msg);
}

void core_handler(void* msg) {
  Core& k = core();
  if (!k.initialized) {  // readonly values first
    k.early.push_back(msg);
    return;
  }
  dispatch(msg);
}

// ---- readonly ---------------------------------------------------------------------------------
void readonly_handler(void* msg) {
  Core& k = core();
  PUP::er p = PUP::er::unpacker(CmiMsgPayload(msg), CmiMsgSize(msg) - CmiMsgHeaderSizeBytes);
  for (ReadonlyBase* r : registry().readonlies) r->pup(p);
  CmiFree(msg);
  k.initialized = true;
  std::vector<void*> early;
  early.swap(k.early);
  for (void* m : early) dispatch(m);
}

void broadcast_readonlies() {
  Core& k = core();
  PUP::er s = PUP::er::sizer();
  for (ReadonlyBase* r : registry().readonlies) r->pup(s);
  std::size_t total = CmiMsgHeaderSizeBytes + s.size();
  void* msg = CmiAlloc(total);
  PUP::er p = PUP::er::packer(CmiMsgPayload(msg), s.size());
  for (ReadonlyBase* r : registry().readonlies) r->pup(p);
  CmiSetHandler(msg, k.h_readonly);
  CmiSetExpedited(msg);
  CmiSyncBroadcastAndFree(total, msg);
}

// ---- reductions ---------------------------------------------------------------------------------
template <class T>
void combine_typed(Reducer r, T* acc, const T* in, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    switch (r) {
      case Reducer::sum: acc[i] += in[i]; break;
      case Reducer::product: acc[i] *= in[i]; break;
      case Reducer::min: acc[i] = std::min(acc[i], in[i]); break;
      case Reducer::max: acc[i] = std::max(acc[i], in[i]); break;
      case Reducer::logical_and: acc[i] = (acc[i] != 0 && in[i] != 0) ? 1 : 0; break;
      case Reducer::logical_or: acc[i] = (acc[i] != 0 || in[i] != 0) ? 1 : 0; break;
      case Reducer::bitwise_and:
        if constexpr (std::is_integral_v<T>) acc[i] &= in[i];
        break;
      case Reducer::bitwise_or:
        if constexpr (std::is_integral_v<T>) acc[i] |= in[i];
        break;
      default: break;
    }
  }
}

const char* reducer_name(Reducer r) {
  static const char* names[] = {"nop", "sum", "product", "min", "max", "logical_and", "logical_or",
                                "bitwise_and", "bitwise_or", "concat", "set", "user"};
  return names[static_cast<int>(r)];
}
const char* type_name(RType t) {
  static const char* names[] = {"none", "int", "long", "float", "double", "user type"};
  return names[static_cast<int>(t)];
}

void combine(RedState& st, const Contribution& c, const char* data, std::size_t len, std::uint32_t id,
             std::uint32_t round) {
  if (!st.has) {
    st.has = true;
    st.c = c;
    st.data.assign(data, data + len);
    return;
  }
  const Contribution& a = st.c;
  const bool counted = c.reducer != Reducer::concat && c.reducer != Reducer::set;
  if (a.reducer != c.reducer || a.type != c.type || (counted && a.count != c.count) ||
      a.user != c.user || a.scalar != c.scalar)
    CkAbort("reduction %u of collection %u: contributors disagree: one gave %s of %u %s%s, another %s "
            "of %u %s%s",
            round, id, reducer_name(a.reducer), a.count, type_name(a.type), a.scalar ? "" : " (vector)",
            reducer_name(c.reducer), c.count, type_name(c.type), c.scalar ? "" : " (vector)");
  switch (c.reducer) {
    case Reducer::nop: break;
    case Reducer::concat:
    case Reducer::set:
      st.data.insert(st.data.end(), data, data + len);
      st.c.count += c.count;
      break;
    case Reducer::user: {
      std::vector<char> out;
      registry().reducers[c.user](st.data.data(), st.data.size(), data, len, out);
      st.data.swap(out);
      break;
    }
    default: {
      if ((c.reducer == Reducer::bitwise_and || c.reducer == Reducer::bitwise_or) &&
          (c.type == RType::Float || c.type == RType::Double))
        CkAbort("reduction %u of collection %u: %s needs integers, not %s", round, id,
                reducer_name(c.reducer), type_name(c.type));
      switch (c.type) {
        case RType::Int: combine_typed(c.reducer, reinterpret_cast<int*>(st.data.data()), reinterpret_cast<const int*>(data), c.count); break;
        case RType::Long: combine_typed(c.reducer, reinterpret_cast<long*>(st.data.data()), reinterpret_cast<const long*>(data), c.count); break;
        case RType::Float: combine_typed(c.reducer, reinterpret_cast<float*>(st.data.data()), reinterpret_cast<const float*>(data), c.count); break;
        case RType::Double: combine_typed(c.reducer, reinterpret_cast<double*>(st.data.data()), reinterpret_cast<const double*>(data), c.count); break;
        default: break;
      }
    }
  }
}

// The result as the target entry unpacks it: T, vector<T>, vector<pair<Index, T>>, or nothing.
std::vector<char> result_bytes(RedState& st) {
  const Contribution& c = st.c;
  std::vector<char> out;
  if (c.reducer == Reducer::nop) return out;
  if (c.reducer == Reducer::user || (c.scalar && c.reducer != Reducer::concat && c.reducer != Reducer::set))
    return st.data;
  if (c.reducer == Reducer::set) {  // sort the (Index, value) records by index
    const std::size_t rec = sizeof(Index) + c.elem_size;
    std::vector<std::size_t> order(st.data.size() / rec);
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto idx = [&](std::size_t i) { return reinterpret_cast<const Index*>(st.data.data() + i * rec); };
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const Index *x = idx(a), *y = idx(b);
      return std::lexicographical_compare(x->x, x->x + 3, y->x, y->x + 3);
    });
    std::uint64_t n = order.size();
    out.resize(8 + st.data.size());
    std::memcpy(out.data(), &n, 8);
    for (std::size_t i = 0; i < order.size(); ++i)
      std::memcpy(out.data() + 8 + i * rec, st.data.data() + order[i] * rec, rec);
    return out;
  }
  std::uint64_t n = st.data.size() / (c.elem_size ? c.elem_size : 1);  // vector<T>
  out.resize(8 + st.data.size());
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, st.data.data(), st.data.size());
  return out;
}

struct ReduceHead {
  std::uint32_t id, round;
  Contribution c;
  CkCallback cb;
  std::uint64_t len;
};

void try_complete_reduction(std::uint32_t id, std::uint32_t round) {
  Core& k = core();
  Collection* c = find_collection(id);
  if (!c || !c->reducible) return;
  auto it = k.reductions.find({id, round});
  if (it == k.reductions.end()) return;
  RedState& st = it->second;
  const int n = static_cast<int>(c->red_pes.size());
  // Until bulk creation is done, local.size() is short of the elements still to come
  // (a constructor may contribute): wait for all of them.
  const int local_n = std::max(static_cast<int>(c->local.size()), c->local_expected);
  if (st.local_got < local_n || st.children_got < tree_children(c->red_pos, n))
    return;
  if (c->red_pos == 0) {
    std::vector<char> res = result_bytes(st);
    CkCallback cb = st.cb;
    std::uint32_t sig = st.c.result_sig;
    k.reductions.erase(it);
    cb.send_packed(res.data(), res.size(), sig);
    return;
  }
  const int parent = c->red_pes[static_cast<std::size_t>((c->red_pos - 1) / kTreeBranching)];
  std::size_t total = CmiMsgHeaderSizeBytes + sizeof(ReduceHead) + st.data.size();
  void* msg = CmiAlloc(total);
  ReduceHead h{id, round, st.c, st.cb, st.data.size()};
  std::memcpy(CmiMsgPayload(msg), &h, sizeof h);
  if (!st.data.empty()) std::memcpy(CmiMsgPayload(msg) + sizeof h, st.data.data(), st.data.size());
  CmiSetHandler(msg, k.h_reduce);
  k.reductions.erase(it);
  CmiSyncSendAndFree(parent, total, msg);
}

void reduce_handler(void* msg) {  // a child's partial result
  Core& k = core();
  ReduceHead h;
  std::memcpy(&h, CmiMsgPayload(msg), sizeof h);
  RedState& st = k.reductions[{h.id, h.round}];
  combine(st, h.c, CmiMsgPayload(msg) + sizeof h, h.len, h.id, h.round);
  st.cb = h.cb;
  ++st.children_got;
  CmiFree(msg);
  try_complete_reduction(h.id, h.round);
}

// ---- futures ------------------------------------------------------------------------------------
void deliver_future(void* msg) {
  Core& k = core();
  const Envelope& e = envelope(msg);
  FutureSlot& f = k.futures[e.entry];
  if (f.msg) CkAbort("future %u on PE %d was set twice", e.entry, CmiMyPe());
  f.msg = msg;
  if (f.waiter) CthAwaken(f.waiter);
}

// ---- quiescence detection -----------------------------------------------------------------------
struct QdCounts {
  std::uint64_t sent, processed;
};

void qd_wave() {  // PE 0
  Core& k = core();
  k.qd_replies = 0;
  k.qd_sum_sent = k.qd_sum_processed = 0;
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes);
  CmiSetHandler(m, k.h_qd_probe);
  CmiSetPriority(m, INT_MAX / 2);  // answered once the PE has nothing more urgent
  CmiSyncBroadcastAllAndFree(CmiMsgHeaderSizeBytes, m);
}

void qd_start_handler(void* msg) {  // PE 0
  Core& k = core();
  CkCallback cb;
  std::memcpy(&cb, CmiMsgPayload(msg), sizeof cb);
  CmiFree(msg);
  k.qd_waiting.push_back(cb);
  if (!k.qd_running) {
    k.qd_running = true;
    k.qd_prev_sent = UINT64_MAX;
    qd_wave();
  }
}

void qd_probe_handler(void* msg) {
  Core& k = core();
  CmiFree(msg);
  void* r = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(QdCounts));
  QdCounts c{k.sent, k.processed};
  std::memcpy(CmiMsgPayload(r), &c, sizeof c);
  CmiSetHandler(r, k.h_qd_reply);
  CmiSyncSendAndFree(0, CmiMsgHeaderSizeBytes + sizeof c, r);
}

void qd_reply_handler(void* msg) {  // PE 0
  Core& k = core();
  QdCounts c;
  std::memcpy(&c, CmiMsgPayload(msg), sizeof c);
  CmiFree(msg);
  k.qd_sum_sent += c.sent;
  k.qd_sum_processed += c.processed;
  if (++k.qd_replies < CmiNumPes()) return;
  // Quiescent: everything sent was processed, and nothing moved since the last wave.
  bool quiet = k.qd_sum_sent == k.qd_sum_processed && k.qd_sum_sent == k.qd_prev_sent &&
               k.qd_sum_processed == k.qd_prev_processed;
  k.qd_prev_sent = k.qd_sum_sent;
  k.qd_prev_processed = k.qd_sum_processed;
  if (!quiet) {
    qd_wave();
    return;
  }
  k.qd_running = false;
  std::vector<CkCallback> cbs;
  cbs.swap(k.qd_waiting);
  for (const CkCallback& cb : cbs) cb.send();
}

// ---- start-up -----------------------------------------------------------------------------------
void core_start(int argc, char** argv) {
  Core& k = core();
  k.h_core = CmiRegisterHandler(core_handler);
  k.h_readonly = CmiRegisterHandler(readonly_handler);
  k.h_reduce = CmiRegisterHandler(reduce_handler);
  k.h_qd_start = CmiRegisterHandler(qd_start_handler);
  k.h_qd_probe = CmiRegisterHandler(qd_probe_handler);
  k.h_qd_reply = CmiRegisterHandler(qd_reply_handler);
  register_channel_handler();
  k.h_device_sent = CmiRegisterHandler(device_sent_handler);
  k.h_device_arrived = CmiRegisterHandler(device_arrived_handler);
  Registry& r = registry();
  assign(r.entries_in, r.entries);
  assign(r.ctors_in, r.ctors);
  assign(r.maps_in, r.maps);
  assign(r.reducers_in, r.reducers);
  g_entries = r.entries.data();
  if (CmiMyPe() != 0) return;  // the rest waits for the readonly values
  // The main chare: collection 0, a singleton on PE 0, built before anything else runs.
  CollectionRef ref;
  ref.id = new_collection_id();
  ref.kind = Kind::Chare;
  ref.pe = 0;
  auto& slot = k.collections[ref.id];
  slot = std::make_unique<Collection>();
  slot->ref = ref;
  k.constructing = Constructing{ref, Index{}};
  ChareBase* main_obj = k.make_main(MainArgs{argc, argv});
  slot->cls = &typeid(*main_obj);
  slot->elements.emplace(Index{}, main_obj);
  slot->local.push_back(main_obj);
  if (CmiNumPes() > 1) broadcast_readonlies();
  k.initialized = true;
}

}  // namespace

// ---- registry entry points (static initialisation) ------------------------------------------------
void register_entry(const EntryInfo& info, std::uint32_t* slot) {
  registry().entries_in.push_back({{info.name, slot}, info});
}
void register_ctor(const char* name, Constructor c, const std::type_info* cls, std::uint32_t* slot) {
  registry().ctors_in.push_back({{name, slot}, CtorInfo{c, cls}});
}
void register_map(const char* name, int (*fn)(const Index&, const Index&, int), std::uint32_t* slot) {
  registry().maps_in.push_back({{name, slot}, fn});
}
void register_reducer(const char* name, UserCombine fn, std::uint32_t* slot) {
  registry().reducers_in.push_back({{name, slot}, fn});
}
ReadonlyBase::ReadonlyBase() { registry().readonlies.push_back(this); }

std::uint32_t type_list_hash(const std::type_info* const* types, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < n; ++i)
    for (const char* s = types[i]->name(); *s; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 1099511628211ull;
  return static_cast<std::uint32_t>(h ^ (h >> 32) ^ n);
}
std::string type_list_names(const std::type_info* const* types, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += (i ? ", " : "") + demangle(types[i]->name());
  return out;
}

const Constructing& constructing() { return core().constructing; }

std::uint32_t new_collection_id() {
  Core& k = core();
  if (k.next_serial >= (1u << 16) || CmiMyPe() >= (1 << 16))
    CkAbort("too many chare collections created on PE %d", CmiMyPe());
  return (k.next_serial++ << 16) | static_cast<std::uint32_t>(CmiMyPe());
}

int next_chare_pe() { return (CmiMyPe() + core().next_chare++) % CmiNumPes(); }

void check_bounds(const CollectionRef& c, const Index& idx) {
  if (idx.dims != c.shape.dims)
    CkAbort("a %d-D index %s used on a %d-D chare array", idx.dims, idx.str().c_str(), c.shape.dims);
  if (!c.bounded) return;
  for (int d = 0; d < idx.dims; ++d)
    if (idx.x[d] < 0 || idx.x[d] >= c.shape.x[d])
      CkAbort("index %s is outside the chare array's bounds %s", idx.str().c_str(), c.shape.str().c_str());
}

int home_pe(const CollectionRef& c, const Index& idx) {
  const int n = CmiNumPes();
  switch (c.kind) {
    case Kind::Chare: return c.pe;
    case Kind::Group: return idx.x[0];
    case Kind::Array: break;
  }
  switch (c.map.kind) {
    case MapKind::Block:
      if (c.bounded) {
        std::int64_t total = total_elements(c.shape);
        return static_cast<int>(linear(c.shape, idx) * n / (total ? total : 1));
      }
      [[fallthrough]];
    case MapKind::RoundRobin: {
      std::uint64_t h = c.bounded ? static_cast<std::uint64_t>(linear(c.shape, idx)) : IndexHash{}(idx);
      return static_cast<int>(h % static_cast<std::uint64_t>(n));
    }
    case MapKind::User: {
      int pe = registry().maps[c.map.fn](idx, c.shape, n);
      if (pe < 0 || pe >= n) CkAbort("the array map put index %s on PE %d, outside [0, %d)", idx.str().c_str(), pe, n);
      return pe;
    }
  }
  return 0;
}

void* local_branch(const CollectionRef& c, const Index& idx) {
  Collection* col = find_collection(c.id);
  if (!col) return nullptr;
  auto it = col->elements.find(idx);  // not find_local: a group's branch is asked by index too
  return it == col->elements.end() ? nullptr : it->second;
}

void send_msg(void* msg, std::size_t total, const CollectionRef& ref, const SendOpts& o) {
  Core& k = core();
  Envelope& e = envelope(msg);
  CmiSetHandler(msg, k.h_core);
  if (o.priority) CmiSetPriority(msg, o.priority);
  if (o.expedited) CmiSetExpedited(msg);
  switch (e.kind) {
    case MsgKind::Broadcast:
      if (ref.kind == Kind::Chare) CkAbort("broadcast to a singleton chare: use its element proxy");
      [[fallthrough]];
    case MsgKind::CreateGroup:
    case MsgKind::CreateArray:
      k.sent += static_cast<std::uint64_t>(CmiNumPes());
      CmiSyncBroadcastAllAndFree(total, msg);
      return;
    case MsgKind::CallFunction:
    case MsgKind::FutureSet:
      ++k.sent;
      CmiSyncSendAndFree(e.x[0], total, msg);
      return;
    default:
      ++k.sent;
      CmiSyncSendAndFree(LocationManager::pe_of(ref, e.index()), total, msg);
  }
}

void send_device_buffer(int pe, CkDeviceBuffer& b) {
  Core& k = core();
  void* done = nullptr;
  if (b.done_id) {
    done = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(DeviceSent));
    DeviceSent s{b.done_id, b.size};
    std::memcpy(CmiMsgPayload(done), &s, sizeof s);
    CmiSetHandler(done, k.h_device_sent);
  }
  b.src_pe = CmiMyPe();
  if (b.size == 0) {  // nothing travels (the receiver posts nothing either); done at once
    if (done) CsdEnqueue(done);
    return;
  }
  CmiDeviceBuffer cb{b.ptr, b.size, 0, b.stream};
  ++k.sent;  // processed when the receiver has the data (QD)
  CmiSendDevice(pe, cb, done);
  b.tag = cb.tag;
}

void contribute(void* element, const Contribution& c, const void* data, std::size_t len, const CkCallback& cb) {
  Core& k = core();
  auto* el = static_cast<ChareBase*>(element);
  const CollectionRef& ref = el->ckRef();
  if (ref.kind == Kind::Chare) CkAbort("contribute() is for group and array elements, not singleton chares");
  Collection* col = find_collection(ref.id);
  if (!col || !col->reducible)
    CkAbort("contribute(): reductions over arrays filled by insert() are not supported yet (create the array in bulk)");
  std::uint32_t round = el->ck_next_round();
  RedState& st = k.reductions[{ref.id, round}];
  if (c.reducer == Reducer::set) {  // each record carries the contributor's index
    std::vector<char> rec(sizeof(Index) + len);
    std::memcpy(rec.data(), &el->ckIndex(), sizeof(Index));
    if (len) std::memcpy(rec.data() + sizeof(Index), data, len);
    combine(st, c, rec.data(), rec.size(), ref.id, round);
  } else {
    combine(st, c, static_cast<const char*>(data), len, ref.id, round);
  }
  st.cb = cb;
  ++st.local_got;
  try_complete_reduction(ref.id, round);
}

std::uint32_t future_create() {
  Core& k = core();
  std::uint32_t id = k.next_future++;
  k.futures[id];
  return id;
}

void future_set(int pe, std::uint32_t id, void* msg, std::size_t total, std::uint32_t sig) {
  Envelope& e = envelope(msg);
  e.kind = MsgKind::FutureSet;
  e.entry = id;
  e.sig = sig;
  e.set_index(Index{{pe, 0, 0}, 0});
  send_msg(msg, total, CollectionRef{}, SendOpts{});
}

void* future_wait(std::uint32_t id, std::uint32_t sig, const char* type_names) {
  Core& k = core();
  auto it = k.futures.find(id);
  if (it == k.futures.end()) CkAbort("Future::get: future %u is unknown on PE %d (already read?)", id, CmiMyPe());
  if (!it->second.msg) {
    if (!CthSelf())
      CkAbort("Future::get would block outside a thread: call it from a threaded entry method "
              "(static constexpr auto threaded_entries() { return ck::entries<&C::method>; })");
    it->second.waiter = CthSelf();
    while (!k.futures[id].msg) CthSuspend();
  }
  void* msg = k.futures[id].msg;
  k.futures.erase(id);
  if (envelope(msg).sig != sig)
    CkAbort("Future<%s>::get: the value set has another type", type_names);
  return msg;
}

bool future_ready(std::uint32_t id) {
  auto it = core().futures.find(id);
  return it != core().futures.end() && it->second.msg;
}

int start(int argc, char** argv, ChareBase* (*make_main)(const MainArgs&)) {
  core().make_main = make_main;
  ConverseInit(argc, argv, core_start);
  return 0;
}

}  // namespace detail

CkDeviceBuffer::CkDeviceBuffer(const void* p, std::size_t n, const CkCallback& done, void* s)
    : ptr(p), size(n), stream(s) {
  if (done.is_ignore()) return;
  detail::Core& k = detail::core();
  if (k.device_done_free.empty()) {
    k.device_done.push_back(done);
    done_id = static_cast<std::uint32_t>(k.device_done.size());
  } else {
    done_id = k.device_done_free.back();
    k.device_done_free.pop_back();
    k.device_done[done_id - 1] = done;
  }
}

void CkDeviceBuffer::pup(PUP::er& p) {
  p | size;
  p | tag;
  p | src_pe;
  if (!p.isUnpacking()) return;
  // Unpacking for the entry method itself: the data has landed where the post entry said.
  detail::Core& k = detail::core();
  ptr = k.unpack_dests && k.unpack_next < k.unpack_dests->size() ? (*k.unpack_dests)[k.unpack_next++].ptr : nullptr;
  done_id = 0;
}

ChareBase::ChareBase() : ref_(detail::constructing().ref), index_(detail::constructing().index) {}

std::string Index::str() const {
  std::string s = "(";
  for (int d = 0; d < (dims ? dims : 1); ++d) s += (d ? ", " : "") + std::to_string(x[d]);
  return s + ")";
}

void CkCallback::deliver(void* msg, std::size_t total, std::uint32_t sig) const {
  detail::Envelope& e = detail::envelope(msg);
  e.sig = sig;
  switch (target_) {
    case Target::Ignore:
      CmiFree(msg);
      return;
    case Target::Element:
    case Target::Broadcast:
      e.collection = ref_.id;
      e.set_index(index_);
      e.entry = entry_;
      e.kind = target_ == Target::Element ? detail::MsgKind::Invoke : detail::MsgKind::Broadcast;
      detail::send_msg(msg, total, ref_, SendOpts{});
      return;
    case Target::Function:
      e.entry = entry_;
      e.kind = detail::MsgKind::CallFunction;
      e.set_index(Index{{pe_, 0, 0}, 0});
      detail::send_msg(msg, total, ref_, SendOpts{});
      return;
    case Target::Future:
      detail::future_set(pe_, entry_, msg, total, sig);
      return;
  }
}

void CkCallback::send_packed(const void* data, std::size_t len, std::uint32_t sig) const {
  if (target_ == Target::Ignore) return;
  std::size_t total = CmiMsgHeaderSizeBytes + sizeof(detail::Envelope) + len;
  void* msg = CmiAlloc(total);
  if (len) std::memcpy(CmiMsgPayload(msg) + sizeof(detail::Envelope), data, len);
  deliver(msg, total, sig);
}

// ---- channels --------------------------------------------------------------------------------
namespace {

struct ChannelEnd {
  CollectionRef ref;
  Index index;
  bool operator==(const ChannelEnd& o) const { return ref.id == o.ref.id && index == o.index; }
};
struct ChannelKey {
  ChannelEnd from, to;
  std::uint32_t sub;
  bool explicit_id;
};
// The incoming ids that this PE's channel endpoints receive on.
std::unordered_map<std::uint32_t, ChannelKey>& channel_ids() {
  static std::unordered_map<std::uint32_t, ChannelKey> ids;
  return ids;
}

std::uint32_t channel_hash(const ChannelEnd& from, const ChannelEnd& to, std::uint32_t sub) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (const ChannelEnd* e : {&from, &to}) {
    mix(e->ref.id);
    for (int d = 0; d < 3; ++d) mix(static_cast<std::uint32_t>(e->index.x[d]));
  }
  mix(sub);
  return static_cast<std::uint32_t>((h ^ (h >> 29)) & ((1u << CmiChannelIdBits()) - 1));
}

std::string end_str(const ChannelEnd& e) { return "collection " + std::to_string(e.ref.id) + " element " + e.index.str(); }

void register_in_id(std::uint32_t id, const ChannelKey& key) {
  auto [it, fresh] = channel_ids().emplace(id, key);
  if (fresh) return;
  const ChannelKey& old = it->second;
  if (old.from == key.from && old.to == key.to && old.sub == key.sub)
    CkAbort("channel from %s to %s (sub-id %u) is opened twice at the same end", end_str(key.from).c_str(),
            end_str(key.to).c_str(), key.sub);
  CkAbort("channel id %u collides on PE %d: the channel from %s to %s%s already receives on it, and so would "
          "the one from %s to %s%s; use another sub-id%s",
          id, CmiMyPe(), end_str(old.from).c_str(), end_str(old.to).c_str(),
          old.explicit_id ? " (explicit id)" : "", end_str(key.from).c_str(), end_str(key.to).c_str(),
          key.explicit_id ? " (explicit id)" : "", key.explicit_id || old.explicit_id ? " or id" : "");
}

// A channel completion reaches the scheduler as this message, then the user's callback.
struct ChannelDone {
  CkCallback cb;
  std::uint64_t bytes;
  bool received;  // a receive completed: the matching send is now processed (QD)
};
int h_channel_done = -1;
void channel_done_handler(void* msg) {
  ChannelDone d;
  std::memcpy(&d, CmiMsgPayload(msg), sizeof d);
  CmiFree(msg);
  if (d.received) ++detail::core().processed;
  d.cb.send(static_cast<std::size_t>(d.bytes));
}
void* channel_done_msg(const CkCallback& cb, std::size_t bytes, bool received) {
  if (h_channel_done < 0) CkAbort("channels are used before the runtime started");
  if (!received && cb.is_ignore()) return nullptr;  // a send nobody waits for: no completion message
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(ChannelDone));
  ChannelDone d{cb, bytes, received};
  std::memcpy(CmiMsgPayload(m), &d, sizeof d);
  CmiSetHandler(m, h_channel_done);
  return m;
}

}  // namespace

namespace detail {
void register_channel_handler() { h_channel_done = CmiRegisterHandler(channel_done_handler); }
}  // namespace detail

CkChannel::CkChannel(const CollectionRef& self, const Index& self_idx, const CollectionRef& peer,
                     const Index& peer_idx, std::uint32_t sub_id) {
  ChannelEnd me{self, self_idx}, other{peer, peer_idx};
  out_id_ = channel_hash(me, other, sub_id);
  in_id_ = channel_hash(other, me, sub_id);
  register_in_id(in_id_, ChannelKey{other, me, sub_id, false});
  open(self, self_idx, peer, peer_idx);
}

CkChannel CkChannel::with_ids(const CollectionRef& self, const Index& self_idx, const CollectionRef& peer,
                              const Index& peer_idx, std::uint32_t out_id, std::uint32_t in_id) {
  if ((out_id | in_id) >> CmiChannelIdBits())
    CkAbort("channel ids %u/%u do not fit in %u bits", out_id, in_id, CmiChannelIdBits());
  CkChannel ch;
  ch.out_id_ = out_id;
  ch.in_id_ = in_id;
  register_in_id(in_id, ChannelKey{{peer, peer_idx}, {self, self_idx}, in_id, true});
  ch.open(self, self_idx, peer, peer_idx);
  return ch;
}

void CkChannel::open(const CollectionRef& self, const Index& self_idx, const CollectionRef& peer,
                     const Index& peer_idx) {
  if (detail::home_pe(self, self_idx) != CmiMyPe())
    CkAbort("a channel end must be opened on its own element's PE (%s lives on PE %d, this is PE %d)",
            self_idx.str().c_str(), detail::home_pe(self, self_idx), CmiMyPe());
  peer_pe_ = detail::home_pe(peer, peer_idx);
  open_ = true;
}

CkChannel& CkChannel::operator=(CkChannel&& o) noexcept {
  if (this != &o) {
    if (open_) channel_ids().erase(in_id_);
    open_ = o.open_;
    peer_pe_ = o.peer_pe_;
    out_id_ = o.out_id_;
    in_id_ = o.in_id_;
    out_counter_ = o.out_counter_;
    in_counter_ = o.in_counter_;
    o.open_ = false;
  }
  return *this;
}

CkChannel::~CkChannel() {
  if (open_) channel_ids().erase(in_id_);
}

void CkChannel::send(const void* ptr, std::size_t size, const CkCallback& done, void* stream) {
  if (!open_) CkAbort("CkChannel::send on a channel that is not open");
  const std::uint64_t tag = CmiChannelTag(out_id_, out_counter_);
  out_counter_ = CmiChannelNextCounter(out_counter_);
  ++detail::core().sent;  // processed when the peer's receive completes (QD)
  CmiChannelSend(peer_pe_, ptr, size, tag, channel_done_msg(done, size, false), stream);
}

void CkChannel::recv(void* ptr, std::size_t size, const CkCallback& done, void* stream) {
  if (!open_) CkAbort("CkChannel::recv on a channel that is not open");
  const std::uint64_t tag = CmiChannelTag(in_id_, in_counter_);
  in_counter_ = CmiChannelNextCounter(in_counter_);
  CmiChannelRecv(ptr, size, tag, channel_done_msg(done, size, true), stream);
}

void CkChannel::send_wait(const void* ptr, std::size_t size, void* stream) {
  auto f = Future<std::size_t>::make();
  send(ptr, size, f.callback(), stream);
  f.get();
}

void CkChannel::recv_wait(void* ptr, std::size_t size, void* stream) {
  auto f = Future<std::size_t>::make();
  recv(ptr, size, f.callback(), stream);
  f.get();
}

void start_qd(const CkCallback& cb) {
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof cb);
  std::memcpy(CmiMsgPayload(m), &cb, sizeof cb);
  CmiSetHandler(m, detail::core().h_qd_start);
  CmiSyncSendAndFree(0, CmiMsgHeaderSizeBytes + sizeof cb, m);
}

}  // namespace ck

void CkAbort(const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  CmiAbort("%s", buf);
}

void CkPrintf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vprintf(fmt, ap);
  va_end(ap);
}

namespace PUP {
void er::overrun(std::size_t n) const {
  CkAbort("unpacking read past the end of a message (%zu + %zu > %zu bytes): sender and receiver "
            "disagree on the argument types",
            pos_, n, limit_);
}
}  // namespace PUP
