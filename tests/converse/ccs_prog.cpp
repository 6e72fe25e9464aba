// CCS through a real job: every PE registers handlers, PE 0 runs the server (+server), and a
// client thread of PE 0's process talks to it over TCP as an outside program would (the
// wire protocol written out here, Charm++'s). It checks each answer; at the end it hands
// the verdict to PE 0, which ends the job. Modes:
//   plain  requests to every PE, delayed replies (from another PE), broadcasts (concatenated
//          and merged), multicasts, Converse-style handlers, unknown handlers and PEs, a 4 MiB
//          reply, then malformed, oversized, truncated and unauthenticated-looking input,
//          after which the server still answers
//   auth KEYFILE KEY  the server requires a key (+server-auth KEYFILE): the salt exchange and
//          authenticated requests with KEY; an unauthenticated request and a wrong key are
//          refused
#include <ucharm/converse.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ccs.h"  // the client's side of the authentication (runtime/converse/ccs_auth.cpp)

namespace {

namespace auth = ucharm::converse::ccs;
using Bytes = std::vector<std::uint8_t>;

std::string g_mode;
std::string g_key;
int g_port = 0;
std::thread g_client;
int g_failures = 0;
int h_pass_token = -1;

// ---- the server side: handlers --------------------------------------------------------------

void reply_str(const std::string& s) { CcsSendReply(static_cast<int>(s.size()), s.data()); }

void echo(void*, int len, const void* data) {
  reply_str("pe " + std::to_string(CmiMyPe()) + ": " + std::string(static_cast<const char*>(data), len));
}

void be_pe(void*, int, const void*) {  // a broadcast's part: this PE's number, big-endian
  const std::uint32_t v = htonl(static_cast<std::uint32_t>(CmiMyPe()));
  CcsSendReply(4, &v);
}

void nothing(void*, int, const void*) {}  // no reply: the server sends an empty one

void big(void*, int, const void*) {
  std::string s(4u << 20, 'x');
  for (std::size_t i = 0; i < s.size(); i += 4096) s[i] = static_cast<char>('a' + (i / 4096) % 26);
  reply_str(s);
}

// A Converse-style handler: the request's data in a message it frees.
void old_style(void* msg) {
  const std::size_t n = CmiMsgSize(msg) - CmiMsgHeaderSizeBytes;
  std::string s(CmiMsgPayload(msg), n);
  CmiFree(msg);
  reply_str("old " + std::to_string(n) + " " + s);
}

// Delayed: the token travels to the next PE, which replies from there.
struct TokenMsg {
  CmiMsgHeader h;
  CcsDelayedReply d;
  int from;
};
void delayed(void*, int, const void*) {
  TokenMsg* m = static_cast<TokenMsg*>(CmiAlloc(sizeof(TokenMsg)));
  CmiSetHandler(m, h_pass_token);
  m->d = CcsDelayReply();
  m->from = CmiMyPe();
  if (CcsIsRemoteRequest()) reply_str("CcsIsRemoteRequest after CcsDelayReply");  // never: checked by the client
  CmiSyncSendAndFree((CmiMyPe() + 1) % CmiNumPes(), sizeof(TokenMsg), m);
}
void pass_token(void* msg) {
  auto* m = static_cast<TokenMsg*>(msg);
  const std::string s = "delayed from " + std::to_string(m->from) + " sent by " + std::to_string(CmiMyPe());
  CcsSendDelayedReply(m->d, static_cast<int>(s.size()), s.data());
  CmiFree(msg);
}

// Sum of big-endian ints (registered as the "sum" handler's merge function).
void* merge_sum(int* size, const void* local, int local_len, const void* const* remote, const int* lens, int n) {
  std::uint32_t sum = 0, v;
  if (local_len == 4) std::memcpy(&v, local, 4), sum += ntohl(v);
  for (int i = 0; i < n; ++i)
    if (lens[i] == 4) std::memcpy(&v, remote[i], 4), sum += ntohl(v);
  auto* out = static_cast<std::uint32_t*>(std::malloc(4));
  *out = htonl(sum);
  *size = 4;
  return out;
}

// ---- the client (a thread of PE 0's process) ---------------------------------------------------

void put32(Bytes& b, std::uint32_t v) {
  const std::uint32_t n = htonl(v);
  const std::size_t at = b.size();
  b.resize(at + 4);
  std::memcpy(b.data() + at, &n, 4);
}

int connect_server() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(g_port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{30, 0};  // a lost reply fails the test instead of hanging it
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

bool send_all(int fd, const Bytes& b) {
  std::size_t done = 0;
  while (done < b.size()) {
    const ssize_t w = ::send(fd, b.data() + done, b.size() - done, MSG_NOSIGNAL);
    if (w <= 0) return false;
    done += static_cast<std::size_t>(w);
  }
  return true;
}

// Reads exactly n bytes; false at end of stream or error.
bool recv_all(int fd, std::uint8_t* p, std::size_t n) {
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

Bytes header(const std::string& handler, int pe, std::size_t len) {
  Bytes b(40, 0);
  const std::uint32_t v[2] = {htonl(static_cast<std::uint32_t>(len)), htonl(static_cast<std::uint32_t>(pe))};
  std::memcpy(b.data(), v, 8);
  std::memcpy(b.data() + 8, handler.data(), std::min<std::size_t>(handler.size(), 31));
  return b;
}

void append(Bytes& b, const std::uint8_t* p, std::size_t n) {
  const std::size_t at = b.size();
  b.resize(at + n);
  if (n) std::memcpy(b.data() + at, p, n);
}

// An authenticated client: its id and salt from the exchange.
struct Session {
  std::optional<auth::Key> key;
  std::uint32_t id = 0, salt = 0;
};

// The salt exchange; false when the server refused it.
bool open_session(Session& s) {
  int fd = connect_server();
  Bytes b = {0x80, 0x00, 0x01, 0x00};
  const std::uint32_t s1 = 0x1234567u;
  put32(b, s1);
  std::uint8_t s2b[4], reply[28];
  bool ok = send_all(fd, b) && recv_all(fd, s2b, 4);
  if (ok) {
    const auth::Sha1 h = auth::auth_hash(*s.key, ntohl(*reinterpret_cast<std::uint32_t*>(s2b)), nullptr);
    ok = send_all(fd, Bytes(h.begin(), h.end())) && recv_all(fd, reply, 28);
  }
  ::close(fd);
  if (!ok) return false;
  const auth::Sha1 proof = auth::auth_hash(*s.key, s1, nullptr);
  if (std::memcmp(proof.data(), reply, 20) != 0) return false;  // the server does not know the key
  s.id = ntohl(*reinterpret_cast<std::uint32_t*>(reply + 20));
  s.salt = ntohl(*reinterpret_cast<std::uint32_t*>(reply + 24));
  return true;
}

// One request; the reply, or nothing when the connection closed without one.
std::optional<Bytes> request(const std::string& handler, int pe, const std::string& data,
                             const std::vector<int>& pes = {}, Session* s = nullptr) {
  int fd = connect_server();
  if (fd < 0) return std::nullopt;
  Bytes hdr = header(handler, pe, data.size()), b;
  const std::uint32_t reply_salt = 0xabcdef;
  if (s) {
    b = {0x80, 0x00, 0x00, 0x00};
    put32(b, s->id);
    put32(b, reply_salt);
    const auth::Sha1 h = auth::auth_hash(*s->key, s->salt++, hdr.data());
    append(b, h.data(), h.size());
  }
  append(b, hdr.data(), hdr.size());
  for (int p : pes) put32(b, static_cast<std::uint32_t>(p));
  b.insert(b.end(), data.begin(), data.end());
  std::optional<Bytes> out;
  std::uint8_t hash[20], len[4];
  if (send_all(fd, b) && (!s || recv_all(fd, hash, 20)) && recv_all(fd, len, 4)) {
    Bytes r(ntohl(*reinterpret_cast<std::uint32_t*>(len)));
    if (recv_all(fd, r.data(), r.size())) out = std::move(r);
    if (s && out && auth::auth_hash(*s->key, reply_salt, nullptr) != *reinterpret_cast<auth::Sha1*>(hash)) {
      std::printf("FAIL: the reply's authentication hash differs\n");
      ++g_failures;
    }
  }
  ::close(fd);
  return out;
}

// Sends raw bytes, then half-closes; true when the server closed the connection without a reply.
bool refused(const Bytes& raw, bool half_close = true) {
  int fd = connect_server();
  send_all(fd, raw);
  if (half_close) ::shutdown(fd, SHUT_WR);
  std::uint8_t c;
  const ssize_t r = ::recv(fd, &c, 1, 0);
  ::close(fd);
  return r == 0;
}

std::string str(const std::optional<Bytes>& b) { return b ? std::string(b->begin(), b->end()) : "<closed>"; }

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what.c_str());
    ++g_failures;
  }
}
void expect_eq(const std::optional<Bytes>& got, const std::string& want, const std::string& what) {
  expect(got && str(got) == want, what + ": got '" + str(got).substr(0, 200) + "', expected '" + want + "'");
}

