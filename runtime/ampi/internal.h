// Private to runtime/ampi: the interfaces its folders share (laid out by MPI chapter; the
// README's file table says which file does what):
//   rank.cpp     start-up, the rank chare array, options (+vp), Init/Finalize/Abort, exit codes
//   checks.*     the argument checks of every entry point
//   errhan/      error handlers, error classes and strings, not-implemented functions
//   pt2pt/       messages, matching, requests, wait/test, probe, persistent, GPU buffers
//   comm/        communicators, groups, attributes, error handlers, topologies, info
//   datatype/    the datatype table, layouts, pack/unpack, MPI_Type_*, MPI_Pack
//   coll/        collectives (blocking and nonblocking) over the internal point-to-point
//   io/          MPI-IO: files, views, every access family, two-phase collective buffering
//   ops.cpp      predefined and user reduction operations
//   loader.cpp   the program loader: one private copy of the program per rank (ampicc)
#pragma once

#include <mpi.h>
#include <ucharm/pup.h>
#include <ucharm/converse.h>
#ifndef UCHARM_AMPI_NO_PMPI_RENAME
// PMPI_X definitions here are the runtime's ampi_impl_X; the generated PMPI_X wrap them.
#include "pmpi_impl.h"
#endif

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ampi {

// ---- errors (errhan/errors.cpp) -----------------------------------------------------------------
// Stops the job: "MPI_X is not implemented by ucharm's AMPI".
[[noreturn]] void not_implemented(const char* fn);
// An error in MPI call `fn` (e.g. "MPI_Send") on `comm`: under MPI_ERRORS_ARE_FATAL (the
// default) prints "<fn>: <message> (<error class name>)" and ends the job with a non-zero
// exit code; under MPI_ERRORS_RETURN (or a user handler that returns) returns `code`.
// MPI_COMM_NULL / an invalid comm: MPI_COMM_WORLD's handler decides.
int error(MPI_Comm comm, int code, const char* fn, const char* fmt, ...) __attribute__((format(printf, 4, 5)));
// The name of an error class ("MPI_ERR_RANK").
const char* error_class_name(int code);
// Error codes and classes the program added (MPI_Add_error_class/code, errhan/user.cpp):
// false when `code` is none of them; else its class, and its string (MPI_Add_error_string).
bool user_error(int code, int* error_class, const char** text);

// ---- datatypes (datatype/) ------------------------------------------------------------
// A valid handle: predefined, or created and not yet freed (committed or not).
bool type_valid(MPI_Datatype t);
// A derived datatype the program freed with MPI_Type_free (for messages: not type_valid).
bool type_freed(MPI_Datatype t);
// Valid and usable for communication (predefined or committed).
bool type_committed(MPI_Datatype t);
// Bytes of data in one element (MPI_Type_size), and the extent (ub - lb).
std::size_t type_size(MPI_Datatype t);
std::ptrdiff_t type_extent(MPI_Datatype t);
std::ptrdiff_t type_lb(MPI_Datatype t);
// True when `count` elements are one contiguous block of count*type_size bytes at buf + lb
// (the fast path: no pack/unpack needed).
bool type_contiguous(MPI_Datatype t);
// What a send or receive needs of a type, in one lookup (the per-message path).
struct TypeFacts {
  std::size_t size = 0;
  std::ptrdiff_t lb = 0;
  bool contiguous = false;
};
// False (facts untouched) when t is not usable for communication (see type_committed); a
// type the program freed is answered while the runtime still holds it (type_retain).
// Predefined types are answered from a table here: this is on every message's path.
namespace detail {
extern const std::array<TypeFacts, UCHARM_MPI_PREDEFINED_TYPES> predefined_facts;
bool derived_type_facts(MPI_Datatype t, TypeFacts& out);
}  // namespace detail
inline bool type_facts(MPI_Datatype t, TypeFacts& out) {
  if (t > MPI_DATATYPE_NULL && t < UCHARM_MPI_PREDEFINED_TYPES && t != MPI_UB && t != MPI_LB) {
    out = detail::predefined_facts[static_cast<std::size_t>(t)];
    return true;
  }
  return detail::derived_type_facts(t, out);
}
// Packs `count` elements at `buf` into `out` (count * type_size bytes, dense).
void type_pack(const void* buf, int count, MPI_Datatype t, void* out);
// Unpacks `bytes` (at most count * type_size, a whole number of basic elements) from `in`
// into `count` elements at `buf`.
void type_unpack(const void* in, std::size_t bytes, void* buf, int count, MPI_Datatype t);
// A name for messages ("MPI_DOUBLE", "derived datatype 45").
std::string type_name(MPI_Datatype t);
// Number of basic elements in `bytes` of packed data of type t (MPI_Get_elements);
// -1 (MPI_UNDEFINED) when bytes is not a whole number of them.
long long type_basic_elements(MPI_Datatype t, std::size_t bytes);
// The one basic type of all of t's elements; MPI_DATATYPE_NULL when they are not one type.
MPI_Datatype type_uniform_basic(MPI_Datatype t);
// fn gets `reps` blocks of `n` consecutive items of `basic`, `stride` bytes apart from `offset` on.
using TypeRunFn = void (*)(void* ctx, std::ptrdiff_t offset, std::size_t n, std::size_t reps, std::ptrdiff_t stride,
                           MPI_Datatype basic);
// Calls fn for the runs of `count` elements of t.
void type_for_each_run(MPI_Datatype t, int count, TypeRunFn fn, void* ctx);
// Keep a derived type alive while the runtime uses it (the program may free it meanwhile).
void type_retain(MPI_Datatype t);
void type_release(MPI_Datatype t);
// The calling rank's attributes of a datatype (comm/attributes.cpp): MPI_Type_dup copies them
// by their copy callbacks, MPI_Type_free deletes them (last set first); the first error.
int type_attrs_copy(MPI_Datatype from, MPI_Datatype to, const char* fn);
int type_attrs_delete(MPI_Datatype t);

// ---- reduction operations (ops.cpp) --------------------------------------------------------
bool op_valid(MPI_Op op);
bool op_commutative(MPI_Op op);
// Whether op_apply accepts t (user ops: always; a predefined op: when its basic type allows,
// e.g. not MPI_BAND on MPI_DOUBLE). Reductions check it when called, on every member alike.
bool op_defined_on(MPI_Op op, MPI_Datatype t);
// inout[i] = in[i] op inout[i] for `count` elements of type t laid out as the datatype says
// (MPI's user-function convention: `in` holds the lower ranks' contribution). Returns
// MPI_SUCCESS, or MPI_ERR_OP when the op is not defined on the type (a predefined op on a
// type it does not support, e.g. MPI_BAND on MPI_DOUBLE).
int op_apply(MPI_Op op, const void* in, void* inout, int count, MPI_Datatype t);

// ---- communicators (comm/) ---------------------------------------------------------------
// Matching contexts: every communicator has two, one for point-to-point (even) and one for
// its collectives (odd), so runtime traffic never matches a user's receive.
enum class Ctx : std::uint8_t { P2P = 0, Coll = 1 };
struct Intercomm;
struct Comm {
  MPI_Comm handle = MPI_COMM_NULL;
  std::uint32_t context = 0;      // even; the collective context is context + 1
  std::vector<int> members;       // the world rank of each member, by rank in this comm
  int rank = MPI_UNDEFINED;       // this rank's position in `members`
  MPI_Errhandler errhandler = MPI_ERRORS_ARE_FATAL;
  std::uint32_t coll_seq = 0;     // collectives started on it (nonblocking ones use it in tags)
  // Intercommunicators only (comm/intercomm.cpp): `members` is then the remote group (the
  // ranks point-to-point names; `rank` stays the position in the local group, the source
  // the other side sees) and `inter` holds the local group.
  std::shared_ptr<Intercomm> inter;
  int size() const { return static_cast<int>(members.size()); }
  std::uint32_t ctx(Ctx c) const { return context + static_cast<std::uint32_t>(c); }
};
// The local side of an intercommunicator: its group as an intracommunicator on a context of
// its own (the intercommunicator's context + 2), which the collectives use within a group.
// Its tags come from the intercommunicator's coll_tag, so both stay in step.
struct Intercomm {
  Comm local;
};
// A rank's communicators (and groups, keyvals, ...): comm/comms.h defines it; each rank owns one.
struct CommTable;
struct CommTableDeleter { void operator()(CommTable* t) const; };
using CommTablePtr = std::unique_ptr<CommTable, CommTableDeleter>;
// A new table holding MPI_COMM_WORLD and MPI_COMM_SELF of world rank `world_rank`.
CommTablePtr comm_table_new(int world_rank, int world_size);
// The calling rank's communicator for handle `c`; nullptr when it is not a valid one.
Comm* comm_get(MPI_Comm c);
// The neighbours of the calling rank in comm's topology (comm/distgraph.cpp), as the
// neighbourhood collectives use them: sources (receive blocks) and destinations (send
// blocks), in MPI's order; MPI_PROC_NULL for a Cartesian neighbour off a non-periodic edge.
// An error (MPI_ERR_TOPOLOGY when comm has none) through comm's handler.
int topo_neighbors(MPI_Comm comm, const char* fn, std::vector<int>* sources, std::vector<int>* destinations);
// The function of a user error handler (MPI_Comm_create_errhandler); nullptr for the
// predefined ones and invalid handles.
MPI_Comm_errhandler_function* errhandler_function(MPI_Errhandler h);

// ---- collectives inside the runtime (coll/) ------------------------------------
// The tag of the next collective on c (advances c.coll_seq): every member calls it once per
// collective, in the same order, so concurrent collectives (a nonblocking one still running
// when the next starts) never match each other's messages. Tags below kCollTagFree.
int coll_tag(Comm& c);
// Collective-context tags from here up are not used by coll_tag: exchanges that are not
// collective over the whole communicator (MPI_Comm_create_group) take theirs from here.
inline constexpr int kCollTagFree = 1 << 30;
// The algorithms on c's collective context with the given tag: host buffers, arguments
// already checked, MPI_IN_PLACE not accepted (pass the same pointer instead). Return MPI
// error codes (MPI_ERR_OP where op_apply refuses the type).
int coll_barrier(Comm& c, int tag);
int coll_bcast(void* buf, int count, MPI_Datatype t, int root, Comm& c, int tag);
int coll_allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype t, MPI_Op op, Comm& c, int tag);
// Every member's `count` elements, by rank, into recvbuf (size * count elements of t).
int coll_allgather(const void* sendbuf, int count, MPI_Datatype t, void* recvbuf, Comm& c, int tag);

