// One-sided communication through Converse: converse_rmaprog MODE, under ucharmrun.
//   all    every PE registers host regions and sends their descriptors to all; then, each
//          phase between barriers: put (to the next PE and to itself, flushed, checked by
//          the target), get, atomics (fetch-add, 4-byte add, and/or/xor, swap, 8- and
//          4-byte compare-swap) on PE 0's words, put-fence-put ordering, a storm of 10,000
//          notified puts to the next PE checked in order by the target's poller, and a
//          put + fence + flag put to an idle PE whose poller must see the flag, and the
//          data with it (how long that took is printed, never judged: a correctness test
//          holds no time bound; benchmarks/run_time_bounds.sh judges it). Ends "rma ok".
//   idle R the flag put to an idle PE only, R rounds (default 20); each PE prints the
//          median and the largest delay ("idle wake: PE p ..."), for benchmarks/run_time_bounds.sh.
//   range  PE 0 puts 16 bytes at offset 8190 of PE 1's 8192-byte region: must end the job
//          naming the region's size, the offset and the length.
#include <ucharm/converse.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr std::size_t kInbox = 8192, kPub = 4096, kWords = 8, kBig = 64 * 1024;
constexpr int kStorm = 10000, kStormBatch = 500;
constexpr std::size_t kRecord = 64;
enum Reg { Inbox, Pub, Words, Big, Flags, Storm, Ctr, kRegs };

struct Pe {
  std::string mode;
  int me = 0, n = 1;
  std::vector<unsigned char> inbox = std::vector<unsigned char>(kInbox), pub = std::vector<unsigned char>(kPub),
                             big = std::vector<unsigned char>(kBig), storm = std::vector<unsigned char>(kStorm * kRecord);
  std::vector<std::uint64_t> words = std::vector<std::uint64_t>(kWords), flags, ctr;
  CmiRmaRegion* reg[kRegs] = {};
  std::vector<std::vector<CmiRmaRemote*>> remote;  // [pe][Reg]
  int descs = 0, done = 0, checks = 0, reports = 0;
  std::uint64_t report_sum[3] = {0, 0, 0};
  std::vector<unsigned char> send_storm = std::vector<unsigned char>(kStorm * kRecord);
  int storm_issued = 0, storm_seen = 0;
  std::uint64_t idle_ts[2] = {0, 0};  // the sender's clock reading, its mark
  double idle_delay_ms = -1;
  std::vector<double> idle_delays;
};
Pe pe;
int h_desc, h_done, h_check, h_report, h_storm_more;

void fail(const char* what) { CmiAbort("rma check failed on PE %d: %s", pe.me, what); }
int next_pe() { return (pe.me + 1) % pe.n; }
int prev_pe() { return (pe.me + pe.n - 1) % pe.n; }
unsigned char pattern(int src, std::size_t i) { return static_cast<unsigned char>(src * 31 + i * 7 + 1); }

void* done_msg() {
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes);
  CmiSetHandler(m, h_done);
  return m;
}
void wait_done(int count) {
  CsdScheduleUntil([&] { return pe.done >= count; });
  pe.done = 0;
}
template <class T>
void send_to(int dest, int handler, const T& value) {
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(T));
  CmiSetHandler(m, handler);
  std::memcpy(CmiMsgPayload(m), &value, sizeof(T));
  CmiSyncSendAndFree(dest, CmiMsgHeaderSizeBytes + sizeof(T), m);
}

// ---- descriptors: [Reg count][len, bytes]... ----------------------------------------------
void desc_handler(void* msg) {
  const int src = CmiMsgSourcePe(msg);
  const char* p = CmiMsgPayload(msg);
  for (int k = 0; k < kRegs; ++k) {
    std::uint32_t len;
    std::memcpy(&len, p, sizeof len);
    pe.remote[src][k] = CmiRmaAttach(src, p + sizeof len, len);
    p += sizeof len + len;
  }
  CmiFree(msg);
  ++pe.descs;
}
void send_descriptors() {
  std::vector<char> out;
  for (auto* r : pe.reg) {
    std::size_t len = 0;
    const char* d = static_cast<const char*>(CmiRmaDescriptor(r, &len));
    const auto l32 = static_cast<std::uint32_t>(len);
    out.insert(out.end(), reinterpret_cast<const char*>(&l32), reinterpret_cast<const char*>(&l32) + sizeof l32);
    out.insert(out.end(), d, d + len);
  }
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + out.size());
  CmiSetHandler(m, h_desc);
  std::memcpy(CmiMsgPayload(m), out.data(), out.size());
  CmiSyncBroadcastAllAndFree(CmiMsgHeaderSizeBytes + out.size(), m);
}

