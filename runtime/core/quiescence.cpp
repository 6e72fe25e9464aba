// Quiescence detection: PE 0 runs waves that sum every PE's counts of entry messages
// sent and processed; two identical waves with sent == processed mean quiescence.
#include "internal.h"

#include <climits>
#include <cstdio>
#include <cstring>

namespace ck::detail {

void qd_declare();

struct QdCounts {
  std::uint64_t sent, processed, held;
};

namespace {

void qd_wave() {  // PE 0
  Core& k = core();
  k.qd_replies = 0;
  k.qd_sum_sent = k.qd_sum_processed = k.qd_sum_held = 0;
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes);
  CmiSetHandler(m, k.h_qd_probe);
  CmiSetPriority(m, INT_MAX / 2);  // answered once the PE has nothing more urgent
  CmiSyncBroadcastAllAndFree(CmiMsgHeaderSizeBytes, m);
}

}  // namespace

void qd_start_handler(void* msg) {  // PE 0
  Core& k = core();
  CkCallback cb;
  std::memcpy(&cb, CmiMsgPayload(msg), sizeof cb);
  CmiFree(msg);
  k.qd_waiting.push_back(cb);
  if (!k.qd_running) {
    k.qd_running = true;
    k.qd_prev_sent = UINT64_MAX;
    qd_wave();
  }
}

void qd_probe_handler(void* msg) {
  Core& k = core();
  CmiFree(msg);
  void* r = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof(QdCounts));
  QdCounts c{k.sent, k.processed, k.held};
  std::memcpy(CmiMsgPayload(r), &c, sizeof c);
  CmiSetHandler(r, k.h_qd_reply);
  CmiSyncSendAndFree(0, CmiMsgHeaderSizeBytes + sizeof c, r);
}

void qd_reply_handler(void* msg) {  // PE 0
  Core& k = core();
  QdCounts c;
  std::memcpy(&c, CmiMsgPayload(msg), sizeof c);
  CmiFree(msg);
  k.qd_sum_sent += c.sent;
  k.qd_sum_processed += c.processed;
  k.qd_sum_held += c.held;
  if (++k.qd_replies < CmiNumPes()) return;
  // Quiescent: everything sent was processed or is held for an element that does not
  // exist (nothing will move it), and nothing moved since the last wave.
  const std::uint64_t settled = k.qd_sum_processed + k.qd_sum_held;
  bool quiet = k.qd_sum_sent == settled && k.qd_sum_sent == k.qd_prev_sent && settled == k.qd_prev_processed;
  k.qd_prev_sent = k.qd_sum_sent;
  k.qd_prev_processed = settled;
  if (!quiet) {
    qd_wave();
    return;
  }
  if (k.qd_sum_held > 0) {  // never silently: every PE reports what it holds, then the callbacks run
    k.qd_replies = 0;
    void* m = CmiAlloc(CmiMsgHeaderSizeBytes);
    CmiSetHandler(m, k.h_qd_report);
    CmiSyncBroadcastAllAndFree(CmiMsgHeaderSizeBytes, m);
    return;
  }
  qd_declare();
}

void qd_report_handler(void* msg) {
  Core& k = core();
  CmiFree(msg);
  const std::string report = held_report();
  if (!report.empty()) {
    if (k.undelivered_is_error)
      CkAbort("quiescence with undelivered messages (UCHARM_UNDELIVERED=error):\n%s", report.c_str());
    std::fputs(report.c_str(), stderr);
    std::fflush(stderr);
  }
  void* r = CmiAlloc(CmiMsgHeaderSizeBytes);
  CmiSetHandler(r, k.h_qd_reported);
  CmiSyncSendAndFree(0, CmiMsgHeaderSizeBytes, r);
}

void qd_reported_handler(void* msg) {  // PE 0
  Core& k = core();
  CmiFree(msg);
  if (++k.qd_replies == CmiNumPes()) qd_declare();
}

void qd_declare() {  // PE 0
  Core& k = core();
  k.qd_running = false;
  std::vector<CkCallback> cbs;
  cbs.swap(k.qd_waiting);
  for (const CkCallback& cb : cbs) cb.send();
}

}  // namespace ck::detail

namespace ck {

void start_qd(const CkCallback& cb) {
  void* m = CmiAlloc(CmiMsgHeaderSizeBytes + sizeof cb);
  std::memcpy(CmiMsgPayload(m), &cb, sizeof cb);
  CmiSetHandler(m, detail::core().h_qd_start);
  CmiSyncSendAndFree(0, CmiMsgHeaderSizeBytes + sizeof cb, m);
}

}  // namespace ck
