// Futures: a value set once and read by a suspended thread.
// Part of <ucharm/charm.h>, the header to include.
#pragma once

#include <ucharm/charm/callback.h>

#pragma GCC visibility push(default)

namespace ck {

// ---- futures ------------------------------------------------------------------------------------
namespace detail {
std::uint32_t future_create();
void future_set(int pe, std::uint32_t id, void* msg, std::size_t total, std::uint32_t sig);
// Suspends the calling thread until the value arrives; returns the message holding it.
void* future_wait(std::uint32_t id, std::uint32_t sig, const char* type_names);
bool future_ready(std::uint32_t id);
}  // namespace detail

// A future whose values go to `handler(id, msg)` as they arrive (it owns msg; the value
// is packed after the Envelope, as for raw entries), any number of times, until
// future_release(id). For runtimes built on the core that wait in their own way (the
// Python bindings' coroutines): their channel completions and their own futures.
using FutureHandler = void (*)(std::uint32_t id, void* msg);
std::uint32_t future_create(FutureHandler handler);
void future_release(std::uint32_t id);
// Sends a raw_alloc'ed message (takes it) as a value of future `id` of PE `pe`.
void future_send_raw(int pe, std::uint32_t id, void* msg);

// Reading a value message given to a FutureHandler (the message stays the caller's):
// future_value_is_raw: sent by future_send_raw (its bytes at raw_payload / raw_length);
// future_value_holds<T>: a T, set by Future<T>::set or by a callback (a reduction's
// result, a channel transfer's byte count); future_value<T>: that T, unpacked (the job
// stops, naming both types' signatures, when the value has another type). Quiescence
// detection's value is empty: neither raw nor any T.
inline bool future_value_is_raw(void* msg) { return detail::envelope(msg).sig == 0; }
template <class T>
bool future_value_holds(void* msg) {
  return detail::envelope(msg).sig == detail::sig_of<std::tuple<T>>::hash();
}
template <class T>
T future_value(void* msg) {
  if (!future_value_holds<T>(msg))
    CkAbort("ck::future_value<%s>: the value has another type", detail::sig_of<std::tuple<T>>::names().c_str());
  std::tuple<T> t;
  PUP::er p = PUP::er::unpacker(raw_payload(msg), raw_length(msg));
  p | std::get<0>(t);
  return std::move(std::get<0>(t));
}

template <class T>
class Future {
 public:
  Future() = default;
  // A future owned by this PE; get() must be called here, from a threaded entry method.
  static Future make() {
    Future f;
    f.pe_ = CkMyPe();
    f.id_ = detail::future_create();
    return f;
  }
  void set(const T& value) const {
    std::tuple<T> t(value);
    std::size_t total;
    void* msg = detail::pack_tuple(t, total);
    detail::future_set(pe_, id_, msg, total, detail::sig_of<std::tuple<T>>::hash());
  }
  // Suspends the calling thread until the value is set.
  T get() const {
    if (pe_ != CkMyPe()) CkAbort("Future::get on PE %d, but the future belongs to PE %d", CkMyPe(), pe_);
    void* msg = detail::future_wait(id_, detail::sig_of<std::tuple<T>>::hash(),
                                    detail::sig_of<std::tuple<T>>::names().c_str());
    T v = future_value<T>(msg);
    CmiFree(msg);
    return v;
  }
  bool ready() const { return pe_ == CkMyPe() && detail::future_ready(id_); }
  CkCallback callback() const { return CkCallback::future(pe_, id_); }
  int pe() const { return pe_; }             // the PE that owns it (co_await reads these)
  std::uint32_t id() const { return id_; }
  void pup(PUP::er& p) { p | pe_; p | id_; }

 private:
  int pe_ = -1;
  std::uint32_t id_ = 0;
};

}  // namespace ck

#pragma GCC visibility pop
