// RMA windows: creation (every flavor), free, the process's directory of windows, and what a
// window carries besides its memory: name, info, group, attributes, error handler.
//
// Handles: a window's handle indexes this process's directory (windows cannot move, so a
// handle means the same for as long as the window lives; handles are not reused, so a
// stray message can never reach a newer window). Each member tells the others its PE, its
// handle, size and displacement unit at creation (one allgather).
#include "rma/rma.h"
#include "comm/comms.h"
#include "checks.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ampi {

namespace rma {
namespace {

// This process's windows by handle - 1 (non-SMP: one PE per process); freed ones are null.
std::vector<std::unique_ptr<Win>> g_windows;

// Predefined window attributes (mpi.h).
bool predefined_key(int k) { return k == MPI_WIN_BASE || k == MPI_WIN_SIZE || k == MPI_WIN_DISP_UNIT ||
                                    k == MPI_WIN_CREATE_FLAVOR || k == MPI_WIN_MODEL; }

int bad_arg(MPI_Comm comm, const char* fn, int code, const char* what) { return error(comm, code, fn, "%s", what); }

// The info keys a window reports (MPI 3.1 §11.2.1 defaults), then those the program set.
void default_info(Win& w) {
  w.info = {{"no_locks", "false"},
            {"accumulate_ordering", "rar,raw,war,waw"},
            {"accumulate_ops", "same_op_no_op"},
            {"same_size", "false"},
            {"same_disp_unit", "false"},
            {"alloc_shared_noncontig", "false"}};
}
void merge_info(Win& w, MPI_Info info) {
  if (info == MPI_INFO_NULL) return;
  cm::Info* in = cm::info_get(info);
  if (!in) return;
  for (const auto& [k, v] : *in) {
    auto it = std::find_if(w.info.begin(), w.info.end(), [&](const auto& p) { return p.first == k; });
    if (it != w.info.end()) it->second = v;
    else w.info.emplace_back(k, v);
  }
}

// The direct path (ops.cpp): UCHARM_AMPI_RMA_DIRECT_MIN bytes (default kDirectMin; 0: off).
// Between processes of one host (UCX moves it by CMA) messages are faster up to 1-2 KiB
// (osu_put/get_latency -w create: 8 B 2.8-3.9 us by messages, 4.6-5.6 direct; 4 KiB 6-7.5
// against 2.6-4.6; 64 KiB 29-40 against 6.6-11).
constexpr std::size_t kDirectMin = 2048;
std::size_t direct_min_setting() {
  const char* v = std::getenv("UCHARM_AMPI_RMA_DIRECT_MIN");
  if (!v || !*v) return kDirectMin;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (*end) CkAbort("UCHARM_AMPI_RMA_DIRECT_MIN=%s: give a number of bytes (0: no direct RMA)", v);
  return static_cast<std::size_t>(n);
}

// Registers this rank's window memory for one-sided access (created and allocated windows
// with memory; a descriptor that does not fit the exchange leaves it to messages).
void register_memory(Win& w, Member* me) {
  w.direct_min = direct_min_setting();
  if (w.direct_min == 0 || w.size <= 0 ||
      (w.flavor != MPI_WIN_FLAVOR_CREATE && w.flavor != MPI_WIN_FLAVOR_ALLOCATE))
    return;
  w.region = CmiRmaRegister(w.base, static_cast<std::size_t>(w.size));
  std::size_t len = 0;
  const void* d = CmiRmaDescriptor(w.region, &len);
  if (len > kDescMax) return;
  std::memcpy(me->desc, d, len);
  me->desc_len = static_cast<std::uint32_t>(len);
}

// Attaches the registered memory of the members on other PEs.
void attach_peers(Win& w) {
  w.remotes.assign(static_cast<std::size_t>(w.n), nullptr);
  w.direct_dirty.assign(static_cast<std::size_t>(w.n), 0);
  w.direct_open.assign(static_cast<std::size_t>(w.n), 0);
  if (w.direct_min == 0) return;
  for (std::size_t i = 0; i < w.members.size(); ++i) {
    const Member& m = w.members[i];
    if (m.desc_len && m.pe != CmiMyPe()) w.remotes[i] = CmiRmaAttach(m.pe, m.desc, m.desc_len);
  }
}

// Makes the window (collective over comm): `base`/`size` this rank's memory (set already
// for create; for allocate and shared made here), then every member's facts.
int create(const char* fn, MPI_Comm comm, void* base, MPI_Aint size, int disp_unit, MPI_Info info, int flavor,
           void* baseptr, MPI_Win* win) {
  Comm* c = comm_get(comm);
  if (!c) return bad_comm(comm, fn);
  if (c->inter) return bad_arg(comm, fn, MPI_ERR_COMM, "an intercommunicator cannot hold a window");
  if (!win) return null_arg(comm, fn, "win");
  if (size < 0) return error(comm, MPI_ERR_SIZE, fn, "size %ld is negative", static_cast<long>(size));
  if (disp_unit <= 0) return error(comm, MPI_ERR_DISP, fn, "disp_unit %d is not positive", disp_unit);
  if ((flavor == MPI_WIN_FLAVOR_ALLOCATE || flavor == MPI_WIN_FLAVOR_SHARED) && !baseptr)
    return null_arg(comm, fn, "baseptr");
  if (info != MPI_INFO_NULL && !cm::info_get(info)) return error(comm, MPI_ERR_INFO, fn, "invalid info %d", info);
  auto w = std::make_unique<Win>();
  w->rank = current_rank();
  if (int rc = PMPI_Comm_split(comm, 0, c->rank, &w->comm)) return rc;
  Comm& wc = *comm_get(w->comm);
  w->me = wc.rank;
  w->n = wc.size();
  w->world = wc.members;
  w->flavor = flavor;
  w->disp_unit = disp_unit;
  w->size = flavor == MPI_WIN_FLAVOR_DYNAMIC ? 0 : size;
  default_info(*w);
  merge_info(*w, info);
  const auto n = static_cast<std::size_t>(w->n);
  Member me;
  if (flavor == MPI_WIN_FLAVOR_ALLOCATE) {
    // Shared with this host's other processes where it can be (mapped.cpp), else the heap.
    base = map_allocate(*w, static_cast<std::size_t>(size), &me);
    if (!base) {
      void* p = nullptr;
      if (posix_memalign(&p, 64, size > 0 ? static_cast<std::size_t>(size) : 1) != 0)
        return error(comm, MPI_ERR_NO_MEM, fn, "cannot allocate %ld bytes", static_cast<long>(size));
      w->owned = base = p;
    }
  } else if (flavor == MPI_WIN_FLAVOR_SHARED) {
    // Ranks of one process share an address space: rank 0 allocates every member's part in
    // one block. Contiguous, as MPI asks unless alloc_shared_noncontig is "true" (rank r+1's
    // part starts where rank r's ends, sizes as given; only the block is 64-byte aligned).
    // When every member gives the key, each part starts on its own 64-byte line instead, so
    // neighbours' writes do not share a cache line.
    const bool noncontig_wanted = std::any_of(w->info.begin(), w->info.end(), [](const auto& p) {
      return p.first == "alloc_shared_noncontig" && p.second == "true";
    });
    std::int64_t mine[3] = {size, CmiMyPe(), noncontig_wanted ? 1 : 0};
    std::vector<std::int64_t> all(3 * n);
    if (int rc = coll_allgather(mine, 3, MPI_INT64_T, all.data(), wc, coll_tag(wc))) return rc;
    bool one_process = true, noncontig = true;
    for (std::size_t i = 0; i < n; ++i) {
      one_process = one_process && all[3 * i + 1] == CmiMyPe();
      noncontig = noncontig && all[3 * i + 2] != 0;
    }
    std::int64_t total = 0;
    std::vector<std::int64_t> offset(n);
    for (std::size_t i = 0; i < n; ++i) {
      offset[i] = total;
      total += noncontig ? (all[3 * i] + 63) / 64 * 64 : all[3 * i];
    }
    if (!one_process) {
      PMPI_Comm_free(&w->comm);
      return error(comm, MPI_ERR_RMA_SHARED, fn,
                   "the ranks of the communicator are in different processes, which cannot share memory (use "
                   "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED): it gives the ranks of one process)");
    }
    std::uint64_t block = 0;
    if (w->me == 0) {
      void* p = nullptr;
      if (posix_memalign(&p, 64, total > 0 ? static_cast<std::size_t>(total) : 1) != 0)
        CkAbort("%s: cannot allocate %lld bytes of shared window memory", fn, static_cast<long long>(total));
      std::memset(p, 0, static_cast<std::size_t>(total > 0 ? total : 1));
      w->owned = p;
      block = reinterpret_cast<std::uintptr_t>(p);
    }
    if (int rc = coll_bcast(&block, 1, MPI_UINT64_T, 0, wc, coll_tag(wc))) return rc;
    // A member of size 0 gets its place in the sequence too (where the next part starts), as
    // OpenMPI and MPICH give it: rank r+1's base is rank r's + its size for every r.
    base = reinterpret_cast<char*>(block) + offset[static_cast<std::size_t>(w->me)];
  }
  w->base = flavor == MPI_WIN_FLAVOR_DYNAMIC ? MPI_BOTTOM : base;
  w->device = size > 0 && base && is_device(base);
  w->pending.assign(n, 0);
  w->dirty.assign(n, 0);
  w->locks.assign(n, LockState::None);
  w->in_access.assign(n, 0);
  w->posts.assign(n, 0);
  w->members.resize(n);
  // In the directory before the exchange (other ranks of this PE create windows meanwhile);
  // a member done with it may send to this rank before this rank is: such messages wait
  // in `early` until the members are known.
  g_windows.push_back(std::move(w));
  Win& me_w = *g_windows.back();
  me_w.handle = static_cast<MPI_Win>(g_windows.size());
  me.pe = CmiMyPe();
  me.handle = me_w.handle;
  me.disp_unit = disp_unit;
  me.device = me_w.device ? 1 : 0;
  me.size = static_cast<std::int64_t>(me_w.size);
  me.base = reinterpret_cast<std::uintptr_t>(me_w.base);
  register_memory(me_w, &me);
  if (int rc = coll_allgather(&me, sizeof me, MPI_BYTE, me_w.members.data(), wc, coll_tag(wc))) return rc;
  attach_peers(me_w);
  map_peers(me_w);
  me_w.ready = true;
  if (baseptr) *static_cast<void**>(baseptr) = base;
  *win = me_w.handle;
  replay_early(me_w);
  return MPI_SUCCESS;
}

}  // namespace

Win* win_of(MPI_Win h) {
  if (h <= 0 || static_cast<std::size_t>(h) > g_windows.size()) return nullptr;
  return g_windows[static_cast<std::size_t>(h) - 1].get();
}

Win* my_win(MPI_Win h, const char* fn, int* rc) {
  Win* w = win_of(h);
  if (w && w->rank == g_running.rank) return w;
  *rc = error(MPI_COMM_WORLD, MPI_ERR_WIN, fn, "%s is not a window of this rank",
              h == MPI_WIN_NULL ? "MPI_WIN_NULL" : ("handle " + std::to_string(h)).c_str());
  return nullptr;
}

std::string win_label(const Win& w) {
  std::string s = "window " + std::to_string(w.handle);
  if (!w.name.empty()) s += " (\"" + w.name + "\")";
  return s;
}

int win_error(Win* w, int code, const char* fn, const char* fmt, ...) {
  char what[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  const MPI_Errhandler h = w ? w->errhandler : MPI_ERRORS_ARE_FATAL;
  if (h == MPI_ERRORS_RETURN) return code;
  if (MPI_Comm_errhandler_function* f = errhandler_function(h)) {
    MPI_Win handle = w->handle;
    int err = code;
    heap::UserScope user(nullptr);  // the program's code: its allocations are the rank's
    reinterpret_cast<MPI_Win_errhandler_function*>(f)(&handle, &err);
    return code;
  }
  CkAbort("%s: %s (%s), on %s, MPI rank %d", fn, what, error_class_name(code), w ? win_label(*w).c_str() : "no window",
          world_rank());
}

}  // namespace rma

void rma_check_can_move(Rank* r, const char* fn) {
  for (const auto& w : rma::g_windows)
    if (w && w->rank == r)
      CkAbort("%s: MPI rank %d has RMA %s open, and a rank with an open window cannot move (other ranks "
              "reach its window memory where it is): free the window (MPI_Win_free) before moving",
              fn, r->world_rank(), rma::win_label(*w).c_str());
}

}  // namespace ampi

