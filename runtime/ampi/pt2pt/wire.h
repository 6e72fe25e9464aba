// The wire format of AMPI's point-to-point messages (WireHeader, WireExt in p2p.h): where
// the header, the extension and the data sit in a Converse message. Private to pt2pt/.
#pragma once

#include "pt2pt/p2p.h"

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

inline bool matches(const WireHeader& h, std::uint32_t context, int src, int tag) {
  return h.context == context && (src == MPI_ANY_SOURCE || src == h.src) && (tag == MPI_ANY_TAG || tag == h.tag);
}

}  // namespace ampi::pt2pt
