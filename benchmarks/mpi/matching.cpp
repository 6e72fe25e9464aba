// Matching and completion costs with many outstanding requests, one source for ucharm's
// AMPI and any MPI library (2 ranks):
//   waitall    rank 0 posts N Irecvs (tags 0..N-1), rank 1 sends tags N-1..0 (each message
//              matches the last posted receive), rank 0 waits with one MPI_Waitall
//   waitany    the same, rank 0 completes them with N calls of MPI_Waitany
//   unexpected rank 1 sends tags 0..N-1 first, rank 0 then receives them in reverse order
//              (each receive matches the last queued message)
//   ibarrier   per-call cost of MPI_Ibarrier + MPI_Wait, on MPI_COMM_SELF and on the world
// Each figure: the median of `reps` runs (seconds for the matching tests, from a barrier to
// rank 0's completion; microseconds per call for ibarrier), printed by rank 0.
//   ucharmrun -n 2 mpi_matching_ampi [-n 16000] [-r 5]
//   mpirun -np 2 mpi_matching_ompi
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {  // no mutable globals: under AMPI several ranks share one process

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One run of a matching test; returns rank 0's time. `any`: Waitany loop instead of Waitall.
double posted(int rank, int n, bool any) {
  std::vector<int> buf(static_cast<std::size_t>(n));
  std::vector<MPI_Request> req(static_cast<std::size_t>(n), MPI_REQUEST_NULL);
  if (rank == 0)
    for (int i = 0; i < n; ++i) MPI_Irecv(&buf[static_cast<std::size_t>(i)], 1, MPI_INT, 1, i, MPI_COMM_WORLD, &req[static_cast<std::size_t>(i)]);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  if (rank == 1) {
    for (int i = n - 1; i >= 0; --i) MPI_Send(&i, 1, MPI_INT, 0, i, MPI_COMM_WORLD);
  } else if (!any) {
    MPI_Waitall(n, req.data(), MPI_STATUSES_IGNORE);
  } else {
    for (int k = 0; k < n; ++k) {
      int idx;
      MPI_Waitany(n, req.data(), &idx, MPI_STATUS_IGNORE);
      if (idx == MPI_UNDEFINED || buf[static_cast<std::size_t>(idx)] != idx) {
        std::fprintf(stderr, "matching: wrong message at index %d\n", idx);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
  }
  const double t = MPI_Wtime() - t0;
  if (rank == 0)
    for (int i = 0; i < n; ++i)
      if (buf[static_cast<std::size_t>(i)] != i) {
        std::fprintf(stderr, "matching: tag %d received %d\n", i, buf[static_cast<std::size_t>(i)]);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
  MPI_Barrier(MPI_COMM_WORLD);
  return t;
}

double unexpected(int rank, int n) {
  if (rank == 1)
    for (int i = 0; i < n; ++i) MPI_Send(&i, 1, MPI_INT, 0, i, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);  // every message is queued at rank 0 (pairs stay in order)
  const double t0 = MPI_Wtime();
  if (rank == 0)
    for (int i = n - 1; i >= 0; --i) {
      int v = -1;
      MPI_Recv(&v, 1, MPI_INT, 1, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (v != i) {
        std::fprintf(stderr, "matching: tag %d received %d\n", i, v);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
  const double t = MPI_Wtime() - t0;
  MPI_Barrier(MPI_COMM_WORLD);
  return t;
}

// Microseconds per Ibarrier + Wait on comm.
double ibarrier(MPI_Comm comm, int iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    MPI_Request r;
    MPI_Ibarrier(comm, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  const double t = MPI_Wtime() - t0;
  MPI_Barrier(MPI_COMM_WORLD);
  return t * 1e6 / iters;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int n = 16000, reps = 5, iters = 20000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "-n")) n = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "-r")) reps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "-i")) iters = std::atoi(argv[i + 1]);
  }
  if (size != 2 || n <= 0 || reps <= 0 || iters <= 0) {
    if (rank == 0) std::fprintf(stderr, "usage: 2 ranks; matching [-n receives] [-r repeats] [-i ibarrier iterations]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  std::vector<double> wall, wany, unexp, self, world;
  for (int r = 0; r < reps; ++r) {
    wall.push_back(posted(rank, n, false));
    wany.push_back(posted(rank, n, true));
    unexp.push_back(unexpected(rank, n));
    self.push_back(ibarrier(MPI_COMM_SELF, iters));
    world.push_back(ibarrier(MPI_COMM_WORLD, iters));
  }
  if (rank == 0) {
    std::printf("waitall    %d receives, reverse tag order: %.4f s\n", n, median(wall));
    std::printf("waitany    %d receives, reverse tag order: %.4f s\n", n, median(wany));
    std::printf("unexpected %d messages, reverse tag order: %.4f s\n", n, median(unexp));
    std::printf("ibarrier   MPI_COMM_SELF:  %.2f us per Ibarrier+Wait\n", median(self));
    std::printf("ibarrier   MPI_COMM_WORLD: %.2f us per Ibarrier+Wait\n", median(world));
  }
  MPI_Finalize();
  return 0;
}
