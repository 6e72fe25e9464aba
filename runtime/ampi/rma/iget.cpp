// Charm++'s AMPI_Iget family: a get from a window into a buffer the runtime allocates,
// needing no epoch. AMPI_Iget starts an MPI_Rget outside any epoch (get_any_time) into a
// block of the rank's own heap; AMPI_Iget_wait waits for it and names the block in the
// status (MPI_TAG: the get's number); AMPI_Iget_data hands the block out; AMPI_Iget_free
// releases it. The blocks of this process are found by number: a rank with an open window
// does not move, and the program frees its gets before freeing the window.
#include "rma/rma.h"
#include "heap.h"

#include <climits>
#include <cstdlib>
#include <vector>

namespace ampi::rma {
namespace {

struct Iget {
  int number = 0;
  char* block = nullptr;  // in the rank's heap
  MPI_Request req = MPI_REQUEST_NULL;  // until AMPI_Iget_wait
  int owner = -1;  // world rank
  int target = 0;
  long long bytes = 0;
  MPI_Comm comm = MPI_COMM_NULL;
};

// The gets of this process not yet freed (one PE per process: no lock). Few at a time: a
// linear search.
struct Igets {
  std::vector<Iget> live;
  int next = 1;
};
Igets& igets() {
  static Igets g;
  return g;
}

Iget* find_number(int number) {
  for (Iget& g : igets().live)
    if (g.number == number && g.owner == world_rank()) return &g;
  return nullptr;
}
Iget* find_request(MPI_Request req) {
  for (Iget& g : igets().live)
    if (g.req == req && req != MPI_REQUEST_NULL && g.owner == world_rank()) return &g;
  return nullptr;
}

int unknown(const char* fn, const MPI_Status& st) {
  return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn,
               "the status names no get of this rank (MPI_TAG %d): pass the status AMPI_Iget_wait filled", st.MPI_TAG);
}

void fill(MPI_Status* st, const Iget& g) {
  if (!st) return;
  *st = MPI_Status{};
  st->MPI_SOURCE = g.target;
  st->MPI_TAG = g.number;
  st->MPI_ERROR = MPI_SUCCESS;
  st->MPI_COMM = g.comm;
  st->MPI_LENGTH = g.bytes > INT_MAX ? INT_MAX : static_cast<int>(g.bytes);
  st->ucharm_bytes = g.bytes;
}

}  // namespace
}  // namespace ampi::rma

using namespace ampi;
using namespace ampi::rma;

#pragma GCC visibility push(default)
extern "C" {

int AMPI_Iget(MPI_Aint orgdisp, int orgcnt, MPI_Datatype orgtype, int rank, MPI_Aint targdisp, int targcnt,
              MPI_Datatype targtype, MPI_Win win, MPI_Request* request) {
  heap::RuntimeScope scope;
  constexpr const char* fn = "AMPI_Iget";
  if (!request) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "request is NULL");
  *request = MPI_REQUEST_NULL;
  int rc = MPI_SUCCESS;
  Win* w = my_win(win, fn, &rc);
  if (!w) return rc;
  if (orgcnt < 0) return win_error(w, MPI_ERR_COUNT, fn, "orgcnt is negative (%d)", orgcnt);
  if (orgdisp < 0) return win_error(w, MPI_ERR_DISP, fn, "orgdisp is negative (%ld)", static_cast<long>(orgdisp));
  if (!type_committed(orgtype))
    return win_error(w, MPI_ERR_TYPE, fn, "the origin datatype is not a committed datatype");
  if (type_lb(orgtype) < 0)
    return win_error(w, MPI_ERR_TYPE, fn, "the origin datatype starts before its first byte (lower bound %ld)",
                     static_cast<long>(type_lb(orgtype)));
  const std::size_t span = orgcnt ? static_cast<std::size_t>(type_lb(orgtype)) +
                                        static_cast<std::size_t>(orgcnt) * static_cast<std::size_t>(type_extent(orgtype))
                                  : 0;
  char* block;
  {
    heap::UserScope user(nullptr);  // the rank's own memory: the program reads it
    block = static_cast<char*>(std::malloc(static_cast<std::size_t>(orgdisp) + span + 1));
  }
  if (!block) return win_error(w, MPI_ERR_NO_MEM, fn, "out of memory for %zu bytes", span);
  MPI_Request req = MPI_REQUEST_NULL;
  rc = get_any_time(block + orgdisp, orgcnt, orgtype, rank, targdisp, targcnt, targtype, win, &req, fn);
  if (rc != MPI_SUCCESS) {
    heap::UserScope user(nullptr);
    std::free(block);
    return rc;
  }
  Igets& all = igets();
  Iget g;
  g.number = all.next;
  all.next = all.next == INT_MAX ? 1 : all.next + 1;
  g.block = block;
  g.req = req;
  g.owner = world_rank();
  g.target = rank;
  g.bytes = static_cast<long long>(orgcnt) * static_cast<long long>(type_size(orgtype));
  g.comm = w->comm;
  all.live.push_back(g);
  *request = req;
  return MPI_SUCCESS;
}

