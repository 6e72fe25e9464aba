// Regression tests for core defects: core_fixes MODE. Each mode checks itself and ends
// with "MODE ok" from PE 0 and exit 0, or aborts naming what went wrong.
#include <ucharm/charm.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;

void finish(const char* what) {
  CkPrintf("%s ok\n", what);
  CkExit(0);
}
void expect(bool ok, const char* what) {
  if (!ok) CkAbort("check failed: %s", what);
}

// ---- one CkDeviceBuffer passed to several sends ---------------------------------------------
constexpr std::size_t kDevBytes = 4096;
char pattern_of(int tag, std::size_t i) { return static_cast<char>(tag * 31 + static_cast<int>(i % 251)); }

struct DevSink : ck::Group<DevSink> {
  static constexpr auto post_entries() { return ck::post_list<ck::post<&DevSink::take, &DevSink::take_post>>{}; }
  // One destination per send tag (X's two sends may land here together: same bytes).
  std::vector<std::vector<char>> in = std::vector<std::vector<char>>(4, std::vector<char>(kDevBytes));
  void take_post(ck::CkDeviceBuffer& b, int& tag) { b.ptr = in[static_cast<std::size_t>(tag)].data(); }
  void take(ck::CkDeviceBuffer b, int tag);
};

// ---- set reductions of vectors ---------------------------------------------------------------------
struct SetVec : ck::ArrayElement<SetVec> {
  void run();
};
std::vector<int> setvec_ints(int i) {  // 1 to 3 ints: odd lengths exercise the padding
  std::vector<int> v;
  for (int k = 0; k <= i % 3; ++k) v.push_back(i * 10 + k);
  return v;
}
std::vector<double> setvec_doubles(int i) { return std::vector<double>(static_cast<std::size_t>(i % 4), i + 0.5); }

// ---- quiescence with reduction partials in flight -------------------------------------------------
// Large partials take a while to travel: quiescence must not be declared meanwhile.
constexpr std::size_t kBigRed = 1u << 19;  // doubles: 4 MiB per partial
struct BigRed : ck::ArrayElement<BigRed> {
  void go(int round);
};

// ---- many singleton chares, created and destroyed ---------------------------------------------
constexpr int kManyChares = 70000, kChareBatch = 5000;  // more than a 16-bit serial allows
struct Ephemeral : ck::Chare<Ephemeral> {
  explicit Ephemeral(int i);
};

// ---- messages for an element never inserted ------------------------------------------------------
struct Sparse : ck::ArrayElement<Sparse> {
  void ping(int v);
};

// ---- ck::ConverseHandler: plain Converse handlers of a layer above the core -------------------
// Two of them: each PE answers through the entry path with which one ran, so a wrong index
// (not the same on every PE, or two handlers' slots swapped) shows.
void on_handler_a(void* msg);
void on_handler_b(void* msg);
using HandlerA = ck::ConverseHandler<&on_handler_a>;
using HandlerB = ck::ConverseHandler<&on_handler_b>;

struct Main : ck::MainChare<Main> {
  std::string mode;
  int pending = 0, sent_x = 0, sent_y = 0, sent_z = 0, got = 0;
  std::vector<char> buf_x, buf_y, buf_z;
  int n_setvec = 0, setvec_results = 0;

  explicit Main(ck::MainArgs args) {
    expect(args.argc >= 2, "usage: core_fixes MODE");
    mode = args.argv[1];
    mainProxy = thisProxy;
    if (mode == "devbuf_reuse") devbuf_reuse();
    else if (mode == "set_vector") set_vector();
    else if (mode == "qd_reduction") qd_reduction();
    else if (mode == "many_chares") many_chares();
    else if (mode == "undelivered") undelivered();
    else if (mode == "converse_handler") converse_handler();
    else CkAbort("unknown mode '%s'", mode.c_str());
  }

