// wait: sits in the scheduler until stopped from outside (signal and timeout tests).
#include "common.h"

namespace testprog::wait {

void start(const Args&) {
  if (CmiMyPe() == 0) CmiPrintf("waiting\n");
}

}  // namespace testprog::wait
