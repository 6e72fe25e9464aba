// Migration of array elements: packing an element with its pup() and its runtime state on
// the PE it leaves, rebuilding it with its migration constructor on the PE it reaches.
#include "internal.h"

#include <cstring>

namespace ck::detail {

std::uint32_t find_migration_ctor(const std::type_info& cls) {
  const auto& ctors = registry().ctors;
  for (std::size_t i = 0; i < ctors.size(); ++i)
    if (ctors[i].migration && *ctors[i].cls == cls) return static_cast<std::uint32_t>(i);
  return UINT32_MAX;
}

namespace {

// The migration constructor registered for the element's class (ArrayProxy<C> registers it).
std::uint32_t migration_ctor(ChareBase* obj) {
  if (const std::uint32_t i = find_migration_ctor(typeid(*obj)); i != UINT32_MAX) return i;
  CkAbort("element %s of class %s cannot migrate: no ArrayProxy<%s> was used in this program (it registers "
          "the class's migration constructor)",
          obj->ckIndex().str().c_str(), demangle(typeid(*obj).name()).c_str(), demangle(typeid(*obj).name()).c_str());
}

const char* const kPupContext = "the element's pup() (unpacking a migrated element)";

}  // namespace

// The runtime's part of an element's state, in the order it travels.
void pup_runtime(PUP::er& p, ChareBase* obj, CollectionRef& ref, bool& by_balancer) {
  ElementRuntime& rt = ElementAccess::rt(obj);
  p | ref;
  p | by_balancer;
  p | ElementAccess::round(obj);
  p | obj->usesAtSync;
  p | rt.moves;
  p | rt.bcast_seen;
  p | rt.migratable;
  p | rt.at_sync;
  p | rt.sync_step;
  p | rt.load;
  p | rt.next_seq;
}

void element_added(Collection& c, ChareBase* obj) {
  c.elements.emplace(obj->ckIndex(), obj);
  c.local.push_back(obj);
  owing_add(c, ElementAccess::round(obj), +1);
}

void element_removed(Collection& c, ChareBase* obj) {
  c.elements.erase(obj->ckIndex());
  c.local.erase(std::find(c.local.begin(), c.local.end(), obj));
  if (c.single == obj) c.single = nullptr;
  owing_add(c, ElementAccess::round(obj), -1);
}

void migrate_out(Collection& c, ChareBase* obj, int to, bool by_balancer) {
  Core& k = core();
  ElementRuntime& rt = ElementAccess::rt(obj);
  if (rt.threads > 0)
    CkAbort("element %s of %s cannot migrate while %d threaded entry method(s) of it are suspended: call "
            "migrateMe after they return",
            obj->ckIndex().str().c_str(), demangle(typeid(*obj).name()).c_str(), rt.threads);
  if (const std::string why = task_obstacle(obj); !why.empty())  // coroutine entries (tasks.cpp)
    CkAbort("element %s of %s cannot migrate: %s", obj->ckIndex().str().c_str(),
            demangle(typeid(*obj).name()).c_str(), why.c_str());
  const std::uint32_t ctor = migration_ctor(obj);
  rt.leaving_to = to;  // ckAboutToMigrate may ask where it goes (ckLeavingTo)
  obj->ckAboutToMigrate();
  if (const int open = open_channel_ends(c.ref.id, obj->ckIndex()))
    CkAbort("element %s of %s cannot migrate with %d CkChannel end(s) open: channels do not move; close them "
            "(CkChannel::close, e.g. in ckAboutToMigrate) and open new ones after the move (ckJustMigrated)",
            obj->ckIndex().str().c_str(), demangle(typeid(*obj).name()).c_str(), open);
  rt.leaving_to = -1;
  ++rt.moves;
  CollectionRef ref = c.ref;
  PUP::er s = PUP::er::sizer();
  pup_runtime(s, obj, ref, by_balancer);
  obj->pup(s);
  const std::size_t total = CmiMsgHeaderSizeBytes + sizeof(Envelope) + s.size();
  void* msg = CmiAlloc(total);
  PUP::er p = PUP::er::packer(args_of(msg), s.size());
  p.set_deleting(true);  // the element is deleted once packed
  pup_runtime(p, obj, ref, by_balancer);
  obj->pup(p);
  Envelope& e = envelope(msg);
  e.collection = c.ref.id;
  e.set_index(obj->ckIndex());
  e.entry = ctor;
  e.sig = 0;
  e.kind = MsgKind::Arrive;
  const Index idx = obj->ckIndex();
  std::vector<void*> early = std::move(rt.early);
  if (trace::enabled()) trace::migration(class_name(c.cls), idx, CmiMyPe(), to, total, false);
  element_removed(c, obj);
  ++k.loc_counts.migrated_out;
  c.where[idx] = LocRecord{to, rt.moves};
  delete obj;
  CmiSetHandler(msg, k.h_core);
  ++k.sent;
  CmiSyncSendAndFree(to, total, msg);
  // Messages that overtook an earlier one follow the element (after it: links keep order).
  for (void* m : early) {
    envelope(m).flags = static_cast<std::uint8_t>(envelope(m).flags | kEnvForwarded);
    CmiForwardAndFree(to, m);
  }
  reductions_recheck(c);  // it may have been the last element a round waited for here
}

void arrive_handler_msg(void* msg) {
  Core& k = core();
  const Envelope& e = envelope(msg);
  const CtorInfo& ctor = registry().ctors[e.entry];
  CollectionRef ref;
  std::memcpy(&ref, args_of(msg), sizeof ref);  // pup_runtime packs it first, as raw bytes
  Collection& c = ensure_collection(ref, ctor.cls);
  if (c.ref.bounded || c.ref.kind == Kind::Group) setup_reduction_tree(c);
  const Index idx = e.index();
  k.constructing = Constructing{ref, idx};
  PUP::er p = PUP::er::unpacker(args_of(msg), args_len(msg));
  p.set_context(kPupContext);
  ChareBase* obj = ctor.make(p);
  if (!obj)
    CkAbort("element %s of class %s cannot be rebuilt after migrating: give the class a constructor taking "
            "CkMigrateMessage* or a default constructor",
            idx.str().c_str(), demangle(ctor.cls->name()).c_str());
  bool by_balancer = false;
  pup_runtime(p, obj, ref, by_balancer);
  obj->pup(p);
  if (p.remaining() != 0)
    CkAbort("element %s of class %s: its pup() read %zu bytes fewer than it wrote when migrating (pack and "
            "unpack must visit the same fields)",
            idx.str().c_str(), demangle(ctor.cls->name()).c_str(), p.remaining());
  const int from = CmiMsgSourcePe(msg);
  const std::size_t bytes = CmiMsgSize(msg);
  CmiFree(msg);
  ++k.processed;
  ++k.loc_counts.migrated_in;
  element_added(c, obj);
  arrived_here(c, obj);
  if (trace::enabled()) trace::migration(class_name(c.cls), idx, from, CmiMyPe(), bytes, true);
  obj->ckJustMigrated();
  broadcast_catch_up(c, obj);
  if (by_balancer) lb_arrived(obj);
  auto w = c.waiting.find(idx);
  if (w != c.waiting.end()) {
    std::vector<void*> msgs = std::move(w->second);
    c.waiting.erase(w);
    k.held -= msgs.size();
    for (void* m : msgs) dispatch(m);
  }
}

}  // namespace ck::detail

