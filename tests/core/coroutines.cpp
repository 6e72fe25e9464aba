// Coroutine entry methods (ck::task<>): core_coroutines MODE. Each mode checks itself and
// ends with "MODE ok" from PE 0 and exit 0, or aborts naming what went wrong.
//   future     the main chare's coroutine awaits futures set by array elements anywhere
//   callback   reductions into one ck::ResumeCallback, several rounds, and a barrier
//   channel    two elements exchange buffers through a CkChannel: co_await ck::recv/send
//   next       the next message of an awaited entry with a reference number: messages sent
//              before the co_await (kept) and after it (waited for), refs out of order,
//              each sender's messages of one ref handed over in order; next<>() any ref
//   broadcast  a broadcast to an awaited entry; coroutines started in the constructor
//   destroy    a chare destroyed with two suspended coroutines: a warning, frames freed
//   exception / migrate   user errors: clear messages, non-zero exit
#include <ucharm/charm.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;

void expect(bool ok, const char* what) {
  if (!ok) CkAbort("check failed: %s", what);
}

// ---- future / callback -----------------------------------------------------------------------
struct Worker : ck::ArrayElement<Worker> {
  void square(ck::Future<long> f) { f.set(static_cast<long>(thisIndex) * thisIndex); }
  void add(int round, ck::CkCallback cb) { contribute(static_cast<long>(thisIndex + round), ck::Reducer::sum, cb); }
  void barrier(ck::CkCallback cb) { contribute(cb); }
};

// ---- channel -----------------------------------------------------------------------------------
constexpr int kRounds = 20;
constexpr std::size_t kDoubles = 1000;

struct Pair : ck::ArrayElement<Pair> {
  ck::CkChannel ch;
  std::vector<double> out = std::vector<double>(kDoubles), in = std::vector<double>(kDoubles);
  ck::task<> exchange();
};

// ---- next --------------------------------------------------------------------------------------
constexpr int kRefs = 5, kSeqs = 4, kFeeders = 4;

struct Collector : ck::ArrayElement<Collector> {
  static constexpr auto awaited_entries() { return ck::entries<&Collector::data, &Collector::other>; }
  int bodies = 0;                  // bodies run (only inside a co_await)
  int last_ref = -1;
  std::map<int, int> next_seq;     // sender -> next seq expected (within last_ref)

  void data(int ref, int sender, int seq) {
    ++bodies;
    expect(ref == last_ref, "the body runs on a message of the awaited reference number");
    int& want = next_seq[sender];
    expect(seq == want, "one sender's messages of one ref are handed over in their order");
    ++want;
  }
  void other(int ref, std::string text) {
    ++bodies;
    expect(text == "any " + std::to_string(ref), "next<>() hands over the message itself");
  }
  int bodies_now() const { return bodies; }
  // Takes every message of refs 0..kRefs-1 in ref order (the feeders send them in reverse).
  ck::task<> collect(int phase);
};

struct Feeder : ck::ArrayElement<Feeder> {
  void feed(ck::ElementProxy<Collector> c, ck::CkCallback done) {
    for (int r = kRefs - 1; r >= 0; --r)
      for (int s = 0; s < kSeqs; ++s) c.send<&Collector::data>(r, thisIndex, s);
    if (thisIndex == 0) c.send<&Collector::other>(7, std::string("any 7"));
    contribute(done);
  }
};

// ---- broadcast ---------------------------------------------------------------------------------
struct Listener : ck::Group<Listener> {
  static constexpr auto awaited_entries() { return ck::entries<&Listener::tick>; }
  int sum = 0;
  Listener() { listen(); }  // a coroutine started by the constructor
  void tick(int r, int value) { sum += r * value; }
  ck::task<> listen();
};

// ---- destroy -----------------------------------------------------------------------------------
int frames_destroyed = 0;  // on PE 0, where the Doomed chare lives
struct Marker {
  ~Marker() { ++frames_destroyed; }
};
struct Doomed : ck::Chare<Doomed> {
  static constexpr auto awaited_entries() { return ck::entries<&Doomed::never>; }
  ck::ResumeCallback<int> value;  // nobody sends it anything
  void never(int) {}
  ck::task<> wait_value() {
    Marker m;
    (void)co_await value;
    CkAbort("a coroutine resumed without a value");
  }
  ck::task<> wait_message() {
    Marker m;
    co_await ck::next<&Doomed::never>(1);
    CkAbort("a coroutine resumed without a message");
  }
  void start() {
    wait_value();
    wait_message();
    ckDestroy();
  }
};

// ---- migrate / exception -----------------------------------------------------------------------
struct Mover : ck::ArrayElement<Mover> {
  static constexpr auto awaited_entries() { return ck::entries<&Mover::never>; }
  void never(int) {}
  ck::task<> wait_then_move() {
    migrateMe((CkMyPe() + 1) % CkNumPes());
    co_await ck::next<&Mover::never>(0);
  }
};

struct Main : ck::MainChare<Main> {
  std::string mode;
  int phase = 0;
  ck::ArrayProxy<Collector> coll;
  ck::ArrayProxy<Feeder> feeders;

  explicit Main(ck::MainArgs args) {
    if (args.argc < 2) CkAbort("usage: core_coroutines MODE");
    mode = args.argv[1];
    mainProxy = thisProxy;
    thisProxy.send<&Main::run>();
  }

