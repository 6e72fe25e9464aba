// The embedded PMIx server: one job of N local ranks. Its upcalls run on PMIx's thread and
// record what each rank did (connected, finalized, aborted); a failure is told to the
// other ranks as a PMIx event, which the machine layer reports and exits on.
#include <pmix.h>
#include <pmix_server.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fmt/core.h>
#include <mutex>

#include "ucharmrun.h"

extern char** environ;

namespace ucharmrun {

// PMIx's upcalls carry no user pointer: they reach the one server of this process here.
struct Upcalls {
  static PmixServer* server;

  template <class F>
  static void with_client(const pmix_proc_t* proc, F&& f) {
    if (!server || !proc) return;
    std::lock_guard lk(server->mu_);
    // A late upcall from a rank of an earlier attempt must not mark this attempt's rank.
    if (std::strncmp(proc->nspace, server->nspace_, PMIX_MAX_NSLEN) != 0) return;
    if (proc->rank < server->clients_.size()) f(server->clients_[proc->rank]);
  }

  static pmix_status_t connected(const pmix_proc_t* proc, void*, pmix_op_cbfunc_t, void*) {
    with_client(proc, [](ClientState& c) { c.connected = true; });
    return PMIX_OPERATION_SUCCEEDED;
  }
  static pmix_status_t finalized(const pmix_proc_t* proc, void*, pmix_op_cbfunc_t, void*) {
    with_client(proc, [](ClientState& c) { c.finalized = true; });
    return PMIX_OPERATION_SUCCEEDED;
  }
  static pmix_status_t abort(const pmix_proc_t* proc, void*, int status, const char msg[],
                             pmix_proc_t*, size_t, pmix_op_cbfunc_t, void*) {
    with_client(proc, [&](ClientState& c) {
      c.abort_msg = fmt::format("{} (status {})", msg ? msg : "", status);
    });
    return PMIX_OPERATION_SUCCEEDED;  // the client exits by itself; SIGCHLD does the rest
  }
  // All ranks are local: the data the server collected is already complete.
  static pmix_status_t fence(const pmix_proc_t*, size_t, const pmix_info_t*, size_t, char* data,
                             size_t ndata, pmix_modex_cbfunc_t cbfunc, void* cbdata) {
    if (cbfunc) cbfunc(PMIX_SUCCESS, data, ndata, cbdata, nullptr, nullptr);
    return PMIX_SUCCESS;
  }
  static pmix_status_t dmodex(const pmix_proc_t*, const pmix_info_t*, size_t,
                              pmix_modex_cbfunc_t, void*) {
    return PMIX_ERR_NOT_FOUND;  // no other server holds data
  }
};
PmixServer* Upcalls::server = nullptr;

namespace {

// A PMIx operation that completes through a callback on PMIx's thread.
class Completion {
 public:
  static void op_cb(pmix_status_t rc, void* self) { static_cast<Completion*>(self)->done(rc); }
  void done(pmix_status_t rc) {
    std::lock_guard lk(mu_);
    rc_ = rc;
    finished_ = true;
    cv_.notify_all();
  }
  pmix_status_t wait() {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return finished_; });
    return rc_;
  }
  // For an operation whose completion is not essential: gives up after `limit`.
  bool wait_for(std::chrono::seconds limit) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, limit, [&] { return finished_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool finished_ = false;
  pmix_status_t rc_ = PMIX_SUCCESS;
};

void check(pmix_status_t rc, const char* what) {
  if (rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED)
    throw LaunchError{fmt::format("{} failed: {}", what, PMIx_Error_string(rc))};
}

}  // namespace

void PmixServer::start(const std::string& tmpdir, int np) {
  static pmix_server_module_t module;
  std::memset(&module, 0, sizeof module);
  module.client_connected = Upcalls::connected;
  module.client_finalized = Upcalls::finalized;
  module.abort = Upcalls::abort;
  module.fence_nb = Upcalls::fence;
  module.direct_modex = Upcalls::dmodex;

  pmix_info_t info[2];
  PMIX_INFO_CONSTRUCT(&info[0]);
  PMIX_INFO_CONSTRUCT(&info[1]);
  PMIX_INFO_LOAD(&info[0], PMIX_SERVER_TMPDIR, tmpdir.c_str(), PMIX_STRING);
  PMIX_INFO_LOAD(&info[1], PMIX_SYSTEM_TMPDIR, tmpdir.c_str(), PMIX_STRING);
  np_ = np;
  Upcalls::server = this;
  pmix_status_t rc = PMIx_server_init(&module, info, 2);
  PMIX_INFO_DESTRUCT(&info[0]);
  PMIX_INFO_DESTRUCT(&info[1]);
  check(rc, "PMIx_server_init");
  up_ = true;
}