// ---- the calling rank (rank.cpp) ------------------------------------------------------------
class Rank;              // rank.h: one MPI rank, a chare array element running main
// The rank whose thread runs now; nullptr in the scheduler and its handlers. rank.cpp sets
// it whenever a rank's thread starts or resumes and clears it when it suspends, so that
// every MPI call finds its rank with one load (non-SMP: one PE per process).
struct Running {
  Rank* rank = nullptr;
};
extern Running g_running;
[[noreturn]] void outside_rank();  // stops the job: an MPI call outside a rank's thread
// The calling rank; stops the job when called outside one.
inline Rank* current_rank() {
  if (Rank* r = g_running.rank) [[likely]] return r;
  outside_rank();
}
int world_rank();        // of the calling rank
int world_size();
CommTable& my_comms();   // the calling rank's table
bool staging_forced();   // +ampi-staging: device buffers go through host memory
bool cuda_loaded();      // the CUDA driver is loaded: buffers may be device memory
// `p` is CUDA device memory (pt2pt/transfer.cpp; no query at all without the CUDA driver loaded).
bool is_device(const void* p);
// Copies n bytes between any two buffers, host or device (cudaMemcpy when either is device
// memory), in the calling thread.
void copy_bytes_any(void* dst, const void* src, std::size_t n);
int coll_crowded_setting();  // +ampi-coll-crowded: 0 or 1 (the collectives' choice, coll/); -1: auto
std::size_t direct_min();  // +ampi-direct-min: contiguous host sends this large go zero-copy
std::size_t rank_stack_size();  // +ampi-stacksize: every thread of a rank gets this much
bool wtime_is_global();  // MPI_WTIME_IS_GLOBAL: every rank reads one clock (rank.cpp)
// The calling thread waits until CthAwaken (suspend) or lets others run (yield). Ranks
// sharing a PE share its OS thread, and so the current CUDA context: each rank gets its
// own back when it runs again, as a process would.
void rank_suspend();
void rank_yield();
// rank_wait(done) (rank.h): waits running the scheduler's steps on the rank's own stack.
// A polling call (Test, Iprobe) that found nothing: one scheduler step, or a yield.
void rank_poll();

