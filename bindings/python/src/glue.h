// The C++ side of the Python bindings: one chare class (PyChare) for every Python chare,
// the main chare, the raw entry that carries every Python call, the reducer that combines
// pickled contributions, and the hooks through which the core reaches the interpreter.
// Only the Cython module (_core.pyx) includes this.
#pragma once

#include <ucharm/charm.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace ucharm::py {

// Implemented in _core.pyx. Each runs with the GIL held (the scheduler holds it whenever
// it is not asleep) and never lets a Python exception escape: it ends the job instead.
struct Hooks {
  // Builds the Python object of a new element from its pickled (class, args); returns a
  // new reference.
  void* (*construct)(void* chare, const char* blob, std::size_t len);
  void (*invoke)(void* obj, void* msg);                     // takes msg
  // PE 0, once, after start-up, inside the main chare's constructor: runs the program's
  // main; returns the Python main chare (a new reference) or null for a main function.
  void* (*start)(void* chare, int argc, char** argv);
  // Other PEs: the embedder's readonly value (start-up data of PE 0, set with
  // ck::set_embedder_readonly) has arrived, before any message.
  void (*readonly_arrived)(const std::string& value);
  void (*future_value)(std::uint32_t id, void* msg);        // takes msg
  // Combines two pickled contributions into one.
  void (*combine)(const std::string& a, const std::string& b, std::string& out);
  void (*reduction_done)(const std::string& result);        // on PE 0
  void (*release)(void* obj);                               // an element is destroyed
  // Migration. about_to_migrate: the element leaves (its object is unregistered; a reason
  // it cannot leave ends the job with a message). pack_size: pickles the object into a
  // state (*state, a new reference) and returns its size in bytes (for_checkpoint: it is
  // written to a checkpoint, not moved: no about_to_migrate came first); pack_write: emits that
  // state's bytes through `emit` and releases it. unpack: copies `len` bytes of a packed
  // state (a new reference, the pending state); arrived: rebuilds the object from it (and
  // releases it) on the element's new PE, calls its migrated() (not when the state comes from
  // a checkpoint: a restart rebuilds every chare so); returns a new reference.
  void (*about_to_migrate)(void* obj);
  std::size_t (*pack_size)(void* obj, void** state, int for_checkpoint);
  void (*pack_write)(void* state, void (*emit)(void* ctx, const void* p, std::size_t n), void* ctx);
  void* (*unpack)(const char* p, std::size_t len);
  void* (*arrived)(void* chare, void* pending);
  void (*resume_from_sync)(void* obj);                      // the balancer has decided
  void (*drop)(void* state);                                // a state never written
  // PE 0, once, when a run started with +restart has rebuilt every object (checkpoint.h).
  void (*restarted)();
};
void set_hooks(const Hooks& h);

class PyChare : public ck::ChareBase {
 public:
  explicit PyChare(std::string blob);
  // The migration constructor: the Python object comes from pup() and ckJustMigrated().
  explicit PyChare(CkMigrateMessage*) {}
  ~PyChare() override;
  void* obj = nullptr;  // the Python object (a strong reference)

  // The Python object's state travels as its pickle (sized once, written once).
  void pup(PUP::er& p) override;
  void ckAboutToMigrate() override;
  void ckJustMigrated() override;
  void ResumeFromSync() override;

 protected:
  PyChare() = default;  // the main chare: its Python object comes from the start hook

 private:
  bool leaving_ = false;         // ckAboutToMigrate came: the next pack moves it (else: a checkpoint)
  void* packed_ = nullptr;       // pack_size's state, until pack_write takes it
  std::uint64_t packed_len_ = 0;
  void* pending_ = nullptr;      // unpacked state, until ckJustMigrated builds the object
};

int start(int argc, char** argv);

// Messages for the raw entry: raw_alloc'ed, filled by the caller, taken by these.
void send(const ck::CollectionRef& c, const ck::Index& idx, void* msg);
void broadcast(const ck::CollectionRef& c, void* msg);

ck::CollectionRef create_chare(int pe, std::string blob);
ck::CollectionRef create_group(std::string blob);
// map_id 0: blocks (bulk) or round-robin (insertion); else the embedder map hook's id.
ck::CollectionRef create_array(const ck::Index& shape, std::string blob, std::uint32_t map_id);
ck::CollectionRef create_empty_array(int dims, std::uint32_t map_id);
void insert(const ck::CollectionRef& c, const ck::Index& idx, std::string blob);

// A pickled contribution; the result goes to reduction_done on PE 0 (root_future < 0) or
// to future `root_future` of PE `root_pe`.
void contribute(PyChare* c, std::string data, int root_pe, std::int64_t root_future);

// The pickled result in a reduction result delivered to a future (value_kind 1).
std::string reduction_value(void* msg);

// Channels: `future` receives the completion (the byte count, packed).
ck::CkChannel* channel_open(PyChare* self, const ck::CollectionRef& peer, const ck::Index& peer_idx,
                            std::uint32_t sub_id);
void channel_send(ck::CkChannel* ch, const void* ptr, std::size_t size, std::uint32_t future, void* stream);
void channel_recv(ck::CkChannel* ch, void* ptr, std::size_t size, std::uint32_t future, void* stream);
void channel_close(ck::CkChannel* ch);

// Checkpoints (ck::start_checkpoint): `future` of PE `pe` gets an empty value once the
// checkpoint is on disk; a run restarted from it calls the restarted hook on PE 0.
void start_checkpoint(const std::string& dir, int pe, std::uint32_t future);
// This run was started with +restart (then: from how many PEs, and the directory).
bool restart_info(int& old_num_pes, std::string& dir);

// Quiescence detection: the future gets an empty value once the job is quiescent.
void start_qd(int pe, std::uint32_t future);

// What a future's value message holds: 0 a value built by the bindings (future_send_raw),
// 1 a reduction result (a std::string), 2 another value from the core (quiescence
// detection's empty one).
int value_kind(void* msg);
// The element's collection and index (what its Python object needs to know itself).
const ck::CollectionRef& chare_ref(PyChare* c);
const ck::Index& chare_index(PyChare* c);

// Migration and load balancing of array elements (ck::ChareBase's API).
void migrate(PyChare* c, int pe);
void set_migratable(PyChare* c, bool m);
bool is_migratable(PyChare* c);
// The PE that created the element (the core's channels open only there).
int home_pe(PyChare* c);
void set_uses_at_sync(PyChare* c, bool on);
bool uses_at_sync(PyChare* c);
void at_sync(PyChare* c);
}  // namespace ucharm::py