using namespace ampi;
using namespace ampi::rma;

#pragma GCC visibility push(default)
extern "C" {

int PMPI_Win_create(void* base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win* win) {
  if (size > 0 && !base) return error(comm, MPI_ERR_BASE, "MPI_Win_create", "base is NULL with size %ld",
                                      static_cast<long>(size));
  return create("MPI_Win_create", comm, base, size, disp_unit, info, MPI_WIN_FLAVOR_CREATE, nullptr, win);
}
int PMPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr, MPI_Win* win) {
  return create("MPI_Win_allocate", comm, nullptr, size, disp_unit, info, MPI_WIN_FLAVOR_ALLOCATE, baseptr, win);
}
int PMPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr,
                             MPI_Win* win) {
  return create("MPI_Win_allocate_shared", comm, nullptr, size, disp_unit, info, MPI_WIN_FLAVOR_SHARED, baseptr, win);
}
int PMPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win* win) {
  return create("MPI_Win_create_dynamic", comm, nullptr, 0, 1, info, MPI_WIN_FLAVOR_DYNAMIC, nullptr, win);
}

int PMPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint* size, int* disp_unit, void* baseptr) {
  const char* fn = "MPI_Win_shared_query";
  int rc;
  Win* w = my_win(win, fn, &rc);
  if (!w) return rc;
  if (!size || !disp_unit || !baseptr) return win_error(w, MPI_ERR_ARG, fn, "an output argument is NULL");
  int r = rank;
  if (rank == MPI_PROC_NULL) {  // the lowest rank with memory
    r = 0;
    for (int i = 0; i < w->n; ++i)
      if (w->members[static_cast<std::size_t>(i)].size > 0) {
        r = i;
        break;
      }
  } else if (rank < 0 || rank >= w->n) {
    return win_error(w, MPI_ERR_RANK, fn, "rank %d is not in the window (size %d)", rank, w->n);
  }
  const Member& m = w->members[static_cast<std::size_t>(r)];
  // Memory this process can load and store: ranks of this process (one address space) and
  // Win_allocate memory of this host mapped here (mapped.cpp). Any other: size 0 and a
  // NULL base, as MPI 4.0 says for memory that is not shared.
  char* at = w->flavor == MPI_WIN_FLAVOR_DYNAMIC ? nullptr
             : m.pe == CmiMyPe()                ? reinterpret_cast<char*>(m.base)
             : w->mapped.empty()                ? nullptr
                                                : w->mapped[static_cast<std::size_t>(r)];
  *size = at ? static_cast<MPI_Aint>(m.size) : 0;
  *disp_unit = m.disp_unit;
  *static_cast<void**>(baseptr) = at;
  return MPI_SUCCESS;
}