  ck::task<> run() {
    if (mode == "future") {
      auto w = ck::ArrayProxy<Worker>::create(ck::dims(16), ck::Map::block);
      std::vector<ck::Future<long>> fs;
      for (int i = 0; i < 16; ++i) {
        fs.push_back(ck::Future<long>::make());
        w[i].send<&Worker::square>(fs.back());
      }
      long sum = 0;
      for (int i = 15; i >= 0; --i) sum += co_await fs[static_cast<std::size_t>(i)];  // any order
      expect(sum == 1240, "sum of squares 0..15");
      auto late = ck::Future<long>::make();
      w[3].send<&Worker::square>(late);
      ck::ResumeCallback<> q;
      ck::start_qd(q.callback());
      co_await q;  // by now the value is there: co_await takes it without suspending
      expect(late.ready(), "a future set before the co_await");
      expect(co_await late == 9, "its value");
      finish();
    } else if (mode == "callback") {
      auto w = ck::ArrayProxy<Worker>::create(ck::dims(10), ck::Map::round_robin);
      ck::ResumeCallback<long> total;
      for (int round = 0; round < 3; ++round) w.send<&Worker::add>(round, total.callback());
      for (int round = 0; round < 3; ++round) {
        const long t = co_await total;  // rounds complete in order
        expect(t == 45 + 10 * round, "reduction value of each round, in order");
      }
      ck::ResumeCallback<> all;
      w.send<&Worker::barrier>(all.callback());
      co_await all;
      finish();
    } else if (mode == "channel") {
      auto p = ck::ArrayProxy<Pair>::create(ck::dims(2), ck::Map::round_robin);
      p.send<&Pair::exchange>();
    } else if (mode == "next") {
      coll = ck::ArrayProxy<Collector>::create(ck::dims(1), ck::Map::user<&last_pe>());
      feeders = ck::ArrayProxy<Feeder>::create(ck::dims(kFeeders), ck::Map::round_robin);
      // Phase 0: every message is there before the coroutine starts (kept in order).
      ck::ResumeCallback<> fed;
      feeders.send<&Feeder::feed>(coll[0], fed.callback());
      co_await fed;
      ck::ResumeCallback<> quiet;
      ck::start_qd(quiet.callback());
      co_await quiet;
      coll[0].send<&Collector::collect>(0);
    } else if (mode == "broadcast") {
      auto l = ck::GroupProxy<Listener>::create();
      for (int r = 4; r >= 0; --r) l.send<&Listener::tick>(r, 10);
    } else if (mode == "destroy") {
      auto d = ck::ChareProxy<Doomed>::create_on(0);
      d.send<&Doomed::start>();
      ck::ResumeCallback<> quiet;
      ck::start_qd(quiet.callback());
      co_await quiet;
      expect(frames_destroyed == 2, "both suspended frames were destroyed with their chare");
      finish();
    } else if (mode == "exception") {
      ck::ResumeCallback<> quiet;
      ck::start_qd(quiet.callback());
      co_await quiet;
      throw std::runtime_error("boom after a co_await");
    } else if (mode == "migrate") {
      auto m = ck::ArrayProxy<Mover>::create(ck::dims(1), ck::Map::block);
      m[0].send<&Mover::wait_then_move>();
    } else {
      CkAbort("unknown mode %s", mode.c_str());
    }
  }
  static int last_pe(const ck::Index&, const ck::Index&, int n) { return n - 1; }

  void collected(int ph) {
    if (ph == 0) {  // phase 1: the coroutine waits first, the messages come after
      coll[0].send<&Collector::collect>(1);
      feeders.send<&Feeder::feed>(coll[0], ck::CkCallback::ignore());
      return;
    }
    finish();
  }
  void done_channel() { finish(); }
  void done_broadcast(int sum) {
    expect(sum == CkNumPes() * 10 * (0 + 1 + 2 + 3 + 4), "every branch got each tick once");
    finish();
  }
  void finish() {
    CkPrintf("%s ok\n", mode.c_str());
    CkExit(0);
  }
};

// ---- coroutines that report to Main ----
ck::task<> Pair::exchange() {
  ch = ck::CkChannel(thisProxy[thisIndex], thisProxy[1 - thisIndex]);
  for (int r = 0; r < kRounds; ++r) {
    for (std::size_t i = 0; i < kDoubles; ++i) out[i] = thisIndex * 1e6 + r * 1e3 + static_cast<double>(i);
    auto got = ck::recv(ch, in.data(), kDoubles * sizeof(double));
    auto sent = ck::send(ch, out.data(), kDoubles * sizeof(double));
    const std::size_t n = co_await got;
    expect(n == kDoubles * sizeof(double), "recv completion carries the byte count");
    for (std::size_t i = 0; i < kDoubles; ++i)
      expect(in[i] == (1 - thisIndex) * 1e6 + r * 1e3 + static_cast<double>(i), "channel data of this round");
    co_await sent;
  }
  ch.close();
  contribute(ck::CkCallback::to<&Main::done_channel>(*mainProxy));
}

ck::task<> Collector::collect(int phase) {
  if (phase == 0) expect(bodies == 0, "kept messages do not run their body on arrival");
  const int start = bodies;
  for (int r = 0; r < kRefs; ++r) {
    last_ref = r;
    next_seq.clear();
    for (int k = 0; k < kFeeders * kSeqs; ++k) co_await ck::next<&Collector::data>(r);
  }
  co_await ck::next<&Collector::other>();  // any reference number
  expect(bodies - start == kRefs * kFeeders * kSeqs + 1, "every message handed over once");
  mainProxy->send<&Main::collected>(phase);
}

ck::task<> Listener::listen() {
  for (int r = 0; r < 5; ++r) co_await ck::next<&Listener::tick>(r);
  contribute(sum, ck::Reducer::sum, ck::CkCallback::to<&Main::done_broadcast>(*mainProxy));
}

}  // namespace

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