// ---- put: to the next PE ([0, 4096) of its inbox) and to self ([4096, 8192)) ---------------
void check_handler(void* msg) {  // the put from `src` has been flushed: its data is here
  const int src = CmiMsgSourcePe(msg);
  CmiFree(msg);
  const std::size_t base = src == pe.me ? kInbox / 2 : 0;
  for (std::size_t i = 0; i < kInbox / 2; ++i)
    if (pe.inbox[base + i] != pattern(src, i)) fail("put data differs at the target after the flush");
  ++pe.checks;
}
void phase_put() {
  std::vector<unsigned char> src(kInbox / 2);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = pattern(pe.me, i);
  CmiRmaPut(pe.remote[next_pe()][Inbox], 0, src.data(), src.size(), done_msg());
  CmiRmaPut(pe.remote[pe.me][Inbox], kInbox / 2, src.data(), src.size(), done_msg());
  wait_done(2);
  CmiRmaFlush(-1, done_msg());
  wait_done(1);
  send_to(next_pe(), h_check, 0);
  send_to(pe.me, h_check, 0);
  CsdScheduleUntil([&] { return pe.checks >= 2; });
}

// ---- get: all of the next PE's `pub`, and 500 bytes of our own from offset 100 -------------
void phase_get() {
  std::vector<unsigned char> a(kPub), b(500);
  CmiRmaGet(pe.remote[next_pe()][Pub], 0, a.data(), a.size(), done_msg());
  CmiRmaGet(pe.remote[pe.me][Pub], 100, b.data(), b.size(), done_msg());
  CmiRmaGet(pe.remote[next_pe()][Pub], kPub, a.data(), 0, done_msg());  // empty, at the end
  wait_done(3);
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != pattern(next_pe() + 100, i)) fail("get from the next PE returned wrong data");
  for (std::size_t i = 0; i < b.size(); ++i)
    if (b[i] != pattern(pe.me + 100, 100 + i)) fail("get from self returned wrong data");
}

