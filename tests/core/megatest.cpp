// Megatest for the core: core_megatest MODE. Each mode checks itself and ends with
// "MODE ok" from PE 0 and exit 0, or aborts naming what went wrong.
#include <ucharm/charm.h>

#ifdef UCHARM_TEST_CUDA
#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace {

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;
ck::readonly<std::string> mode;
ck::readonly<std::vector<int>> roVector;
ck::readonly<bool> useCuda;  // "cuda" after the mode: channel buffers in GPU memory

// Channel test buffers: host vectors, or GPU memory staged through host copies (on a
// non-blocking stream, so the copies never wait on streams the transport uses).
struct TestBuffer {
  std::vector<char> host;
  void* dev = nullptr;
  std::size_t n = 0;
  void resize(std::size_t size) {
    n = size;
    host.assign(size, 0);
#ifdef UCHARM_TEST_CUDA
    if (*useCuda && cudaMalloc(&dev, size ? size : 1) != cudaSuccess) CkAbort("cudaMalloc failed");
#endif
  }
  char* data() { return dev ? static_cast<char*>(dev) : host.data(); }
  std::size_t size() const { return n; }
#ifdef UCHARM_TEST_CUDA
  static cudaStream_t stream() {
    static cudaStream_t s = [] { cudaStream_t st; cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking); return st; }();
    return s;
  }
#endif
  void push() {  // host -> buffer
#ifdef UCHARM_TEST_CUDA
    if (dev && n) { cudaMemcpyAsync(dev, host.data(), n, cudaMemcpyHostToDevice, stream()); cudaStreamSynchronize(stream()); }
#endif
  }
  void pull() {  // buffer -> host
#ifdef UCHARM_TEST_CUDA
    if (dev && n) { cudaMemcpyAsync(host.data(), dev, n, cudaMemcpyDeviceToHost, stream()); cudaStreamSynchronize(stream()); }
#endif
  }
};

void finish(const char* what) {
  CkPrintf("%s ok\n", what);
  CkExit(0);
}
void expect(bool ok, const char* what) {
  if (!ok) CkAbort("check failed: %s", what);
}

// ---- marshalling ---------------------------------------------------------------------------
struct Particle {
  double x = 0, y = 0;
  std::vector<int> ids;
  std::string tag;
  void pup(PUP::er& p) { p | x; p | y; p | ids; p | tag; }
  bool operator==(const Particle& o) const { return x == o.x && y == o.y && ids == o.ids && tag == o.tag; }
};

Particle sample_particle() { return Particle{1.5, -2.25, {1, 2, 3, 5, 8}, "p-13"}; }
void fill_pattern(std::vector<char>& b, int who, int k) {
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<char>((who * 131 + k * 17 + i * 7) & 0xff);
}
bool check_pattern(const std::vector<char>& b, int who, int k) {
  for (std::size_t i = 0; i < b.size(); ++i)
    if (b[i] != static_cast<char>((who * 131 + k * 17 + i * 7) & 0xff)) return false;
  return true;
}

std::vector<double> sample_doubles(std::size_t n) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::sqrt(static_cast<double>(i)) + 0.5;
  return v;
}

struct Marshal : ck::ArrayElement<Marshal> {
  void many(int i, double d, std::string s, std::vector<double> v, std::array<int, 3> a,
            Particle p, std::pair<int, std::string> pr, std::vector<Particle> ps, bool b, char c);
  void span(int n, std::span<const double> data, std::vector<float> f);
  // Instances of one member template are distinct entry methods.
  template <int K>
  void tmpl(int v);
};

// ---- chares ------------------------------------------------------------------------------------
struct Counter : ck::Chare<Counter> {
  int value;
  explicit Counter(int start) : value(start) {}
  void add(int d, int from);
};

struct Forwarder : ck::Group<Forwarder> {
  void poke(ck::ChareProxy<Counter> c) { c.send<&Counter::add>(10, thisIndex); }
  // Creates and runs the reductions array from this PE: the reduction tree's root (the
  // lowest PE holding elements) may then get partial results before it knows the array.
  void spawn_reducers(int rounds);
  void hello(int round);
  std::vector<int> rounds;
};

// ---- arrays ------------------------------------------------------------------------------------
int diagonal_map(const ck::Index& i, const ck::Index&, int npes) { return (i.x[0] + i.x[1]) % npes; }

struct Cell2 : ck::ArrayElement<Cell2, 2> {
  int expected_pe;
  int kind;
  explicit Cell2(int kind);
  void ping(int round);
};
struct Cell3 : ck::ArrayElement<Cell3, 3> {
  double w;
  explicit Cell3(double weight) : w(weight) {}
  void ping(int round);
};
struct Sparse : ck::ArrayElement<Sparse> {
  std::string name;
  explicit Sparse(std::string n) : name(std::move(n)) {}
  void ask(int token);
};

// ---- ordering ----------------------------------------------------------------------------------
struct Orderer : ck::ArrayElement<Orderer> {
  int next = 0;
  void start(int count);
  void seq(int n, int count);
  void prio(int tag);
};

