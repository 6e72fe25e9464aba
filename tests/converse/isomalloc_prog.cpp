// Migratable threads between processes (2 PEs, through ucharmrun). Modes:
//   migrate [HOPS]  a thread on PE 0 fills ~100 MiB of its slice heap, recurses 2000 frames,
//                   then moves PE 0 -> 1 -> 0 ... HOPS times (odd: its frames return on PE 1), checking every heap byte, the
//                   heap's pointers and its frames' locals after each move ("migrate ok").
//   timing          round trips of a thread with 10 MiB of heap against round trips of a
//                   plain 10 MiB message; prints both per one-way trip ("timing ok").
//   layout          every PE sends PE 0 where libc, libstdc++ and the ucharm library are
//                   mapped; PE 0 compares ("layout same").
//   refuse          (run with UCHARM_ISOMALLOC_REEXEC=0 under randomization) PE 1 must refuse
//                   the thread with a clear error ("refused: ...").
// Built with -fstack-protector-all: every frame carries the canary, which differs per process.
#include <ucharm/converse.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

int h_pack, h_arrive, h_done, h_layout, h_plain, h_tarrive;
std::string mode;
int hops = 6;

void* msg_with(int handler, std::size_t payload) {
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + payload);
  CmiSetHandler(m, handler);
  return m;
}
int other_pe() { return 1 - CmiMyPe(); }

// ---- the thread's state, all in its slice --------------------------------------------------
constexpr int kChunks = 100;
constexpr int kNodes = 3000;
constexpr int kDepth = 2000;

struct Chunk {
  Chunk* next;
  std::uint64_t seed;
  std::size_t words;
  std::uint64_t data[1];
};
struct Node {
  Node* next;
  Chunk* chunk;  // heap to heap, across allocations
  std::uint64_t value;
};
struct Work {
  CmiIsoSlice* slice;
  Chunk* chunks;
  Chunk* by_index[kChunks];
  Node* nodes;
  std::size_t chunk_bytes;
  int hops_left;
  int moves;
  int last_pe;
  int errors;
};

std::uint64_t word(std::uint64_t seed, std::size_t i) { return seed * 0x9e3779b97f4a7c15ull + i * 0x2545f4914f6cdd1dull; }

void build_heap(Work* w, std::size_t total) {
  w->chunk_bytes = total / kChunks;
  for (int i = 0; i < kChunks; ++i) {
    std::size_t words = w->chunk_bytes / 8 - 4;
    auto* c = static_cast<Chunk*>(CmiIsoMalloc(w->slice, sizeof(Chunk) + words * 8));
    if (!c) CmiAbort("isomalloc_prog: slice heap full");
    c->seed = static_cast<std::uint64_t>(i) + 1;
    c->words = words;
    for (std::size_t j = 0; j < words; ++j) c->data[j] = word(c->seed, j);
    c->next = w->chunks;
    w->chunks = c;
    w->by_index[i] = c;
  }
  for (int i = 0; i < kNodes; ++i) {
    auto* n = static_cast<Node*>(CmiIsoMalloc(w->slice, sizeof(Node) + static_cast<std::size_t>(i % 97) * 8));
    n->next = w->nodes;
    n->chunk = w->by_index[i % kChunks];
    n->value = static_cast<std::uint64_t>(i) * 31 + 7;
    w->nodes = n;
  }
}

void verify_heap(Work* w) {
  int i = kChunks - 1;
  for (Chunk* c = w->chunks; c; c = c->next, --i) {
    if (c != w->by_index[i] || c->seed != static_cast<std::uint64_t>(i) + 1) ++w->errors;
    for (std::size_t j = 0; j < c->words; ++j)
      if (c->data[j] != word(c->seed, j)) {
        ++w->errors;
        break;
      }
  }
  if (i != -1) ++w->errors;
  int k = kNodes - 1;
  for (Node* n = w->nodes; n; n = n->next, --k)
    if (n->chunk != w->by_index[k % kChunks] || n->value != static_cast<std::uint64_t>(k) * 31 + 7) ++w->errors;
  if (k != -1) ++w->errors;
  if (w->errors) CmiAbort("isomalloc_prog: PE %d: the heap changed in a move (%d errors)", CmiMyPe(), w->errors);
}

