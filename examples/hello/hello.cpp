// A 1-D chare array says hello; each element contributes 1 and the main chare gets the
// sum through a reduction, then ends the program.
//   ucharmrun -n 4 ./hello [elements]
#include <ucharm/charm.h>

#include <cstdlib>

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;
ck::readonly<int> numElements;

struct Hello : ck::ArrayElement<Hello> {
  void sayHi(int from);
};

struct Main : ck::MainChare<Main> {
  explicit Main(ck::MainArgs args) {
    numElements = args.argc > 1 ? std::atoi(args.argv[1]) : 2 * CkNumPes();
    mainProxy = thisProxy;
    CkPrintf("Running hello with %d elements on %d PEs\n", *numElements, CkNumPes());
    auto arr = ck::ArrayProxy<Hello>::create(ck::dims(*numElements), ck::Map::block);
    arr.send<&Hello::sayHi>(-1);
  }
  void done(int count) {
    CkPrintf("All %d elements said hello\n", count);
    CkExit(count == *numElements ? 0 : 1);
  }
};

void Hello::sayHi(int from) {
  CkPrintf("Hello from element %d on PE %d (asked by %d)\n", thisIndex, CkMyPe(), from);
  contribute(1, ck::Reducer::sum, ck::CkCallback::to<&Main::done>(*mainProxy));
}

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
