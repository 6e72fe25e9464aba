// Futures: a value set once (from any PE) and read by a thread that suspends until then.
#include "internal.h"

namespace ck::detail {

void deliver_future(void* msg) {
  Core& k = core();
  const Envelope& e = envelope(msg);
  auto it = k.futures.find(e.entry);
  if (it == k.futures.end())
    CkAbort("a value arrived for future %u on PE %d, which was already read or released", e.entry, CmiMyPe());
  FutureSlot& f = it->second;
  if (f.handler) {
    f.handler(e.entry, msg);
    return;
  }
  if (f.msg) CkAbort("future %u on PE %d was set twice", e.entry, CmiMyPe());
  f.msg = msg;
  if (f.waiter) CthAwaken(f.waiter);
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
  if (it != k.futures.end() && it->second.handler) CkAbort("Future::get on future %u, which has a handler", id);
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

}  // namespace ck::detail

namespace ck {

std::uint32_t future_create(FutureHandler handler) {
  if (!handler) CkAbort("future_create: null handler");
  std::uint32_t id = detail::future_create();
  detail::core().futures[id].handler = handler;
  return id;
}

void future_release(std::uint32_t id) { detail::core().futures.erase(id); }

void future_send_raw(int pe, std::uint32_t id, void* msg) {
  if (pe < 0 || pe >= CkNumPes()) CkAbort("future_send_raw: PE %d is out of range [0, %d)", pe, CkNumPes());
  detail::future_set(pe, id, msg, CmiMsgSize(msg), 0);
}

}  // namespace ck