// ---- atomics on PE 0's words --------------------------------------------------------------
// words: 0 fetch-add counter, 1 4-byte add, 2 or, 3 and (starts ~0), 4 xor, 5 swap, 6 CAS
// counter, 7 4-byte CAS (one winner)
constexpr int kFetchAdds = 100, kAdds4 = 10, kCasRounds = 20;
void report_handler(void* msg) {
  std::uint64_t v[3];
  std::memcpy(v, CmiMsgPayload(msg), sizeof v);
  CmiFree(msg);
  for (int i = 0; i < 3; ++i) pe.report_sum[i] += v[i];
  ++pe.reports;
}
void phase_atomics() {
  CmiRmaRemote* w = pe.remote[0][Words];
  std::vector<std::uint64_t> fetched(kFetchAdds);
  for (auto& f : fetched) CmiRmaAtomic(w, 0, CmiRmaOp::Add, 8, 1, 0, &f, done_msg());
  for (int i = 0; i < kAdds4; ++i) CmiRmaAtomic(w, 8, CmiRmaOp::Add, 4, static_cast<std::uint64_t>(pe.me + 1), 0, nullptr, nullptr);
  CmiRmaAtomic(w, 16, CmiRmaOp::Or, 8, std::uint64_t{1} << pe.me, 0, nullptr, done_msg());
  CmiRmaAtomic(w, 24, CmiRmaOp::And, 8, ~(std::uint64_t{1} << pe.me), 0, nullptr, done_msg());
  CmiRmaAtomic(w, 32, CmiRmaOp::Xor, 8, std::uint64_t{1} << (pe.me + 8), 0, nullptr, done_msg());
  std::uint64_t swapped = 0;
  CmiRmaAtomic(w, 40, CmiRmaOp::Swap, 8, static_cast<std::uint64_t>(pe.me + 1), 0, &swapped, done_msg());
  std::uint32_t cas4 = 99;
  CmiRmaAtomic(w, 56, CmiRmaOp::CompareSwap, 4, static_cast<std::uint64_t>(pe.me + 1), 0, &cas4, done_msg());
  wait_done(kFetchAdds + 5);
  // A counter built on compare-swap: read, try old -> old + 1, retry with what was there.
  std::uint64_t expect = 0;
  for (int i = 0; i < kCasRounds;) {
    std::uint64_t old = 0;
    CmiRmaAtomic(w, 48, CmiRmaOp::CompareSwap, 8, expect + 1, expect, &old, done_msg());
    wait_done(1);
    if (old == expect) ++i, ++expect;
    else expect = old;
  }
  CmiRmaFlush(0, done_msg());
  wait_done(1);
  std::uint64_t sum = 0;
  for (auto f : fetched) sum += f;
  const std::uint64_t rep[3] = {sum, swapped, cas4 == 0 ? 1u : 0u};
  send_to(0, h_report, rep);
  if (pe.me != 0) return;
  CsdScheduleUntil([] { return pe.reports == pe.n; });
  const auto n = static_cast<std::uint64_t>(pe.n);
  const std::uint64_t total = n * kFetchAdds, mask = (std::uint64_t{1} << n) - 1;
  auto word = [](int i) { return CmiRmaReadCounter(&pe.words[static_cast<std::size_t>(i)]); };
  if (word(0) != total) fail("fetch-add counter");
  if (pe.report_sum[0] != total * (total - 1) / 2) fail("fetch-add results are not 0..n-1 once each");
  if ((word(1) & 0xFFFFFFFFu) != kAdds4 * n * (n + 1) / 2 || (word(1) >> 32) != 0) fail("4-byte add");
  if (word(2) != mask) fail("or");
  if (word(3) != ~mask) fail("and");
  if (word(4) != mask << 8) fail("xor");
  if (pe.report_sum[1] + word(5) != n * (n + 1) / 2) fail("swap results and final word");
  if (word(6) != kCasRounds * n) fail("compare-swap counter");
  if (pe.report_sum[2] != 1 || (word(7) & 0xFFFFFFFFu) < 1 || (word(7) & 0xFFFFFFFFu) > n || (word(7) >> 32) != 0)
    fail("4-byte compare-swap: exactly one PE must win");
}

// ---- put, fence, flag: the flag is never seen before the data -----------------------------
bool fence_poll(void*) {
  if (CmiRmaReadCounter(&pe.flags[static_cast<std::size_t>(prev_pe())]) == 0) return false;
  for (std::size_t i = 0; i < kBig; ++i)
    if (pe.big[i] != pattern(prev_pe() + 50, i)) fail("fenced put: the flag arrived before the data");
  ++pe.checks;
  return true;
}
void phase_fence() {
  std::vector<unsigned char> data(kBig);
  for (std::size_t i = 0; i < kBig; ++i) data[i] = pattern(pe.me + 50, i);
  const std::uint64_t one = 1;
  pe.checks = 0;
  const int id = CmiAddPoller(fence_poll, nullptr);
  CmiRmaPut(pe.remote[next_pe()][Big], 0, data.data(), kBig, done_msg());
  CmiRmaFence();
  CmiRmaPut(pe.remote[next_pe()][Flags], 8 * static_cast<std::size_t>(pe.me), &one, 8, done_msg());
  wait_done(2);
  CsdScheduleUntil([] { return pe.checks > 0; });
  CmiRemovePoller(id);
}

