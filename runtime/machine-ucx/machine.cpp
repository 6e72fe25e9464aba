// UCX machine layer, non-SMP: one UCP context and worker per PE (= process).
// This file: start-up (bootstrap, context, worker, address exchange) and teardown.
// The host path is in host.cpp, device/channel operations in gpu_ops.cpp, endpoints in
// endpoints.cpp; their shared state in machine_internal.h.
//
// UCX callbacks only record completions; delivery to Converse and re-posting happen
// after ucp_worker_progress returns, so no UCX call is made from inside a UCX callback
// (but for the news of a lost peer, sent on the way out: peer_lost).
#include <ucharm/machine.h>
#include <ucharm/tag.h>

#include <ucp/api/ucp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>

#include "machine_internal.h"
#include "ucx_version_check.h"
#include <sys/epoll.h>
#include <sys/eventfd.h>

namespace ucharm::machine {
namespace detail {

Machine g_machine;

[[noreturn]] void fatal(const std::string& what) {
  fmt::print(stderr, "ucharm: PE {}: {}\n", M().info.my_pe, what);
  std::fflush(stderr);
  LrtsAbort(1, what.c_str());
}

void check(ucs_status_t s, const char* what) {
  if (s != UCS_OK) fatal(fmt::format("{} failed: {}", what, ucs_status_string(s)));
}

namespace {
// The launcher's failure event runs on PMIx's thread and ends this process itself: give it
// a second to say which process died (its report names the cause; ours would not).
void wait_for_launcher() {
  Machine& m = M();
  if (m.boot && m.boot->launched())
    for (int i = 0; i < 100; ++i) ::usleep(10000);
}
}  // namespace

// News of a lost peer. A PE that loses a peer on another host (its PEER-mode endpoint
// fails) tells the others before it stops: the PEs on the dead one's host reach it by
// shared memory, which cannot notice a death, and no launcher tells them (mpirun and srun
// stop the job without a word to the PEs). Each PE keeps one receive posted for it.
namespace {
struct LostNote {
  std::int32_t pe = -1;  // the PE that died
  std::int32_t by = -1;  // the PE that saw it
  char why[120] = {};
};
struct LostNews {
  LostNote in;            // the posted receive's buffer
  LostNote out;           // what this PE sends; outlives the sends (the process ends first)
  void* recv = nullptr;   // the posted receive
};
LostNews g_lost_news;  // this process's PE (non-SMP), beside g_machine

void lost_note_arrived(void* request, ucs_status_t status, const ucp_tag_recv_info_t*, void*) {
  Machine& m = M();
  g_lost_news.recv = nullptr;
  ucp_request_free(request);
  const LostNote& n = g_lost_news.in;
  if (status != UCS_OK || m.shutting_down || n.pe < 0 || n.pe >= m.info.num_pes) return;
  const std::string why = fmt::format("PE {} lost it: {}", n.by, std::string(n.why, ::strnlen(n.why, sizeof n.why)));
  m.hooks.peer_failed(n.pe, why.c_str());
}

// Runs inside a UCX callback and the process stops next: sends that cannot leave at once
// (no connection yet) are let go.
void tell_others_lost(int pe, const char* why) {
  Machine& m = M();
  LostNote& n = g_lost_news.out;
  n.pe = pe;
  n.by = m.info.my_pe;
  std::snprintf(n.why, sizeof n.why, "%s", why);
  ucp_request_param_t p{};
  for (int q = 0; q < m.info.num_pes; ++q) {
    ucp_ep_h ep = m.eps[static_cast<std::size_t>(q)];
    if (!ep || q == pe || q == m.info.my_pe) continue;
    ucs_status_ptr_t sp =
        ucp_tag_send_nbx(ep, &n, sizeof n, tag::host_tag(tag::MsgType::PeerLost), &p);
    if (UCS_PTR_IS_PTR(sp)) ucp_request_free(sp);
  }
}

void post_lost_news() {
  Machine& m = M();
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_MEMORY_TYPE |
                   UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.cb.recv = lost_note_arrived;
  p.memory_type = UCS_MEMORY_TYPE_HOST;
  ucs_status_ptr_t sp = ucp_tag_recv_nbx(m.worker, &g_lost_news.in, sizeof g_lost_news.in,
                                         tag::host_tag(tag::MsgType::PeerLost), tag::kFullMask, &p);
  if (UCS_PTR_IS_ERR(sp)) check(UCS_PTR_STATUS(sp), "ucp_tag_recv_nbx");
  g_lost_news.recv = sp;
}

void cancel_lost_news() {
  Machine& m = M();
  if (g_lost_news.recv) ucp_request_cancel(m.worker, g_lost_news.recv);
  while (g_lost_news.recv) ucp_worker_progress(m.worker);
}
}  // namespace

void peer_lost(int pe, const char* why) {
  Machine& m = M();
  // A peer on another host: no launcher will report it; say so at once, and tell the rest.
  const bool remote = pe >= 0 && static_cast<std::size_t>(pe) < m.ep_peer_mode.size() &&
                      m.ep_peer_mode[static_cast<std::size_t>(pe)];
  if (remote)
    tell_others_lost(pe, why);
  else
    wait_for_launcher();
  m.hooks.peer_failed(pe, why);
}

void failed_maybe_by_peer(const std::string& what) {
  wait_for_launcher();
  fatal(what);
}

void request_init(void* request) { std::memset(request, 0, sizeof(RequestState)); }

// Messages that arrived after the receives were cancelled (sent before their senders
// heard of the exit) wait in UCX's unexpected queue; take them, so that destroying the
// worker does not warn about them.
namespace {
// Receives (and drops) every unexpected message whose tag matches `tag` under `mask`.
void discard_matching(ucp_tag_t tag, ucp_tag_t mask) {
  Machine& m = M();
  std::vector<char> sink;
  for (;;) {
    ucp_worker_progress(m.worker);
    ucp_tag_recv_info_t info{};
    ucp_tag_message_h msg = ucp_tag_probe_nb(m.worker, tag, mask, 1, &info);
    if (!msg) return;
    sink.resize(info.length);
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    p.memory_type = UCS_MEMORY_TYPE_HOST;
    wait_request(ucp_tag_msg_recv_nbx(m.worker, sink.data(), info.length, msg, &p), "ucp_tag_msg_recv_nbx");
  }
}
}  // namespace

void discard_unexpected() { discard_matching(0, 0); }

void drain_unexpected_transfers() {
  discard_matching(tag::host_tag(tag::MsgType::Device), tag::kTypeMask);
  discard_matching(tag::host_tag(tag::MsgType::Channel), tag::kTypeMask);
}

}  // namespace detail

using namespace detail;

void LrtsInit(const Options& options, const Hooks& hooks) {
  check_ucx_version();  // before any other UCX call: a foreign libucp must not run
  Machine& m = M();
  m.opt = options;
  m.hooks = hooks;
  m.trace_ops = std::getenv("UCHARM_TRACE_OPS") != nullptr;
  m.force_callbacks = std::getenv("UCHARM_TEST_SEND_CALLBACKS") != nullptr;
  m.boot = std::make_unique<Bootstrap>();
  Bootstrap& b = *m.boot;
  m.info.my_pe = b.rank();
  m.info.num_pes = b.size();
  m.info.local_rank = b.local_rank();
  m.info.local_size = b.local_size();
  m.info.num_hosts = b.num_nodes();
  m.info.launched = b.launched();
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  m.info.hostname = host;
  m.info.ucx_version = ucp_get_version_string();
  bind_to_core(m);

  ucp_config_t* config = nullptr;
  check(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
  // Two shared-memory transports (SysV and POSIX) each map a 2 MiB segment per PE, and
  // UCX picks one of them for every message: keep POSIX alone (idle RSS per PE 14.3 ->
  // 12.3 MiB; latency unchanged at 8 B-4 MiB, measured alternating). A user's UCX_TLS wins.
  if (std::getenv("UCX_TLS") == nullptr) check(ucp_config_modify(config, "TLS", "^sysv"), "ucp_config_modify");
  // Shared-memory FIFO elements of 256 bytes (UCX: 128): a message of up to ~240 bytes,
  // headers included, then goes inline in the FIFO (am_short) instead of through a
  // separate buffer; a chare's 8-200 B arguments plus its 48 B of headers fit. Measured:
  // 128 B one-way 0.27 -> 0.19 us, 8 B unchanged; the FIFO grows by 32 KiB per PE.
  if (std::getenv("UCX_POSIX_FIFO_ELEM_SIZE") == nullptr)
    check(ucp_config_modify(config, "POSIX_FIFO_ELEM_SIZE", "256"), "ucp_config_modify");
  // UCX's memory-type cache stays on (off costs 8x in GPU latency, measured on H200);
  // LrtsMemoryType reports every CUDA range it finds to it, so it never misleads UCX.
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_REQUEST_SIZE |
                      UCP_PARAM_FIELD_REQUEST_INIT | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_ESTIMATED_NUM_EPS | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP | UCP_FEATURE_RMA | UCP_FEATURE_AMO32 |
                    UCP_FEATURE_AMO64;
  params.request_size = sizeof(RequestState);
  params.request_init = request_init;
  params.mt_workers_shared = 0;
  params.estimated_num_eps = static_cast<size_t>(m.info.num_pes);
  params.name = "ucharm";
  ucs_status_t s = ucp_init(&params, config, &m.context);
  ucp_config_release(config);
  check(s, "ucp_init");

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  check(ucp_worker_create(m.context, &wp, &m.worker), "ucp_worker_create");

  // Idle wait: the worker's event fd in an epoll set (room for more sources later).
  check(ucp_worker_get_efd(m.worker, &m.ucx_fd), "ucp_worker_get_efd");
  m.epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  if (m.epoll_fd < 0) fatal(fmt::format("epoll: {}", std::strerror(errno)));
  m.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (m.wake_fd < 0) fatal(fmt::format("eventfd: {}", std::strerror(errno)));
  for (int fd : {m.ucx_fd, m.wake_fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0)
      fatal(fmt::format("epoll_ctl: {}", std::strerror(errno)));
  }

  ucp_worker_attr_t wa{};
  wa.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS;
  check(ucp_worker_query(m.worker, &wa), "ucp_worker_query");
  b.put(kAddressKey, wa.address, wa.address_length);
  b.put(kHostKey, m.info.hostname.data(), m.info.hostname.size());
  const char* a = reinterpret_cast<const char*>(wa.address);
  m.my_address.assign(a, a + wa.address_length);
  ucp_worker_release_address(m.worker, wa.address);

  m.eps.assign(static_cast<std::size_t>(m.info.num_pes), nullptr);
  m.ep_peer_mode.assign(static_cast<std::size_t>(m.info.num_pes), false);
  post_host_receives();
  post_lost_news();

  // Every PE's address is known (and its receives posted) once the fence is done. Peers
  // that finish the fence first may already send: their messages are received here but
  // only recorded, and delivered by the first LrtsProgress after LrtsInit, once the layer
  // above knows this PE's number and the job's size (a broadcast delivered earlier would
  // be forwarded along a tree of one PE).
  b.fence(true, [] { return static_cast<int>(ucp_worker_progress(M().worker)); });
}

const Info& LrtsInfo() { return M().info; }

const std::vector<int>& LrtsPeHosts() {
  Machine& m = M();
  if (!m.pe_hosts.empty()) return m.pe_hosts;
  const auto n = static_cast<std::size_t>(m.info.num_pes);
  m.pe_hosts.assign(n, 0);
  if (!m.boot->launched() || n == 1) return m.pe_hosts;
  // The host names every PE published before the start-up fence; PMIx has them here
  // already (a collecting fence), so these reads stay local. Numbered by first PE.
  std::vector<std::string> names;
  for (std::size_t pe = 0; pe < n; ++pe) {
    std::string name;
    if (static_cast<int>(pe) == m.info.my_pe) {
      name = m.info.hostname;
    } else {
      const std::vector<char> b = m.boot->get(static_cast<int>(pe), kHostKey);
      name.assign(b.begin(), b.end());
    }
    auto it = std::find(names.begin(), names.end(), name);
    m.pe_hosts[pe] = static_cast<int>(it - names.begin());
    if (it == names.end()) names.push_back(std::move(name));
  }
  return m.pe_hosts;
}
int LrtsMyPe() { return M().info.my_pe; }
int LrtsNumPes() { return M().info.num_pes; }


void LrtsExit() {
  Machine& m = M();
  const bool trace = std::getenv("UCHARM_TRACE_EXIT") != nullptr;  // phase times, for diagnosis
  const auto t0 = std::chrono::steady_clock::now();
  auto phase = [&](const char* what) {
    if (trace)
      fmt::print(stderr, "ucharm: PE {}: exit: {} after {:.3f} s\n", m.info.my_pe, what,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  };
  // 0. Operations still waiting for their streams start (sends must leave; receives are
  //    cancelled below with the others).
  while (m.deferred_head) {
    start_deferred();
    ucp_worker_progress(m.worker);
  }
  // 1. What waits for credit is dropped (as Converse drops its queue: an exit does not
  //    wait for traffic); sends already made complete (a large one needs its receiver
  //    to take it, so we keep receiving, and returning credit to PEs that have not yet
  //    heard of the exit; the layer above drops what is delivered now). Then every PE
  //    is past that point.
  drop_backlogs();
  // A device or zero-copy send completes only when its receiver takes it; exiting, no
  // receiver will post one (e.g. MPI_Abort while a large MPI_Send waits for its match), so
  // every PE takes what waits for it here, and its senders' sends complete.
  while (m.pending_sends > 0) {
    drain_unexpected_transfers();
    if (LrtsProgress() == 0) LrtsIdleWait(10);
  }
  phase("own sends complete");
  // Others may still wait for their transfers to us: keep taking them until all are here.
  m.boot->fence(false, [] {
    drain_unexpected_transfers();
    return LrtsProgress();
  });
  phase("every PE is exiting");
  m.shutting_down = true;  // every PE is exiting: no more credit, no more deliveries
  ucp_request_param_t fp{};
  wait_request(ucp_worker_flush_nbx(m.worker, &fp), "ucp_worker_flush_nbx");
  m.repost.clear();
  // 2. Cancel receives nobody sent to, and the pre-posted ones (their callbacks release
  //    the buffers). Cancelling may complete and free a request at once: read the next
  //    one first.
  for (RequestState* r = m.open_recvs, *next; r; r = next) {
    next = r->next;
    ucp_request_cancel(m.worker, r);
  }
  while (m.open_recvs) ucp_worker_progress(m.worker);
  m.done.clear();
  cancel_host_receives();
  cancel_lost_news();
  rma_release_all();  // remote keys before their endpoints, registrations before the context
  // 3. Close endpoints; a second fence keeps every worker alive until all have closed.
  std::vector<ucs_status_ptr_t> closing;
  for (std::size_t pe = 0; pe < m.eps.size(); ++pe) {
    ucp_ep_h& ep = m.eps[pe];
    if (!ep) continue;
    ucp_request_param_t cp{};
    cp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    // FORCE needs PEER mode on both sides; others close with a flush (peers are alive).
    cp.flags = m.ep_peer_mode[pe] ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    closing.push_back(ucp_ep_close_nbx(ep, &cp));
    ep = nullptr;
  }
  for (ucs_status_ptr_t sp : closing) wait_request(sp, "ucp_ep_close_nbx");
  m.boot->fence(false, [] { return static_cast<int>(ucp_worker_progress(M().worker)); });
  phase("endpoints closed");
  discard_unexpected();
#ifdef UCHARM_HAVE_CUDA
  m.deferred_pool.for_each([](Deferred& d) {
    CtxScope scope(d.event_ctx);
    if (d.event) cuda_driver().event_destroy(d.event);
    d.event = nullptr;
  });
#endif
  ::close(m.epoll_fd);
  ucp_worker_destroy(m.worker);
  ucp_cleanup(m.context);
  m.worker = nullptr;
  m.context = nullptr;
  m.boot.reset();
  phase("done");
}

void LrtsAbort(int code, const char* msg) {
  std::fflush(stdout);
  std::fflush(stderr);
  Machine& m = M();
  if (m.boot) m.boot->abort(code, msg);
  std::_Exit(code);
}

}  // namespace ucharm::machine