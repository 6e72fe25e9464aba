// Device windows (CkDeviceWindow): two chares on one host map each other's CUDA buffer
// and flag word (CUDA IPC, through Converse's CmiIpc* calls) so that kernels and streams
// write the peer's memory themselves. The host's part ends once the window is mapped:
// one setup message each way carries the IPC handles; nothing travels per transfer.
#include "internal.h"

#include <unistd.h>

#include <cstring>

namespace ck {

namespace detail {

// One open window end. CkDeviceWindow points at it, so it stays put when the window moves.
struct DeviceWindowEnd {
  CollectionRef self_ref, peer_ref;
  Index self_idx, peer_idx;
  std::uint32_t sub = 0;
  int peer_pe = 0;
  void* ctx = nullptr;  // CUcontext of this side's buffer: every driver call runs in it
  void* words = nullptr;  // this side's flag words (the peer signals into words[0])
  CmiIpcHandle buf_export, words_export;
  CmiIpcHandle peer_buf, peer_words;  // the peer's exports, opened here unless same_process
  bool ready = false, same_process = false, opened = false;
  CkCallback on_ready;
  DeviceWindowHandle handle;
};

}  // namespace detail

namespace {

using detail::DeviceWindowEnd;

constexpr std::size_t kWordsBytes = 256;  // flag word 0; the rest spare (one allocation)

using detail::EndKey;
using detail::EndKeyHash;

// "The end (to, from, sub) is joined to this buffer and flag word of PE from_pe."
struct WindowSetup {
  std::uint64_t to_coll, from_coll;
  Index to_idx, from_idx;
  std::uint32_t sub;
  std::int32_t from_pe;
  std::int64_t pid;
  char host[64];
  CmiIpcHandle buf, words;
  std::uint64_t buf_ptr, words_ptr;  // the sender's own pointers (for the same process)
};

struct WindowTable {
  std::unordered_map<EndKey, DeviceWindowEnd*, EndKeyHash> ends;
  std::unordered_map<EndKey, WindowSetup, EndKeyHash> early;  // setups for ends not open yet
};
WindowTable& table() {
  static WindowTable t;
  return t;
}

std::string end_str(const CollectionRef& r, const Index& i) {
  return "collection " + std::to_string(r.id) + " element " + i.str();
}
std::string describe(const DeviceWindowEnd& e) {
  return "device window between " + end_str(e.self_ref, e.self_idx) + " (PE " + std::to_string(CmiMyPe()) + ") and " +
         end_str(e.peer_ref, e.peer_idx) + " (PE " + std::to_string(e.peer_pe) + "), sub-id " + std::to_string(e.sub);
}

// The peer's exports are here: map them (or take its pointers in this same process).
void map_peer(DeviceWindowEnd& e, const WindowSetup& s) {
  const char* host = CmiIpcHostName();
  if (std::strncmp(host, s.host, sizeof s.host) != 0)
    CkAbort("%s: the two PEs are on different hosts (%s and %.64s); device windows join PEs on one host (use a "
            "CkChannel or the host-initiated one-sided window across hosts)",
            describe(e).c_str(), host, s.host);
  e.peer_buf = s.buf;
  e.peer_words = s.words;
  DeviceWindowHandle& h = e.handle;
  bool atomics = false;
  if (const char* why = CmiIpcCanMap(e.ctx, s.buf.bus_id, &atomics)) CkAbort("%s: %s", describe(e).c_str(), why);
  if (s.pid == static_cast<std::int64_t>(::getpid())) {
    e.same_process = true;
    h.remote = reinterpret_cast<unsigned char*>(s.buf_ptr);
    h.remote_flag = reinterpret_cast<unsigned long long*>(s.words_ptr);
  } else {
    void* buf = nullptr;
    void* words = nullptr;
    if (const char* why = CmiIpcOpen(e.ctx, s.buf, &buf))
      CkAbort("%s: mapping the peer's buffer: %s", describe(e).c_str(), why);
    if (const char* why = CmiIpcOpen(e.ctx, s.words, &words)) {
      CmiIpcClose(e.ctx, s.buf);
      CkAbort("%s: mapping the peer's flag word: %s", describe(e).c_str(), why);
    }
    e.opened = true;
    h.remote = static_cast<unsigned char*>(buf);
    h.remote_flag = static_cast<unsigned long long*>(words);
  }
  h.remote_bytes = s.buf.bytes;
  h.remote_atomics = atomics ? 1 : 0;
  h.magic = kDeviceWindowMagic;
  e.peer_pe = s.from_pe;
  e.ready = true;
  if (!e.on_ready.is_ignore()) e.on_ready.send();
}

void setup_handler(void* msg) {
  WindowSetup s;
  std::memcpy(&s, CmiMsgPayload(msg), sizeof s);
  CmiFree(msg);
  WindowTable& t = table();
  const EndKey key{s.to_coll, s.from_coll, s.to_idx, s.from_idx, s.sub};
  auto it = t.ends.find(key);
  if (it == t.ends.end()) {  // this end is not open yet: it maps the peer when it opens
    t.early[key] = s;
    return;
  }
  if (it->second->ready)
    CkAbort("%s was opened again at the peer while this end stayed open; close both ends first",
            describe(*it->second).c_str());
  map_peer(*it->second, s);
}
using SetupHandler = ConverseHandler<&setup_handler>;

DeviceWindowEnd& live(DeviceWindowEnd* e, const char* what) {
  if (!e) CkAbort("CkDeviceWindow::%s on a window that is closed (or was never opened)", what);
  return *e;
}
DeviceWindowEnd& mapped(DeviceWindowEnd* e, const char* what) {
  DeviceWindowEnd& w = live(e, what);
  if (!w.ready)
    CkAbort("CkDeviceWindow::%s on the %s before it is mapped: wait for ready() or its on_ready callback", what,
            describe(w).c_str());
  return w;
}

}  // namespace

CkDeviceWindow::CkDeviceWindow(const CollectionRef& self, const Index& self_idx, const CollectionRef& peer,
                               const Index& peer_idx, std::uint32_t sub_id, void* buffer, std::size_t bytes,
                               const CkCallback& on_ready) {
  const int home = detail::LocationManager::pe_of(self, self_idx);
  if (home != CmiMyPe())
    CkAbort("a device window end must be opened on its own element's PE (%s lives on PE %d, this is PE %d)",
            self_idx.str().c_str(), home, CmiMyPe());
  auto e = std::make_unique<DeviceWindowEnd>();
  e->self_ref = self;
  e->self_idx = self_idx;
  e->peer_ref = peer;
  e->peer_idx = peer_idx;
  e->sub = sub_id;
  e->peer_pe = detail::LocationManager::pe_of(peer, peer_idx);
  e->on_ready = on_ready;
  // Expose: the buffer must be device memory inside one cudaMalloc allocation.
  if (!buffer || bytes == 0)
    CkAbort("%s: the buffer is %s; expose a cudaMalloc'd buffer of at least one byte", describe(*e).c_str(),
            buffer ? "0 bytes long" : "a null pointer");
  if (CmiGetMemoryType(buffer) != CmiMemoryType::Cuda)
    CkAbort("%s: buffer %p is not CUDA device memory (host memory, or no CUDA in this process); a device window "
            "exposes a cudaMalloc'd buffer",
            describe(*e).c_str(), buffer);
  if (const char* why = CmiIpcExport(buffer, bytes, e->buf_export, &e->ctx))
    CkAbort("%s: cannot expose buffer %p (%zu bytes): %s", describe(*e).c_str(), buffer, bytes, why);
  if (const char* why = CmiIpcAllocWords(e->ctx, kWordsBytes, &e->words))
    CkAbort("%s: allocating its flag words: %s", describe(*e).c_str(), why);
  void* ignored_ctx = nullptr;
  if (const char* why = CmiIpcExport(e->words, kWordsBytes, e->words_export, &ignored_ctx)) {
    CmiIpcFreeWords(e->ctx, e->words);
    CkAbort("%s: exporting its flag words: %s", describe(*e).c_str(), why);
  }
  DeviceWindowHandle& h = e->handle;
  h.local = static_cast<unsigned char*>(buffer);
  h.local_bytes = bytes;
  h.local_flag = static_cast<unsigned long long*>(e->words);

  WindowTable& t = table();
  const EndKey key{self.id, peer.id, self_idx, peer_idx, sub_id};
  auto [slot, fresh] = t.ends.emplace(key, nullptr);
  if (!fresh) {
    CmiIpcFreeWords(e->ctx, e->words);
    CkAbort("%s is opened twice at the same end (close the first one)", describe(*e).c_str());
  }
  slot->second = e.get();
  end_ = e.release();

  // Tell the peer end where this end's buffer and flag word are.
  WindowSetup s{};
  s.to_coll = peer.id;
  s.from_coll = self.id;
  s.to_idx = peer_idx;
  s.from_idx = self_idx;
  s.sub = sub_id;
  s.from_pe = CmiMyPe();
  s.pid = ::getpid();
  std::strncpy(s.host, CmiIpcHostName(), sizeof s.host - 1);
  s.buf = end_->buf_export;
  s.words = end_->words_export;
  s.buf_ptr = reinterpret_cast<std::uint64_t>(buffer);
  s.words_ptr = reinterpret_cast<std::uint64_t>(end_->words);
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof s);
  std::memcpy(CmiMsgPayload(m), &s, sizeof s);
  CmiSetHandler(m, SetupHandler::handler());
  CmiSyncSendAndFree(end_->peer_pe, static_cast<int>(CmiMsgHeaderSizeBytes + sizeof s), m);
  // The peer opened its end first: its exports are already here.
  auto early = t.early.find(key);
  if (early != t.early.end()) {
    const WindowSetup peer_setup = early->second;
    t.early.erase(early);
    map_peer(*end_, peer_setup);
  }
}

