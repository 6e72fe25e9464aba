// Rank migration and checkpoints: the Rank's pup (its MPI state, then its thread with the
// isomalloc slice holding its stack, heap and program copy), AMPI_Migrate and the other
// AMPI extensions, the C PUP interface for AMPI_Register_pup. The design is in
// docs/architecture.md ("AMPI rank migration").
#include "heap.h"
#include "rank.h"
#include "threads.h"
#include "comm/comms.h"
#include "extensions.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace ampi {

namespace {

using PupFn = void (*)(void* p, void* data);
using MigrateFn = void (*)();

// Calls the program's AMPI_Register_pup routines with a C view of `p`, in the rank's heap.
void run_user_pups(PUP::er& p, const std::vector<Rank::PupEntry>& pups, CmiIsoSlice* slice) {
  if (pups.empty()) return;
  heap::UserScope user(slice);
  for (const Rank::PupEntry& e : pups) reinterpret_cast<PupFn>(e.fn)(&p, reinterpret_cast<void*>(e.data));
}

void call_user(std::uintptr_t fn, CmiIsoSlice* slice) {
  if (!fn) return;
  heap::UserScope user(slice);
  reinterpret_cast<MigrateFn>(fn)();
}

template <class T>
void pup_bits(PUP::er& p, T*& ptr) {
  auto bits = reinterpret_cast<std::uintptr_t>(ptr);
  p | bits;
  ptr = reinterpret_cast<T*>(bits);
}

}  // namespace

void Rank::pup(PUP::er& p) {
  p | main_;
  p | world_size_;
  if (p.isUnpacking() && ck::restart_info().restarted && vp_requested() > 0 && vp_requested() != world_size_)
    CkAbort("+restart: the checkpoint holds %d MPI ranks, but +vp asks for %d: a job's rank count is fixed when it "
            "starts; restart with +vp %d or without +vp",
            world_size_, vp_requested(), world_size_);
  p | initialized;
  p | finalized;
  p | exited;
  p | thread_level;
  pup_bits(p, bsend_buffer.buffer);
  p | bsend_buffer.size;
  p | bsend_buffer.attached;
  p | args_;
  p | getopt_.ind;
  p | getopt_.err;
  p | getopt_.opt;
  pup_bits(p, getopt_.arg);  // into the rank's argv, in its slice
  pup_context(p);
  auto w = static_cast<std::uint8_t>(waiting);
  p | w;
  waiting = static_cast<Waiting>(w);
  p | measuring;
  std::uint64_t npups = pups.size();
  p | npups;
  pups.resize(static_cast<std::size_t>(npups));
  for (PupEntry& e : pups) {
    p | e.fn;
    p | e.data;
  }
  p | about_to_migrate;
  p | just_migrated;
  if (p.isUnpacking()) {
    comms_ = comm_table_new(thisIndex, world_size_);
    argv_.clear();
    for (std::string& s : args_) argv_.push_back(s.data());
    argv_.push_back(nullptr);
  }
  pup_comm_state(p, *comms_);
  pup_p2p_state(p, p2p_);
  pup_file_state(p, files_);
  // The thread: stack, heap and program copy, at the same addresses wherever it goes.
  bool has_thread = thread_ && slice_;
  p | has_thread;
  pup_bits(p, image_);
  if (has_thread) {
    std::uint64_t n = p.isUnpacking() ? 0 : CthPackMigratableSize(thread_);
    p | n;
    if (p.isUnpacking()) {
      thread_ = CthUnpackMigratable(p.view(static_cast<std::size_t>(n)), static_cast<std::size_t>(n));
      if (!thread_)
        CkAbort("MPI rank %d cannot be rebuilt on PE %d: %s", thisIndex, CkMyPe(), CmiIsomallocError());
      slice_ = CthMigratableSlice(thread_);
      CthSetData(thread_, this);
      image_arrived();
    } else if (char* dest = p.pack_area(static_cast<std::size_t>(n))) {
      CthPackMigratable(thread_, dest);
    }
  }
  run_user_pups(p, pups, slice_);
}