// Asks the scheduler of this PE to pack and send this thread, and suspends.
void move_away() {
  void* m = msg_with(h_pack, sizeof(CthThread));
  *reinterpret_cast<CthThread*>(CmiMsgPayload(m)) = CthSelf();
  CmiSyncSendAndFree(CmiMyPe(), CmiMsgHeaderSizeBytes + sizeof(CthThread), m);
  CthSuspend();
}

void hop_loop(Work* w) {
  while (w->hops_left > 0) {
    int before = CmiMyPe();
    move_away();
    if (CmiMyPe() == before) CmiAbort("isomalloc_prog: the thread did not move");
    --w->hops_left;
    ++w->moves;
    verify_heap(w);
  }
}

__attribute__((noinline)) std::uint64_t recurse(Work* w, int depth) {
  volatile std::uint64_t local[6];
  for (int k = 0; k < 6; ++k) local[k] = word(static_cast<std::uint64_t>(depth), static_cast<std::size_t>(k));
  Chunk* volatile mine = w->by_index[depth % kChunks];  // stack to heap
  std::uint64_t sum = depth == 0 ? (hop_loop(w), 0) : recurse(w, depth - 1);
  for (int k = 0; k < 6; ++k)
    if (local[k] != word(static_cast<std::uint64_t>(depth), static_cast<std::size_t>(k))) ++w->errors;
  if (mine != w->by_index[depth % kChunks] || mine->data[3] != word(mine->seed, 3)) ++w->errors;
  return sum + local[depth % 6];
}

void report(Work* w) {
  void* m = msg_with(h_done, 2 * sizeof(int));
  auto* p = reinterpret_cast<int*>(CmiMsgPayload(m));
  p[0] = w->errors;
  p[1] = w->moves;
  CmiSyncSendAndFree(0, CmiMsgHeaderSizeBytes + 2 * sizeof(int), m);
}

void migrate_body(void* arg) {
  auto* w = static_cast<Work*>(arg);
  build_heap(w, mode == "refuse" ? std::size_t{1} << 20 : std::size_t{100} << 20);
  std::uint64_t sum = recurse(w, kDepth);
  std::uint64_t expect = 0;
  for (int d = 0; d <= kDepth; ++d) expect += word(static_cast<std::uint64_t>(d), static_cast<std::size_t>(d % 6));
  if (sum != expect) ++w->errors;
  verify_heap(w);
  // The heap keeps working where the thread ended up.
  std::size_t before = CmiIsoUsedBytes(w->slice);
  for (Chunk* c = w->chunks; c;) {
    Chunk* next = c->next;
    CmiIsoFree(w->slice, c);
    c = next;
  }
  void* again = CmiIsoMalloc(w->slice, 50u << 20);
  if (!again || CmiIsoUsedBytes(w->slice) >= before) ++w->errors;
  if (CmiIsoSliceCheck(w->slice)) CmiAbort("isomalloc_prog: %s", CmiIsoSliceCheck(w->slice));
  CmiPrintf("thread: %d moves, ends on PE %d, stack and heap intact\n", w->moves, CmiMyPe());
  report(w);
}

// timing: the thread only holds its heap; it is moved while suspended.
void parked_body(void* arg) {
  auto* w = static_cast<Work*>(arg);
  build_heap(w, std::size_t{10} << 20);
  CthSuspend();  // moved back and forth meanwhile
  verify_heap(w);
  report(w);
}

Work* new_work(CmiIsoSlice* s) {
  auto* w = static_cast<Work*>(CmiIsoCalloc(s, 1, sizeof(Work)));
  w->slice = s;
  return w;
}

// ---- handlers --------------------------------------------------------------------------
// Seconds spent packing, unpacking and releasing on this PE (timing mode prints PE 0's).
double pack_s = 0, unpack_s = 0, release_s = 0;

