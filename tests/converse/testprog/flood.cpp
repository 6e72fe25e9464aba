// flood [slow]: every PE sends messages of random sizes from 0 B to 4 MiB to random PEs
// as fast as it can (batches of eight, then it yields); with "slow", every PE sends to PE
// 0 only, which spends half a millisecond on each message. Receivers check contents and
// per-sender order; every PE reports its peak resident memory, and PE 0 prints the
// largest: flow control must keep it bounded however fast the senders are.
#include "common.h"

#include <sys/resource.h>

#include <chrono>
#include <random>

namespace testprog::flood {
namespace {

struct Head { std::uint32_t src, seq; std::uint64_t len; };
struct Report { long max_rss_kb; };
constexpr std::uint32_t kPerPe = 320;
int h_data, h_pump, h_done;
bool slow = false;
std::mt19937_64 rng;
std::uint32_t sent = 0;
std::uint64_t got = 0, expected = 0;
std::vector<std::uint32_t> last_seq;  // per source: the last sequence number seen, +1
int dones = 0;
long max_rss_kb = 0;

struct Plan { int dst; std::size_t len; };
Plan draw(std::mt19937_64& g) {
  int dst = slow ? 0 : static_cast<int>(g() % static_cast<std::uint64_t>(CmiNumPes()));
  std::uint64_t r = g() % 100;
  std::size_t len = r < 60 ? g() % 4097 : r < 85 ? g() % (256 * 1024 + 1) : g() % ((4u << 20) + 1);
  return {dst, len};
}

void maybe_done() {
  if (got == expected && sent == kPerPe) {
    got = ~0ull;
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    CmiSyncSendAndFree(0, msg_size<Report>(), make_msg(h_done, Report{ru.ru_maxrss}));
  }
}

void data(void* msg) {
  Head h = payload<Head>(msg);
  if (h.src >= static_cast<std::uint32_t>(CmiNumPes()) || h.seq < last_seq[h.src])
    CmiAbort("flood: message %u from PE %u out of order or duplicated", h.seq, h.src);
  last_seq[h.src] = h.seq + 1;
  // Contents: the first and last 4 KiB (whole checks of 4 MiB messages would dominate).
  const char* p = CmiMsgPayload(msg) + sizeof(Head);
  const std::size_t edge = h.len < 8192 ? h.len : 4096;
  if (CmiMsgSize(msg) != msg_size<Head>(h.len) || !matches(p, edge, h.src, h.seq))
    CmiAbort("flood: message %u from PE %u corrupted", h.seq, h.src);
  if (slow && CmiMyPe() == 0) {  // a slow receiver: half a millisecond per message
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(500);
    while (std::chrono::steady_clock::now() < until) {}
  }
  CmiFree(msg);
  ++got;
  maybe_done();
}

void pump(void* msg) {
  const auto me = static_cast<std::uint32_t>(CmiMyPe());
  for (int k = 0; k < 8 && sent < kPerPe; ++k, ++sent) {
    Plan p = draw(rng);
    if (slow && me == 0) continue;  // PE 0 only receives
    void* m = make_msg(h_data, Head{me, sent, p.len}, p.len);
    char* body = CmiMsgPayload(m) + sizeof(Head);
    const std::size_t edge = p.len < 8192 ? p.len : 4096;
    fill(body, edge, me, sent);
    if (p.len > edge) std::memset(body + edge, 0x5a, p.len - edge);
    CmiSyncSendAndFree(p.dst, msg_size<Head>(p.len), m);
  }
  if (sent < kPerPe) CmiSyncSendAndFree(CmiMyPe(), CmiMsgSize(msg), msg);
  else { CmiFree(msg); maybe_done(); }
}

void done(void* msg) {
  max_rss_kb = std::max(max_rss_kb, payload<Report>(msg).max_rss_kb);
  CmiFree(msg);
  if (++dones == CmiNumPes()) {
    CmiPrintf("flood ok: peak resident memory of a PE %ld MiB\n", max_rss_kb / 1024);
    CmiExit(0);
  }
}

}  // namespace

void start(const Args& a) {
  slow = !a.args.empty() && a.args[0] == "slow";
  h_data = CmiRegisterHandler(data);
  h_pump = CmiRegisterHandler(pump);
  h_done = CmiRegisterHandler(done);
  last_seq.assign(static_cast<std::size_t>(CmiNumPes()), 0);
  for (int src = 0; src < CmiNumPes(); ++src) {  // what will reach me
    if (slow && src == 0) continue;
    std::mt19937_64 g(77 + static_cast<std::uint64_t>(src));
    for (std::uint32_t i = 0; i < kPerPe; ++i)
      if (draw(g).dst == CmiMyPe()) ++expected;
  }
  rng.seed(77 + static_cast<std::uint64_t>(CmiMyPe()));
  CmiSyncSendAndFree(CmiMyPe(), msg_size<int>(), make_msg(h_pump, 0));
}

}  // namespace testprog::flood