void Rank::ckJustMigrated() {
  route_add(this);  // messages that waited here for it are delivered; every PE is told
  arrived_ = true;  // its thread calls the program's just_migrated when it goes on (wait_for)
  if (waiting == Waiting::Moving) {  // AMPI_Migrate_to_pe: nothing else resumes it
    waiting = Waiting::None;
    CthAwaken(thread_);
  }
}

void Rank::ResumeFromSync() {
  if (waiting != Waiting::Balancer) return;
  waiting = Waiting::None;
  CthAwaken(thread_);
}

void Rank::resume_after_checkpoint() {
  if (waiting != Waiting::Checkpoint) return;
  waiting = Waiting::None;
  CthAwaken(thread_);
}

void Rank::about_to_leave() {
  // AMPI_Migrate_to_pe called it before asking to move; a balancer's move is decided
  // elsewhere, so the thread is resumed here to call it (wait_for).
  if (about_to_migrate && waiting != Waiting::Moving) run_about_to_migrate();
  p2p_rank_moved(thisIndex, ckLeavingTo());  // it stops delivering here
}

// The program's about_to_migrate routine, on the rank's thread, which waits in
// AMPI_Migrate (wait_for): resumed from here for the call, it suspends again after it.
// When the move is made while another rank's thread runs (a scheduler step it took while
// waiting), a thread cannot be resumed from there: the routine runs on that stack, as this
// rank (its heap, MPI calls as this rank).
void Rank::run_about_to_migrate() {
  if (thread_ && waiting == Waiting::Balancer && !CthSelf()) {
    callback_due_ = true;
    CthResume(thread_);
    if (!callback_due_) return;  // it ran
    callback_due_ = false;       // the thread was queued to run anyway: not resumed
  }
  Rank* running = g_running.rank;
  g_running.rank = this;
  call_user(about_to_migrate, slice_);
  g_running.rank = running;
}

namespace {

// The calling rank's thread waits in AMPI_Migrate until `w` is over (it may wake up on
// another PE, as another Rank object: looked up again each time). The program's migration
// routines run here, on the thread: about_to_migrate when the rank is about to leave
// (Rank::run_about_to_migrate resumes the thread for it), just_migrated once it goes on in
// a new place (a move, or a restart from a checkpoint).
Rank* wait_for(Rank::Waiting w) {
  Rank* r = current_rank();
  r->waiting = w;
  for (;;) {
    r = current_rank();
    if (r->callback_due_) {
      r->callback_due_ = false;
      call_user(r->about_to_migrate, r->slice());
      continue;  // suspends again: the move goes on
    }
    if (r->waiting != w) break;
    rank_suspend();
  }
  if (r->arrived_) {
    r->arrived_ = false;
    call_user(r->just_migrated, r->slice());
    r = current_rank();
  }
  return r;
}

std::string hint(MPI_Info info, const char* key) {
  if (info == MPI_INFO_NULL) return "";
  char value[MPI_MAX_INFO_VAL + 1] = {};
  int flag = 0;
  if (PMPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag) != MPI_SUCCESS || !flag) return "";
  return value;
}

// A move is the rank's own thread's to ask for (it suspends there and moves with the rank).
int not_main_thread(const char* fn) {
  if (!threads::on_pe_thread()) {
    std::fprintf(stderr, "ucharm AMPI: %s was called by a thread other than a rank's main thread: MPI_ERR_OTHER\n", fn);
    return MPI_ERR_OTHER;
  }
  Rank* r = current_rank();
  if (CthSelf() != r->thread())
    return error(MPI_COMM_WORLD, MPI_ERR_OTHER, fn, "only rank %d's main thread may move the rank", r->world_rank());
  return MPI_SUCCESS;
}

