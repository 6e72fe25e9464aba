// Checkpoints and restarts. start_checkpoint waits for quiescence, then every PE writes its
// objects (through the same packing as migration) to one file per PE; PE 0 writes the
// manifest last, by an atomic rename, so the previous checkpoint stays whole until the new
// one is. `+restart DIR` rebuilds the objects on any number of PEs. The format is in
// docs/architecture.md ("Checkpoints").
#include "internal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

namespace ck::detail {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'U', 'C', 'H', 'A', 'R', 'M', 'C', 'K'};
constexpr std::uint32_t kFormat = 1;
const char* const kManifest = "manifest";

// What PE 0 needs to know of each collection to rebuild it everywhere.
struct CollectionInfo {
  CollectionRef ref;
  std::uint32_t ctor = 0;  // its class's migration constructor
  std::uint32_t red_round = 0;  // reductions below this round have completed
  std::uint16_t bcast = 0;  // the last numbered broadcast
  void pup(PUP::er& p) { p | ref; p | ctor; p | red_round; p | bcast; }
};

// One PE's file: group branches, then array elements and singleton chares.
struct PeFile {
  std::string name;
  std::uint64_t branches_len = 0, branches_hash = 0, elements_len = 0, elements_hash = 0;
  void pup(PUP::er& p) { p | name; p | branches_len; p | branches_hash; p | elements_len; p | elements_hash; }
};

struct Manifest {
  std::uint32_t format = kFormat;
  std::uint64_t gen = 0;
  std::int32_t num_pes = 0;
  std::uint64_t signature = 0;  // of the program's entry methods and constructors
  std::uint64_t max_serial = 0;
  CkCallback restarted;
  std::vector<char> readonlies;
  std::vector<CollectionInfo> collections;
  std::vector<PeFile> files;
  void pup(PUP::er& p) {
    p | format; p | gen; p | num_pes; p | signature; p | max_serial; p | restarted; p | readonlies;
    p | collections; p | files;
  }
};

enum class Step : std::uint8_t { Start, Write, Written, Chare };

}  // namespace

struct CheckpointState {
  int handler = -1;
  RestartInfo restart;
  // PE 0, while a checkpoint is written
  bool busy = false;
  std::string dir;
  CkCallback done;
  Manifest next;
  int written = 0;
  // Every PE: records are packed here one at a time and streamed to the file; kept between
  // checkpoints so that its pages are not faulted in afresh each time.
  std::vector<char> scratch;
};

namespace {

CheckpointState& state() {
  Core& k = core();
  if (!k.checkpoint) k.checkpoint = std::make_shared<CheckpointState>();
  return *k.checkpoint;
}

std::uint64_t hash(const char* data, std::size_t len) { return XXH3_64bits(data, len); }

std::uint64_t program_signature() {
  std::vector<std::string> names;
  for (auto& [reg, info] : registry().entries_in) names.push_back(reg.name);
  for (auto& [reg, info] : registry().ctors_in) names.push_back(reg.name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  for (const std::string& n : names) XXH3_64bits_update(st, n.c_str(), n.size() + 1);
  const std::uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

template <class F>
void send_step(int pe, Step step, F&& body) {
  PUP::er s = PUP::er::sizer();
  body(s);
  const std::size_t total = CmiMsgHeaderSizeBytes + 1 + s.size();
  void* msg = CmiAlloc(total);
  CmiMsgPayload(msg)[0] = static_cast<char>(step);
  PUP::er p = PUP::er::packer(CmiMsgPayload(msg) + 1, s.size());
  body(p);
  CmiSetHandler(msg, state().handler);
  if (pe < 0) CmiSyncBroadcastAllAndFree(total, msg);
  else CmiSyncSendAndFree(pe, total, msg);
}

[[noreturn]] void io_fail(const std::string& what, const std::string& path) {
  CkAbort("checkpoint: cannot %s %s: %s", what.c_str(), path.c_str(), std::strerror(errno));
}

// A file written through a temporary one: commit() syncs it to disk and renames it into
// place (a crash before leaves no file under the final name).
class FileWriter {
 public:
  explicit FileWriter(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) io_fail("create", tmp_);
  }
  ~FileWriter() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;
  void write(const char* data, std::size_t len) {
    while (len > 0) {
      const ssize_t n = ::write(fd_, data, len);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) io_fail("write", tmp_);
      data += n;
      len -= static_cast<std::size_t>(n);
    }
  }
  void commit() {
    if (::fsync(fd_) != 0) io_fail("sync", tmp_);
    ::close(fd_);
    fd_ = -1;
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) io_fail("rename to", path_);
  }

