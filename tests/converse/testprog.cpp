// Multi-process Converse checks, one mode per run: converse_testprog MODE [args].
// Each mode verifies its own results and ends with "MODE ok" printed by PE 0 and exit
// code 0, or aborts with a message naming what went wrong. Driven by test_multiprocess.cpp
// through ucharmrun (and mpirun, and with no launcher at all).
#include <ucharm/converse.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#ifdef UCHARM_TEST_CUDA
#include <cuda_runtime.h>
#endif

#include <atomic>
#include <map>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

std::string g_mode;
bool g_cuda = false;  // "cuda" among the mode's arguments: device/channel/wrap use GPU memory

#ifdef UCHARM_TEST_CUDA
// The test's own copies go on a non-blocking stream: a copy on the legacy default stream
// would also wait for streams UCX uses, whose work may need this PE's progress.
cudaStream_t test_stream() {
  static cudaStream_t s = [] {
    cudaStream_t st = nullptr;
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    return st;
  }();
  return s;
}
bool copy(void* dst, const void* src, std::size_t n, cudaMemcpyKind kind) {
  return cudaMemcpyAsync(dst, src, n, kind, test_stream()) == cudaSuccess &&
         cudaStreamSynchronize(test_stream()) == cudaSuccess;
}
#endif

// A test buffer in host or GPU memory; filled and checked through host copies.
class Buf {
 public:
  Buf() = default;
  explicit Buf(std::size_t n) { resize(n); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  Buf(Buf&& o) noexcept { swap(o); }
  Buf& operator=(Buf&& o) noexcept { swap(o); return *this; }
  ~Buf() { release(); }
  void resize(std::size_t n) {
    release();
    size_ = n;
#ifdef UCHARM_TEST_CUDA
    if (g_cuda) {
      if (cudaMalloc(&dev_, n ? n : 1) != cudaSuccess) CmiAbort("cudaMalloc(%zu) failed", n);
      return;
    }
#endif
    host_.assign(n, 0);
  }
  char* data() { return dev_ ? static_cast<char*>(dev_) : host_.data(); }
  std::size_t size() const { return size_; }
  std::vector<char> read() const {
#ifdef UCHARM_TEST_CUDA
    if (dev_) {
      std::vector<char> h(size_);
      if (size_ && !copy(h.data(), dev_, size_, cudaMemcpyDeviceToHost)) CmiAbort("device-to-host copy failed");
      return h;
    }
#endif
    return host_;
  }
  void write(const std::vector<char>& h) {
#ifdef UCHARM_TEST_CUDA
    if (dev_) {
      if (size_ && !copy(dev_, h.data(), size_, cudaMemcpyHostToDevice)) CmiAbort("host-to-device copy failed");
      return;
    }
#endif
    host_ = h;
  }

 private:
  void release() {
#ifdef UCHARM_TEST_CUDA
    if (dev_) cudaFree(dev_);
#endif
    dev_ = nullptr;
    host_.clear();
  }
  void swap(Buf& o) {
    std::swap(dev_, o.dev_);
    std::swap(size_, o.size_);
    host_.swap(o.host_);
  }
  void* dev_ = nullptr;
  std::size_t size_ = 0;
  std::vector<char> host_;
};
std::vector<std::string> g_args;

// Deterministic payload bytes for (a, b, i): any corruption or misdelivery shows up.
inline std::uint8_t pattern(std::uint64_t a, std::uint64_t b, std::size_t i) {
  return static_cast<std::uint8_t>((a * 131 + b * 7919 + i * 31 + (i >> 8)) & 0xff);
}
void fill(char* p, std::size_t n, std::uint64_t a, std::uint64_t b) {
  for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<char>(pattern(a, b, i));
}
bool matches(const char* p, std::size_t n, std::uint64_t a, std::uint64_t b) {
  for (std::size_t i = 0; i < n; ++i)
    if (static_cast<std::uint8_t>(p[i]) != pattern(a, b, i)) return false;
  return true;
}
void fill(Buf& b, std::uint64_t x, std::uint64_t y) {
  std::vector<char> h(b.size());
  fill(h.data(), h.size(), x, y);
  b.write(h);
}
bool matches(const Buf& b, std::uint64_t x, std::uint64_t y) {
  std::vector<char> h = b.read();
  return matches(h.data(), h.size(), x, y);
}

template <class T>
T& payload(void* msg) { return *reinterpret_cast<T*>(CmiMsgPayload(msg)); }

template <class T>
void* make_msg(int handler, const T& body, std::size_t extra = 0) {
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(T) + extra);
  CmiSetHandler(m, handler);
  payload<T>(m) = body;
  return m;
}
template <class T>
constexpr std::size_t msg_size(std::size_t extra = 0) { return CmiMsgHeaderSizeBytes + sizeof(T) + extra; }

