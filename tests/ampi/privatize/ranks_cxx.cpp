// A C++ MPI program as ampicxx builds it, several ranks per process: static objects (one
// construction per rank's copy, destructors at the job's end), a global std::string and
// std::map, exceptions (the program's own type, one from libstdc++, one thrown through
// frames of the program), a thread_local and a function-local static, each per rank.
// Prints "rank R: c++ ok" when every check holds, else what failed.
#include <mpi.h>

#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace {
int constructions = 0;  // of `tracked` in this copy: 1 if the copy's constructors ran once
int my_rank = -1;

struct Tracked {
  Tracked() { ++constructions; }
  ~Tracked() {
    if (my_rank >= 0) std::printf("rank %d: static destructor\n", my_rank);
  }
};
Tracked tracked;

std::string name = "unset";
std::map<int, std::string> seen;
thread_local int tls_rank = -1;

struct RankError : std::runtime_error {
  int rank;
  explicit RankError(int r) : std::runtime_error("rank error"), rank(r) {}
};

[[gnu::noinline]] void thrower(int depth, int rank) {
  if (depth == 0) throw RankError(rank);
  thrower(depth - 1, rank);
}

int local_static(int rank) {
  static int first = rank;  // initialized by this copy's first call
  return first;
}

void pass_token(int rank, int size) {
  int token = 0, next = (rank + 1) % size, prev = (rank + size - 1) % size;
  if (rank == 0) {
    MPI_Send(&token, 1, MPI_INT, next, 0, MPI_COMM_WORLD);
    MPI_Recv(&token, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(&token, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(&token, 1, MPI_INT, next, 0, MPI_COMM_WORLD);
  }
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  my_rank = rank;
  name = "rank " + std::to_string(rank);
  seen[rank] = name;
  tls_rank = rank;
  const int first = local_static(rank);
  pass_token(rank, size);  // every rank has written its globals
  pass_token(rank, size);
  std::vector<std::string> failed;
  if (constructions != 1) failed.push_back("static constructed " + std::to_string(constructions) + " times");
  if (name != "rank " + std::to_string(rank)) failed.push_back("global string holds " + name);
  if (seen.size() != 1 || seen.begin()->first != rank) failed.push_back("global map shared");
  if (tls_rank != rank) failed.push_back("thread_local holds " + std::to_string(tls_rank));
  if (first != rank || local_static(-1) != rank) failed.push_back("function-local static shared");
  try {
    thrower(5, rank);
    failed.push_back("no exception");
  } catch (const RankError& e) {
    if (e.rank != rank) failed.push_back("wrong exception");
  }
  try {
    (void)std::vector<int>(3).at(7);
    failed.push_back("no library exception");
  } catch (const std::out_of_range&) {
  }
  if (failed.empty()) {
    std::printf("rank %d: c++ ok\n", rank);
  } else {
    for (const std::string& f : failed) std::printf("rank %d: FAILED %s\n", rank, f.c_str());
  }
  MPI_Finalize();
  return failed.empty() ? 0 : 1;
}
