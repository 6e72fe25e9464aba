// Endpoints, core binding, and waiting for UCX requests.
#include <ucharm/machine.h>
#include <ucharm/tag.h>

#include <ucp/api/ucp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fmt/core.h>

#include "machine_internal.h"
#include <hwloc.h>

namespace ucharm::machine {
namespace detail {

void ep_error(void* arg, ucp_ep_h, ucs_status_t status) {
  Machine& m = M();
  if (m.shutting_down) return;
  peer_lost(static_cast<int>(reinterpret_cast<intptr_t>(arg)), ucs_status_string(status));
}

void bind_to_core(Machine& m) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
    m.info.binding = "none (hwloc could not read the topology)";
    return;
  }
  int cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  m.info.oversubscribed = cores > 0 && m.info.local_size > cores;
  if (!m.opt.bind) {
    m.info.binding = "none (+nobind)";
  } else if (cores <= 0 || m.info.local_size > cores) {
    m.info.binding = fmt::format("none ({} PEs on {} cores)", m.info.local_size, cores);
  } else {
    hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, m.info.local_rank);
    if (core && hwloc_set_cpubind(topo, core->cpuset, HWLOC_CPUBIND_PROCESS) == 0)
      m.info.binding = fmt::format("core {}", core->logical_index);
    else
      m.info.binding = fmt::format("none (binding to core {} failed: {})", m.info.local_rank,
                                   std::strerror(errno));
  }
  hwloc_topology_destroy(topo);
}

ucp_ep_h connect(int pe) {
  Machine& m = M();
  ucp_ep_h& ep = m.eps[pe];
  if (ep) return ep;
  std::vector<char> addr = pe == m.info.my_pe ? m.my_address : m.boot->get(pe, kAddressKey);
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                 UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.address = reinterpret_cast<const ucp_address_t*>(addr.data());
  // UCX's shared-memory transports (posix, sysv) cannot report a dead peer, so PEER mode
  // would force a same-host pair onto TCP loopback (~20x the latency). Same-host peers use
  // shared memory and learn of a dead peer from the launcher's PMIx event instead;
  // peers on other hosts get PEER mode and UCX's own failure reports.
  const bool peer_mode = !m.boot->is_local(pe);
  p.err_mode = peer_mode ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
  m.ep_peer_mode[pe] = peer_mode;
  p.err_handler.cb = ep_error;
  p.err_handler.arg = reinterpret_cast<void*>(static_cast<intptr_t>(pe));
  ucs_status_t s = ucp_ep_create(m.worker, &p, &ep);
  if (s != UCS_OK) fatal(fmt::format("cannot connect to PE {}: {}", pe, ucs_status_string(s)));
  return ep;
}

// Waits (progressing) for a request returned by a *_nbx call.
void wait_request(ucs_status_ptr_t sp, const char* what) {
  if (sp == nullptr) return;
  if (UCS_PTR_IS_ERR(sp)) {
    if (!M().shutting_down) check(UCS_PTR_STATUS(sp), what);
    return;
  }
  while (ucp_request_check_status(sp) == UCS_INPROGRESS) ucp_worker_progress(M().worker);
  ucp_request_free(sp);
}

}  // namespace detail

using namespace detail;

void LrtsDescribeTransports(int pe) {
  Machine& m = M();
  if (pe < 0 || pe >= m.info.num_pes || pe == m.info.my_pe) {
    m.info.transports = "self";
    return;
  }
  ucp_transport_entry_t entries[16];
  ucp_ep_attr_t attr{};
  attr.field_mask = UCP_EP_ATTR_FIELD_TRANSPORTS;
  attr.transports.entries = entries;
  attr.transports.num_entries = 16;
  attr.transports.entry_size = sizeof(ucp_transport_entry_t);
  if (ucp_ep_query(endpoint(pe), &attr) != UCS_OK) {
    m.info.transports = "unknown";
    return;
  }
  std::string out;
  for (unsigned i = 0; i < attr.transports.num_entries; ++i) {
    std::string t = fmt::format("{}/{}", entries[i].transport_name, entries[i].device_name);
    if (out.find(t) != std::string::npos) continue;
    if (!out.empty()) out += ", ";
    out += t;
  }
  m.info.transports = out;
}

}  // namespace ucharm::machine