[[noreturn]] void no_migration(const char* fn) {
  CkAbort("%s: MPI ranks cannot migrate in this run: %s", fn, rank_migration_unavailable());
}

}  // namespace

}  // namespace ampi

using namespace ampi;

#pragma GCC visibility push(default)
extern "C" {

// Collective over MPI_COMM_WORLD. Hints (MPI_INFO_NULL: balance): ampi_load_balance =
// sync (balance now) | false; ampi_checkpoint = to_file=DIR (write a checkpoint of the
// whole job, +restart DIR resumes here) | false.
int AMPI_Migrate(MPI_Info hints) {
  heap::RuntimeScope scope;
  if (const int rc = not_main_thread("AMPI_Migrate")) return rc;
  Rank* r = current_rank();
  // Nothing on this frame may own process memory while the rank waits below: it may wake
  // up in another process (the hints are read into the stack, which moves).
  bool balance = true;
  char dir[4096] = {};
  if (hints == AMPI_INFO_CHKPT_IN_MEMORY)
    return error(MPI_COMM_WORLD, MPI_ERR_INFO_VALUE, "AMPI_Migrate",
                 "in-memory checkpoints (AMPI_INFO_CHKPT_IN_MEMORY) are not supported: use ampi_checkpoint = "
                 "to_file=DIRECTORY");
  const bool predefined = hints == AMPI_INFO_LB_SYNC || hints == AMPI_INFO_LB_ASYNC;
  {
    const std::string lb = hints == MPI_INFO_NULL || predefined ? "sync" : hint(hints, "ampi_load_balance");
    const std::string ckpt = predefined ? "" : hint(hints, "ampi_checkpoint");
    if (!ckpt.empty() && ckpt != "false") {
      if (ckpt.rfind("to_file=", 0) != 0 || ckpt.size() == 8 || ckpt.size() - 8 >= sizeof dir)
        return error(MPI_COMM_WORLD, MPI_ERR_INFO_VALUE, "AMPI_Migrate",
                     "ampi_checkpoint=%s: give to_file=DIRECTORY (or false)", ckpt.c_str());
      std::memcpy(dir, ckpt.c_str() + 8, ckpt.size() - 8);
    }
    balance = lb == "sync" || lb == "true";
    if (!lb.empty() && !balance && lb != "false" && lb != "async")
      return error(MPI_COMM_WORLD, MPI_ERR_INFO_VALUE, "AMPI_Migrate",
                   "ampi_load_balance=%s: give sync, async or false", lb.c_str());
  }
  rma_check_can_move(r, "AMPI_Migrate");  // the program's obstacle first: one it can remove
  if (dir[0] && !r->slice() && CkNumPes() > 1) no_migration("AMPI_Migrate (ampi_checkpoint)");
  // Threads of the rank still running (or a region, or another thread's call): a checkpoint
  // cannot hold them; a balancer's move waits for a later AMPI_Migrate (the rank stays).
  char why[256];
  const char* obstacle = threads::move_obstacle(r, why, sizeof why);
  if (*obstacle && dir[0])
    return error(MPI_COMM_WORLD, MPI_ERR_OTHER, "AMPI_Migrate", "no checkpoint can be written: %s", obstacle);
  const bool stays = *obstacle != 0;
  if (stays && balance)
    std::fprintf(stderr, "ucharm AMPI: AMPI_Migrate: rank %d stays on PE %d this time: %s\n", r->world_rank(),
                 CkMyPe(), obstacle);
  if (!stays && r->slice()) threads::before_move(r);
  p2p_prepare_to_move(r->p2p());
  {
    Comm& world = *comm_get(MPI_COMM_WORLD);
    const int rc = coll_barrier(world, coll_tag(world));  // every rank is here
    if (rc != MPI_SUCCESS) return rc;
  }
  if (dir[0]) {
    if (r->world_rank() == 0) {
      const auto cb = ck::CkCallback::to<&Rank::resume_after_checkpoint>(ck::ArrayProxy<Rank>(r->array_ref()));
      ck::start_checkpoint(dir, cb, cb);
    }
    r = wait_for(Rank::Waiting::Checkpoint);
  }
  if (balance) {
    // Ranks that cannot move take part but stay where they are.
    const bool was_migratable = r->isMigratable();
    if (!r->slice() || stays) r->setMigratable(false);
    r->AtSync();
    r = wait_for(Rank::Waiting::Balancer);
    if (stays && r->slice()) r->setMigratable(was_migratable);
  }
  p2p_move_done(r->p2p());
  return MPI_SUCCESS;
}

// Not collective: the calling rank moves to PE `dest` and goes on there.
int AMPI_Migrate_to_pe(int dest) {
  heap::RuntimeScope scope;
  if (const int rc = not_main_thread("AMPI_Migrate_to_pe")) return rc;
  Rank* r = current_rank();
  if (dest < 0 || dest >= CkNumPes())
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, "AMPI_Migrate_to_pe", "PE %d is out of range [0, %d)", dest,
                 CkNumPes());
  if (dest == CkMyPe()) return MPI_SUCCESS;
  rma_check_can_move(r, "AMPI_Migrate_to_pe");  // the program's obstacle first: one it can remove
  if (!r->slice()) no_migration("AMPI_Migrate_to_pe");
  if (!r->isMigratable())
    return error(MPI_COMM_WORLD, MPI_ERR_OTHER, "AMPI_Migrate_to_pe",
                 "rank %d is not migratable (AMPI_Set_migratable(0) was called)", r->world_rank());
  char why[256];
  if (const char* obstacle = threads::move_obstacle(r, why, sizeof why); *obstacle)
    return error(MPI_COMM_WORLD, MPI_ERR_OTHER, "AMPI_Migrate_to_pe", "the rank cannot move now: %s", obstacle);
  threads::before_move(r);
  p2p_prepare_to_move(r->p2p());
  call_user(r->about_to_migrate, r->slice());  // on its thread, before it leaves
  r = current_rank();
  r->migrateMe(dest);
  r = wait_for(Rank::Waiting::Moving);
  p2p_move_done(r->p2p());
  return MPI_SUCCESS;
}

