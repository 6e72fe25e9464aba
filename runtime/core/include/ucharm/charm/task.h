// Coroutine entry methods: an entry method (or any member function of a chare) returning
// ck::task<> may co_await
//   - a ck::Future<T> of this PE:                 T v = co_await f;
//   - a callback's result (ck::ResumeCallback):   double s = co_await done;  (done.callback())
//   - a channel transfer:                         co_await ck::recv(ch, buf, bytes);
//   - the next message of an awaited entry E with reference number r (E's first argument):
//                                                 co_await ck::next<&C::E>(r);
// Stackless (C++20): the coroutine frame is the only state, no user-level thread or stack.
// Part of <ucharm/charm.h>, the header to include.
#pragma once

#include <ucharm/charm/channel.h>
#include <ucharm/charm/future.h>

#include <coroutine>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#pragma GCC visibility push(default)

namespace ck {

template <class T = void>
class task;

namespace detail {

struct TaskState;  // tasks.cpp: an element's suspended waits and kept messages
struct ValueSlot;  // tasks.cpp: where values sent to a callback wait to be awaited

// One suspended co_await. It lives in the coroutine frame (inside the awaiter), so a wait
// allocates nothing; while suspended it is linked into its element's list (and, for a
// value, into its slot), which is how a destroyed element finds and frees its frames.
struct WaitNode {
  std::coroutine_handle<> h;
  ChareBase* obj = nullptr;    // the chare whose member the coroutine is (may be null)
  TaskState* owner = nullptr;  // linked in owner's list while suspended
  WaitNode* prev = nullptr;
  WaitNode* next = nullptr;
  ValueSlot* slot = nullptr;   // waits for a value here (null: for an entry message)
  std::uint32_t entry = 0;     // the awaited entry
  bool any_ref = false;        // next<&C::E>(): any reference number
  bool linked = false;         // registered with its source (element list or slot)
  bool device = false;         // msg came with device buffers (dests)
  bool owned = false;          // msg is ours to free (kept, or a value); else the dispatcher's,
                               // valid while it resumes this coroutine
  std::int64_t ref = 0;
  void* msg = nullptr;         // handed over: the message (entry) or value
  std::vector<CkDeviceBuffer> dests;  // GPU Messaging: where the device arguments landed (kept)
  const std::vector<CkDeviceBuffer>* lent_dests = nullptr;  // the same, lent with msg

