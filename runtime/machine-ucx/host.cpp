// The host message path.
//
// Order: every message on a link (this PE -> a peer) carries the link's next sequence
// number in its tag, and the receiver delivers a link's messages in that order whatever
// order UCX completes them in. Messages up to the eager size go with the EAGER tag into
// pre-posted receives (matched on the type bits alone). A larger message goes as an
// EAGER announcement holding its size, in sequence with the others, followed by its data
// under a LARGE tag naming the same sequence number; the receiver posts an exact-tag
// receive for it when the announcement arrives. (Probing for large messages with a
// partial mask walked UCX's whole unexpected queue on every call and gave no order.)
//
// Flow control: a link may have `window` credit units in flight (a message costs its
// size in 256-byte units, plus one). The receiver returns credit once Converse has
// consumed the messages (run or dropped them), in empty EAGER messages with the announce
// bit (the amount is in the tag), so a slow receiver holds at most a window per sender.
// (They travel as small messages do, as active messages: separate credit receives
// matching on fewer bits were searched by UCX one by one for every arriving message, 230
// instructions per message.) A message that
// finds its link's window full waits in the link's backlog, in order. Converse bounds
// the backlog by making a sending PE progress until it drains; while it does, that PE
// returns credit on arrival (LrtsCreditOnDelivery), so PEs flooding each other never
// wait for each other.
//
// Small messages (up to kAmMax bytes: credit returns, announcements, most messages) go as
// UCX active messages carrying the EAGER tag as their header: the receiver's handler copies
// them into a pooled block, with no receive to match and re-post (a pre-posted tag receive
// cost ~270 instructions per message: ucp_tag_recv_nbx, the expected-queue search, the
// slot's re-post). Larger eager messages use the pre-posted tag receives, which UCX fills
// fragment by fragment without a second copy. Order comes from the sequence numbers either way.
//
// UCX callbacks only record; delivery, re-posting and credit returns happen after
// ucp_worker_progress returns, so no UCX call is made from inside a UCX callback.
#include <ucharm/machine.h>
#include <ucharm/tag.h>

#include <sched.h>
#include <sys/epoll.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fmt/core.h>

#include "machine_internal.h"