void send_thread(CthThread t, int pe, int handler) {
  double t0 = CmiWallTimer();
  std::size_t n = CthPackMigratableSize(t);
  void* m = msg_with(handler, n);
  CthPackMigratable(t, CmiMsgPayload(m));
  double t1 = CmiWallTimer();
  CmiSyncSendAndFree(pe, CmiMsgHeaderSizeBytes + n, m);
  double t2 = CmiWallTimer();
  CthMigratableRelease(t);  // after the send: unmapping overlaps the transfer
  pack_s += t1 - t0;
  release_s += CmiWallTimer() - t2;
}

CthThread receive_thread(void* msg) {
  double t0 = CmiWallTimer();
  CthThread t = CthUnpackMigratable(CmiMsgPayload(msg), CmiMsgSize(msg) - CmiMsgHeaderSizeBytes);
  CmiFree(msg);
  unpack_s += CmiWallTimer() - t0;
  if (!t) {
    if (mode == "refuse") {
      CmiPrintf("refused: %s\n", CmiIsomallocError());
      CmiExit(0);
    }
    CmiAbort("isomalloc_prog: PE %d cannot take the thread: %s", CmiMyPe(), CmiIsomallocError());
  }
  return t;
}

void on_pack(void* msg) {
  CthThread t = *reinterpret_cast<CthThread*>(CmiMsgPayload(msg));
  CmiFree(msg);
  send_thread(t, other_pe(), h_arrive);
}

void on_arrive(void* msg) { CthAwaken(receive_thread(msg)); }

void on_done(void* msg) {
  auto* p = reinterpret_cast<int*>(CmiMsgPayload(msg));
  int errors = p[0], moves = p[1];
  CmiFree(msg);
  if (errors) CmiAbort("isomalloc_prog: %d errors after %d moves", errors, moves);
  if (mode == "migrate") CmiPrintf("migrate ok (%d moves)\n", moves);
  if (mode == "timing") CmiPrintf("timing ok\n");
  CmiExit(0);
}

// ---- timing ------------------------------------------------------------------------------
constexpr int kRounds = 7;
struct Timing {
  CthThread t = nullptr;
  int round = 0;
  double start = 0;
  std::vector<double> plain, moved;
  void* plain_msg = nullptr;
} timing;
constexpr std::size_t kPlainBytes = std::size_t{10} << 20;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void next_timing_step();

// A plain 10 MiB message bounces PE 0 -> 1 -> 0.
void on_plain(void* msg) {
  if (CmiMyPe() == 1) {
    CmiSyncSendAndFree(0, CmiMsgSize(msg), msg);
    return;
  }
  timing.plain.push_back((CmiWallTimer() - timing.start) / 2);
  timing.plain_msg = msg;
  next_timing_step();
}

// The thread bounces PE 0 -> 1 -> 0 (unpacked and packed again on PE 1).
void on_tarrive(void* msg) {
  CthThread t = receive_thread(msg);
  if (CmiMyPe() == 1) {
    send_thread(t, 0, h_tarrive);
    return;
  }
  timing.moved.push_back((CmiWallTimer() - timing.start) / 2);
  timing.t = t;
  next_timing_step();
}

// Alternates the two kinds of round trip (round 0 of each warms up).
void next_timing_step() {
  int r = timing.round++;
  if (r >= 2 * (kRounds + 1)) {
    timing.plain.erase(timing.plain.begin());
    timing.moved.erase(timing.moved.begin());
    double p = median(timing.plain), m = median(timing.moved);
    CmiPrintf("plain 10 MiB message, one way: %.3f ms; migration of a thread with 10 MiB of heap "
              "(pack + send + unpack), one way: %.3f ms; ratio %.2f (median of %d round trips)\n",
              p * 1e3, m * 1e3, m / p, kRounds);
    int moves = kRounds + 1;
    CmiPrintf("PE 0 per move: pack %.3f ms, release %.3f ms, unpack %.3f ms\n", pack_s / moves * 1e3,
              release_s / moves * 1e3, unpack_s / moves * 1e3);
    CmiFree(timing.plain_msg);
    CthAwaken(timing.t);  // it checks its heap after all the moves
    return;
  }
  timing.start = CmiWallTimer();
  if (r % 2 == 0) {
    CmiSyncSendAndFree(1, CmiMsgHeaderSizeBytes + kPlainBytes, timing.plain_msg);
    timing.plain_msg = nullptr;
  } else {
    send_thread(timing.t, 1, h_tarrive);
    timing.t = nullptr;
  }
}