 private:
  std::string path_, tmp_;
  int fd_ = -1;
};

// Writes `parts` to `path` through a temporary file and a rename, synced to disk.
void write_file(const std::string& path, std::initializer_list<std::pair<const char*, std::size_t>> parts) {
  FileWriter out(path);
  for (auto [data, len] : parts) out.write(data, len);
  out.commit();
}

void sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

std::vector<char> read_file(const std::string& path, bool must) {
  std::vector<char> out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (!must) return out;
    CkAbort("+restart: cannot open %s: %s (the checkpoint is incomplete or was moved)", path.c_str(),
            std::strerror(errno));
  }
  struct stat st {};
  ::fstat(fd, &st);
  out.resize(static_cast<std::size_t>(st.st_size));
  std::size_t at = 0;
  while (at < out.size()) {
    const ssize_t n = ::read(fd, out.data() + at, out.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    at += static_cast<std::size_t>(n);
  }
  ::close(fd);
  out.resize(at);
  return out;
}

// The manifest of `dir`; `must`: a missing or damaged one is an error (else: gen 0).
Manifest read_manifest(const std::string& dir, bool must) {
  const std::string path = dir + "/" + kManifest;
  std::vector<char> bytes = read_file(path, false);
  Manifest m;
  if (bytes.empty()) {
    if (must) CkAbort("+restart %s: no complete checkpoint there (%s is missing)", dir.c_str(), path.c_str());
    return m;
  }
  auto damaged = [&](const char* why) {
    if (must) CkAbort("+restart %s: the manifest %s is damaged (%s): the checkpoint was torn or edited", dir.c_str(),
                      path.c_str(), why);
  };
  constexpr std::size_t kHead = sizeof kMagic + 2 * sizeof(std::uint64_t);
  if (bytes.size() < kHead || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    damaged("not a ucharm checkpoint manifest");
    return m;
  }
  std::uint64_t len, sum;
  std::memcpy(&len, bytes.data() + sizeof kMagic, sizeof len);
  std::memcpy(&sum, bytes.data() + sizeof kMagic + sizeof len, sizeof sum);
  if (len != bytes.size() - kHead || hash(bytes.data() + kHead, len) != sum) {
    damaged("checksum mismatch");
    return m;
  }
  PUP::er p = PUP::er::unpacker(bytes.data() + kHead, len);
  p.set_context("a checkpoint manifest");
  std::uint32_t format = 0;
  p | format;
  if (format != kFormat) {
    if (must) CkAbort("+restart %s: checkpoint format %u, this build reads format %u", dir.c_str(), format, kFormat);
    return Manifest{};
  }
  PUP::er q = PUP::er::unpacker(bytes.data() + kHead, len);
  q | m;
  return m;
}

// ---- writing ----------------------------------------------------------------------------------

void check_writable(ChareBase* obj) {
  if (ElementAccess::rt(obj).threads > 0)
    CkAbort("checkpoint: %s %s has a threaded entry method suspended; checkpoint where no threaded entry "
            "method waits (its stack cannot be saved)",
            demangle(typeid(*obj).name()).c_str(), obj->ckIndex().str().c_str());
  if (const std::string why = task_obstacle(obj); !why.empty())  // coroutine entries (tasks.cpp)
    CkAbort("checkpoint: %s %s cannot be written: %s", demangle(typeid(*obj).name()).c_str(),
            obj->ckIndex().str().c_str(), why.c_str());
}

