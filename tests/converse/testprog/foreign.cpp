// foreign: work handed to the PE by other OS threads (CmiPushForeignWork). On every PE two
// threads push 2000 items each, in bursts with pauses (the PE goes to sleep between them and
// must be woken), and the PE pushes some itself; each item runs once, on the PE's thread, and
// each thread's items run in the order pushed. Then PE 0 gathers the counts.
#include "common.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace testprog::foreign {

constexpr int kThreads = 2, kItems = 2000, kOwn = 10;

struct Item : CmiForeignWork {
  int thread = 0, seq = 0;
};
std::vector<Item> items(kThreads * kItems + kOwn);
int next_seq[kThreads + 1] = {};
int ran = 0;
bool bad = false;
std::thread::id pe_thread;
std::vector<std::thread> pushers;
int h_count, counted = 0, total = 0;

void count(void* msg) {
  total += payload<int>(msg);
  CmiFree(msg);
  if (++counted < CmiNumPes()) return;
  if (total != CmiNumPes() * (kThreads * kItems + kOwn)) {
    CmiPrintf("foreign: %d items ran, expected %d\n", total, CmiNumPes() * (kThreads * kItems + kOwn));
    CmiExit(1);
  }
  CmiPrintf("foreign ok\n");
  CmiExit(0);
}

void run(CmiForeignWork* w) {
  auto* it = static_cast<Item*>(w);
  if (std::this_thread::get_id() != pe_thread) bad = true;
  if (it->seq != next_seq[it->thread]++) bad = true;
  if (++ran < kThreads * kItems + kOwn) return;
  for (auto& t : pushers) t.join();
  if (bad) {
    CmiPrintf("foreign: PE %d ran an item off its thread or out of order\n", CmiMyPe());
    CmiExit(1);
  }
  void* m = make_msg(h_count, ran);
  CmiSyncSendAndFree(0, msg_size<int>(), m);
}

void start(const Args&) {
  h_count = CmiRegisterHandler(count);
  pe_thread = std::this_thread::get_id();
  for (int t = 0; t < kThreads; ++t)
    pushers.emplace_back([t] {
      for (int i = 0; i < kItems; ++i) {
        Item& it = items[t * kItems + i];
        it.run = run;
        it.thread = t;
        it.seq = i;
        CmiPushForeignWork(&it);
        if (i % 500 == 499) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the PE sleeps
      }
    });
  for (int i = 0; i < kOwn; ++i) {
    Item& it = items[kThreads * kItems + i];
    it.run = run;
    it.thread = kThreads;
    it.seq = i;
    CmiPushForeignWork(&it);
  }
}

}  // namespace testprog::foreign
