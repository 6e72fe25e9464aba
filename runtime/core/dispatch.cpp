// Message dispatch and entry invocation (plain, threaded, awaited), sending, callbacks,
// readonly distribution and start-up.
#include "internal.h"
#include "task_internal.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace ck::detail {

Core g_core;

// ---- invocation -----------------------------------------------------------------------------------
void run_entry(ChareBase* obj, std::uint32_t entry, void* msg) {
  PUP::er p = PUP::er::unpacker(args_of(msg), args_len(msg));
  p.set_context(core_entries()[entry].name);
  core_entries()[entry].invoke(obj, p);
}

void run_entry_body(ChareBase* obj, std::uint32_t entry, void* msg, const std::vector<CkDeviceBuffer>* dests) {
  Core& k = core();
  k.unpack_dests = dests;
  k.unpack_next = 0;
  run_entry(obj, entry, msg);
  k.unpack_dests = nullptr;
}

// Threaded entries and GPU Messaging entries once their buffers are in; an awaited entry's
// message goes to its coroutine instead (its body runs when the co_await takes it).
void run_entry_with(ChareBase* obj, std::uint32_t entry, void* msg, const std::vector<CkDeviceBuffer>* dests) {
  if (core_entries()[entry].awaited) return task_arrived(obj, entry, msg, dests);
  run_entry_body(obj, entry, msg, dests);
}

std::string raw_sig_names() { return "a raw message"; }

void thread_body(void* arg) {
  std::unique_ptr<ThreadCall> call(static_cast<ThreadCall*>(arg));
  run_entry_with(call->obj, call->entry, call->msg, call->dests.empty() ? nullptr : &call->dests);
  if (call->obj) --ElementAccess::rt(call->obj).threads;
  CmiFree(call->msg);
}

namespace {

// Runs entry `entry` on obj; a threaded entry gets its own thread (holding a reference to msg).
void call_entry_now(Collection& c, ChareBase* obj, void* msg) {
  const Envelope& e = envelope(msg);
  const EntryInfo& info = core_entries()[e.entry];
  // Same class: the common case, no dynamic_cast. Otherwise the entry may belong to a base.
  if (info.cls != c.cls && *info.cls != *c.cls && !info.accepts(obj))
    CkAbort("entry method %s called on an element of %s, a different chare class",
            entry_name(info.name).c_str(), demangle(c.cls->name()).c_str());
  if (info.sig != e.sig)
    CkAbort("entry method %s takes (%s) but was sent other argument types (a callback of the wrong type?)",
            entry_name(info.name).c_str(), info.sig_names().c_str());
  if (info.raw) {  // it owns the message: one more reference than dispatch drops
    CmiReference(msg);
    info.raw(obj, msg);
  } else if (info.device_params > 0) {
    start_device_invocation(obj, e.entry, msg);
  } else if (info.threaded) {
    CmiReference(msg);
    ++ElementAccess::rt(obj).threads;  // a suspended thread pins the element here
    CthAwaken(CthCreate(thread_body, new ThreadCall{obj, e.entry, msg, {}}));
  } else if (info.awaited) {  // for a coroutine's co_await ck::next (tasks.cpp)
    task_arrived(obj, e.entry, msg, nullptr);
  } else {
    run_entry(obj, e.entry, msg);
  }
}

}  // namespace

// Runs an entry on an element, measuring it for the balancer and the trace.
void call_entry(Collection& c, ChareBase* obj, void* msg) {
  Core& k = core();
  const bool traced = trace::enabled();
  if (traced) {
    const Envelope& e = envelope(msg);
    trace::begin_entry(class_name(c.cls), core_entries()[e.entry].name, obj->ckIndex(), CmiMsgSourcePe(msg),
                       trace_flow_of(msg));
  }
  if (c.ref.kind != Kind::Array || !obj->usesAtSync) {
    call_entry_now(c, obj, msg);
  } else {  // elements that take part in load balancing: their time is their load
    ChareBase* outer = k.running;
    k.running = obj;
    const double t0 = CmiWallTimer();
    call_entry_now(c, obj, msg);
    lb_account(obj, CmiWallTimer() - t0);
    k.running = outer;
  }
  if (traced) trace::end_entry();
}

void deliver_in_order(Collection& c, ChareBase* obj, void* msg) {
  Core& k = core();
  const Envelope& e = envelope(msg);
  if (e.flags & kEnvForwarded)  // its sender's route is stale: tell it where the element is
    correct_sender(c, obj->ckIndex(), CmiMsgSourcePe(msg), ElementAccess::rt(obj).moves);
  ++k.processed;
  call_entry(c, obj, msg);
  CmiFree(msg);
}

