// place: PE 0 and the last PE send each other two-part messages above the eager size
// (CmiSyncVectorSend; 40 KiB to 3.5 MiB, so in fragments too) by turns. Each registers a
// placement (CmiRegisterPlacement) that lands half of the messages' data in a buffer of
// its own and leaves the other half whole. The receiver is idle whenever one arrives, so
// its placement is asked every time: each PE must place its share, and every byte is checked.
#include "common.h"

#include <cstring>

namespace testprog::place {
namespace {

struct Head {
  std::uint64_t len, round;
  char* landing;  // set by the placement
};
constexpr std::uint64_t kRounds = 32;
const std::size_t kSizes[] = {40000, 100003, 1 << 20, (3u << 20) + 512 * 1024};
int h_msg;
long long placed = 0, asked = 0;
std::vector<char> out;

int peer() { return CmiMyPe() == 0 ? CmiNumPes() - 1 : 0; }
std::size_t size_of(std::uint64_t round) { return kSizes[(round / 4) % 4]; }

void send(std::uint64_t round) {
  const Head h{size_of(round), round, nullptr};
  alignas(8) char head[CmiMsgHeaderSizeBytes + sizeof(Head)];
  *CmiMsgHeaderOf(head) = CmiMsgHeader{};
  CmiSetHandler(head, h_msg);
  std::memcpy(head + CmiMsgHeaderSizeBytes, &h, sizeof h);
  out.resize(h.len);
  fill(out.data(), h.len, h.len, round);
  const int sizes[2] = {static_cast<int>(sizeof head), static_cast<int>(h.len)};
  char* const comps[2] = {head, out.data()};
  CmiSyncVectorSend(peer(), 2, sizes, comps);
  std::memset(out.data(), 0xEE, h.len);  // ours again at once
}

// Rounds 0 and 1 of every 4 (one per PE) land in a buffer of their own.
void* place(void* head, std::size_t head_bytes) {
  Head& h = *reinterpret_cast<Head*>(static_cast<char*>(head) + CmiMsgHeaderSizeBytes);
  if (head_bytes != CmiMsgHeaderSizeBytes + sizeof(Head) || CmiMsgSize(head) - head_bytes != h.len)
    CmiAbort("place: asked with a %zu-byte head for a %zu-byte message", head_bytes, CmiMsgSize(head));
  ++asked;
  if (h.round % 4 >= 2) return nullptr;
  h.landing = static_cast<char*>(std::malloc(h.len));
  return h.landing;
}

void on_msg(void* msg) {
  const Head h = payload<Head>(msg);
  const bool was_placed = (CmiMsgHeaderOf(msg)->flags & CmiMsgPlaced) != 0;
  if (was_placed != (h.landing != nullptr)) CmiAbort("place: round %llu placed, but not flagged so", (unsigned long long)h.round);
  const char* at = was_placed ? h.landing : CmiMsgPayload(msg) + sizeof(Head);
  if (h.len != size_of(h.round) || CmiMsgSize(msg) != msg_size<Head>(h.len) || !matches(at, h.len, h.len, h.round))
    CmiAbort("place: round %llu (%llu bytes%s) corrupted", (unsigned long long)h.round, (unsigned long long)h.len,
             was_placed ? ", placed" : "");
  placed += was_placed;
  std::free(h.landing);
  CmiFree(msg);
  if (h.round + 2 >= kRounds) {  // this PE's last one
    const long long mine = static_cast<long long>(kRounds / 2);
    if (asked != mine || placed != mine / 2)
      CmiAbort("place: PE %d was asked about %lld of its %lld messages and placed %lld (expected all, and half)",
               CmiMyPe(), asked, mine, placed);
    CmiPrintf("place: PE %d placed %lld of %lld messages\n", CmiMyPe(), placed, mine);
    if (h.round + 1 == kRounds) {
      CmiPrintf("place ok\n");
      CmiExit(0);
    }
  }
  send(h.round + 1);
}

}  // namespace

void start(const Args&) {
  h_msg = CmiRegisterHandler(on_msg);
  CmiRegisterPlacement(h_msg, place);
  if (CmiNumPes() < 2) {
    CmiPrintf("place ok (skipped: one PE)\n");
    CmiExit(0);
  }
  if (CmiMyPe() == 0) send(0);
}

}  // namespace testprog::place
