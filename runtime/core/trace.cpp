// The `+trace FILE` timeline writer (see trace.h). Events are formatted straight into one
// preallocated buffer per PE (no allocation per event) and written out when it fills, at
// exit and at an abort (Converse's tracer exit hook). The part file is one JSON object per
// line: `{"traceEvents":[` + first event, then ",{event}" lines, then "]}" — so a part is
// valid JSON on its own, and a part cut short by a crash loses only its last line (the
// merge in tools/ucharmrun/trace_merge.cpp relies on this layout).
#include "trace.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

namespace ck::detail::trace {

bool g_on = false;

namespace {

constexpr std::size_t kBufBytes = std::size_t{4} << 20;  // written out when this fills
constexpr std::size_t kEventRoom = 4096;  // bytes one ordinary event may take (names cut)
constexpr std::size_t kNameMax = 512;     // longer chare/entry names are cut
constexpr int kMaxDepth = 64;             // nested entries tracked (deeper: not recorded)
constexpr int kPid = 1;                   // the job is one process in the viewer...
inline int tid_of(int pe) { return pe + 1; }  // ...each PE a thread (Perfetto: tid 0 is special)

// CLOCK_MONOTONIC is common to all processes of a host (steady_clock, which CmiWallTimer
// uses, is this clock made relative to each process's start).
std::int64_t now_ns() {
  timespec t;
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return std::int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

struct OpenEntry {
  std::int64_t start;
  const char* chare;
  const char* entry;
  Index idx;
  int src_pe;
  std::uint64_t flow;
};

class Writer {
 public:
  bool open(const std::string& path, int pe, int num_pes);
  void close();
  bool is_open() const { return fd_ >= 0; }

  // ---- formatting into the buffer ----
  void begin_event() {
    if (buf_.size() - used_ < kEventRoom) flush();
    if (!first_) put(",");
    first_ = false;
  }
  void end_event() { put("}\n"); }
  void put(const char* s) { put(s, std::strlen(s)); }
  void put(const char* s, std::size_t n) {
    std::memcpy(buf_.data() + used_, s, n);
    used_ += n;
  }
  void num(double v) {
    if (!std::isfinite(v)) return put("null");  // JSON has no inf or nan
    auto r = std::to_chars(buf_.data() + used_, buf_.data() + buf_.size(), v);
    used_ = static_cast<std::size_t>(r.ptr - buf_.data());
  }
  template <class T>
  void num(T v) {
    auto r = std::to_chars(buf_.data() + used_, buf_.data() + buf_.size(), v);
    used_ = static_cast<std::size_t>(r.ptr - buf_.data());
  }
  // A timestamp or duration in ns, written in µs with three decimals.
  void us(std::int64_t ns) {
    if (ns < 0) {
      put("-");
      ns = -ns;
    }
    num(ns / 1000);
    char frac[4] = {'.', static_cast<char>('0' + ns % 1000 / 100),
                    static_cast<char>('0' + ns % 100 / 10), static_cast<char>('0' + ns % 10)};
    put(frac, 4);
  }
  void str(const char* s);  // a quoted, escaped JSON string (cut at kNameMax)
  void index(const Index& idx);
  // `"ph":"X","name":...,"pid":..,"tid":..,"ts":..` — the common head of an event.
  void head(const char* ph, const char* name, const char* cat, std::int64_t ts) {
    begin_event();
    put("{\"ph\":\"");
    put(ph);
    put("\",\"name\":");
    str(name);
    put(",\"cat\":\"");
    put(cat);
    put("\",\"pid\":");
    num(kPid);
    put(",\"tid\":");
    num(tid_);
    put(",\"ts\":");
    us(ts);
  }
  // Makes room for an event larger than kEventRoom (an LB step on many PEs).
  void reserve(std::size_t bytes) {
    flush();
    if (buf_.size() < bytes + kEventRoom) buf_.resize(bytes + kEventRoom);
  }
  void flush();

  int pe_ = 0;
  int tid_ = 1;
  std::uint64_t next_flow_ = 0;
  OpenEntry stack_[kMaxDepth];
  int depth_ = 0;
  std::int64_t idle_since_ = -1;
  // Migrations of one element between two PEs, counted on both ends to pair them.
  std::unordered_map<std::uint64_t, std::uint32_t> migrations_;

 private:
  int fd_ = -1;
  bool first_ = true;
  std::vector<char> buf_;
  std::size_t used_ = 0;
};

Writer& writer() {
  static Writer w;  // this PE's (one PE per process)
  return w;
}

void Writer::str(const char* s) {
  static const char* const kHex = "0123456789abcdef";
  put("\"");
  std::size_t n = 0;
  for (; *s && n < kNameMax; ++s, ++n) {
    const auto c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', static_cast<char>(c)};
      put(e, 2);
    } else if (c < 0x20) {
      char e[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
      put(e, 6);
    } else {
      buf_[used_++] = static_cast<char>(c);
    }
  }
  put("\"");
}

// As Index::str(): "(1, 2)"; groups and chares (no dimensions) show their one value.
void Writer::index(const Index& idx) {
  put("\"(");
  for (int d = 0; d < (idx.dims ? idx.dims : 1); ++d) {
    if (d) put(", ");
    num(idx.x[d]);
  }
  put(")\"");
}

bool Writer::open(const std::string& path, int pe, int num_pes) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) return false;
  pe_ = pe;
  tid_ = tid_of(pe);
  buf_.resize(kBufBytes);
  used_ = 0;
  first_ = true;
  put("{\"traceEvents\":[\n");
  // Track names: the job, then "PE n" sorted by PE number.
  head("M", "thread_name", "__metadata", 0);
  put(",\"args\":{\"name\":\"PE ");
  num(pe);
  put("\"}");
  end_event();
  head("M", "thread_sort_index", "__metadata", 0);
  put(",\"args\":{\"sort_index\":");
  num(pe);
  put("}");
  end_event();
  if (pe == 0) {
    head("M", "process_name", "__metadata", 0);
    put(",\"args\":{\"name\":\"ucharm job (");
    num(num_pes);
    put(num_pes == 1 ? " PE)\"}" : " PEs)\"}");
    end_event();
  }
  return true;
}

void Writer::flush() {
  std::size_t off = 0;
  while (off < used_ && fd_ >= 0) {
    ssize_t n = ::write(fd_, buf_.data() + off, used_ - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // disk full or the like: stop tracing rather than fail the job
      std::fprintf(stderr, "ucharm: PE %d: writing the trace failed (%s); tracing stops\n",
                   pe_, std::strerror(errno));
      ::close(fd_);
      fd_ = -1;
      g_on = false;
      break;
    }
    off += static_cast<std::size_t>(n);
  }
  used_ = 0;
}

void Writer::close() {
  if (fd_ < 0) return;
  put("]}\n");
  flush();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  std::vector<char>().swap(buf_);
}

void (*g_idle_listener)(bool) = nullptr;  // the balancer's, while it measures idle time

void idle_begin_hook() {
  if (g_idle_listener) g_idle_listener(true);
  if (g_on) writer().idle_since_ = now_ns();
}

void idle_end_hook() {
  if (g_idle_listener) g_idle_listener(false);
  Writer& w = writer();
  if (!g_on || w.idle_since_ < 0) return;
  const std::int64_t end = now_ns();
  w.head("X", "idle", "idle", w.idle_since_);
  w.put(",\"dur\":");
  w.us(end - w.idle_since_);
  w.end_event();
  w.idle_since_ = -1;
}

void exit_hook(int) { flush_and_close(); }

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h;
}

}  // namespace