// Waits for the data; the status names the get from then on (the request is freed).
int AMPI_Iget_wait(MPI_Request* request, MPI_Status* status, MPI_Win win) {
  heap::RuntimeScope scope;
  constexpr const char* fn = "AMPI_Iget_wait";
  int rc = MPI_SUCCESS;
  if (!my_win(win, fn, &rc)) return rc;
  if (!request) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "request is NULL");
  Iget* g = find_request(*request);
  if (!g) return error(MPI_COMM_WORLD, MPI_ERR_REQUEST, fn, "request %d is not a pending AMPI_Iget of this rank", *request);
  const int number = g->number;
  if ((rc = PMPI_Wait(request, MPI_STATUS_IGNORE)) != MPI_SUCCESS) return rc;
  g = find_number(number);  // the list may have grown meanwhile (other ranks' gets)
  g->req = MPI_REQUEST_NULL;
  fill(status, *g);
  return MPI_SUCCESS;
}

// *(void**)data = the block the data landed in (its first byte; the data starts orgdisp
// bytes in).
int AMPI_Iget_data(void* data, MPI_Status status) {
  heap::RuntimeScope scope;
  (void)current_rank();
  if (!data) return error(MPI_COMM_WORLD, MPI_ERR_ARG, "AMPI_Iget_data", "data is NULL (pass the address of a pointer)");
  Iget* g = find_number(status.MPI_TAG);
  if (!g || g->req != MPI_REQUEST_NULL) return unknown("AMPI_Iget_data", status);
  *static_cast<void**>(data) = g->block;
  return MPI_SUCCESS;
}

// Frees the block (after waiting for the get, if the program did not).
int AMPI_Iget_free(MPI_Request* request, MPI_Status* status, MPI_Win win) {
  heap::RuntimeScope scope;
  constexpr const char* fn = "AMPI_Iget_free";
  int rc = MPI_SUCCESS;
  if (!my_win(win, fn, &rc)) return rc;
  if (!status) return error(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "status is NULL");
  Iget* g = nullptr;
  if (request && *request != MPI_REQUEST_NULL) {
    if (!find_request(*request))
      return error(MPI_COMM_WORLD, MPI_ERR_REQUEST, fn, "request %d is not a pending AMPI_Iget of this rank", *request);
    if ((rc = AMPI_Iget_wait(request, status, win)) != MPI_SUCCESS) return rc;
  }
  g = find_number(status->MPI_TAG);
  if (!g || g->req != MPI_REQUEST_NULL) return unknown(fn, *status);
  {
    heap::UserScope user(nullptr);
    std::free(g->block);
  }
  auto& live = igets().live;
  live.erase(live.begin() + (g - live.data()));
  if (request) *request = MPI_REQUEST_NULL;
  return MPI_SUCCESS;
}

}  // extern "C"
#pragma GCC visibility pop
