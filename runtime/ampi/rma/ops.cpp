// RMA operations: the origin's side (Put, Get, Accumulate, Get_accumulate, Fetch_and_op,
// Compare_and_swap and their request forms) and the target's (on_rma, every message kind).
//
// A data operation's message: Hdr, then the target datatype as runs (Run: `n` items of a
// predefined type, `reps` times, `stride` bytes apart, at `off` from the target address),
// then the origin's data packed. The origin flattens its target datatype, since the target
// process cannot look the origin rank's derived types up: any datatype works on the target
// side; the origin side is packed and unpacked by the datatype layer.
#include "rma/rma.h"
#include "pt2pt/pt2pt.h"

#include <atomic>
#include <cstring>

namespace ampi::rma {

namespace {

static_assert(sizeof(Hdr) == 48 && sizeof(Run) == 40);

void on_rma(void* msg);
using RmaHandler = ck::ConverseHandler<&on_rma>;

// The runs of `count` elements of `t` into w.scratch (reused: no allocation per operation
// once it has grown), with the byte range they touch and their data size.
struct Layout {
  int nruns = 0;
  std::int64_t lo = 0, hi = 0;
  std::uint64_t bytes = 0;
};
Layout encode(Win& w, int count, MPI_Datatype t) {
  TypeFacts f;
  // The common case, one run of a predefined type without gaps: no walk over the layout.
  if (t > MPI_DATATYPE_NULL && t < UCHARM_MPI_PREDEFINED_TYPES && type_facts(t, f) && f.contiguous && f.lb == 0 &&
      static_cast<std::ptrdiff_t>(f.size) == type_extent(t) && count > 0) {
    const Run r{0, static_cast<std::uint64_t>(count), 1, 0, t, 0};
    w.scratch.resize(sizeof r);
    std::memcpy(w.scratch.data(), &r, sizeof r);
    const auto bytes = static_cast<std::uint64_t>(count) * f.size;
    return Layout{1, 0, static_cast<std::int64_t>(bytes), bytes};
  }
  struct Ctx {
    Win* w;
    Layout l;
  } c{&w, {}};
  w.scratch.clear();
  type_for_each_run(
      t, count,
      [](void* p, std::ptrdiff_t off, std::size_t n, std::size_t reps, std::ptrdiff_t stride, MPI_Datatype basic) {
        auto* c = static_cast<Ctx*>(p);
        const Run r{off, n, reps, stride, basic, 0};
        const auto at = c->w->scratch.size();
        c->w->scratch.resize(at + sizeof r);
        std::memcpy(c->w->scratch.data() + at, &r, sizeof r);
        const std::int64_t ext = type_extent(basic);
        const std::int64_t first = off + std::min<std::int64_t>(0, stride * static_cast<std::int64_t>(reps - 1));
        const std::int64_t last = off + std::max<std::int64_t>(0, stride * static_cast<std::int64_t>(reps - 1)) +
                                  static_cast<std::int64_t>(n) * ext;
        if (c->l.nruns == 0 || first < c->l.lo) c->l.lo = first;
        if (c->l.nruns == 0 || last > c->l.hi) c->l.hi = last;
        c->l.bytes += n * reps * type_size(basic);
        ++c->l.nruns;
      },
      &c);
  return c.l;
}


// Sends or handles at once (a target on this PE).
void deliver(int pe, void* msg, std::size_t payload) {
  if (pe == CmiMyPe()) on_rma(msg);
  else CmiSyncSendAndFree(pe, CmiMsgHeaderSizeBytes + payload, msg);
}

// ---- the target's side -----------------------------------------------------------------------------
// Where an operation's target address lies; nullptr (after stopping the job) when out of the
// window: a dynamic window's range must be attached (the origin checked the others).
char* target_at(Win& w, const Hdr& h, std::int64_t lo, std::int64_t hi, bool* dev) {
  if (w.flavor != MPI_WIN_FLAVOR_DYNAMIC) {
    *dev = w.device;
    return static_cast<char*>(w.base) + h.disp;
  }
  const std::uintptr_t a = static_cast<std::uintptr_t>(h.disp + static_cast<std::uint64_t>(lo));
  const std::uintptr_t b = static_cast<std::uintptr_t>(h.disp + static_cast<std::uint64_t>(hi));
  // The range may span regions attached side by side (MPICH's tests do so). Operations of
  // zero bytes never come here.
  *dev = false;
  for (std::uintptr_t at = a;;) {
    const Win::Region* hit = nullptr;
    for (const Win::Region& r : w.attached)
      if (r.lo <= at && at < r.hi) {
        hit = &r;
        break;
      }
    if (!hit) break;
    *dev = *dev || hit->device;
    if (hit->hi >= b) return reinterpret_cast<char*>(h.disp);
    at = hit->hi;
  }
  CkAbort("AMPI RMA: rank %d accessed [%#lx, %#lx) of dynamic %s on rank %d, which is not attached there "
          "(MPI_ERR_RMA_RANGE)",
          w.world[static_cast<std::size_t>(h.from)], static_cast<unsigned long>(a), static_cast<unsigned long>(b),
          win_label(w).c_str(), w.world[static_cast<std::size_t>(w.me)]);
}

}  // namespace

namespace {

// An answer to origin `to`'s Pending slot `token` with `bytes` of data (filled by the caller).
void* reply_alloc(Win& w, int to, std::int32_t token, std::size_t bytes) {
  void* r = msg_alloc(sizeof(Hdr) + bytes);
  hdr(r) = Hdr{kReply, 0, 0, w.members[static_cast<std::size_t>(to)].handle, w.me, token, 0, 0, 0, bytes, 0, 0};
  return r;
}
void reply_send(Win& w, int to, void* r) {
  deliver(w.members[static_cast<std::size_t>(to)].pe, r, sizeof(Hdr) + hdr(r).bytes);
}

}  // namespace

namespace {

void target_op(Win& w, void* msg) {
  const Hdr& h = hdr(msg);
  const Run* runs = runs_of(msg);
  std::int64_t lo = 0, hi = 0;
  for (int i = 0; i < h.nruns; ++i) {
    const std::int64_t ext = type_extent(runs[i].basic);
    const std::int64_t span = runs[i].stride * static_cast<std::int64_t>(runs[i].reps - 1);
    lo = std::min(lo, runs[i].off + std::min<std::int64_t>(0, span));
    hi = std::max(hi, runs[i].off + std::max<std::int64_t>(0, span) + static_cast<std::int64_t>(runs[i].n) * ext);
  }
  bool dev = false;
  char* at = target_at(w, h, lo, hi, &dev);
  const bool answered = h.kind == kGet || h.kind == kGetAcc || h.kind == kCas;
  void* r = answered ? reply_alloc(w, h.from, h.token, h.kind == kCas ? type_size(h.type) : h.bytes) : nullptr;
  {
    // Memory other processes of the host update in place (mapped.cpp) is guarded by its lock.
    AccLock guard(h.kind != kPut && h.kind != kGet && w.memfd >= 0 ? acc_lock_word(static_cast<char*>(w.base), w.size)
                                                                   : nullptr);
    execute(at, dev, msg, r ? CmiMsgPayload(r) + sizeof(Hdr) : nullptr);
  }
  if (r) reply_send(w, h.from, r);
}

// ---- the origin's side of answers ------------------------------------------------------------------
void on_reply(Win& w, void* msg) {
  const Hdr& h = hdr(msg);
  Pending& s = w.slots[static_cast<std::size_t>(h.token)];
  if (h.bytes) {
    TypeFacts f;
    type_facts(s.type, f);
    const char* data = CmiMsgPayload(msg) + sizeof(Hdr);
    if (f.contiguous) pt2pt::copy_any(static_cast<char*>(s.buf) + f.lb, data, h.bytes);
    else type_unpack(data, h.bytes, s.buf, s.count, s.type);
  }
  type_release(s.type);
  if (s.req != MPI_REQUEST_NULL) w.rank->p2p().complete(s.req);
  const auto t = static_cast<std::size_t>(s.target);
  s = Pending{};
  w.free_slots.push_back(h.token);
  --w.pending[t];
  --w.pending_total;
}

void on_rma(void* msg) {
  const Hdr& h = hdr(msg);
  Win* w = win_of(h.win);
  if (!w) CkAbort("AMPI RMA: a message (kind %d) for window handle %d, which PE %d does not have", h.kind, h.win, CmiMyPe());
  if (!w->ready) [[unlikely]] {
    w->early.push_back(msg);
    return;
  }
  switch (h.kind) {
    case kPut:
    case kGet:
    case kAcc:
    case kGetAcc:
    case kCas:
      target_op(*w, msg);
      break;
    case kReply:
      on_reply(*w, msg);
      wake(*w);
      break;
    case kFlush:
      send_ctl(*w, h.from, kAck);
      break;
    case kAck:
    case kGrant:
      --w->pending[static_cast<std::size_t>(h.from)];
      --w->pending_total;
      wake(*w);
      break;
    case kLock:
      on_lock(*w, h.from, static_cast<LockState>(h.lock));
      break;
    case kUnlock:
      on_unlock(*w, h.from);
      break;
    case kPost:
      ++w->posts[static_cast<std::size_t>(h.from)];
      wake(*w);
      break;
    case kComplete:
      ++w->completes;
      wake(*w);
      break;
    case kDone:
      if (h.token >= 0) {
        Pending& s = w->slots[static_cast<std::size_t>(h.token)];
        if (s.req != MPI_REQUEST_NULL) w->rank->p2p().complete(s.req);
        s = Pending{};
        w->free_slots.push_back(h.token);
      }
      if (h.op) --w->direct_open[static_cast<std::size_t>(h.from)];
      --w->pending[static_cast<std::size_t>(h.from)];
      --w->pending_total;
      wake(*w);
      break;
    default:
      CkAbort("AMPI RMA: unknown message kind %d", h.kind);
  }
  CmiFree(msg);
}

// ---- issuing ----------------------------------------------------------------------------------------
bool predefined_op(MPI_Op op) { return op > MPI_OP_NULL && op < UCHARM_MPI_PREDEFINED_OPS; }

// A request that is complete now (operations whose buffer is free at once), or one that the
// answer completes.
MPI_Request new_request(Win& w, bool done) {
  P2p& p = w.rank->p2p();
  MPI_Request h = p.alloc(ReqKind::Send);
  Request& q = p.req(h);
  q.status = MPI_Status{};
  q.status.MPI_SOURCE = MPI_ANY_SOURCE;
  q.status.MPI_TAG = MPI_ANY_TAG;
  if (done) p.mark_complete(h);
  return h;
}

struct Args {
  const char* fn;
  Kind kind;
  const void* origin;
  int ocount;
  MPI_Datatype otype;
  void* result;
  int rcount;
  MPI_Datatype rtype;
  const void* compare;  // kCas
  int target;
  MPI_Aint disp;
  int tcount;
  MPI_Datatype ttype;
  MPI_Op op;
  MPI_Win win;
  MPI_Request* req;
  bool any_time = false;  // AMPI_Iget: no epoch needed
};

int check_type_arg(Win* w, const char* fn, const char* what, int count, MPI_Datatype t) {
  if (count < 0) return win_error(w, MPI_ERR_COUNT, fn, "%s is negative (%d)", what, count);
  if (!type_committed(t))
    return win_error(w, MPI_ERR_TYPE, fn, "the %s datatype (%s) is not a committed datatype",
                     what, type_name(t).c_str());
  return MPI_SUCCESS;
}

// Packs `count` elements at buf (host or device) into out.
int pack_origin(Win* w, const char* fn, const void* buf, int count, MPI_Datatype t, char* out) {
  TypeFacts f;
  type_facts(t, f);
  const std::size_t bytes = static_cast<std::size_t>(count) * f.size;
  if (!bytes) return MPI_SUCCESS;
  if (f.contiguous) {
    pt2pt::copy_any(out, static_cast<const char*>(buf) + f.lb, bytes);
  } else {
    if (is_device(buf))
      return win_error(w, MPI_ERR_TYPE, fn, "a non-contiguous datatype (%s) on device memory is not supported",
                       type_name(t).c_str());
    type_pack(buf, count, t, out);
  }
  return MPI_SUCCESS;
}

int take_slot(Win& w, const Pending& p) {
  int s;
  if (w.free_slots.empty()) {
    s = static_cast<int>(w.slots.size());
    w.slots.emplace_back();
  } else {
    s = w.free_slots.back();
    w.free_slots.pop_back();
  }
  w.slots[static_cast<std::size_t>(s)] = p;
  return s;
}

// A contiguous Put or Get of at least direct_min bytes to a target attached for one-sided
// access goes through Converse's RMA (UCX put/get: no message, the target takes no part);
// false for everything else. Counted in `pending` until its completion (kDone) has run;
// puts need a flush (direct_dirty) before they count as done at the target.
bool direct(Win& w, const Args& a, const Layout& l, std::uint64_t disp) {
  if ((a.kind != kPut && a.kind != kGet) || w.direct_min == 0 || l.nruns != 1) return false;
  const auto t = static_cast<std::size_t>(a.target);
  CmiRmaRemote* r = w.remotes.empty() ? nullptr : w.remotes[t];
  if (!r) return false;
  // direct_min was measured on host memory; device memory at either end always goes
  // through UCX (a message would cost a cudaMemcpy at the target).
  if (l.bytes < w.direct_min && !w.members[t].device && !is_device(a.origin)) return false;
  Run run;
  std::memcpy(&run, w.scratch.data(), sizeof run);
  const auto basic = static_cast<MPI_Datatype>(run.basic);
  if (run.reps != 1 || static_cast<std::ptrdiff_t>(type_size(basic)) != type_extent(basic)) return false;
  TypeFacts f;
  if (!type_facts(a.otype, f) || !f.contiguous) return false;
  char* local = static_cast<char*>(const_cast<void*>(a.origin)) + f.lb;
  const std::size_t offset = disp + static_cast<std::uint64_t>(run.off);
  int token = -1;
  if (a.req) {
    *a.req = new_request(w, false);
    token = take_slot(w, Pending{nullptr, 0, MPI_DATATYPE_NULL, *a.req, a.target});
  }
  ++w.pending[t];
  ++w.pending_total;
  ++w.direct_open[t];
  if (a.kind == kPut) {
    w.direct_dirty[t] = 1;
    CmiRmaPut(r, offset, local, l.bytes, done_msg(w, a.target, token, true));
  } else {
    CmiRmaGet(r, offset, local, l.bytes, done_msg(w, a.target, token, true));
  }
  return true;
}

int issue(const Args& a) {
  int rc = MPI_SUCCESS;
  if (a.req) *a.req = MPI_REQUEST_NULL;
  Win* w = my_win(a.win, a.fn, &rc);
  if (!w) return rc;
  const bool answered = a.kind == kGet || a.kind == kGetAcc || a.kind == kCas;
  const bool sends_data = a.kind == kPut || a.kind == kAcc || (a.kind == kGetAcc && a.op != MPI_NO_OP) || a.kind == kCas;
  if (a.target == MPI_PROC_NULL) {
    if (a.req) *a.req = new_request(*w, true);
    return MPI_SUCCESS;
  }
  if (a.target < 0 || a.target >= w->n)
    return win_error(w, MPI_ERR_RANK, a.fn, "target rank %d is not in the window (size %d)", a.target, w->n);
  if (a.kind != kGet && a.kind != kCas && (a.kind != kGetAcc || a.op != MPI_NO_OP))
    if ((rc = check_type_arg(w, a.fn, "origin", a.ocount, a.otype))) return rc;
  if (a.kind == kGet && (rc = check_type_arg(w, a.fn, "origin", a.ocount, a.otype))) return rc;
  if (answered && a.kind != kGet && (rc = check_type_arg(w, a.fn, "result", a.rcount, a.rtype))) return rc;
  if ((rc = check_type_arg(w, a.fn, "target", a.tcount, a.ttype))) return rc;
  if (a.kind == kAcc || a.kind == kGetAcc) {
    if (!predefined_op(a.op))
      return win_error(w, MPI_ERR_OP, a.fn, "only predefined operations may be used in RMA accumulates (op %d)", a.op);
  }
  if (!a.any_time && (rc = access_check(*w, a.target, a.fn))) return rc;
  const Layout l = encode(*w, a.tcount, a.ttype);
  const Member& m = w->members[static_cast<std::size_t>(a.target)];
  // The origin's side must carry the target's bytes (type signatures match).
  if (a.kind != kCas) {
    const bool has_origin = a.kind != kGetAcc || a.op != MPI_NO_OP;
    if (has_origin && static_cast<std::uint64_t>(a.ocount) * type_size(a.otype) != l.bytes)
      return win_error(w, MPI_ERR_ARG, a.fn, "the origin (%d x %s) and the target (%d x %s) differ in size", a.ocount,
                       type_name(a.otype).c_str(), a.tcount, type_name(a.ttype).c_str());
    if (a.kind == kGetAcc && static_cast<std::uint64_t>(a.rcount) * type_size(a.rtype) != l.bytes)
      return win_error(w, MPI_ERR_ARG, a.fn, "the result (%d x %s) and the target (%d x %s) differ in size", a.rcount,
                       type_name(a.rtype).c_str(), a.tcount, type_name(a.ttype).c_str());
  }
  if ((a.kind == kAcc || a.kind == kGetAcc) && l.bytes && a.op != MPI_NO_OP) {
    const MPI_Datatype tb = type_uniform_basic(a.ttype), ob = type_uniform_basic(a.otype);
    if (tb == MPI_DATATYPE_NULL || tb != ob)
      return win_error(w, MPI_ERR_TYPE, a.fn, "an accumulate needs one basic type on both sides (origin %s, target %s)",
                       type_name(a.otype).c_str(), type_name(a.ttype).c_str());
    if (!op_defined_on(a.op, tb))
      return win_error(w, MPI_ERR_OP, a.fn, "the operation is not defined on %s", type_name(tb).c_str());
  }
  if (answered) {  // the answer lands in origin memory: device memory takes contiguous data only
    const void* buf = a.kind == kGet ? a.origin : a.result;
    const MPI_Datatype t = a.kind == kGet ? a.otype : a.rtype;
    if (!type_contiguous(t) && is_device(buf))
      return win_error(w, MPI_ERR_TYPE, a.fn, "a non-contiguous datatype (%s) on device memory is not supported",
                       type_name(t).c_str());
  }
  if (a.kind == kCas) {
    const MPI_Datatype b = type_uniform_basic(a.ttype);
    if (b == MPI_DATATYPE_NULL || a.ttype != b)
      return win_error(w, MPI_ERR_TYPE, a.fn, "compare-and-swap needs a predefined datatype (%s)",
                       type_name(a.ttype).c_str());
  }
  if (a.disp < 0 && w->flavor != MPI_WIN_FLAVOR_DYNAMIC)
    return win_error(w, MPI_ERR_DISP, a.fn, "target displacement %ld is negative", static_cast<long>(a.disp));
  const std::uint64_t disp = w->flavor == MPI_WIN_FLAVOR_DYNAMIC
                                 ? static_cast<std::uint64_t>(a.disp)
                                 : static_cast<std::uint64_t>(a.disp) * static_cast<std::uint64_t>(m.disp_unit);
  if (l.bytes && w->flavor != MPI_WIN_FLAVOR_DYNAMIC &&
      (static_cast<std::int64_t>(disp) + l.lo < 0 || static_cast<std::int64_t>(disp) + l.hi > m.size))
    return win_error(w, MPI_ERR_RMA_RANGE, a.fn,
                     "bytes [%lld, %lld) at target rank %d are outside its window of %lld bytes",
                     static_cast<long long>(disp) + l.lo, static_cast<long long>(disp) + l.hi, a.target,
                     static_cast<long long>(m.size));
  if (l.bytes == 0) {  // nothing moves (MPI allows zero counts anywhere)
    if (a.req) *a.req = new_request(*w, true);
    return MPI_SUCCESS;
  }
  if ((a.kind == kPut || a.kind == kGet) && !w->mapped.empty() && w->mapped[static_cast<std::size_t>(a.target)]) {
    if (a.req) *a.req = new_request(*w, true);
    return mapped_op(*w, a.fn, a.kind == kPut, const_cast<void*>(a.origin), a.ocount, a.otype, a.target, disp,
                     reinterpret_cast<const Run*>(w->scratch.data()), l.nruns);
  }
  if (direct(*w, a, l, disp)) return MPI_SUCCESS;
  const std::size_t data = a.kind == kCas ? 2 * l.bytes : sends_data ? l.bytes : 0;
  const std::size_t runs = sizeof(Run) * static_cast<std::size_t>(l.nruns);
  const std::size_t payload = sizeof(Hdr) + runs + data;
  void* msg = msg_alloc(payload);
  hdr(msg) = Hdr{a.kind, 0, 0, m.handle, w->me, -1, a.op, l.nruns, disp, l.bytes, a.ttype, 0};
  std::memcpy(CmiMsgPayload(msg) + sizeof(Hdr), w->scratch.data(), runs);
  char* out = CmiMsgPayload(msg) + sizeof(Hdr) + runs;
  if (a.kind == kCas) {
    pt2pt::copy_any(out, a.origin, l.bytes);
    pt2pt::copy_any(out + l.bytes, a.compare, l.bytes);
  } else if (sends_data && (rc = pack_origin(w, a.fn, a.origin, a.ocount, a.otype, out))) {
    CmiFree(msg);
    return rc;
  }
  if (a.kind != kPut && a.kind != kGet && !w->mapped.empty() && w->mapped[static_cast<std::size_t>(a.target)]) {
    mapped_update(*w, a.target, msg, a.result, a.rcount, a.rtype);  // done at the target now
    if (a.req) *a.req = new_request(*w, true);
    return MPI_SUCCESS;
  }
  MPI_Request req = MPI_REQUEST_NULL;
  if (a.req) req = *a.req = new_request(*w, !answered);
  if (answered) {
    const bool get = a.kind == kGet;
    const int s = take_slot(*w, Pending{get ? const_cast<void*>(a.origin) : a.result, get ? a.ocount : a.rcount,
                                        get ? a.otype : a.rtype, req, a.target});
    type_retain(get ? a.otype : a.rtype);
    hdr(msg).token = s;
    ++w->pending[static_cast<std::size_t>(a.target)];
    ++w->pending_total;
  }
  w->dirty[static_cast<std::size_t>(a.target)] = 1;
  deliver(m.pe, msg, payload);
  return MPI_SUCCESS;
}

}  // namespace

int get_any_time(void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp, int tcount,
                 MPI_Datatype ttype, MPI_Win win, MPI_Request* req, const char* fn) {
  return issue({fn, kGet, origin, ocount, otype, nullptr, 0, MPI_DATATYPE_NULL, nullptr, target, disp, tcount, ttype,
                MPI_OP_NULL, win, req, true});
}

void* msg_alloc(std::size_t payload) {
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + payload);
  CmiSetHandler(m, RmaHandler::handler());
  return m;
}