std::uint32_t ctor_for(const std::type_info& cls) {
  const std::uint32_t ctor = find_migration_ctor(cls);
  if (ctor == UINT32_MAX || !registry().ctors[ctor].rebuildable)
    CkAbort("checkpoint: objects of class %s cannot be rebuilt at restart: give the class a constructor taking "
            "CkMigrateMessage* (or a default constructor) and a pup() of its state",
            demangle(cls.name()).c_str());
  return ctor;
}

// One object's record: its collection, index, constructor and length, then (from a 16-byte
// boundary of the section, whose buffer is aligned when read back, so that the body's own
// alignment padding starts from its first byte) the runtime's and the object's state.
struct RecordPlan {
  Collection* c;
  ChareBase* obj;
  std::uint32_t ctor;
  std::size_t head, body;  // header bytes, body bytes (unpadded)
  std::size_t span() const { return (head + 15) / 16 * 16 + (body + 15) / 16 * 16; }
};

// A restarted run numbers every sender's messages afresh: the per-sender table is left out.
template <class F>
void without_seq(ChareBase* obj, F&& f) {
  ElementRuntime& rt = ElementAccess::rt(obj);
  std::vector<std::pair<std::int32_t, std::uint16_t>> seq;
  seq.swap(rt.next_seq);
  f();
  rt.next_seq.swap(seq);
}

RecordPlan plan_record(Collection& c, ChareBase* obj) {
  check_writable(obj);
  RecordPlan r{&c, obj, ctor_for(typeid(*obj)), 0, 0};
  CollectionRef ref = c.ref;
  bool by_balancer = false;
  without_seq(obj, [&] {
    PUP::er s = PUP::er::sizer();
    pup_runtime(s, obj, ref, by_balancer);
    obj->pup(s);
    r.body = s.size();
  });
  Index idx = obj->ckIndex();
  std::uint64_t len = r.body;
  PUP::er hs = PUP::er::sizer();
  hs | ref; hs | idx; hs | r.ctor; hs | len;
  r.head = hs.size();
  return r;
}

void pack_record(const RecordPlan& r, char* out) {
  CollectionRef ref = r.c->ref;
  Index idx = r.obj->ckIndex();
  std::uint32_t ctor = r.ctor;
  std::uint64_t len = r.body;
  PUP::er h = PUP::er::packer(out, r.head);
  h | ref; h | idx; h | ctor; h | len;
  const std::size_t body_at = (r.head + 15) / 16 * 16;
  std::memset(out + r.head, 0, body_at - r.head);
  bool by_balancer = false;
  without_seq(r.obj, [&] {
    PUP::er p = PUP::er::packer(out + body_at, r.body);
    pup_runtime(p, r.obj, ref, by_balancer);
    r.obj->pup(p);
    if (p.size() != r.body)
      CkAbort("checkpoint: %s %s: its pup() packed %zu bytes but sized %zu (it must visit the same fields every "
              "time)",
              demangle(typeid(*r.obj).name()).c_str(), idx.str().c_str(), p.size(), r.body);
  });
  std::memset(out + body_at + r.body, 0, r.span() - body_at - r.body);
}