  // -- converse_handler: a message to every PE under each handler; 2 * PEs answers.
  int handler_answers[2] = {0, 0};
  void converse_handler() {
    expect(HandlerA::handler() >= 0 && HandlerB::handler() >= 0 && HandlerA::handler() != HandlerB::handler(),
           "two registered Converse handlers have distinct indices");
    for (int pe = 0; pe < CkNumPes(); ++pe)
      for (int h : {HandlerA::handler(), HandlerB::handler()}) {
        void* m = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(int));
        CmiSetHandler(m, h);
        *reinterpret_cast<int*>(CmiMsgPayload(m)) = pe;
        CmiSyncSendAndFree(pe, CmiMsgHeaderSizeBytes + sizeof(int), m);
      }
  }
  void handler_ran(int which, int pe) {
    expect(which == 0 || which == 1, "answer names a handler");
    ++handler_answers[which];
    if (handler_answers[0] + handler_answers[1] < 2 * CkNumPes()) return;
    expect(handler_answers[0] == CkNumPes() && handler_answers[1] == CkNumPes(), "each handler ran once per PE");
    (void)pe;
    finish("converse_handler");
  }

  // -- devbuf_reuse: buffer X goes out twice; then Y and Z each once. Every send runs its
  // buffer's callback once, and later buffers get their own callbacks.
  void devbuf_reuse() {
    auto sinks = ck::GroupProxy<DevSink>::create();
    buf_x.resize(kDevBytes);
    for (std::size_t i = 0; i < kDevBytes; ++i) buf_x[i] = pattern_of(1, i);
    ck::CkDeviceBuffer x(buf_x.data(), kDevBytes, ck::CkCallback::to<&Main::on_sent_x>(thisProxy));
    sinks[1 % CkNumPes()].send<&DevSink::take>(x, 1);
    sinks[CkNumPes() - 1].send<&DevSink::take>(x, 1);
    sinks_ = sinks;
  }
  ck::GroupProxy<DevSink> sinks_;
  void on_sent_x(std::size_t bytes) {
    expect(bytes == kDevBytes, "sender callback gets the byte count");
    if (++sent_x < 2) return;
    expect(sent_x == 2, "X's callback runs once per send");
    buf_y.resize(kDevBytes);
    buf_z.resize(kDevBytes);
    for (std::size_t i = 0; i < kDevBytes; ++i) buf_y[i] = pattern_of(2, i), buf_z[i] = pattern_of(3, i);
    sinks_[0].send<&DevSink::take>(
        ck::CkDeviceBuffer(buf_y.data(), kDevBytes, ck::CkCallback::to<&Main::on_sent_y>(thisProxy)), 2);
    sinks_[CkNumPes() - 1].send<&DevSink::take>(
        ck::CkDeviceBuffer(buf_z.data(), kDevBytes, ck::CkCallback::to<&Main::on_sent_z>(thisProxy)), 3);
  }
  void on_sent_y(std::size_t) { ++sent_y; devbuf_check(); }
  void on_sent_z(std::size_t) { ++sent_z; devbuf_check(); }
  void devbuf_got(int) { ++got; devbuf_check(); }
  void devbuf_check() {
    if (sent_y > 1 || sent_z > 1)
      CkAbort("a device buffer's sender callback ran %d/%d times (Y/Z): a callback slot was reused while in use",
              sent_y, sent_z);
    if (sent_y == 1 && sent_z == 1 && got == 4) finish("devbuf_reuse");
  }

  // -- set_vector: Reducer::set over vector contributions of different lengths
  void set_vector() {
    n_setvec = 5 * CkNumPes() + 1;
    ck::ArrayProxy<SetVec>::create(ck::dims(n_setvec), ck::Map::round_robin).send<&SetVec::run>();
  }
  void set_ints(std::vector<std::pair<ck::Index, std::vector<int>>> r) {
    expect(static_cast<int>(r.size()) == n_setvec, "one record per contributor (ints)");
    for (int i = 0; i < n_setvec; ++i) {
      expect(r[static_cast<std::size_t>(i)].first == ck::index(i), "records sorted by index (ints)");
      expect(r[static_cast<std::size_t>(i)].second == setvec_ints(i), "each contributor's ints intact");
    }
    if (++setvec_results == 3) finish("set_vector");
  }
  void set_doubles(std::vector<std::pair<ck::Index, std::vector<double>>> r) {
    expect(static_cast<int>(r.size()) == n_setvec, "one record per contributor (doubles)");
    for (int i = 0; i < n_setvec; ++i) {
      expect(r[static_cast<std::size_t>(i)].first == ck::index(i), "records sorted by index (doubles)");
      expect(r[static_cast<std::size_t>(i)].second == setvec_doubles(i), "each contributor's doubles intact");
    }
    if (++setvec_results == 3) finish("set_vector");
  }
  void set_scalars(std::vector<std::pair<ck::Index, long>> r) {
    expect(static_cast<int>(r.size()) == n_setvec, "one record per contributor (scalars)");
    for (int i = 0; i < n_setvec; ++i)
      expect(r[static_cast<std::size_t>(i)].first == ck::index(i) && r[static_cast<std::size_t>(i)].second == 7L * i,
             "scalar set records intact");
    if (++setvec_results == 3) finish("set_vector");
  }

  // -- qd_reduction: each round, a reduction of large vectors and a QD request start
  // together; the reduction's result must come first.
  ck::ArrayProxy<BigRed> bigred;
  int qd_round = 0, reduced = 0;
  void qd_reduction() {
    bigred = ck::ArrayProxy<BigRed>::create(ck::dims(CkNumPes()), ck::Map::round_robin);
    qd_next();
  }
  void qd_next() {
    bigred.send<&BigRed::go>(qd_round);
    ck::start_qd(ck::CkCallback::to<&Main::qd_reached>(thisProxy));
  }
  void big_reduced(std::vector<double> v) {
    double want = 0;
    for (int i = 0; i < CkNumPes(); ++i) want += i + qd_round;
    expect(v.size() == kBigRed && v.front() == want && v.back() == want, "the large sum is right");
    ++reduced;
  }
  void qd_reached() {
    if (reduced != qd_round + 1)
      CkAbort("quiescence was declared in round %d while a reduction was still in flight", qd_round);
    if (++qd_round == 3) finish("qd_reduction");
    else qd_next();
  }

  // -- many_chares: kManyChares singleton chares, all created from this PE, each gone
  // once it reported; the next batch starts when a batch has reported.
  int chares_made = 0, chares_born = 0;
  long born_sum = 0;
  void many_chares() { chare_batch(); }
  void chare_batch() {
    for (int i = 0; i < kChareBatch && chares_made < kManyChares; ++i) ck::ChareProxy<Ephemeral>::create(chares_made++);
  }
  void chare_born(int i) {
    born_sum += i;
    if (++chares_born == chares_made && chares_made < kManyChares) chare_batch();
    if (chares_born < kManyChares) return;
    expect(born_sum == static_cast<long>(kManyChares) * (kManyChares - 1) / 2, "every chare ran once");
    finish("many_chares");
  }

  // -- undelivered: element 5 is never inserted; quiescence is still reached, and the two
  // messages waiting for it are reported (or are an error with UCHARM_UNDELIVERED=error).
  int pinged = 0;
  void undelivered() {
    auto a = ck::ArrayProxy<Sparse>::create_empty(1);
    a.insert(ck::index(1));
    a[1].send<&Sparse::ping>(1);
    a[5].send<&Sparse::ping>(5);
    a[5].send<&Sparse::ping>(6);
    ck::start_qd(ck::CkCallback::to<&Main::undelivered_qd>(thisProxy));
  }
  void sparse_pinged(int v) {
    expect(v == 1, "only the inserted element runs");
    ++pinged;
  }
  void undelivered_qd() {
    expect(pinged == 1, "the inserted element got its message before quiescence");
    finish("undelivered");
  }
};