int AMPI_Set_migratable(int migratable) {
  current_rank()->setMigratable(migratable != 0);
  return MPI_SUCCESS;
}

// The load the balancer sees: by default the time the rank's thread runs (measured from the
// start); AMPI_Load_set_value replaces it (and stops the measuring until start_measure).
int AMPI_Load_start_measure(void) {
  Rank* r = current_rank();
  if (!r->measuring) r->run_since = CmiWallTimer();
  r->measuring = true;
  return MPI_SUCCESS;
}
int AMPI_Load_stop_measure(void) {
  Rank* r = current_rank();
  if (r->measuring && r->run_since >= 0) r->setObjTime(r->getObjTime() + (CmiWallTimer() - r->run_since));
  r->measuring = false;
  return MPI_SUCCESS;
}
int AMPI_Load_reset_measure(void) {
  Rank* r = current_rank();
  r->setObjTime(0);
  r->run_since = CmiWallTimer();
  return MPI_SUCCESS;
}
int AMPI_Load_set_value(double value) {
  Rank* r = current_rank();
  if (value < 0) return error(MPI_COMM_WORLD, MPI_ERR_ARG, "AMPI_Load_set_value", "a load cannot be negative (%g)", value);
  r->measuring = false;
  r->setObjTime(value);
  return MPI_SUCCESS;
}

int AMPI_My_pe(void) { return CkMyPe(); }
int AMPI_Num_pes(void) { return CkNumPes(); }

