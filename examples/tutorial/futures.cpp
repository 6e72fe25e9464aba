// Threaded entry methods and futures: the main chare's run() is threaded, so it may
// block on futures; array elements fill them in from wherever they live. A reduction is
// delivered into a future too.
//   ucharmrun -n 4 ./tutorial_futures
#include <ucharm/charm.h>

#include <vector>

struct Square : ck::ArrayElement<Square> {
  void compute(ck::Future<long> out) { out.set(static_cast<long>(thisIndex) * thisIndex); }
  void report(ck::CkCallback done) { contribute(static_cast<double>(thisIndex), ck::Reducer::sum, done); }
};

struct Main : ck::MainChare<Main> {
  // run() executes in its own user-level thread: Future::get suspends it, not the PE.
  static constexpr auto threaded_entries() { return ck::entries<&Main::run>; }

  explicit Main(ck::MainArgs) { thisProxy.send<&Main::run>(); }

  void run() {
    auto squares = ck::ArrayProxy<Square>::create(ck::dims(100), ck::Map::block);
    std::vector<ck::Future<long>> results;
    for (int i = 0; i < 100; ++i) {
      results.push_back(ck::Future<long>::make());
      squares[i].send<&Square::compute>(results.back());
    }
    long sum = 0;
    for (auto& f : results) sum += f.get();  // waits for each value in turn
    CkPrintf("sum of squares 0..99 = %ld\n", sum);

    auto total = ck::Future<double>::make();
    squares.send<&Square::report>(total.callback());  // a broadcast; the reduction sets the future
    CkPrintf("sum of indices = %g\n", total.get());
    CkExit(0);
  }
};

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