// ---- reductions ---------------------------------------------------------------------------------
struct Reducers : ck::ArrayElement<Reducers> {
  void run(int rounds);
};
struct GroupRed : ck::Group<GroupRed> {
  void run();
};
// Contributes from its constructor, with several elements per PE (block map): the
// reduction must wait for the elements not yet constructed and complete exactly once.
struct CtorReducer : ck::ArrayElement<CtorReducer> {
  CtorReducer();
};
struct MinMaxPair {
  int lo = 0, hi = 0;
  void pup(PUP::er& p) { p | lo; p | hi; }
};
MinMaxPair merge_range(const MinMaxPair& a, const MinMaxPair& b) {
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}

// ---- futures and threads ------------------------------------------------------------------------
struct Worker : ck::ArrayElement<Worker> {
  void compute(int x, ck::Future<long> result) { result.set(static_cast<long>(x) * x); }
};

// ---- channels -----------------------------------------------------------------------------------
// Pairs (i, i^1): a channel with callbacks carrying K buffers each way, and a second one
// (another sub-id) used with the blocking forms from a threaded entry method.
struct Chan : ck::ArrayElement<Chan> {
  static constexpr auto threaded_entries() { return ck::entries<&Chan::blocking>; }
  static constexpr int K = 16;
  ck::CkChannel ch, ch2;
  std::vector<TestBuffer> out, in;
  int sends_done = 0, recvs_done = 0;
  int partner() const { return thisIndex ^ 1; }
  void start();
  void sent(std::size_t bytes);
  void got(std::size_t bytes);
  void blocking();
  void maybe_done();
  bool blocking_done = false;
  void collide();
};

// ---- GPU Messaging API -----------------------------------------------------------------------------
// take() gets three device buffers (1000 B, 0 B, 1 MiB) between host arguments; the post
// entry names where they go; the sender hears when each has left.
constexpr std::size_t kGpmA = 1000, kGpmC = 1 << 20;
constexpr int kGpmRounds = 5;
template <class Self>
struct GpmState {
  TestBuffer out_a, out_c, in_a, in_c;
  int round = 0, sent_cbs = 0;
  bool done = false;
  void init(int me) {
    out_a.resize(kGpmA);
    out_c.resize(kGpmC);
    in_a.resize(kGpmA);
    in_c.resize(kGpmC);
    (void)me;
  }
  void prepare(int me, int r) {
    fill_pattern(out_a.host, me, r);
    fill_pattern(out_c.host, me, 1000 + r);
    out_a.push();
    out_c.push();
  }
  void check(int from, int r) {
    in_a.pull();
    in_c.pull();
    if (!check_pattern(in_a.host, from, r) || !check_pattern(in_c.host, from, 1000 + r))
      CkAbort("GPU Messaging round %d from %d: device data corrupted", r, from);
  }
};

struct Gpm : ck::ArrayElement<Gpm>, GpmState<Gpm> {
  static constexpr auto post_entries() { return ck::post_list<ck::post<&Gpm::take, &Gpm::take_post>>{}; }
  int partner() const { return thisIndex ^ 1; }
  void start();
  void send_round();
  void take_post(ck::CkDeviceBuffer& a, int& round, ck::CkDeviceBuffer& b, std::string& note, ck::CkDeviceBuffer& c);
  void take(ck::CkDeviceBuffer a, int round, ck::CkDeviceBuffer b, std::string note, ck::CkDeviceBuffer c);
  void sent(std::size_t bytes);
  void maybe_done();
  void try_send();
  bool leave_null = false;
  int sent_rounds = 0;
};

struct GpmGroup : ck::Group<GpmGroup>, GpmState<GpmGroup> {
  static constexpr auto post_entries() { return ck::post_list<ck::post<&GpmGroup::take, &GpmGroup::take_post>>{}; }
  void start();
  void take_post(ck::CkDeviceBuffer& a, int& round, ck::CkDeviceBuffer& c);
  void take(ck::CkDeviceBuffer a, int round, ck::CkDeviceBuffer c);
  void sent(std::size_t) { ++sent_cbs; maybe_done(); }
  void maybe_done();
  int got = 0;
};

// ---- quiescence ---------------------------------------------------------------------------------
struct Spreader : ck::ArrayElement<Spreader> {
  void spread(int depth);
};
int spread_processed = 0;  // per PE

void plain_function(int value, std::string text);

struct Main : ck::MainChare<Main> {
  static constexpr auto threaded_entries() { return ck::entries<&Main::futures, &Main::callbacks_thread>; }
  int pending = 0;
  std::vector<int> seen;
  std::map<int, int> by_round;
  std::multiset<std::string> results;
  ck::ArrayProxy<Orderer> orderers;

  explicit Main(ck::MainArgs args) {
    expect(args.argc >= 2, "usage: core_megatest MODE");
    mode = args.argv[1];
    useCuda = args.argc > 2 && std::string(args.argv[2]) == "cuda";
    mainProxy = thisProxy;
    roVector = std::vector<int>{4, 5, 6};
    const std::string& m = *mode;
    if (m == "marshal") marshal();
    else if (m == "chares") chares();
    else if (m == "groups") groups();
    else if (m == "arrays") arrays();
    else if (m == "fifo") fifo();
    else if (m == "priority") priority();
    else if (m == "callbacks") thisProxy.send<&Main::callbacks_thread>();
    else if (m == "reductions") reductions();
    else if (m == "reductions_remote") reductions(true);
    else if (m == "futures") thisProxy.send<&Main::futures>();
    else if (m == "qd") qd();
    else if (m == "channels") channels();
    else if (m == "gpumsg") gpumsg();
    else if (m == "exit") CkExit(5);
    else errors(m);
  }