void write_here(const std::string& dir, std::uint64_t gen) {
  Core& k = core();
  for (auto& [key, st] : k.reductions)
    if (st.count > 0)  // (a subtree with no elements may have sent an empty partial ahead)
      CkAbort("checkpoint: reduction %u of collection %llu has contributions pending on PE %d; checkpoint where "
              "every reduction has completed",
              key.second, static_cast<unsigned long long>(key.first), CmiMyPe());
  // Sized first, then packed into one buffer: the state is copied once, into what is written.
  std::vector<RecordPlan> branches, elements;
  std::size_t branch_bytes = 0, element_bytes = 0;
  std::vector<CollectionInfo> infos;
  for (auto& [id, cp] : k.collections) {
    Collection& c = *cp;
    if (c.ref.kind != Kind::Chare && c.cls) {
      CollectionInfo info{c.ref, ctor_for(*c.cls), c.red_next_send, c.bcast_latest};
      auto s = k.bcast_serials.find(id);
      if (s != k.bcast_serials.end()) info.bcast = s->second;
      infos.push_back(info);
    }
    for (ChareBase* obj : c.local) {
      RecordPlan r = plan_record(c, obj);
      (c.ref.kind == Kind::Group ? branch_bytes : element_bytes) += r.span();
      (c.ref.kind == Kind::Group ? branches : elements).push_back(r);
    }
  }
  // Streamed: each record is packed into the scratch buffer, hashed and written, so the
  // state is copied once and no buffer the size of the PE's whole state is touched.
  PeFile f;
  f.name = "pe" + std::to_string(CmiMyPe()) + ".g" + std::to_string(gen) + ".ckpt";
  f.branches_len = branch_bytes;
  f.elements_len = element_bytes;
  std::size_t largest = 0;
  for (const auto* list : {&branches, &elements})
    for (const RecordPlan& r : *list) largest = std::max(largest, r.span());
  std::vector<char>& scratch = state().scratch;
  if (scratch.size() < largest) scratch.resize(largest);
  FileWriter out(dir + "/" + f.name);
  XXH3_state_t* h = XXH3_createState();
  auto section = [&](const std::vector<RecordPlan>& list) {
    XXH3_64bits_reset(h);
    for (const RecordPlan& r : list) {
      pack_record(r, scratch.data());
      XXH3_64bits_update(h, scratch.data(), r.span());
      out.write(scratch.data(), r.span());
    }
    return XXH3_64bits_digest(h);
  };
  f.branches_hash = section(branches);
  f.elements_hash = section(elements);
  XXH3_freeState(h);
  out.commit();
  std::uint64_t serial = k.next_serial;
  send_step(0, Step::Written, [&](PUP::er& p) {
    int pe = CmiMyPe();
    p | pe; p | f; p | infos; p | serial;
  });
}

void checkpoint_quiescent() {  // PE 0
  CheckpointState& s = state();
  std::error_code ec;
  fs::create_directories(s.dir, ec);
  if (ec) CkAbort("checkpoint: cannot create %s: %s", s.dir.c_str(), ec.message().c_str());
  s.dir = fs::absolute(s.dir).lexically_normal().string();
  while (s.dir.size() > 1 && s.dir.back() == '/') s.dir.pop_back();
  const Manifest old = read_manifest(s.dir, false);
  s.next.gen = old.gen + 1;
  s.next.num_pes = CmiNumPes();
  s.next.files.assign(static_cast<std::size_t>(CmiNumPes()), PeFile{});
  s.next.collections.clear();
  s.next.max_serial = 0;
  s.written = 0;
  std::string dir = s.dir;
  std::uint64_t gen = s.next.gen;
  send_step(-1, Step::Write, [&](PUP::er& p) { p | dir; p | gen; });
}

// PE 0: every PE's file is on disk; the manifest makes the checkpoint the current one.
void commit() {
  Core& k = core();
  CheckpointState& s = state();
  Manifest& m = s.next;
  m.signature = program_signature();
  PUP::er rs = PUP::er::sizer();
  for (ReadonlyBase* r : registry().readonlies) r->pup(rs);
  rs | k.embedder_readonly;
  m.readonlies.resize(rs.size());
  PUP::er rp = PUP::er::packer(m.readonlies.data(), m.readonlies.size());
  for (ReadonlyBase* r : registry().readonlies) r->pup(rp);
  rp | k.embedder_readonly;
  PUP::er ms = PUP::er::sizer();
  ms | m;
  std::vector<char> body(ms.size());
  PUP::er mp = PUP::er::packer(body.data(), body.size());
  mp | m;
  const std::uint64_t len = body.size(), sum = hash(body.data(), body.size());
  write_file(s.dir + "/" + kManifest, {{kMagic, sizeof kMagic},
                                       {reinterpret_cast<const char*>(&len), sizeof len},
                                       {reinterpret_cast<const char*>(&sum), sizeof sum},
                                       {body.data(), body.size()}});
  sync_dir(s.dir);
  // The older generations' files are no longer named by the manifest.
  std::error_code ec;
  const std::string suffix = ".g" + std::to_string(m.gen) + ".ckpt";
  for (const auto& e : fs::directory_iterator(s.dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("pe", 0) == 0 && n.find(".ckpt") != std::string::npos &&
        !(n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0))
      fs::remove(e.path(), ec);
  }
  // The launcher restarts a failed job from here (ucharmrun --restart-on-failure).
  if (const char* record = std::getenv("UCHARM_CHECKPOINT_RECORD"); record && *record) {
    const std::string line = s.dir + "\n";
    write_file(record, {{line.data(), line.size()}});
  }
  s.busy = false;
  CkCallback done = s.done;
  done.send();
}

