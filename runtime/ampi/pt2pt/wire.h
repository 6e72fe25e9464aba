// The wire format of AMPI's point-to-point messages (WireHeader, WireExt in p2p.h): where
// the header, the extension and the data sit in a Converse message. Private to pt2pt/.
#pragma once

#include "pt2pt/p2p.h"

namespace ampi {
// A P2p goes away (~P2p): no route leads to it any more.
void route_forget(const P2p* q);
}  // namespace ampi

namespace ampi::pt2pt {

inline char* payload(void* msg) { return CmiMsgPayload(msg); }
inline std::size_t payload_length(void* msg) { return CmiMsgSize(msg) - CmiMsgHeaderSizeBytes; }
inline WireHeader& wire(void* msg) { return *reinterpret_cast<WireHeader*>(payload(msg)); }
inline bool has_ext(std::uint32_t flags) { return (flags & (kSync | kSyncAck | kDevice)) != 0; }
inline WireExt& ext(void* msg) {
  return *reinterpret_cast<WireExt*>(payload(msg) + sizeof(WireHeader));
}
inline std::size_t data_offset(std::uint32_t flags) {
  return sizeof(WireHeader) + (has_ext(flags) ? sizeof(WireExt) : 0);
}
inline char* data_of(void* msg) { return payload(msg) + data_offset(wire(msg).flags); }
inline std::size_t data_bytes(void* msg) {
  const WireHeader& h = wire(msg);
  return (h.flags & kDevice) ? ext(msg).bytes : payload_length(msg) - data_offset(h.flags);
}

// ---- sending (route.cpp) ----
// Receives every AMPI point-to-point message on its PE (a Converse handler).
void on_wire(void* msg);
using WireHandler = ck::ConverseHandler<&on_wire>;
// A message with `len` payload bytes for on_wire: the spare block (wire_free) when it is large
// enough, else a new one.
void* wire_alloc(std::size_t len);
// Frees a message this PE owns (received, reference count 1): the PE keeps the last one as
// its spare, which the next wire_alloc reuses (a ping-pong then allocates nothing: the
// pool's CmiAlloc and CmiFree cost about 100 instructions a message).
void wire_free(void* msg);
// Sends a message of rank r to world rank `dest` (header filled but for its pair number
// and sender, which this sets): MPI order holds whatever path it takes.
void wire_send(Rank* r, int dest_world, void* msg);
// A message's Converse header and WireHeader, for a send whose data stays where it is.
struct WireHead {
  alignas(8) char bytes[CmiMsgHeaderSizeBytes + sizeof(WireHeader)];
};
// Sends of at least this many bytes of contiguous host data go from the caller's buffer
// (wire_send_vector) when they are blocking; below it, copying into a message costs less
// than describing two parts to UCX.
inline constexpr std::size_t kVectorSendMin = 2048;
// Fills `head` (handler, header) for wire_send_vector.
void wire_head(WireHead& head, const WireHeader& h);
// wire_send of the message `head` + `bytes` at `data`, returning once `data` may be
// reused (CmiSyncVectorSend: copied by UCX alone where the link can take it at once).
void wire_send_vector(Rank* r, int dest_world, WireHead& head, const void* data, std::size_t bytes);
// wire_send_vector without the copy or the wait, for a message above the eager size
// (CmiVectorSendNoCopy): `data` is read until `done` runs here. False, having sent nothing
// (and taken no number), where it cannot.
bool wire_send_nocopy(Rank* r, int dest_world, WireHead& head, const void* data, std::size_t bytes, void* done);
// An acknowledgement or completion (kSyncAck): no number, no order.
void wire_send_unordered(int dest_world, void* msg);
// The PE this PE's table names for a rank (sends go there).
int route_pe(int dest_world);
// A direct (kDevice) message whose data was sent to this PE: a message carrying the data
// inline instead (the data lands in it later; `done` runs here then: nullptr means the new
// message itself is `done`, routed again when its data is in). Takes `msg`.
void* pull_direct(void* msg, void* done);
// pull_direct for a rank that is moving (P2p::moving): counted in P2p::direct_in until its
// data is in. Takes `msg`, returns the message to keep in its place.
void* pull_for_move(Rank* r, void* msg);

inline bool matches(const WireHeader& h, std::uint32_t context, int src, int tag) {
  return h.context == context && (src == MPI_ANY_SOURCE || src == h.src) && (tag == MPI_ANY_TAG || tag == h.tag);
}

}  // namespace ampi::pt2pt