  WaitNode() = default;
  WaitNode(const WaitNode&) = delete;
  WaitNode& operator=(const WaitNode&) = delete;
  ~WaitNode() {
    if (linked || (msg && owned)) wait_cancel(*this);  // the frame is destroyed while waiting
  }
  static void wait_cancel(WaitNode& n);
};

// The coroutine's chare and entry, recorded by the promise. The entry invoker names the
// entry (for error messages) just before the call: task_starting() takes that name.
const char* task_starting();  // set_task_starting (entry.h) names it
[[noreturn]] void task_exception(ChareBase* obj, const char* entry) noexcept;

// An awaited entry's message: take a kept one now (false: do not suspend), or register n
// with the element (true: suspend until one arrives).
bool entry_wait(WaitNode& n);
// Runs the entry's body on the message handed over (then frees it when it was kept).
void entry_handover(WaitNode& n);
[[noreturn]] void not_a_chare_coroutine(const char* what);

// Value slots: a future id whose values go to the slot (in order) instead of a thread.
ValueSlot* slot_open(bool one_shot);       // a fresh id (multi-shot) or a pooled one (one value)
ValueSlot* slot_for_future(std::uint32_t id, int pe);  // a Future<T> of this PE being awaited
void slot_close(ValueSlot* s) noexcept;
std::uint32_t slot_id(const ValueSlot* s);
bool slot_ready(const ValueSlot* s);
bool slot_wait(ValueSlot* s, WaitNode& n);  // false: a value was there (in n.msg)
// Unpacks the value message into t (checking its type), frees it.
[[noreturn]] void value_type_mismatch(const char* expected);
template <class Tuple>
void take_value(void* msg, Tuple& t) {
  if (envelope(msg).sig != sig_of<Tuple>::hash()) {
    CmiFree(msg);
    value_type_mismatch(sig_of<Tuple>::names().c_str());
  }
  PUP::er p = PUP::er::unpacker(raw_payload(msg), raw_length(msg));
  std::apply([&](auto&... a) { ((p | a), ...); }, t);
  CmiFree(msg);
}

}  // namespace detail

// The return type of a coroutine entry method. It starts at once (like any entry method),
// runs to its first co_await that has to wait, and its frame goes when it finishes. The
// task object itself carries nothing: nobody awaits a task<> (it is not a sub-coroutine).
template <>
class task<void> {
 public:
  struct promise_type {
    ChareBase* obj = nullptr;
    const char* entry = nullptr;
    // A member coroutine of a chare: the object comes first (a free function: no chare).
    template <class Self, class... A>
    explicit promise_type(Self& self, A&...) noexcept : entry(detail::task_starting()) {
      using S = std::remove_cvref_t<Self>;  // GCC deduces Self = C& for the object parameter
      if constexpr (std::is_base_of_v<ChareBase, S>) obj = const_cast<S*>(&self);
    }
    promise_type() noexcept : entry(detail::task_starting()) {}
    task get_return_object() noexcept { return task{}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    // An exception that leaves a coroutine stops the job, naming the entry and the what().
    void unhandled_exception() noexcept { detail::task_exception(obj, entry); }
  };
};
template <class T>
class task {
  static_assert(std::is_void_v<T>, "ck::task<T>: only ck::task<> (no value) is supported");
};

namespace detail {
using TaskHandle = std::coroutine_handle<task<>::promise_type>;

// co_await on values: a slot (future, ResumeCallback, channel completion).
template <class... A>
struct ValueAwaiter {
  ValueSlot* slot;
  WaitNode node;
  bool await_ready() const { return false; }  // slot_wait decides (no suspension if a value is there)
  bool await_suspend(TaskHandle h) {
    node.h = h;
    node.obj = h.promise().obj;
    return slot_wait(slot, node);
  }
  auto await_resume() {
    void* m = node.msg;
    node.msg = nullptr;
    std::tuple<A...> t;
    take_value(m, t);
    if constexpr (sizeof...(A) == 0) return;
    else if constexpr (sizeof...(A) == 1) return std::move(std::get<0>(t));
    else return t;
  }
};
}  // namespace detail

// A callback target on this PE that coroutines co_await. Every value sent to callback()
// is kept, in order, and each co_await takes the next one (it waits if none is there):
//   ck::ResumeCallback<double> total;
//   contribute(x, ck::Reducer::sum, total.callback());
//   double sum = co_await total;
// co_await gives void for ResumeCallback<>, the value for one type, a std::tuple for more.
// Values that arrive after it is destroyed stop the job ("already read or released").
template <class... A>
class ResumeCallback {
 public:
  ResumeCallback() : slot_(detail::slot_open(false)) {}
  ResumeCallback(ResumeCallback&& o) noexcept : slot_(o.slot_) { o.slot_ = nullptr; }
  ResumeCallback& operator=(ResumeCallback&& o) noexcept {
    if (this != &o) {
      if (slot_) detail::slot_close(slot_);
      slot_ = o.slot_;
      o.slot_ = nullptr;
    }
    return *this;
  }
  ~ResumeCallback() {
    if (slot_) detail::slot_close(slot_);
  }
  CkCallback callback() const { return CkCallback::future(CkMyPe(), detail::slot_id(slot_)); }
  bool ready() const { return detail::slot_ready(slot_); }
  detail::ValueAwaiter<A...> operator co_await() { return detail::ValueAwaiter<A...>{slot_, {}}; }