void* done_msg(Win& w, int t, int token, bool op) {
  void* m = msg_alloc(sizeof(Hdr));
  hdr(m) = Hdr{kDone, 0, 0, w.handle, t, token, op ? 1 : 0, 0, 0, 0, 0, 0};
  return m;
}

void send_to(Win& w, int t, void* msg, std::size_t payload) {
  deliver(w.members[static_cast<std::size_t>(t)].pe, msg, payload);
}

void send_ctl(Win& w, int t, Kind kind, LockState lock) {
  void* m = msg_alloc(sizeof(Hdr));
  hdr(m) = Hdr{kind, static_cast<std::uint8_t>(lock), 0, w.members[static_cast<std::size_t>(t)].handle, w.me, 0, 0, 0,
               0, 0, 0, 0};
  send_to(w, t, m, sizeof(Hdr));
}

void replay_early(Win& w) {
  std::vector<void*> early;
  early.swap(w.early);
  for (void* m : early) on_rma(m);
}

void wake(Win& w) {
  CthThread t = std::exchange(w.waiter, nullptr);
  if (!t) return;
  CthThread self = CthSelf();
  if (!w.more_waiters.empty()) [[unlikely]] {  // several threads: each looks again
    std::vector<CthThread> all;
    all.swap(w.more_waiters);
    all.push_back(t);
    for (CthThread x : all)
      if (x != self) CthAwaken(x);
    return;
  }
  // Queued, never resumed here: a handler that wakes the owner (an unlock's acknowledgement
  // delivered in place to a rank of this PE) must finish first; resumed at once, the owner
  // could go on to MPI_Win_free while that handler still uses the window.
  if (t != self) CthAwaken(t);
}

}  // namespace ampi::rma