CkDeviceWindow& CkDeviceWindow::operator=(CkDeviceWindow&& o) noexcept {
  if (this != &o) {
    close();
    end_ = o.end_;
    o.end_ = nullptr;
  }
  return *this;
}

void CkDeviceWindow::close() noexcept {
  if (!end_) return;
  DeviceWindowEnd* e = end_;
  end_ = nullptr;
  table().ends.erase(EndKey{e->self_ref.id, e->peer_ref.id, e->self_idx, e->peer_idx, e->sub});
  if (e->opened) {
    CmiIpcClose(e->ctx, e->peer_buf);
    CmiIpcClose(e->ctx, e->peer_words);
  }
  CmiIpcFreeWords(e->ctx, e->words);
  delete e;
}

bool CkDeviceWindow::ready() const { return end_ && end_->ready; }
bool CkDeviceWindow::same_process() const { return end_ && end_->ready && end_->same_process; }
std::size_t CkDeviceWindow::local_bytes() const { return end_ ? end_->handle.local_bytes : 0; }
std::size_t CkDeviceWindow::remote_bytes() const { return end_ && end_->ready ? end_->handle.remote_bytes : 0; }

DeviceWindowHandle CkDeviceWindow::device_handle() const { return mapped(end_, "device_handle").handle; }