// ------------------------------------------------------------------------------------
// pingpong: PE 0 exchanges messages of every size with each PE (itself when alone),
// crossing the eager/probe boundary; both ends check every byte.
namespace pingpong {
struct Head { std::uint64_t size, round; };
int h_ping, h_pong;
std::vector<std::size_t> sizes;
std::size_t idx = 0;
int partner = 0, rounds_left = 0;

void send(int pe, int h, std::size_t size, std::uint64_t round) {
  void* m = make_msg(h, Head{size, round}, size);
  fill(CmiMsgPayload(m) + sizeof(Head), size, size, round);
  CmiSyncSendAndFree(pe, msg_size<Head>(size), m);
}
void check(void* msg, const char* where) {
  Head h = payload<Head>(msg);
  if (CmiMsgSize(msg) != msg_size<Head>(h.size))
    CmiAbort("pingpong %s: size %zu, expected %zu", where, CmiMsgSize(msg), msg_size<Head>(h.size));
  if (!matches(CmiMsgPayload(msg) + sizeof(Head), h.size, h.size, h.round))
    CmiAbort("pingpong %s: payload of %llu bytes corrupted", where, (unsigned long long)h.size);
}
void next();
void ping(void* msg) {  // partner: check and answer with a fresh message of the same size
  check(msg, "ping");
  Head h = payload<Head>(msg);
  CmiFree(msg);
  send(0, h_pong, h.size, h.round + 1);
}
void pong(void* msg) {  // PE 0
  check(msg, "pong");
  CmiFree(msg);
  if (--rounds_left > 0) send(partner, h_ping, sizes[idx], 2 * rounds_left);
  else next();
}
void next() {
  if (++idx == sizes.size()) {  // all sizes done with this partner
    idx = 0;
    if (++partner >= CmiNumPes()) {
      CmiPrintf("pingpong ok\n");
      CmiExit(0);
    }
  }
  rounds_left = sizes[idx] >= (1u << 20) ? 2 : 5;
  send(partner, h_ping, sizes[idx], 2 * rounds_left);
}
void start() {
  h_ping = CmiRegisterHandler(ping);
  h_pong = CmiRegisterHandler(pong);
  const std::size_t eager = 32 * 1024, over = CmiMsgHeaderSizeBytes + sizeof(Head);
  sizes = {0, 1, 7, 8, 100, 4096, eager - over - 1, eager - over, eager - over + 1,
           65536, 1 << 20, 16 << 20};
  if (CmiMyPe() != 0) return;
  partner = CmiNumPes() > 1 ? 1 : 0;  // alone: PE 0 plays both ends
  idx = 0;
  rounds_left = 5;
  send(partner, h_ping, sizes[0], 10);
}
}  // namespace pingpong

