// The GPU Messaging API: CkDeviceBuffer arguments travel by themselves (CmiSendDevice),
// next to the host message; the receiver's post entry method names their destinations.
#include "internal.h"

#include <cstring>

namespace ck::detail {

// ---- the receiving side ---------------------------------------------------------------------
struct PendingDevice {
  ChareBase* obj;
  std::uint32_t entry;
  void* msg;
  int remaining;
  std::vector<CkDeviceBuffer> dests;
};

namespace {

// Records are reused (their dests keep their capacity): no allocation per invocation.
PendingDevice* take_pending(ChareBase* obj, std::uint32_t entry, void* msg) {
  Core& k = core();
  PendingDevice* pd;
  if (k.pending_free.empty()) {
    pd = new PendingDevice{};
  } else {
    pd = k.pending_free.back();
    k.pending_free.pop_back();
  }
  pd->obj = obj;
  pd->entry = entry;
  pd->msg = msg;
  pd->remaining = 0;
  pd->dests.clear();
  return pd;
}

void finish_device_invocation(PendingDevice* pd) {
  const EntryInfo& info = core_entries()[pd->entry];
  if (info.threaded) {
    CthAwaken(CthCreate(thread_body, new ThreadCall{pd->obj, pd->entry, pd->msg, std::move(pd->dests)}));
  } else {
    run_entry_with(pd->obj, pd->entry, pd->msg, &pd->dests);
    CmiFree(pd->msg);
  }
  core().pending_free.push_back(pd);
}

}  // namespace

void device_arrived_handler(void* msg) {
  PendingDevice* pd;
  std::memcpy(&pd, CmiMsgPayload(msg), sizeof pd);
  CmiFree(msg);
  ++core().processed;  // the sender counted this transfer as sent
  if (--pd->remaining == 0) finish_device_invocation(pd);
}

// The host message of an entry with device arguments arrived: run the post entry, post
// the receives, and run the entry once every buffer is in.
void start_device_invocation(ChareBase* obj, std::uint32_t entry, void* msg) {
  const EntryInfo& info = core_entries()[entry];
  PendingDevice* pd = take_pending(obj, entry, msg);
  CmiReference(msg);  // dispatch drops its reference when this returns
  PUP::er p = PUP::er::unpacker(args_of(msg), args_len(msg));
  info.post(obj, p, pd->dests);
  pd->remaining = 1;  // held until every receive is posted
  for (std::size_t i = 0; i < pd->dests.size(); ++i) {
    const CkDeviceBuffer& d = pd->dests[i];
    if (d.size == 0) continue;
    if (!d.ptr)
      CkAbort("the post entry method of %s left device argument %zu (%zu bytes) without a destination: set "
              "its ptr (the parameter must be a CkDeviceBuffer&)",
              entry_name(info.name).c_str(), i, d.size);
    ++pd->remaining;
    void* done = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof pd);
    std::memcpy(CmiMsgPayload(done), &pd, sizeof pd);
    CmiSetHandler(done, core().h_device_arrived);
    CmiRecvDevice(const_cast<void*>(d.ptr), d.size, d.tag, done, d.stream);
  }
  if (--pd->remaining == 0) finish_device_invocation(pd);
}


// ---- the sending side -----------------------------------------------------------------------
namespace {
struct DeviceSent {
  std::uint32_t id;
  std::uint64_t size;
};
}  // namespace

void device_sent_handler(void* msg) {
  DeviceSent s;
  std::memcpy(&s, CmiMsgPayload(msg), sizeof s);
  CmiFree(msg);
  Core& k = core();
  CkCallback cb = k.device_done[s.id - 1];
  k.device_done_free.push_back(s.id);
  cb.send(static_cast<std::size_t>(s.size));
}

void send_device_buffer(int pe, CkDeviceBuffer& b) {
  Core& k = core();
  void* done = nullptr;
  if (!b.done.is_ignore()) {  // this send's own completion slot (a buffer may be sent again)
    std::uint32_t id;
    if (k.device_done_free.empty()) {
      k.device_done.push_back(b.done);
      id = static_cast<std::uint32_t>(k.device_done.size());
    } else {
      id = k.device_done_free.back();
      k.device_done_free.pop_back();
      k.device_done[id - 1] = b.done;
    }
    done = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(DeviceSent));
    DeviceSent s{id, b.size};
    std::memcpy(CmiMsgPayload(done), &s, sizeof s);
    CmiSetHandler(done, k.h_device_sent);
  }
  b.src_pe = CmiMyPe();
  if (b.size == 0) {  // nothing travels (the receiver posts nothing either); done at once
    if (done) CsdEnqueue(done);
    return;
  }
  CmiDeviceBuffer cb{b.ptr, b.size, 0, b.stream};
  ++k.sent;  // processed when the receiver has the data (QD)
  CmiSendDevice(pe, cb, done);
  b.tag = cb.tag;
}

}  // namespace ck::detail

namespace ck {

void CkDeviceBuffer::pup(PUP::er& p) {
  p | size;
  p | tag;
  p | src_pe;
  if (!p.isUnpacking()) return;
  // Unpacking for the entry method itself: the data has landed where the post entry said.
  detail::Core& k = detail::core();
  ptr = k.unpack_dests && k.unpack_next < k.unpack_dests->size() ? (*k.unpack_dests)[k.unpack_next++].ptr : nullptr;
  done = CkCallback();
}

}  // namespace ck