  // -- marshal
  void marshal() {
    auto a = ck::ArrayProxy<Marshal>::create(ck::dims(CkNumPes()), ck::Map::round_robin);
    pending = 2 * CkNumPes() + 3;
    a[0].send<&Marshal::tmpl<1>>(10);
    a[0].send<&Marshal::tmpl<2>>(20);
    a[0].send<&Marshal::tmpl<3>>(30);
    std::vector<Particle> ps = {sample_particle(), Particle{0, 0, {}, ""}};
    for (int i = 0; i < CkNumPes(); ++i) {
      a[i].send<&Marshal::many>(i, 3.25, std::string("text ") + std::to_string(i), sample_doubles(1000),
                                std::array<int, 3>{7, 8, 9}, sample_particle(), std::make_pair(42, std::string("x")),
                                ps, true, 'z');
      std::vector<double> big = sample_doubles(100000);
      a[i].send<&Marshal::span>(100000, std::span<const double>(big), std::vector<float>{1.f, 2.f});
    }
  }
  void marshal_done(int) {
    if (--pending == 0) finish("marshal");
  }

  // -- chares
  void chares() {
    const int last = CkNumPes() - 1;
    auto c = ck::ChareProxy<Counter>::create_on(last, 100);
    auto placed = ck::ChareProxy<Counter>::create(1000);
    auto g = ck::GroupProxy<Forwarder>::create();
    // A third party (every group element) sends to c, maybe before c exists there.
    g.send<&Forwarder::poke>(c);
    c.send<&Counter::add>(1, -1);
    placed.send<&Counter::add>(1, -1);
    pending = CkNumPes() + 2;
  }
  void counter_value(int value) {
    results.insert(std::to_string(value));
    if (--pending > 0) return;
    // placed: 1001 once; c: 100 + 1 + 10 per PE, in some order.
    auto placed = results.find("1001");
    expect(placed != results.end(), "runtime-placed chare got its message");
    results.erase(placed);
    int top = 0;
    for (const auto& r : results) top = std::max(top, std::stoi(r));
    if (top != 101 + 10 * CkNumPes()) CkAbort("chare on the last PE ended at %d", top);
    finish("chares");
  }

  // -- groups
  void groups() {
    auto g = ck::GroupProxy<Forwarder>::create();
    pending = 3 * CkNumPes();
    for (int r = 0; r < 3; ++r) g.send<&Forwarder::hello>(r);
  }
  void group_hello(int pe, int round) {
    seen.push_back(pe * 10 + round);
    if (--pending > 0) return;
    std::sort(seen.begin(), seen.end());
    for (int pe2 = 0, k = 0; pe2 < CkNumPes(); ++pe2)
      for (int r = 0; r < 3; ++r, ++k)
        if (seen[static_cast<std::size_t>(k)] != pe2 * 10 + r) CkAbort("group broadcast missed or repeated (PE %d, round %d)", pe2, r);
    finish("groups");
  }