namespace ck {

void ChareBase::migrateMe(int pe) {
  if (ref_.kind != Kind::Array)
    CkAbort("migrateMe(%d): only chare array elements migrate (this is a %s)", pe,
            ref_.kind == Kind::Group ? "group element" : "singleton chare");
  if (!rt_.migratable)
    CkAbort("migrateMe(%d): element %s of %s is not migratable (setMigratable(false) was called)", pe,
            index_.str().c_str(), detail::demangle(typeid(*this).name()).c_str());
  if (pe < 0 || pe >= CkNumPes()) CkAbort("migrateMe(%d): PE out of range [0, %d)", pe, CkNumPes());
  if (pe == CkMyPe() || rt_.leaving_to == pe) return;
  rt_.leaving_to = pe;
  // After the running entry method: the move happens when this message is handled.
  const std::size_t total = CmiMsgHeaderSizeBytes + sizeof(detail::Envelope);
  void* msg = CmiAlloc(total);
  detail::Envelope& e = detail::envelope(msg);
  e.collection = ref_.id;
  e.set_index(index_);
  e.entry = static_cast<std::uint32_t>(pe);
  e.sig = 0;
  e.kind = detail::MsgKind::Migrate;
  CmiSetHandler(msg, detail::core().h_core);
  ++detail::core().sent;
  CmiSyncSendAndFree(CkMyPe(), total, msg);
}

}  // namespace ck