void run_plain() {
  const int n = CmiNumPes();
  // ccs_getinfo, as Charm++'s CcsConnect asks: nodes, then PEs per node.
  auto info = request("ccs_getinfo", 0, "");
  expect(info && info->size() == 4u * (n + 1) && (*info)[3] == n, "ccs_getinfo names " + std::to_string(n) + " nodes");
  for (int pe = 0; pe < n; ++pe) expect_eq(request("echo", pe, "hi"), "pe " + std::to_string(pe) + ": hi", "echo");
  for (int pe = 0; pe < n; ++pe)
    expect_eq(request("delayed", pe, ""),
              "delayed from " + std::to_string(pe) + " sent by " + std::to_string((pe + 1) % n), "delayed reply");
  expect_eq(request("old", n - 1, "abc"), "old 3 abc", "Converse-style handler");
  expect_eq(request("nothing", n - 1, "x"), "", "a handler without a reply: empty reply");
  expect_eq(request("no_such_handler", 0, "x"), "", "unknown handler: empty reply");
  expect_eq(request("echo", n + 3, "x"), "", "PE out of range: empty reply");
  // Broadcast: every PE's number in PE order; with a merge function, their sum.
  std::string want;
  for (int pe = 0; pe < n; ++pe) want += std::string{0, 0, 0, static_cast<char>(pe)};
  expect_eq(request("pe", -1, ""), want, "broadcast (concatenated)");
  const std::uint32_t sum = htonl(static_cast<std::uint32_t>(n * (n - 1) / 2));
  expect_eq(request("sum", -1, ""), std::string(reinterpret_cast<const char*>(&sum), 4), "broadcast (merged)");
  if (n >= 2) {  // multicast to the last PE and PE 0, replies in PE order
    expect_eq(request("pe", -2, "", {n - 1, 0}),
              std::string{0, 0, 0, 0} + std::string{0, 0, 0, static_cast<char>(n - 1)}, "multicast");
    expect_eq(request("pe", -2, "", {0, 0}), "", "multicast naming a PE twice: empty reply");
  }
  auto b = request("big", n - 1, "");
  expect(b && b->size() == (4u << 20) && (*b)[4096] == 'b', "4 MiB reply");
  // Requests the server must refuse (closing the connection) without harm.
  expect(refused({0x41, 0x42, 0x43, 0x44, 0, 0, 0, 0}), "unknown protocol byte refused");
  Bytes huge = header("echo", 0, 0x1f000000);
  expect(refused(huge), "oversized request refused");
  Bytes neg = header("echo", -(n + 1), 0);
  expect(refused(neg), "multicast to more PEs than the job has refused");
  Bytes longname = header("echo", 0, 0);
  std::memset(longname.data() + 8, 'a', 32);
  expect(refused(longname), "handler name without NUL refused");
  Bytes half = header("echo", 0, 100);
  half.resize(half.size() + 10);
  expect(refused(half), "truncated request: closed");
  expect(refused({0x80, 0x00, 0x00, 0x00, 0, 0, 0, 0}), "authenticated request to a server without keys refused");
  Bytes extra = header("echo", 0, 1);
  extra.push_back('x');
  extra.push_back('y');
  expect(refused(extra, false), "bytes after the request refused");
  // Many clients at once, then the server still answers.
  std::vector<int> open_fds;
  for (int i = 0; i < 20; ++i) open_fds.push_back(connect_server());
  expect_eq(request("echo", 0, "still here"), "pe 0: still here", "server alive after bad input");
  for (int fd : open_fds) ::close(fd);
  expect_eq(request("echo", n - 1, "end"), "pe " + std::to_string(n - 1) + ": end", "server alive at the end");
}