int PMPI_Win_attach(MPI_Win win, void* base, MPI_Aint size) {
  const char* fn = "MPI_Win_attach";
  int rc;
  Win* w = my_win(win, fn, &rc);
  if (!w) return rc;
  if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC)
    return win_error(w, MPI_ERR_RMA_FLAVOR, fn, "only windows of MPI_Win_create_dynamic take attached memory");
  if (size < 0) return win_error(w, MPI_ERR_SIZE, fn, "size %ld is negative", static_cast<long>(size));
  if (size > 0 && !base) return win_error(w, MPI_ERR_RMA_ATTACH, fn, "base is NULL");
  const auto lo = reinterpret_cast<std::uintptr_t>(base);
  w->attached.push_back({lo, lo + static_cast<std::uintptr_t>(size), size > 0 && is_device(base)});
  return MPI_SUCCESS;
}

int PMPI_Win_detach(MPI_Win win, const void* base) {
  const char* fn = "MPI_Win_detach";
  int rc;
  Win* w = my_win(win, fn, &rc);
  if (!w) return rc;
  if (w->flavor != MPI_WIN_FLAVOR_DYNAMIC)
    return win_error(w, MPI_ERR_RMA_FLAVOR, fn, "only windows of MPI_Win_create_dynamic have attached memory");
  const auto lo = reinterpret_cast<std::uintptr_t>(base);
  for (auto it = w->attached.begin(); it != w->attached.end(); ++it)
    if (it->lo == lo) {
      w->attached.erase(it);
      return MPI_SUCCESS;
    }
  return win_error(w, MPI_ERR_RMA_ATTACH, fn, "no memory is attached at %p", base);
}