namespace {

void call_function(void* msg) {
  const Envelope& e = envelope(msg);
  const EntryInfo& info = registry().entries[e.entry];
  if (info.sig != e.sig)
    CkAbort("callback function %s takes (%s) but was sent other argument types",
            entry_name(info.name).c_str(), info.sig_names().c_str());
  run_entry(nullptr, e.entry, msg);
}

}  // namespace

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
    case MsgKind::Arrive:  // carries its CollectionRef: the collection may be new here
      arrive_handler_msg(msg);
      return;
    default:
      break;
  }
  Collection* c = find_collection(e.collection);
  if (!c && e.kind == MsgKind::Insert) c = &ensure_collection(creation_ref(msg), registry().ctors[e.entry].cls);
  if (!c && e.kind == MsgKind::Destroy) {  // a singleton chare destroyed twice: already gone
    ++k.processed;
    CmiFree(msg);
    return;
  }
  if (!c) {  // created elsewhere, creation message not here yet
    LocationManager::hold(e.collection, msg);
    return;
  }
  if (e.kind == MsgKind::Insert) {
    if (!(e.flags & kEnvStamped)) {  // at the array's root: stamp it, then on to the element's home
      stamp_insertion(msg);
      CmiForwardAndFree(home_pe(c->ref, e.index()), msg);
      return;
    }
    ++k.processed;
    create_collection(msg);
    return;
  }
  if (e.kind == MsgKind::Destroy) {
    ++k.processed;
    destroy_element(*c, e.index());
    CmiFree(msg);
    return;
  }
  if (e.kind == MsgKind::Broadcast) {
    ++k.processed;
    if (c->ref.kind == Kind::Array) {  // numbered by the root, so that moving elements get each once
      if (CmiMsgHeaderOf(msg)->flags & CmiMsgBroadcast) broadcast_numbered(*c, msg);
      else number_broadcast(msg);
      return;
    }
    for (std::size_t i = 0; i < c->local.size(); ++i) call_entry(*c, c->local[i], msg);
    CmiFree(msg);
    return;
  }
  ChareBase* obj = LocationManager::find_local(*c, e.index());
  if (e.kind == MsgKind::Migrate) {
    ++k.processed;
    if (obj && ElementAccess::rt(obj).leaving_to == static_cast<int>(e.entry))
      migrate_out(*c, obj, static_cast<int>(e.entry), false);
    CmiFree(msg);
    return;
  }
  if (!obj) {
    if (c->ref.kind == Kind::Array) route_absent(*c, msg);  // moved away, or not here yet
    else LocationManager::hold(*c, e.index(), msg);
    return;
  }
  if (c->ref.kind == Kind::Array) {
    if (!(e.flags & kEnvUnordered) && !in_order(obj, msg)) return;  // kept until the earlier one comes
    const int src = CmiMsgSourcePe(msg);
    deliver_in_order(*c, obj, msg);
    drain_early(*c, obj, src);
    return;
  }
  ++k.processed;
  call_entry(*c, obj, msg);
  CmiFree(msg);
}

namespace {

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
  p | k.embedder_readonly;
  CmiFree(msg);
  if (k.embedder_readonly_arrived) k.embedder_readonly_arrived(k.embedder_readonly);
  k.initialized = true;
  std::vector<void*> early;
  early.swap(k.early);
  for (void* m : early) dispatch(m);
}

void broadcast_readonlies() {
  Core& k = core();
  PUP::er s = PUP::er::sizer();
  for (ReadonlyBase* r : registry().readonlies) r->pup(s);
  s | k.embedder_readonly;
  std::size_t total = CmiMsgHeaderSizeBytes + s.size();
  void* msg = CmiAlloc(total);
  PUP::er p = PUP::er::packer(CmiMsgPayload(msg), s.size());
  for (ReadonlyBase* r : registry().readonlies) r->pup(p);
  p | k.embedder_readonly;
  CmiSetHandler(msg, k.h_readonly);
  CmiSetExpedited(msg);
  CmiSyncBroadcastAndFree(total, msg);
}

// ---- start-up -----------------------------------------------------------------------------------
// The Converse handlers of layers above (ck::ConverseHandler), in name order: every PE runs
// the same binary, so each gets the same handler index everywhere.
void register_layer_handlers() {
  Registry& r = registry();
  std::vector<int> converse_index(r.handlers.size());
  for (std::size_t i = 0; i < r.handlers.size(); ++i) converse_index[i] = CmiRegisterHandler(r.handlers[i]);
  std::vector<std::uint32_t*> done;  // a slot named by two registrations is mapped once
  for (auto& [reg, fn] : r.handlers_in) {
    if (std::find(done.begin(), done.end(), reg.slot) != done.end()) continue;
    done.push_back(reg.slot);
    *reg.slot = static_cast<std::uint32_t>(converse_index[*reg.slot]);
  }
}