  // -- arrays
  void arrays() {
    auto a2 = ck::ArrayProxy<Cell2>::create(ck::dims(3, 5), ck::Map::user<&diagonal_map>(), 2);
    auto a2b = ck::ArrayProxy<Cell2>::create(ck::dims(4, 2), ck::Map::block, 0);
    auto a3 = ck::ArrayProxy<Cell3>::create(ck::dims(2, 3, 4), ck::Map::round_robin, 0.5);
    auto sp = ck::ArrayProxy<Sparse>::create_empty(1);
    pending = 2 * (15 + 8 + 24) + 3;
    a2.send<&Cell2::ping>(0);
    a2b.send<&Cell2::ping>(0);
    a3.send<&Cell3::ping>(0);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) a2(i, j).send<&Cell2::ping>(1);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 2; ++j) a2b(i, j).send<&Cell2::ping>(1);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) a3(i, j, k).send<&Cell3::ping>(1);
    // Sparse insertion: messages may overtake the insertion and must wait for it.
    for (int id : {7, 1000, 123456}) {
      sp[id].send<&Sparse::ask>(id);
      sp.insert(ck::index(id), std::string("elem") + std::to_string(id));
    }
  }
  std::set<std::string> acked;
  // Each (array, element, round) must ack exactly once: broadcasts and point-to-point
  // sends reach every element, and none twice.
  void array_ack(std::string who) {
    if (!acked.insert(who).second) CkAbort("%s delivered twice", who.c_str());
    if (--pending == 0) finish("arrays");
  }

  // -- fifo: equal-priority messages between a pair arrive in order
  void fifo() {
    orderers = ck::ArrayProxy<Orderer>::create(ck::dims(2), ck::Map::round_robin);
    orderers[0].send<&Orderer::start>(5000);
  }
  void fifo_done() { finish("fifo"); }

  // -- priority: queued together, run by priority (smaller first), expedited first
  void priority() {
    orderers = ck::ArrayProxy<Orderer>::create(ck::dims(1), ck::Map::block);
    auto e = orderers[0];
    e.opts({.priority = 5}).send<&Orderer::prio>(5);
    e.opts({.priority = -3}).send<&Orderer::prio>(-3);
    e.send<&Orderer::prio>(0);
    e.opts({.priority = 5, .expedited = true}).send<&Orderer::prio>(100);
    e.opts({.priority = -1}).send<&Orderer::prio>(-1);
  }
  void prio_seen(std::vector<int> order) {
    const std::vector<int> want = {100, -3, -1, 0, 5};
    if (order != want) CkAbort("priority order wrong");
    finish("priority");
  }

  // -- callbacks of every kind (threaded: waits on a future for the thread-resume kind)
  void callbacks_thread() {
    pending = 0;
    auto chare = ck::ChareProxy<Counter>::create_on(CkNumPes() - 1, 0);
    auto arr = ck::ArrayProxy<Marshal>::create(ck::dims(3), ck::Map::round_robin);
    auto grp = ck::GroupProxy<Forwarder>::create();
    // to a chare's entry
    ck::CkCallback::to<&Counter::add>(chare).send(5, 99);
    // to this main chare (a singleton chare) with data
    ck::CkCallback::to<&Main::cb_value>(thisProxy).send(std::string("main"), 1);
    // to an array element and to a whole array
    ck::CkCallback::to<&Marshal::span>(arr[2]).send(3, std::vector<double>{0.5, 1.5, 2.5}, std::vector<float>{});
    ck::CkCallback::to<&Marshal::span>(arr).send(2, std::vector<double>{0.5, 1.5}, std::vector<float>{});
    // to a group element and a whole group
    ck::CkCallback::to<&Forwarder::hello>(grp[CkNumPes() - 1]).send(100);
    ck::CkCallback::to<&Forwarder::hello>(grp).send(200);
    // a plain function on the last PE
    ck::CkCallback::function<&plain_function>(CkNumPes() - 1).send(77, std::string("seventy-seven"));
    // ignore
    ck::CkCallback::ignore().send(1, 2, 3);
    // resume this thread: a future's callback
    auto f = ck::Future<double>::make();
    f.callback().send(2.5);
    double v = f.get();
    expect(v == 2.5, "future callback value");
    expected_callbacks = 1 /*counter*/ + 1 /*main*/ + 1 + 3 /*array*/ + 1 + CkNumPes() /*group*/ + 1 /*function*/;
    check_callbacks();
  }
  int expected_callbacks = -1;
  int got_callbacks = 0;
  void cb_value(std::string who, int n) {
    expect(who == "main" && n == 1, "callback to main carried its data");
    ++got_callbacks;
    check_callbacks();
  }
  void cb_arrived(int) {
    ++got_callbacks;
    check_callbacks();
  }
  void check_callbacks() {
    if (expected_callbacks >= 0 && got_callbacks == expected_callbacks) finish("callbacks");
  }

  // -- reductions
  void reductions(bool from_last_pe = false) {
    pending = 5 * 14 + 3 + 1;  // 5 rounds x 14 reductions + group (3) + constructor contributions
    ck::ArrayProxy<CtorReducer>::create(ck::dims(4 * CkNumPes() + 1), ck::Map::block);
    if (from_last_pe) {
      ck::GroupProxy<Forwarder>::create()[CkNumPes() - 1].send<&Forwarder::spawn_reducers>(5);
    } else {
      auto r = ck::ArrayProxy<Reducers>::create(ck::dims(7), ck::Map::round_robin);
      r.send<&Reducers::run>(5);
    }
    ck::GroupProxy<GroupRed>::create().send<&GroupRed::run>();
  }
  void check_int(const char* what, long value, long want) {
    if (value != want) CkAbort("reduction %s gave %ld, expected %ld", what, value, want);
  }
  void check_double(const char* what, double value, double want) {
    if (std::fabs(value - want) > 1e-9 * std::max(1.0, std::fabs(want)))
      CkAbort("reduction %s gave %g, expected %g", what, value, want);
  }
  void red_done() {
    if (--pending > 0) return;
    for (int r = 0; r < 5; ++r)
      if (by_round[7 * r] != 1) CkAbort("round %d's tagged sum arrived %d times", r, by_round[7 * r]);
    finish(mode->c_str());
  }
  int ctor_sums = 0;
  void r_ctor_sum(int v) {  // 0 + 1 + ... + 4n
    const int n = 4 * CkNumPes() + 1;
    if (++ctor_sums > 1) CkAbort("the constructors' reduction completed %d times", ctor_sums);
    check_int("sum from constructors", v, static_cast<long>(n) * (n - 1) / 2);
    red_done();
  }
  void r_sum_int(int v) {  // r*1000 + i over 7 elements: 7000 r + 21
    check_int("sum int", v % 1000, 21);
    if (v / 1000 % 7 != 0) CkAbort("rounds mixed: sum %d", v);
    red_done();
  }
  void r_sum_long_vec(std::vector<long> v) {  // {r, i}: {7 r, 21}
    check_int("vector<long> size", static_cast<long>(v.size()), 2);
    check_int("vector<long> sum of indices", v[1], 21);
    ++by_round[static_cast<int>(v[0])];
    red_done();
  }
  void r_max_double(double v) { check_double("max double", v, 6.5); red_done(); }
  void r_min_float(float v) { check_double("min float", v, 0.25); red_done(); }
  void r_product_int(int v) { check_int("product int", v, 5040); red_done(); }
  void r_land(int v) { check_int("logical and", v, 0); red_done(); }
  void r_lor(int v) { check_int("logical or", v, 1); red_done(); }
  void r_band(long v) { check_int("bitwise and", v, 0); red_done(); }
  void r_bor(long v) { check_int("bitwise or", v, 127); red_done(); }
  void r_concat(std::vector<int> v) {
    std::vector<int> want;
    for (int i = 0; i < 7; ++i) { want.push_back(i); want.push_back(10 * i); }
    std::sort(want.begin(), want.end());
    std::sort(v.begin(), v.end());
    if (v != want) CkAbort("concat reduction wrong (%zu values)", v.size());
    red_done();
  }
  void r_set(std::vector<std::pair<ck::Index, double>> v) {
    if (v.size() != 7) CkAbort("set reduction has %zu entries", v.size());
    for (int i = 0; i < 7; ++i)
      if (v[static_cast<std::size_t>(i)].first.x[0] != i || v[static_cast<std::size_t>(i)].second != i * 0.5)
        CkAbort("set reduction entry %d wrong", i);
    red_done();
  }
  void r_nop() { red_done(); }
  void r_user(MinMaxPair p) {
    check_int("user reducer min", p.lo, -6);
    check_int("user reducer max", p.hi, 6);
    red_done();
  }
  void r_vec_double(std::vector<double> v) {
    check_int("vector<double> size", static_cast<long>(v.size()), 3);
    check_double("vector sum [0]", v[0], 7);
    check_double("vector sum [1]", v[1], 21);
    check_double("vector sum [2]", v[2], -7);
    red_done();
  }
  void g_sum(int v) { check_int("group sum", v, CkNumPes() * (CkNumPes() - 1) / 2); red_done(); }
  void g_max(double v) { check_double("group max", v, CkNumPes() - 1); red_done(); }
  void g_nop() { red_done(); }

  // -- futures: a threaded entry waits for several futures set on other PEs
  void futures() {
    auto w = ck::ArrayProxy<Worker>::create(ck::dims(10), ck::Map::round_robin);
    std::vector<ck::Future<long>> fs;
    for (int i = 0; i < 10; ++i) {
      fs.push_back(ck::Future<long>::make());
      w[i].send<&Worker::compute>(i, fs.back());
    }
    long sum = 0;
    for (int i = 9; i >= 0; --i) sum += fs[static_cast<std::size_t>(i)].get();
    expect(sum == 285, "sum of squares from futures");
    finish("futures");
  }

  // -- channels
  int chan_pending = 0;
  void channels() {
    const int n = 2 * CkNumPes();
    chan_pending = n;
    ck::ArrayProxy<Chan>::create(ck::dims(n), ck::Map::round_robin).send<&Chan::start>();
  }
  void chan_done(int) {
    if (--chan_pending == 0) finish("channels");
  }

  // -- GPU Messaging API
  int gpm_pending = 0;
  void gpumsg() {
    const int n = 2 * CkNumPes();
    gpm_pending = n + CkNumPes();
    ck::ArrayProxy<Gpm>::create(ck::dims(n), ck::Map::round_robin).send<&Gpm::start>();
    ck::GroupProxy<GpmGroup>::create().send<&GpmGroup::start>();
  }
  void gpm_done(int) {
    if (--gpm_pending == 0) finish("gpumsg");
  }

  // -- quiescence detection
  void qd() {
    auto s = ck::ArrayProxy<Spreader>::create(ck::dims(4 * CkNumPes()), ck::Map::round_robin);
    s.send<&Spreader::spread>(4);
    ck::start_qd(ck::CkCallback::to<&Main::quiet>(thisProxy));
  }
  int quiet_reports = 0;
  long quiet_total = 0;
  void quiet() {
    // Everything the spreaders started must have run by now: ask every PE for its count.
    ck::GroupProxy<Forwarder>::create().send<&Forwarder::hello>(-1);
  }
  void spread_count(int n) {
    quiet_total += n;
    if (++quiet_reports < CkNumPes()) return;
    // 4N elements, each spreading a tree of depth 4 with fan-out 2: 4N * (2^5 - 1) runs.
    const long want = 4L * CkNumPes() * 31;
    if (quiet_total != want) CkAbort("quiescence fired early: %ld of %ld messages ran", quiet_total, want);
    finish("qd");
  }

  // -- errors that must be reported clearly
  void errors(const std::string& m) {
    if (m == "oob") {
      auto a = ck::ArrayProxy<Cell3>::create(ck::dims(2, 2, 2), ck::Map::block, 1.0);
      a(1, 2, 0).send<&Cell3::ping>(0);
    } else if (m == "redmismatch") {
      ck::ArrayProxy<Reducers>::create(ck::dims(4), ck::Map::round_robin).send<&Reducers::run>(-1);
    } else if (m == "getoutside") {
      ck::Future<int>::make().get();
    } else if (m == "charecontribute") {
      ck::ChareProxy<Counter>::create_on(0, -7).send<&Counter::add>(1, 0);
    } else if (m == "gpumsg_nodest") {
      auto a = ck::ArrayProxy<Gpm>::create(ck::dims(2), ck::Map::block);
      a.send<&Gpm::start>();
    } else if (m == "chanidtwice") {
      ck::ArrayProxy<Chan>::create(ck::dims(3), ck::Map::block).send<&Chan::collide>();
    } else if (m == "cbtype") {
      ck::CkCallback::to<&Main::cb_value>(thisProxy).send(3.5);
    } else {
      CkAbort("unknown mode '%s'", m.c_str());
    }
  }
};