namespace ucharm::machine {
namespace detail {
namespace {

constexpr std::int64_t cost_units(std::size_t bytes) { return static_cast<std::int64_t>((bytes + 511) >> 8); }

constexpr unsigned kHostAm = 0;         // the active-message id of small host messages
constexpr unsigned kHostAmHead = 1;     // ... of an announcement carrying its message's head
constexpr std::size_t kMaxHead = 256;   // the largest head an announcement carries
constexpr std::size_t kAmMax = 4096;    // below UCX's 8 KiB shared-memory segment: one fragment

// A large message's announcement: its size (low 40 bits) and the size of the fragments
// its data comes in, in KiB (high 24 bits; 0: one piece). The sender chooses, so PEs need
// not agree on +large-fragment.
constexpr int kSizeBits = 40;
constexpr std::uint64_t announce_word(std::size_t bytes, std::size_t fragment) {
  return static_cast<std::uint64_t>(bytes) | (static_cast<std::uint64_t>(fragment >> 10) << kSizeBits);
}
struct Announced {
  std::size_t bytes, fragment;
};
// The word at the start of an announcement's buffer.
Announced read_announcement(const void* buf) {
  std::uint64_t word;
  std::memcpy(&word, buf, sizeof word);
  return {static_cast<std::size_t>(word & ((std::uint64_t{1} << kSizeBits) - 1)),
          static_cast<std::size_t>(word >> kSizeBits) << 10};
}

// One fragment of a large message has been sent.
void piece_sent(LargeSend* whole) {
  Machine& m = M();
  if (--whole->pieces_left > 0) return;
  m.hooks.release(whole->msg);
  m.large_sends.give(whole);
}

// One piece of a vector send has left the caller's buffers.
void vector_piece_sent(VectorWait* w) {
  Machine& m = M();
  if (--w->left > 0 || !w->pooled) return;
  m.done.push_back({w->done, nullptr, DeviceRecvType::Converse});
  m.vector_waits.give(w);
}

// ---- callbacks: record only -------------------------------------------------------

void send_done(void* request, ucs_status_t status, void*) {
  auto* r = static_cast<RequestState*>(request);
  Machine& m = M();
  if (status != UCS_OK && !m.shutting_down) peer_lost(r->pe, ucs_status_string(status));
  --m.pending_sends;
  if (r->slot) --m.own_waits;
  else --m.small_sends_open;
  if (r->kind == ReqKind::FragmentSend) piece_sent(static_cast<LargeSend*>(r->msg));
  else if (r->kind == ReqKind::VectorSend) vector_piece_sent(static_cast<VectorWait*>(r->msg));
  else if (r->msg) m.hooks.release(r->msg);
  ucp_request_free(request);
}

void eager_done(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void*) {
  auto* r = static_cast<RequestState*>(request);
  Machine& m = M();
  EagerSlot& slot = m.slots[r->slot];
  slot.req = nullptr;
  if (status == UCS_OK) {
    m.completed.push_back({r->slot, info->length, info->sender_tag});  // capacity == prepost
  } else if (status == UCS_ERR_CANCELED) {
    m.hooks.release(slot.buf);
    slot.buf = nullptr;
  } else if (status == UCS_ERR_MESSAGE_TRUNCATED) {
    fatal(fmt::format("an EAGER message was larger than this PE's eager size ({} bytes): "
                      "all PEs must use the same +eager-size", m.opt.eager_size));
  } else if (!m.shutting_down) {
    fatal(fmt::format("eager receive failed: {}", ucs_status_string(status)));
  }
  ucp_request_free(request);
}

// A small host message arrived (inside ucp_worker_progress): copy it out of UCX's buffer.
ucs_status_t am_take(const void* header, std::size_t header_length, void* data, std::size_t length,
                     const ucp_am_recv_param_t* param, bool with_head) {
  Machine& m = M();
  if (m.shutting_down) return UCS_OK;  // after the exit fence nothing is delivered
  if (header_length != sizeof(tag::Tag) || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) || length > kAmMax)
    fatal(fmt::format("received a malformed host active message ({}-byte header, {} bytes): a foreign or "
                      "corrupted message", header_length, length));
  tag::Tag t;
  std::memcpy(&t, header, sizeof t);
  void* buf = nullptr;
  if (length > 0) {
    buf = m.hooks.alloc(length);
    std::memcpy(buf, data, length);
  }
  m.arrived.push_back({buf, length, t, with_head});  // reserved: no allocation in steady state
  return UCS_OK;
}
ucs_status_t am_arrived(void*, const void* header, std::size_t header_length, void* data, std::size_t length,
                        const ucp_am_recv_param_t* param) {
  return am_take(header, header_length, data, length, param, false);
}
ucs_status_t am_head_arrived(void*, const void* header, std::size_t header_length, void* data, std::size_t length,
                             const ucp_am_recv_param_t* param) {
  return am_take(header, header_length, data, length, param, true);
}

void large_done(void* request, ucs_status_t status, const ucp_tag_recv_info_t*, void*) {
  auto* r = static_cast<RequestState*>(request);
  Machine& m = M();
  unlink_recv(r);
  if (status == UCS_OK) {
    auto* h = static_cast<Held*>(r->msg);
    if (--h->pieces_left == 0) {
      h->ready = true;
      m.large_done.push_back(r->pe);
    }
  } else if (status != UCS_ERR_CANCELED && !m.shutting_down) {
    fatal(fmt::format("receiving a large message from PE {} failed: {}", r->pe, ucs_status_string(status)));
  }
  ucp_request_free(request);
}

// ---- sending ----------------------------------------------------------------------

// One UCX send of `bytes` at `buf` (released through the hooks once sent; null: nothing
// to release). With `whole`, `buf` is a fragment of whole's message, released with the last.
void post_send(int pe, void* buf, std::size_t bytes, tag::Tag t, LargeSend* whole = nullptr, unsigned am = kHostAm) {
  Machine& m = M();
  ucs_status_ptr_t sp;
  if (!whole && bytes <= kAmMax && tag::type_of(t) == tag::MsgType::Eager) {
    sp = ucp_am_send_nbx(endpoint(pe), am, &t, sizeof t, buf, bytes, &m.host_am_params);
  } else {
    sp = ucp_tag_send_nbx(endpoint(pe), buf, bytes, t, &m.host_send_params);
  }
  const auto finished = [&] {
    if (whole) piece_sent(whole);
    else if (buf) m.hooks.release(buf);
  };
  if (sp == nullptr) return finished();
  if (UCS_PTR_IS_ERR(sp)) {
    if (m.shutting_down) return finished();
    peer_lost(pe, ucs_status_string(UCS_PTR_STATUS(sp)));
  }
  auto* r = static_cast<RequestState*>(sp);
  r->kind = whole ? ReqKind::FragmentSend : ReqKind::Send;
  r->msg = whole ? static_cast<void*>(whole) : buf;
  r->pe = pe;
  // A large send (rendezvous, or fragments filling the peer's FIFO) is a transfer of our
  // own: it needs this PE's progress.
  r->slot = (whole || bytes > m.opt.eager_size) ? 1 : 0;
  if (r->slot) ++m.own_waits;
  else ++m.small_sends_open;
  ++m.pending_sends;
}

// One UCX send of the caller's buffers `iov[0..n)` (`bytes` in all); `w` counts it
// until UCX no longer needs them or `iov` (FAST_CMPL: once copied out, for copy protocols).
void post_vector(int pe, const ucp_dt_iov_t* iov, std::size_t n, std::size_t bytes, tag::Tag t, VectorWait* w) {
  Machine& m = M();
  const bool am = bytes <= kAmMax && tag::type_of(t) == tag::MsgType::Eager;
  ucp_request_param_t p = am ? m.host_am_params : m.host_send_params;
  const void* buf = iov[0].buffer;  // one entry: sent as contiguous bytes
  std::size_t count = bytes;
  if (n > 1) {  // UCX reads `iov` until the send completes: the caller keeps it
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = ucp_dt_make_iov();
    buf = iov;
    count = n;
  }
  ucs_status_ptr_t sp = am ? ucp_am_send_nbx(endpoint(pe), kHostAm, &t, sizeof t, buf, count, &p)
                           : ucp_tag_send_nbx(endpoint(pe), buf, count, t, &p);
  if (sp == nullptr) return;
  if (UCS_PTR_IS_ERR(sp)) {
    if (m.shutting_down) return;
    peer_lost(pe, ucs_status_string(UCS_PTR_STATUS(sp)));
  }
  auto* r = static_cast<RequestState*>(sp);
  r->kind = ReqKind::VectorSend;
  r->msg = w;
  r->pe = pe;
  r->slot = 1;  // our own transfer: the PE progresses for it
  ++m.own_waits;
  ++m.pending_sends;
  ++w->left;
}

// The entries of `iov` (n of them) that cover bytes [off, off + len) of their
// concatenation, into `out` (room for n); returns how many.
std::size_t iov_range(const ucp_dt_iov_t* iov, std::size_t n, std::size_t off, std::size_t len, ucp_dt_iov_t* out) {
  std::size_t k = 0;
  for (std::size_t i = 0; i < n && len > 0; ++i) {
    if (off >= iov[i].length) {
      off -= iov[i].length;
      continue;
    }
    const std::size_t take = std::min(iov[i].length - off, len);
    out[k++] = {static_cast<char*>(iov[i].buffer) + off, take};
    len -= take;
    off = 0;
  }
  return k;
}

// The link's next sequence number, its credit taken for `bytes`.
std::uint32_t take_seq(Link& l, std::size_t bytes) {
  const std::uint32_t seq = l.send_seq;
  l.send_seq = static_cast<std::uint32_t>(tag::EagerTag::next_seq(seq));
  l.in_flight += cost_units(bytes);
  return seq;
}

// Announces a large message (above the eager size) of `bytes` and sequence number `seq`;
// with a head (its first `head_bytes`, which then travel in the announcement) the data
// under LargeTag is the rest. Returns the size of the pieces that data goes in (all of
// it: one piece). Fragments only between PEs of one host (shared-memory copies; a
// network's zero-copy rendezvous is the better protocol between hosts).
std::size_t announce_large(int pe, std::uint32_t seq, std::size_t bytes, const void* head = nullptr,
                           std::size_t head_bytes = 0) {
  Machine& m = M();
  const std::size_t frag = m.large_fragment;
  const std::size_t data = bytes - head_bytes;
  const bool pieces = frag > 0 && data > frag && m.boot->is_local(pe);
  auto* word = static_cast<std::uint64_t*>(m.hooks.alloc(sizeof(std::uint64_t) + head_bytes));
  *word = announce_word(bytes, pieces ? frag : 0);
  if (head_bytes) std::memcpy(word + 1, head, head_bytes);
  post_send(pe, word, sizeof *word + head_bytes,
            tag::EagerTag::make(static_cast<std::uint64_t>(m.info.my_pe), seq, true), nullptr,
            head_bytes ? kHostAmHead : kHostAm);
  return pieces ? frag : data;
}

// A large message of sequence number `seq` from the caller's buffers, the head in its
// announcement and the data in pieces under LargeTag; `w` counts the pieces in flight.
void send_headed(int pe, std::uint32_t seq, const void* head, std::size_t head_bytes, const void* data,
                 std::size_t data_bytes, VectorWait* w) {
  const std::size_t piece = announce_large(pe, seq, head_bytes + data_bytes, head, head_bytes);
  const tag::Tag t = tag::LargeTag::make(static_cast<std::uint64_t>(M().info.my_pe), seq);
  for (std::size_t off = 0; off < data_bytes; off += piece) {
    const ucp_dt_iov_t one{static_cast<char*>(const_cast<void*>(data)) + off, std::min(piece, data_bytes - off)};
    post_vector(pe, &one, 1, one.length, t, w);  // a single entry is not kept by UCX
  }
}

// Sends now, taking the link's next sequence number and credit.
void transmit(int pe, void* msg, std::size_t bytes) {
  Machine& m = M();
  const std::uint32_t seq = take_seq(m.links[static_cast<std::size_t>(pe)], bytes);
  const auto me = static_cast<std::uint64_t>(m.info.my_pe);
  if (bytes <= m.opt.eager_size) {
    post_send(pe, msg, bytes, tag::EagerTag::make(me, seq, false));
    return;
  }
  const std::size_t piece = announce_large(pe, seq, bytes);
  const tag::Tag t = tag::LargeTag::make(me, seq);
  if (piece == bytes) return post_send(pe, msg, bytes, t);
  // Same tag for every piece: UCX matches one sender's messages in send order, so the
  // receiver's receives (posted in offset order) take the pieces in order.
  LargeSend* whole = m.large_sends.take();
  *whole = LargeSend{msg, static_cast<std::uint32_t>((bytes + piece - 1) / piece), nullptr};
  auto* base = static_cast<char*>(msg);
  for (std::size_t off = 0; off < bytes; off += piece)
    post_send(pe, base + off, std::min(piece, bytes - off), t, whole);
}

// Sends what waits on `pe`'s link while its window allows.
void send_backlog(int pe) {
  Machine& m = M();
  Link& l = m.links[static_cast<std::size_t>(pe)];
  while (l.backlog_head && l.in_flight < m.window_units) {
    Backlogged* b = l.backlog_head;
    l.backlog_head = b->next;
    if (!l.backlog_head) l.backlog_tail = nullptr;
    m.backlog_bytes -= b->bytes;
    void* msg = b->msg;
    std::size_t bytes = b->bytes;
    m.backlog_pool.give(b);
    transmit(pe, msg, bytes);
  }
}

// ---- receiving --------------------------------------------------------------------

ucp_request_param_t host_recv_params(ucp_tag_recv_nbx_callback_t cb, ucp_tag_recv_info_t* info) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_RECV_INFO | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  p.cb.recv = cb;
  p.recv_info.tag_info = info;
  p.memory_type = UCS_MEMORY_TYPE_HOST;
  return p;
}

void return_credit(int pe, Link& l) {
  Machine& m = M();
  const auto me = static_cast<std::uint64_t>(m.info.my_pe);
  while (l.unreturned > 0) {
    const auto units = std::min<std::int64_t>(l.unreturned, static_cast<std::int64_t>(tag::EagerTag::seq_mask));
    l.unreturned -= units;
    post_send(pe, nullptr, 0, tag::EagerTag::make(me, static_cast<std::uint64_t>(units), true));
  }
}

void credit_due(int src, Link& l) {
  Machine& m = M();
  if (l.unreturned >= m.window_units / 2 && !m.shutting_down) return_credit(src, l);
}

// Hands a message of `src`'s link to Converse.
void deliver(int src, Link& l, void* msg, std::size_t bytes) {
  Machine& m = M();
  const std::int64_t c = cost_units(bytes);
  if (m.credit_on_delivery) {
    l.forgiven += c;
    l.unreturned += c;
    credit_due(src, l);
  } else {
    l.owed += c;
  }
  m.hooks.deliver(msg, bytes, src);
}

// Hands the next message of `src`'s link to Converse.
void deliver_next(int src, Link& l, void* msg, std::size_t bytes) {
  l.recv_seq = static_cast<std::uint32_t>(tag::EagerTag::next_seq(l.recv_seq));
  deliver(src, l, msg, bytes);
}

// Delivers `src`'s held messages that are next in order and complete.
void deliver_held(int src) {
  Machine& m = M();
  Link& l = m.links[static_cast<std::size_t>(src)];
  while (l.held && l.held->ready && l.held->seq == l.recv_seq) {
    Held* h = l.held;
    l.held = h->next;
    void* msg = h->msg;
    std::size_t bytes = h->bytes;
    m.held_pool.give(h);
    deliver_next(src, l, msg, bytes);
  }
}

// Keeps a message that cannot be delivered yet, in sequence order (distance from the
// next expected number, so wrap-around sorts right).
Held* hold(Link& l, std::uint32_t seq, void* msg, std::size_t bytes, bool ready) {
  Held* h = M().held_pool.take();
  *h = Held{msg, bytes, seq, ready, 0, nullptr, nullptr};
  auto dist = [&](std::uint32_t s) { return (s - l.recv_seq) & tag::EagerTag::seq_mask; };
  Held** at = &l.held;
  while (*at && dist((*at)->seq) < dist(seq)) at = &(*at)->next;
  h->next = *at;
  *at = h;
  return h;
}

// Posts the exact-tag receives for the data of an announced large message (`len` bytes
// into `base`): one, or one per fragment of `frag` bytes, in offset order.
void receive_large(int src, Held* h, char* base, std::size_t len, std::size_t frag) {
  Machine& m = M();
  ucp_tag_recv_info_t tinfo{};
  ucp_request_param_t p = host_recv_params(large_done, &tinfo);
  const tag::Tag t = tag::LargeTag::make(static_cast<std::uint64_t>(src), h->seq);
  const std::size_t piece = frag > 0 ? frag : len;
  h->pieces_left = static_cast<std::uint32_t>((len + piece - 1) / piece);
  for (std::size_t off = 0; off < len; off += piece) {
    ucs_status_ptr_t sp = ucp_tag_recv_nbx(m.worker, base + off, std::min(piece, len - off), t,
                                           tag::kFullMask, &p);
    if (sp == nullptr) {
      if (--h->pieces_left == 0) h->ready = true;
      continue;
    }
    if (UCS_PTR_IS_ERR(sp))
      fatal(fmt::format("receiving a large message ({} bytes) from PE {} failed: {}", h->bytes, src,
                        ucs_status_string(UCS_PTR_STATUS(sp))));
    auto* r = static_cast<RequestState*>(sp);
    r->kind = ReqKind::Large;
    r->msg = h;
    r->pe = src;
    link_recv(r);
  }
}

// An announcement with its message's head (`bytes` past the word) from `src`: when the
// message is next in the link's order, the layer above may name where its data goes
// (Hooks::place: a receive posted there, say); else the whole message is received as usual.
void take_announced_head(int src, Link& l, std::uint32_t seq, const char* buf, std::size_t bytes) {
  Machine& m = M();
  const auto [size, fragment] = read_announcement(buf);
  const std::size_t head_bytes = bytes - sizeof(std::uint64_t);
  if (bytes <= sizeof(std::uint64_t) || head_bytes >= size)
    fatal(fmt::format("received a malformed large-message announcement from PE {} ({} bytes for a {}-byte "
                      "message): a foreign or corrupted message", src, bytes, size));
  void* msg = nullptr;
  char* data = nullptr;
  if (m.hooks.place && !l.held && seq == l.recv_seq) {
    void* head = m.hooks.alloc(head_bytes);
    std::memcpy(head, buf + sizeof(std::uint64_t), head_bytes);
    data = static_cast<char*>(m.hooks.place(head, head_bytes, size, src));
    if (data) msg = head;
    else m.hooks.release(head);
  }
  if (!msg) {
    msg = m.hooks.alloc(size);
    std::memcpy(msg, buf + sizeof(std::uint64_t), head_bytes);
    data = static_cast<char*>(msg) + head_bytes;
  }
  Held* h = hold(l, seq, msg, size, false);
  receive_large(src, h, data, size - head_bytes, fragment);
  deliver_held(src);
}

// An EAGER-tagged message (in a slot's buffer, or copied from an active message) is in:
// deliver it, or hold it until the link's earlier messages are in. Returns whether it took
// `buf`; a credit return's or an announcement's buffer stays the caller's.
bool take_message(void* buf, std::size_t bytes, tag::Tag t, bool with_head = false) {
  Machine& m = M();
  const auto src = static_cast<int>(tag::EagerTag::src_pe(t));
  if (src < 0 || src >= m.info.num_pes)
    fatal(fmt::format("received a host message naming source PE {} (of {}): a foreign or corrupted message", src,
                      m.info.num_pes));
  const auto seq = static_cast<std::uint32_t>(tag::EagerTag::seq(t));
  Link& l = m.links[static_cast<std::size_t>(src)];
  if (with_head) {
    take_announced_head(src, l, seq, static_cast<const char*>(buf), bytes);
    return false;
  }
  if (tag::EagerTag::announce(t) && bytes == 0) {  // returned credit, in the sequence field
    l.in_flight -= static_cast<std::int64_t>(tag::EagerTag::seq(t));
    send_backlog(src);
    return false;
  }
  if (tag::EagerTag::announce(t) && bytes != sizeof(std::uint64_t)) {  // urgent: outside the order
    deliver(src, l, buf, bytes);
    return true;
  }
  if (tag::EagerTag::announce(t)) {
    const auto [size, fragment] = read_announcement(buf);
    Held* h = hold(l, seq, m.hooks.alloc(size), size, false);
    receive_large(src, h, static_cast<char*>(h->msg), size, fragment);
    deliver_held(src);
    return false;
  }
  if (!l.held && seq == l.recv_seq) {
    deliver_next(src, l, buf, bytes);  // the common case: in order, nothing waiting
    return true;
  }
  hold(l, seq, buf, bytes, true);
  deliver_held(src);
  return true;
}

// One eager receive has completed in slot `i`.
void take_eager(int i, std::size_t bytes, tag::Tag t) {
  EagerSlot& slot = M().slots[static_cast<std::size_t>(i)];
  if (take_message(slot.buf, bytes, t)) slot.buf = nullptr;
}

// Posts slot `i`; if a message is already waiting the receive may complete in place, in
// which case it is taken and the slot is posted again.
void post_eager(int i) {
  Machine& m = M();
  for (;;) {
    EagerSlot& slot = m.slots[static_cast<std::size_t>(i)];
    if (!slot.buf) slot.buf = m.hooks.alloc(m.opt.eager_size);
    ucs_status_ptr_t sp = ucp_tag_recv_nbx(m.worker, slot.buf, m.opt.eager_size,
                                           tag::host_tag(tag::MsgType::Eager), tag::kTypeMask,
                                           &m.eager_recv_params);
    if (sp == nullptr) {  // completed in place
      const ucp_tag_recv_info_t info = m.eager_recv_info;
      take_eager(i, info.length, info.sender_tag);
      continue;
    }
    if (UCS_PTR_IS_ERR(sp))
      fatal(fmt::format("posting an eager receive failed: {}", ucs_status_string(UCS_PTR_STATUS(sp))));
    auto* r = static_cast<RequestState*>(sp);
    r->kind = ReqKind::Eager;
    r->slot = i;
    r->msg = slot.buf;
    slot.req = r;
    return;
  }
}

// Takes what completed during progress. Eager slots are re-posted at the start of the
// next progress call, so that the handler of a message runs before the re-post (the
// re-post is off the latency path).
int drain() {
  Machine& m = M();
  int n = 0;
  // Index loops: deliver() may send (broadcast forwarding) but never re-enters progress.
  for (std::size_t k = 0; k < m.completed.size(); ++k, ++n) {
    const Completed c = m.completed[k];
    take_eager(c.slot, c.bytes, c.tag);
    m.repost.push_back(c.slot);  // capacity == prepost
  }
  m.completed.clear();
  for (std::size_t k = 0; k < m.arrived.size(); ++k, ++n) {
    const Arrived a = m.arrived[k];
    if (!take_message(a.buf, a.bytes, a.tag, a.with_head) && a.buf) m.hooks.release(a.buf);
  }
  m.arrived.clear();
  for (std::size_t k = 0; k < m.large_done.size(); ++k, ++n) deliver_held(m.large_done[k]);
  m.large_done.clear();
  // Completions may start operations that complete in place (appending): index loop.
  for (std::size_t k = 0; k < m.done.size(); ++k, ++n) {
    PendingDone d = m.done[k];
    if (d.op) {
      DeviceRecvHandler h = m.recv_handlers[static_cast<int>(d.rtype)];
      if (!h) fatal(fmt::format("a device receive completed, but no handler is set for its type {}",
                                static_cast<int>(d.rtype)));
      h(d.op);
    } else if (d.done.fn) {
      d.done.fn(d.done.ctx);
    }
  }
  m.done.clear();
  return n;
}

void repost_slots() {
  Machine& m = M();
  for (std::size_t k = 0; k < m.repost.size(); ++k) post_eager(m.repost[k]);
  m.repost.clear();
}

}  // namespace

