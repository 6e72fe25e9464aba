#include "glue.h"

#include <utility>

namespace ucharm::py {

namespace {
Hooks g_hooks;  // set once by the module before start(); read-only afterwards

void on_message(PyChare* c, void* msg) {
  if (!c->obj)  // (the main chare of a main function has no Python object)
    CkAbort("a message for chare %s of collection %llu, which has no Python object", c->ckIndex().str().c_str(),
            static_cast<unsigned long long>(c->ckRef().id));
  g_hooks.invoke(c->obj, msg);
}
using Entry = ck::RawEntry<PyChare, &on_message>;

std::string combine(const std::string& a, const std::string& b) {
  std::string out;
  g_hooks.combine(a, b, out);
  return out;
}
void reduction_done(std::string result) { g_hooks.reduction_done(result); }

// The main chare is a PyChare: a Python main chare class's object is bound to it, so
// that its constructor runs before the core sends the readonly values (set meanwhile).
// A checkpoint saves it as any PyChare (no object: a main function) and a restart
// rebuilds it with the migration constructor.
struct PyMain : PyChare {
  explicit PyMain(const ck::MainArgs& a) { obj = g_hooks.start(this, a.argc, a.argv); }
  explicit PyMain(CkMigrateMessage* m) : PyChare(m) {}
};

void restarted() { g_hooks.restarted(); }
}  // namespace

void set_hooks(const Hooks& h) {
  g_hooks = h;
  ck::set_embedder_readonly_hook(h.readonly_arrived);
}

PyChare::PyChare(std::string blob) { obj = g_hooks.construct(this, blob.data(), blob.size()); }
PyChare::~PyChare() {
  if (obj) g_hooks.release(obj);
  if (packed_) g_hooks.drop(packed_);
  if (pending_) g_hooks.drop(pending_);
}

// [u64 length][pad to 16][the pickled state (_core's frame: head and out-of-band buffers)];
// length 0: no Python object (the main chare of a main function).
void PyChare::pup(PUP::er& p) {
  std::uint64_t n = 0;
  if (p.isSizing() || (p.isPacking() && !packed_)) {
    if (packed_) g_hooks.drop(packed_);
    packed_ = nullptr;
    packed_len_ = obj ? g_hooks.pack_size(obj, &packed_, leaving_ ? 0 : 1) : 0;
  }
  if (!p.isUnpacking()) n = packed_len_;
  p | n;
  p.align(16);
  if (p.isSizing()) {
    p.bytes(this, n);  // sizing only counts: nothing is read from or written to `this`
  } else if (p.isPacking()) {
    if (packed_)
      g_hooks.pack_write(
          packed_, [](void* ctx, const void* src, std::size_t len) { static_cast<PUP::er*>(ctx)->bytes(const_cast<void*>(src), len); },
          &p);
    packed_ = nullptr;  // pack_write released it
    leaving_ = false;
  } else {
    const char* src = p.view(n);
    if (pending_) g_hooks.drop(pending_);
    pending_ = n ? g_hooks.unpack(src, n) : nullptr;  // the object is rebuilt in ckJustMigrated
  }
}

void PyChare::ckAboutToMigrate() {
  leaving_ = true;
  g_hooks.about_to_migrate(obj);
}

// After a move, and after a restart rebuilt the chare (any kind) from a checkpoint.
void PyChare::ckJustMigrated() {
  if (!pending_) return;  // no Python object (the main chare of a main function)
  void* state = pending_;
  pending_ = nullptr;
  obj = g_hooks.arrived(this, state);
}

void PyChare::ResumeFromSync() { g_hooks.resume_from_sync(obj); }

int start(int argc, char** argv) {
  (void)ck::ChareProxy<PyMain>{};  // registers PyMain's migration constructor (restarts use it)
  return ck::start<PyMain>(argc, argv);
}

void start_checkpoint(const std::string& dir, int pe, std::uint32_t future) {
  ck::start_checkpoint(dir, ck::CkCallback::future(pe, future), ck::CkCallback::function<&restarted>(0));
}
bool restart_info(int& old_num_pes, std::string& dir) {
  const ck::RestartInfo& r = ck::restart_info();
  old_num_pes = r.old_num_pes;
  dir = r.dir;
  return r.restarted;
}

void send(const ck::CollectionRef& c, const ck::Index& idx, void* msg) { ck::raw_send<Entry>(c, idx, msg); }
void broadcast(const ck::CollectionRef& c, void* msg) { ck::raw_broadcast<Entry>(c, msg); }

ck::CollectionRef create_chare(int pe, std::string blob) {
  return ck::ChareProxy<PyChare>::create_on(pe, std::move(blob)).ref();
}
ck::CollectionRef create_group(std::string blob) {
  return ck::GroupProxy<PyChare>::create(std::move(blob)).ref();
}
ck::CollectionRef create_array(const ck::Index& shape, std::string blob, std::uint32_t map_id) {
  const ck::Map map = map_id ? ck::embedder_map(map_id) : ck::Map::block;
  return ck::ArrayProxy<PyChare>::create(shape, map, std::move(blob)).ref();
}
ck::CollectionRef create_empty_array(int dims, std::uint32_t map_id) {
  return ck::ArrayProxy<PyChare>::create_empty(dims, map_id ? ck::embedder_map(map_id) : ck::Map::round_robin).ref();
}
void insert(const ck::CollectionRef& c, const ck::Index& idx, std::string blob) {
  ck::ArrayProxy<PyChare>(c).insert(idx, std::move(blob));
}

void contribute(PyChare* c, std::string data, int root_pe, std::int64_t root_future) {
  const ck::CkCallback cb = root_future < 0
                                ? ck::CkCallback::function<&reduction_done>(0)
                                : ck::CkCallback::future(root_pe, static_cast<std::uint32_t>(root_future));
  c->contribute(data, ck::UserReducer<&combine>{}, cb);
}

std::string reduction_value(void* msg) { return ck::future_value<std::string>(msg); }

ck::CkChannel* channel_open(PyChare* self, const ck::CollectionRef& peer, const ck::Index& peer_idx,
                            std::uint32_t sub_id) {
  return new ck::CkChannel(self->ckRef(), self->ckIndex(), peer, peer_idx, sub_id);
}
void channel_send(ck::CkChannel* ch, const void* ptr, std::size_t size, std::uint32_t future, void* stream) {
  ch->send(ptr, size, ck::CkCallback::future(CkMyPe(), future), stream);
}
void channel_recv(ck::CkChannel* ch, void* ptr, std::size_t size, std::uint32_t future, void* stream) {
  ch->recv(ptr, size, ck::CkCallback::future(CkMyPe(), future), stream);
}
void channel_close(ck::CkChannel* ch) { delete ch; }

void start_qd(int pe, std::uint32_t future) { ck::start_qd(ck::CkCallback::future(pe, future)); }

int value_kind(void* msg) {
  if (ck::future_value_is_raw(msg)) return 0;
  return ck::future_value_holds<std::string>(msg) ? 1 : 2;
}
const ck::CollectionRef& chare_ref(PyChare* c) { return c->ckRef(); }
const ck::Index& chare_index(PyChare* c) { return c->ckIndex(); }

void migrate(PyChare* c, int pe) { c->migrateMe(pe); }
void set_migratable(PyChare* c, bool m) { c->setMigratable(m); }
bool is_migratable(PyChare* c) { return c->isMigratable(); }
int home_pe(PyChare* c) { return ck::detail::home_pe(c->ckRef(), c->ckIndex()); }
void set_uses_at_sync(PyChare* c, bool on) { c->usesAtSync = on; }
bool uses_at_sync(PyChare* c) { return c->usesAtSync; }
void at_sync(PyChare* c) { c->AtSync(); }
}  // namespace ucharm::py
