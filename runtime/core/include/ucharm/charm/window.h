// One-sided windows: CkWindow, the one-sided form of CkChannel (issue 19, part 1).
// Part of <ucharm/charm.h>, the header to include.
#pragma once

#include <ucharm/charm/callback.h>

#pragma GCC visibility push(default)

namespace ck {

namespace detail {
struct WindowEnd;  // window.cpp: one per open window end, at a stable address
}

// ---- One-sided windows ----------------------------------------------------------------------
// Two chares, each with a buffer of its own (host or CUDA memory), read and write each
// other's buffer directly: the owner of the buffer takes no part in a put or a get.
// Both ends construct the window with each other's proxy and the same sub-id, as a
// CkChannel, and expose their buffer (nullptr, 0 for an end that only writes: it still
// receives notifications):
//   ck::CkWindow win(thisProxy[thisIndex], thisProxy[peer], /*sub_id=*/0);
//   win.expose(halo, bytes);
//   win.put_notify(offset, data, n, ck::CkCallback());   // the data, then the peer's count +1
//   win.on_notify(step, ck::CkCallback::to<&Block::halo_in>(thisProxy[thisIndex]));
// expose() sends one setup message with the buffer's and the notification counter's
// descriptors; operations issued before the peer's setup is here wait in this end, in
// order, and are checked against the peer's size when they leave.
//
// Completions (a CkCallback; the default ignores): put, get and put_notify pass the byte
// count once the source may be reused / the data is in dst; fetch_add and compare_swap
// pass the word's old value (std::uint64_t); flush passes the number of operations this
// end had issued; on_notify passes the notification count it saw.
//
// Memory ordering. A put's completion says only that its source may be reused: the data
// is at the peer once a flush issued after it has completed, and the peer learns it from
// a message sent after that. A notified put needs no message: the peer's notification
// count rises by one only after the put's data is in the peer's buffer (the data and the
// count's atomic add go in that order, with a fence between them), so when on_notify(n)
// runs, or notifications() returns n, the data of this end's first n notified puts is
// visible to the peer's host code (for a CUDA buffer: to work it enqueues after that).
// Notifications of one end arrive in issue order; the peer sees a count, not which put.
// Operations are not ordered against each other otherwise (two puts to one place: flush
// between them). Atomics (8-byte words, 8-byte aligned) need a host-memory buffer at the
// peer. Offsets outside the peer's buffer stop the program naming the window, the
// offset, the length and the buffer's size.
//
// Lifetime: close() (or the destructor) deregisters this end's buffer. Close only when
// the peer no longer uses it (after a flush and a message, or a reduction); operations
// not yet sent (the peer never exposed) are dropped, their callbacks never run. A window
// end belongs to its element's PE: do not migrate an element while it holds an open window.
// One-sided operations without a callback are not seen by quiescence detection.
class CkWindow {
 public:
  CkWindow() = default;
  template <class A, class B>
  CkWindow(const ElementProxy<A>& self, const ElementProxy<B>& peer, std::uint32_t sub_id = 0)
      : CkWindow(self.ref(), self.index(), peer.ref(), peer.index(), sub_id) {}
  // The same from collection references and indices.
  CkWindow(const CollectionRef& self, const Index& self_idx, const CollectionRef& peer, const Index& peer_idx,
           std::uint32_t sub_id);
  CkWindow(const CkWindow&) = delete;
  CkWindow& operator=(const CkWindow&) = delete;
  CkWindow(CkWindow&& o) noexcept : end_(o.end_) { o.end_ = nullptr; }
  CkWindow& operator=(CkWindow&& o) noexcept;
  ~CkWindow() { close(); }
  void close() noexcept;

  // Registers [base, base + bytes) for the peer (once per window) and sends the setup.
  void expose(void* base, std::size_t bytes);

  void put(std::size_t dst_offset, const void* src, std::size_t bytes, const CkCallback& done = CkCallback());
  void get(std::size_t src_offset, void* dst, std::size_t bytes, const CkCallback& done);
  void put_notify(std::size_t dst_offset, const void* src, std::size_t bytes, const CkCallback& done = CkCallback());
  void fetch_add(std::size_t offset, std::uint64_t value, const CkCallback& done);
  // Writes `desired` where the word equals `expected`; `done` gets the old word.
  void compare_swap(std::size_t offset, std::uint64_t expected, std::uint64_t desired, const CkCallback& done);
  // `done` runs once every operation issued before (to the peer's PE) is complete there.
  void flush(const CkCallback& done);

  // Notified puts the peer has made into this end (an acquire load).
  std::uint64_t notifications() const;
  // `cb` runs (with the count) once notifications() reaches `count`: at once if it has.
  // Waiting uses a scheduler poller, registered only while some window waits.
  void on_notify(std::uint64_t count, const CkCallback& cb);

  // Blocking forms for threaded entry methods.
  void put_wait(std::size_t dst_offset, const void* src, std::size_t bytes);
  void get_wait(std::size_t src_offset, void* dst, std::size_t bytes);
  void put_notify_wait(std::size_t dst_offset, const void* src, std::size_t bytes);
  std::uint64_t fetch_add_wait(std::size_t offset, std::uint64_t value);
  std::uint64_t compare_swap_wait(std::size_t offset, std::uint64_t expected, std::uint64_t desired);
  void flush_wait();
  std::uint64_t wait_notify(std::uint64_t count);

  bool is_open() const { return end_ != nullptr; }
  bool exposed() const;
  // The peer's setup is here: operations go straight out.
  bool ready() const;
  std::size_t local_bytes() const;
  std::size_t peer_bytes() const;  // 0 until ready()

 private:
  detail::WindowEnd* end_ = nullptr;
};

}  // namespace ck

#pragma GCC visibility pop