// ---- point-to-point inside the runtime (pt2pt/) ----------------------------------------------
// The MPI semantics without error handlers or argument checks (callers check): what the
// collectives and communicator code build on. `ctx` picks the matching context; `src` may be
// MPI_ANY_SOURCE, `tag` MPI_ANY_TAG. Return MPI error codes.
int isend(const void* buf, int count, MPI_Datatype t, int dest, int tag, Comm& c, Ctx ctx, MPI_Request* req);
int irecv(void* buf, int count, MPI_Datatype t, int src, int tag, Comm& c, Ctx ctx, MPI_Request* req);
int send(const void* buf, int count, MPI_Datatype t, int dest, int tag, Comm& c, Ctx ctx);
// Whether that blocking send returns without the receiver (copied, or taken from the buffer
// by UCX), so that it costs no more than an isend and a later wait.
bool send_returns_at_once(const void* buf, int count, MPI_Datatype t, int dest, const Comm& c);
int recv(void* buf, int count, MPI_Datatype t, int src, int tag, Comm& c, Ctx ctx, MPI_Status* st);
// Waits for all (MPI_REQUEST_NULL entries are skipped) and frees them; statuses may be null.
int wait_all(int n, MPI_Request* reqs, MPI_Status* statuses);
// A request that code of the runtime completes itself (nonblocking collectives): runs
// `body(arg)` in a new user-level thread of the calling rank (it may block in the calls
// above) and completes the request when body returns; `body` owns `arg`. `reuse`: a
// started persistent collective's request (coll/persistent.cpp), completed instead of a new one.
MPI_Request start_task(int (*body)(void* arg), void* arg, MPI_Request reuse = 0);
// The communicator whose error handler reports request h's error at completion (a task's).
void request_set_comm(MPI_Request h, MPI_Comm comm);