void set_idle_listener(void (*listener)(bool begin)) { g_idle_listener = listener; }

std::string part_path(const std::string& file, int pe) {
  const std::string ext = ".json";
  std::string stem = file;
  if (stem.size() > ext.size() && stem.compare(stem.size() - ext.size(), ext.size(), ext) == 0)
    stem.resize(stem.size() - ext.size());
  return stem + ".pe" + std::to_string(pe) + ext;
}

void open(const std::string& file) {
  Writer& w = writer();
  if (w.is_open()) return;
  const int pe = CmiMyPe();
  const std::string path = part_path(file, pe);
  if (!w.open(path, pe, CmiNumPes()))
    CmiAbort("+trace %s: cannot write this PE's part %s: %s", file.c_str(), path.c_str(),
             std::strerror(errno));
  CmiSetTraceHooks(CmiTraceHooks{idle_begin_hook, idle_end_hook, exit_hook});
  // A normal end runs atexit handlers: the trace is complete even if no one closes it.
  static const bool registered = (std::atexit([] { flush_and_close(); }), true);
  (void)registered;
  g_on = true;
}

std::uint64_t send(int dest_pe, std::size_t bytes) {
  if (!g_on) return 0;
  Writer& w = writer();
  if (w.depth_ == 0) return 0;  // outside an entry (start-up, a reduction's callback): no slice to bind to
  const std::uint64_t id = (static_cast<std::uint64_t>(w.pe_) << 40) | ++w.next_flow_;
  w.head("s", "msg", "msg", now_ns());
  w.put(",\"id\":");
  w.num(id);
  w.put(",\"args\":{\"to\":");
  w.num(dest_pe);
  w.put(",\"bytes\":");
  w.num(bytes);
  w.put("}");
  w.end_event();
  return id;
}