void run_auth() {
  Session good;
  good.key = auth::parse_key(g_key);
  expect(open_session(good), "salt exchange with the right key");
  expect_eq(request("echo", 0, "a", {}, &good), "pe 0: a", "authenticated request");
  expect_eq(request("echo", CmiNumPes() - 1, "b", {}, &good), "pe " + std::to_string(CmiNumPes() - 1) + ": b",
            "second authenticated request (the salt advanced)");
  Session replay = good;
  --replay.salt;  // an old salt: a replayed request
  expect(!request("echo", 0, "c", {}, &replay), "replayed request refused");
  expect(!request("echo", 0, "d"), "unauthenticated request refused");
  Session bad;
  bad.key = auth::parse_key("99999999999999999999999999999999");
  expect(!open_session(bad), "salt exchange with a wrong key refused");
  Session forged = good;
  forged.key = bad.key;
  expect(!request("echo", 0, "e", {}, &forged), "request hashed with a wrong key refused");
  expect_eq(request("echo", 0, "f", {}, &good), "pe 0: f", "the right client still served");
}

CmiForeignWork g_done;

void finish(CmiForeignWork*) {
  g_client.join();
  std::printf("ccs %s: %d failures, %d PEs\n", g_mode.c_str(), g_failures, CmiNumPes());
  CmiExit(g_failures == 0 ? 0 : 1);
}

