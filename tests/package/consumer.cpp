// The user guide's first example (docs/user-guide.md), built by the package test against
// an installed ucharm and run on 2 PEs.
#include <ucharm/converse.h>

#include <cstring>

static int h_hello;

static void hello(void* msg) {                 // a handler owns its message
  CmiPrintf("PE %d got '%s' from PE %d\n", CmiMyPe(), CmiMsgPayload(msg), CmiMsgSourcePe(msg));
  CmiFree(msg);
  CmiBarrier();                                 // every PE waits here (messages keep flowing)
  if (CmiMyPe() == 0) CmiExit(0);               // ends every PE with code 0
}

static void start(int, char**) {               // runs on every PE
  h_hello = CmiRegisterHandler(hello);          // same order on every PE
  const char text[] = "hi";
  void* msg = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof text);
  CmiSetHandler(msg, h_hello);
  std::memcpy(CmiMsgPayload(msg), text, sizeof text);
  CmiSyncSendAndFree((CmiMyPe() + 1) % CmiNumPes(), CmiMsgHeaderSizeBytes + sizeof text, msg);
}

int main(int argc, char** argv) { ConverseInit(argc, argv, start); }
