// CCS, Converse Client-Server: Charm++'s wire protocol served by PE 0.
//
// A client connects to PE 0's TCP port and sends one request: a 40-byte header (data length
// and destination PE as big-endian 32-bit integers, then a 32-byte NUL-terminated handler
// name), for a multicast (destination -n) n PE numbers, then the data. An authenticated
// request is preceded by 0x80 0x00 0x00 level, the client's id, a reply salt and SHA-1 of
// (key, the client's salt, the header's first 16 bytes); a client gets its id and salt in an
// exchange of challenges started by 0x80 0x00 0x01 level. The reply comes back on the same
// connection (its length, big-endian, and the data; authenticated: SHA-1 of (key, reply
// salt) first) and the server closes it.
//
// PE 0 forwards the request as a Converse message to the PE it names (to every PE for -1),
// which runs the handler; the reply travels back to PE 0 as another message. The sockets are
// non-blocking and are served from PE 0's scheduler (ccs::poll): their epoll set sits in the
// set an idle PE sleeps on, so a request wakes a sleeping PE 0 and nothing polls them while
// the server is off.
#include "ccs.h"

#include <ucharm/machine.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "converse_internal.h"

namespace ucharm::converse::ccs {

namespace lrts = ucharm::machine;

namespace {
void put_be32(std::uint8_t* p, std::uint32_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 24);
  p[1] = static_cast<std::uint8_t>(v >> 16);
  p[2] = static_cast<std::uint8_t>(v >> 8);
  p[3] = static_cast<std::uint8_t>(v);
}
std::uint32_t get_be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}
}  // namespace

namespace {

State& st() { return *pe_state().ccs; }

// ---- the messages between PEs -------------------------------------------------------------

struct RequestMsg {  // h_request: a request on its way to the PE that runs it
  std::uint64_t id;
  std::int32_t dest;
  std::int32_t len;
  char name[kNameBytes];
};
struct ReplyMsg {  // h_reply: to PE 0
  std::uint64_t id;
  std::int32_t from_pe;
  std::int32_t len;  // -1: no reply (CcsNoReply): the connection closes
};

void deliver_reply(std::uint64_t id, int from_pe, int len, const void* data);

void send_reply(std::uint64_t id, int len, const void* data) {
  if (len < 0) len = -1;
  const int bytes = len > 0 ? len : 0;
  if (CmiMyPe() == 0) return deliver_reply(id, 0, len, data);
  const std::size_t size = CmiMsgHeaderSizeBytes + sizeof(ReplyMsg) + static_cast<std::size_t>(bytes);
  void* m = CmiAlloc(size);
  CmiSetHandler(m, st().h_reply);
  ReplyMsg r{id, CmiMyPe(), len};
  std::memcpy(CmiMsgPayload(m), &r, sizeof r);
  if (bytes) std::memcpy(CmiMsgPayload(m) + sizeof r, data, static_cast<std::size_t>(bytes));
  CmiSyncSendAndFree(0, size, m);
}

void reply_handler(void* msg) {
  ReplyMsg r;
  std::memcpy(&r, CmiMsgPayload(msg), sizeof r);
  deliver_reply(r.id, r.from_pe, r.len, CmiMsgPayload(msg) + sizeof r);
  CmiFree(msg);
}

void request_handler(void* msg) {
  State& s = st();
  RequestMsg rq;
  std::memcpy(&rq, CmiMsgPayload(msg), sizeof rq);
  rq.name[kNameBytes - 1] = '\0';
  const char* data = CmiMsgPayload(msg) + sizeof rq;
  const State::Current saved = s.current;  // a handler may run the scheduler (nested requests)
  s.current = {true, rq.id, rq.dest};
  auto it = s.handlers.find(rq.name);
  if (it == s.handlers.end()) {
    CmiPrintf("[%d] CCS: Unknown CCS handler name '%s' requested. Ignoring...\n", CmiMyPe(), rq.name);
  } else if (it->second.old_style) {
    void* m = CmiAlloc(CmiMsgHeaderSizeBytes + static_cast<std::size_t>(rq.len));
    std::memcpy(CmiMsgPayload(m), data, static_cast<std::size_t>(rq.len));
    const CmiHandler fn = it->second.old_style;
    fn(m);
  } else {
    const Handler h = it->second;
    h.fn(h.user, rq.len, data);
  }
  if (s.current.pending) CcsSendReply(0, nullptr);  // the handler neither replied nor delayed
  s.current = saved;
  CmiFree(msg);
}

// ccs_getinfo (Charm++'s CcsConnect asks it first): the number of nodes and the PEs of each,
// big-endian. One PE per process here, so every node has one.
void getinfo(void*, int, const void*) {
  const int n = CmiNumPes();
  std::vector<std::uint8_t> out(4 * static_cast<std::size_t>(n + 1));
  put_be32(out.data(), static_cast<std::uint32_t>(n));
  for (int i = 0; i < n; ++i) put_be32(out.data() + 4 * (i + 1), 1);
  CcsSendReply(static_cast<int>(out.size()), out.data());
}

}  // namespace

