// std::thread and std::mutex in ranks under MPI_THREAD_MULTIPLE: threads started through the
// C++ library belong to the rank that started them; the main thread waits for a std::mutex
// and in std::thread::join while the threads are in MPI.
#include <mpi.h>

#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

namespace {
int rank = 0, size = 1;
std::mutex lock;
int done = 0;

void fail(const char* what, int v) {
  std::fprintf(stderr, "rank %d: %s (%d)\n", rank, what, v);
  MPI_Abort(MPI_COMM_WORLD, 1);
}
}  // namespace

int main(int argc, char** argv) {
  int provided = -1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided != MPI_THREAD_MULTIPLE) fail("provided", provided);
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([=] {
      for (int i = 0; i < 20; ++i) {
        int out = rank * 1000 + t * 100 + i, in = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, next, t, &in, 1, MPI_INT, prev, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (in != prev * 1000 + t * 100 + i) fail("sendrecv", in);
        // A call to itself with the lock held: the main thread waits for the lock meanwhile.
        std::lock_guard g(lock);
        MPI_Sendrecv(&out, 1, MPI_INT, rank, 10 + t, &in, 1, MPI_INT, rank, 10 + t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (in != out) fail("sendrecv to itself", in);
      }
      std::lock_guard g(lock);
      ++done;
    });
  for (;;) {
    std::lock_guard g(lock);
    if (done == 3) break;
  }
  for (auto& t : threads) t.join();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::printf("thread_cxx: ok (%d ranks)\n", size);
  MPI_Finalize();
  return 0;
}