void core_start(int argc, char** argv) {
  Core& k = core();
  k.h_core = CmiRegisterHandler(core_handler);
  k.h_readonly = CmiRegisterHandler(readonly_handler);
  k.h_reduce = CmiRegisterHandler(reduce_handler);
  k.h_qd_start = CmiRegisterHandler(qd_start_handler);
  k.h_qd_probe = CmiRegisterHandler(qd_probe_handler);
  k.h_qd_reply = CmiRegisterHandler(qd_reply_handler);
  k.h_qd_report = CmiRegisterHandler(qd_report_handler);
  k.h_qd_reported = CmiRegisterHandler(qd_reported_handler);
  if (const char* u = std::getenv("UCHARM_UNDELIVERED")) {
    const std::string v = u;
    if (v == "error") k.undelivered_is_error = true;
    else if (v != "warn") CkAbort("UCHARM_UNDELIVERED=%s: use warn (the default) or error", u);
  }
  register_channel_handler();
  register_location_handlers();
  register_section_handlers();
  register_checkpoint_handler();
  k.h_lb = CmiRegisterHandler(lb_handler);
  parse_core_options(argc, argv);
  lb_start();
  k.h_device_sent = CmiRegisterHandler(device_sent_handler);
  k.h_device_arrived = CmiRegisterHandler(device_arrived_handler);
  assign_indices();
  register_layer_handlers();
  if (restart_requested()) {  // every PE rebuilds its part of a checkpoint; no main chare
    restart_load();
    return;
  }
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

void send_msg(void* msg, std::size_t total, const CollectionRef& ref, const SendOpts& o) {
  Core& k = core();
  Envelope& e = envelope(msg);
  CmiSetHandler(msg, k.h_core);
  if (o.priority) CmiSetPriority(msg, o.priority);
  if (o.expedited) CmiSetExpedited(msg);
  switch (e.kind) {
    case MsgKind::Broadcast:
      if (ref.kind == Kind::Chare) CkAbort("broadcast to a singleton chare: use its element proxy");
      if (trace::enabled()) trace_attach(msg, total, -1);  // one flow to every receiver
      if (ref.kind == Kind::Array) {  // the creating PE numbers array broadcasts
        const int root = array_root(ref.id);
        if (root == CmiMyPe()) {
          number_broadcast(msg);
        } else {
          ++k.sent;
          CmiSyncSendAndFree(root, total, msg);
        }
        return;
      }
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
    case MsgKind::Invoke:
      if (ref.kind == Kind::Array) {
        send_to_element(msg, total, ref, o);
        return;
      }
      [[fallthrough]];
    case MsgKind::Insert:
      if (e.kind == MsgKind::Insert) {
        // Through the array's root, which numbers its broadcasts: the new element gets exactly
        // the broadcasts sent after it was inserted, in whichever order they reach its PE.
        ++k.sent;
        const int root = array_root(ref.id);
        if (root == CmiMyPe()) {
          stamp_insertion(msg);
          CmiSyncSendAndFree(home_pe(ref, e.index()), total, msg);
        } else {
          CmiSyncSendAndFree(root, total, msg);
        }
        return;
      }
      [[fallthrough]];
    default: {
      ++k.sent;
      const int pe = LocationManager::pe_of(ref, e.index());
      if (e.kind == MsgKind::Invoke && trace::enabled()) trace_attach(msg, total, pe);
      CmiSyncSendAndFree(pe, total, msg);
    }
  }
}

void prepare_local(void* msg) {
  Core& k = core();
  CmiSetHandler(msg, k.h_core);
  ++k.sent;
}

int start(int argc, char** argv, ChareBase* (*make_main)(const MainArgs&)) {
  core().make_main = make_main;
  register_core_options();
  ConverseInit(argc, argv, core_start);
  return 0;
}

}  // namespace ck::detail

namespace ck {

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

void set_embedder_readonly(std::string value) { detail::core().embedder_readonly = std::move(value); }
const std::string& embedder_readonly() { return detail::core().embedder_readonly; }
void set_embedder_readonly_hook(void (*arrived)(const std::string& value)) {
  detail::core().embedder_readonly_arrived = arrived;
}

}  // namespace ck

namespace {
std::string unpack_context(const char* what) {
  return what ? " (arguments of " + ck::detail::entry_name(what) + ")" : std::string();
}
}  // namespace

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
  CkAbort("unpacking read past the end of a message%s (%zu + %zu > %zu bytes): sender and receiver "
          "disagree on the argument types, or the message is malformed",
          unpack_context(context_).c_str(), pos_, n, limit_);
}
void er::bad_length(std::uint64_t n, std::size_t min_bytes, const std::type_info& type) const {
  CkAbort("unpacking a malformed message%s: a %s claims %llu elements (at least %zu bytes each) but only "
          "%zu bytes remain",
          unpack_context(context_).c_str(), ck::detail::demangle(type.name()).c_str(),
          static_cast<unsigned long long>(n), min_bytes, limit_ - pos_);
}
void er::bad_value(std::uint64_t value, std::uint64_t limit, const char* what, const std::type_info& type) const {
  CkAbort("unpacking a malformed message%s: a %s has %s %llu, but it must be below %llu",
          unpack_context(context_).c_str(), ck::detail::demangle(type.name()).c_str(), what,
          static_cast<unsigned long long>(value), static_cast<unsigned long long>(limit));
}
void er::sliced(const std::type_info& declared, const std::type_info& held) {
  CkAbort("cannot pack a std::unique_ptr<%s> that holds a %s: PUP packs only the declared type, and the "
          "derived part would be lost (hold the derived type, or pup the object yourself)",
          ck::detail::demangle(declared.name()).c_str(), ck::detail::demangle(held.name()).c_str());
}
}  // namespace PUP