// ---- the server (PE 0) -----------------------------------------------------------------------

class Server {
 public:
  Server(int port, const std::string& auth_file, const std::string& ip);
  ~Server();
  bool poll();
  void deliver(std::uint64_t id, int from_pe, int len, const void* data);
  int port() const { return port_; }
  const std::string& address() const { return ip_; }

 private:
  enum class Phase : std::uint8_t {
    Reading,   // the request's bytes are coming in
    SaltWait,  // a salt exchange: our challenge went out, the client's hash is due
    Waiting,   // the request runs; the reply is due
    Writing,   // the reply (or the exchange's answer) is going out, then the connection closes
  };
  struct Conn {
    int fd = -1;
    Phase phase = Phase::Reading;
    std::vector<std::uint8_t> in;
    std::vector<std::uint8_t> out;
    std::size_t out_done = 0;
    bool auth = false;
    bool verified = false;  // the authenticated header's hash was checked (once: it advances the salt)
    std::uint8_t level = 0;
    std::uint32_t reply_salt = 0;
    std::uint32_t s1 = 0, s2 = 0;  // the salt exchange's challenges
    std::string peer;
    std::string name;
    std::int32_t dest = 0;
    int expected = 0;  // replies due (several for a broadcast or multicast)
    std::vector<std::pair<int, std::vector<std::uint8_t>>> replies;
    std::chrono::steady_clock::time_point since;
  };

  void accept_all();
  void on_readable(std::uint64_t id);
  void on_writable(std::uint64_t id);
  // Reads what the socket has (true: the connection is still open).
  bool fill(Conn& c);
  // Acts on the bytes that arrived: returns an error message, or empty (needs more, or done).
  std::string parse(std::uint64_t id, Conn& c);
  void dispatch(std::uint64_t id, Conn& c, const std::uint8_t* hdr, const std::uint8_t* pes, const std::uint8_t* data);
  void start_write(std::uint64_t id, Conn& c);
  void refuse(std::uint64_t id, const std::string& why);
  void close_conn(std::uint64_t id);
  void watch(std::uint64_t id, int fd, std::uint32_t events, bool add);
  std::uint32_t next_random();
  void expire();

  int listen_fd_ = -1, epoll_fd_ = -1, port_ = 0;
  std::string ip_;
  std::uint64_t next_id_ = 1;  // 0 is the listening socket
  std::unordered_map<std::uint64_t, Conn> conns_;
  std::array<std::optional<Key>, 256> keys_{};
  std::vector<std::uint32_t> client_salts_;
  std::chrono::steady_clock::time_point last_expire_ = std::chrono::steady_clock::now();
};

namespace {
// Requests larger than this are refused (the connection closes): a client that sends a length
// by mistake (or on purpose) must not make PE 0 allocate gigabytes.
constexpr std::size_t kMaxRequestBytes = std::size_t{64} << 20;
constexpr std::size_t kMaxConnections = 256;
// A connection whose request has not come in full by then is closed.
constexpr auto kReadTimeout = std::chrono::seconds(60);

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "ucharm: CCS server: %s\n", what.c_str());
  std::exit(2);
}
}  // namespace

