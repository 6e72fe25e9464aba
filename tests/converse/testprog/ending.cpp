// Ways a job ends other than CmiExit from an idle PE:
//   exitcall N  - the last PE calls exit(N) (the C library's, as MPI programs do) while
//                 the others wait in their schedulers: the job ends with N.
//   throw       - an entry point on the last PE throws: the job ends non-zero, naming it.
//   exitstorm   - every PE floods the others with messages of up to 4 MiB; PE 0 calls
//                 CmiExit(0) in the middle: the job must end promptly and quietly.
#include "common.h"

#include <chrono>
#include <cstdlib>
#include <random>
#include <stdexcept>

namespace testprog::ending {
namespace {

int h_go, h_data, h_pump;
int code = 0;

void go(void* msg) {
  CmiFree(msg);
  if (CmiMyPe() != CmiNumPes() - 1) return;
  std::fflush(stdout);
  if (code >= 0) std::exit(code);
  throw std::runtime_error("test exception from an entry point");
}

std::mt19937_64 rng;
std::chrono::steady_clock::time_point t0;
void data(void* msg) { CmiFree(msg); }
void pump(void* msg) {
  for (int k = 0; k < 8; ++k) {
    std::size_t len = rng() % 4 == 0 ? rng() % (4u << 20) : rng() % 4096;
    void* m = CmiAlloc(CmiMsgHeaderSizeBytes + len);
    CmiSetHandler(m, h_data);
    int dst = static_cast<int>(rng() % static_cast<std::uint64_t>(CmiNumPes()));
    CmiSyncSendAndFree(dst, CmiMsgHeaderSizeBytes + len, m);
  }
  if (CmiMyPe() == 0 && std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(500)) {
    CmiFree(msg);
    CmiPrintf("exitstorm: exiting with traffic in flight\n");
    CmiExit(0);
  }
  CmiSyncSendAndFree(CmiMyPe(), CmiMsgSize(msg), msg);
}

}  // namespace

void exitcall(const Args& a) {
  code = a.args.empty() ? 5 : std::atoi(a.args[0].c_str());
  h_go = CmiRegisterHandler(go);
  CmiBarrier();  // every PE is up and in its scheduler before the last one leaves
  CmiPrintf("PE %d waiting\n", CmiMyPe());
  CmiSyncSendAndFree(CmiMyPe(), msg_size<int>(), make_msg(h_go, 0));
}

void throws(const Args&) {
  code = -1;
  h_go = CmiRegisterHandler(go);
  CmiBarrier();
  CmiSyncSendAndFree(CmiMyPe(), msg_size<int>(), make_msg(h_go, 0));
}

void exitstorm(const Args&) {
  h_data = CmiRegisterHandler(data);
  h_pump = CmiRegisterHandler(pump);
  rng.seed(99 + static_cast<std::uint64_t>(CmiMyPe()));
  CmiBarrier();
  t0 = std::chrono::steady_clock::now();
  CmiSyncSendAndFree(CmiMyPe(), msg_size<int>(), make_msg(h_pump, 0));
}

}  // namespace testprog::ending