// ---- out-of-line entry methods (they name Main's entries) ------------------------------------------
void Marshal::many(int i, double d, std::string s, std::vector<double> v, std::array<int, 3> a,
                   Particle p, std::pair<int, std::string> pr, std::vector<Particle> ps, bool b, char c) {
  expect(i == thisIndex && d == 3.25 && s == "text " + std::to_string(i), "scalars and string");
  expect(v == sample_doubles(1000), "vector<double>");
  expect(a == (std::array<int, 3>{7, 8, 9}), "std::array");
  expect(p == sample_particle(), "pup type");
  expect(pr.first == 42 && pr.second == "x", "pair");
  expect(ps.size() == 2 && ps[0] == sample_particle() && ps[1].ids.empty(), "vector of pup types");
  expect(b && c == 'z', "bool and char");
  expect(*roVector == std::vector<int>({4, 5, 6}), "readonly vector");
  mainProxy->send<&Main::marshal_done>(0);
}
void Marshal::span(int n, std::span<const double> data, std::vector<float> f) {
  expect(static_cast<int>(data.size()) == n, "span length");
  expect(reinterpret_cast<std::uintptr_t>(data.data()) % alignof(double) == 0, "span data aligned");
  for (int k = 0; k < n; ++k)
    if (data[static_cast<std::size_t>(k)] != (n > 10 ? std::sqrt(static_cast<double>(k)) + 0.5 : 0.5 + k))
      CkAbort("span element %d wrong", k);
  if (n > 10) {
    expect(f == std::vector<float>({1.f, 2.f}), "vector<float> after a span");
    mainProxy->send<&Main::marshal_done>(0);
  } else {
    mainProxy->send<&Main::cb_arrived>(n);
  }
}

