// Packing a rank's communicator-side MPI state for a move or a checkpoint (issue 18):
// pup_comm_state packs / unpacks everything its CommTable holds — communicators (members,
// contexts, names, attributes, error handlers, topologies, intercommunicators, collective
// sequence numbers), the context bookkeeping, groups, keyvals, error handlers, info objects,
// the reuse order of freed handles, user error codes, and the rank's derived datatypes and
// user ops (handles.h). The packed form holds values only: no address of the runtime's
// heap. Attribute values, extra_state and the program's function pointers travel as their
// bits: the program's code and memory are at the same addresses after a move.
//
// AMPIX_Roundtrip_comm_state (not in mpi.h; tests reach it with dlsym): packs the calling
// rank's state, replaces its table with a fresh one and unpacks into that, as a move would.
#include "comm/comms.h"

#include <cstdio>
#include <cstdlib>
#include <typeinfo>

namespace ampi {
namespace {

using namespace cm;

constexpr std::uint32_t kMagic = 0x414d4331;  // "AMC1": the layout below; a mismatch stops

// A pointer as its bits (user memory or the program's code: valid after the move).
template <class T>
void pup_bits(PUP::er& p, T*& ptr) {
  auto bits = reinterpret_cast<std::uintptr_t>(ptr);
  p | bits;
  ptr = reinterpret_cast<T*>(bits);
}

// A vector whose elements `each` packs (the count first).
template <class T, class F>
void pup_vector(PUP::er& p, std::vector<T>& v, F each) {
  std::uint64_t n = v.size();
  p | n;
  if (p.isUnpacking()) {
    p.check_length(n, 1, typeid(T));
    v.clear();
    v.resize(static_cast<std::size_t>(n));
  }
  for (T& e : v) each(e);
}

// A slot that may be empty (a free handle).
template <class T, class F>
void pup_slot(PUP::er& p, std::unique_ptr<T>& slot, F each) {
  bool present = slot != nullptr;
  p | present;
  if (!present) return;
  if (p.isUnpacking()) slot = std::make_unique<T>();
  each(*slot);
}

void pup_comm(PUP::er& p, Comm& c) {
  p | c.handle;
  p | c.context;
  p | c.members;
  p | c.rank;
  p | c.errhandler;
  p | c.coll_seq;
  bool inter = c.inter != nullptr;
  p | inter;
  if (!inter) {
    if (p.isUnpacking()) c.inter.reset();
    return;
  }
  if (p.isUnpacking()) c.inter = std::make_shared<Intercomm>();
  pup_comm(p, c.inter->local);
}

void pup_attrs(PUP::er& p, Attrs& a) {
  pup_vector(p, a, [&](std::pair<int, void*>& e) {
    p | e.first;
    pup_bits(p, e.second);
  });
}

void pup_topo(PUP::er& p, Topology& t) {
  p | t.kind;
  if (p.isUnpacking()) p.check_value(static_cast<std::uint64_t>(t.kind), 4, "topology kind", typeid(Topology));
  p | t.dims;
  p | t.periods;
  p | t.index;
  p | t.edges;
  p | t.sources;
  p | t.source_weights;
  p | t.destinations;
  p | t.dest_weights;
  p | t.weighted;
}

}  // namespace

void pup_comm_state(PUP::er& p, CommTable& t) {
  std::uint32_t magic = kMagic;
  p | magic;
  if (magic != kMagic) {
    std::fprintf(stderr, "ucharm AMPI: a rank's packed communicator state is not in this build's layout "
                         "(magic %#x, expected %#x)\n", magic, kMagic);
    std::abort();
  }
  pup_vector(p, t.comms, [&](CommSlot& s) {
    pup_slot(p, s.comm, [&](Comm& c) { pup_comm(p, c); });
    p | s.name;
    pup_attrs(p, s.attrs);
    pup_topo(p, s.topo);
  });
  pup_vector(p, t.groups, [&](std::unique_ptr<Group>& g) { pup_slot(p, g, [&](Group& x) { p | x.members; }); });
  pup_vector(p, t.keyvals, [&](Keyval& k) {
    pup_bits(p, k.copy);
    pup_bits(p, k.del);
    pup_bits(p, k.extra);
    p | k.refs;
    p | k.freed;
    p | k.kind;
  });
  std::uint64_t ntypes = t.type_attrs.size();
  p | ntypes;
  if (p.isUnpacking()) {
    p.check_length(ntypes, sizeof(MPI_Datatype), typeid(Attrs));
    t.type_attrs.clear();
    for (std::uint64_t i = 0; i < ntypes; ++i) {
      MPI_Datatype h = MPI_DATATYPE_NULL;
      p | h;
      pup_attrs(p, t.type_attrs[h]);
    }
  } else {
    for (auto& [h, attrs] : t.type_attrs) {
      MPI_Datatype key = h;
      p | key;
      pup_attrs(p, attrs);
    }
  }
  pup_types(p, *t.types);
  pup_ops(p, *t.ops);
  pup_vector(p, t.errhs, [&](Errh& e) {
    pup_bits(p, e.fn);
    p | e.refs;
  });
  pup_vector(p, t.infos, [&](std::unique_ptr<Info>& i) { pup_slot(p, i, [&](Info& x) { p | x; }); });
  p | t.next_context;
  p | t.agreements;
  p | t.claimed;
  p | t.freed_comms;
  p | t.user_errors;
  p | t.attr_values;
  p | t.attr_copy;  // in the rank's slice: the same address after a move
}

}  // namespace ampi

using namespace ampi;

extern "C" __attribute__((visibility("default"))) int AMPIX_Roundtrip_comm_state(void) {
  heap::RuntimeScope scope;  // called by the program (not a generated PMPI_X): the runtime's heap
  CommTable& mine = my_comms();
  PUP::er sizer = PUP::er::sizer();
  pup_comm_state(sizer, mine);
  std::vector<char> buf(sizer.size());
  PUP::er packer = PUP::er::packer(buf.data(), buf.size());
  pup_comm_state(packer, mine);
  // As on arrival: a fresh table (it takes over the rank's datatype and op handles) filled
  // from the bytes; the old one is destroyed, so ASan sees any pointer into it that survived.
  CommTablePtr fresh = comm_table_new(world_rank(), world_size());
  PUP::er unpacker = PUP::er::unpacker(buf.data(), buf.size());
  pup_comm_state(unpacker, *fresh);
  if (unpacker.size() != buf.size()) {
    std::fprintf(stderr, "AMPIX_Roundtrip_comm_state: unpacking read %zu of %zu bytes\n", unpacker.size(),
                 buf.size());
    std::abort();
  }
  mine = std::move(*fresh);
  return MPI_SUCCESS;
}
