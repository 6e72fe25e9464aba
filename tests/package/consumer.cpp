#include <ucharm/converse.h>

static void start(int, char**) {
  CmiPrintf("consumer: PE %d of %d\n", CmiMyPe(), CmiNumPes());
  CmiBarrier();
  if (CmiMyPe() == 0) CmiExit(0);
}

int main(int argc, char** argv) { ConverseInit(argc, argv, start); }