void post_host_receives() {
  Machine& m = M();
  m.links.assign(static_cast<std::size_t>(m.info.num_pes), Link{});
  m.window_units = cost_units(m.opt.flow_window);
  ucp_request_param_t& p = m.host_send_params;
  // FAST_CMPL: a host send only needs its buffer back, so UCX may pick copy protocols
  // up to 256 KiB over shared memory instead of a CMA rendezvous (measured: 16 KiB
  // one-way 4.7 -> 3.3 us, 64 KiB 12.5 -> 7.9 us; small and large sizes unchanged).
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_MEMORY_TYPE | UCP_OP_ATTR_FLAG_FAST_CMPL;
  p.cb.send = send_done;
  p.memory_type = UCS_MEMORY_TYPE_HOST;
  m.eager_recv_params = host_recv_params(eager_done, &m.eager_recv_info);
  ucp_request_param_t& a = m.host_am_params;
  a = p;
  a.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
  // EAGER: never a rendezvous (the handler copies); COPY_HEADER: the tag is on our stack.
  a.flags = UCP_AM_SEND_FLAG_EAGER | UCP_AM_SEND_FLAG_COPY_HEADER;
  ucp_am_handler_param_t hp{};
  hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
  hp.id = kHostAm;
  hp.cb = am_arrived;
  hp.flags = UCP_AM_FLAG_WHOLE_MSG;
  check(ucp_worker_set_am_recv_handler(m.worker, &hp), "ucp_worker_set_am_recv_handler");
  hp.id = kHostAmHead;
  hp.cb = am_head_arrived;
  check(ucp_worker_set_am_recv_handler(m.worker, &hp), "ucp_worker_set_am_recv_handler");
  m.arrived.reserve(1024);
  constexpr std::size_t kDefaultFragment = 128 * 1024;  // FAST_CMPL copies up to it (measured)
  m.large_fragment = m.opt.large_fragment >= 0 ? static_cast<std::size_t>(m.opt.large_fragment)
                                               : (m.info.oversubscribed ? 0 : kDefaultFragment);
  m.completed.reserve(static_cast<std::size_t>(m.opt.prepost));
  m.repost.reserve(static_cast<std::size_t>(m.opt.prepost));
  m.large_done.reserve(64);
  m.done.reserve(256);
  m.slots.assign(static_cast<std::size_t>(m.opt.prepost), EagerSlot{});
  for (int i = 0; i < m.opt.prepost; ++i) post_eager(i);
}

