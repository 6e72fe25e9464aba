// rndvidle: PE 0 and PE 1 exchange messages above the eager size (rendezvous) many times
// while nothing else runs. Each PE's waits are for its own transfers, so the idle path
// must never take a back-off sleep (those are for small sends held back by a busy peer);
// counted, not timed. Sleeping there made 256 KiB-2 MiB messages 5-15x slower.
//   rndvidle [bytes] [rounds]     defaults 1 MiB, 200
#include "common.h"

#include <cstdlib>

namespace testprog::rndvidle {

int h_ball, h_report;
std::size_t bytes = 1 << 20;
int rounds = 200, reports = 0;
std::uint64_t sleeps_total = 0, retries_total = 0;

void report(void* msg) {  // PE 0: one per PE
  const auto c = payload<CmiIdleCounts>(msg);
  CmiFree(msg);
  sleeps_total += c.backoff_sleeps;
  retries_total += c.busy_retries;
  if (++reports < 2) return;
  CmiPrintf("rndvidle: %llu back-off sleeps, %llu busy retries, %d rounds of %zu bytes\n",
            (unsigned long long)sleeps_total, (unsigned long long)retries_total, rounds, bytes);
  if (sleeps_total != 0) CmiAbort("rndvidle: a PE slept while its own rendezvous was open");
  CmiPrintf("rndvidle ok\n");
  CmiExit(0);
}
void send_report() {
  void* m = make_msg(h_report, CmiIdleStats(), 0);
  CmiSyncSendAndFree(0, msg_size<CmiIdleCounts>(0), m);
}
void ball(void* msg) {  // the count left; -1: the other PE has finished
  const auto left = static_cast<std::int64_t>(payload<std::uint64_t>(msg));
  CmiFree(msg);
  if (left <= 0) {  // the last one: both PEs report
    send_report();
    if (left == 0) {
      void* m = make_msg(h_ball, static_cast<std::uint64_t>(-1), bytes);
      CmiSyncSendAndFree(1 - CmiMyPe(), msg_size<std::uint64_t>(bytes), m);
    }
    return;
  }
  void* m = make_msg(h_ball, static_cast<std::uint64_t>(left - 1), bytes);
  CmiSyncSendAndFree(1 - CmiMyPe(), msg_size<std::uint64_t>(bytes), m);
}
void start(const Args& a) {
  h_ball = CmiRegisterHandler(ball);
  h_report = CmiRegisterHandler(report);
  if (!a.args.empty()) bytes = std::strtoull(a.args[0].c_str(), nullptr, 10);
  if (a.args.size() > 1) rounds = std::atoi(a.args[1].c_str());
  if (CmiNumPes() != 2) CmiAbort("rndvidle needs exactly 2 PEs");
  if (CmiMyPe() != 0) return;
  void* m = make_msg(h_ball, std::uint64_t(rounds), bytes);
  CmiSyncSendAndFree(1, msg_size<std::uint64_t>(bytes), m);
}

}  // namespace testprog::rndvidle
