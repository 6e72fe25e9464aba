// idle: PE 0 computes for one second while the others wait in the scheduler; each idle
// PE then reports the CPU time it used meanwhile, and every report must arrive (the idle
// PEs wake for it). The CPU time is printed, not judged here: benchmarks/run_time_bounds.sh holds
// it to 0.3 s.
#include "common.h"

#include <sys/resource.h>

#include <algorithm>

namespace testprog::idle {

int h_report, h_measure;
int reports = 0;
double worst = 0;
double cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}
double cpu_at_barrier = 0;
void report(void* msg) {
  double used = payload<double>(msg);
  CmiFree(msg);
  worst = std::max(worst, used);
  if (++reports == CmiNumPes() - 1) {
    CmiPrintf("idle: the busiest idle PE used %.3f s of CPU in 1 s\n", worst);
    CmiPrintf("idle ok\n");
    CmiExit(0);
  }
}
void measure(void* msg) {  // on idle PEs, after PE 0's second of work
  CmiFree(msg);
  void* m = make_msg(h_report, cpu_seconds() - cpu_at_barrier);
  CmiSyncSendAndFree(0, msg_size<double>(), m);
}
void start(const Args&) {
  h_report = CmiRegisterHandler(report);
  h_measure = CmiRegisterHandler(measure);
  CmiBarrier();
  cpu_at_barrier = cpu_seconds();
  if (CmiMyPe() != 0) return;
  if (CmiNumPes() == 1) { CmiPrintf("idle ok\n"); CmiExit(0); }
  double t0 = CmiWallTimer();
  volatile double x = 0;
  while (CmiWallTimer() - t0 < 1.0) x = x + 1;  // PE 0's work
  void* m = make_msg(h_measure, 0);
  CmiSyncBroadcastAndFree(msg_size<int>(), m);
}

}  // namespace testprog::idle
