// CCS (Converse Client-Server), internal: the per-PE handler table and request context, the
// server of PE 0 (ccs.cpp), and the SHA-1 authentication of Charm++'s protocol.
#pragma once

#include <ucharm/converse.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace ucharm::converse::ccs {

// ---- Charm++'s CCS authentication ------------------------------------------------------
using Sha1 = std::array<std::uint8_t, 20>;
Sha1 sha1(const void* data, std::size_t len);
using Key = std::array<std::uint8_t, 16>;
// A key as Charm++'s key files and clients write it: two characters per byte, each pair read
// as a decimal number (a pair that is not one ends the key; the rest stays zero).
std::optional<Key> parse_key(std::string_view text);
// SHA-1 of key, big-endian salt and (optionally) the first 16 bytes of a request header,
// zero-padded to 52 bytes: what client and server prove they know the key with.
Sha1 auth_hash(const Key& key, std::uint32_t salt, const void* header16);

// The wire header of a request (40 bytes, integers big-endian).
inline constexpr std::size_t kWireHeader = 40;
inline constexpr std::size_t kNameBytes = 32;

struct Handler {
  CmiHandler old_style = nullptr;
  CcsHandlerFn fn = nullptr;
  void* user = nullptr;
  CcsMergeFn merge = nullptr;
};

class Server;

// Every PE's part: the handlers and the request a handler is running for.
struct State {
  std::unordered_map<std::string, Handler> handlers;
  struct Current {
    bool pending = false;  // a reply is due from the running handler
    std::uint64_t id = 0;
    std::int32_t dest = 0;
  } current;
  int h_request = -1, h_reply = -1;
  bool enabled = false;            // the job runs a server (every PE learns it at start-up)
  std::unique_ptr<Server> server;  // PE 0, when enabled
  State();
  ~State();
};

// Start-up: registers the Converse handlers (every PE, same order) and, on PE 0 when the
// options ask for it, starts the server. Returns an error message or empty.
std::string init(bool enabled, int server_port, const std::string& auth_file, const std::string& ip);
// PE 0's scheduler: serves the sockets (new connections, request bytes, reply bytes).
// Returns true when it did something. Never blocks.
bool poll();

}  // namespace ucharm::converse::ccs