struct Record {
  CollectionRef ref;
  Index idx;
  std::uint32_t ctor = 0;
  const char* data = nullptr;
  std::uint64_t len = 0;
};
void rebuild_here(Collection& c, const Record& r, const Index& idx);

void handler(void* msg) {
  Core& k = core();
  CheckpointState& s = state();
  const auto step = static_cast<Step>(CmiMsgPayload(msg)[0]);
  PUP::er p = PUP::er::unpacker(CmiMsgPayload(msg) + 1, CmiMsgSize(msg) - CmiMsgHeaderSizeBytes - 1);
  switch (step) {
    case Step::Start: {  // PE 0
      std::string dir;
      CkCallback done, restarted;
      p | dir; p | done; p | restarted;
      if (s.busy) CkAbort("start_checkpoint(%s): a checkpoint (to %s) is still being written", dir.c_str(), s.dir.c_str());
      s.busy = true;
      s.dir = dir;
      s.done = done;
      s.next.restarted = restarted;
      start_qd(CkCallback::function<&checkpoint_quiescent>(0));
      break;
    }
    case Step::Write: {
      std::string dir;
      std::uint64_t gen = 0;
      p | dir; p | gen;
      write_here(dir, gen);
      break;
    }
    case Step::Written: {  // PE 0
      int pe = 0;
      PeFile f;
      std::vector<CollectionInfo> infos;
      std::uint64_t serial = 0;
      p | pe; p | f; p | infos; p | serial;
      s.next.files[static_cast<std::size_t>(pe)] = f;
      s.next.max_serial = std::max(s.next.max_serial, serial);
      for (const CollectionInfo& in : infos) {
        auto it = std::find_if(s.next.collections.begin(), s.next.collections.end(),
                               [&](const CollectionInfo& c) { return c.ref.id == in.ref.id; });
        if (it == s.next.collections.end()) it = s.next.collections.insert(s.next.collections.end(), in);
        // The reduction tree's root (PE 0) counts completed rounds (others may be ahead with
        // empty partials); the broadcast root numbers broadcasts.
        if (pe == 0) it->red_round = in.red_round;
        if (array_root(in.ref.id) == pe) it->bcast = in.bcast;
      }
      if (++s.written == CmiNumPes()) commit();
      break;
    }
    case Step::Chare: {  // restarting: a singleton chare whose PE read another PE's file
      Record r;
      p | r.ref; p | r.ctor; p | r.len;
      r.data = p.view(static_cast<std::size_t>(r.len));
      std::vector<char> body(r.data, r.data + r.len);  // aligned for its pup()
      r.data = body.data();
      ++k.processed;
      rebuild_here(ensure_collection(r.ref, registry().ctors[r.ctor].cls), r, Index{});
      break;
    }
  }
  CmiFree(msg);
}

// ---- restarting -------------------------------------------------------------------------------