int AMPI_Register_pup(MPI_PupFn fn, void* data, int* idx) {
  heap::RuntimeScope scope;
  Rank* r = current_rank();
  if (!fn) return error(MPI_COMM_WORLD, MPI_ERR_ARG, "AMPI_Register_pup", "the PUP function is NULL");
  r->pups.push_back({reinterpret_cast<std::uintptr_t>(fn), reinterpret_cast<std::uintptr_t>(data)});
  if (idx) *idx = static_cast<int>(r->pups.size() - 1);
  return MPI_SUCCESS;
}

int AMPI_Get_pup_data(int idx, void* data) {
  Rank* r = current_rank();
  if (idx < 0 || static_cast<std::size_t>(idx) >= r->pups.size() || !data)
    return error(MPI_COMM_WORLD, MPI_ERR_ARG, "AMPI_Get_pup_data", "no PUP routine %d was registered", idx);
  *static_cast<void**>(data) = reinterpret_cast<void*>(r->pups[static_cast<std::size_t>(idx)].data);
  return MPI_SUCCESS;
}

int AMPI_Register_about_to_migrate(MPI_MigrateFn fn) {
  current_rank()->about_to_migrate = reinterpret_cast<std::uintptr_t>(fn);
  return MPI_SUCCESS;
}
int AMPI_Register_just_migrated(MPI_MigrateFn fn) {
  current_rank()->just_migrated = reinterpret_cast<std::uintptr_t>(fn);
  return MPI_SUCCESS;
}

int AMPI_Yield(void) {
  heap::RuntimeScope scope;
  (void)current_rank();
  rank_yield();
  return MPI_SUCCESS;
}

int AMPI_Print(const char* str) {
  heap::RuntimeScope scope;
  std::printf("[%d] %s\n", current_rank()->world_rank(), str ? str : "(null)");
  std::fflush(stdout);
  return MPI_SUCCESS;
}

int AMPI_Type_is_contiguous(MPI_Datatype datatype, int* flag) {
  heap::RuntimeScope scope;
  if (!flag) return error(MPI_COMM_WORLD, MPI_ERR_ARG, "AMPI_Type_is_contiguous", "flag is NULL");
  TypeFacts f;
  if (!type_facts(datatype, f))
    return error(MPI_COMM_WORLD, MPI_ERR_TYPE, "AMPI_Type_is_contiguous", "invalid datatype %d", datatype);
  *flag = f.contiguous ? 1 : 0;
  return MPI_SUCCESS;
}

int AMPI_System(const char* cmd) { return std::system(cmd); }

// ---- the C PUP interface (for AMPI_Register_pup routines) --------------------------------------
static PUP::er& er(pup_er p) { return *static_cast<PUP::er*>(p); }
int pup_isPacking(const pup_er p) { return er(p).isPacking(); }
int pup_isUnpacking(const pup_er p) { return er(p).isUnpacking(); }
int pup_isSizing(const pup_er p) { return er(p).isSizing(); }
int pup_isDeleting(const pup_er p) { return er(p).isDeleting(); }
void pup_bytes(pup_er p, void* ptr, size_t nbytes) { er(p).bytes(ptr, nbytes); }
#define UCHARM_PUP_C(name, T)                                                             \
  void pup_##name(pup_er p, T* x) { er(p).bytes(x, sizeof(T)); }                          \
  void pup_##name##s(pup_er p, T* x, int n) {                                             \
    if (n > 0) er(p).bytes(x, sizeof(T) * static_cast<std::size_t>(n));                   \
  }
UCHARM_PUP_C(char, char)
UCHARM_PUP_C(short, short)
UCHARM_PUP_C(int, int)
UCHARM_PUP_C(long, long)
UCHARM_PUP_C(longlong, long long)
UCHARM_PUP_C(float, float)
UCHARM_PUP_C(double, double)
UCHARM_PUP_C(pointer, void*)
#undef UCHARM_PUP_C

}  // extern "C"
#pragma GCC visibility pop