void start(int argc, char** argv) {
  g_mode = argc > 1 ? argv[1] : "plain";
  if (argc > 3) g_key = argv[3];
  CcsRegisterHandlerFn("echo", echo, nullptr);
  CcsRegisterHandlerFn("pe", be_pe, nullptr);
  CcsRegisterHandlerFn("sum", be_pe, nullptr);
  CcsSetMergeFn("sum", merge_sum);
  CcsRegisterHandlerFn("nothing", nothing, nullptr);
  CcsRegisterHandlerFn("big", big, nullptr);
  CcsRegisterHandlerFn("delayed", delayed, nullptr);
  CcsRegisterHandler("old", old_style);
  h_pass_token = CmiRegisterHandler(pass_token);
  CmiBarrier();  // every PE's handlers are in place before the first request
  if (CmiMyPe() != 0) return;
  if (!CcsEnabled() || CcsServerPort() == 0) {
    std::printf("FAIL: no CCS server (run with +server)\n");
    CmiExit(1);
  }
  g_port = CcsServerPort();
  g_client = std::thread([] {
    if (g_mode == "auth") run_auth();
    else run_plain();
    g_done.run = finish;
    CmiPushForeignWork(&g_done);
  });
}

}  // namespace

int main(int argc, char** argv) { ConverseInit(argc, argv, start); }
