// Reductions: each PE combines its elements' contributions, then the partial results
// climb a tree over the PEs that hold elements; the root sends the result to the callback.
#include "internal.h"

#include <cstring>

namespace ck::detail {

namespace {

template <class T>
void combine_typed(Reducer r, T* acc, const T* in, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    switch (r) {
      case Reducer::sum: acc[i] += in[i]; break;
      case Reducer::product: acc[i] *= in[i]; break;
      case Reducer::min: acc[i] = std::min(acc[i], in[i]); break;
      case Reducer::max: acc[i] = std::max(acc[i], in[i]); break;
      case Reducer::logical_and: acc[i] = (acc[i] != 0 && in[i] != 0) ? 1 : 0; break;
      case Reducer::logical_or: acc[i] = (acc[i] != 0 || in[i] != 0) ? 1 : 0; break;
      case Reducer::bitwise_and:
        if constexpr (std::is_integral_v<T>) acc[i] &= in[i];
        break;
      case Reducer::bitwise_or:
        if constexpr (std::is_integral_v<T>) acc[i] |= in[i];
        break;
      default: break;
    }
  }
}

const char* reducer_name(Reducer r) {
  static const char* names[] = {"nop", "sum", "product", "min", "max", "logical_and", "logical_or",
                                "bitwise_and", "bitwise_or", "concat", "set", "user"};
  return names[static_cast<int>(r)];
}
const char* type_name(RType t) {
  static const char* names[] = {"none", "int", "long", "float", "double", "user type"};
  return names[static_cast<int>(t)];
}

void combine(RedState& st, const Contribution& c, const char* data, std::size_t len, std::uint64_t id,
             std::uint32_t round) {
  if (!st.has) {
    st.has = true;
    st.c = c;
    st.data.assign(data, data + len);
    return;
  }
  const Contribution& a = st.c;
  const bool counted = c.reducer != Reducer::concat && c.reducer != Reducer::set;
  if (a.reducer != c.reducer || a.type != c.type || (counted && a.count != c.count) ||
      a.user != c.user || a.scalar != c.scalar)
    CkAbort("reduction %u of collection %llu: contributors disagree: one gave %s of %u %s%s, another %s "
            "of %u %s%s",
            round, static_cast<unsigned long long>(id), reducer_name(a.reducer), a.count, type_name(a.type), a.scalar ? "" : " (vector)",
            reducer_name(c.reducer), c.count, type_name(c.type), c.scalar ? "" : " (vector)");
  switch (c.reducer) {
    case Reducer::nop: break;
    case Reducer::concat:
    case Reducer::set:
      st.data.insert(st.data.end(), data, data + len);
      st.c.count += c.count;
      break;
    case Reducer::user: {
      std::vector<char> out;
      registry().reducers[c.user](st.data.data(), st.data.size(), data, len, out);
      st.data.swap(out);
      break;
    }
    default: {
      if ((c.reducer == Reducer::bitwise_and || c.reducer == Reducer::bitwise_or) &&
          (c.type == RType::Float || c.type == RType::Double))
        CkAbort("reduction %u of collection %llu: %s needs integers, not %s", round, static_cast<unsigned long long>(id),
                reducer_name(c.reducer), type_name(c.type));
      switch (c.type) {
        case RType::Int: combine_typed(c.reducer, reinterpret_cast<int*>(st.data.data()), reinterpret_cast<const int*>(data), c.count); break;
        case RType::Long: combine_typed(c.reducer, reinterpret_cast<long*>(st.data.data()), reinterpret_cast<const long*>(data), c.count); break;
        case RType::Float: combine_typed(c.reducer, reinterpret_cast<float*>(st.data.data()), reinterpret_cast<const float*>(data), c.count); break;
        case RType::Double: combine_typed(c.reducer, reinterpret_cast<double*>(st.data.data()), reinterpret_cast<const double*>(data), c.count); break;
        default: break;
      }
    }
  }
}

// A set reduction holds one record per contributor: its Index, the byte length of its
// data (a u64), then the data (a T, or a vector<T>'s elements). Lengths may differ.
struct SetRecord {
  Index index;
  const char* data;
  std::size_t len;
};

// Packs vector<pair<Index, T>> (scalar contributions) or vector<pair<Index, vector<T>>>
// sorted by index, exactly as PUP unpacks them.
std::vector<char> set_result(const RedState& st) {
  const Contribution& c = st.c;
  std::vector<SetRecord> recs;
  for (std::size_t at = 0; at < st.data.size();) {
    SetRecord r;
    std::uint64_t len;
    std::memcpy(&r.index, st.data.data() + at, sizeof(Index));
    std::memcpy(&len, st.data.data() + at + sizeof(Index), sizeof len);
    r.data = st.data.data() + at + sizeof(Index) + sizeof len;
    r.len = static_cast<std::size_t>(len);
    recs.push_back(r);
    at += sizeof(Index) + sizeof len + r.len;
  }
  std::sort(recs.begin(), recs.end(), [](const SetRecord& a, const SetRecord& b) {
    return std::lexicographical_compare(a.index.x, a.index.x + kMaxDims, b.index.x, b.index.x + kMaxDims);
  });
  auto emit = [&](PUP::er& p) {
    std::uint64_t n = recs.size();
    p | n;
    for (SetRecord& r : recs) {
      p | r.index;
      if (!c.scalar) {  // a vector<T>: its length, then its elements, aligned as PUP aligns them
        std::uint64_t count = c.elem_size ? r.len / c.elem_size : 0;
        p | count;
        p.align(8);
      }
      if (r.len) p.bytes(const_cast<char*>(r.data), r.len);
    }
  };
  PUP::er sizer = PUP::er::sizer();
  emit(sizer);
  std::vector<char> out(sizer.size());
  PUP::er packer = PUP::er::packer(out.data(), out.size());
  emit(packer);
  return out;
}

// The result as the target entry unpacks it: T, vector<T>, vector<pair<Index, T>>, or nothing.
std::vector<char> result_bytes(RedState& st) {
  const Contribution& c = st.c;
  std::vector<char> out;
  if (c.reducer == Reducer::nop) return out;
  if (c.reducer == Reducer::user || (c.scalar && c.reducer != Reducer::concat && c.reducer != Reducer::set))
    return st.data;
  if (c.reducer == Reducer::set) return set_result(st);
  std::uint64_t n = st.data.size() / (c.elem_size ? c.elem_size : 1);  // vector<T>
  out.resize(8 + st.data.size());
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, st.data.data(), st.data.size());
  return out;
}

}  // namespace