void CkDeviceWindow::put_on_stream(void* stream, std::size_t dst_offset, const void* src, std::size_t bytes) {
  DeviceWindowEnd& e = mapped(end_, "put_on_stream");
  if (dst_offset > e.handle.remote_bytes || bytes > e.handle.remote_bytes - dst_offset)
    CkAbort("%s: put_on_stream of %zu bytes at offset %zu is outside the peer's buffer of %llu bytes",
            describe(e).c_str(), bytes, dst_offset, e.handle.remote_bytes);
  if (const char* why = CmiIpcStreamCopy(e.ctx, stream, e.handle.remote + dst_offset, src, bytes))
    CkAbort("%s: put_on_stream: %s", describe(e).c_str(), why);
}

void CkDeviceWindow::signal_on_stream(void* stream, std::uint64_t value) {
  DeviceWindowEnd& e = mapped(end_, "signal_on_stream");
  if (const char* why = CmiIpcStreamWrite64(e.ctx, stream, e.handle.remote_flag, value))
    CkAbort("%s: signal_on_stream: %s", describe(e).c_str(), why);
}

void CkDeviceWindow::wait_on_stream(void* stream, std::uint64_t value) {
  DeviceWindowEnd& e = mapped(end_, "wait_on_stream");
  if (const char* why = CmiIpcStreamWaitGeq64(e.ctx, stream, e.handle.local_flag, value))
    CkAbort("%s: wait_on_stream: %s", describe(e).c_str(), why);
}

}  // namespace ck