 private:
  struct OneShot {};
  ResumeCallback(OneShot) : slot_(detail::slot_open(true)) {}
  template <class... B>
  friend ResumeCallback<B...> one_shot();
  detail::ValueSlot* slot_;
};

// A callback target for exactly one value, from a pool of ids (no allocation once warm):
// what the channel forms below return.
template <class... A>
ResumeCallback<A...> one_shot() {
  return ResumeCallback<A...>(typename ResumeCallback<A...>::OneShot{});
}

// Channel transfers as awaitables: the transfer is issued now; co_await gives the byte
// count once the buffer holds the data (recv) or may be reused (send). Issue several,
// then await each:  auto r = ck::recv(ch, buf, n);  ...  co_await r;
inline ResumeCallback<std::size_t> recv(CkChannel& ch, void* ptr, std::size_t size, void* stream = nullptr) {
  auto r = one_shot<std::size_t>();
  ch.recv(ptr, size, r.callback(), stream);
  return r;
}
inline ResumeCallback<std::size_t> send(CkChannel& ch, const void* ptr, std::size_t size, void* stream = nullptr) {
  auto r = one_shot<std::size_t>();
  ch.send(ptr, size, r.callback(), stream);
  return r;
}

// co_await on a Future<T> of this PE: its value (the future is then used up).
template <class T>
auto operator co_await(const Future<T>& f) {
  struct Awaiter : detail::ValueAwaiter<T> {
    ~Awaiter() { detail::slot_close(this->slot); }
  };
  return Awaiter{{detail::slot_for_future(f.id(), f.pe()), {}}};
}

namespace detail {
// co_await next<&C::E>(r): the next message of awaited entry E whose reference number
// (E's first argument) is r. Messages that came before wait in the element, in arrival
// order; E's body runs on the message when it is handed over, inside the co_await.
struct EntryAwaiter {
  WaitNode node;
  EntryAwaiter(std::uint32_t entry, std::int64_t ref, bool any) {
    node.entry = entry;
    node.ref = ref;
    node.any_ref = any;
  }
  bool await_ready() const { return false; }  // entry_wait decides (no suspension if kept)
  bool await_suspend(TaskHandle h) {
    node.h = h;
    node.obj = h.promise().obj;
    if (!node.obj) not_a_chare_coroutine("ck::next<&C::entry>");
    return entry_wait(node);
  }
  void await_resume() { entry_handover(node); }
};
}  // namespace detail

template <auto Ep>
detail::EntryAwaiter next(std::int64_t ref) {
  using T = detail::member_traits<decltype(Ep)>;
  static_assert(detail::is_awaited_entry<typename T::cls, Ep>(),
                "ck::next<&C::f>: list f in static constexpr auto awaited_entries() { return ck::entries<&C::f>; }");
  static_assert(T::arity >= 1 && std::is_integral_v<std::tuple_element_t<0, typename T::args>> &&
                    !std::is_same_v<std::tuple_element_t<0, typename T::args>, bool>,
                "ck::next<&C::f>(ref): f's first parameter is its reference number, an integer "
                "(await any message of f with ck::next<&C::f>())");
  return detail::EntryAwaiter(detail::Entry<Ep>::id(), ref, false);
}
template <auto Ep>
detail::EntryAwaiter next() {
  using T = detail::member_traits<decltype(Ep)>;
  static_assert(detail::is_awaited_entry<typename T::cls, Ep>(),
                "ck::next<&C::f>: list f in static constexpr auto awaited_entries() { return ck::entries<&C::f>; }");
  return detail::EntryAwaiter(detail::Entry<Ep>::id(), 0, true);
}

namespace detail {
// Migration and checkpoints: why this element cannot be packed now (empty: it can).
std::string task_obstacle(ChareBase* obj);
}  // namespace detail

}  // namespace ck

#pragma GCC visibility pop