struct ReduceHead {
  std::uint64_t id;
  std::uint32_t round;
  Contribution c;
  CkCallback cb;
  std::uint64_t len;
  std::int64_t count;  // contributions combined in it
  bool has;            // carries data (false: an empty partial a PE had promised)
  bool promised;       // the sender will send the next round too
};

namespace {

bool local_complete(const Collection& c, std::uint32_t r) {
  if (static_cast<int>(c.local.size()) < c.local_expected) return false;  // bulk creation still running
  return c.owing.empty() || c.owing.begin()->first > r;
}

bool children_done(const Collection& c, std::uint32_t r) {
  for (const RedChild& ch : c.red_children)
    if (ch.promised && ch.last_sent < static_cast<std::int64_t>(r)) return false;
  return true;
}

// Whether this PE will send the next round: it holds elements, or a child promised one.
bool subtree_owes(const Collection& c) {
  if (!c.local.empty() || c.local_expected > 0) return true;
  for (const RedChild& ch : c.red_children)
    if (ch.promised) return true;
  return false;
}

void send_partial(Collection& c, std::uint32_t round, const RedState* st, bool promised) {
  Core& k = core();
  const std::size_t len = st ? st->data.size() : 0;
  const std::size_t total = CmiMsgHeaderSizeBytes + sizeof(ReduceHead) + len;
  void* msg = CmiAlloc(total);
  ReduceHead h{c.ref.id, round, st ? st->c : Contribution{}, st ? st->cb : CkCallback{}, len,
               st ? st->count : 0, st && st->has, promised};
  std::memcpy(CmiMsgPayload(msg), &h, sizeof h);
  if (len) std::memcpy(CmiMsgPayload(msg) + sizeof h, st->data.data(), len);
  CmiSetHandler(msg, k.h_reduce);
  ++k.sent;  // a partial counts for quiescence detection like any message (processed by the parent)
  CmiSyncSendAndFree(c.red_parent, total, msg);
}

void finish_round(Collection& c, RedState& st, std::uint32_t round) {
  Core& k = core();
  if (st.count != c.red_total)
    CkAbort("reduction %u of collection %llu got %lld contributions for %lld elements (an element contributed "
            "twice to one reduction?)",
            round, static_cast<unsigned long long>(c.ref.id), static_cast<long long>(st.count),
            static_cast<long long>(c.red_total));
  std::vector<char> res = result_bytes(st);
  CkCallback cb = st.cb;
  std::uint32_t sig = st.c.result_sig;
  k.reductions.erase({c.ref.id, round});
  cb.send_packed(res.data(), res.size(), sig);
}

// Sends up (or, at the root, completes) every round that is ready, in round order.
void progress(Collection& c) {
  Core& k = core();
  for (;;) {
    const std::uint32_t r = c.red_next_send;
    auto it = k.reductions.find({c.ref.id, r});
    RedState* st = it == k.reductions.end() ? nullptr : &it->second;
    if (c.red_parent < 0) {  // the root: complete once every element's contribution is in
      if (!st || st->count < c.red_total) return;
      ++c.red_next_send;
      finish_round(c, *st, r);
      continue;
    }
    if (!c.red_promised && !st) {
      // Nothing owed for r: go on to the next round something is pending for here.
      std::uint32_t next = UINT32_MAX;
      if (!c.owing.empty()) next = c.owing.begin()->first;
      auto later = k.reductions.lower_bound({c.ref.id, r + 1});
      if (later != k.reductions.end() && later->first.first == c.ref.id) next = std::min(next, later->first.second);
      if (next == UINT32_MAX || next <= r) return;
      c.red_next_send = next;
      continue;
    }
    if (!local_complete(c, r) || !children_done(c, r)) return;
    const bool promise = subtree_owes(c);
    send_partial(c, r, st, promise);
    c.red_promised = promise;
    ++c.red_next_send;
    if (st) k.reductions.erase(it);
  }
}

// A contribution or child partial for a round this PE already sent up: send it on alone.
bool pass_late(Collection& c, std::uint32_t round, RedState& st) {
  if (c.red_parent < 0 || round >= c.red_next_send) return false;
  send_partial(c, round, &st, c.red_promised);
  core().reductions.erase({c.ref.id, round});
  return true;
}

}  // namespace