Server::Server(int port, const std::string& auth_file, const std::string& ip) : ip_(ip) {
  if (!auth_file.empty()) {
    std::ifstream f(auth_file);
    if (!f) fail("cannot open the authentication file '" + auth_file + "': " + std::strerror(errno));
    std::string line;
    int lineno = 0;
    while (std::getline(f, line)) {
      ++lineno;
      std::istringstream ls(line);
      int level = -1;
      std::string key;
      if (!(ls >> level)) continue;  // a comment or an empty line, as Charm++ skips them
      if (!(ls >> key) || level < 0 || level > 254)
        fail("authentication file '" + auth_file + "', line " + std::to_string(lineno) +
             ": expected 'LEVEL KEY' with LEVEL 0..254");
      auto k = parse_key(key);
      if (key.size() < 2 || !std::isxdigit(static_cast<unsigned char>(key[0])) ||
          !std::isxdigit(static_cast<unsigned char>(key[1])) || !k)
        fail("authentication file '" + auth_file + "', line " + std::to_string(lineno) + ": cannot read key '" +
             key + "'");
      keys_[static_cast<std::size_t>(level)] = *k;
    }
    if (std::none_of(keys_.begin(), keys_.end(), [](const auto& k) { return k.has_value(); }))
      fail("the authentication file '" + auth_file + "' names no key");
  }
  in_addr addr{};
  if (::inet_pton(AF_INET, ip.c_str(), &addr) != 1) fail("+server-ip: '" + ip + "' is not an IPv4 address");
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) fail(std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr = addr;
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
    fail("cannot listen on " + ip + ":" + std::to_string(port) + ": " + std::strerror(errno));
  if (::listen(listen_fd_, 64) != 0) fail(std::string("listen: ") + std::strerror(errno));
  socklen_t sl = sizeof sa;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &sl);
  port_ = ntohs(sa.sin_port);
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) fail(std::string("epoll_create1: ") + std::strerror(errno));
  watch(0, listen_fd_, EPOLLIN, true);
  lrts::LrtsAddWaitFd(epoll_fd_);  // a connection wakes a sleeping PE 0
  if (auth_file.empty() && ip != "127.0.0.1")
    std::fprintf(stderr,
                 "ucharm: CCS server: listening on %s without authentication: anyone who reaches this "
                 "port can run the program's CCS handlers (+server-auth FILE requires a key)\n",
                 ip.c_str());
  std::printf("ccs: Server IP = %s, Server port = %d $\n", ip.c_str(), port_);
  std::fflush(stdout);
}

Server::~Server() {
  // At the process's end (the machine may be gone): closing the epoll fd takes it out of
  // the machine's set.
  for (auto& [id, c] : conns_) ::close(c.fd);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void Server::watch(std::uint64_t id, int fd, std::uint32_t events, bool add) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = id;
  ::epoll_ctl(epoll_fd_, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev);
}

std::uint32_t Server::next_random() {
  std::uint32_t v = 0;
  while (::getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v)) {
  }
  return v;
}

bool Server::poll() {
  epoll_event ev[16];
  const int n = ::epoll_wait(epoll_fd_, ev, 16, 0);
  for (int i = 0; i < n; ++i) {
    const std::uint64_t id = ev[i].data.u64;
    if (id == 0) {
      accept_all();
      continue;
    }
    auto it = conns_.find(id);
    if (it == conns_.end()) continue;
    if (it->second.phase == Phase::Writing) on_writable(id);
    else on_readable(id);
  }
  if (!conns_.empty()) expire();
  return n > 0;
}

void Server::expire() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_expire_ < std::chrono::seconds(1)) return;
  last_expire_ = now;
  std::vector<std::uint64_t> late;
  for (auto& [id, c] : conns_)
    if ((c.phase == Phase::Reading || c.phase == Phase::SaltWait) && now - c.since > kReadTimeout)
      late.push_back(id);
  for (auto id : late) refuse(id, "the request did not arrive within 60 s");
}