void drop_backlogs() {
  Machine& m = M();
  for (Link& l : m.links) {
    while (Backlogged* b = l.backlog_head) {
      l.backlog_head = b->next;
      m.hooks.release(b->msg);
      m.backlog_pool.give(b);
    }
    l.backlog_tail = nullptr;
  }
  m.backlog_bytes = 0;
}

void cancel_host_receives() {
  Machine& m = M();
  for (EagerSlot& slot : m.slots)
    if (slot.req) ucp_request_cancel(m.worker, slot.req);
  auto open = [&] {
    for (const EagerSlot& slot : m.slots)
      if (slot.req) return true;
    return false;
  };
  while (open()) ucp_worker_progress(m.worker);
  // Arrived after the exit fence, or held back for order: nobody will read them.
  m.completed.clear();
  for (const Arrived& a : m.arrived)
    if (a.buf) m.hooks.release(a.buf);
  m.arrived.clear();
  for (EagerSlot& slot : m.slots) {
    if (slot.buf) m.hooks.release(slot.buf);
    slot.buf = nullptr;
  }
  for (Link& l : m.links) {
    for (Held* h = l.held; h; h = h->next) m.hooks.release(h->msg);
    l.held = nullptr;
  }
}

}  // namespace detail

using namespace detail;

void LrtsSend(int pe, void* msg, std::size_t bytes, bool urgent) {
  Machine& m = M();
  Link& l = m.links[static_cast<std::size_t>(pe)];
  if (urgent && bytes <= m.opt.eager_size && bytes != sizeof(std::uint64_t)) {
    // Ahead of the link's order and its backlog; still counted against the window.
    l.in_flight += cost_units(bytes);
    post_send(pe, msg, bytes, tag::EagerTag::make(static_cast<std::uint64_t>(m.info.my_pe), 0, true));
    return;
  }
  if (urgent || (!l.backlog_head && l.in_flight < m.window_units)) {
    transmit(pe, msg, bytes);
    return;
  }
  Backlogged* b = m.backlog_pool.take();
  *b = Backlogged{msg, bytes, nullptr, nullptr};
  if (l.backlog_tail) l.backlog_tail->next = b;
  else l.backlog_head = b;
  l.backlog_tail = b;
  m.backlog_bytes += bytes;
}