using namespace ampi;
using namespace ampi::rma;

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Put(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
             MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win) {
  return issue({"MPI_Put", kPut, origin_addr, origin_count, origin_datatype, nullptr, 0, MPI_DATATYPE_NULL, nullptr,
                target_rank, target_disp, target_count, target_datatype, MPI_OP_NULL, win, nullptr});
}
int PMPI_Get(void* origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
             int target_count, MPI_Datatype target_datatype, MPI_Win win) {
  return issue({"MPI_Get", kGet, origin_addr, origin_count, origin_datatype, nullptr, 0, MPI_DATATYPE_NULL, nullptr,
                target_rank, target_disp, target_count, target_datatype, MPI_OP_NULL, win, nullptr});
}
int PMPI_Accumulate(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                    MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win) {
  return issue({"MPI_Accumulate", kAcc, origin_addr, origin_count, origin_datatype, nullptr, 0, MPI_DATATYPE_NULL,
                nullptr, target_rank, target_disp, target_count, target_datatype, op, win, nullptr});
}
int PMPI_Get_accumulate(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype, void* result_addr,
                        int result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                        int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win) {
  return issue({"MPI_Get_accumulate", kGetAcc, origin_addr, origin_count, origin_datatype, result_addr, result_count,
                result_datatype, nullptr, target_rank, target_disp, target_count, target_datatype, op, win, nullptr});
}
int PMPI_Fetch_and_op(const void* origin_addr, void* result_addr, MPI_Datatype datatype, int target_rank,
                      MPI_Aint target_disp, MPI_Op op, MPI_Win win) {
  return issue({"MPI_Fetch_and_op", kGetAcc, origin_addr, 1, datatype, result_addr, 1, datatype, nullptr, target_rank,
                target_disp, 1, datatype, op, win, nullptr});
}
int PMPI_Compare_and_swap(const void* origin_addr, const void* compare_addr, void* result_addr, MPI_Datatype datatype,
                          int target_rank, MPI_Aint target_disp, MPI_Win win) {
  return issue({"MPI_Compare_and_swap", kCas, origin_addr, 1, datatype, result_addr, 1, datatype, compare_addr,
                target_rank, target_disp, 1, datatype, MPI_OP_NULL, win, nullptr});
}
int PMPI_Rput(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
              MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win, MPI_Request* request) {
  return issue({"MPI_Rput", kPut, origin_addr, origin_count, origin_datatype, nullptr, 0, MPI_DATATYPE_NULL, nullptr,
                target_rank, target_disp, target_count, target_datatype, MPI_OP_NULL, win, request});
}
int PMPI_Rget(void* origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
              int target_count, MPI_Datatype target_datatype, MPI_Win win, MPI_Request* request) {
  return issue({"MPI_Rget", kGet, origin_addr, origin_count, origin_datatype, nullptr, 0, MPI_DATATYPE_NULL, nullptr,
                target_rank, target_disp, target_count, target_datatype, MPI_OP_NULL, win, request});
}
int PMPI_Raccumulate(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                     MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                     MPI_Request* request) {
  return issue({"MPI_Raccumulate", kAcc, origin_addr, origin_count, origin_datatype, nullptr, 0, MPI_DATATYPE_NULL,
                nullptr, target_rank, target_disp, target_count, target_datatype, op, win, request});
}
int PMPI_Rget_accumulate(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype, void* result_addr,
                         int result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                         int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request* request) {
  return issue({"MPI_Rget_accumulate", kGetAcc, origin_addr, origin_count, origin_datatype, result_addr, result_count,
                result_datatype, nullptr, target_rank, target_disp, target_count, target_datatype, op, win, request});
}

}  // extern "C"
#pragma GCC visibility pop