// ------------------------------------------------------------------------------------
// storm: every PE sends its share of >= 100,000 messages of random sizes to random PEs.
// Receivers replay every sender's generator to know exactly what must arrive, and check
// sequence numbers (no loss, no duplicate) and checksums (no corruption).
namespace storm {
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
void start() {
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
}  // namespace storm

// ------------------------------------------------------------------------------------
// bcast: rounds of broadcasts from changing roots, all-but-self and all, small and
// large; every PE must see each round exactly once (and the root only for "all").
namespace bcast {
constexpr int kRounds = 40;
struct Head { int round, root; std::uint64_t len; int all; };
int h_data, h_ack, h_go;
std::vector<int> seen_count;
int acks = 0;

std::size_t len_of(int round) { return round % 4 == 3 ? 100000 : static_cast<std::size_t>(round * 37); }
bool includes_root(int round) { return round % 2 == 0; }
int root_of(int round) { return round % CmiNumPes(); }
int receivers(int round) { return CmiNumPes() - (includes_root(round) ? 0 : 1); }

void issue(int round) {
  Head h{round, root_of(round), len_of(round), includes_root(round)};
  std::size_t size = msg_size<Head>(h.len);
  void* m = make_msg(h_data, h, h.len);
  fill(CmiMsgPayload(m) + sizeof(Head), h.len, static_cast<std::uint64_t>(round), 7);
  if (round % 3 == 0) {  // the copying variants
    if (h.all) CmiSyncBroadcastAll(size, m); else CmiSyncBroadcast(size, m);
    CmiFree(m);
  } else {
    if (h.all) CmiSyncBroadcastAllAndFree(size, m); else CmiSyncBroadcastAndFree(size, m);
  }
}
void data(void* msg) {
  Head h = payload<Head>(msg);
  if (h.round < 0 || h.round >= kRounds) CmiAbort("bcast: bad round %d", h.round);
  if (!h.all && CmiMyPe() == h.root) CmiAbort("bcast: all-but-self reached its root %d", h.root);
  if (CmiMsgSourcePe(msg) != h.root) CmiAbort("bcast: source %d, root %d", CmiMsgSourcePe(msg), h.root);
  if (!matches(CmiMsgPayload(msg) + sizeof(Head), h.len, static_cast<std::uint64_t>(h.round), 7))
    CmiAbort("bcast: round %d payload corrupted", h.round);
  if (++seen_count[h.round] != 1) CmiAbort("bcast: round %d delivered twice", h.round);
  CmiFree(msg);
  void* ack = make_msg(h_ack, h.round);
  CmiSyncSendAndFree(0, msg_size<int>(), ack);
}
void ack(void* msg);
void go(void* msg) {  // on the round's root
  int round = payload<int>(msg);
  issue(round);
  CmiFree(msg);
  if (receivers(round) == 0) {  // all-but-self on one PE reaches nobody: move on
    void* a = make_msg(h_ack, round);
    CmiSyncSendAndFree(0, msg_size<int>(), a);
  }
}
void ack(void* msg) {  // on PE 0: all receivers acked -> next round
  int round = payload<int>(msg);
  CmiFree(msg);
  if (++acks < std::max(receivers(round), 1)) return;
  acks = 0;
  if (round + 1 == kRounds) {
    CmiPrintf("bcast ok: %d rounds\n", kRounds);
    CmiExit(0);
  }
  void* g = make_msg(h_go, round + 1);
  CmiSyncSendAndFree(root_of(round + 1), msg_size<int>(), g);
}
void start() {
  h_data = CmiRegisterHandler(data);
  h_ack = CmiRegisterHandler(ack);
  h_go = CmiRegisterHandler(go);
  seen_count.assign(kRounds, 0);
  if (CmiMyPe() == 0) {
    void* g = make_msg(h_go, 0);
    CmiSyncSendAndFree(0, msg_size<int>(), g);
  }
}
}  // namespace bcast

// ------------------------------------------------------------------------------------
// barrier: before barrier k every PE adds 1 to a counter in a shared file; after it,
// the counter must be at least N*(k+1) on every PE (nobody left early).
namespace barrier {
void start() {
  if (g_args.empty()) CmiAbort("barrier: needs a shared file path argument");
  int fd = ::open(g_args[0].c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0 || ::ftruncate(fd, 4096) != 0) CmiAbort("barrier: cannot open %s", g_args[0].c_str());
  void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  auto* counter = static_cast<std::atomic<std::int64_t>*>(p);
  const int n = CmiNumPes(), rounds = 100;
  for (int k = 0; k < rounds; ++k) {
    counter->fetch_add(1);
    CmiBarrier();
    std::int64_t c = counter->load();
    if (c < static_cast<std::int64_t>(n) * (k + 1))
      CmiAbort("barrier %d: left with counter %lld < %lld", k, (long long)c, (long long)n * (k + 1));
  }
  CmiBarrier();
  if (CmiMyPe() == 0) {
    CmiPrintf("barrier ok: %d rounds\n", rounds);
    ::unlink(g_args[0].c_str());
    CmiExit(0);
  }
}
}  // namespace barrier

// ------------------------------------------------------------------------------------
// thread: on every PE a thread suspends until a message from the previous PE awakens it;
// it yields in between; a second thread proves CthYield lets others run.
namespace thread {
int h_token, h_finish;
CthThread waiter = nullptr;
int token = -1, finished = 0;
bool other_ran = false;

void waiter_body(void*) {
  if (CthSelf() != waiter) CmiAbort("thread: CthSelf is wrong");
  while (token < 0) CthSuspend();  // awakened by the token handler
  if (token != (CmiMyPe() + CmiNumPes() - 1) % CmiNumPes())
    CmiAbort("thread: token from %d, expected the previous PE", token);
  CthYield();
  if (!other_ran) CmiAbort("thread: CthYield did not let the other thread run");
  void* m = make_msg(h_finish, CmiMyPe());
  CmiSyncSendAndFree(0, msg_size<int>(), m);
}
void other_body(void*) { other_ran = true; }
void on_token(void* msg) {
  token = payload<int>(msg);
  CmiFree(msg);
  CthAwaken(waiter);
  CthAwaken(waiter);  // twice is harmless
}
void on_finish(void* msg) {
  CmiFree(msg);
  if (++finished == CmiNumPes()) {
    CmiPrintf("thread ok\n");
    CmiExit(0);
  }
}
void start() {
  h_token = CmiRegisterHandler(on_token);
  h_finish = CmiRegisterHandler(on_finish);
  waiter = CthCreate(waiter_body, nullptr, 64 * 1024);
  CthAwaken(waiter);
  CthAwaken(CthCreate(other_body, nullptr));
  void* m = make_msg(h_token, CmiMyPe());
  CmiSyncSendAndFree((CmiMyPe() + 1) % CmiNumPes(), msg_size<int>(), m);
}
}  // namespace thread

// ------------------------------------------------------------------------------------
// queue: priorities and expedited messages through the real scheduler on one PE.
namespace queue {
int h_rec;
std::vector<int> order;
void rec(void* msg) {
  order.push_back(payload<int>(msg));
  CmiFree(msg);
  if (order.size() == 6) {
    const std::vector<int> want = {5, 3, 1, 2, 4, 6};
    if (order != want) CmiAbort("queue: wrong order");
    CmiPrintf("queue ok\n");
    CmiExit(0);
  }
}
void start() {
  h_rec = CmiRegisterHandler(rec);
  if (CmiMyPe() != 0) return;
  auto put = [](int tag, int prio, bool exp) {
    void* m = make_msg(h_rec, tag);
    CmiSetPriority(m, prio);
    if (exp) CmiSetExpedited(m);
    CmiSyncSendAndFree(0, msg_size<int>(), m);
  };
  put(1, 0, false); put(2, 0, false); put(3, -5, false);
  put(4, 7, false); put(5, 9, true); put(6, 8, false);
}
}  // namespace queue

// ------------------------------------------------------------------------------------
// async: CmiAsyncSend of eager and rendezvous-size messages to the next PE (itself when
// alone); the sender keeps the buffer until CmiAsyncMsgSent says the send is done.
namespace async {
struct Head { std::uint64_t len; int src; };
int h_data, h_done;
int received = 0, done = 0;
void data(void* msg) {
  Head h = payload<Head>(msg);
  if (!matches(CmiMsgPayload(msg) + sizeof(Head), h.len, h.len, static_cast<std::uint64_t>(h.src)))
    CmiAbort("async: payload of %llu bytes corrupted", (unsigned long long)h.len);
  CmiFree(msg);
  if (++received == 2) {
    void* m = make_msg(h_done, 0);
    CmiSyncSendAndFree(0, msg_size<int>(), m);
  }
}
void on_done(void* msg) {
  CmiFree(msg);
  if (++done == CmiNumPes()) {
    CmiPrintf("async ok\n");
    CmiExit(0);
  }
}
void start() {
  h_data = CmiRegisterHandler(data);
  h_done = CmiRegisterHandler(on_done);
  const int to = (CmiMyPe() + 1) % CmiNumPes();
  for (std::size_t len : {std::size_t{100}, std::size_t{4} << 20}) {
    void* m = make_msg(h_data, Head{len, CmiMyPe()}, len);
    fill(CmiMsgPayload(m) + sizeof(Head), len, len, static_cast<std::uint64_t>(CmiMyPe()));
    CmiCommHandle h = CmiAsyncSend(to, msg_size<Head>(len), m);
    CsdScheduleUntil([&] { return CmiAsyncMsgSent(h) != 0; });
    CmiReleaseCommHandle(h);
    if (CmiGetReference(m) != 1) CmiAbort("async: the send still holds the message");
    CmiFree(m);
  }
}
}  // namespace async

// ------------------------------------------------------------------------------------
// sched: CsdScheduler(n) runs exactly n messages, CsdSchedulePoll the rest, and
// CsdScheduleUntil stops as soon as its condition holds.
namespace sched {
int h_count;
int count = 0;
void counter(void* msg) { ++count; CmiFree(msg); }
void send_self(int k) {
  for (int i = 0; i < k; ++i) CmiSyncSendAndFree(CmiMyPe(), msg_size<int>(), make_msg(h_count, i));
}
void start() {
  h_count = CmiRegisterHandler(counter);
  send_self(10);
  CsdScheduler(3);
  if (count != 3) CmiAbort("sched: CsdScheduler(3) ran %d messages", count);
  CsdSchedulePoll();
  if (count != 10) CmiAbort("sched: CsdSchedulePoll left %d messages", 10 - count);
  send_self(5);
  CsdScheduleUntil([] { return count == 12; });
  if (count != 12) CmiAbort("sched: CsdScheduleUntil ran past its condition (%d)", count);
  CsdSchedulePoll();
  if (count != 15) CmiAbort("sched: %d messages lost", 15 - count);
  CmiBarrier();
  if (CmiMyPe() == 0) {
    CmiPrintf("sched ok\n");
    CmiExit(0);
  }
}
}  // namespace sched

// ------------------------------------------------------------------------------------
// device: every PE sends many buffers (0 B to 16 MiB) to the next PE with CmiSendDevice
// and tells it the tags in one host message; the receiver posts CmiRecvDevice for each.
namespace device {
const std::vector<std::size_t> kSizes = {0, 1, 8, 4096, 32769, 1 << 20, 16 << 20, 100, 7};
struct Entry { std::uint64_t size, tag; };
int h_meta, h_sent, h_got, h_report;
std::vector<Buf> out, in;
int sends_left = 0, recvs_left = 0, reports = 0, from = 0;

void maybe_report() {
  if (sends_left == 0 && recvs_left == 0) {
    sends_left = -1;
    CmiSyncSendAndFree(0, msg_size<int>(), make_msg(h_report, 0));
  }
}
void sent(void* msg) { CmiFree(msg); --sends_left; maybe_report(); }
void got(void* msg) {
  int i = payload<int>(msg);
  CmiFree(msg);
  const Buf& b = in[static_cast<std::size_t>(i)];
  if (!matches(b, static_cast<std::uint64_t>(from), b.size()))
    CmiAbort("device: buffer %d (%zu bytes) from PE %d corrupted", i, b.size(), from);
  --recvs_left;
  maybe_report();
}
void meta(void* msg) {
  from = CmiMsgSourcePe(msg);
  const auto* e = reinterpret_cast<const Entry*>(CmiMsgPayload(msg));
  const std::size_t n = (CmiMsgSize(msg) - CmiMsgHeaderSizeBytes) / sizeof(Entry);
  in.clear();
  in.resize(n);
  recvs_left = static_cast<int>(n);
  for (std::size_t i = 0; i < n; ++i) {
    in[i].resize(e[i].size);
    CmiRecvDevice(in[i].data(), in[i].size(), e[i].tag, make_msg(h_got, static_cast<int>(i)));
  }
  CmiFree(msg);
}
void report(void* msg) {
  CmiFree(msg);
  if (++reports == CmiNumPes()) {
    CmiPrintf("device ok\n");
    CmiExit(0);
  }
}
void start() {
  h_meta = CmiRegisterHandler(meta);
  h_sent = CmiRegisterHandler(sent);
  h_got = CmiRegisterHandler(got);
  h_report = CmiRegisterHandler(report);
  const int to = (CmiMyPe() + 1) % CmiNumPes();
  std::vector<Entry> entries;
  out.clear();
  out.resize(kSizes.size());
  sends_left = static_cast<int>(kSizes.size());
  for (std::size_t i = 0; i < kSizes.size(); ++i) {
    out[i].resize(kSizes[i]);
    fill(out[i], static_cast<std::uint64_t>(CmiMyPe()), kSizes[i]);
    CmiDeviceBuffer b{out[i].data(), out[i].size(), 0};
    if (g_cuda && CmiGetMemoryType(out[i].data()) != CmiMemoryType::Cuda)
      CmiAbort("device: cudaMalloc'd buffer %zu not recognised as CUDA memory", i);
    CmiSendDevice(to, b, make_msg(h_sent, 0));
    entries.push_back({kSizes[i], b.tag});
  }
  std::size_t bytes = CmiMsgHeaderSizeBytes + entries.size() * sizeof(Entry);
  void* m = CmiAlloc(bytes);
  std::memcpy(CmiMsgPayload(m), entries.data(), entries.size() * sizeof(Entry));
  CmiSetHandler(m, h_meta);
  CmiSyncSendAndFree(to, bytes, m);
}
}  // namespace device

// ------------------------------------------------------------------------------------
// channel: a channel each way between every pair of PEs (and each PE with itself), K
// transfers per channel. The first half is sent before the receiver posts (data waits
// unexpected); the second half after the receiver says it has posted.
namespace channel {
constexpr int K = 12;
const std::size_t kSizes[] = {0, 1, 8, 1000, 40000, 1 << 20};
int h_first_sent, h_posted, h_recv_done, h_send_done, h_report;
std::map<std::pair<int, int>, Buf> inbox;  // (src, k) -> buffer
std::vector<Buf> outbox;                     // [dst * K + k]
int recvs_left = 0, sends_left = 0, reports = 0;

std::uint64_t id(int src, int dst) { return static_cast<std::uint64_t>(src) * CmiNumPes() + dst; }
std::uint64_t counter_for(int k) {
  std::uint64_t c = 0;
  for (int i = 0; i < k; ++i) c = CmiChannelNextCounter(c);
  return c;
}
std::size_t size_for(int k) { return kSizes[k % 6]; }
struct Done { int src, k; };

void maybe_report() {
  if (recvs_left == 0 && sends_left == 0) {
    recvs_left = -1;
    CmiSyncSendAndFree(0, msg_size<int>(), make_msg(h_report, 0));
  }
}
void post(int src, int k) {
  Buf& b = inbox[{src, k}];
  b.resize(size_for(k));
  CmiChannelRecv(b.data(), b.size(), CmiChannelTag(id(src, CmiMyPe()), counter_for(k)),
                 make_msg(h_recv_done, Done{src, k}));
}
void send(int dst, int k) {
  Buf& b = outbox[static_cast<std::size_t>(dst * K + k)];
  b.resize(size_for(k));
  fill(b, static_cast<std::uint64_t>(CmiMyPe() * 1000 + dst), static_cast<std::uint64_t>(k));
  CmiChannelSend(dst, b.data(), b.size(), CmiChannelTag(id(CmiMyPe(), dst), counter_for(k)), make_msg(h_send_done, 0));
}
void first_sent(void* msg) {  // the sender's first half is out: post for it now
  int src = CmiMsgSourcePe(msg);
  CmiFree(msg);
  for (int k = 0; k < K / 2; ++k) post(src, k);
}
void posted(void* msg) {  // the receiver has posted the second half: send it
  int dst = CmiMsgSourcePe(msg);
  CmiFree(msg);
  for (int k = K / 2; k < K; ++k) send(dst, k);
}
void recv_done(void* msg) {
  Done d = payload<Done>(msg);
  CmiFree(msg);
  const Buf& b = inbox[{d.src, d.k}];
  if (!matches(b, static_cast<std::uint64_t>(d.src * 1000 + CmiMyPe()), static_cast<std::uint64_t>(d.k)))
    CmiAbort("channel %d->%d transfer %d corrupted (or matched the wrong send)", d.src, CmiMyPe(), d.k);
  --recvs_left;
  maybe_report();
}
void send_done(void* msg) { CmiFree(msg); --sends_left; maybe_report(); }
void report(void* msg) {
  CmiFree(msg);
  if (++reports == CmiNumPes()) {
    CmiPrintf("channel ok: %d channels, %d transfers each\n", CmiNumPes() * CmiNumPes(), K);
    CmiExit(0);
  }
}
void start() {
  h_first_sent = CmiRegisterHandler(first_sent);
  h_posted = CmiRegisterHandler(posted);
  h_recv_done = CmiRegisterHandler(recv_done);
  h_send_done = CmiRegisterHandler(send_done);
  h_report = CmiRegisterHandler(report);
  const int n = CmiNumPes();
  outbox.clear();
  outbox.resize(static_cast<std::size_t>(n * K));
  recvs_left = sends_left = n * K;
  CmiBarrier();  // every PE has its handlers before any notification arrives
  for (int peer = 0; peer < n; ++peer) {
    for (int k = 0; k < K / 2; ++k) send(peer, k);
    CmiSyncSendAndFree(peer, msg_size<int>(), make_msg(h_first_sent, 0));
    for (int k = K / 2; k < K; ++k) post(peer, k);
    CmiSyncSendAndFree(peer, msg_size<int>(), make_msg(h_posted, 0));
  }
}
}  // namespace channel

// ------------------------------------------------------------------------------------
// wrap: PE 0 and the last PE take turns, one transfer at a time, over a channel and over
// GPU Messaging, for many more steps than the narrow test build's 16 counter values.
namespace wrap {
int steps = 0, h_chan_done, h_dev_meta, h_dev_done, h_ignore;
int step = 0;
std::uint64_t counter[2] = {0, 0};  // per direction: 0 = to the peer, 1 = from it
Buf buf;
int peer() { return CmiMyPe() == 0 ? CmiNumPes() - 1 : 0; }
bool starts() { return CmiMyPe() == 0; }
void send_next();
void ignore(void* msg) { CmiFree(msg); }
void finish() {
  if (CmiMyPe() == 0) {
    CmiPrintf("wrap ok: %d steps\n", steps);
    CmiExit(0);
  }
}
void check(int s) {
  if (!matches(buf, 77, static_cast<std::uint64_t>(s)))
    CmiAbort("wrap: step %d got another step's data", s);
}
void post_recv() {
  const int from = peer();
  CmiChannelRecv(buf.data(), buf.size(), CmiChannelTag(static_cast<std::uint64_t>(from) + 1, counter[1]),
                 make_msg(h_chan_done, 0));
  counter[1] = CmiChannelNextCounter(counter[1]);
}
void chan_done(void* msg) {  // received step `step`
  CmiFree(msg);
  check(step);
  if (++step == steps) { finish(); return; }
  send_next();
}
void send_next() {  // alternate: channel on even steps, GPU Messaging on odd ones
  fill(buf, 77, static_cast<std::uint64_t>(step));
  const int to = peer();
  if (step % 2 == 0) {
    CmiChannelSend(to, buf.data(), buf.size(), CmiChannelTag(static_cast<std::uint64_t>(CmiMyPe()) + 1, counter[0]),
                   make_msg(h_ignore, 0));
    counter[0] = CmiChannelNextCounter(counter[0]);
  } else {
    CmiDeviceBuffer b{buf.data(), buf.size(), 0};
    CmiSendDevice(to, b, make_msg(h_ignore, 0));
    CmiSyncSendAndFree(to, msg_size<std::uint64_t>(), make_msg(h_dev_meta, b.tag));
  }
  if (++step == steps) { finish(); return; }
  if (step % 2 == 0) post_recv();
}
void dev_meta(void* msg) {
  std::uint64_t tag = payload<std::uint64_t>(msg);
  CmiFree(msg);
  CmiRecvDevice(buf.data(), buf.size(), tag, make_msg(h_dev_done, 0));
}
void dev_done(void* msg) { chan_done(msg); }
void start() {
  h_chan_done = CmiRegisterHandler(chan_done);
  h_dev_meta = CmiRegisterHandler(dev_meta);
  h_dev_done = CmiRegisterHandler(dev_done);
  h_ignore = CmiRegisterHandler(ignore);
  steps = g_args.empty() || g_args[0] == "cuda" ? 200 : std::atoi(g_args[0].c_str());
  buf.resize(64);
  CmiBarrier();
  if (CmiNumPes() > 1 && CmiMyPe() != 0 && CmiMyPe() != CmiNumPes() - 1) return;
  if (CmiNumPes() == 1) CmiAbort("wrap needs 2 PEs or more");
  if (starts()) send_next();
  else post_recv();
}
}  // namespace wrap

// ------------------------------------------------------------------------------------
// truncate: a receive buffer smaller than the data must stop the program, naming both.
namespace truncate {
std::vector<char> big(1000), small(100);
int h_ignore;
void ignore(void* msg) { CmiFree(msg); }
void start() {
  h_ignore = CmiRegisterHandler(ignore);
  const int last = CmiNumPes() - 1;
  CmiBarrier();
  if (CmiMyPe() == 0) CmiChannelSend(last, big.data(), big.size(), CmiChannelTag(5, 0), make_msg(h_ignore, 0));
  if (CmiMyPe() == last) CmiChannelRecv(small.data(), small.size(), CmiChannelTag(5, 0), make_msg(h_ignore, 0));
}
}  // namespace truncate

// ------------------------------------------------------------------------------------
// memtype (GPU): CUDA memory is recognised, host memory is not, and a freed range leaves
// the cache, so an address reused by a new allocation is asked about again.
namespace memtype {
void start() {
#ifdef UCHARM_TEST_CUDA
  std::vector<char> host(100);
  if (CmiGetMemoryType(host.data()) != CmiMemoryType::Host) CmiAbort("memtype: host memory taken for CUDA");
  void* a = nullptr;
  cudaMalloc(&a, 1 << 20);
  if (CmiGetMemoryType(a) != CmiMemoryType::Cuda) CmiAbort("memtype: cudaMalloc memory not recognised");
  if (CmiGetMemoryType(static_cast<char*>(a) + 12345) != CmiMemoryType::Cuda) CmiAbort("memtype: interior pointer");
  const std::size_t cached = CmiMemoryTypeCachedRanges();
  CmiPrintf("memtype: caching %s\n", CmiMemoryTypeCaching() ? "on (frees are seen)" : "off (frees not seen)");
  if (CmiMemoryTypeCaching() && cached < 1) CmiAbort("memtype: the range was not cached");
  if (!CmiMemoryTypeCaching() && cached != 0) CmiAbort("memtype: cached although frees are not seen");
  cudaFree(a);
  if (CmiMemoryTypeCaching() && CmiMemoryTypeCachedRanges() != cached - 1)
    CmiAbort("memtype: a freed range stayed in the cache");
  void* pinned = nullptr;
  cudaMallocHost(&pinned, 1 << 20);  // host memory, possibly at a formerly cached address
  if (CmiGetMemoryType(pinned) != CmiMemoryType::Host) CmiAbort("memtype: pinned host memory taken for CUDA");
  void* b = nullptr;
  cudaMalloc(&b, 1 << 20);  // often at a's old address
  if (CmiGetMemoryType(b) != CmiMemoryType::Cuda) CmiAbort("memtype: reused address not recognised");
  CmiPrintf("memtype: new allocation at %s address\n", a == b ? "the same" : "another");
  cudaFree(b);
  cudaFreeHost(pinned);
  CmiBarrier();
  if (CmiMyPe() == 0) {
    CmiPrintf("memtype ok\n");
    CmiExit(0);
  }
#else
  CmiAbort("memtype needs a build with CUDA");
#endif
}
}  // namespace memtype

// ------------------------------------------------------------------------------------
// stream (GPU): operations that name a CUDA stream wait for the work queued on it. Each PE
// sends to the next. The sender's stream holds a 100 ms host function, then the copy
// that writes the data, then the send; the receiver's stream holds a 100 ms host function,
// then a memset of the destination, then the receive. Without stream ordering the data
// leaves unwritten, or lands before the memset overwrites it. Both the GPU Messaging
// (CmiSendDevice) and the Channel path are checked, at 64 B and 4 MiB.
namespace stream {
#ifdef UCHARM_TEST_CUDA
constexpr std::size_t kSizes[] = {64, 4 << 20};
constexpr int kOps = 4;  // {device, channel} x kSizes
struct Op { std::uint64_t size, tag; };
int h_meta, h_got, h_sent, h_report;
cudaStream_t s_send, s_recv;
void* src[kOps];
void* dst[kOps];
char* pinned = nullptr;  // the pattern each sender writes
int left = 0, reports = 0;
void CUDART_CB hold(void*) { ::usleep(100 * 1000); }
void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) CmiAbort("stream: %s: %s", what, cudaGetErrorString(e));
}
char pattern(int pe, int op) { return static_cast<char>(0x10 + 16 * op + pe); }
void done_one() {
  if (--left == 0) CmiSyncSendAndFree(0, msg_size<int>(), make_msg(h_report, 0));
}
void got(void* msg) {
  const int i = payload<int>(msg);
  CmiFree(msg);
  const std::size_t n = kSizes[i % 2];
  // Work queued on the receive's stream after the completion sees the data.
  std::vector<char> h(n);
  check_cuda(cudaMemcpyAsync(h.data(), dst[i], n, cudaMemcpyDeviceToHost, s_recv), "copy back");
  check_cuda(cudaStreamSynchronize(s_recv), "synchronize");
  const int from = (CmiMyPe() + CmiNumPes() - 1) % CmiNumPes();
  for (std::size_t k = 0; k < n; ++k)
    if (h[k] != pattern(from, i))
      CmiAbort("stream: %s %zu B: byte %zu is %#x, expected %#x (%s)", i < 2 ? "device" : "channel", n, k,
               static_cast<unsigned>(static_cast<unsigned char>(h[k])), static_cast<unsigned>(pattern(from, i)),
               static_cast<unsigned char>(h[k]) == 0xEE ? "the receive did not wait for its stream"
                                                        : "the send did not wait for its stream");
  done_one();
}
void sent(void* msg) { CmiFree(msg); done_one(); }
// Queues, on `s`, a 100 ms hold and then `then`.
template <class F>
void after_hold(cudaStream_t s, F&& then) {
  check_cuda(cudaLaunchHostFunc(s, hold, nullptr), "cudaLaunchHostFunc");
  then();
}
void recv_into(int i, std::uint64_t tag, bool channel) {
  after_hold(s_recv, [&] { check_cuda(cudaMemsetAsync(dst[i], 0xEE, kSizes[i % 2], s_recv), "memset"); });
  void* done = make_msg(h_got, i);
  if (channel) CmiChannelRecv(dst[i], kSizes[i % 2], tag, done, s_recv);
  else CmiRecvDevice(dst[i], kSizes[i % 2], tag, done, s_recv);
}
void meta(void* msg) {
  const Op* ops = reinterpret_cast<const Op*>(CmiMsgPayload(msg));
  for (int i = 0; i < 2; ++i) recv_into(i, ops[i].tag, false);
  CmiFree(msg);
}
void report(void* msg) {
  CmiFree(msg);
  if (++reports == CmiNumPes()) {
    CmiPrintf("stream ok\n");
    CmiExit(0);
  }
}
void start() {
  h_meta = CmiRegisterHandler(meta);
  h_got = CmiRegisterHandler(got);
  h_sent = CmiRegisterHandler(sent);
  h_report = CmiRegisterHandler(report);
  check_cuda(cudaStreamCreateWithFlags(&s_send, cudaStreamNonBlocking), "stream");
  check_cuda(cudaStreamCreateWithFlags(&s_recv, cudaStreamNonBlocking), "stream");
  check_cuda(cudaMallocHost(&pinned, kSizes[1] * kOps), "cudaMallocHost");
  for (int i = 0; i < kOps; ++i) {
    check_cuda(cudaMalloc(&src[i], kSizes[1]), "cudaMalloc");
    check_cuda(cudaMalloc(&dst[i], kSizes[1]), "cudaMalloc");
    check_cuda(cudaMemset(src[i], 0, kSizes[1]), "cudaMemset");
    std::memset(pinned + i * kSizes[1], pattern(CmiMyPe(), i), kSizes[1]);
  }
  left = 2 * kOps;  // each op's send and receive completion
  CmiBarrier();
  const int to = (CmiMyPe() + 1) % CmiNumPes();
  const int from = (CmiMyPe() + CmiNumPes() - 1) % CmiNumPes();
  // Channel receives first (their memsets queue behind the holds), then all sends.
  for (int i = 2; i < kOps; ++i) recv_into(i, CmiChannelTag(40 + static_cast<unsigned>(from), i), true);
  after_hold(s_send, [] {});
  Op ops[2];
  for (int i = 0; i < kOps; ++i) {
    const std::size_t n = kSizes[i % 2];
    check_cuda(cudaMemcpyAsync(src[i], pinned + i * kSizes[1], n, cudaMemcpyHostToDevice, s_send), "copy");
    if (i < 2) {
      CmiDeviceBuffer b{src[i], n, 0, s_send};
      CmiSendDevice(to, b, make_msg(h_sent, 0));
      ops[i] = {n, b.tag};
    } else {
      CmiChannelSend(to, src[i], n, CmiChannelTag(40 + static_cast<unsigned>(CmiMyPe()), i), make_msg(h_sent, 0),
                     s_send);
    }
  }
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof ops);
  std::memcpy(CmiMsgPayload(m), ops, sizeof ops);
  CmiSetHandler(m, h_meta);
  CmiSyncSendAndFree(to, CmiMsgHeaderSizeBytes + sizeof ops, m);
}
#else
void start() { CmiAbort("stream needs a build with CUDA"); }
#endif
}  // namespace stream