bool LrtsSendVector(int pe, const void* head, std::size_t head_bytes, const void* data, std::size_t data_bytes) {
  Machine& m = M();
  Link& l = m.links[static_cast<std::size_t>(pe)];
  if (l.backlog_head || l.in_flight >= m.window_units || m.shutting_down) return false;
  const std::size_t bytes = head_bytes + data_bytes;
  const std::uint32_t seq = take_seq(l, bytes);
  const auto me = static_cast<std::uint64_t>(m.info.my_pe);
  const ucp_dt_iov_t iov[2] = {{const_cast<void*>(head), head_bytes}, {const_cast<void*>(data), data_bytes}};
  const std::size_t n = data_bytes ? 2 : 1;
  VectorWait w;
  if (bytes <= m.opt.eager_size) {
    post_vector(pe, iov, n, bytes, tag::EagerTag::make(me, seq, false), &w);
  } else if (head_bytes <= kMaxHead && data_bytes > 0) {  // the head in the announcement
    send_headed(pe, seq, head, head_bytes, data, data_bytes, &w);
  } else {  // as transmit: the announcement, then the data in pieces
    const std::size_t piece = announce_large(pe, seq, bytes);
    const tag::Tag t = tag::LargeTag::make(me, seq);
    ucp_dt_iov_t first[2];  // the first piece's entries (the later ones lie within `data`)
    for (std::size_t off = 0; off < bytes; off += piece) {
      const std::size_t len = std::min(piece, bytes - off);
      ucp_dt_iov_t one[1];
      ucp_dt_iov_t* part = off == 0 ? first : one;
      const std::size_t k = iov_range(iov, n, off, len, part);
      post_vector(pe, part, k, len, t, &w);  // a single entry is not kept by UCX
    }
  }
  // Until UCX has copied the buffers out (it holds them only while the peer's FIFO is
  // full, or for a rendezvous the peer serves from its own progress).
  for (int idle = 0; w.left > 0;) {
    if (LrtsProgress() > 0) idle = 0;
    else if (idle < 64) ++idle;
    else sched_yield();  // crowded cores: let the peer run
  }
  return true;
}

