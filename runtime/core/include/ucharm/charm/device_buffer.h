// The GPU Messaging API's parameter type, CkDeviceBuffer.
// Part of <ucharm/charm.h>, the header to include.
#pragma once

#include <ucharm/charm/callback.h>
#include <cstddef>

#pragma GCC visibility push(default)

namespace ck {

// ---- GPU Messaging API --------------------------------------------------------------------------
// An entry-method parameter whose data travels by itself (host or GPU memory, straight
// from buffer to buffer), next to the host message that carries the other arguments.
//   Sender:   peer.send<&Block::recvHalo>(ck::CkDeviceBuffer(d_ptr, bytes, done_cb), iter);
//   Receiver: a post entry method names the destination first (see post_entries());
//             then recvHalo(ck::CkDeviceBuffer halo, int iter) runs with halo.ptr = it.
// Streams (optional cudaStream_t): the sender's data leaves only after the work queued on
// its stream before the send has finished; a stream the post entry method sets delays the
// receive until the work queued on it has finished. Neither blocks the PE. When the
// entry method runs, the data is in: work it queues on any stream sees it.
// Reuse: a buffer (with its callback) may be passed to several sends, like any other
// argument; every send is its own transfer and runs the callback once, when that
// send's data has left (so N sends run it N times).
struct CkDeviceBuffer {
  const void* ptr = nullptr;
  std::size_t size = 0;
  std::uint64_t tag = 0;   // set when sent
  std::int32_t src_pe = -1;
  void* stream = nullptr;     // cudaStream_t or nullptr; never travels
  CkCallback done;            // the sender's completion, run once per send; never travels
  CkDeviceBuffer() = default;
  CkDeviceBuffer(const void* p, std::size_t n, void* s = nullptr) : ptr(p), size(n), stream(s) {}
  CkDeviceBuffer(const void* p, std::size_t n, const CkCallback& cb, void* s = nullptr)
      : ptr(p), size(n), stream(s), done(cb) {}
  void pup(PUP::er& p);  // the metadata only: size, tag, source
  // Where the data is to go (post entry) or has landed (entry method).
  void* data() const { return const_cast<void*>(ptr); }
};

}  // namespace ck

#pragma GCC visibility pop