// One PE file's section, read alone and checked against the manifest.
std::vector<char> read_section(const std::string& dir, const PeFile& f, bool elements) {
  const std::string path = dir + "/" + f.name;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    CkAbort("+restart %s: cannot open %s: %s (the checkpoint is incomplete or was moved)", dir.c_str(), path.c_str(),
            std::strerror(errno));
  struct stat st {};
  ::fstat(fd, &st);
  if (static_cast<std::uint64_t>(st.st_size) != f.branches_len + f.elements_len) {
    ::close(fd);
    CkAbort("+restart %s: %s has %lld bytes, the manifest says %llu: the file was torn or edited", dir.c_str(),
            f.name.c_str(), static_cast<long long>(st.st_size),
            static_cast<unsigned long long>(f.branches_len + f.elements_len));
  }
  const std::size_t off = elements ? f.branches_len : 0;
  std::vector<char> out(elements ? f.elements_len : f.branches_len);
  std::size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(off + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (got != out.size() || hash(out.data(), out.size()) != (elements ? f.elements_hash : f.branches_hash))
    CkAbort("+restart %s: %s is damaged (checksum mismatch): the file was torn or edited; restart from another "
            "checkpoint",
            dir.c_str(), f.name.c_str());
  return out;
}

template <class F>
void for_each_record(const std::vector<char>& section, const std::string& what, F&& f) {
  PUP::er p = PUP::er::unpacker(section.data(), section.size());
  p.set_context(what.c_str());
  while (p.remaining() > 0) {
    Record r;
    p | r.ref; p | r.idx; p | r.ctor; p | r.len;
    p.align(16);
    if (r.ctor >= registry().ctors.size() || !registry().ctors[r.ctor].migration || r.len > p.remaining())
      CkAbort("+restart: %s holds a malformed record", what.c_str());
    r.data = p.view(static_cast<std::size_t>(r.len));
    p.align(16);
    f(r);
  }
}

// Builds a group branch or singleton chare here from its record.
void rebuild_here(Collection& c, const Record& r, const Index& idx) {
  Core& k = core();
  k.constructing = Constructing{c.ref, idx};
  PUP::er p = PUP::er::unpacker(r.data, r.len);
  p.set_context("an object's pup() (restarting from a checkpoint)");
  ChareBase* obj = registry().ctors[r.ctor].make(p);
  CollectionRef ref;
  bool by_balancer = false;
  pup_runtime(p, obj, ref, by_balancer);
  obj->pup(p);
  if (p.remaining() != 0)
    CkAbort("+restart: %s: its pup() read %zu bytes fewer than it wrote (pack and unpack must visit the same fields)",
            demangle(typeid(*obj).name()).c_str(), p.remaining());
  element_added(c, obj);
  c.single = obj;
  obj->ckJustMigrated();
}

}  // namespace

void register_checkpoint_handler() { state().handler = CmiRegisterHandler(handler); }

void set_restart_dir(const std::string& dir) {
  state().restart.restarted = true;
  state().restart.dir = dir;
}
bool restart_requested() { return state().restart.restarted; }

