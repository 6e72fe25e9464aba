// pingpong: PE 0 exchanges messages of every size with each PE (itself when alone),
// crossing the eager/probe boundary; both ends check every byte.
#include "common.h"

namespace testprog::pingpong {

struct Head { std::uint64_t size, round; };
int h_ping, h_pong;
std::vector<std::size_t> sizes;
std::size_t idx = 0;
int partner = 0, rounds_left = 0;

void send(int pe, int h, std::size_t size, std::uint64_t round) {
  void* m = make_msg(h, Head{size, round}, size);
  fill(CmiMsgPayload(m) + sizeof(Head), size, size, round);
  CmiSyncSendAndFree(pe, msg_size<Head>(size), m);
}
void check(void* msg, const char* where) {
  Head h = payload<Head>(msg);
  if (CmiMsgSize(msg) != msg_size<Head>(h.size))
    CmiAbort("pingpong %s: size %zu, expected %zu", where, CmiMsgSize(msg), msg_size<Head>(h.size));
  if (!matches(CmiMsgPayload(msg) + sizeof(Head), h.size, h.size, h.round))
    CmiAbort("pingpong %s: payload of %llu bytes corrupted", where, (unsigned long long)h.size);
}
void next();
void ping(void* msg) {  // partner: check and answer with a fresh message of the same size
  check(msg, "ping");
  Head h = payload<Head>(msg);
  CmiFree(msg);
  send(0, h_pong, h.size, h.round + 1);
}
void pong(void* msg) {  // PE 0
  check(msg, "pong");
  CmiFree(msg);
  if (--rounds_left > 0) send(partner, h_ping, sizes[idx], 2 * rounds_left);
  else next();
}
void next() {
  if (++idx == sizes.size()) {  // all sizes done with this partner
    idx = 0;
    if (++partner >= CmiNumPes()) {
      CmiPrintf("pingpong ok\n");
      CmiExit(0);
    }
  }
  rounds_left = sizes[idx] >= (1u << 20) ? 2 : 5;
  send(partner, h_ping, sizes[idx], 2 * rounds_left);
}
void start(const Args&) {
  h_ping = CmiRegisterHandler(ping);
  h_pong = CmiRegisterHandler(pong);
  const std::size_t eager = 32 * 1024, over = CmiMsgHeaderSizeBytes + sizeof(Head);
  sizes = {0, 1, 7, 8, 100, 4096, eager - over - 1, eager - over, eager - over + 1,
           65536, 1 << 20, 16 << 20};
  if (CmiMyPe() != 0) return;
  partner = CmiNumPes() > 1 ? 1 : 0;  // alone: PE 0 plays both ends
  idx = 0;
  rounds_left = 5;
  send(partner, h_ping, sizes[0], 10);
}

}  // namespace testprog::pingpong