void Sparse::ping(int v) { mainProxy->send<&Main::sparse_pinged>(v); }

Ephemeral::Ephemeral(int i) {
  mainProxy->send<&Main::chare_born>(i);
  ckDestroy();
}

void BigRed::go(int round) {
  contribute(std::vector<double>(kBigRed, thisIndex + round), ck::Reducer::sum,
             ck::CkCallback::to<&Main::big_reduced>(*mainProxy));
}

void DevSink::take(ck::CkDeviceBuffer b, int tag) {
  const std::vector<char>& got = in[static_cast<std::size_t>(tag)];
  expect(b.size == kDevBytes && b.data() == got.data(), "device buffer landed where the post entry said");
  for (std::size_t i = 0; i < kDevBytes; ++i)
    if (got[i] != pattern_of(tag, i)) CkAbort("device data of send %d corrupted at byte %zu", tag, i);
  mainProxy->send<&Main::devbuf_got>(tag);
}

void answer_handler(void* msg, int which) {
  const int pe = *reinterpret_cast<int*>(CmiMsgPayload(msg));
  CmiFree(msg);
  expect(pe == CkMyPe(), "a Converse handler's message reached the PE it was sent to");
  mainProxy->send<&Main::handler_ran>(which, pe);
}
void on_handler_a(void* msg) { answer_handler(msg, 0); }
void on_handler_b(void* msg) { answer_handler(msg, 1); }

void SetVec::run() {
  contribute(setvec_ints(thisIndex), ck::Reducer::set, ck::CkCallback::to<&Main::set_ints>(*mainProxy));
  contribute(setvec_doubles(thisIndex), ck::Reducer::set, ck::CkCallback::to<&Main::set_doubles>(*mainProxy));
  contribute(7L * thisIndex, ck::Reducer::set, ck::CkCallback::to<&Main::set_scalars>(*mainProxy));
}

}  // namespace

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