// ------------------------------------------------------------------------------------
// idle: PE 0 computes for one second while the others wait in the scheduler; each idle
// PE then reports the CPU time it used meanwhile, which must be far below a second.
namespace idle {
int h_report, h_measure;
int reports = 0;
double worst = 0;
double cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}
double cpu_at_barrier = 0;
void report(void* msg) {
  double used = payload<double>(msg);
  CmiFree(msg);
  worst = std::max(worst, used);
  if (++reports == CmiNumPes() - 1) {
    CmiPrintf("idle: the busiest idle PE used %.3f s of CPU in 1 s\n", worst);
    if (worst > 0.3) CmiAbort("idle: idle PEs burn CPU (%.3f s in 1 s)", worst);
    CmiPrintf("idle ok\n");
    CmiExit(0);
  }
}
void measure(void* msg) {  // on idle PEs, after PE 0's second of work
  CmiFree(msg);
  void* m = make_msg(h_report, cpu_seconds() - cpu_at_barrier);
  CmiSyncSendAndFree(0, msg_size<double>(), m);
}
void start() {
  h_report = CmiRegisterHandler(report);
  h_measure = CmiRegisterHandler(measure);
  CmiBarrier();
  cpu_at_barrier = cpu_seconds();
  if (CmiMyPe() != 0) return;
  if (CmiNumPes() == 1) { CmiPrintf("idle ok\n"); CmiExit(0); }
  double t0 = CmiWallTimer();
  volatile double x = 0;
  while (CmiWallTimer() - t0 < 1.0) x = x + 1;  // PE 0's work
  void* m = make_msg(h_measure, 0);
  CmiSyncBroadcastAndFree(msg_size<int>(), m);
}
}  // namespace idle