void Counter::add(int d, int from) {
  value += d;
  if (*mode == "callbacks") {
    expect(d == 5 && from == 99, "callback to a chare carried its data");
    mainProxy->send<&Main::cb_arrived>(value);
    return;
  }
  if (*mode == "charecontribute") contribute(ck::CkCallback::ignore());
  (void)from;
  mainProxy->send<&Main::counter_value>(value);
}

void Forwarder::hello(int round) {
  if (*mode == "callbacks") {
    mainProxy->send<&Main::cb_arrived>(round);
    return;
  }
  if (*mode == "qd") {
    mainProxy->send<&Main::spread_count>(spread_processed);
    return;
  }
  expect(thisProxy.ckLocalBranch() == this, "ckLocalBranch is this element");
  mainProxy->send<&Main::group_hello>(thisIndex, round);
}

void Forwarder::spawn_reducers(int rounds) {
  ck::ArrayProxy<Reducers>::create(ck::dims(7), ck::Map::round_robin).send<&Reducers::run>(rounds);
}

void plain_function(int value, std::string text) {
  expect(value == 77 && text == "seventy-seven" && CkMyPe() == CkNumPes() - 1, "function callback");
  mainProxy->send<&Main::cb_arrived>(value);
}

Cell2::Cell2(int k) : kind(k) {
  const int n = CkNumPes();
  if (kind == 2) expected_pe = (thisIndex[0] + thisIndex[1]) % n;
  else expected_pe = (thisIndex[0] * 2 + thisIndex[1]) * n / 8;  // block over 4x2
  if (CkMyPe() != expected_pe) CkAbort("element (%d, %d) on PE %d, map says %d", thisIndex[0], thisIndex[1], CkMyPe(), expected_pe);
}
void Cell2::ping(int round) {
  mainProxy->send<&Main::array_ack>(std::string(kind == 2 ? "diag" : "block") +
                                    std::to_string(thisIndex[0]) + "," + std::to_string(thisIndex[1]) + "/" + std::to_string(round));
}
void Cell3::ping(int round) {
  int lin = (thisIndex[0] * 3 + thisIndex[1]) * 4 + thisIndex[2];
  if (CkMyPe() != lin % CkNumPes()) CkAbort("round-robin placed (%d,%d,%d) on PE %d", thisIndex[0], thisIndex[1], thisIndex[2], CkMyPe());
  expect(w == 0.5, "constructor argument");
  mainProxy->send<&Main::array_ack>("c3:" + std::to_string(lin) + "/" + std::to_string(round));
}
void Sparse::ask(int token) {
  expect(name == "elem" + std::to_string(token) && thisIndex == token, "inserted element got its message");
  mainProxy->send<&Main::array_ack>("sparse" + std::to_string(token));
}

void Orderer::start(int count) {
  for (int n = 0; n < count; ++n) thisProxy[1].send<&Orderer::seq>(n, count);
}
void Orderer::seq(int n, int count) {
  if (n != next) CkAbort("FIFO broken: got %d, expected %d", n, next);
  if (++next == count) mainProxy->send<&Main::fifo_done>();
}
std::vector<int> prio_order;
void Orderer::prio(int tag) {
  prio_order.push_back(tag);
  if (prio_order.size() == 5) mainProxy->send<&Main::prio_seen>(prio_order);
}

template <int K>
void Marshal::tmpl(int v) {
  if (v != 10 * K) CkAbort("entry tmpl<%d> got %d: instances of a member template were mixed up", K, v);
  mainProxy->send<&Main::marshal_done>(0);
}

CtorReducer::CtorReducer() { contribute(thisIndex, ck::Reducer::sum, ck::CkCallback::to<&Main::r_ctor_sum>(*mainProxy)); }

