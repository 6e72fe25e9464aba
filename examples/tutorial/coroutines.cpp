// Coroutine entry methods: each element of a ring runs its steps as one loop (an entry
// method returning ck::task<>), sending its value to both neighbours and co_awaiting
// theirs by step number; the main chare co_awaits the final reduction.
//   ucharmrun -n 4 ./tutorial_coroutines
#include <ucharm/charm.h>

struct Cell : ck::ArrayElement<Cell> {
  // Messages of value() wait for a co_await ck::next<&Cell::value>(step); their first
  // argument is the reference number that co_await names.
  static constexpr auto awaited_entries() { return ck::entries<&Cell::value>; }

  double x = thisIndex, sum = 0;

  void value(int /*step*/, double v) { sum += v; }  // runs inside the co_await that takes it

  ck::task<> run(int n, int steps, ck::CkCallback done) {
    for (int s = 0; s < steps; ++s) {
      thisProxy[(thisIndex + 1) % n].send<&Cell::value>(s, x);
      thisProxy[(thisIndex + n - 1) % n].send<&Cell::value>(s, x);
      sum = 0;
      co_await ck::next<&Cell::value>(s);  // a neighbour already at step s + 1: its value waits
      co_await ck::next<&Cell::value>(s);
      x = (x + sum) / 3;
    }
    contribute(x, ck::Reducer::sum, done);
  }
};

struct Main : ck::MainChare<Main> {
  explicit Main(ck::MainArgs) { thisProxy.send<&Main::run>(); }

  ck::task<> run() {
    const int n = 8;
    auto cells = ck::ArrayProxy<Cell>::create(ck::dims(n), ck::Map::block);
    ck::ResumeCallback<double> total;  // a callback target that a coroutine co_awaits
    cells.send<&Cell::run>(n, 10, total.callback());
    const double sum = co_await total;
    CkPrintf("mean after 10 steps: %.6f (it stays %.6f)\n", sum / n, (n - 1) / 2.0);
    CkExit(0);
  }
};

int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