void PmixServer::register_job(int attempt) {
  {
    std::lock_guard lk(mu_);
    if (attempt == 0)
      std::snprintf(nspace_, sizeof nspace_, "ucharmrun.%d", static_cast<int>(::getpid()));
    else
      std::snprintf(nspace_, sizeof nspace_, "ucharmrun.%d.r%d", static_cast<int>(::getpid()),
                    attempt);
    clients_.assign(static_cast<size_t>(np_), ClientState{});
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string peers;
  for (int r = 0; r < np_; ++r) {
    if (r) peers += ',';
    peers += std::to_string(r);
  }
  char *node_map = nullptr, *proc_map = nullptr;
  check(PMIx_generate_regex(host, &node_map), "PMIx_generate_regex");
  check(PMIx_generate_ppn(peers.c_str(), &proc_map), "PMIx_generate_ppn");

  const uint32_t np = static_cast<uint32_t>(np_), one = 1;
  std::vector<pmix_info_t> info(8 + static_cast<size_t>(np_));
  size_t i = 0;
  PMIX_INFO_LOAD(&info[i++], PMIX_UNIV_SIZE, &np, PMIX_UINT32);
  PMIX_INFO_LOAD(&info[i++], PMIX_JOB_SIZE, &np, PMIX_UINT32);
  PMIX_INFO_LOAD(&info[i++], PMIX_LOCAL_SIZE, &np, PMIX_UINT32);
  PMIX_INFO_LOAD(&info[i++], PMIX_NUM_NODES, &one, PMIX_UINT32);
  PMIX_INFO_LOAD(&info[i++], PMIX_LOCAL_PEERS, peers.c_str(), PMIX_STRING);
  PMIX_INFO_LOAD(&info[i++], PMIX_NODE_MAP, node_map, PMIX_STRING);
  PMIX_INFO_LOAD(&info[i++], PMIX_PROC_MAP, proc_map, PMIX_STRING);
  PMIX_INFO_LOAD(&info[i++], PMIX_HOSTNAME, host, PMIX_STRING);
  // Per-rank data: local and node rank equal the rank (one node).
  for (int r = 0; r < np_; ++r) {
    pmix_data_array_t* arr = nullptr;
    PMIX_DATA_ARRAY_CREATE(arr, 3, PMIX_INFO);
    auto* pi = static_cast<pmix_info_t*>(arr->array);
    const pmix_rank_t rank = static_cast<pmix_rank_t>(r);
    const uint16_t lr = static_cast<uint16_t>(r);
    PMIX_INFO_LOAD(&pi[0], PMIX_RANK, &rank, PMIX_PROC_RANK);
    PMIX_INFO_LOAD(&pi[1], PMIX_LOCAL_RANK, &lr, PMIX_UINT16);
    PMIX_INFO_LOAD(&pi[2], PMIX_NODE_RANK, &lr, PMIX_UINT16);
    PMIX_INFO_LOAD(&info[i++], PMIX_PROC_DATA, arr, PMIX_DATA_ARRAY);
    PMIX_DATA_ARRAY_FREE(arr);
  }
  Completion c;
  pmix_status_t rc =
      PMIx_server_register_nspace(nspace_, np_, info.data(), i, Completion::op_cb, &c);
  if (rc == PMIX_SUCCESS) rc = c.wait();
  for (size_t k = 0; k < i; ++k) PMIX_INFO_DESTRUCT(&info[k]);
  std::free(node_map);
  std::free(proc_map);
  check(rc, "registering the job with the PMIx server");
  registered_ = true;
}

void PmixServer::setup_client(int r, char*** env) {
  pmix_proc_t proc;
  PMIX_LOAD_PROCID(&proc, nspace_, static_cast<pmix_rank_t>(r));
  Completion c;
  pmix_status_t rc = PMIx_server_register_client(&proc, ::geteuid(), ::getegid(), nullptr,
                                                 Completion::op_cb, &c);
  if (rc == PMIX_SUCCESS) rc = c.wait();
  check(rc, "registering a client with the PMIx server");
  check(PMIx_server_setup_fork(&proc, env), "PMIx_server_setup_fork");
}

void PmixServer::notify_failure(int r, const std::string& why) {
  pmix_proc_t src;
  PMIX_LOAD_PROCID(&src, nspace_, static_cast<pmix_rank_t>(r));
  pmix_info_t info[2];
  PMIX_INFO_CONSTRUCT(&info[0]);
  PMIX_INFO_CONSTRUCT(&info[1]);
  PMIX_INFO_LOAD(&info[0], PMIX_EVENT_AFFECTED_PROC, &src, PMIX_PROC);
  PMIX_INFO_LOAD(&info[1], "ucharm.why", why.c_str(), PMIX_STRING);
  Completion c;
  pmix_status_t rc = PMIx_Notify_event(PMIX_ERR_PROC_ABORTED, &src, PMIX_RANGE_NAMESPACE,
                                       info, 2, Completion::op_cb, &c);
  if (rc == PMIX_SUCCESS) c.wait();
  PMIX_INFO_DESTRUCT(&info[0]);
  PMIX_INFO_DESTRUCT(&info[1]);
}

void PmixServer::end_job() {
  if (!registered_) return;
  registered_ = false;
  // Heap-held: should PMIx call back after the wait gave up, it still finds it (then it
  // is left allocated, one small object, rather than freed under PMIx's feet).
  auto* c = new Completion;
  PMIx_server_deregister_nspace(nspace_, Completion::op_cb, c);
  if (c->wait_for(std::chrono::seconds(5))) delete c;
}

ClientState PmixServer::client(int r) const {
  std::lock_guard lk(mu_);
  return clients_[static_cast<size_t>(r)];
}

void PmixServer::shut_down() {
  if (registered_) PMIx_server_deregister_nspace(nspace_, nullptr, nullptr);
  if (up_) PMIx_server_finalize();
  up_ = registered_ = false;
  if (Upcalls::server == this) Upcalls::server = nullptr;
}

}  // namespace ucharmrun