// ---- storm: 10,000 notified puts (8 or 64 bytes) to the next PE, checked in order ----------
bool storm_poll(void*) {
  const std::uint64_t c = CmiRmaReadCounter(&pe.ctr[static_cast<std::size_t>(prev_pe())]);
  if (c == static_cast<std::uint64_t>(pe.storm_seen)) return false;
  if (c > kStorm) fail("storm: the counter passed the number of notified puts");
  for (auto j = static_cast<std::size_t>(pe.storm_seen); j < c; ++j) {
    std::uint64_t first, last;
    std::memcpy(&first, &pe.storm[j * kRecord], 8);
    std::memcpy(&last, &pe.storm[j * kRecord + kRecord - 8], 8);
    if (first != j + 1 || (j % 2 && last != j + 1)) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "storm: notification %zu counted before its data arrived (record holds %llu)", j,
                    static_cast<unsigned long long>(first));
      fail(buf);
    }
  }
  pe.storm_seen = static_cast<int>(c);
  return true;
}
// Issues the next batch; its last put's completion issues the one after (the network is
// progressed between batches, which a software-emulated RMA transport such as tcp needs).
void* storm_batch_done() {
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes);
  CmiSetHandler(m, h_storm_more);
  return m;
}
void storm_more(void* msg) {
  CmiFree(msg);
  CmiRmaRemote *dst = pe.remote[next_pe()][Storm], *ctr = pe.remote[next_pe()][Ctr];
  const std::size_t slot = 8 * static_cast<std::size_t>(pe.me);
  for (int k = 0; k < kStormBatch && pe.storm_issued < kStorm; ++k, ++pe.storm_issued) {
    const auto j = static_cast<std::size_t>(pe.storm_issued);
    const std::size_t bytes = j % 2 ? kRecord : 8;
    const bool last = pe.storm_issued + 1 == kStorm, batch_end = k + 1 == kStormBatch;
    CmiRmaPutNotify(dst, j * kRecord, &pe.send_storm[j * kRecord], bytes, ctr, slot,
                    last ? done_msg() : batch_end ? storm_batch_done() : nullptr);
  }
}
void phase_storm() {
  for (std::size_t j = 0; j < kStorm; ++j)
    for (std::size_t w = 0; w < kRecord / 8; ++w) {
      const std::uint64_t v = j + 1;
      std::memcpy(&pe.send_storm[j * kRecord + w * 8], &v, 8);
    }
  const int id = CmiAddPoller(storm_poll, nullptr);
  if (CmiNumPollers() != 1) fail("CmiNumPollers after CmiAddPoller");
  send_to(pe.me, h_storm_more, 0);
  CsdScheduleUntil([] { return pe.storm_seen == kStorm && pe.done > 0; });
  pe.done = 0;
  CmiRemovePoller(id);
  if (CmiNumPollers() != 0) fail("CmiNumPollers after CmiRemovePoller");
}

// ---- a flag put to an idle PE: it sleeps in short steps only, so its poller sees the flag,
// and the data put before the fence with it. How soon is measured (the sender's clock
// reading travels with the data: one clock on one host) and printed, not judged here.
std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}
std::uint64_t idle_mark(int src, int round) { return 0x1D1E000000000000ull | (std::uint64_t(src) << 16) | std::uint64_t(round); }
int idle_round = 0;
bool idle_poll(void*) {
  if (CmiRmaReadCounter(&pe.ctr[static_cast<std::size_t>(pe.n + prev_pe())]) != static_cast<std::uint64_t>(idle_round + 1))
    return false;
  const std::uint64_t sent = CmiRmaReadCounter(&pe.words[0]), now = now_ns();
  if (CmiRmaReadCounter(&pe.words[1]) != idle_mark(prev_pe(), idle_round) || sent == 0 || sent > now)
    fail("idle PE: the flag put arrived before the data put ahead of the fence");
  pe.idle_delay_ms = static_cast<double>(now - sent) / 1e6;
  return true;
}
void phase_idle() {
  const int id = CmiAddPoller(idle_poll, nullptr);
  pe.idle_delay_ms = -1;
  const double until = CmiWallTimer() + 0.3;
  CsdScheduleUntil([&] { return CmiWallTimer() > until; });  // both PEs idle a while
  pe.idle_ts[0] = now_ns();
  pe.idle_ts[1] = idle_mark(pe.me, idle_round);
  // Plain puts (not a notified put): intra-node, UCX emulates atomics with active messages,
  // which would wake the target; a put by CMA wakes nobody, as RDMA hardware's would not.
  const std::uint64_t flag = static_cast<std::uint64_t>(idle_round + 1);
  CmiRmaPut(pe.remote[next_pe()][Words], 0, pe.idle_ts, sizeof pe.idle_ts, done_msg());
  CmiRmaFence();
  CmiRmaPut(pe.remote[next_pe()][Ctr], 8 * static_cast<std::size_t>(pe.n + pe.me), &flag, 8, done_msg());
  CsdScheduleUntil([] { return pe.idle_delay_ms >= 0 && pe.done > 1; });
  pe.done = 0;
  CmiRemovePoller(id);
  pe.idle_delays.push_back(pe.idle_delay_ms);
  ++idle_round;
}
void report_idle() {
  std::vector<double> d = pe.idle_delays;
  std::sort(d.begin(), d.end());
  CmiPrintf("idle wake: PE %d noticed a flag put after %.2f ms (median of %zu), %.2f ms at most\n", pe.me,
            d[d.size() / 2], d.size(), d.back());
}