bool LrtsSendVectorLater(int pe, const void* head, std::size_t head_bytes, const void* data, std::size_t data_bytes,
                         Completion done) {
  Machine& m = M();
  Link& l = m.links[static_cast<std::size_t>(pe)];
  const std::size_t bytes = head_bytes + data_bytes;
  if (bytes <= m.opt.eager_size || head_bytes > kMaxHead || data_bytes == 0 || l.backlog_head ||
      l.in_flight >= m.window_units || m.shutting_down)
    return false;
  const std::uint32_t seq = take_seq(l, bytes);
  VectorWait* w = m.vector_waits.take();
  *w = VectorWait{0, done, true, nullptr};
  send_headed(pe, seq, head, head_bytes, data, data_bytes, w);
  if (w->left == 0) {  // all copied out already
    m.done.push_back({done, nullptr, DeviceRecvType::Converse});
    m.vector_waits.give(w);
  }
  return true;
}

std::size_t LrtsBackloggedBytes() { return M().backlog_bytes; }

void LrtsConsumed(int src, std::size_t bytes) {
  Machine& m = M();
  Link& l = m.links[static_cast<std::size_t>(src)];
  std::int64_t c = cost_units(bytes);
  const std::int64_t pre = std::min(c, l.forgiven);  // returned ahead already
  l.forgiven -= pre;
  c -= pre;
  l.owed -= c;
  l.unreturned += c;
  credit_due(src, l);
}

