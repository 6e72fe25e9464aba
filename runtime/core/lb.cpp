// Load balancing at sync points (Charm++'s AtSync mode), and the core's command-line options.
//
// Elements of arrays whose constructor set usesAtSync call AtSync(); once every such element
// on a PE waits, the PE sends its measurements (each element's entry-method time since the
// last step) to PE 0. PE 0 asks the PEs that have no such element to report too, runs the
// strategy (+balancer) on all reports, and sends the moves to every PE. Each PE migrates
// the elements it must give away and counts the ones it must receive; when all PEs are
// done, PE 0 resumes everyone and every waiting element's ResumeFromSync() runs.
#include "internal.h"
#include "lb_strategy.h"

#include <cstdio>
#include <map>
#include <cstdlib>
#include <cstring>
#include <string>

namespace ck::detail {

namespace {

enum class LbMsg : std::uint8_t { Stats, Start, Decision, Done, Resume, LocalResume };

LbState& lbs() { return core().lb; }


template <class F>
void send_lb(int pe, LbMsg type, F&& body) {  // pe < 0: to all PEs
  std::uint8_t t = static_cast<std::uint8_t>(type);
  PUP::er s = PUP::er::sizer();
  s | t;
  body(s);
  const std::size_t total = CmiMsgHeaderSizeBytes + s.size();
  void* m = CmiAlloc(total);
  PUP::er p = PUP::er::packer(CmiMsgPayload(m), s.size());
  p | t;
  body(p);
  CmiSetHandler(m, core().h_lb);
  // Counted for quiescence detection: a balancing step in progress is not quiescence.
  core().sent += pe < 0 ? static_cast<std::uint64_t>(CmiNumPes()) : 1;
  if (pe < 0) CmiSyncBroadcastAllAndFree(total, m);
  else CmiSyncSendAndFree(pe, total, m);
}

template <class F>
void for_each_sync_element(F&& f) {
  for (auto& [id, c] : core().collections)
    if (c->ref.kind == Kind::Array)
      for (std::size_t i = 0; i < c->local.size(); ++i)
        if (c->local[i]->usesAtSync) f(*c, c->local[i]);
}

void maybe_report() {
  LbState& s = lbs();
  if (s.reported) return;
  int total = 0, waiting = 0;
  for_each_sync_element([&](Collection&, ChareBase* o) {
    ++total;
    if (ElementAccess::rt(o).at_sync) ++waiting;
  });
  if (waiting < total || (total == 0 && !s.started)) return;
  std::vector<ObjLoad> objs;
  for_each_sync_element([&](Collection& c, ChareBase* o) {
    objs.push_back(ObjLoad{c.ref.id, o->ckIndex(), ElementAccess::rt(o).load, o->isMigratable()});
  });
  // Background: this PE's time since the last step that was neither idle nor in a
  // balanced element's entry methods (other chares, groups, the runtime itself).
  const double now = CmiWallTimer();
  double in_objs = 0;
  for (const ObjLoad& o : objs) in_objs += o.load;
  const double idle = s.idle + (s.idle_since >= 0 ? now - s.idle_since : 0);
  double background = std::max(0.0, (now - s.since) - idle - in_objs);
  std::vector<CommEdge> edges;
  for (auto& [key, bytes] : core().comm)
    edges.push_back(CommEdge{key.first.collection, key.first.idx, key.second.collection, key.second.idx, bytes});
  core().comm.clear();
  s.reported = true;
  std::uint32_t step = s.step;
  int me = CmiMyPe();
  send_lb(0, LbMsg::Stats, [&](PUP::er& p) { p | step; p | me; p | background; p | objs; p | edges; });
}

void maybe_done() {
  LbState& s = lbs();
  if (!s.decided || s.arrivals < s.expected_arrivals) return;
  s.decided = false;
  s.arrivals -= s.expected_arrivals;
  s.expected_arrivals = 0;
  std::uint32_t step = s.step;
  send_lb(0, LbMsg::Done, [&](PUP::er& p) { p | step; });
}

// PE 0: every PE reported; decide and send the moves.
void decide() {
  LbState& s = lbs();
  const int n = CmiNumPes();
  lb::Stats st;
  st.num_pes = n;
  st.pe_background = s.background;
  st.pe_background.resize(static_cast<std::size_t>(n), 0.0);
  std::vector<const ObjLoad*> objs;
  for (auto& [pe, list] : s.gathered)
    for (const ObjLoad& o : list) {
      st.objects.push_back(lb::Object{objs.size(), pe, o.load, o.migratable});
      objs.push_back(&o);
    }
  std::map<std::pair<std::uint64_t, std::vector<std::int32_t>>, std::uint32_t> which;  // element -> object
  auto key = [](std::uint64_t c, const Index& i) {
    return std::make_pair(c, std::vector<std::int32_t>(i.x, i.x + kMaxDims));
  };
  for (std::size_t i = 0; i < objs.size(); ++i) which[key(objs[i]->collection, objs[i]->idx)] = static_cast<std::uint32_t>(i);
  for (const CommEdge& e : s.edges) {
    auto a = which.find(key(e.from_collection, e.from)), b = which.find(key(e.to_collection, e.to));
    if (a != which.end() && b != which.end() && a->second != b->second) st.edges.push_back(lb::Edge{a->second, b->second, e.bytes});
  }
  s.edges.clear();
  std::vector<int> to(st.objects.size());
  for (std::size_t i = 0; i < to.size(); ++i) to[i] = st.objects[i].pe;
  const double now = CmiWallTimer();
  const bool due = now - s.last_time >= s.period;
  if (due && !st.objects.empty()) {
    try {
      to = s.strategy(st);
    } catch (const std::exception& x) {
      CkAbort("load balancer %s failed: %s", s.balancer.c_str(), x.what());
    }
    s.last_time = now;
  }
  std::vector<Move> moves;
  std::vector<double> before(static_cast<std::size_t>(n), 0.0), after(static_cast<std::size_t>(n), 0.0);
  before = after = st.pe_background;
  for (std::size_t i = 0; i < to.size(); ++i) {
    before[static_cast<std::size_t>(st.objects[i].pe)] += st.objects[i].load;
    after[static_cast<std::size_t>(to[i])] += st.objects[i].load;
    if (to[i] != st.objects[i].pe) moves.push_back(Move{objs[i]->collection, objs[i]->idx, st.objects[i].pe, to[i]});
  }
  if (trace::enabled())
    trace::lb_step(static_cast<int>(s.step), s.balancer.c_str(), before, after, static_cast<int>(moves.size()),
                   static_cast<int>(to.size()));
  if (s.debug) {
    auto ratio = [&](const std::vector<double>& l) {
      double mx = 0, sum = 0;
      for (double v : l) { mx = std::max(mx, v); sum += v; }
      return sum > 0 ? mx / (sum / n) : 1.0;
    };
    std::printf("ucharm LB step %u (%s%s): %zu of %zu elements moved; max/avg PE load %.3f -> %.3f\n", s.step,
                s.balancer.c_str(), due ? "" : ", skipped: +LBPeriod not elapsed", moves.size(), to.size(),
                ratio(before), ratio(after));
    std::fflush(stdout);
  }
  s.gathered.clear();
  s.background.assign(static_cast<std::size_t>(n), 0.0);
  s.reports = 0;
  std::uint32_t step = s.step;
  send_lb(-1, LbMsg::Decision, [&](PUP::er& p) { p | step; p | moves; });
}

void on_decision(std::vector<Move>& moves) {
  LbState& s = lbs();
  const int me = CmiMyPe();
  for (const Move& m : moves) {
    // Every PE learns where the moved elements go: its routes are right after the step (a
    // CkDeviceBuffer send, which cannot be forwarded, goes to the right PE after ResumeFromSync).
    Route& r = core().routes[RouteKey{m.collection, m.idx}];
    r.pe = m.to;
    core().last_route = nullptr;
    if (m.to == me) ++s.expected_arrivals;
    if (m.from != me) continue;
    Collection* c = find_collection(m.collection);
    ChareBase* obj = c ? LocationManager::find_local(*c, m.idx) : nullptr;
    if (!obj) CkAbort("load balancer: element %s is no longer on PE %d (moved during a balancing step?)", m.idx.str().c_str(), me);
    migrate_out(*c, obj, m.to, true);
  }
  s.decided = true;
  maybe_done();
}

void on_resume() {
  LbState& s = lbs();
  ++s.step;
  s.since = CmiWallTimer();  // background and idle time start again
  s.idle = 0;
  if (s.idle_since >= 0) s.idle_since = s.since;
  s.reported = s.started = false;
  std::vector<ChareBase*> resume;
  for_each_sync_element([&](Collection&, ChareBase* o) {
    ElementRuntime& rt = ElementAccess::rt(o);
    if (!rt.at_sync) return;
    rt.at_sync = false;
    rt.load = 0;
    resume.push_back(o);
  });
  for (ChareBase* o : resume) o->ResumeFromSync();  // may call AtSync again
}

}  // namespace

void lb_handler(void* msg) {
  LbState& s = lbs();
  ++core().processed;
  PUP::er p = PUP::er::unpacker(CmiMsgPayload(msg), CmiMsgSize(msg) - CmiMsgHeaderSizeBytes);
  std::uint8_t t = 0;
  p | t;
  switch (static_cast<LbMsg>(t)) {
    case LbMsg::Stats: {  // PE 0
      std::uint32_t step;
      int pe;
      double background = 0;
      std::vector<ObjLoad> objs;
      std::vector<CommEdge> edges;
      p | step;
      p | pe;
      p | background;
      p | objs;
      if (s.background.size() != static_cast<std::size_t>(CmiNumPes())) s.background.assign(static_cast<std::size_t>(CmiNumPes()), 0.0);
      s.background[static_cast<std::size_t>(pe)] = background;
      p | edges;
      s.edges.insert(s.edges.end(), edges.begin(), edges.end());
      if (s.reports++ == 0) send_lb(-1, LbMsg::Start, [&](PUP::er& q) { q | step; });
      s.gathered.emplace_back(pe, std::move(objs));
      if (s.reports == CmiNumPes()) decide();
      break;
    }
    case LbMsg::Start:
      s.started = true;
      maybe_report();
      break;
    case LbMsg::Decision: {
      std::uint32_t step;
      std::vector<Move> moves;
      p | step;
      p | moves;
      on_decision(moves);
      break;
    }
    case LbMsg::Done:  // PE 0
      if (++s.done == CmiNumPes()) {
        s.done = 0;
        send_lb(-1, LbMsg::Resume, [](PUP::er&) {});
      }
      break;
    case LbMsg::Resume:
      on_resume();
      break;
    case LbMsg::LocalResume: {
      std::uint64_t id;
      Index idx;
      p | id;
      p | idx;
      Collection* c = find_collection(id);
      if (ChareBase* o = c ? LocationManager::find_local(*c, idx) : nullptr) o->ResumeFromSync();
      break;
    }
  }
  CmiFree(msg);
}

void lb_start() {
  LbState& s = lbs();
  s.strategy = lb::find_strategy(s.balancer);
  if (!s.strategy)
    CkAbort("+balancer %s: no such load balancer (known: %s)", s.balancer.c_str(), lb::strategy_names().c_str());
  core().lb_graph = s.balancer.find("Metis") != std::string::npos && !s.off;
}

void lb_idle(bool begin) {
  LbState& s = lbs();
  if (!s.measuring_idle) return;
  const double now = CmiWallTimer();
  if (begin) {
    s.idle_since = now;
  } else if (s.idle_since >= 0) {
    s.idle += now - s.idle_since;
    s.idle_since = -1;
  }
}

// From the first AtSync on, the PE's idle time is measured (background load = the rest):
// programs that never balance pay nothing for it.
void start_measuring_idle() {
  LbState& s = lbs();
  if (s.measuring_idle) return;
  s.measuring_idle = true;
  s.since = CmiWallTimer();
  if (trace::enabled()) trace::set_idle_listener(lb_idle);
  else CmiSetTraceHooks(CmiTraceHooks{[] { lb_idle(true); }, [] { lb_idle(false); }, nullptr});
}

void lb_account(ChareBase* obj, double seconds) { ElementAccess::rt(obj).load += seconds; }

void lb_arrived(ChareBase*) {
  ++lbs().arrivals;
  maybe_done();
}

void register_core_options() {
  for (const char* name : {"balancer", "LBPeriod", "LBEvery", "trace", "restart"}) CmiRegisterOption(name, 1);
  for (const char* name : {"LBOff", "LBDebug"}) CmiRegisterOption(name, 0);
}

void parse_core_options(int& argc, char** argv) {
  LbState& s = lbs();
  int out = 1;
  auto value = [&](int& i, const char* name) -> std::string {
    const std::size_t n = std::strlen(name);
    if (argv[i][n] == '=') return argv[i] + n + 1;
    if (i + 1 >= argc) CkAbort("%s needs a value", name);
    return argv[++i];
  };
  auto is = [&](const char* arg, const char* name) {
    const std::size_t n = std::strlen(name);
    return std::strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
  };
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (is(a, "+balancer")) {
      s.balancer = value(i, "+balancer");
    } else if (is(a, "+LBPeriod")) {
      const std::string v = value(i, "+LBPeriod");
      char* end = nullptr;
      s.period = std::strtod(v.c_str(), &end);
      if (*end || s.period < 0) CkAbort("+LBPeriod %s: give a number of seconds (>= 0)", v.c_str());
    } else if (is(a, "+LBEvery")) {
      const std::string v = value(i, "+LBEvery");
      char* end = nullptr;
      const long k = std::strtol(v.c_str(), &end, 10);
      if (*end || k < 1) CkAbort("+LBEvery %s: give a whole number of AtSync steps (>= 1)", v.c_str());
      s.every = static_cast<std::uint32_t>(k);
    } else if (std::strcmp(a, "+LBOff") == 0) {
      s.off = true;
    } else if (std::strcmp(a, "+LBDebug") == 0) {
      s.debug = true;
    } else if (is(a, "+trace")) {
      trace::open(value(i, "+trace"));
    } else if (is(a, "+restart")) {
      set_restart_dir(value(i, "+restart"));
    } else {
      argv[out++] = argv[i];
    }
  }
  argv[out] = nullptr;
  argc = out;
}

}  // namespace ck::detail

namespace ck {

void ChareBase::AtSync() {
  using namespace detail;
  if (ref_.kind != Kind::Array) CkAbort("AtSync(): only chare array elements take part in load balancing");
  if (!usesAtSync)
    CkAbort("AtSync() called by element %s of %s, whose constructor did not set usesAtSync = true",
            index_.str().c_str(), demangle(typeid(*this).name()).c_str());
  LbState& s = lbs();
  start_measuring_idle();
  ++rt_.sync_step;
  if (s.off || rt_.sync_step % s.every != 0) {  // no balancing this time: resume after this entry
    std::uint64_t id = ref_.id;
    Index idx = index_;
    send_lb(CkMyPe(), LbMsg::LocalResume, [&](PUP::er& p) { p | id; p | idx; });
    return;
  }
  rt_.at_sync = true;
  maybe_report();
}

}  // namespace ck