// ------------------------------------------------------------------------------------
// Failure modes: each must end every PE with a clear message and a non-zero exit.
void fail_start() {
  const int last = CmiNumPes() - 1;
  CmiBarrier();
  if (g_mode == "abort" && CmiMyPe() == last) CmiAbort("test abort requested on PE %d", last);
  if (g_mode == "killpeer" && CmiMyPe() == last) ::raise(SIGKILL);
  if (g_mode == "exitcode" && CmiMyPe() == last) CmiExit(3);
  if (g_mode == "badpe" && CmiMyPe() == 0) {
    void* m = make_msg(0, 0);
    CmiSyncSendAndFree(CmiNumPes(), msg_size<int>(), m);
  }
  if (g_mode == "badhandler" && CmiMyPe() == 0) {
    void* m = make_msg(999, 0);
    CmiSyncSendAndFree(last, msg_size<int>(), m);
  }
  if (g_mode == "suspendmain" && CmiMyPe() == 0) CthSuspend();
  if (g_mode == "streamnogpu" && CmiMyPe() == 0) {  // a stream named where CUDA is not available
    static char buf[64];
    CmiChannelSend(last, buf, sizeof buf, CmiChannelTag(9, 0), nullptr, reinterpret_cast<void*>(0x1234));
  }
}

