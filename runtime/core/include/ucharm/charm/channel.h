// The Channel API: CkChannel.
// Part of <ucharm/charm.h>, the header to include.
#pragma once

#include <ucharm/charm/callback.h>

#pragma GCC visibility push(default)

namespace ck {

// ---- Channel API --------------------------------------------------------------------------------
// Direct two-sided transfers between two chares (host or GPU memory), with no metadata
// message: each side keeps a counter per direction and both build the same UCX tags.
// Both ends construct the channel with each other's proxy and the same sub-id:
//   ck::CkChannel ch(thisProxy[thisIndex], thisProxy[peer], /*sub_id=*/0);
//   ch.send(d_buf, bytes, ck::CkCallback::to<&Block::sent>(thisProxy[thisIndex]));
//   ch.recv(d_halo, bytes, done_future.callback());       // completions get the byte count
// Each direction's 28-bit id is a hash of (from, to, sub-id); every PE checks the ids its
// endpoints receive on, so a collision stops the program with a message naming both
// channels instead of mixing their data.
class CkChannel {
 public:
  CkChannel() = default;
  template <class A, class B>
  CkChannel(const ElementProxy<A>& self, const ElementProxy<B>& peer, std::uint32_t sub_id = 0)
      : CkChannel(self.ref(), self.index(), peer.ref(), peer.index(), sub_id) {}
  // The paper's form: the caller picks the ids (one per direction). Collisions with other
  // channels receiving on this PE are still detected.
  static CkChannel with_ids(const CollectionRef& self, const Index& self_idx, const CollectionRef& peer,
                            const Index& peer_idx, std::uint32_t out_id, std::uint32_t in_id);
  CkChannel(const CkChannel&) = delete;
  CkChannel& operator=(const CkChannel&) = delete;
  CkChannel(CkChannel&& o) noexcept { *this = std::move(o); }
  CkChannel& operator=(CkChannel&& o) noexcept;
  ~CkChannel();

  // `done` runs (with the byte count) once the buffer may be reused / holds the data.
  // `stream` (a cudaStream_t, optional): the transfer waits for the work queued on it
  // before the call (see CkDeviceBuffer), without blocking the PE.
  void send(const void* ptr, std::size_t size, const CkCallback& done, void* stream = nullptr);
  void recv(void* ptr, std::size_t size, const CkCallback& done, void* stream = nullptr);
  // Blocking forms for threaded entry methods.
  void send_wait(const void* ptr, std::size_t size, void* stream = nullptr);
  void recv_wait(void* ptr, std::size_t size, void* stream = nullptr);

  std::uint32_t out_id() const { return out_id_; }
  std::uint32_t in_id() const { return in_id_; }

 private:
  CkChannel(const CollectionRef& self, const Index& self_idx, const CollectionRef& peer, const Index& peer_idx,
            std::uint32_t sub_id);
  void open(const CollectionRef& self, const Index& self_idx, const CollectionRef& peer, const Index& peer_idx);
  bool open_ = false;
  int peer_pe_ = 0;
  std::uint32_t out_id_ = 0, in_id_ = 0;
  std::uint64_t out_counter_ = 0, in_counter_ = 0;
};

}  // namespace ck

#pragma GCC visibility pop
