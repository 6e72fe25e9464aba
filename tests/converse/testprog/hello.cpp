// hello: every PE prints its rank; PE 0 ends the run after a barrier.
#include "common.h"

namespace testprog::hello {

void start(const Args&) {
  CmiPrintf("hello from PE %d of %d\n", CmiMyPe(), CmiNumPes());
  CmiBarrier();
  if (CmiMyPe() == 0) CmiExit(0);
}

}  // namespace testprog::hello