int PMPI_Win_free(MPI_Win* win) {
  const char* fn = "MPI_Win_free";
  if (!win) return null_arg(MPI_COMM_WORLD, fn, "win");
  int rc;
  Win* w = my_win(*win, fn, &rc);
  if (!w) return rc;
  if (w->locks_held || w->lock_all)
    return win_error(w, MPI_ERR_RMA_SYNC, fn, "a passive-target epoch (MPI_Win_lock/lock_all) is still open");
  if (w->access || w->exposure)
    return win_error(w, MPI_ERR_RMA_SYNC, fn, "an access or exposure epoch (MPI_Win_start/post) is still open");
  win_wait(*w, [w] { return w->pending_total == 0; });
  for (CmiRmaRemote*& r : w->remotes)
    if (r) CmiRmaDetach(std::exchange(r, nullptr));
  map_release_peers(*w);
  // Nobody may still be reaching this rank's memory: every member has closed its epochs.
  Comm& wc = *comm_get(w->comm);
  if ((rc = coll_barrier(wc, coll_tag(wc)))) return rc;
  if (w->region) CmiRmaDeregister(std::exchange(w->region, nullptr));
  // Attributes go first (their delete callbacks may look at the window), last set first.
  while (!w->attrs.empty()) {
    const auto [k, v] = w->attrs.back();
    w->attrs.pop_back();
    cm::Keyval* kv = cm::keyval_get(k);
    const cm::Keyval copy = kv ? *kv : my_comms().keyvals[static_cast<std::size_t>(k)];
    if (copy.del) {
      MPI_Win h = w->handle;
      const int e = cm::user_call([&] { return reinterpret_cast<MPI_Win_delete_attr_function*>(copy.del)(h, k, v, copy.extra); });
      if (e) return win_error(w, e, fn, "the delete callback of keyval %d failed (%d)", k, e);
    }
    cm::keyval_release(k);
  }
  cm::errh_unref(w->errhandler);
  std::free(w->owned);
  map_release_own(*w);
  PMPI_Comm_free(&w->comm);
  g_windows[static_cast<std::size_t>(*win) - 1].reset();
  *win = MPI_WIN_NULL;
  return MPI_SUCCESS;
}

