// Converse message rate between PE 0 and PE 1, the pattern of `ucx_perftest -t tag_bw`'s
// message-rate figure: PE 0 sends a window of messages (64 by default) with CmiSyncSend,
// PE 1 frees each and answers every full window with one header-only ack, PE 0 sends the
// next window when the ack arrives. Rate = messages / time after the warm-up windows;
// bandwidth = bytes / time (MB = 1e6 bytes).
//   ucharmrun -n 2 converse_rate [--min 8] [--max 8] [--window 64] [--iters 1000000] [--warmup 64]
//                                [--max-bytes 256M]
//   ucharmrun -n 2 converse_rate --idle 2   # no traffic: PEs sit idle 2 s (for RSS readings)
#include <ucharm/converse.h>

#include <CLI/CLI.hpp>

#include "../common/sizes.h"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Bench {
  std::size_t min = 8, max = 8, size = 0;
  int window = 64, iters = 1000000, warmup = 64;  // iters: messages per small size
  std::size_t max_bytes = std::size_t{256} << 20;  // timed bytes per size at most
  double idle = 0;
  int windows_left = 0, windows_timed = 0, received = 0;
  double t0 = 0;
  int h_data = -1, h_ack = -1, h_idle = -1;
  std::vector<char> msg;  // header + payload, copied by every CmiSyncSend
  std::vector<char> ack;  // header only
};
Bench b;

void send_window() {
  for (int i = 0; i < b.window; ++i) CmiSyncSend(1, b.msg.size(), b.msg.data());
}

void start_size() {
  b.msg.assign(CmiMsgHeaderSizeBytes + b.size, 1);
  CmiSetHandler(b.msg.data(), b.h_data);
  // Large sizes: fewer messages (as the ping-pong does) and at most --max-bytes timed, at
  // least 2 windows; the warm-up at most a quarter of the timed windows.
  std::size_t cap = b.max_bytes / std::max<std::size_t>(b.size, 1);
  std::size_t msgs = std::min<std::size_t>(ucharm::bench::iterations_for(b.size, b.iters), cap);
  b.windows_timed = std::max(2, static_cast<int>(msgs / b.window));
  b.windows_left = b.windows_timed + std::min(b.warmup, std::max(1, b.windows_timed / 4));
  send_window();
}

void data_handler(void* msg) {  // on PE 1
  CmiFree(msg);
  if (++b.received < b.window) return;
  b.received = 0;
  CmiSyncSend(0, b.ack.size(), b.ack.data());
}

void ack_handler(void* msg) {  // on PE 0: one window arrived
  CmiFree(msg);
  if (--b.windows_left == b.windows_timed) b.t0 = CmiWallTimer();  // warm-up done
  if (b.windows_left > 0) {
    send_window();
    return;
  }
  double s = CmiWallTimer() - b.t0;
  double n = static_cast<double>(b.windows_timed) * b.window;
  CmiPrintf("%-12zu %16.0f %16.2f\n", b.size, n / s, n * static_cast<double>(b.size) / s / 1e6);
  if (b.size >= b.max) CmiExit(0);
  b.size = b.size == 0 ? 1 : b.size * 2;
  start_size();
}

// --idle: PE 1 answers one message so that both PEs are connected (like MPI_Barrier),
// then PE 1 idles in the scheduler and PE 0 sleeps, both for the given time.
void idle_handler(void* msg) {
  if (CmiMyPe() == 1) {
    CmiSyncSendAndFree(0, CmiMsgHeaderSizeBytes, msg);
    return;
  }
  CmiFree(msg);
  std::printf("idle %d PEs\n", CmiNumPes());
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::duration<double>(b.idle));
  CmiExit(0);
}

void start(int argc, char** argv) {
  CLI::App app{"Converse message rate"};
  ucharm::bench::SizeRange sizes(app, "8", "8");
  app.add_option("--window", b.window, "messages per window (one ack per window)")->check(CLI::PositiveNumber);
  app.add_option("--iters", b.iters, "messages per small size (fewer from 64 KiB, as the ping-pong)")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", b.warmup, "windows before timing")->check(CLI::NonNegativeNumber);
  std::string max_bytes = "256M";
  app.add_option("--max-bytes", max_bytes, "timed bytes per size at most (suffix k or M)");
  app.add_option("--idle", b.idle, "send nothing: stay idle this many seconds, then exit")
      ->check(CLI::NonNegativeNumber);
  try {
    app.parse(argc, argv);
    sizes.parse(b.min, b.max);
    try {
      b.max_bytes = ucharm::bench::parse_bytes(max_bytes);
    } catch (const std::exception&) {
      throw std::invalid_argument("bad --max-bytes '" + max_bytes + "'");
    }
  } catch (const CLI::ParseError& e) {
    std::exit(CmiMyPe() == 0 ? app.exit(e) : 2);
  } catch (const std::exception& e) {
    if (CmiMyPe() == 0) CmiError("converse_rate: %s\n", e.what());
    std::exit(2);
  }
  b.h_data = CmiRegisterHandler(data_handler);
  b.h_ack = CmiRegisterHandler(ack_handler);
  b.h_idle = CmiRegisterHandler(idle_handler);
  if (CmiNumPes() < 2) CmiAbort("converse_rate needs at least 2 PEs (ucharmrun -n 2 ...)");
  b.ack.assign(CmiMsgHeaderSizeBytes, 0);
  CmiSetHandler(b.ack.data(), b.h_ack);
  if (CmiMyPe() != 0) return;
  if (b.idle > 0) {
    void* m = CmiAlloc(CmiMsgHeaderSizeBytes);
    CmiSetHandler(m, b.h_idle);
    CmiSyncSendAndFree(1, CmiMsgHeaderSizeBytes, m);
    return;
  }
  CmiPrintf("# ucharm Converse message rate, PE 0 -> PE 1, window %d, one ack per window\n", b.window);
  CmiPrintf("%-12s %16s %16s\n", "# size(B)", "messages/s", "MB/s");
  b.size = b.min;
  start_size();
}

}  // namespace

int main(int argc, char** argv) { ConverseInit(argc, argv, start); }
