#include "bootstrap.h"

#include <pmix.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fmt/core.h>

namespace ucharm::machine {
namespace {

[[noreturn]] void boot_fail(const char* what, pmix_status_t rc) {
  fmt::print(stderr, "ucharm: PMIx bootstrap failed: {} returned {} ({})\n", what,
             PMIx_Error_string(rc), static_cast<int>(rc));
  std::fflush(stderr);
  std::_Exit(1);
}

int my_rank_for_messages = 0;

// Runs on PMIx's progress thread when the launcher reports that a process of the job
// died or aborted, or when the launcher itself is gone: report and leave at once, since
// the job cannot complete.
void on_job_failure(size_t, pmix_status_t status, const pmix_proc_t* source,
                    pmix_info_t info[], size_t ninfo, pmix_info_t*, size_t,
                    pmix_event_notification_cbfunc_fn_t cbfunc, void* cbdata) {
  int who = source ? static_cast<int>(source->rank) : -1;
  const char* why = "";
  for (size_t i = 0; i < ninfo; ++i) {
    if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROC) && info[i].value.type == PMIX_PROC)
      who = static_cast<int>(info[i].value.data.proc->rank);
    else if (PMIX_CHECK_KEY(&info[i], "ucharm.why") && info[i].value.type == PMIX_STRING)
      why = info[i].value.data.string;
  }
  if (status == PMIX_ERR_LOST_CONNECTION || status == PMIX_ERR_UNREACH)
    fmt::print(stderr, "ucharm: PE {}: lost the connection to the launcher; exiting\n",
               my_rank_for_messages);
  else
    fmt::print(stderr, "ucharm: PE {}: PE {} died{}{}; exiting\n", my_rank_for_messages, who,
               *why ? ": " : "", why);
  std::fflush(stderr);
  if (cbfunc) cbfunc(PMIX_EVENT_ACTION_COMPLETE, nullptr, 0, nullptr, nullptr, cbdata);
  std::_Exit(1);
}

template <class T>
T get_job_value(const pmix_proc_t& proc, const char* key, T fallback) {
  pmix_value_t* v = nullptr;
  if (PMIx_Get(&proc, key, nullptr, 0, &v) != PMIX_SUCCESS || !v) return fallback;
  T out = fallback;
  switch (v->type) {
    case PMIX_UINT32: out = static_cast<T>(v->data.uint32); break;
    case PMIX_UINT16: out = static_cast<T>(v->data.uint16); break;
    case PMIX_INT: out = static_cast<T>(v->data.integer); break;
    case PMIX_UINT64: out = static_cast<T>(v->data.uint64); break;
    default: break;
  }
  PMIX_VALUE_RELEASE(v);
  return out;
}

}  // namespace

Bootstrap::Bootstrap() {
  // No PMIx server in the environment: run as one PE (the reference refuses to start).
  if (!std::getenv("PMIX_NAMESPACE")) return;
  pmix_proc_t me;
  pmix_status_t rc = PMIx_Init(&me, nullptr, 0);
  if (rc != PMIX_SUCCESS) boot_fail("PMIx_Init", rc);
  launched_ = true;
  nspace_ = me.nspace;
  rank_ = static_cast<int>(me.rank);
  my_rank_for_messages = rank_;
  pmix_proc_t job;
  PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
  size_ = get_job_value<int>(job, PMIX_JOB_SIZE, -1);
  if (size_ <= 0) boot_fail("PMIx_Get(PMIX_JOB_SIZE)", PMIX_ERR_NOT_FOUND);
  local_size_ = get_job_value<int>(job, PMIX_LOCAL_SIZE, 1);
  num_nodes_ = get_job_value<int>(job, PMIX_NUM_NODES, 1);
  local_rank_ = get_job_value<int>(me, PMIX_LOCAL_RANK, 0);
  local_.assign(static_cast<std::size_t>(size_), false);
  pmix_value_t* peers = nullptr;
  if (PMIx_Get(&job, PMIX_LOCAL_PEERS, nullptr, 0, &peers) == PMIX_SUCCESS && peers &&
      peers->type == PMIX_STRING) {
    for (const char* p = peers->data.string; p && *p;) {
      char* end = nullptr;
      long r = std::strtol(p, &end, 10);
      if (end == p) break;
      if (r >= 0 && r < size_) local_[static_cast<std::size_t>(r)] = true;
      p = *end == ',' ? end + 1 : end;
    }
  }
  if (peers) PMIX_VALUE_RELEASE(peers);

  pmix_status_t codes[] = {PMIX_ERR_PROC_ABORTED, PMIX_ERR_PROC_ABORTING,
                           PMIX_ERR_LOST_CONNECTION, PMIX_ERR_UNREACH};
  rc = PMIx_Register_event_handler(codes, sizeof codes / sizeof codes[0], nullptr, 0,
                                   on_job_failure, nullptr, nullptr);
  if (rc < 0) boot_fail("PMIx_Register_event_handler", rc);
}

