// order: every PE sends every other PE (and itself) a stream of messages whose sizes mix
// small, just-above-eager and multi-MiB ones, interleaved over destinations; each
// receiver checks that every sender's messages arrive in send order, complete and intact.
// (A large message used to be overtaken by the small ones sent after it.)
#include "common.h"

namespace testprog::order {
namespace {

struct Head { std::uint32_t src, seq; std::uint64_t len; };
constexpr std::uint32_t kPerDest = 240;
int h_data, h_pump, h_done;
std::uint32_t next_seq_out = 0;
std::vector<std::uint32_t> expect_seq;  // per source
std::uint64_t got = 0;
int dones = 0;

// The 3.5 MiB ones go to the next PE only, so the volume does not grow with n^2.
std::size_t size_of(std::uint32_t seq, std::uint32_t src, std::uint32_t dst) {
  if (seq % 60 == 7) return dst == (src + 1) % static_cast<std::uint32_t>(CmiNumPes()) ? (3u << 20) + 512 * 1024 : 40000;
  if (seq % 9 == 0) return 37 * 1024;                  // above the eager size
  return 8 + (seq * 37) % 300;
}

void maybe_done() {
  if (got == static_cast<std::uint64_t>(kPerDest) * static_cast<std::uint64_t>(CmiNumPes()) &&
      next_seq_out == kPerDest) {
    got = ~0ull;
    CmiSyncSendAndFree(0, msg_size<int>(), make_msg(h_done, 0));
  }
}

void data(void* msg) {
  Head h = payload<Head>(msg);
  if (h.src >= static_cast<std::uint32_t>(CmiNumPes())) CmiAbort("order: bad source %u", h.src);
  if (h.seq != expect_seq[h.src])
    CmiAbort("order: from PE %u, message %u (%llu bytes) arrived when %u was due", h.src, h.seq,
             static_cast<unsigned long long>(h.len), expect_seq[h.src]);
  if (h.len != size_of(h.seq, h.src, static_cast<std::uint32_t>(CmiMyPe())) || CmiMsgSize(msg) != msg_size<Head>(h.len) ||
      !matches(CmiMsgPayload(msg) + sizeof(Head), h.len, h.src, h.seq))
    CmiAbort("order: message %u from PE %u corrupted", h.seq, h.src);
  ++expect_seq[h.src];
  CmiFree(msg);
  ++got;
  maybe_done();
}

// Sends the next few sequence numbers to every PE, then queues itself behind what arrived.
void pump(void* msg) {
  const auto me = static_cast<std::uint32_t>(CmiMyPe());
  for (int k = 0; k < 4 && next_seq_out < kPerDest; ++k, ++next_seq_out) {
    for (int d = 0; d < CmiNumPes(); ++d) {
      const std::size_t len = size_of(next_seq_out, me, static_cast<std::uint32_t>(d));
      void* m = make_msg(h_data, Head{me, next_seq_out, len}, len);
      fill(CmiMsgPayload(m) + sizeof(Head), len, me, next_seq_out);
      CmiSyncSendAndFree(d, msg_size<Head>(len), m);
    }
  }
  if (next_seq_out < kPerDest) CmiSyncSendAndFree(CmiMyPe(), CmiMsgSize(msg), msg);
  else { CmiFree(msg); maybe_done(); }
}

void done(void* msg) {
  CmiFree(msg);
  if (++dones == CmiNumPes()) {
    CmiPrintf("order ok: %u messages from each PE to each PE in order\n", kPerDest);
    CmiExit(0);
  }
}

}  // namespace

void start(const Args&) {
  h_data = CmiRegisterHandler(data);
  h_pump = CmiRegisterHandler(pump);
  h_done = CmiRegisterHandler(done);
  expect_seq.assign(static_cast<std::size_t>(CmiNumPes()), 0);
  CmiSyncSendAndFree(CmiMyPe(), msg_size<int>(), make_msg(h_pump, 0));
}

}  // namespace testprog::order
