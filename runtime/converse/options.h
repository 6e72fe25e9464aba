// Runtime options: the launcher's environment (UCHARM_*) first, then +options on the
// program's command line, which are removed from argv. Parsing is strict: an unknown
// option or a bad value is an error naming it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace ucharm::converse {

struct RuntimeOptions {
  std::size_t eager_size = 32 * 1024;
  int prepost = 64;
  // Flow control (see docs/architecture.md): bytes in flight from this PE to one other
  // before it waits for credit, and bytes waiting for credit before a sender is held.
  std::size_t flow_window = 4u << 20;
  std::size_t send_queue_limit = 64u << 20;
  // Large host messages between PEs of one host go in copied fragments of this size
  // (0: one rendezvous each; see the machine layer's Options).
  long long large_fragment = -1;  // -1: 128k, or 0 with more PEs than cores
  std::size_t stack_size = 1 << 20;
  // -1: chosen at start-up: 50, or 0 when this host has more PEs than cores (a PE that
  // polls there takes the core from the PE that has work).
  int idle_spin_us = -1;
  bool bind = true;
  bool verbose = false;
  // The CCS server on PE 0 (+server, +server-port N, +server-auth FILE, +server-ip ADDR;
  // Charm++'s charmrun spells them ++server...). Port 0: one the system picks.
  bool server = false;
  int server_port = 0;
  std::string server_auth;               // Charm++'s CCS key file; empty: no authentication
  std::string server_ip = "127.0.0.1";  // the address it listens on
};

// Options of the layers above (CmiRegisterOption): name without '+', takes a value.
std::vector<std::pair<std::string, bool>>& layer_options();

// Returns an error message, or nothing on success. `argc`/`argv` are compacted in place.
std::optional<std::string> parse_runtime_options(int& argc, char** argv, RuntimeOptions& out,
                                                 const char* const* envp = nullptr);

}  // namespace ucharm::converse
