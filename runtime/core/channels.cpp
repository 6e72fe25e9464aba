// The Channel API: two-sided transfers between two chares with no metadata message.
#include "internal.h"

#include <algorithm>
#include <cstring>

namespace ck {

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
  // The id must fit both in 32 bits and in the tag's id field (CmiChannelIdBits may be >= 32).
  const unsigned bits = std::min(CmiChannelIdBits(), 32u);
  const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
  return static_cast<std::uint32_t>((h ^ (h >> 29)) & mask);
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
  if (CmiChannelIdBits() < 32 && ((out_id | in_id) >> CmiChannelIdBits()))
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

}  // namespace ck
