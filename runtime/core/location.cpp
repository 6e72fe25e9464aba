// The location manager: where array elements live once they can move.
//
// Every element has a home PE (its map's choice, fixed). The home always knows where the
// element is (each arrival tells it); a PE an element left keeps a forwarding record. A
// sender sends along its route (a cache: the home until told otherwise). A message that
// finds its element gone is forwarded once, along the record of the PE it reached (or to
// the home, which knows), and the PE that delivers it tells the sender where the element
// is now: after a move each sender pays one extra hop, then sends straight again.
//
// Order: each element message carries a sequence number per (sender PE, element); the
// element delivers a sender's messages in that order and keeps one that overtook an
// earlier one (a forwarded message is slower than a direct one) until the earlier one
// arrives. Forwarding keeps the message's first sender as its source PE.
#include "internal.h"

#include <cstring>

namespace ck::detail {

namespace {

// Location update (to the home) and correction (to a sender): the collection, the index,
// where the element is and how many moves it has made.
struct LocMsg {
  CollectionRef ref;
  Index idx;
  std::int32_t pe;
  std::uint32_t moves;
};

void* loc_msg(int handler, const CollectionRef& ref, const Index& idx, int pe, std::uint32_t moves) {
  const std::size_t total = CmiMsgHeaderSizeBytes + sizeof(LocMsg);
  void* m = CmiAlloc(total);
  LocMsg body{ref, idx, pe, moves};
  std::memcpy(CmiMsgPayload(m), &body, sizeof body);
  CmiSetHandler(m, handler);
  return m;
}

LocMsg read_loc(void* m) {
  LocMsg body;
  std::memcpy(&body, CmiMsgPayload(m), sizeof body);
  return body;
}

// At the home: the element is at `pe` after `moves` moves (updates may arrive out of order).
void loc_update_handler(void* m) {
  const LocMsg b = read_loc(m);
  CmiFree(m);
  Collection& c = ensure_collection(b.ref, nullptr);
  if (c.elements.count(b.idx)) return;  // it came back here: the update is older than that
  auto it = c.where.find(b.idx);
  if (it != c.where.end() && it->second.moves > b.moves) return;  // an older update
  if (b.pe == CmiMyPe()) c.where.erase(b.idx);
  else c.where[b.idx] = LocRecord{b.pe, b.moves};
}

// At a sender: its route to the element was stale.
void loc_correct_handler(void* m) {
  const LocMsg b = read_loc(m);
  CmiFree(m);
  ++core().loc_counts.corrections;
  Route& r = core().routes[RouteKey{b.ref.id, b.idx}];
  if (r.pe >= 0 && r.moves > b.moves) return;  // already knows a later place
  r.pe = b.pe;
  r.moves = b.moves;
}

// After an element is destroyed: senders start its order afresh for an element inserted
// again at the same index.
struct ForgetMsg {
  std::uint64_t collection;
  Index idx;
};
void forget_handler(void* m) {
  ForgetMsg b;
  std::memcpy(&b, CmiMsgPayload(m), sizeof b);
  CmiFree(m);
  core().routes.erase(RouteKey{b.collection, b.idx});
  core().last_route = nullptr;
}

std::uint16_t* expected_seq(ElementRuntime& rt, int src) {
  for (auto& [pe, next] : rt.next_seq)
    if (pe == src) return &next;
  return nullptr;
}

}  // namespace

void register_location_handlers() {
  Core& k = core();
  k.h_loc_update = CmiRegisterHandler(loc_update_handler);
  k.h_loc_correct = CmiRegisterHandler(loc_correct_handler);
  k.h_forget = CmiRegisterHandler(forget_handler);
}

void send_to_element(void* msg, std::size_t total, const CollectionRef& ref, const SendOpts& o) {
  Core& k = core();
  Envelope& e = envelope(msg);
  const Index idx = e.index();
  // One entry per element this PE talks to (allocated once); the last one is cached:
  // consecutive sends mostly go to one element.
  const RouteKey key{ref.id, idx};
  if (!k.last_route || !(k.last_route_key == key)) {
    k.last_route = &k.routes[key];
    k.last_route_key = key;
  }
  Route& r = *k.last_route;
  const int pe = r.pe >= 0 ? r.pe : home_pe(ref, idx);
  if (o.priority || o.expedited) e.flags = static_cast<std::uint8_t>(e.flags | kEnvUnordered);  // not held for order
  else e.seq = r.seq++;
  ++k.sent;
  if (k.lb_graph && k.running)  // the communication graph, for MetisLB
    k.comm[{RouteKey{k.running->ckRef().id, k.running->ckIndex()}, RouteKey{ref.id, idx}}] += static_cast<double>(total);
  if (trace::enabled()) trace_attach(msg, total, pe);
  CmiSyncSendAndFree(pe, total, msg);
}

void trace_attach(void*& msg, std::size_t& total, int dest_pe) {
  if (envelope(msg).flags & kEnvTraced) return;
  const std::uint64_t id = trace::send(dest_pe, total);
  if (id == 0) return;
  void* longer = CmiAlloc(total + sizeof(std::uint64_t));
  std::memcpy(longer, msg, total);
  CmiFree(msg);
  msg = longer;
  std::memcpy(static_cast<char*>(msg) + total, &id, sizeof id);
  total += sizeof id;
  envelope(msg).flags = static_cast<std::uint8_t>(envelope(msg).flags | kEnvTraced);
}

namespace {
// A GPU Messaging invocation's device data went to this PE's network endpoint; only its host
// part could follow the element: stop with the reason rather than wait forever.
void refuse_device_forward(const Collection& c, const Envelope& e, const Index& idx) {
  if (e.kind != MsgKind::Invoke || core_entries()[e.entry].device_params == 0) return;
  CkAbort("a CkDeviceBuffer message for element %s of %s reached PE %d, where the element is not: device "
          "data cannot be forwarded; send device buffers to an element that is not moving (after "
          "ResumeFromSync: the balancer updates every PE's routes)",
          idx.str().c_str(), class_name(c.cls), CmiMyPe());
}
}  // namespace

void route_absent(Collection& c, void* msg) {
  Envelope& e = envelope(msg);
  const Index idx = e.index();
  const int me = CmiMyPe();
  auto rec = c.where.find(idx);
  if (rec != c.where.end() && rec->second.pe != me) {  // it left from here, or the home knows where it is
    refuse_device_forward(c, e, idx);
    ++core().loc_counts.forwarded;
    e.flags = static_cast<std::uint8_t>(e.flags | kEnvForwarded);
    CmiForwardAndFree(rec->second.pe, msg);
    return;
  }
  const int home = home_pe(c.ref, idx);
  if (home != me && !(e.flags & kEnvForwarded)) {  // a stale route: the home knows
    refuse_device_forward(c, e, idx);
    ++core().loc_counts.forwarded;
    e.flags = static_cast<std::uint8_t>(e.flags | kEnvForwarded);
    CmiForwardAndFree(home, msg);
    return;
  }
  // At the home before the element exists, or sent on by a PE whose record names this PE:
  // the element is on its way here (or not inserted yet).
  LocationManager::hold(c, idx, msg);
}

bool in_order(ChareBase* obj, void* msg) {
  const Envelope& e = envelope(msg);
  ElementRuntime& rt = ElementAccess::rt(obj);
  const int src = CmiMsgSourcePe(msg);
  std::uint16_t* next = expected_seq(rt, src);
  if (!next) {
    // The first message from this sender. Before the element ever moved nothing can
    // overtake (links keep order and nothing was forwarded); after, a sender's numbering
    // starts at 0, so anything else overtook its first message.
    if (rt.moves > 0 && e.seq != 0) {
      rt.early.push_back(msg);
      return false;
    }
    rt.next_seq.emplace_back(src, static_cast<std::uint16_t>(e.seq + 1));
    return true;
  }
  const auto ahead = static_cast<std::int16_t>(e.seq - *next);
  if (ahead > 0 && rt.moves > 0) {
    rt.early.push_back(msg);
    return false;
  }
  if (ahead >= 0) *next = static_cast<std::uint16_t>(e.seq + 1);
  return true;
}

void drain_early(Collection& c, ChareBase* obj, int src) {
  // Look again for the next message of `src` each time one ran: it may release another.
  for (;;) {
    ElementRuntime& rt = ElementAccess::rt(obj);
    if (rt.early.empty() || rt.leaving_to >= 0) return;
    std::uint16_t* next = expected_seq(rt, src);
    auto it = rt.early.begin();
    for (; it != rt.early.end(); ++it)
      if (CmiMsgSourcePe(*it) == src && (next ? envelope(*it).seq == *next : envelope(*it).seq == 0)) break;
    if (it == rt.early.end()) return;
    void* m = *it;
    rt.early.erase(it);
    if (!in_order(obj, m)) return;  // cannot happen: it is next
    deliver_in_order(c, obj, m);
  }
}

void correct_sender(const Collection& c, const Index& idx, int src, std::uint32_t moves) {
  if (src == CmiMyPe()) {
    Route& r = core().routes[RouteKey{c.ref.id, idx}];
    r.pe = CmiMyPe();
    r.moves = moves;
    return;
  }
  CmiSyncSendAndFree(src, CmiMsgHeaderSizeBytes + sizeof(LocMsg),
                     loc_msg(core().h_loc_correct, c.ref, idx, CmiMyPe(), moves));
}

void arrived_here(Collection& c, ChareBase* obj) {
  const Index& idx = obj->ckIndex();
  const ElementRuntime& rt = ElementAccess::rt(obj);
  c.where.erase(idx);  // no longer forwarding from here
  const int home = home_pe(c.ref, idx);
  if (home != CmiMyPe())
    CmiSyncSendAndFree(home, CmiMsgHeaderSizeBytes + sizeof(LocMsg),
                       loc_msg(core().h_loc_update, c.ref, idx, CmiMyPe(), rt.moves));
  // This PE's own route: straight here.
  Route& r = core().routes[RouteKey{c.ref.id, idx}];
  r.pe = CmiMyPe();
  r.moves = rt.moves;
}

void forget_routes(std::uint64_t collection, const Index& idx) {
  const std::size_t total = CmiMsgHeaderSizeBytes + sizeof(ForgetMsg);
  void* m = CmiAlloc(total);
  ForgetMsg b{collection, idx};
  std::memcpy(CmiMsgPayload(m), &b, sizeof b);
  CmiSetHandler(m, core().h_forget);
  CmiSyncBroadcastAllAndFree(total, m);
}

}  // namespace ck::detail

namespace ck {
LocationCounts location_stats() { return detail::core().loc_counts; }
}  // namespace ck