void Server::accept_all() {
  for (;;) {
    sockaddr_in sa{};
    socklen_t sl = sizeof sa;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&sa), &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN (all taken), or an error the next poll sees again
    char ip[INET_ADDRSTRLEN] = "?";
    ::inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
    const std::string peer = std::string(ip) + ":" + std::to_string(ntohs(sa.sin_port));
    if (conns_.size() >= kMaxConnections) {
      std::fprintf(stderr, "ucharm: CCS server: refused a connection from %s: %zu connections are open\n",
                   peer.c_str(), conns_.size());
      ::close(fd);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const std::uint64_t id = next_id_++;
    Conn& c = conns_[id];
    c.fd = fd;
    c.peer = peer;
    c.since = std::chrono::steady_clock::now();
    watch(id, fd, EPOLLIN, true);
  }
}

bool Server::fill(Conn& c) {
  std::uint8_t buf[65536];
  for (;;) {
    const ssize_t r = ::recv(c.fd, buf, sizeof buf, 0);
    if (r > 0) {
      c.in.insert(c.in.end(), buf, buf + r);
      if (c.in.size() > kMaxRequestBytes + 4096) return true;  // parse() refuses it
      continue;
    }
    if (r == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

void Server::on_readable(std::uint64_t id) {
  Conn& c = conns_.at(id);
  if (c.phase == Phase::Waiting) return;  // not watched for input; a late event
  const bool open = fill(c);
  const std::string err = parse(id, c);
  if (!err.empty()) return refuse(id, err);
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  if (!open && (it->second.phase == Phase::Reading || it->second.phase == Phase::SaltWait)) close_conn(id);
}

std::string Server::parse(std::uint64_t id, Conn& c) {
  if (c.phase == Phase::SaltWait) {
    if (c.in.size() < 20) return {};
    const Sha1 want = auth_hash(*keys_[c.level], c.s2, nullptr);
    if (std::memcmp(want.data(), c.in.data(), 20) != 0) return "bad key in the salt exchange (the client's hash differs)";
    const std::uint32_t client = static_cast<std::uint32_t>(client_salts_.size());
    client_salts_.push_back(next_random());
    const Sha1 proof = auth_hash(*keys_[c.level], c.s1, nullptr);
    c.out.assign(proof.begin(), proof.end());
    c.out.resize(28);
    put_be32(c.out.data() + 20, client);
    put_be32(c.out.data() + 24, client_salts_.back());
    start_write(id, c);
    return {};
  }
  if (c.phase != Phase::Reading || c.in.size() < 4) return {};
  const std::uint8_t* p = c.in.data();
  std::size_t pre = 0;  // bytes before the 40-byte header
  if (p[0] < 0x20) {
    c.auth = false;
    if (keys_[0]) return "an unauthenticated request (this server requires a key)";
  } else if (p[0] == 0x80) {
    if (p[1] != 0x00) return "unknown version of SHA-1 authentication";
    c.auth = true;
    c.level = p[3];
    if (!keys_[c.level]) return "an authenticated request for security level " + std::to_string(c.level) + ", which has no key";
    if (p[2] == 0x01) {  // the salt exchange: the client's challenge s1, ours s2, then its proof
      if (c.in.size() < 8) return {};
      if (c.in.size() > 8) return "bytes after the salt request";
      c.s1 = get_be32(p + 4);
      c.s2 = next_random();
      c.in.clear();
      c.out.resize(4);
      put_be32(c.out.data(), c.s2);
      // A 4-byte answer to a client that waits for it: the socket takes it at once.
      if (::send(c.fd, c.out.data(), 4, MSG_NOSIGNAL) != 4) return "could not send the challenge";
      c.out.clear();
      c.phase = Phase::SaltWait;
      return {};
    }
    if (p[2] != 0x00) return "unknown SHA-1 request type";
    pre = 32;  // type, client id, reply salt, hash
    if (c.in.size() < pre + kWireHeader) return {};
    if (!c.verified) {
      const std::uint32_t client = get_be32(p + 4);
      if (client >= client_salts_.size()) return "unknown client number (no salt exchange came first)";
      const Sha1 want = auth_hash(*keys_[c.level], client_salts_[client], p + pre);
      if (std::memcmp(want.data(), p + 12, want.size()) != 0)
        return "the request's authentication hash differs (a wrong key, or a replayed request)";
      ++client_salts_[client];
      c.reply_salt = get_be32(p + 8);
      c.verified = true;
    }
  } else {
    return "not a CCS request (unknown authentication byte)";
  }
  if (c.in.size() < pre + kWireHeader) return {};
  const std::uint8_t* hdr = p + pre;
  const auto len = static_cast<std::int32_t>(get_be32(hdr));
  const auto dest = static_cast<std::int32_t>(get_be32(hdr + 4));
  if (len < 0 || static_cast<std::size_t>(len) > kMaxRequestBytes)
    return "a request of " + std::to_string(len) + " bytes (at most " + std::to_string(kMaxRequestBytes) + ")";
  std::size_t pes_bytes = 0;
  if (dest < -1) {
    if (-static_cast<std::int64_t>(dest) > CmiNumPes())
      return "a multicast to " + std::to_string(-static_cast<std::int64_t>(dest)) + " PEs (the job has " +
             std::to_string(CmiNumPes()) + ")";
    pes_bytes = 4 * static_cast<std::size_t>(-static_cast<std::int64_t>(dest));
  }
  const std::size_t total = pre + kWireHeader + pes_bytes + static_cast<std::size_t>(len);
  if (c.in.size() < total) return {};
  if (c.in.size() > total) return "bytes after the request (one request per connection)";
  if (std::memchr(hdr + 8, '\0', kNameBytes) == nullptr) return "a handler name without its NUL (32 bytes or more)";
  // Whole: the rest is decided by the request's content (replies, never a refusal).
  c.phase = Phase::Waiting;
  watch(id, c.fd, 0, false);  // nothing more is read from it
  dispatch(id, c, hdr, hdr + kWireHeader, hdr + kWireHeader + pes_bytes);
  return {};
}

void Server::dispatch(std::uint64_t id, Conn& c, const std::uint8_t* hdr, const std::uint8_t* pes,
                      const std::uint8_t* data) {
  const auto len = static_cast<std::int32_t>(get_be32(hdr));
  const auto dest = static_cast<std::int32_t>(get_be32(hdr + 4));
  c.name.assign(reinterpret_cast<const char*>(hdr + 8));
  c.dest = dest;
  std::vector<int> targets;
  if (dest >= 0) {
    if (dest >= CmiNumPes()) {
      std::printf("ccs: request for handler '%s' names PE %d, but the job has %d: empty reply\n", c.name.c_str(), dest,
                  CmiNumPes());
      c.expected = 1;
      return deliver(id, 0, 0, nullptr);
    }
    targets.push_back(dest);
  } else if (dest < -1) {
    for (std::int32_t i = 0; i < -dest; ++i) {
      const auto pe = static_cast<std::int32_t>(get_be32(pes + 4 * i));
      if (pe < 0 || pe >= CmiNumPes() || std::find(targets.begin(), targets.end(), pe) != targets.end()) {
        std::printf("ccs: multicast request for handler '%s' names PE %d twice or out of [0, %d): empty reply\n",
                    c.name.c_str(), pe, CmiNumPes());
        c.expected = 1;
        return deliver(id, 0, 0, nullptr);
      }
      targets.push_back(pe);
    }
  }
  c.expected = dest == -1 ? CmiNumPes() : static_cast<int>(targets.size());
  const std::size_t size = CmiMsgHeaderSizeBytes + sizeof(RequestMsg) + static_cast<std::size_t>(len);
  void* m = CmiAlloc(size);
  CmiSetHandler(m, st().h_request);
  RequestMsg rq{id, dest, len, {}};
  std::memcpy(rq.name, c.name.c_str(), c.name.size() + 1);
  std::memcpy(CmiMsgPayload(m), &rq, sizeof rq);
  if (len) std::memcpy(CmiMsgPayload(m) + sizeof rq, data, static_cast<std::size_t>(len));
  if (dest == -1) return CmiSyncBroadcastAllAndFree(size, m);
  for (std::size_t i = 0; i + 1 < targets.size(); ++i) CmiSyncSend(targets[i], size, m);
  CmiSyncSendAndFree(targets.back(), size, m);
}

void Server::deliver(std::uint64_t id, int from_pe, int len, const void* data) {
  auto it = conns_.find(id);
  if (it == conns_.end() || it->second.phase != Phase::Waiting) {
    std::fprintf(stderr, "ucharm: CCS: a reply from PE %d for a request already answered (or unknown): dropped\n",
                 from_pe);
    return;
  }
  Conn& c = it->second;
  if (len < 0 && c.expected == 1) return close_conn(id);  // CcsNoReply
  const auto* b = static_cast<const std::uint8_t*>(data);
  c.replies.emplace_back(from_pe, len > 0 ? std::vector<std::uint8_t>(b, b + len) : std::vector<std::uint8_t>{});
  if (static_cast<int>(c.replies.size()) < c.expected) return;
  std::vector<std::uint8_t> reply;
  if (c.replies.size() == 1) {
    reply = std::move(c.replies.front().second);
  } else {
    std::sort(c.replies.begin(), c.replies.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    auto h = st().handlers.find(c.name);
    if (h != st().handlers.end() && h->second.merge) {
      std::vector<const void*> rem;
      std::vector<int> lens;
      for (std::size_t i = 1; i < c.replies.size(); ++i) {
        rem.push_back(c.replies[i].second.data());
        lens.push_back(static_cast<int>(c.replies[i].second.size()));
      }
      int size = 0;
      void* merged = h->second.merge(&size, c.replies[0].second.data(), static_cast<int>(c.replies[0].second.size()),
                                     rem.data(), lens.data(), static_cast<int>(rem.size()));
      if (merged && size > 0) reply.assign(static_cast<std::uint8_t*>(merged), static_cast<std::uint8_t*>(merged) + size);
      std::free(merged);
    } else {
      for (auto& [pe, bytes] : c.replies) reply.insert(reply.end(), bytes.begin(), bytes.end());
    }
  }
  c.replies.clear();
  c.out.clear();
  if (c.auth) {
    const Sha1 h = auth_hash(*keys_[c.level], c.reply_salt, nullptr);
    c.out.assign(h.begin(), h.end());
  }
  const std::size_t at = c.out.size();
  c.out.resize(at + 4);
  put_be32(c.out.data() + at, static_cast<std::uint32_t>(reply.size()));
  c.out.insert(c.out.end(), reply.begin(), reply.end());
  start_write(id, c);
}

void Server::start_write(std::uint64_t id, Conn& c) {
  c.phase = Phase::Writing;
  c.out_done = 0;
  on_writable(id);
}

void Server::on_writable(std::uint64_t id) {
  Conn& c = conns_.at(id);
  while (c.out_done < c.out.size()) {
    const ssize_t w = ::send(c.fd, c.out.data() + c.out_done, c.out.size() - c.out_done, MSG_NOSIGNAL);
    if (w > 0) {
      c.out_done += static_cast<std::size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      watch(id, c.fd, EPOLLOUT, false);  // the rest when the client has read some
      return;
    }
    break;  // the client went away: nothing more to do for it
  }
  close_conn(id);
}

void Server::refuse(std::uint64_t id, const std::string& why) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  std::fprintf(stderr, "ucharm: CCS server: refused a request from %s: %s\n", it->second.peer.c_str(), why.c_str());
  close_conn(id);
}

void Server::close_conn(std::uint64_t id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second.fd, nullptr);
  ::close(it->second.fd);
  conns_.erase(it);
}

namespace {
void deliver_reply(std::uint64_t id, int from_pe, int len, const void* data) {
  State& s = st();
  if (!s.server) {
    std::fprintf(stderr, "ucharm: CCS: a reply arrived on PE %d, which runs no server: dropped\n", CmiMyPe());
    return;
  }
  s.server->deliver(id, from_pe, len, data);
}
}  // namespace

State::State() = default;
State::~State() = default;

std::string init(bool enabled, int server_port, const std::string& auth_file, const std::string& ip) {
  PeState& ps = pe_state();
  if (!ps.ccs) ps.ccs = std::make_unique<State>();
  State& s = *ps.ccs;
  s.h_request = CmiRegisterHandler(request_handler);
  s.h_reply = CmiRegisterHandler(reply_handler);
  s.enabled = enabled;
  CcsRegisterHandlerFn("ccs_getinfo", getinfo, nullptr);
  if (enabled && CmiMyPe() == 0) {
    s.server = std::make_unique<Server>(server_port, auth_file, ip);
    ps.ccs_server = true;
  }
  return {};
}

bool poll() { return st().server->poll(); }

}  // namespace ucharm::converse::ccs

// ---- the API ---------------------------------------------------------------------------------

using namespace ucharm::converse;

static ccs::State& ccs_state() {
  PeState& ps = pe_state();
  if (!ps.ccs) ps.ccs = std::make_unique<ccs::State>();  // handlers registered before ConverseInit
  return *ps.ccs;
}

static void check_name(const char* name, const char* who) {
  if (!name || !*name) CmiAbort("%s: a CCS handler needs a name", who);
  if (std::strlen(name) > static_cast<std::size_t>(CcsMaxHandlerName))
    CmiAbort("%s: the CCS handler name '%s' is longer than %d bytes", who, name, CcsMaxHandlerName);
}

void CcsRegisterHandler(const char* name, CmiHandler fn) {
  check_name(name, "CcsRegisterHandler");
  ccs::Handler& h = ccs_state().handlers[name];
  h.old_style = fn;
  h.fn = nullptr;
}

void CcsRegisterHandlerFn(const char* name, CcsHandlerFn fn, void* user) {
  check_name(name, "CcsRegisterHandlerFn");
  ccs::Handler& h = ccs_state().handlers[name];
  h.old_style = nullptr;
  h.fn = fn;
  h.user = user;
}

void CcsSetMergeFn(const char* name, CcsMergeFn fn) {
  auto& hs = ccs_state().handlers;
  auto it = hs.find(name ? name : "");
  if (it == hs.end()) CmiAbort("CcsSetMergeFn: no CCS handler '%s' is registered on PE %d", name ? name : "", CmiMyPe());
  it->second.merge = fn;
}

int CcsEnabled() { return ccs_state().enabled ? 1 : 0; }
int CcsIsRemoteRequest() { return ccs_state().current.pending ? 1 : 0; }

void CcsSendReply(int len, const void* data) {
  ccs::State& s = ccs_state();
  if (!s.current.pending) CmiAbort("CcsSendReply: no CCS request is waiting for a reply here (already sent or delayed)");
  if (len < 0) CmiAbort("CcsSendReply: negative reply length %d", len);
  s.current.pending = false;
  ccs::send_reply(s.current.id, len, data);
}

void CcsNoReply() {
  ccs::State& s = ccs_state();
  if (!s.current.pending) return;
  s.current.pending = false;
  ccs::send_reply(s.current.id, -1, nullptr);
}

CcsDelayedReply CcsDelayReply() {
  ccs::State& s = ccs_state();
  if (!s.current.pending) CmiAbort("CcsDelayReply: no CCS request is waiting for a reply here (already sent or delayed)");
  s.current.pending = false;
  return CcsDelayedReply{s.current.id, CmiMyPe(), s.current.dest};
}

void CcsSendDelayedReply(CcsDelayedReply d, int len, const void* data) {
  if (d.id == 0) CmiAbort("CcsSendDelayedReply: not a token of CcsDelayReply");
  if (len < 0) CmiAbort("CcsSendDelayedReply: negative reply length %d", len);
  ccs::send_reply(d.id, len, data);
}

void CcsNoDelayedReply(CcsDelayedReply d) {
  if (d.id == 0) CmiAbort("CcsNoDelayedReply: not a token of CcsDelayReply");
  ccs::send_reply(d.id, -1, nullptr);
}

int CcsServerPort() {
  const ccs::State& s = ccs_state();
  return s.server ? s.server->port() : 0;
}

const char* CcsServerAddress() {
  const ccs::State& s = ccs_state();
  return s.server ? s.server->address().c_str() : "";
}