// ---- layout ------------------------------------------------------------------------------
std::string layout_here() {
  std::ifstream maps("/proc/self/maps");
  std::string line, out;
  for (const char* lib : {"libc.so", "libstdc++", "libucharm-converse"}) {
    maps.clear();
    maps.seekg(0);
    while (std::getline(maps, line))
      if (line.find(lib) != std::string::npos) {  // the first mapping: the library's base
        out += line.substr(0, line.find(' ')) + " " + line.substr(line.rfind('/') + 1) + "\n";
        break;
      }
  }
  return out;
}

void on_layout(void* msg) {
  std::string theirs(CmiMsgPayload(msg), CmiMsgSize(msg) - CmiMsgHeaderSizeBytes);
  CmiFree(msg);
  std::string mine = layout_here();
  if (theirs != mine) CmiAbort("layout differs:\nPE 0:\n%sPE 1:\n%s", mine.c_str(), theirs.c_str());
  CmiPrintf("layout same on both PEs:\n%s", mine.c_str());
  CmiExit(0);
}

// ---- start -------------------------------------------------------------------------------
void start(int argc, char** argv) {
  h_pack = CmiRegisterHandler(on_pack);
  h_arrive = CmiRegisterHandler(on_arrive);
  h_done = CmiRegisterHandler(on_done);
  h_layout = CmiRegisterHandler(on_layout);
  h_plain = CmiRegisterHandler(on_plain);
  h_tarrive = CmiRegisterHandler(on_tarrive);
  mode = argc > 1 ? argv[1] : "";
  if (argc > 2) hops = std::atoi(argv[2]);
  if (CmiNumPes() != 2) CmiAbort("isomalloc_prog: run on 2 PEs");
  if (mode == "layout") {
    if (CmiMyPe() == 1) {
      std::string mine = layout_here();
      void* m = msg_with(h_layout, mine.size());
      std::memcpy(CmiMsgPayload(m), mine.data(), mine.size());
      CmiSyncSendAndFree(0, CmiMsgHeaderSizeBytes + mine.size(), m);
    }
    return;
  }
  if (CmiMyPe() != 0) return;
  if (!CmiIsomallocReady()) CmiAbort("isomalloc_prog: no isomalloc region: %s", CmiIsomallocError());
  if (mode == "refuse") {
    CmiPrintf("PE 0: can migrate: %s (%s)\n", CmiIsomallocCanMigrate() ? "yes" : "no", CmiIsomallocError());
  } else if (!CmiIsomallocCanMigrate()) {
    CmiAbort("isomalloc_prog: %s", CmiIsomallocError());
  }
  CmiIsoSlice* s = CmiIsomallocSlice(mode == "timing" ? 9 : 3);
  if (!s) CmiAbort("isomalloc_prog: %s", CmiIsomallocError());
  Work* w = new_work(s);
  w->hops_left = mode == "refuse" ? 1 : hops;
  if (mode == "migrate" || mode == "refuse") {
    CthThread t = CthCreateMigratable(migrate_body, w, s, std::size_t{4} << 20);
    CthSetData(t, w);
    CthAwaken(t);
  } else if (mode == "timing") {
    timing.t = CthCreateMigratable(parked_body, w, s, 256 * 1024);
    CthSetData(timing.t, w);
    CthResume(timing.t);  // builds its heap and suspends
    timing.plain_msg = msg_with(h_plain, kPlainBytes);
    std::memset(CmiMsgPayload(timing.plain_msg), 7, kPlainBytes);
    next_timing_step();
  } else {
    CmiAbort("isomalloc_prog: unknown mode '%s' (migrate, timing, layout, refuse)", mode.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  CmiIsomallocInit(argc, argv);
  ConverseInit(argc, argv, start);
  return 0;
}