// ---- one-sided communication (rma/) ---------------------------------------------------------
// Stops the job, naming the window, when rank r has an RMA window open: its window memory
// and PE are fixed while the window lives (AMPI_Migrate, AMPI_Migrate_to_pe call it).
void rma_check_can_move(Rank* r, const char* fn);

// ---- MPI-IO (io/) ---------------------------------------------------------------------------
// A rank's open files: io/io.h defines the table; each rank owns one.
namespace io { struct FileTable; }
struct FileTableDeleter { void operator()(io::FileTable* t) const; };
using FileTablePtr = std::unique_ptr<io::FileTable, FileTableDeleter>;
FileTablePtr file_table_new();
// Packs a rank's files for a move or a checkpoint (path, amode, view, pointers, hints, ...;
// not their contents); unpacking (after pup_comm_state) reopens each path in this process.
void pup_file_state(PUP::er& p, FileTablePtr& t);

// ---- program start (rank.cpp; called by the program's loader) -----------------------------
// What the loader gives the runtime: where each rank's main is.
using MainFn = int (*)(int, char**);
struct Program {
  void* context = nullptr;
  // The main of rank `rank`: of a private copy of the program for this rank when
  // `privatized`, else the one shared main. Called on the PE that runs the rank, in the
  // rank's thread, before its main starts; nullptr (after printing why) stops the job.
  // `slice`: the rank's isomalloc slice (nullptr: none); a copy loaded into it moves with
  // the rank, and `*image` then names it for the hooks below (else nullptr).
  MainFn (*main_for)(void* context, int rank, CmiIsoSlice* slice, void** image) = nullptr;
  // A rank's copy moves with its slice: `departed` runs on the PE it leaves, after the slice
  // was packed and before it is released there; `arrived` on the PE it reaches, after the
  // slice was unpacked and before the rank's thread runs again (null: copies cannot move).
  void (*departed)(void* context, void* image) = nullptr;
  void (*arrived)(void* context, void* image) = nullptr;
  // False: one copy of the program's globals per process, so the runtime refuses to put
  // more than one rank on a PE (a clear error naming +vp), never shares them silently.
  bool privatized = false;
  const char* how = "";  // the method, for messages ("one dlopen'ed copy per rank")
};

// ---- rank migration (issue 18; /work/notes design: docs/architecture.md "AMPI rank migration") ----
// The rank's MPI state, packed for a move or a checkpoint and rebuilt on arrival. The comm
// side (comm/, datatype/, ops.cpp, errhan/): communicators, groups, keyvals, error handlers,
// info, user error classes, the rank's derived datatypes and user ops. The point-to-point
// side (pt2pt/, coll/): requests of every kind, matching queues, unexpected and Mprobe'd
// messages (their bytes). Unpacking fills a freshly constructed table / P2p.
class P2p;
void pup_comm_state(PUP::er& p, CommTable& t);
void pup_p2p_state(PUP::er& p, P2p& q);
// Runs in the rank's thread (AMPI_Migrate, before the move): waits until the rank's
// nonblocking-collective tasks have finished and no zero-copy transfer of it is pending
// (an unexpected direct message's data is pulled now), so that what remains packs.
void p2p_prepare_to_move(P2p& q);

}  // namespace ampi

// The loader's entry: parses and removes AMPI's options (+vp N, ...) from argv, starts the
// runtime and returns the job's exit code on this process.
extern "C" __attribute__((visibility("default"))) int ucharm_ampi_start(int argc, char** argv,
                                                                      const ampi::Program* program);