void LrtsCreditOnDelivery(bool on) {
  Machine& m = M();
  m.credit_on_delivery = on;
  if (!on || m.shutting_down) return;
  for (int pe = 0; pe < m.info.num_pes; ++pe) {
    Link& l = m.links[static_cast<std::size_t>(pe)];
    l.forgiven += l.owed;
    l.unreturned += l.owed;
    l.owed = 0;
    if (l.unreturned > 0) return_credit(pe, l);
  }
}

int LrtsProgress() {
  Machine& m = M();
  if (!m.repost.empty()) repost_slots();
  int n = static_cast<int>(ucp_worker_progress(m.worker));
  if (m.deferred_head) n += start_deferred();
  if (!m.completed.empty() || !m.arrived.empty() || !m.large_done.empty() || !m.done.empty()) n += drain();
  return n;
}

void LrtsIdleWait(int timeout_ms) {
  Machine& m = M();
  if (m.gpu_inflight) return;  // completions come from polling CUDA events, not the fd
  if (m.rma_open) return rma_idle_wait();  // nor need one-sided ones signal it: short steps
  ucs_status_t s = ucp_worker_arm(m.worker);
  if (s == UCS_ERR_BUSY) {
    // Events pending: the caller progresses again. Sleeping is right only when the
    // retries are for someone else's sake: small sends of ours queued inside UCX behind
    // a peer's full FIFO (it is busy computing; tests run 16 PEs on 2 cores) and nothing
    // of our own (rendezvous, large/device/channel transfer) waiting for this worker.
    // Then back off: 20 us doubling to 1 ms, restarted after a pause in the busy results.
    // Otherwise progress at once: sleeping during our own rendezvous made 256 KiB-2 MiB
    // messages 5-15x slower.
    if (m.own_waits > 0 || m.small_sends_open == 0) {
      ++m.idle_stats.busy_retries;
      m.busy_backoff_us = 0;
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - m.last_busy_arm > std::chrono::milliseconds(5)) m.busy_backoff_us = 0;
    m.last_busy_arm = now;
    if (m.busy_backoff_us > 0) {
      ++m.idle_stats.backoff_sleeps;
      ::usleep(static_cast<useconds_t>(m.busy_backoff_us));
    }
    m.busy_backoff_us = m.busy_backoff_us == 0 ? 20 : std::min(m.busy_backoff_us * 2, 1000);
    return;
  }
  m.busy_backoff_us = 0;
  check(s, "ucp_worker_arm");
  ++m.idle_stats.fd_waits;
  epoll_event ev[2];
  const int n = ::epoll_wait(m.epoll_fd, ev, 2, timeout_ms);
  for (int i = 0; i < n; ++i)
    if (ev[i].data.fd == m.wake_fd) drain_wakeups();
}

void detail::drain_wakeups() {
  std::uint64_t count;
  [[maybe_unused]] ssize_t r = ::read(M().wake_fd, &count, sizeof count);  // nonblocking: 0 or 1 read
}

void LrtsWakeup() {
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t r = ::write(M().wake_fd, &one, sizeof one);
}

void LrtsAddWaitFd(int fd) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (::epoll_ctl(M().epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0)
    fatal(fmt::format("LrtsAddWaitFd({}): epoll_ctl: {}", fd, std::strerror(errno)));
}

void LrtsRemoveWaitFd(int fd) { ::epoll_ctl(M().epoll_fd, EPOLL_CTL_DEL, fd, nullptr); }

IdleStats LrtsIdleStats() { return M().idle_stats; }

}  // namespace ucharm::machine
