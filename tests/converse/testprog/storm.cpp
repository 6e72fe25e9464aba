// storm: every PE sends its share of >= 100,000 messages of random sizes to random PEs.
// Receivers replay every sender's generator to know exactly what must arrive, and check
// sequence numbers (no loss, no duplicate) and checksums (no corruption).
#include "common.h"

#include <random>

namespace testprog::storm {

constexpr std::uint64_t kTotal = 100000;
struct Head { std::uint32_t src, seq; std::uint64_t len; };
int h_data, h_pump, h_done;
std::uint64_t per_pe = 0, sent = 0, got = 0, expected = 0;
bool reported = false;
std::vector<std::vector<bool>> seen;  // [src][seq]
int done_count = 0;

struct Plan { int dst; std::size_t len; };
Plan draw(std::mt19937_64& rng) {
  int dst = static_cast<int>(rng() % static_cast<std::uint64_t>(CmiNumPes()));
  std::uint64_t r = rng() % 1000;
  std::size_t len = r < 900 ? rng() % 257 : r < 990 ? 256 + rng() % 8192 : 8192 + rng() % 100000;
  return {dst, len};
}
void maybe_done() {
  if (!reported && got == expected && sent == per_pe) {
    reported = true;
    void* m = make_msg(h_done, 0);
    CmiSyncSendAndFree(0, msg_size<int>(), m);
  }
}
void data(void* msg) {
  Head h = payload<Head>(msg);
  if (h.src >= static_cast<std::uint32_t>(CmiNumPes()) || h.seq >= per_pe)
    CmiAbort("storm: bad header src=%u seq=%u", h.src, h.seq);
  if (seen[h.src][h.seq]) CmiAbort("storm: duplicate message %u from PE %u", h.seq, h.src);
  seen[h.src][h.seq] = true;
  if (CmiMsgSize(msg) != msg_size<Head>(h.len) ||
      !matches(CmiMsgPayload(msg) + sizeof(Head), h.len, h.src, h.seq))
    CmiAbort("storm: message %u from PE %u corrupted", h.seq, h.src);
  CmiFree(msg);
  if (++got > expected) CmiAbort("storm: more messages arrived than were sent to PE %d", CmiMyPe());
  maybe_done();
}
std::mt19937_64 my_rng;
void pump(void* msg) {  // sends a batch, then queues itself again: sending and receiving interleave
  for (int k = 0; k < 200 && sent < per_pe; ++k, ++sent) {
    Plan p = draw(my_rng);
    void* m = make_msg(h_data, Head{static_cast<std::uint32_t>(CmiMyPe()),
                                    static_cast<std::uint32_t>(sent), p.len}, p.len);
    fill(CmiMsgPayload(m) + sizeof(Head), p.len, static_cast<std::uint64_t>(CmiMyPe()), sent);
    CmiSyncSendAndFree(p.dst, msg_size<Head>(p.len), m);
  }
  if (sent < per_pe) CmiSyncSendAndFree(CmiMyPe(), CmiMsgSize(msg), msg);
  else { CmiFree(msg); maybe_done(); }
}
void done(void* msg) {
  CmiFree(msg);
  if (++done_count == CmiNumPes()) {
    CmiPrintf("storm ok: %llu messages\n", (unsigned long long)(per_pe * CmiNumPes()));
    CmiExit(0);
  }
}
void start(const Args&) {
  h_data = CmiRegisterHandler(data);
  h_pump = CmiRegisterHandler(pump);
  h_done = CmiRegisterHandler(done);
  const int n = CmiNumPes();
  per_pe = (kTotal + n - 1) / n;
  seen.assign(static_cast<std::size_t>(n), std::vector<bool>(per_pe, false));
  for (int src = 0; src < n; ++src) {  // what will reach me
    std::mt19937_64 rng(1234 + src);
    for (std::uint64_t i = 0; i < per_pe; ++i)
      if (draw(rng).dst == CmiMyPe()) ++expected;
  }
  my_rng.seed(1234 + CmiMyPe());
  void* m = make_msg(h_pump, 0);
  CmiSyncSendAndFree(CmiMyPe(), msg_size<int>(), m);
}

}  // namespace testprog::storm
