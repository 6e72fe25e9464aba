// A message storm through an installed ucharm, for the package test: every PE sends
// `count` messages to every PE (itself included), small ones and some above the eager size
// (rendezvous), all at once. Each payload is checked, every message must arrive exactly
// once, and PE 0 ends the run after a barrier. Usage: storm [count]
#include <ucharm/converse.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

int h_storm;
int g_count = 2000;
long g_received = 0;
std::vector<std::vector<bool>> g_seen;  // [source PE][sequence number]: arrived already

// Message i is large every 64th time (96 KiB: past the default 32 KiB eager size),
// otherwise 8 to 520 bytes.
std::size_t payload_bytes(int i) { return i % 64 == 63 ? 96 * 1024 : 8 + static_cast<std::size_t>(i % 65) * 8; }

std::uint64_t word(int src, std::uint64_t seq, std::size_t k) { return (std::uint64_t(src) << 48) ^ (seq << 16) ^ k; }

void storm(void* msg) {
  const int src = CmiMsgSourcePe(msg);
  auto* p = reinterpret_cast<std::uint64_t*>(CmiMsgPayload(msg));
  const std::uint64_t seq = p[0];
  const std::size_t bytes = CmiMsgSize(msg) - CmiMsgHeaderSizeBytes;
  // Large messages may be overtaken by small ones: check arrival once each, not order.
  if (src < 0 || src >= CmiNumPes() || seq >= g_seen[src].size() || g_seen[src][seq])
    CmiAbort("storm: message %llu from PE %d is unexpected or arrived twice", static_cast<unsigned long long>(seq), src);
  if (bytes != payload_bytes(static_cast<int>(seq))) CmiAbort("storm: message %llu from PE %d has %zu bytes",
                                                              static_cast<unsigned long long>(seq), src, bytes);
  for (std::size_t k = 1; k < bytes / 8; ++k)
    if (p[k] != word(src, seq, k)) CmiAbort("storm: message %llu from PE %d is corrupt at word %zu",
                                            static_cast<unsigned long long>(seq), src, k);
  g_seen[src][seq] = true;
  CmiFree(msg);
  if (++g_received < long(g_count) * CmiNumPes()) return;
  CmiPrintf("PE %d received %ld messages\n", CmiMyPe(), g_received);
  CmiBarrier();
  if (CmiMyPe() == 0) CmiExit(0);
}

void start(int argc, char** argv) {
  if (argc > 1) g_count = std::atoi(argv[1]);
  if (g_count < 1) CmiAbort("storm: the message count must be at least 1");
  h_storm = CmiRegisterHandler(storm);
  g_seen.assign(CmiNumPes(), std::vector<bool>(g_count, false));
  for (int i = 0; i < g_count; ++i)
    for (int d = 1; d <= CmiNumPes(); ++d) {  // everyone else first, self last
      const int pe = (CmiMyPe() + d) % CmiNumPes();
      const std::size_t bytes = payload_bytes(i);
      void* msg = CmiAlloc(CmiMsgHeaderSizeBytes + bytes);
      CmiSetHandler(msg, h_storm);
      auto* p = reinterpret_cast<std::uint64_t*>(CmiMsgPayload(msg));
      p[0] = static_cast<std::uint64_t>(i);
      for (std::size_t k = 1; k < bytes / 8; ++k) p[k] = word(CmiMyPe(), static_cast<std::uint64_t>(i), k);
      CmiSyncSendAndFree(pe, CmiMsgHeaderSizeBytes + bytes, msg);
    }
}

}  // namespace

int main(int argc, char** argv) { ConverseInit(argc, argv, start); }
