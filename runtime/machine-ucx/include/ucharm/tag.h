// The 64-bit UCX tag layout (paper section 3.1, Fig. 3), in one place.
//
//   bits 0..3   message type (MsgType)
//   DEVICE:     type | source PE (SrcPeBits) | per-source counter (CounterBits)
//   CHANNEL:    type | channel id (IdBits)   | per-channel, per-direction counter (CounterBits)
//   EAGER:      type | source PE (32) | per-link sequence number (27) | announce bit
//               (pre-posted receives match on the type bits alone). The announce bit
//               marks, by length: 0 bytes, returned flow-control credit (in 256-byte
//               units, in the sequence field); 8 bytes, a large message's announcement
//               (its size); any other length, an urgent message outside the link's order
//               (Converse's expedited ones; its sequence field is unused)
//   LARGE:      type | source PE (32) | the sequence number of its announcement (28);
//               received with the full mask after the announcement was taken in order
//
// Widths are template parameters so tests can build narrow layouts and exercise
// counter wrap-around; the runtime uses the defaults below. Counters wrap modulo
// 2^CounterBits, which is safe while fewer than 2^CounterBits operations are
// outstanding on one (source, channel).
#pragma once

#include <cstdint>

namespace ucharm::tag {

using Tag = std::uint64_t;

// PeerLost: a PE tells the others that a peer on another host died (machine.cpp).
enum class MsgType : std::uint8_t { Eager = 1, Large = 2, Device = 3, Channel = 4, PeerLost = 5 };

inline constexpr unsigned kTypeBits = 4;
inline constexpr Tag kTypeMask = (Tag{1} << kTypeBits) - 1;
inline constexpr Tag kFullMask = ~Tag{0};

constexpr Tag host_tag(MsgType t) { return static_cast<Tag>(t); }
constexpr MsgType type_of(Tag t) { return static_cast<MsgType>(t & kTypeMask); }

namespace detail {
constexpr Tag low_mask(unsigned bits) { return bits >= 64 ? ~Tag{0} : (Tag{1} << bits) - 1; }
}  // namespace detail

// Two fields after the type: `First` occupies the bits right above the type,
// `Second` the top bits. Both are stored modulo 2^bits.
template <MsgType Type, unsigned FirstBits, unsigned SecondBits>
struct TwoFieldLayout {
  static_assert(FirstBits > 0 && SecondBits > 0, "tag fields must be non-empty");
  static_assert(kTypeBits + FirstBits + SecondBits == 64, "tag fields must fill 64 bits");
  static constexpr unsigned first_bits = FirstBits;
  static constexpr unsigned second_bits = SecondBits;
  static constexpr Tag first_mask = detail::low_mask(FirstBits);
  static constexpr Tag second_mask = detail::low_mask(SecondBits);
  static constexpr unsigned first_shift = kTypeBits;
  static constexpr unsigned second_shift = kTypeBits + FirstBits;

  static constexpr Tag encode(std::uint64_t first, std::uint64_t second) {
    return static_cast<Tag>(Type) | ((first & first_mask) << first_shift) |
           ((second & second_mask) << second_shift);
  }
  static constexpr std::uint64_t first(Tag t) { return (t >> first_shift) & first_mask; }
  static constexpr std::uint64_t second(Tag t) { return (t >> second_shift) & second_mask; }
  static constexpr bool is(Tag t) { return type_of(t) == Type; }
  // The counter value that follows `c` (wraps at 2^SecondBits).
  static constexpr std::uint64_t next(std::uint64_t c) { return (c + 1) & second_mask; }
};

// GPU Messaging API: DEVICE | source PE | per-source-PE counter.
template <unsigned SrcPeBits = 32, unsigned CounterBits = 28>
struct DeviceTagLayout : TwoFieldLayout<MsgType::Device, SrcPeBits, CounterBits> {
  using Base = TwoFieldLayout<MsgType::Device, SrcPeBits, CounterBits>;
  static constexpr Tag make(std::uint64_t src_pe, std::uint64_t counter) {
    return Base::encode(src_pe, counter);
  }
  static constexpr std::uint64_t src_pe(Tag t) { return Base::first(t); }
  static constexpr std::uint64_t counter(Tag t) { return Base::second(t); }
};

// Channel API: CHANNEL | channel id | per-channel, per-direction counter.
template <unsigned IdBits = 28, unsigned CounterBits = 32>
struct ChannelTagLayout : TwoFieldLayout<MsgType::Channel, IdBits, CounterBits> {
  using Base = TwoFieldLayout<MsgType::Channel, IdBits, CounterBits>;
  static constexpr Tag make(std::uint64_t channel_id, std::uint64_t counter) {
    return Base::encode(channel_id, counter);
  }
  static constexpr std::uint64_t channel_id(Tag t) { return Base::first(t); }
  static constexpr std::uint64_t counter(Tag t) { return Base::second(t); }
};

// Host messages. Every host message between a pair of PEs carries the pair's next
// sequence number, so the receiver delivers in send order whatever the completion order.
// A message above the eager size travels as an EAGER announcement (its size, in order
// with the others) followed by the data under a LARGE tag that names the same sequence
// number, which the receiver takes with an exact-tag receive (no probing).
struct EagerTag : TwoFieldLayout<MsgType::Eager, 32, 28> {
  using Base = TwoFieldLayout<MsgType::Eager, 32, 28>;
  static constexpr std::uint64_t seq_mask = Base::second_mask >> 1;
  static constexpr Tag make(std::uint64_t src_pe, std::uint64_t seq, bool announce) {
    return Base::encode(src_pe, ((seq & seq_mask) << 1) | (announce ? 1 : 0));
  }
  static constexpr std::uint64_t src_pe(Tag t) { return Base::first(t); }
  static constexpr std::uint64_t seq(Tag t) { return Base::second(t) >> 1; }
  static constexpr bool announce(Tag t) { return (Base::second(t) & 1) != 0; }
  static constexpr std::uint64_t next_seq(std::uint64_t s) { return (s + 1) & seq_mask; }
};
struct LargeTag : TwoFieldLayout<MsgType::Large, 32, 28> {
  using Base = TwoFieldLayout<MsgType::Large, 32, 28>;
  static constexpr Tag make(std::uint64_t src_pe, std::uint64_t seq) { return Base::encode(src_pe, seq); }
};

#ifdef UCHARM_TEST_NARROW_TAGS
// A test build only: 16 counter values, so sequences of transfers wrap many times.
using DeviceTag = DeviceTagLayout<56, 4>;
using ChannelTag = ChannelTagLayout<56, 4>;
#else
using DeviceTag = DeviceTagLayout<>;
using ChannelTag = ChannelTagLayout<>;
#endif

static_assert(DeviceTag::src_pe(DeviceTag::make(7, 9)) == 7);
static_assert(DeviceTag::counter(DeviceTag::make(7, 9)) == 9);
static_assert(DeviceTag::counter(DeviceTag::make(7, 9)) == 9);
static_assert(ChannelTag::channel_id(ChannelTag::make(5, 3)) == 5);
static_assert(type_of(host_tag(MsgType::Large)) == MsgType::Large);
static_assert(EagerTag::seq(EagerTag::make(3, EagerTag::seq_mask + 5, true)) == 4);
static_assert(EagerTag::announce(EagerTag::make(3, 9, true)) && !EagerTag::announce(EagerTag::make(3, 9, false)));
static_assert(EagerTag::src_pe(EagerTag::make(0xffffffffu, 1, false)) == 0xffffffffu);

}  // namespace ucharm::tag