void restart_load() {
  Core& k = core();
  CheckpointState& s = state();
  const std::string& dir = s.restart.dir;
  const Manifest m = read_manifest(dir, true);
  if (m.signature != program_signature())
    CkAbort("+restart %s: the checkpoint was written by a different program (its entry methods and chare classes "
            "differ from this one's)",
            dir.c_str());
  if (m.files.size() != static_cast<std::size_t>(m.num_pes) || m.num_pes < 1)
    CkAbort("+restart %s: the manifest is inconsistent", dir.c_str());
  s.restart.old_num_pes = m.num_pes;
  const int n = CmiNumPes(), me = CmiMyPe();
  // Readonly values: the same on every PE, before anything runs.
  PUP::er rp = PUP::er::unpacker(m.readonlies.data(), m.readonlies.size());
  rp.set_context("the readonly values (restarting from a checkpoint)");
  for (ReadonlyBase* r : registry().readonlies) r->pup(rp);
  rp | k.embedder_readonly;
  if (k.embedder_readonly_arrived) k.embedder_readonly_arrived(k.embedder_readonly);
  k.initialized = true;
  k.next_serial = std::max(k.next_serial, m.max_serial);  // new collections get new ids
  // Every array and group, known everywhere, with its reduction round and broadcast number.
  for (const CollectionInfo& in : m.collections) {
    Collection& c = ensure_collection(in.ref, registry().ctors[in.ctor].cls);
    if (in.ref.bounded || in.ref.kind == Kind::Group) setup_reduction_tree(c);
    c.red_next_send = in.red_round;
    c.bcast_latest = in.bcast;
    if (in.ref.kind == Kind::Array && array_root(in.ref.id) == me && in.bcast) k.bcast_serials[in.ref.id] = in.bcast;
  }
  // Group branches: from the old branch the class's rule names.
  std::map<int, std::vector<char>> branch_files;
  for (const CollectionInfo& in : m.collections) {
    if (in.ref.kind != Kind::Group) continue;
    const RestartSource rule = registry().ctors[in.ctor].restart_source;
    const int src = rule ? rule(me, m.num_pes) : me % m.num_pes;
    if (src < 0 || src >= m.num_pes)
      CkAbort("+restart: %s::ckRestartSource(%d, %d) returned %d, not an old PE in [0, %d)",
              demangle(registry().ctors[in.ctor].cls->name()).c_str(), me, m.num_pes, src, m.num_pes);
    auto [it, fresh] = branch_files.try_emplace(src);
    if (fresh) it->second = read_section(dir, m.files[static_cast<std::size_t>(src)], false);
    bool found = false;
    for_each_record(it->second, m.files[static_cast<std::size_t>(src)].name, [&](const Record& r) {
      if (r.ref.id != in.ref.id || found) return;
      found = true;
      rebuild_here(*find_collection(in.ref.id), r, Index{{me, 0, 0}, 0});
    });
    if (!found) CkAbort("+restart %s: no branch of group %llu in %s", dir.c_str(),
                        static_cast<unsigned long long>(in.ref.id), m.files[static_cast<std::size_t>(src)].name.c_str());
  }
  // Array elements and singleton chares of the old PEs this PE reads: each to its PE now.
  for (int q = me; q < m.num_pes; q += n) {
    const PeFile& f = m.files[static_cast<std::size_t>(q)];
    const std::vector<char> section = read_section(dir, f, true);
    for_each_record(section, f.name, [&](const Record& r) {
      if (r.ref.kind == Kind::Chare) {  // on its PE modulo the PE count (home_pe)
        const int dest = home_pe(r.ref, r.idx);
        if (dest == me) {
          rebuild_here(ensure_collection(r.ref, registry().ctors[r.ctor].cls), r, Index{});
          return;
        }
        ++k.sent;
        Record c = r;
        send_step(dest, Step::Chare, [&](PUP::er& p) {
          p | c.ref; p | c.ctor; p | c.len;
          p.bytes(const_cast<char*>(c.data), static_cast<std::size_t>(c.len));
        });
        return;
      }
      const std::size_t total = CmiMsgHeaderSizeBytes + sizeof(Envelope) + r.len;
      void* msg = CmiAlloc(total);
      std::memcpy(args_of(msg), r.data, r.len);
      Envelope& e = envelope(msg);
      e.collection = r.ref.id;
      e.set_index(r.idx);
      e.entry = r.ctor;
      e.sig = 0;
      e.kind = MsgKind::Arrive;
      CmiSetHandler(msg, k.h_core);
      ++k.sent;
      const int dest = home_pe(r.ref, r.idx);
      if (dest == me) arrive_handler_msg(msg);
      else CmiSyncSendAndFree(dest, total, msg);
    });
  }
  for (auto& [id, c] : k.collections) {  // from now on the elements here are the ones that count
    c->local_expected = 0;
    reductions_recheck(*c);
  }
  // Once every element has arrived, the program goes on.
  if (me == 0) start_qd(m.restarted.target() == CkCallback::Target::Future ? CkCallback() : m.restarted);
}

}  // namespace ck::detail

namespace ck {

void start_checkpoint(const std::string& dir, const CkCallback& done, const CkCallback& restarted) {
  using namespace detail;
  if (dir.empty()) CkAbort("start_checkpoint: give a directory");
  std::string d = dir;
  CkCallback a = done, b = restarted;
  send_step(0, Step::Start, [&](PUP::er& p) { p | d; p | a; p | b; });
}

const RestartInfo& restart_info() { return detail::state().restart; }

}  // namespace ck
