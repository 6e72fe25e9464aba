// C++ exceptions in ranks that share a PE (+vp) and in a rank that moves. Every rank throws,
// catches and, inside its catch handler, calls MPI that blocks (so the other ranks of its
// PE run, and throw and catch their own exceptions meanwhile), then looks at what it
// caught: `throw;`, std::current_exception, a nested exception inside the handler, a
// rethrow out of the handler, std::uncaught_exceptions in a destructor that calls MPI while
// the stack unwinds. Under AMPI (unless the argument is "nomove") the odd ranks move to the
// next PE inside a handler and rethrow there. Standard MPI otherwise: run_openmpi.sh runs it
// under a system MPI. Prints "eh_vp: ok (N ranks)" from rank 0.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

namespace {

struct Err {
  int rank, step;
};

struct Checker {
  int rank = 0, size = 0, fails = 0;
  const char* section = "";
  void operator()(bool ok, int line, const char* what) {
    if (ok) return;
    ++fails;
    std::fprintf(stderr, "eh_vp [rank %d/%d] %s: line %d: check failed: %s\n", rank, size, section, line, what);
    std::fflush(stderr);
  }
};
#define CHECK(c, cond) c((cond), __LINE__, #cond)

// Every rank of the job is here: the others of this PE ran meanwhile.
void meet(Checker& c) {
  int right = (c.rank + 1) % c.size, left = (c.rank + c.size - 1) % c.size, got = -1;
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Sendrecv(&c.rank, 1, MPI_INT, right, 7, &got, 1, MPI_INT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CHECK(c, got == left);
}

// What std::current_exception holds: the Err of `step`, or -1.
int current_step(Checker& c) {
  std::exception_ptr p = std::current_exception();
  if (!p) return -1;
  try {
    std::rethrow_exception(p);
  } catch (const Err& e) {
    CHECK(c, e.rank == c.rank);
    return e.step;
  } catch (...) {
    return -2;
  }
}

void in_handler(Checker& c) {
  c.section = "handler";
  try {
    throw Err{c.rank, 1};
  } catch (const Err& e) {
    meet(c);
    CHECK(c, e.rank == c.rank && e.step == 1);
    CHECK(c, current_step(c) == 1);
    // A second exception caught inside the handler, blocking in its own handler.
    try {
      throw std::runtime_error("inner " + std::to_string(c.rank));
    } catch (const std::runtime_error& in) {
      meet(c);
      CHECK(c, std::string(in.what()) == "inner " + std::to_string(c.rank));
      CHECK(c, current_step(c) == -2);
    }
    meet(c);
    CHECK(c, current_step(c) == 1);  // the outer one again
    try {
      throw;
    } catch (const Err& re) {
      CHECK(c, re.rank == c.rank && re.step == 1);
    }
  }
  CHECK(c, current_step(c) == -1);
}

void rethrow_out(Checker& c) {
  c.section = "rethrow";
  try {
    try {
      throw Err{c.rank, 2};
    } catch (const Err&) {
      meet(c);
      throw;
    }
  } catch (const Err& e) {
    CHECK(c, e.rank == c.rank && e.step == 2);
    meet(c);
    CHECK(c, current_step(c) == 2);
  }
}

struct Unwinding {
  Checker& c;
  ~Unwinding() {
    CHECK(c, std::uncaught_exceptions() == 1);
    meet(c);  // the other ranks of the PE unwind meanwhile too
    CHECK(c, std::uncaught_exceptions() == 1);
  }
};

void while_unwinding(Checker& c) {
  c.section = "unwinding";
  CHECK(c, std::uncaught_exceptions() == 0);
  try {
    Unwinding u{c};
    throw Err{c.rank, 3};
  } catch (const Err& e) {
    CHECK(c, e.rank == c.rank && e.step == 3);
    CHECK(c, std::uncaught_exceptions() == 0);
  }
}

#ifdef AMPI
// The odd ranks move to the next PE inside the handler and rethrow there.
void move_in_handler(Checker& c) {
  c.section = "move";
  const int pes = AMPI_Num_pes(), from = AMPI_My_pe();
  const bool mover = c.rank % 2 == 1 && pes > 1;
  try {
    try {
      throw Err{c.rank, 4};
    } catch (const Err& e) {
      if (mover) AMPI_Migrate_to_pe((from + 1) % pes);
      meet(c);
      if (mover) CHECK(c, AMPI_My_pe() == (from + 1) % pes);
      CHECK(c, e.rank == c.rank && e.step == 4);
      CHECK(c, current_step(c) == 4);
      CHECK(c, std::uncaught_exceptions() == 0);
      throw;
    }
  } catch (const Err& e) {
    CHECK(c, e.rank == c.rank && e.step == 4);
    meet(c);
  }
  CHECK(c, current_step(c) == -1);
  // And one thrown and caught on the new PE.
  try {
    throw Err{c.rank, 5};
  } catch (const Err& e) {
    meet(c);
    CHECK(c, e.step == 5 && current_step(c) == 5);
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Checker c;
  MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &c.size);
  const bool move = !(argc > 1 && std::strcmp(argv[1], "nomove") == 0);
  for (int round = 0; round < 3; ++round) {
    in_handler(c);
    rethrow_out(c);
    while_unwinding(c);
#ifdef AMPI
    if (move) move_in_handler(c);
#endif
  }
  (void)move;
  int fails = 0;
  MPI_Allreduce(&c.fails, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (c.rank == 0) {
    if (fails == 0) std::printf("eh_vp: ok (%d ranks)\n", c.size);
    else std::printf("eh_vp: %d checks failed\n", fails);
  }
  MPI_Finalize();
  return fails == 0 ? 0 : 1;
}
