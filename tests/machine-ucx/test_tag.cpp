// Tag layout: round trips at every split of the 60 bits after the type, field
// independence, and counter wrap-around with narrow layouts.
#include <gtest/gtest.h>
#include <ucharm/tag.h>

#include <random>
#include <utility>

using namespace ucharm::tag;

namespace {

template <class L>
void check_layout(std::mt19937_64& rng) {
  const std::uint64_t fmax = L::first_mask, smax = L::second_mask;
  const std::pair<std::uint64_t, std::uint64_t> samples[] = {
      {0, 0}, {fmax, 0}, {0, smax}, {fmax, smax}, {1, 1}};
  for (auto [f, s] : samples) {
    Tag t = L::encode(f, s);
    ASSERT_TRUE(L::is(t));
    ASSERT_EQ(L::first(t), f) << L::first_bits;
    ASSERT_EQ(L::second(t), s) << L::second_bits;
  }
  for (int k = 0; k < 200; ++k) {
    std::uint64_t f = rng() & fmax, s = rng() & smax;
    Tag t = L::encode(f, s);
    ASSERT_EQ(L::first(t), f);
    ASSERT_EQ(L::second(t), s);
    ASSERT_TRUE(L::is(t));
    // Changing one field leaves the other (and the type) alone.
    Tag t2 = L::encode(f ^ 1, s);
    ASSERT_EQ(L::second(t2), s);
    ASSERT_EQ(t2 & kTypeMask, t & kTypeMask);
  }
  // Values wider than the field wrap modulo 2^bits and never touch other fields.
  if constexpr (L::second_bits < 64) {
    Tag w = L::encode(3 & fmax, smax + 1);
    ASSERT_EQ(L::second(w), 0u);
    ASSERT_EQ(L::first(w), 3 & fmax);
    ASSERT_EQ(L::next(smax), 0u);
  }
}

template <unsigned... A>
void all_device_splits(std::integer_sequence<unsigned, A...>, std::mt19937_64& rng) {
  (check_layout<DeviceTagLayout<A + 1, 59 - A>>(rng), ...);
}
template <unsigned... A>
void all_channel_splits(std::integer_sequence<unsigned, A...>, std::mt19937_64& rng) {
  (check_layout<ChannelTagLayout<A + 1, 59 - A>>(rng), ...);
}

}  // namespace

TEST(Tag, HostTypesOccupyTheLowFourBits) {
  EXPECT_EQ(host_tag(MsgType::Eager), 1u);
  EXPECT_EQ(host_tag(MsgType::Large), 2u);
  EXPECT_EQ(type_of(DeviceTag::make(123, 456)), MsgType::Device);
  EXPECT_EQ(type_of(ChannelTag::make(123, 456)), MsgType::Channel);
  EXPECT_NE(DeviceTag::make(1, 1), ChannelTag::make(1, 1));
}

TEST(Tag, DefaultWidthsFollowThePaper) {
  EXPECT_EQ(DeviceTag::first_bits, 32u);   // source PE
  EXPECT_EQ(DeviceTag::second_bits, 28u);  // counter
  EXPECT_EQ(ChannelTag::first_bits, 28u);  // channel id
  EXPECT_EQ(ChannelTag::second_bits, 32u); // counter
  EXPECT_EQ(DeviceTag::src_pe(DeviceTag::make(0xffffffffu, 5)), 0xffffffffu);
  EXPECT_EQ(DeviceTag::counter(DeviceTag::make(7, (1u << 28) - 1)), (1u << 28) - 1);
}

TEST(Tag, RoundTripsAtEveryWidth) {
  std::mt19937_64 rng(42);
  all_device_splits(std::make_integer_sequence<unsigned, 59>{}, rng);
  all_channel_splits(std::make_integer_sequence<unsigned, 59>{}, rng);
}

TEST(Tag, NarrowCounterWrapsAroundWithoutCollidingWithinTheWindow) {
  using Narrow = DeviceTagLayout<56, 4>;  // 16 counter values
  std::uint64_t c = 0;
  std::vector<Tag> window;
  for (int i = 0; i < 100; ++i) {
    window.push_back(Narrow::make(9, c));
    if (window.size() > 16) window.erase(window.begin());
    // Fewer than 2^bits operations outstanding: all tags in the window are distinct.
    for (std::size_t a = 0; a < window.size(); ++a)
      for (std::size_t b = a + 1; b < window.size(); ++b) ASSERT_NE(window[a], window[b]);
    c = Narrow::next(c);
  }
  EXPECT_EQ(Narrow::counter(Narrow::make(9, 16)), 0u);
}