// ---- names, group, info ------------------------------------------------------------------------------
int PMPI_Win_set_name(MPI_Win win, const char* win_name) {
  int rc;
  Win* w = my_win(win, "MPI_Win_set_name", &rc);
  if (!w) return rc;
  if (!win_name) return win_error(w, MPI_ERR_ARG, "MPI_Win_set_name", "win_name is NULL");
  w->name.assign(win_name, strnlen(win_name, MPI_MAX_OBJECT_NAME - 1));
  return MPI_SUCCESS;
}
int PMPI_Win_get_name(MPI_Win win, char* win_name, int* resultlen) {
  int rc;
  Win* w = my_win(win, "MPI_Win_get_name", &rc);
  if (!w) return rc;
  if (!win_name || !resultlen) return win_error(w, MPI_ERR_ARG, "MPI_Win_get_name", "an output argument is NULL");
  return cm::copy_string(w->name, win_name, MPI_MAX_OBJECT_NAME, resultlen);
}
int PMPI_Win_get_group(MPI_Win win, MPI_Group* group) {
  int rc;
  Win* w = my_win(win, "MPI_Win_get_group", &rc);
  if (!w) return rc;
  if (!group) return win_error(w, MPI_ERR_ARG, "MPI_Win_get_group", "group is NULL");
  *group = cm::group_new(w->world);
  return MPI_SUCCESS;
}
int PMPI_Win_set_info(MPI_Win win, MPI_Info info) {
  int rc;
  Win* w = my_win(win, "MPI_Win_set_info", &rc);
  if (!w) return rc;
  if (info != MPI_INFO_NULL && !cm::info_get(info))
    return win_error(w, MPI_ERR_INFO, "MPI_Win_set_info", "invalid info %d", info);
  merge_info(*w, info);
  return MPI_SUCCESS;
}
int PMPI_Win_get_info(MPI_Win win, MPI_Info* info_used) {
  int rc;
  Win* w = my_win(win, "MPI_Win_get_info", &rc);
  if (!w) return rc;
  if (!info_used) return win_error(w, MPI_ERR_ARG, "MPI_Win_get_info", "info_used is NULL");
  if ((rc = PMPI_Info_create(info_used))) return rc;
  for (const auto& [k, v] : w->info) PMPI_Info_set(*info_used, k.c_str(), v.c_str());
  return MPI_SUCCESS;
}