void Reducers::run(int rounds) {
  const int i = thisIndex;
  const auto m = *mainProxy;
  using ck::CkCallback;
  using ck::Reducer;
  if (rounds < 0) {  // disagreeing contributors: must be reported
    if (i % 2) contribute(1, Reducer::sum, CkCallback::ignore());
    else contribute(1.0, Reducer::sum, CkCallback::ignore());
    return;
  }
  // Every round is contributed at once: rounds are in flight together and must not mix.
  for (int r = 0; r < rounds; ++r) {
    contribute(r * 1000 + i, Reducer::sum, CkCallback::to<&Main::r_sum_int>(m));
    contribute(std::vector<long>{r, i}, Reducer::sum, CkCallback::to<&Main::r_sum_long_vec>(m));
    contribute(i + 0.5, Reducer::max, CkCallback::to<&Main::r_max_double>(m));
    contribute(i + 0.25f, Reducer::min, CkCallback::to<&Main::r_min_float>(m));
    contribute(i + 1, Reducer::product, CkCallback::to<&Main::r_product_int>(m));
    contribute(i % 2, Reducer::logical_and, CkCallback::to<&Main::r_land>(m));
    contribute(i == 3 ? 1 : 0, Reducer::logical_or, CkCallback::to<&Main::r_lor>(m));
    contribute(1L << i, Reducer::bitwise_and, CkCallback::to<&Main::r_band>(m));
    contribute(1L << i, Reducer::bitwise_or, CkCallback::to<&Main::r_bor>(m));
    contribute(std::vector<int>{i, 10 * i}, Reducer::concat, CkCallback::to<&Main::r_concat>(m));
    contribute(i * 0.5, Reducer::set, CkCallback::to<&Main::r_set>(m));
    contribute(CkCallback::to<&Main::r_nop>(m));
    contribute(MinMaxPair{-i, i}, ck::UserReducer<&merge_range>{}, CkCallback::to<&Main::r_user>(m));
    contribute(std::vector<double>{1, static_cast<double>(i), -1}, Reducer::sum,
               CkCallback::to<&Main::r_vec_double>(m));
  }
}

void GroupRed::run() {
  auto m = *mainProxy;
  contribute(thisIndex, ck::Reducer::sum, ck::CkCallback::to<&Main::g_sum>(m));
  contribute(static_cast<double>(thisIndex), ck::Reducer::max, ck::CkCallback::to<&Main::g_max>(m));
  contribute(ck::CkCallback::to<&Main::g_nop>(m));
}


std::size_t chan_size(int k) {
  static const std::size_t sizes[] = {0, 1, 8, 1000, 40000, 1 << 20, 3, 70000};
  return sizes[k % 8];
}
void Chan::start() {
#ifdef UCHARM_TEST_CUDA
  if (*useCuda) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) CkAbort("no CUDA device visible");
    cudaSetDevice(CkMyPe() % n);
  }
#else
  if (*useCuda) CkAbort("'cuda' needs a build with CUDA");
#endif
  ch = ck::CkChannel(thisProxy[thisIndex], thisProxy[partner()]);
  ch2 = ck::CkChannel(thisProxy[thisIndex], thisProxy[partner()], /*sub_id=*/1);
  if (ch.in_id() == ch2.in_id()) CkAbort("two channel ends on one PE got the same incoming id");
  out.resize(K);
  in.resize(K);
  for (int k = 0; k < K; ++k) {  // receives first for half, sends first for the other half
    in[static_cast<std::size_t>(k)].resize(chan_size(k));
    out[static_cast<std::size_t>(k)].resize(chan_size(k));
    fill_pattern(out[static_cast<std::size_t>(k)].host, thisIndex, k);
    out[static_cast<std::size_t>(k)].push();
  }
  for (int k = 0; k < K; ++k) {
    auto& o = out[static_cast<std::size_t>(k)];
    auto& i = in[static_cast<std::size_t>(k)];
    if ((k + thisIndex) % 2) {
      ch.recv(i.data(), i.size(), ck::CkCallback::to<&Chan::got>(thisProxy[thisIndex]));
      ch.send(o.data(), o.size(), ck::CkCallback::to<&Chan::sent>(thisProxy[thisIndex]));
    } else {
      ch.send(o.data(), o.size(), ck::CkCallback::to<&Chan::sent>(thisProxy[thisIndex]));
      ch.recv(i.data(), i.size(), ck::CkCallback::to<&Chan::got>(thisProxy[thisIndex]));
    }
  }
  thisProxy[thisIndex].send<&Chan::blocking>();
}
void Chan::sent(std::size_t) {
  ++sends_done;
  maybe_done();
}
void Chan::got(std::size_t bytes) {
  // Receives match in order, but may complete out of order (a small transfer overtakes a
  // large one): the contents are checked once all are in.
  bool known = false;
  for (int k = 0; k < 8; ++k) known = known || bytes == chan_size(k);
  if (!known) CkAbort("channel receive completed with %zu bytes, no such transfer", bytes);
  ++recvs_done;
  maybe_done();
}
void Chan::blocking() {  // ping-pong on the second channel, blocking in this thread
  TestBuffer buf;
  buf.resize(4096);
  for (int r = 0; r < 10; ++r) {
    const bool mine = (r + thisIndex) % 2 == 0;  // who sends this round
    if (mine) {
      fill_pattern(buf.host, thisIndex, 100 + r);
      buf.push();
      ch2.send_wait(buf.data(), buf.size());
    } else {
      ch2.recv_wait(buf.data(), buf.size());
      buf.pull();
      if (!check_pattern(buf.host, partner(), 100 + r)) CkAbort("blocking channel round %d corrupted", r);
    }
  }
  blocking_done = true;
  maybe_done();
}
void Chan::maybe_done() {
  if (sends_done < K || recvs_done < K || !blocking_done) return;
  for (int k = 0; k < K; ++k) {
    in[static_cast<std::size_t>(k)].pull();
    if (!check_pattern(in[static_cast<std::size_t>(k)].host, partner(), k))
      CkAbort("channel buffer %d from %d corrupted", k, partner());
  }
  sends_done = -1000;  // once
  mainProxy->send<&Main::chan_done>(thisIndex);
}
void Chan::collide() {  // two channels told to receive on the same id on one PE
  if (thisIndex != 0) return;
  static ck::CkChannel a, b;
  a = ck::CkChannel::with_ids(ckRef(), ckIndex(), ckRef(), ck::index(1), 7, 9);
  b = ck::CkChannel::with_ids(ckRef(), ckIndex(), ckRef(), ck::index(2), 8, 9);
}

