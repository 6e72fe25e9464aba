// Converse ping-pong between PE 0 and PE 1 (OSU-style table): for each payload size,
// PE 0 sends, PE 1 sends the same message straight back (no copy), repeated; one-way
// latency is half the round trip, bandwidth is size / one-way latency.
//   ucharmrun -n 2 converse_pingpong [--min 1] [--max 4M] [--iters 10000] [--warmup 1000]
#include <ucharm/converse.h>

#include <CLI/CLI.hpp>

#include "../common/sizes.h"
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace {

struct Bench {
  std::size_t min = 1, max = 4u << 20, size = 0;
  int iters = 10000, warmup = 1000;
  int todo = 0, total = 0;
  double t0 = 0;
  int h_ping = -1, h_pong = -1;
};
Bench b;

int iters_for(std::size_t size) { return ucharm::bench::iterations_for(size, b.iters); }

void send_ping(void* msg) {
  CmiSetHandler(msg, b.h_ping);
  CmiSyncSendAndFree(1, CmiMsgHeaderSizeBytes + b.size, msg);
}

void start_size() {
  b.total = iters_for(b.size);
  b.todo = b.total + b.warmup;
  void* msg = CmiAlloc(CmiMsgHeaderSizeBytes + b.size);
  std::memset(CmiMsgPayload(msg), 1, b.size);
  send_ping(msg);
}

void ping_handler(void* msg) {  // on PE 1: bounce
  CmiSetHandler(msg, b.h_pong);
  CmiSyncSendAndFree(0, CmiMsgSize(msg), msg);
}

void pong_handler(void* msg) {  // on PE 0
  if (--b.todo == b.total) b.t0 = CmiWallTimer();  // warm-up done
  if (b.todo > 0) {
    send_ping(msg);
    return;
  }
  double us = (CmiWallTimer() - b.t0) * 1e6 / (2.0 * b.total);
  CmiPrintf("%-12zu %14.3f %16.2f\n", b.size, us, b.size / us);
  CmiFree(msg);
  if (b.size >= b.max) CmiExit(0);
  b.size = b.size == 0 ? 1 : b.size * 2;
  start_size();
}

void start(int argc, char** argv) {
  CLI::App app{"Converse ping-pong"};
  ucharm::bench::SizeRange sizes(app, "1", "4M");
  app.add_option("--iters", b.iters, "round trips per small size")->check(CLI::PositiveNumber);
  app.add_option("--warmup", b.warmup, "round trips before timing")->check(CLI::NonNegativeNumber);
  try {
    app.parse(argc, argv);
    sizes.parse(b.min, b.max);
  } catch (const CLI::ParseError& e) {
    std::exit(CmiMyPe() == 0 ? app.exit(e) : 2);
  } catch (const std::exception& e) {
    if (CmiMyPe() == 0) CmiError("converse_pingpong: %s\n", e.what());
    std::exit(2);
  }
  b.h_ping = CmiRegisterHandler(ping_handler);
  b.h_pong = CmiRegisterHandler(pong_handler);
  if (CmiNumPes() < 2) CmiAbort("converse_pingpong needs at least 2 PEs (ucharmrun -n 2 ...)");
  if (CmiMyPe() != 0) return;
  CmiPrintf("# ucharm Converse ping-pong, PE 0 <-> PE 1, %d PEs\n", CmiNumPes());
  CmiPrintf("%-12s %14s %16s\n", "# size(B)", "latency(us)", "bandwidth(MB/s)");
  b.size = b.min;
  start_size();
}

}  // namespace

int main(int argc, char** argv) { ConverseInit(argc, argv, start); }
