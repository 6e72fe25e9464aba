// Privatization by the AMPI loader (runtime/ampi/loader.cpp): every rank's copy of the
// program has its own globals, and the loader's errors are clear.
#include <gtest/gtest.h>

#include "../../common/run.h"

using ucharm::test::describe;
using ucharm::test::run;

// The loader with copies.c appended and copies_driver.cpp in place of the runtime.
TEST(AmpiPrivatize, EveryCopyHasItsOwnGlobals) {
  auto r = run({COPIES_PATH, "8"}, 60);
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_NE(r.out.find("8 copies, each with its own globals"), std::string::npos) << describe(r);
}

TEST(AmpiPrivatize, LoaderWithoutProgramSaysSo) {
  auto r = run({BARE_LOADER_PATH, "2"}, 60);
  EXPECT_EQ(r.code, 1) << describe(r);
  EXPECT_NE(r.err.find("holds no MPI program"), std::string::npos) << describe(r);
}

TEST(AmpiPrivatize, ProgramWithoutMainIsRefused) {
  auto r = run({COMPOSE_PATH, NO_EXE_PATH, NOMAIN_PATH}, 60);
  EXPECT_EQ(r.code, 1) << describe(r);
  EXPECT_NE(r.err.find("defines no main"), std::string::npos) << describe(r);
}
