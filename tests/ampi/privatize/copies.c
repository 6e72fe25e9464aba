/* A program whose state lives in a mutable global, a file static, a C++ static object and
 * a thread_local (copies_cxx.cpp). copies_driver.cpp calls the main of several copies
 * twice each, in one thread: with shared state the second copy's first call would find
 * the first copy's rank. */
#include <stdio.h>
#include <stdlib.h>

int rank_value = -1; /* mutable global */
static int calls;    /* file static */
int cxx_constructions(void);
int cxx_thread_calls(void);

int main(int argc, char** argv) {
  if (argc < 2) return 20;
  int rank = atoi(argv[1]);
  ++calls;
  if (calls == 1) {
    if (rank_value != -1) {
      fprintf(stderr, "rank %d: first call finds rank_value %d (a shared global)\n", rank, rank_value);
      return 21;
    }
    rank_value = rank;
  } else if (rank_value != rank) {
    fprintf(stderr, "rank %d: rank_value became %d (a shared global)\n", rank, rank_value);
    return 22;
  }
  if (cxx_constructions() != 1) {
    fprintf(stderr, "rank %d: %d static constructions in this copy\n", rank, cxx_constructions());
    return 23;
  }
  if (cxx_thread_calls() != calls) {
    fprintf(stderr, "rank %d: thread_local counter %d after %d calls\n", rank, cxx_thread_calls(), calls);
    return 24;
  }
  return calls; /* 1, then 2 */
}