// ---- attributes: keyvals of the rank's table (kind Win), values on the window -----------------------
int PMPI_Win_create_keyval(MPI_Win_copy_attr_function* win_copy_attr_fn, MPI_Win_delete_attr_function* win_delete_attr_fn,
                           int* win_keyval, void* extra_state) {
  return cm::keyval_create(reinterpret_cast<MPI_Comm_copy_attr_function*>(win_copy_attr_fn),
                           reinterpret_cast<MPI_Comm_delete_attr_function*>(win_delete_attr_fn), win_keyval,
                           extra_state, "MPI_Win_create_keyval", cm::KeyKind::Win);
}
int PMPI_Win_free_keyval(int* win_keyval) {
  return cm::keyval_free(win_keyval, "MPI_Win_free_keyval", cm::KeyKind::Win);
}

namespace {
bool is_win_keyval(int k, bool freed_ok) {
  if (freed_ok) return cm::keyval_live(k) && my_comms().keyvals[static_cast<std::size_t>(k)].kind == cm::KeyKind::Win;
  cm::Keyval* kv = cm::keyval_get(k);
  return kv && kv->kind == cm::KeyKind::Win;
}
}  // namespace

int PMPI_Win_set_attr(MPI_Win win, int win_keyval, void* attribute_val) {
  const char* fn = "MPI_Win_set_attr";
  int rc;
  Win* w = my_win(win, fn, &rc);
  if (!w) return rc;
  if (predefined_key(win_keyval) || !is_win_keyval(win_keyval, false))
    return win_error(w, MPI_ERR_KEYVAL, fn, "invalid window keyval %d", win_keyval);
  auto it = cm::attr_find(w->attrs, win_keyval);
  if (it != w->attrs.end()) {
    const cm::Keyval kv = my_comms().keyvals[static_cast<std::size_t>(win_keyval)];
    if (kv.del) {
      const int e = cm::user_call([&] {
        return reinterpret_cast<MPI_Win_delete_attr_function*>(kv.del)(win, win_keyval, it->second, kv.extra);
      });
      if (e) return win_error(w, e, fn, "the delete callback of keyval %d failed (%d)", win_keyval, e);
    }
    it = cm::attr_find(w->attrs, win_keyval);
    if (it != w->attrs.end()) {
      it->second = attribute_val;
      return MPI_SUCCESS;
    }
  }
  ++cm::keyval_get(win_keyval)->refs;
  w->attrs.emplace_back(win_keyval, attribute_val);
  return MPI_SUCCESS;
}

