// hello: every PE prints its rank; PE 0 ends the run after a barrier.
#include "common.h"

#include <stdio_ext.h>

namespace testprog::hello {

void start(const Args&) {
  CmiPrintf("hello from PE %d of %d\n", CmiMyPe(), CmiNumPes());
  CmiBarrier();
  if (CmiMyPe() == 0) CmiExit(0);
}

// stdoutlines: stdout was unbuffered before ConverseInit (main.cpp); the runtime must
// still print each line in one write, or lines of different PEs split one another.
void stdoutlines(const Args&) {
  if (!__flbf(stdout) || __fbufsize(stdout) < 1024)
    CmiAbort("stdout is not line-buffered with a buffer of its own (line-buffered %d, %zu B)",
             __flbf(stdout) ? 1 : 0, __fbufsize(stdout));
  CmiBarrier();
  if (CmiMyPe() == 0) {
    CmiPrintf("stdoutlines ok\n");
    CmiExit(0);
  }
}

}  // namespace testprog::hello