Bootstrap::~Bootstrap() {
  if (launched_) PMIx_Finalize(nullptr, 0);
}

void Bootstrap::put(const char* key, const void* data, std::size_t len) {
  if (!launched_) return;
  pmix_value_t v;
  PMIX_VALUE_CONSTRUCT(&v);
  v.type = PMIX_BYTE_OBJECT;
  v.data.bo.bytes = static_cast<char*>(const_cast<void*>(data));
  v.data.bo.size = len;
  pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &v);
  if (rc != PMIX_SUCCESS) boot_fail("PMIx_Put", rc);
  rc = PMIx_Commit();
  if (rc != PMIX_SUCCESS) boot_fail("PMIx_Commit", rc);
}

void Bootstrap::fence(bool collect, int (*progress)()) {
  if (!launched_) return;
  struct Done {
    std::atomic<bool> flag{false};
    pmix_status_t rc = PMIX_SUCCESS;
  } done;
  pmix_info_t info;
  PMIX_INFO_CONSTRUCT(&info);
  bool yes = collect;
  PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
  auto cb = [](pmix_status_t rc, void* arg) {
    auto* d = static_cast<Done*>(arg);
    d->rc = rc;
    d->flag.store(true, std::memory_order_release);
  };
  pmix_status_t rc = PMIx_Fence_nb(nullptr, 0, &info, 1, cb, &done);
  if (rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED) boot_fail("PMIx_Fence_nb", rc);
  if (rc == PMIX_OPERATION_SUCCEEDED) done.flag = true;
  // Keep serving peers (a rendezvous send to us must complete for them to reach the
  // fence); back off to short sleeps since the fence finishes on PMIx's thread.
  unsigned idle = 0;
  while (!done.flag.load(std::memory_order_acquire)) {
    if (progress && progress() > 0) { idle = 0; continue; }
    if (++idle > 1000) ::usleep(200);
  }
  PMIX_INFO_DESTRUCT(&info);
  if (done.rc != PMIX_SUCCESS) boot_fail("PMIx_Fence", done.rc);
}

std::vector<char> Bootstrap::get(int rank, const char* key) const {
  pmix_proc_t p;
  PMIX_LOAD_PROCID(&p, nspace_.c_str(), static_cast<pmix_rank_t>(rank));
  pmix_value_t* v = nullptr;
  pmix_status_t rc = PMIx_Get(&p, key, nullptr, 0, &v);
  if (rc != PMIX_SUCCESS || !v || v->type != PMIX_BYTE_OBJECT) {
    fmt::print(stderr, "ucharm: PE {}: cannot get '{}' of PE {} from PMIx: {}\n", rank_, key, rank,
               PMIx_Error_string(rc));
    std::_Exit(1);
  }
  std::vector<char> out(v->data.bo.bytes, v->data.bo.bytes + v->data.bo.size);
  PMIX_VALUE_RELEASE(v);
  return out;
}

void Bootstrap::abort(int code, const char* msg) noexcept {
  if (launched_) PMIx_Abort(code, msg, nullptr, 0);
}

}  // namespace ucharm::machine
