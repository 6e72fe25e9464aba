// order: every PE sends every other PE (and itself) a stream of messages whose sizes mix
// small, just-above-eager and multi-MiB ones, interleaved over destinations; each
// receiver checks that every sender's messages arrive in send order, complete and intact.
// (A large message used to be overtaken by the small ones sent after it.)
// With the argument "vector", two thirds of the messages go by CmiSyncVectorSend from a
// header on the stack and a data buffer that is overwritten as soon as the call returns
// (two parts: straight from the buffers where the link allows; three: copied). With
// "place" as well, receivers register a placement (CmiRegisterPlacement) that lands every
// other large two-part message's data in a buffer of its own, checked by the handler.
#include "common.h"

#include <cstring>

namespace testprog::order {
namespace {

struct Head {
  std::uint32_t src, seq;
  std::uint64_t len;
  char* landing;  // set by the placement: where the data went
};
constexpr std::uint32_t kPerDest = 240;
int h_data, h_pump, h_done;
std::uint32_t next_seq_out = 0;
std::vector<std::uint32_t> expect_seq;  // per source
std::uint64_t got = 0;
int dones = 0;
bool vector_mode = false, place_mode = false;
long long placed = 0, asked = 0;
std::vector<char> scratch;  // the data part of vector sends, reused at once

void send_vector(int dest, std::uint32_t seq, const Head& h) {
  alignas(8) char head[CmiMsgHeaderSizeBytes + sizeof(Head)];
  *CmiMsgHeaderOf(head) = CmiMsgHeader{};
  CmiSetHandler(head, h_data);
  std::memcpy(head + CmiMsgHeaderSizeBytes, &h, sizeof h);
  if (scratch.size() < h.len) scratch.resize(h.len);
  fill(scratch.data(), h.len, h.src, seq);
  const int len = static_cast<int>(h.len), half = len / 2;
  if (seq % 3 == 1) {
    const int sizes[2] = {static_cast<int>(sizeof head), len};
    char* const comps[2] = {head, scratch.data()};
    CmiSyncVectorSend(dest, 2, sizes, comps);
  } else {
    const int sizes[3] = {static_cast<int>(sizeof head), half, len - half};
    char* const comps[3] = {head, scratch.data(), scratch.data() + half};
    CmiSyncVectorSend(dest, 3, sizes, comps);
  }
  // The parts are ours again: what arrives must be what was there at the call.
  std::memset(scratch.data(), 0xEE, h.len);
  std::memset(head, 0xEE, sizeof head);
}

// The 3.5 MiB ones go to the next PE only, so the volume does not grow with n^2.
std::size_t size_of(std::uint32_t seq, std::uint32_t src, std::uint32_t dst) {
  if (seq % 60 == 7) return dst == (src + 1) % static_cast<std::uint32_t>(CmiNumPes()) ? (3u << 20) + 512 * 1024 : 40000;
  if (seq % 9 == 0) return 37 * 1024;                  // above the eager size
  return 8 + (seq * 37) % 300;
}

void maybe_done() {
  if (got == static_cast<std::uint64_t>(kPerDest) * static_cast<std::uint64_t>(CmiNumPes()) &&
      next_seq_out == kPerDest) {
    got = ~0ull;
    CmiSyncSendAndFree(0, msg_size<int>(), make_msg(h_done, 0));
  }
}

// Every other large message whose data may be placed: into a buffer of its own.
void* place(void* head, std::size_t head_bytes) {
  Head& h = *reinterpret_cast<Head*>(static_cast<char*>(head) + CmiMsgHeaderSizeBytes);
  if (head_bytes != CmiMsgHeaderSizeBytes + sizeof(Head) || CmiMsgSize(head) - head_bytes != h.len)
    CmiAbort("order: placement asked with a %zu-byte head for %zu bytes", head_bytes, CmiMsgSize(head));
  ++asked;
  if (h.seq % 2 == 0) return nullptr;  // the message comes whole
  h.landing = static_cast<char*>(std::malloc(h.len));
  return h.landing;
}

void data(void* msg) {
  Head h = payload<Head>(msg);
  if (h.src >= static_cast<std::uint32_t>(CmiNumPes())) CmiAbort("order: bad source %u", h.src);
  if (h.seq != expect_seq[h.src])
    CmiAbort("order: from PE %u, message %u (%llu bytes) arrived when %u was due", h.src, h.seq,
             static_cast<unsigned long long>(h.len), expect_seq[h.src]);
  const bool was_placed = (CmiMsgHeaderOf(msg)->flags & CmiMsgPlaced) != 0;
  if (was_placed != (h.landing != nullptr)) CmiAbort("order: message %u placed, but not flagged so", h.seq);
  const char* at = was_placed ? h.landing : CmiMsgPayload(msg) + sizeof(Head);
  if (h.len != size_of(h.seq, h.src, static_cast<std::uint32_t>(CmiMyPe())) || CmiMsgSize(msg) != msg_size<Head>(h.len) ||
      !matches(at, h.len, h.src, h.seq))
    CmiAbort("order: message %u from PE %u corrupted%s", h.seq, h.src, was_placed ? " (placed)" : "");
  placed += was_placed;
  std::free(h.landing);
  ++expect_seq[h.src];
  CmiFree(msg);
  ++got;
  maybe_done();
}

// Sends the next few sequence numbers to every PE, then queues itself behind what arrived.
void pump(void* msg) {
  const auto me = static_cast<std::uint32_t>(CmiMyPe());
  for (int k = 0; k < 4 && next_seq_out < kPerDest; ++k, ++next_seq_out) {
    for (int d = 0; d < CmiNumPes(); ++d) {
      const std::size_t len = size_of(next_seq_out, me, static_cast<std::uint32_t>(d));
      if (vector_mode && next_seq_out % 3 != 0) {
        send_vector(d, next_seq_out, Head{me, next_seq_out, len, nullptr});
        continue;
      }
      void* m = make_msg(h_data, Head{me, next_seq_out, len, nullptr}, len);
      fill(CmiMsgPayload(m) + sizeof(Head), len, me, next_seq_out);
      CmiSyncSendAndFree(d, msg_size<Head>(len), m);
    }
  }
  if (next_seq_out < kPerDest) CmiSyncSendAndFree(CmiMyPe(), CmiMsgSize(msg), msg);
  else { CmiFree(msg); maybe_done(); }
}

void done(void* msg) {
  CmiFree(msg);
  if (++dones == CmiNumPes()) {
    if (place_mode) CmiPrintf("order: PE 0 was asked to place %lld messages and placed %lld\n", asked, placed);
    CmiPrintf("order ok: %u messages from each PE to each PE in order%s\n", kPerDest, vector_mode ? " (vector sends)" : "");
    CmiExit(0);
  }
}

}  // namespace

void start(const Args& a) {
  for (const auto& x : a.args) {
    vector_mode = vector_mode || x == "vector";
    place_mode = place_mode || x == "place";
  }
  h_data = CmiRegisterHandler(data);
  h_pump = CmiRegisterHandler(pump);
  h_done = CmiRegisterHandler(done);
  if (place_mode) CmiRegisterPlacement(h_data, place);
  expect_seq.assign(static_cast<std::size_t>(CmiNumPes()), 0);
  CmiSyncSendAndFree(CmiMyPe(), msg_size<int>(), make_msg(h_pump, 0));
}

}  // namespace testprog::order
