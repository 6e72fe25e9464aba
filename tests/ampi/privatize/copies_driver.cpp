// Stands in for the runtime in the loader test: an executable's own ucharm_ampi_start
// wins over libucharm-ampi's, so the loader hands its Program here. Loads `ranks` copies
// (argv[1]) and calls each copy's main twice, checking each call's answer (copies.c).
#define UCHARM_AMPI_NO_PMPI_RENAME 1  // not the library: no generated PMPI wrappers here
#include "internal.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

extern "C" int ucharm_ampi_start(int argc, char** argv, const ampi::Program* program) {
  if (argc < 2 || !program->privatized || program->main_for == nullptr) {
    std::fprintf(stderr, "driver: usage: %s RANKS, or the loader gave no private copies\n", argv[0]);
    return 2;
  }
  int ranks = std::atoi(argv[1]);
  std::vector<ampi::MainFn> mains;
  void* image = nullptr;  // (no slices here: copies stay where they are)
  for (int r = 0; r < ranks; ++r) {
    ampi::MainFn m = program->main_for(program->context, r, nullptr, &image);
    if (m == nullptr) return 3;
    for (ampi::MainFn other : mains) {
      if (other == m) {
        std::fprintf(stderr, "driver: rank %d got an earlier rank's main\n", r);
        return 4;
      }
    }
    mains.push_back(m);
  }
  for (int round = 1; round <= 2; ++round) {
    for (int r = 0; r < ranks; ++r) {
      std::string rank = std::to_string(r);
      char* args[] = {argv[0], rank.data(), nullptr};
      int got = mains[static_cast<std::size_t>(r)](2, args);
      if (got != round) {
        std::fprintf(stderr, "driver: rank %d's main returned %d in round %d\n", r, got, round);
        return 5;
      }
    }
  }
  std::printf("driver: %d copies, each with its own globals (%s)\n", ranks, program->how);
  return 0;
}
