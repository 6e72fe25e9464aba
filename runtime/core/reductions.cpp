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
    return std::lexicographical_compare(a.index.x, a.index.x + 3, b.index.x, b.index.x + 3);
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
};

void try_complete_reduction(std::uint64_t id, std::uint32_t round) {
  Core& k = core();
  Collection* c = find_collection(id);
  if (!c || !c->reducible) return;
  auto it = k.reductions.find({id, round});
  if (it == k.reductions.end()) return;
  RedState& st = it->second;
  const int n = static_cast<int>(c->red_pes.size());
  // Until bulk creation is done, local.size() is short of the elements still to come
  // (a constructor may contribute): wait for all of them.
  const int local_n = std::max(static_cast<int>(c->local.size()), c->local_expected);
  if (st.local_got < local_n || st.children_got < tree_children(c->red_pos, n))
    return;
  if (c->red_pos == 0) {
    std::vector<char> res = result_bytes(st);
    CkCallback cb = st.cb;
    std::uint32_t sig = st.c.result_sig;
    k.reductions.erase(it);
    cb.send_packed(res.data(), res.size(), sig);
    return;
  }
  const int parent = c->red_pes[static_cast<std::size_t>((c->red_pos - 1) / kTreeBranching)];
  std::size_t total = CmiMsgHeaderSizeBytes + sizeof(ReduceHead) + st.data.size();
  void* msg = CmiAlloc(total);
  ReduceHead h{id, round, st.c, st.cb, st.data.size()};
  std::memcpy(CmiMsgPayload(msg), &h, sizeof h);
  if (!st.data.empty()) std::memcpy(CmiMsgPayload(msg) + sizeof h, st.data.data(), st.data.size());
  CmiSetHandler(msg, k.h_reduce);
  k.reductions.erase(it);
  ++k.sent;  // a partial counts for quiescence detection like any message (processed by the parent)
  CmiSyncSendAndFree(parent, total, msg);
}

void reduce_handler(void* msg) {  // a child's partial result
  Core& k = core();
  ReduceHead h;
  std::memcpy(&h, CmiMsgPayload(msg), sizeof h);
  ++k.processed;
  RedState& st = k.reductions[{h.id, h.round}];
  combine(st, h.c, CmiMsgPayload(msg) + sizeof h, h.len, h.id, h.round);
  st.cb = h.cb;
  ++st.children_got;
  CmiFree(msg);
  try_complete_reduction(h.id, h.round);
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
  ++st.local_got;
  try_complete_reduction(ref.id, round);
}

}  // namespace ck::detail
