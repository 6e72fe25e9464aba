// The Channel API: CkChannel.
// Part of <ucharm/charm.h>, the header to include.
#pragma once

#include <ucharm/charm/callback.h>

#pragma GCC visibility push(default)

struct CUstream_st;  // cudaStream_t is CUstream_st* (no CUDA header needed here)

namespace ck {

namespace detail {
struct ChannelEnd;  // channels.cpp: one per open channel end, at a stable address
}

// ---- Channel API --------------------------------------------------------------------------------
// Direct two-sided transfers between two chares (host or GPU memory), with no metadata
// message: each side keeps a counter per direction and both build the same UCX tags.
// Both ends construct the channel with each other's proxy and the same sub-id:
//   ck::CkChannel ch(thisProxy[thisIndex], thisProxy[peer], /*sub_id=*/0);
//   ch.send(d_buf, bytes, ck::CkCallback::to<&Block::sent>(thisProxy[thisIndex]));
//   ch.recv(d_halo, bytes, done_future.callback());       // completions get the byte count
// Each direction's id is chosen by the PE that receives in that direction, from its own
// allocator, so ids cannot collide. Each end tells the other its incoming id once, with
// one setup message; sends issued before the peer's id is here wait in the end, in order.
class CkChannel {
 public:
  static constexpr std::uint32_t kNoId = 0xFFFFFFFFu;  // out_id() until the peer's id is here

  CkChannel() = default;
  template <class A, class B>
  CkChannel(const ElementProxy<A>& self, const ElementProxy<B>& peer, std::uint32_t sub_id = 0)
      : CkChannel(self.ref(), self.index(), peer.ref(), peer.index(), sub_id) {}
  // The paper's form: the caller picks the ids (one per direction; both below
  // 2^(CmiChannelIdBits()-1), the half of the id space kept for explicit ids), and no setup
  // message travels. Two explicit ends receiving on one id on one PE are an error.
  static CkChannel with_ids(const CollectionRef& self, const Index& self_idx, const CollectionRef& peer,
                            const Index& peer_idx, std::uint32_t out_id, std::uint32_t in_id);
  // The same from collection references and indices (runtimes built on the core whose
  // chare types are not C++ classes: the Python bindings).
  CkChannel(const CollectionRef& self, const Index& self_idx, const CollectionRef& peer, const Index& peer_idx,
            std::uint32_t sub_id);
  CkChannel(const CkChannel&) = delete;
  CkChannel& operator=(const CkChannel&) = delete;
  CkChannel(CkChannel&& o) noexcept : end_(o.end_) { o.end_ = nullptr; }
  CkChannel& operator=(CkChannel&& o) noexcept;
  ~CkChannel() { close(); }
  // Frees this end's incoming id (the destructor does it too). Close an end only when its
  // transfers are done; sends still waiting for the peer's id are dropped.
  void close() noexcept;

  // `done` runs (with the byte count) once the buffer may be reused / holds the data.
  // `stream` (a cudaStream_t, optional): the transfer waits for the work queued on it
  // before the call (see CkDeviceBuffer), without blocking the PE.
  void send(const void* ptr, std::size_t size, const CkCallback& done, void* stream = nullptr);
  void recv(void* ptr, std::size_t size, const CkCallback& done, void* stream = nullptr);
  // Stream-ordered forms (a cudaStream_t; nullptr is the legacy default stream): the
  // transfer starts once the work queued on `stream` before the call has finished, and
  // work queued on `stream` after the call runs once the transfer has completed (a sent
  // buffer may be reused, a received one holds the data). The host never waits for the
  // GPU; no completion is needed (it is visible on the stream), `done` runs as well where
  // given. A send needs ready() (open the channel, then let the peer's id arrive); the
  // tags are taken in call order, so host-issued and enqueued transfers on one channel
  // match in call order. A process without CUDA stops with the reason
  // (CmiStreamOpsUnavailable).
  void send_enqueue(const void* ptr, std::size_t size, CUstream_st* stream);
  void recv_enqueue(void* ptr, std::size_t size, CUstream_st* stream);
  void send_enqueue(const void* ptr, std::size_t size, CUstream_st* stream, const CkCallback& done);
  void recv_enqueue(void* ptr, std::size_t size, CUstream_st* stream, const CkCallback& done);
  // Blocking forms for threaded entry methods.
  void send_wait(const void* ptr, std::size_t size, void* stream = nullptr);
  void recv_wait(void* ptr, std::size_t size, void* stream = nullptr);

  bool is_open() const { return end_ != nullptr; }
  // The peer's incoming id has arrived: sends go straight out.
  bool ready() const;
  std::uint32_t out_id() const;  // the id this end sends on (kNoId until ready())
  std::uint32_t in_id() const;   // the id this end receives on (unique on this PE)

 private:
  detail::ChannelEnd* end_ = nullptr;
};

}  // namespace ck

#pragma GCC visibility pop