int PMPI_Win_get_attr(MPI_Win win, int win_keyval, void* attribute_val, int* flag) {
  const char* fn = "MPI_Win_get_attr";
  int rc;
  Win* w = my_win(win, fn, &rc);
  if (!w) return rc;
  if (!attribute_val || !flag) return win_error(w, MPI_ERR_ARG, fn, "an output argument is NULL");
  void** out = static_cast<void**>(attribute_val);
  *flag = 1;
  switch (win_keyval) {
    case MPI_WIN_BASE: *out = w->base; return MPI_SUCCESS;
    case MPI_WIN_SIZE: *out = &w->size; return MPI_SUCCESS;
    case MPI_WIN_DISP_UNIT: *out = &w->disp_unit; return MPI_SUCCESS;
    case MPI_WIN_CREATE_FLAVOR: *out = &w->flavor; return MPI_SUCCESS;
    case MPI_WIN_MODEL: *out = &w->model; return MPI_SUCCESS;
    default: break;
  }
  *flag = 0;
  if (!is_win_keyval(win_keyval, true)) return win_error(w, MPI_ERR_KEYVAL, fn, "invalid window keyval %d", win_keyval);
  auto it = cm::attr_find(w->attrs, win_keyval);
  if (it != w->attrs.end()) {
    *flag = 1;
    *out = it->second;
  }
  return MPI_SUCCESS;
}

int PMPI_Win_delete_attr(MPI_Win win, int win_keyval) {
  const char* fn = "MPI_Win_delete_attr";
  int rc;
  Win* w = my_win(win, fn, &rc);
  if (!w) return rc;
  if (!is_win_keyval(win_keyval, true)) return win_error(w, MPI_ERR_KEYVAL, fn, "invalid window keyval %d", win_keyval);
  auto it = cm::attr_find(w->attrs, win_keyval);
  if (it == w->attrs.end()) return win_error(w, MPI_ERR_KEYVAL, fn, "no attribute for keyval %d", win_keyval);
  const cm::Keyval kv = my_comms().keyvals[static_cast<std::size_t>(win_keyval)];
  if (kv.del) {
    void* v = it->second;
    const int e = cm::user_call(
        [&] { return reinterpret_cast<MPI_Win_delete_attr_function*>(kv.del)(win, win_keyval, v, kv.extra); });
    if (e) return win_error(w, e, fn, "the delete callback of keyval %d failed (%d)", win_keyval, e);
  }
  if (auto at = cm::attr_find(w->attrs, win_keyval); at != w->attrs.end()) w->attrs.erase(at);
  cm::keyval_release(win_keyval);
  return MPI_SUCCESS;
}

// ---- error handlers ----------------------------------------------------------------------------------
int PMPI_Win_create_errhandler(MPI_Win_errhandler_function* win_errhandler_fn, MPI_Errhandler* errhandler) {
  return cm::errhandler_create(reinterpret_cast<MPI_Comm_errhandler_function*>(win_errhandler_fn), errhandler,
                               "MPI_Win_create_errhandler");
}
int PMPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler) {
  int rc;
  Win* w = my_win(win, "MPI_Win_set_errhandler", &rc);
  if (!w) return rc;
  if (!cm::errh_valid(errhandler))
    return win_error(w, MPI_ERR_ARG, "MPI_Win_set_errhandler", "invalid error handler %d", errhandler);
  cm::errh_ref(errhandler);
  cm::errh_unref(w->errhandler);
  w->errhandler = errhandler;
  return MPI_SUCCESS;
}
int PMPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler* errhandler) {
  int rc;
  Win* w = my_win(win, "MPI_Win_get_errhandler", &rc);
  if (!w) return rc;
  if (!errhandler) return win_error(w, MPI_ERR_ARG, "MPI_Win_get_errhandler", "errhandler is NULL");
  *errhandler = w->errhandler;
  cm::errh_ref(*errhandler);
  return MPI_SUCCESS;
}
int PMPI_Win_call_errhandler(MPI_Win win, int errorcode) {
  int rc;
  Win* w = my_win(win, "MPI_Win_call_errhandler", &rc);
  if (!w) return rc;
  win_error(w, errorcode, "MPI_Win_call_errhandler", "error code %d raised by the program", errorcode);
  return MPI_SUCCESS;
}

}  // extern "C"
#pragma GCC visibility pop
