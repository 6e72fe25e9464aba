// Collections and element location: creating chares, groups and arrays, inserting
// elements, holding messages for elements not here yet, and where an element lives.
#include "internal.h"

namespace ck::detail {

Collection* find_collection(std::uint64_t id) {
  Core& k = core();
  if (k.last && k.last->ref.id == id) return k.last;
  auto it = k.collections.find(id);
  if (it == k.collections.end()) return nullptr;
  k.last = it->second.get();
  return k.last;
}

Collection& ensure_collection(const CollectionRef& ref, const std::type_info* cls) {
  Core& k = core();
  auto& slot = k.collections[ref.id];
  if (!slot) {
    slot = std::make_unique<Collection>();
    slot->ref = ref;
  }
  if (!slot->cls) slot->cls = cls;  // made earlier by a location message, which knows no class
  return *slot;
}

namespace {

void flush_waiting(std::vector<void*>& msgs) {
  std::vector<void*> todo;
  todo.swap(msgs);
  core().held -= todo.size();  // dispatch holds them again if they still have nowhere to go
  for (void* m : todo) dispatch(m);
}

void construct_element(Collection& c, const Index& idx, void* msg) {
  Core& k = core();
  const Envelope& e = envelope(msg);
  if (c.elements.count(idx))
    CkAbort("element %s of collection %llu is inserted twice", idx.str().c_str(),
            static_cast<unsigned long long>(c.ref.id));
  k.constructing = Constructing{c.ref, idx};
  PUP::er p = PUP::er::unpacker(args_of(msg) + sizeof(CollectionRef), args_len(msg) - sizeof(CollectionRef));
  ChareBase* obj = registry().ctors[e.entry].make(p);
  // Broadcasts sent before it do not reach it; an insertion knows which those were.
  const bool stamped = e.flags & kEnvStamped;
  ElementAccess::rt(obj).bcast_seen = stamped ? e.seq : c.bcast_latest;
  element_added(c, obj);
  if (c.ref.kind != Kind::Array) c.single = obj;
  if (stamped) broadcast_catch_up(c, obj);  // ones sent after the insertion that came here first
  // Messages held for it are delivered by create_collection, after older ones held for the
  // whole collection: arrival order is each sender's order.
}

// Takes the messages held for element idx (they go after those held for the collection).
void take_waiting(Collection& c, const Index& idx, std::vector<void*>& out) {
  auto w = c.waiting.find(idx);
  if (w == c.waiting.end()) return;
  out.insert(out.end(), w->second.begin(), w->second.end());
  c.waiting.erase(w);
}

}  // namespace

void create_collection(void* msg) {
  const Envelope& e = envelope(msg);
  const CtorInfo& ctor = registry().ctors[e.entry];
  const CollectionRef ref = creation_ref(msg);
  Collection& c = ensure_collection(ref, ctor.cls);
  std::vector<void*> later;  // held for the new elements (arrived after the collection was known here)
  auto build = [&](const Index& i) {
    construct_element(c, i, msg);
    take_waiting(c, i, later);
  };
  switch (e.kind) {
    case MsgKind::CreateChare:
      build(Index{});
      break;
    case MsgKind::CreateGroup:
      setup_reduction_tree(c);
      build(Index{{CmiMyPe(), 0, 0}, 0});
      break;
    case MsgKind::CreateArray:
      setup_reduction_tree(c);
      for_each_index(ref.shape, [&](const Index& i) {
        if (LocationManager::pe_of(c.ref, i) == CmiMyPe()) build(i);
      });
      break;
    case MsgKind::Insert:
      build(e.index());
      break;
    default:
      break;
  }
  CmiFree(msg);
  Core& k = core();
  auto w = k.waiting.find(c.ref.id);
  if (w != k.waiting.end()) {  // held before this PE knew the collection: the oldest
    std::vector<void*> msgs = std::move(w->second);
    k.waiting.erase(w);
    flush_waiting(msgs);
  }
  flush_waiting(later);
  // Bulk creation is done: from now on the elements here are the ones that count (they
  // may move). Child partials may have arrived before this PE knew the collection.
  c.local_expected = 0;
  reductions_recheck(c);
}

const Constructing& constructing() { return core().constructing; }

const char* class_name(const std::type_info* cls) {
  if (!cls) return "?";
  std::string& s = core().class_names[cls];  // node-based: the string stays where it is
  if (s.empty()) s = demangle(cls->name());
  return s.c_str();
}

std::string held_report() {
  Core& k = core();
  std::string out;
  auto line = [&](std::size_t n, const std::string& what) {
    out += "ucharm: PE " + std::to_string(CmiMyPe()) + ": " + std::to_string(n) + " message(s) for " + what +
           (k.undelivered_is_error ? "" : " are buffered at quiescence") + "\n";
  };
  for (auto& [id, c] : k.collections)
    for (auto& [idx, msgs] : c->waiting)
      if (!msgs.empty())
        line(msgs.size(), "element " + idx.str() + " of collection " + std::to_string(id) + " (" +
                              (c->cls ? demangle(c->cls->name()) : std::string("class not known here")) + "), which does not exist (never inserted, or destroyed)");
  for (auto& [id, msgs] : k.waiting) {  // this PE never heard of the collection: name the indices
    std::map<std::string, std::size_t> by_index;
    for (void* m : msgs) {
      const Envelope& e = envelope(m);
      ++by_index[e.dims ? "element " + e.index().str() + " of collection" : "collection"];
    }
    for (auto& [what, n] : by_index)
      line(n, what + " " + std::to_string(id) +
                  ", which does not exist on this PE (never inserted or created, or destroyed)");
  }
  return out;
}

void destroy_element(Collection& c, const Index& idx) {
  Core& k = core();
  auto it = c.elements.find(idx);
  if (it == c.elements.end()) return;  // destroyed twice: the first one did it
  ChareBase* obj = it->second;
  element_removed(c, obj);
  // Messages kept for order go where messages for a missing element go: held, reported.
  for (void* m : ElementAccess::rt(obj).early) LocationManager::hold(c, idx, m);
  delete obj;
  if (c.ref.kind == Kind::Array) forget_routes(c.ref.id, idx);  // an index inserted again starts a new order
  if (c.ref.kind == Kind::Chare) {  // its record goes too: creating many chares costs nothing lasting
    if (k.last == &c) k.last = nullptr;
    k.collections.erase(c.ref.id);
  }
}

std::uint64_t new_collection_id() {
  Core& k = core();
  // 40 bits of serial: a million creations a second would take 12 days to run out.
  constexpr int kPeBits = 24;
  if (k.next_serial >= (std::uint64_t{1} << (64 - kPeBits)) || CmiMyPe() >= (1 << kPeBits))
    CkAbort("too many chare collections created on PE %d", CmiMyPe());
  return (k.next_serial++ << kPeBits) | static_cast<std::uint64_t>(CmiMyPe());
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

namespace {
EmbedderMap g_embedder_map = nullptr;  // set once, before start-up, by the embedder
int call_embedder_map(std::uint32_t id, const Index& idx, const Index& shape, int n) {
  if (!g_embedder_map) CkAbort("an array uses an embedder's map, but no map hook is set");
  return g_embedder_map(id, idx, shape, n);
}
}  // namespace

int home_pe(const CollectionRef& c, const Index& idx) {
  const int n = CmiNumPes();
  switch (c.kind) {
    case Kind::Chare: return c.pe < n ? c.pe : c.pe % n;  // (after a restart on fewer PEs)
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
    case MapKind::Embedder:
    case MapKind::User: {
      int pe = c.map.kind == MapKind::User ? registry().maps[c.map.fn](idx, c.shape, n)
                                           : call_embedder_map(c.map.fn, idx, c.shape, n);
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

}  // namespace ck::detail

namespace ck {

void set_embedder_map(EmbedderMap hook) { detail::g_embedder_map = hook; }

ChareBase::ChareBase() : ref_(detail::constructing().ref), index_(detail::constructing().index) {}

void ChareBase::ckDestroy() {
  if (ref_.kind == Kind::Group) CkAbort("ckDestroy(): group elements cannot be destroyed");
  if (ref_.kind == Kind::Array && ref_.bounded)
    CkAbort("ckDestroy(): element %s belongs to a bulk-created array (its reductions count every element); "
            "destroy elements of arrays filled by insert()", index_.str().c_str());
  std::size_t total = CmiMsgHeaderSizeBytes + sizeof(detail::Envelope);
  void* msg = CmiAlloc(total);
  detail::Envelope& e = detail::envelope(msg);
  e.collection = ref_.id;
  e.set_index(index_);
  e.entry = 0;
  e.sig = 0;
  e.kind = detail::MsgKind::Destroy;
  CmiSetHandler(msg, detail::core().h_core);  // to this PE (where it is now), after the running entry method
  ++detail::core().sent;
  CmiSyncSendAndFree(CkMyPe(), total, msg);
}

namespace detail {
void bad_wide_index(const Index& i) {
  CkAbort("index %s: coordinates of 4- to 6-dimensional indices must fit in 16 bits", i.str().c_str());
}
int route_pe(const CollectionRef& c, const Index& idx) {
  if (c.kind != Kind::Array) return home_pe(c, idx);
  auto it = core().routes.find(RouteKey{c.id, idx});
  return it != core().routes.end() && it->second.pe >= 0 ? it->second.pe : home_pe(c, idx);
}
}  // namespace detail

std::string Index::str() const {
  std::string s = "(";
  for (int d = 0; d < (dims ? dims : 1); ++d) s += (d ? ", " : "") + std::to_string(x[d]);
  return s + ")";
}

}  // namespace ck