void start(int argc, char** argv) {
  pe.mode = argc > 1 ? argv[1] : "all";
  pe.me = CmiMyPe();
  pe.n = CmiNumPes();
  h_desc = CmiRegisterHandler(desc_handler);
  h_done = CmiRegisterHandler([](void* m) { CmiFree(m); ++pe.done; });
  h_check = CmiRegisterHandler(check_handler);
  h_report = CmiRegisterHandler(report_handler);
  h_storm_more = CmiRegisterHandler(storm_more);
  for (std::size_t i = 0; i < kPub; ++i) pe.pub[i] = pattern(pe.me + 100, i);
  pe.words[3] = ~std::uint64_t{0};
  pe.flags.assign(static_cast<std::size_t>(pe.n), 0);
  pe.ctr.assign(static_cast<std::size_t>(2 * pe.n), 0);
  pe.reg[Inbox] = CmiRmaRegister(pe.inbox.data(), kInbox);
  pe.reg[Pub] = CmiRmaRegister(pe.pub.data(), kPub);
  pe.reg[Words] = CmiRmaRegister(pe.words.data(), kWords * 8);
  pe.reg[Big] = CmiRmaRegister(pe.big.data(), kBig);
  pe.reg[Flags] = CmiRmaRegister(pe.flags.data(), pe.flags.size() * 8);
  pe.reg[Storm] = CmiRmaRegister(pe.storm.data(), pe.storm.size());
  pe.reg[Ctr] = CmiRmaRegister(pe.ctr.data(), pe.ctr.size() * 8);
  pe.remote.assign(static_cast<std::size_t>(pe.n), std::vector<CmiRmaRemote*>(kRegs));
  send_descriptors();
  CsdScheduleUntil([] { return pe.descs == pe.n; });
  CmiBarrier();
  if (pe.mode == "range") {
    if (pe.me == 0 && pe.n > 1) {
      const char x[16] = {};
      CmiRmaPut(pe.remote[1][Inbox], kInbox - 2, x, sizeof x, nullptr);
      CmiPrintf("range: the put was not refused\n");
    }
    CmiBarrier();
    CmiExit(pe.me == 0 ? 3 : 0);
  }
  if (pe.mode == "idle") {
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 20;
    for (int r = 0; r < rounds; ++r) {
      phase_idle();
      CmiBarrier();
    }
    report_idle();
    CmiBarrier();
    if (pe.me == 0) CmiExit(0);
    return;
  }
  phase_put();
  CmiBarrier();
  phase_get();
  CmiBarrier();
  phase_atomics();
  CmiBarrier();
  phase_fence();
  CmiBarrier();
  phase_storm();
  CmiBarrier();
  phase_idle();
  report_idle();
  CmiBarrier();
  if (CmiRmaOpen() != 0) fail("one-sided operations still open at the end");
  for (auto& row : pe.remote)
    for (auto*& r : row) CmiRmaDetach(std::exchange(r, nullptr));
  CmiBarrier();  // nobody uses our regions any more
  for (auto*& r : pe.reg) CmiRmaDeregister(std::exchange(r, nullptr));
  if (pe.me == 0) {
    CmiPrintf("rma ok: %d PEs, %d notified puts per PE checked in order\n", pe.n, kStorm);
    CmiExit(0);
  }
}

}  // namespace

int main(int argc, char** argv) { ConverseInit(argc, argv, start, 0, 0); }