void combine_contribution(RedState& st, const Contribution& c, const char* data, std::size_t len, std::uint64_t id,
                          std::uint32_t round) {
  combine(st, c, data, len, id, round);
}
std::vector<char> reduction_result(RedState& st) { return result_bytes(st); }

void owing_add(Collection& c, std::uint32_t round, int delta) {
  int& n = c.owing[round];
  n += delta;
  if (n == 0) c.owing.erase(round);
}

void reductions_recheck(Collection& c) {
  if (c.reducible) progress(c);
}

void setup_reduction_tree(Collection& c) {
  if (c.reducible) return;  // an element that migrated here may have set it up already
  const int n = CmiNumPes(), me = CmiMyPe();
  // Which PEs hold elements at first: a subtree that holds none promises nothing.
  std::vector<char> holds(static_cast<std::size_t>(n), 0);
  c.local_expected = 0;
  if (c.ref.kind == Kind::Group) {
    std::fill(holds.begin(), holds.end(), 1);
    c.local_expected = c.elements.empty() ? 1 : 0;
    c.red_total = n;
  } else {
    for_each_index(c.ref.shape, [&](const Index& i) {
      const int pe = home_pe(c.ref, i);
      holds[static_cast<std::size_t>(pe)] = 1;
      if (pe == me) ++c.local_expected;
    });
    c.red_total = total_elements(c.ref.shape);
  }
  for (int pe = n - 1; pe > 0; --pe)  // a subtree holds elements if any PE in it does
    if (holds[static_cast<std::size_t>(pe)]) holds[static_cast<std::size_t>((pe - 1) / kTreeBranching)] = 1;
  c.red_parent = me == 0 ? -1 : (me - 1) / kTreeBranching;
  c.red_children.clear();
  for (int ch = me * kTreeBranching + 1; ch <= me * kTreeBranching + kTreeBranching && ch < n; ++ch)
    c.red_children.push_back(RedChild{ch, -1, holds[static_cast<std::size_t>(ch)] != 0});
  c.red_promised = holds[static_cast<std::size_t>(me)] != 0;
  c.reducible = true;
}

