// Sections: multicast and reduction over a subset of a chare array (section.h).
//
// The tree. A section's members are assigned to their HOME PEs (fixed by the array's map,
// computable anywhere); the root (the creating PE) and the PEs that are home to members
// form a tree of branching kTreeBranching, built once: the root sends each child the
// member lists of its subtree (a setup message), and every PE in the tree keeps its own
// members, its children and its parent. Multicasts then carry only the entry's arguments.
//
// Multicast. The message goes to the root, then down the tree (links keep order, so the
// setup is always there first). Each PE runs the entry on its members that are here and
// sends it through the ordinary element path (send_to_element: the location manager
// forwards it) to those that moved away; an element that moved in is served by its own
// home. So each member gets each multicast exactly once.
//
// Reduction. A member contributes on whichever PE it is: at its home the contribution is
// combined directly, elsewhere it goes to its home in one message. Each tree PE counts:
// when round r holds as many contributions as members in its subtree it sends the partial
// to its parent; the root delivers results in round order. Rounds are per member and live
// in the member's CkSectionInfo (the element pups it), so they travel when it migrates.
#include "internal.h"

#include <unordered_set>

namespace ck::detail {

namespace {

// The members a PE is home to, in a setup message.
struct PeMembers {
  std::int32_t pe = 0;
  std::vector<Index> members;
  void pup(PUP::er& p) { p | pe; p | members; }
};

}  // namespace

// One PE's part of one section's tree.
struct SectionNode {
  CollectionRef ref;
  int parent = -1;  // -1: the root
  std::vector<int> children;
  std::vector<Index> mine;  // members whose home is this PE (it delivers to them, combines for them)
  std::unordered_set<Index, IndexHash> mine_set;
  std::int64_t subtree = 0;  // members in this PE's subtree
  std::map<std::uint32_t, RedState> rounds;
  // Members (of `mine`) that contributed to a round still open here: catches a contribution
  // made twice (a CkSectionInfo copied or reset, so its round number repeats).
  std::map<std::uint32_t, std::unordered_set<Index, IndexHash>> contributed;
  std::uint32_t next_result = 0;  // the root: results delivered for rounds below
};

struct Sections {
  int h_mcast = -1, h_setup = -1, h_partial = -1;
  std::unordered_map<std::uint64_t, SectionNode> nodes;
  std::unordered_map<std::uint64_t, std::vector<void*>> pending;  // came before the setup
};

namespace {

Sections& sections() { return *core().sections; }
int root_of(std::uint64_t sid) { return array_root(sid); }

// A contribution (member: from one member, to its home) or a subtree's partial result.
struct PartialHead {
  std::uint64_t sid;
  std::uint32_t round;
  Contribution c;
  CkCallback cb;
  std::uint64_t len;
  std::int64_t count;
  bool has;
  bool member;
  Index from;  // the member (member contributions)
};

void send_setup(int pe, const CollectionRef& ref, std::uint64_t sid, std::int32_t parent,
                std::vector<PeMembers>& groups) {
  CollectionRef r = ref;
  std::uint64_t s = sid;
  PUP::er z = PUP::er::sizer();
  z | r; z | s; z | parent; z | groups;
  const std::size_t total = CmiMsgHeaderSizeBytes + z.size();
  void* msg = CmiAlloc(total);
  PUP::er p = PUP::er::packer(CmiMsgPayload(msg), z.size());
  p | r; p | s; p | parent; p | groups;
  CmiSetHandler(msg, sections().h_setup);
  ++core().sent;
  CmiSyncSendAndFree(pe, total, msg);
}

void replay_pending(std::uint64_t sid);

// This PE's node from its subtree's groups (groups[0] is this PE); the rest is split into
// up to kTreeBranching contiguous chunks, each the subtree of its first PE.
void build_node(const CollectionRef& ref, std::uint64_t sid, int parent, std::vector<PeMembers>& groups) {
  if (groups.empty() || groups[0].pe != CmiMyPe())
    CkAbort("section %llu: a setup message reached PE %d that is not its subtree's root",
            static_cast<unsigned long long>(sid), CmiMyPe());
  SectionNode& n = sections().nodes[sid];
  n.ref = ref;
  n.parent = parent;
  n.mine = groups[0].members;
  n.mine_set.insert(n.mine.begin(), n.mine.end());
  for (const PeMembers& g : groups) n.subtree += static_cast<std::int64_t>(g.members.size());
  const std::size_t rest = groups.size() - 1;
  const std::size_t k = std::min<std::size_t>(kTreeBranching, rest);
  std::size_t at = 1;
  for (std::size_t c = 0; c < k; ++c) {
    const std::size_t len = rest / k + (c < rest % k ? 1 : 0);
    std::vector<PeMembers> sub(std::make_move_iterator(groups.begin() + static_cast<std::ptrdiff_t>(at)),
                               std::make_move_iterator(groups.begin() + static_cast<std::ptrdiff_t>(at + len)));
    n.children.push_back(sub[0].pe);
    send_setup(sub[0].pe, ref, sid, CmiMyPe(), sub);
    at += len;
  }
  replay_pending(sid);
}

void setup_handler(void* msg) {
  ++core().processed;
  PUP::er p = PUP::er::unpacker(CmiMsgPayload(msg), CmiMsgSize(msg) - CmiMsgHeaderSizeBytes);
  p.set_context("a section's setup message");
  CollectionRef ref;
  std::uint64_t sid;
  std::int32_t parent;
  std::vector<PeMembers> groups;
  p | ref; p | sid; p | parent; p | groups;
  CmiFree(msg);
  build_node(ref, sid, parent, groups);
}

// Runs a multicast here and passes it down the tree.
void distribute(SectionNode& n, void* msg) {
  Core& k = core();
  const std::size_t total = CmiMsgSize(msg);
  for (int child : n.children) {
    ++k.sent;
    CmiSyncSend(child, total, msg);
  }
  Collection* c = find_collection(n.ref.id);
  for (const Index& idx : n.mine) {
    ChareBase* obj = c ? LocationManager::find_local(*c, idx) : nullptr;
    if (obj) {
      call_entry(*c, obj, msg);
      continue;
    }
    // Moved away (or not built here yet): the element path finds it, exactly once.
    void* copy = CmiAlloc(total);
    std::memcpy(copy, msg, total);
    Envelope& e = envelope(copy);
    e.collection = n.ref.id;
    e.set_index(idx);
    e.kind = MsgKind::Invoke;
    CmiSetHandler(copy, k.h_core);
    send_to_element(copy, total, n.ref, SendOpts{});
  }
  CmiFree(msg);
}

void mcast_handler(void* msg) {
  const std::uint64_t sid = envelope(msg).collection;
  auto it = sections().nodes.find(sid);
  if (it == sections().nodes.end()) {  // cannot overtake its setup on one link; kept to be safe
    sections().pending[sid].push_back(msg);
    return;
  }
  ++core().processed;
  distribute(it->second, msg);
}

void send_partial(int pe, const PartialHead& h, const char* data) {
  const std::size_t total = CmiMsgHeaderSizeBytes + sizeof h + h.len;
  void* msg = CmiAlloc(total);
  std::memcpy(CmiMsgPayload(msg), &h, sizeof h);
  if (h.len) std::memcpy(CmiMsgPayload(msg) + sizeof h, data, h.len);
  CmiSetHandler(msg, sections().h_partial);
  ++core().sent;
  CmiSyncSendAndFree(pe, total, msg);
}

// The root: results go out in round order.
void deliver_results(std::uint64_t sid, SectionNode& n) {
  for (;;) {
    auto it = n.rounds.find(n.next_result);
    if (it == n.rounds.end() || it->second.count < n.subtree) return;
    RedState st = std::move(it->second);
    n.rounds.erase(it);
    n.contributed.erase(n.next_result);
    ++n.next_result;
    std::vector<char> res = reduction_result(st);
    (void)sid;
    st.cb.send_packed(res.data(), res.size(), st.c.result_sig);
  }
}

void accept(std::uint64_t sid, SectionNode& n, const PartialHead& h, const char* data) {
  if (h.member) {
    if (!n.mine_set.count(h.from))
      CkAbort("element %s of %s contributed to section %llu, which it is not a member of", h.from.str().c_str(),
              class_name(find_collection(n.ref.id) ? find_collection(n.ref.id)->cls : nullptr),
              static_cast<unsigned long long>(sid));
    if (!n.contributed[h.round].insert(h.from).second)
      CkAbort("element %s contributed twice to reduction round %u of section %llu: keep one CkSectionInfo per "
              "section in the element (assign it once) and pup it, so that its round number advances",
              h.from.str().c_str(), h.round, static_cast<unsigned long long>(sid));
  }
  if (n.parent < 0 && h.round < n.next_result)  // a round that completed: someone's round repeats
    CkAbort("reduction round %u of section %llu got a contribution after it completed: a member contributed "
            "twice (keep one CkSectionInfo per section in the element, assign it once and pup it)",
            h.round, static_cast<unsigned long long>(sid));
  RedState& st = n.rounds[h.round];
  if (h.has) {
    combine_contribution(st, h.c, data, h.len, sid, h.round);
    st.cb = h.cb;
  }
  st.count += h.count;
  if (st.count < n.subtree) return;
  if (st.count > n.subtree)
    CkAbort("reduction round %u of section %llu got %lld contributions for %lld members",
            h.round, static_cast<unsigned long long>(sid), static_cast<long long>(st.count),
            static_cast<long long>(n.subtree));
  if (n.parent < 0) {
    deliver_results(sid, n);
    return;
  }
  PartialHead up{sid, h.round, st.c, st.cb, st.data.size(), st.count, st.has, false, Index{}};
  send_partial(n.parent, up, st.data.data());
  n.rounds.erase(h.round);
  n.contributed.erase(h.round);
}

void partial_handler(void* msg) {
  PartialHead h;
  std::memcpy(&h, CmiMsgPayload(msg), sizeof h);
  auto it = sections().nodes.find(h.sid);
  if (it == sections().nodes.end()) {  // a member's contribution may overtake its home's setup
    sections().pending[h.sid].push_back(msg);
    return;
  }
  ++core().processed;
  accept(h.sid, it->second, h, CmiMsgPayload(msg) + sizeof h);
  CmiFree(msg);
}

void replay_pending(std::uint64_t sid) {
  auto it = sections().pending.find(sid);
  if (it == sections().pending.end()) return;
  std::vector<void*> msgs = std::move(it->second);
  sections().pending.erase(it);
  for (void* m : msgs) {
    if (CmiGetHandler(m) == sections().h_mcast) mcast_handler(m);
    else partial_handler(m);
  }
}

}  // namespace

void register_section_handlers() {
  Core& k = core();
  k.sections = std::make_shared<Sections>();
  k.sections->h_mcast = CmiRegisterHandler(mcast_handler);
  k.sections->h_setup = CmiRegisterHandler(setup_handler);
  k.sections->h_partial = CmiRegisterHandler(partial_handler);
}

std::vector<Index> section_box(const CollectionRef& array, const Index& lo, const Index& hi, const Index& stride) {
  const int d = array.shape.dims;
  if (array.kind != Kind::Array) CkAbort("SectionProxy::box: sections are made of chare array elements");
  if (lo.dims != d || hi.dims != d || (stride.dims != 0 && stride.dims != d))
    CkAbort("SectionProxy::box: lo %s, hi %s and stride %s must be %d-D like the array", lo.str().c_str(),
            hi.str().c_str(), stride.str().c_str(), d);
  Index shape;  // members per dimension
  shape.dims = d;
  for (int i = 0; i < d; ++i) {
    const int s = stride.dims ? stride.x[i] : 1;
    if (s < 1) CkAbort("SectionProxy::box: stride %s must be at least 1 in every dimension", stride.str().c_str());
    if (hi.x[i] <= lo.x[i])
      CkAbort("SectionProxy::box: the box lo %s .. hi %s (exclusive) is empty in dimension %d", lo.str().c_str(),
              hi.str().c_str(), i);
    shape.x[i] = (hi.x[i] - lo.x[i] + s - 1) / s;
  }
  std::vector<Index> out;
  out.reserve(static_cast<std::size_t>(total_elements(shape)));
  for_each_index(shape, [&](const Index& k) {
    Index idx;
    idx.dims = d;
    for (int i = 0; i < d; ++i) idx.x[i] = lo.x[i] + k.x[i] * (stride.dims ? stride.x[i] : 1);
    out.push_back(idx);
  });
  return out;
}

std::uint64_t section_create(const CollectionRef& array, std::vector<Index> members) {
  if (array.kind != Kind::Array) CkAbort("SectionProxy::create: sections are made of chare array elements");
  if (members.empty()) CkAbort("SectionProxy::create: a section needs at least one member (the list is empty)");
  std::unordered_set<Index, IndexHash> seen;
  seen.reserve(members.size());
  for (const Index& idx : members) {
    if (idx.dims != array.shape.dims)
      CkAbort("SectionProxy::create: member %s is %d-D, the chare array is %d-D", idx.str().c_str(), idx.dims,
              array.shape.dims);
    if (array.bounded)
      for (int d = 0; d < idx.dims; ++d)
        if (idx.x[d] < 0 || idx.x[d] >= array.shape.x[d])
          CkAbort("SectionProxy::create: member %s is outside the chare array's bounds %s", idx.str().c_str(),
                  array.shape.str().c_str());
    if (!seen.insert(idx).second)
      CkAbort("SectionProxy::create: member %s is listed twice (each member gets each multicast once)",
              idx.str().c_str());
  }
  // Groups by home PE: this PE (the root, maybe with no members) first, then by PE.
  std::map<int, std::vector<Index>> by_pe;
  for (const Index& idx : members) by_pe[home_pe(array, idx)].push_back(idx);
  std::vector<PeMembers> groups(1);
  groups[0].pe = CmiMyPe();
  for (auto& [pe, list] : by_pe) {
    if (pe == CmiMyPe()) groups[0].members = std::move(list);
    else groups.push_back(PeMembers{pe, std::move(list)});
  }
  const std::uint64_t sid = new_collection_id();
  build_node(array, sid, -1, groups);
  return sid;
}

void section_multicast(void* msg, std::size_t total) {
  Core& k = core();
  const int root = root_of(envelope(msg).collection);
  if (root >= CmiNumPes()) CkAbort("SectionProxy::send: not a section made in this job");
  CmiSetHandler(msg, sections().h_mcast);
  ++k.sent;
  CmiSyncSendAndFree(root, total, msg);  // the root (this PE too: through the scheduler, not inline)
}

void section_contribute(std::uint64_t array, std::uint64_t sid, std::uint32_t round, ChareBase* el,
                        const Contribution& c, const void* data, std::size_t len, const CkCallback& cb) {
  if (sid == 0 && array == 0) CkAbort("CkSectionInfo::contribute: the CkSectionInfo was never set (use SectionProxy::info())");
  const CollectionRef& ref = el->ckRef();
  if (ref.id != array)
    CkAbort("CkSectionInfo::contribute: element %s is not an element of the section's array",
            el->ckIndex().str().c_str());
  std::vector<char> rec;  // a set reduction's record carries the contributor's index
  if (c.reducer == Reducer::set) {
    const std::uint64_t n = len;
    rec.resize(sizeof(Index) + sizeof n + len);
    std::memcpy(rec.data(), &el->ckIndex(), sizeof(Index));
    std::memcpy(rec.data() + sizeof(Index), &n, sizeof n);
    if (len) std::memcpy(rec.data() + sizeof(Index) + sizeof n, data, len);
    data = rec.data();
    len = rec.size();
  }
  const PartialHead h{sid, round, c, cb, len, 1, true, true, el->ckIndex()};
  const int home = home_pe(ref, el->ckIndex());
  auto it = sections().nodes.find(sid);
  if (home == CmiMyPe() && it != sections().nodes.end()) {
    accept(sid, it->second, h, static_cast<const char*>(data));
    return;
  }
  send_partial(home, h, static_cast<const char*>(data));
}

}  // namespace ck::detail
