// truncate: a receive buffer smaller than the data must stop the program, naming both.
#include "common.h"

namespace testprog::truncate {

std::vector<char> big(1000), small(100);
int h_ignore;
void ignore(void* msg) { CmiFree(msg); }
void start(const Args&) {
  h_ignore = CmiRegisterHandler(ignore);
  const int last = CmiNumPes() - 1;
  CmiBarrier();
  if (CmiMyPe() == 0) CmiChannelSend(last, big.data(), big.size(), CmiChannelTag(5, 0), make_msg(h_ignore, 0));
  if (CmiMyPe() == last) CmiChannelRecv(small.data(), small.size(), CmiChannelTag(5, 0), make_msg(h_ignore, 0));
}

}  // namespace testprog::truncate