void select_gpu() {
#ifdef UCHARM_TEST_CUDA
  if (*useCuda) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) CkAbort("no CUDA device visible");
    cudaSetDevice(CkMyPe() % n);
  }
#endif
}

void Gpm::start() {
  select_gpu();
  init(thisIndex);
  leave_null = *mode == "gpumsg_nodest";
  try_send();
}
// Round r goes out once round r-1 came in and our own round r-1 buffers have left (a
// buffer must not be rewritten before its sender callback: a rendezvous reads it late).
void Gpm::try_send() {
  if (sent_rounds >= kGpmRounds || round < sent_rounds || sent_cbs < 2 * sent_rounds) return;
  send_round();
  ++sent_rounds;
}
void Gpm::send_round() {
  prepare(thisIndex, round);
  auto me = thisProxy[thisIndex];
  thisProxy[partner()].send<&Gpm::take>(ck::CkDeviceBuffer(out_a.data(), kGpmA, ck::CkCallback::to<&Gpm::sent>(me)),
                                        round, ck::CkDeviceBuffer(nullptr, 0), std::string("note ") + std::to_string(round),
                                        ck::CkDeviceBuffer(out_c.data(), kGpmC, ck::CkCallback::to<&Gpm::sent>(me)));
}
void Gpm::take_post(ck::CkDeviceBuffer& a, int& r, ck::CkDeviceBuffer& b, std::string& note, ck::CkDeviceBuffer& c) {
  // The host arguments are here already; the device ones are not.
  if (note != "note " + std::to_string(r) || a.size != kGpmA || b.size != 0 || c.size != kGpmC)
    CkAbort("post entry saw wrong host arguments or sizes");
  a.ptr = leave_null ? nullptr : in_a.data();
  c.ptr = in_c.data();
}
void Gpm::take(ck::CkDeviceBuffer a, int r, ck::CkDeviceBuffer b, std::string note, ck::CkDeviceBuffer c) {
  if (a.data() != in_a.data() || c.data() != in_c.data() || b.size != 0) CkAbort("entry got other buffers than the post named");
  if (r != round || note != "note " + std::to_string(r)) CkAbort("round %d arrived during round %d", r, round);
  check(partner(), r);
  ++round;
  try_send();
  maybe_done();
}
void Gpm::sent(std::size_t bytes) {
  if (bytes != kGpmA && bytes != kGpmC) CkAbort("sender completion with %zu bytes", bytes);
  ++sent_cbs;
  try_send();
  maybe_done();
}
void Gpm::maybe_done() {
  if (done || round < kGpmRounds || sent_cbs < 2 * kGpmRounds) return;
  done = true;
  mainProxy->send<&Main::gpm_done>(thisIndex);
}

void GpmGroup::start() {  // a ring of group elements, sender callbacks on both buffers
  select_gpu();
  init(thisIndex);
  prepare(thisIndex, 0);
  auto next = thisProxy[(thisIndex + 1) % CkNumPes()];
  auto me = thisProxy[thisIndex];
  next.send<&GpmGroup::take>(ck::CkDeviceBuffer(out_a.data(), kGpmA, ck::CkCallback::to<&GpmGroup::sent>(me)), 0,
                             ck::CkDeviceBuffer(out_c.data(), kGpmC, ck::CkCallback::to<&GpmGroup::sent>(me)));
}
void GpmGroup::take_post(ck::CkDeviceBuffer& a, int&, ck::CkDeviceBuffer& c) {
  a.ptr = in_a.data();
  c.ptr = in_c.data();
}
void GpmGroup::take(ck::CkDeviceBuffer, int r, ck::CkDeviceBuffer) {
  check((thisIndex + CkNumPes() - 1) % CkNumPes(), r);
  ++got;
  maybe_done();
}
void GpmGroup::maybe_done() {
  if (done || got < 1 || sent_cbs < 2) return;
  done = true;
  mainProxy->send<&Main::gpm_done>(thisIndex);
}

void Spreader::spread(int depth) {
  ++spread_processed;
  if (depth == 0) return;
  const int n = 4 * CkNumPes();
  thisProxy[(thisIndex * 7 + 1) % n].send<&Spreader::spread>(depth - 1);
  thisProxy[(thisIndex * 3 + 2) % n].send<&Spreader::spread>(depth - 1);
}

}  // namespace

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