void try_complete_reduction(std::uint64_t id, std::uint32_t) {
  Collection* c = find_collection(id);
  if (c && c->reducible) progress(*c);
}

void reduce_handler(void* msg) {  // a child's partial result
  Core& k = core();
  ReduceHead h;
  std::memcpy(&h, CmiMsgPayload(msg), sizeof h);
  const int src = CmiMsgSourcePe(msg);
  ++k.processed;
  RedState& st = k.reductions[{h.id, h.round}];
  if (h.has) {
    combine(st, h.c, CmiMsgPayload(msg) + sizeof h, h.len, h.id, h.round);
    st.cb = h.cb;
  }
  st.count += h.count;
  CmiFree(msg);
  Collection* c = find_collection(h.id);
  if (!c || !c->reducible) return;  // not created here yet: creation runs progress
  for (RedChild& ch : c->red_children)
    if (ch.pe == src && static_cast<std::int64_t>(h.round) >= ch.last_sent) {
      ch.last_sent = h.round;
      ch.promised = h.promised;
    }
  if (pass_late(*c, h.round, st)) return;
  progress(*c);
}

void contribute(void* element, const Contribution& c, const void* data, std::size_t len, const CkCallback& cb) {
  Core& k = core();
  auto* el = static_cast<ChareBase*>(element);
  const CollectionRef& ref = el->ckRef();
  if (ref.kind == Kind::Chare) CkAbort("contribute() is for group and array elements, not singleton chares");
  Collection* col = find_collection(ref.id);
  if (!col || !col->reducible)
    CkAbort("contribute(): reductions over arrays filled by insert() are not supported yet (create the array in bulk)");
  std::uint32_t round = el->ck_next_round();
  if (LocationManager::find_local(*col, el->ckIndex()) == el) {  // (a constructor's element is added after it)
    owing_add(*col, round, -1);
    owing_add(*col, round + 1, +1);
  }
  RedState& st = k.reductions[{ref.id, round}];
  if (c.reducer == Reducer::set) {  // each record carries the contributor's index
    const std::uint64_t n = len;
    std::vector<char> rec(sizeof(Index) + sizeof n + len);
    std::memcpy(rec.data(), &el->ckIndex(), sizeof(Index));
    std::memcpy(rec.data() + sizeof(Index), &n, sizeof n);
    if (len) std::memcpy(rec.data() + sizeof(Index) + sizeof n, data, len);
    combine(st, c, rec.data(), rec.size(), ref.id, round);
  } else {
    combine(st, c, static_cast<const char*>(data), len, ref.id, round);
  }
  st.cb = cb;
  ++st.count;
  if (pass_late(*col, round, st)) return;
  progress(*col);
}

}  // namespace ck::detail
