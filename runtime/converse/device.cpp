// GPU data over the machine layer's tagged operations (host memory works the same way).
// Completions come back through the scheduler as the caller's own messages; receive
// descriptors live in pooled Converse blocks, so nothing is allocated per operation.
#include <ucharm/converse.h>
#include <ucharm/machine.h>
#include <ucharm/tag.h>

#include "converse_internal.h"

namespace lrts = ucharm::machine;

namespace ucharm::converse {

void enqueue_done(void* msg) {
  if (msg) CsdEnqueue(msg);
}

namespace {

lrts::MemoryType mem_of(const void* p) { return lrts::LrtsMemoryType(p); }

// A device receive finished: run the caller's completion and recycle the descriptor.
void device_recv_done(lrts::DeviceRdmaOp* op) {
  void* done = op->user;
  CmiFree(op);  // the descriptor is a pooled block
  enqueue_done(done);
}

void check_pe(int pe, const char* who) {
  if (pe < 0 || pe >= CmiNumPes()) CmiAbort("%s: destination PE %d is out of range [0, %d)", who, pe, CmiNumPes());
}

}  // namespace

void device_init() { lrts::LrtsSetDeviceRecvHandler(lrts::DeviceRecvType::Converse, device_recv_done); }

}  // namespace ucharm::converse

using namespace ucharm::converse;

CmiMemoryType CmiGetMemoryType(const void* ptr) {
  return mem_of(ptr) == lrts::MemoryType::Cuda ? CmiMemoryType::Cuda : CmiMemoryType::Host;
}

std::size_t CmiMemoryTypeCachedRanges() { return lrts::LrtsMemoryTypeCachedRanges(); }
bool CmiMemoryTypeCaching() { return lrts::LrtsMemoryTypeCaching(); }

void CmiSendDevice(int pe, CmiDeviceBuffer& buf, void* done_msg) {
  check_pe(pe, "CmiSendDevice");
  lrts::LrtsDeviceSend(pe, buf.ptr, buf.size, mem_of(buf.ptr), buf.tag, {enqueue_done, done_msg}, buf.stream);
}

void CmiRecvDevice(void* dest, std::size_t size, std::uint64_t tag, void* done_msg, void* stream) {
  if (!ucharm::tag::DeviceTag::is(tag)) CmiAbort("CmiRecvDevice: %#llx is not a GPU Messaging tag", static_cast<unsigned long long>(tag));
  // CmiAlloc gives a pooled block; the Converse header it reserves is not used here.
  auto* op = static_cast<lrts::DeviceRdmaOp*>(CmiAlloc(sizeof(lrts::DeviceRdmaOp)));
  *op = lrts::DeviceRdmaOp{};
  op->src_pe = static_cast<int>(ucharm::tag::DeviceTag::src_pe(tag));
  op->dest_ptr = dest;
  op->size = size;
  op->tag = tag;
  op->mem = mem_of(dest);
  op->user = done_msg;
  op->stream = stream;
  lrts::LrtsDeviceRecv(op, lrts::DeviceRecvType::Converse);
}

std::uint64_t CmiChannelTag(std::uint64_t channel_id, std::uint64_t counter) {
  if (channel_id >> ucharm::tag::ChannelTag::first_bits)
    CmiAbort("channel id %llu does not fit in the tag's %u bits", static_cast<unsigned long long>(channel_id),
             ucharm::tag::ChannelTag::first_bits);
  return ucharm::tag::ChannelTag::make(channel_id, counter);
}

unsigned CmiChannelIdBits() { return ucharm::tag::ChannelTag::first_bits; }

std::uint64_t CmiChannelNextCounter(std::uint64_t counter) { return ucharm::tag::ChannelTag::next(counter); }

void CmiChannelSend(int pe, const void* ptr, std::size_t size, std::uint64_t tag, void* done_msg, void* stream) {
  check_pe(pe, "CmiChannelSend");
  lrts::LrtsChannelSend(pe, ptr, size, mem_of(ptr), tag, {enqueue_done, done_msg}, stream);
}

void CmiChannelRecv(void* ptr, std::size_t size, std::uint64_t tag, void* done_msg, void* stream) {
  lrts::LrtsChannelRecv(ptr, size, mem_of(ptr), tag, {enqueue_done, done_msg}, stream);
}

// CmiHeldSend names the machine layer's held send (an opaque type: the core sees no
// machine types); the pointer only travels back to the machine layer.
CmiHeldSend* CmiChannelSendHold(const void* ptr, std::size_t size, void* done_msg, void* stream) {
  return reinterpret_cast<CmiHeldSend*>(
      lrts::LrtsChannelSendHold(ptr, size, mem_of(ptr), {enqueue_done, done_msg}, stream));
}
void CmiChannelSendHeld(CmiHeldSend* held, int pe, std::uint64_t tag) {
  check_pe(pe, "CmiChannelSend");
  lrts::LrtsChannelSendRelease(reinterpret_cast<lrts::HeldSend*>(held), pe, tag);
}
void CmiChannelSendDrop(CmiHeldSend* held) { lrts::LrtsChannelSendDrop(reinterpret_cast<lrts::HeldSend*>(held)); }