void begin_entry(const char* chare, const char* entry, const Index& idx, int src_pe,
                 std::uint64_t flow_id) {
  if (!g_on) return;
  Writer& w = writer();
  const std::int64_t t = now_ns();
  if (w.depth_ < kMaxDepth) w.stack_[w.depth_] = OpenEntry{t, chare, entry, idx, src_pe, flow_id};
  ++w.depth_;
  if (flow_id != 0) {
    // Bound to the enclosing slice, 1 ns in so that it falls inside the entry.
    w.head("f", "msg", "msg", t + 1);
    w.put(",\"bp\":\"e\",\"id\":");
    w.num(flow_id);
    w.end_event();
  }
}

void end_entry() {
  if (!g_on) return;
  Writer& w = writer();
  if (w.depth_ == 0) return;  // tracing began inside an entry
  if (--w.depth_ >= kMaxDepth) return;
  const OpenEntry& e = w.stack_[w.depth_];
  // At least 2 ns: the flow end placed 1 ns in must fall inside.
  const std::int64_t dur = std::max<std::int64_t>(now_ns() - e.start, 2);
  w.head("X", e.entry, "entry", e.start);
  w.put(",\"dur\":");
  w.us(dur);
  w.put(",\"args\":{\"chare\":");
  w.str(e.chare);
  w.put(",\"entry\":");
  w.str(e.entry);
  w.put(",\"index\":");
  w.index(e.idx);
  w.put(",\"src_pe\":");
  w.num(e.src_pe);
  w.put("}");
  w.end_event();
}

void migration(const char* chare, const Index& idx, int from_pe, int to_pe, std::size_t bytes,
               bool arriving) {
  if (!g_on) return;
  Writer& w = writer();
  // Both ends name the k-th move of this element from from_pe to to_pe with the same id:
  // an element reaches to_pe before it can leave from_pe again, so the counts pair up.
  std::uint64_t key = 0xcbf29ce484222325ull;
  for (const char* p = chare; *p; ++p) key = (key ^ static_cast<unsigned char>(*p)) * 0x100000001b3ull;
  for (int d = 0; d < idx.dims; ++d) key = mix(key, static_cast<std::uint32_t>(idx.x[d]));
  key = mix(mix(key, static_cast<std::uint32_t>(from_pe)), static_cast<std::uint32_t>(to_pe));
  const std::uint32_t k = w.migrations_[key ^ arriving]++;  // ends counted apart
  const std::uint64_t id = mix(key, k) & ((std::uint64_t{1} << 52) - 1);  // exact in a double
  w.head("X", arriving ? "migrate in" : "migrate out", "migration", now_ns());
  w.put(",\"dur\":0,\"bind_id\":");
  w.num(id);
  w.put(arriving ? ",\"flow_in\":true" : ",\"flow_out\":true");
  w.put(",\"args\":{\"chare\":");
  w.str(chare);
  w.put(",\"index\":");
  w.index(idx);
  w.put(",\"from\":");
  w.num(from_pe);
  w.put(",\"to\":");
  w.num(to_pe);
  w.put(",\"bytes\":");
  w.num(bytes);
  w.put("}");
  w.end_event();
}

void lb_step(int step, const char* strategy, const std::vector<double>& pe_load_before,
             const std::vector<double>& pe_load_after, int moved, int objects) {
  if (!g_on) return;
  Writer& w = writer();
  // 32 bytes per number (to_chars' shortest form is at most 24) and the fixed text.
  w.reserve(32 * (pe_load_before.size() + pe_load_after.size()) + 2 * kNameMax);
  w.head("i", "LB step", "lb", now_ns());
  w.put(",\"s\":\"t\",\"args\":{\"step\":");
  w.num(step);
  w.put(",\"strategy\":");
  w.str(strategy);
  w.put(",\"moved\":");
  w.num(moved);
  w.put(",\"objects\":");
  w.num(objects);
  for (const auto* v : {&pe_load_before, &pe_load_after}) {
    w.put(v == &pe_load_before ? ",\"before\":[" : ",\"after\":[");
    for (std::size_t i = 0; i < v->size(); ++i) {
      if (i) w.put(",");
      w.num((*v)[i]);
    }
    w.put("]");
  }
  w.put("}");
  w.end_event();
}

void flush_and_close() {
  Writer& w = writer();
  if (!w.is_open()) return;
  // An idle period or entries still open at the end are closed here, so that they show.
  if (g_on) {
    idle_end_hook();
    while (w.depth_ > 0) end_entry();
  }
  g_on = false;
  CmiSetTraceHooks(CmiTraceHooks{});
  w.close();
}

}  // namespace ck::detail::trace
