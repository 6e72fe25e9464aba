// Array broadcasts: the collection's creating PE numbers them and sends them down the
// broadcast tree; every element records the last number it got. An element that moves
// carries that number: the PE it reaches delivers the broadcasts it already passed on to
// others (from its short history), and skips ones the element got before leaving.
#include "internal.h"

namespace ck::detail {

namespace {
bool newer(std::uint16_t a, std::uint16_t b) { return static_cast<std::int16_t>(a - b) > 0; }
}  // namespace

void number_broadcast(void* msg) {
  Core& k = core();
  Envelope& e = envelope(msg);
  // By collection id: a broadcast may be sent before the creation message ran here.
  e.seq = ++k.bcast_serials[e.collection];
  k.sent += static_cast<std::uint64_t>(CmiNumPes());
  CmiSyncBroadcastAllAndFree(CmiMsgSize(msg), msg);
}

void stamp_insertion(void* msg) {
  Envelope& e = envelope(msg);
  auto it = core().bcast_serials.find(e.collection);
  e.seq = it == core().bcast_serials.end() ? 0 : it->second;
  e.flags = static_cast<std::uint8_t>(e.flags | kEnvStamped);
}

void broadcast_numbered(Collection& c, void* msg) {
  const std::uint16_t serial = envelope(msg).seq;
  c.bcast_latest = serial;
  CmiReference(msg);  // kept for elements that arrive having missed it
  c.bcast_history.push_back(msg);
  if (c.bcast_history.size() > kBcastHistory) {
    CmiFree(c.bcast_history.front());
    c.bcast_history.erase(c.bcast_history.begin());
  }
  // Entries cannot remove elements while this runs (migration and destruction wait for
  // their own messages), but one may insert: walk by position.
  for (std::size_t i = 0; i < c.local.size(); ++i) {
    ChareBase* obj = c.local[i];
    ElementRuntime& rt = ElementAccess::rt(obj);
    if (!newer(serial, rt.bcast_seen)) continue;  // it got this one before it came here
    rt.bcast_seen = serial;
    call_entry(c, obj, msg);
  }
  CmiFree(msg);
}

void broadcast_catch_up(Collection& c, ChareBase* obj) {
  ElementRuntime& rt = ElementAccess::rt(obj);
  if (!newer(c.bcast_latest, rt.bcast_seen)) return;
  for (void* m : c.bcast_history) {
    const std::uint16_t serial = envelope(m).seq;
    if (!newer(serial, rt.bcast_seen)) continue;
    if (serial != static_cast<std::uint16_t>(rt.bcast_seen + 1))
      CkAbort("element %s of %s arrived on PE %d having missed broadcast %u, which is no longer kept here "
              "(the last %zu are): it was in transit for too many broadcasts",
              obj->ckIndex().str().c_str(), class_name(c.cls), CmiMyPe(),
              static_cast<unsigned>(rt.bcast_seen + 1), kBcastHistory);
    rt.bcast_seen = serial;
    call_entry(c, obj, m);
  }
}

}  // namespace ck::detail