void start(int argc, char** argv) {
  if (argc < 2) {
    CmiError("usage: converse_testprog MODE [args]\n");
    std::exit(2);
  }
  g_mode = argv[1];
  g_args.assign(argv + 2, argv + argc);
  for (const auto& a : g_args) g_cuda = g_cuda || a == "cuda";
#ifdef UCHARM_TEST_CUDA
  if (g_cuda || g_mode == "memtype" || g_mode == "stream") {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) CmiAbort("no CUDA device visible");
    cudaSetDevice(CmiMyPe() % n);  // one GPU per PE where there are enough
  }
#else
  if (g_cuda) CmiAbort("'cuda' needs a build with CUDA");
#endif
  if (g_mode == "pingpong") pingpong::start();
  else if (g_mode == "storm") storm::start();
  else if (g_mode == "bcast") bcast::start();
  else if (g_mode == "barrier") barrier::start();
  else if (g_mode == "thread") thread::start();
  else if (g_mode == "queue") queue::start();
  else if (g_mode == "async") async::start();
  else if (g_mode == "device") device::start();
  else if (g_mode == "channel") channel::start();
  else if (g_mode == "wrap") wrap::start();
  else if (g_mode == "truncate") truncate::start();
  else if (g_mode == "memtype") memtype::start();
  else if (g_mode == "stream") stream::start();
  else if (g_mode == "sched") sched::start();
  else if (g_mode == "idle") idle::start();
  else if (g_mode == "abort" || g_mode == "killpeer" || g_mode == "exitcode" ||
           g_mode == "badpe" || g_mode == "badhandler" || g_mode == "suspendmain" || g_mode == "streamnogpu")
    fail_start();
  else if (g_mode == "wait") {
    // Sits in the scheduler until stopped from outside (signal and timeout tests).
    if (CmiMyPe() == 0) CmiPrintf("waiting\n");
  } else if (g_mode == "hello") {
    CmiPrintf("hello from PE %d of %d\n", CmiMyPe(), CmiNumPes());
    CmiBarrier();
    if (CmiMyPe() == 0) CmiExit(0);
  } else {
    CmiError("converse_testprog: unknown mode '%s'\n", g_mode.c_str());
    std::exit(2);
  }
}

}  // namespace

int main(int argc, char** argv) { ConverseInit(argc, argv, start); }
