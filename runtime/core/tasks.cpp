// Coroutine entry methods (task.h): where suspended co_awaits wait, how entry messages and
// values are handed to them, and what happens to them when their element goes.
//
// A co_await that must wait links its WaitNode (inside the awaiter, in the coroutine frame)
// into its element's TaskState and, for a value, into a ValueSlot: no allocation per wait.
// Frames come from the default allocator, once per coroutine call (not per co_await).
#include "internal.h"
#include "task_internal.h"

#include <cstdio>
#include <exception>

namespace ck::detail {

// A message of an awaited entry that no co_await has taken yet.
struct Kept {
  void* msg;
  std::uint32_t entry;
  std::int64_t ref;
  bool device;
  std::vector<CkDeviceBuffer> dests;
};

struct TaskState {
  const std::type_info* cls = nullptr;  // for messages once the element is being destroyed
  Index idx;
  WaitNode* head = nullptr;   // suspended co_awaits of the element's coroutines, oldest first
  WaitNode* tail = nullptr;
  int suspended = 0;
  std::vector<Kept> inbox;    // arrival order
};

// A future id whose values (FutureHandler) go to coroutines.
struct ValueSlot {
  std::uint32_t id = 0;
  bool one_shot = false;   // from the pool: exactly one value, then back to the pool
  bool future = false;     // a Future<T>'s own id, being awaited
  bool abandoned = false;  // one-shot, closed before its value came: dropped on arrival
  bool in_pool = false;
  int received = 0;
  std::vector<void*> values;  // arrived, not yet awaited: [head, end)
  std::size_t head = 0;
  WaitNode* waiter = nullptr;
};

namespace {

// This PE's coroutine state (non-SMP: one per process, like Core).
struct TaskCore {
  const char* starting = nullptr;  // the entry whose coroutine is being created
  std::unordered_map<std::uint32_t, std::unique_ptr<ValueSlot>> slots;  // by future id
  std::vector<ValueSlot*> pool;    // one-shot slots free for reuse
};
TaskCore& tc() {
  // Never destroyed: elements and their frames may still be around while the process exits.
  static TaskCore* t = new TaskCore;
  return *t;
}

TaskState& state_of(ChareBase* obj) {
  auto& p = ElementAccess::rt(obj).tasks;
  if (!p) {
    p.reset(new TaskState);
    p->cls = &typeid(*obj);
    p->idx = obj->ckIndex();
  }
  return *p;
}

void link(TaskState& t, WaitNode& n) {
  n.owner = &t;
  n.prev = t.tail;
  n.next = nullptr;
  (t.tail ? t.tail->next : t.head) = &n;
  t.tail = &n;
  ++t.suspended;
}

void unlink(WaitNode& n) {
  TaskState& t = *n.owner;
  (n.prev ? n.prev->next : t.head) = n.next;
  (n.next ? n.next->prev : t.tail) = n.prev;
  n.owner = nullptr;
  n.prev = n.next = nullptr;
  --t.suspended;
}

std::string where(const std::type_info* cls, const Index& idx) {
  return demangle(cls->name()) + " " + idx.str() + " on PE " + std::to_string(CmiMyPe());
}

// FutureHandler of every slot: a value arrived (msg is ours).
void on_value(std::uint32_t id, void* msg) {
  TaskCore& t = tc();
  auto it = t.slots.find(id);
  if (it == t.slots.end()) {
    CmiFree(msg);
    CkAbort("a value arrived for awaitable %u on PE %d, which was already closed", id, CmiMyPe());
  }
  ValueSlot& s = *it->second;
  if (s.in_pool)
    CkAbort("a second value arrived for a one-value awaitable (ck::recv/ck::send's callback, id %u) on PE %d", id,
            CmiMyPe());
  ++s.received;
  if (s.abandoned) {  // its owner went first: drop the value, the slot can be reused now
    CmiFree(msg);
    s.abandoned = false;
    s.received = 0;
    s.in_pool = true;
    t.pool.push_back(&s);
    return;
  }
  if (WaitNode* w = s.waiter) {
    s.waiter = nullptr;
    w->linked = false;
    if (w->owner) unlink(*w);
    w->msg = msg;
    w->owned = true;
    w->h.resume();
    return;
  }
  s.values.push_back(msg);
}

ValueSlot* new_slot(std::uint32_t id) {
  auto s = std::make_unique<ValueSlot>();
  s->id = id;
  ValueSlot* p = s.get();
  tc().slots.emplace(id, std::move(s));
  return p;
}

}  // namespace

// ---- promises ---------------------------------------------------------------------------------
void set_task_starting(const char* entry_name) { tc().starting = entry_name; }

const char* task_starting() {
  TaskCore& t = tc();
  const char* n = t.starting;
  t.starting = nullptr;
  return n;
}

void task_exception(ChareBase* obj, const char* entry) noexcept {
  std::string what;
  try {
    throw;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "(not a std::exception)";
  }
  const std::string who = entry ? "coroutine entry method " + entry_name(entry) : std::string("a ck::task<> coroutine");
  const std::string of = obj ? " of " + where(&typeid(*obj), obj->ckIndex()) : " on PE " + std::to_string(CmiMyPe());
  CkAbort("an exception escaped %s%s: %s (catch it inside the coroutine)", who.c_str(), of.c_str(), what.c_str());
}

void not_a_chare_coroutine(const char* what) {
  CkAbort("co_await %s in a coroutine that is not a member function of a chare: the awaited messages belong "
          "to an element", what);
}

// ---- the next message of an awaited entry ---------------------------------------------------
bool entry_wait(WaitNode& n) {
  const EntryInfo& info = core_entries()[n.entry];
  if (*info.cls != typeid(*n.obj) && !info.accepts(n.obj))
    CkAbort("co_await ck::next<%s> in a coroutine of a %s, which has no such entry method",
            entry_name(info.name).c_str(), demangle(typeid(*n.obj).name()).c_str());
  TaskState& t = state_of(n.obj);
  for (auto it = t.inbox.begin(); it != t.inbox.end(); ++it) {
    if (it->entry != n.entry || (!n.any_ref && it->ref != n.ref)) continue;
    n.msg = it->msg;
    n.owned = true;
    n.device = it->device;
    n.dests = std::move(it->dests);
    t.inbox.erase(it);
    return false;
  }
  link(t, n);
  n.linked = true;
  return true;
}

void entry_handover(WaitNode& n) {
  struct Free {  // a kept message goes even if the body throws
    void* m;
    ~Free() {
      if (m) CmiFree(m);
    }
  } f{n.owned ? n.msg : nullptr};
  void* msg = n.msg;
  n.msg = nullptr;
  n.owned = false;
  run_entry_body(n.obj, n.entry, msg, n.lent_dests ? n.lent_dests : n.device ? &n.dests : nullptr);
  n.lent_dests = nullptr;
}

void task_arrived(ChareBase* obj, std::uint32_t entry, void* msg, const std::vector<CkDeviceBuffer>* dests) {
  const EntryInfo& info = core_entries()[entry];
  std::int64_t ref = 0;
  if (info.ref_of && !info.ref_of(args_of(msg), args_len(msg), ref))
    CkAbort("a message for awaited entry %s is too short to hold its reference number (malformed)",
            entry_name(info.name).c_str());
  TaskState& t = state_of(obj);
  for (WaitNode* w = t.head; w; w = w->next) {
    if (w->slot || w->entry != entry || (!w->any_ref && w->ref != ref)) continue;
    unlink(*w);
    w->linked = false;
    w->msg = msg;  // lent: the caller frees it after this returns, and the body runs before
    w->lent_dests = dests;
    w->h.resume();
    return;
  }
  CmiReference(msg);  // kept: the caller frees only its own reference
  t.inbox.push_back(Kept{msg, entry, ref, dests != nullptr, dests ? *dests : std::vector<CkDeviceBuffer>{}});
}

// ---- values -------------------------------------------------------------------------------------
ValueSlot* slot_open(bool one_shot) {
  TaskCore& t = tc();
  if (one_shot && !t.pool.empty()) {
    ValueSlot* s = t.pool.back();
    t.pool.pop_back();
    s->in_pool = false;
    return s;
  }
  ValueSlot* s = new_slot(ck::future_create(&on_value));
  s->one_shot = one_shot;
  return s;
}

ValueSlot* slot_for_future(std::uint32_t id, int pe) {
  if (pe != CmiMyPe())
    CkAbort("co_await on a Future of PE %d from PE %d: a future is awaited where it was made", pe, CmiMyPe());
  auto& futures = core().futures;
  auto it = futures.find(id);
  if (it == futures.end()) CkAbort("co_await on future %u, which is unknown on PE %d (already read?)", id, CmiMyPe());
  if (it->second.handler || it->second.waiter)
    CkAbort("co_await on future %u on PE %d, which another thread or coroutine already waits for", id, CmiMyPe());
  ValueSlot* s = new_slot(id);
  s->future = true;
  if (it->second.msg) {  // already set: the value waits in the slot
    s->values.push_back(it->second.msg);
    it->second.msg = nullptr;
    ++s->received;
  }
  it->second.handler = &on_value;
  return s;
}

void slot_close(ValueSlot* s) noexcept {
  TaskCore& t = tc();
  if (WaitNode* w = s->waiter) {  // its owner goes while a coroutine waits on it
    s->waiter = nullptr;
    w->slot = nullptr;
    if (!w->owner) {  // no element will destroy that frame: do it now
      std::fprintf(stderr, "ucharm: warning: a ck::ResumeCallback was destroyed while a coroutine waited on it "
                           "(PE %d): that coroutine is destroyed without resuming\n", CmiMyPe());
      w->linked = false;
      w->h.destroy();
    }
  }
  for (std::size_t i = s->head; i < s->values.size(); ++i) CmiFree(s->values[i]);
  s->values.clear();
  s->head = 0;
  if (s->one_shot) {
    if (s->received == 0) {
      s->abandoned = true;  // its value is still to come: on_value recycles the slot
    } else {
      s->received = 0;
      s->in_pool = true;
      t.pool.push_back(s);
    }
    return;
  }
  const std::uint32_t id = s->id;
  ck::future_release(id);
  t.slots.erase(id);
}

std::uint32_t slot_id(const ValueSlot* s) { return s->id; }
bool slot_ready(const ValueSlot* s) { return s->head < s->values.size(); }

bool slot_wait(ValueSlot* s, WaitNode& n) {
  if (s->head < s->values.size()) {
    n.msg = s->values[s->head++];
    n.owned = true;
    if (s->head == s->values.size()) {
      s->values.clear();
      s->head = 0;
    }
    return false;
  }
  if (s->waiter) CkAbort("two coroutines co_await one ck::ResumeCallback at once (PE %d)", CmiMyPe());
  s->waiter = &n;
  n.slot = s;
  n.linked = true;
  if (n.obj) link(state_of(n.obj), n);
  return true;
}

void value_type_mismatch(const char* expected) {
  CkAbort("co_await: the value sent to this awaitable has other types than its (%s)", expected);
}

void WaitNode::wait_cancel(WaitNode& n) {
  if (n.linked) {
    if (n.slot && n.slot->waiter == &n) n.slot->waiter = nullptr;
    if (n.owner) unlink(n);
    n.linked = false;
  }
  if (n.msg && n.owned) CmiFree(n.msg);
  n.msg = nullptr;
}

// ---- the element goes ---------------------------------------------------------------------------
std::string task_obstacle(ChareBase* obj) {
  const auto& p = ElementAccess::rt(obj).tasks;
  if (!p) return {};
  if (p->suspended > 0)
    return std::to_string(p->suspended) +
           " coroutine(s) of it are suspended in co_await (a coroutine frame cannot be packed): let them finish "
           "first (e.g. co_return before AtSync, and start a new coroutine in ResumeFromSync)";
  if (!p->inbox.empty())
    return std::to_string(p->inbox.size()) + " message(s) for its awaited entries wait for a co_await ck::next";
  return {};
}

void TaskStateFree::operator()(TaskState* t) const noexcept {
  if (t->suspended > 0) {
    std::fprintf(stderr, "ucharm: warning: %s was destroyed with %d coroutine(s) suspended in co_await: their "
                         "frames are destroyed without resuming\n", where(t->cls, t->idx).c_str(), t->suspended);
    // Destroying a frame destroys its awaiter, whose WaitNode unlinks itself from the list.
    for (int n = t->suspended; n > 0 && t->head; --n) t->head->h.destroy();
  }
  if (!t->inbox.empty())
    std::fprintf(stderr, "ucharm: warning: %s was destroyed with %zu message(s) for awaited entries never awaited\n",
                 where(t->cls, t->idx).c_str(), t->inbox.size());
  for (Kept& k : t->inbox) CmiFree(k.msg);
  delete t;
}

}  // namespace ck::detail
