// The C++ half of copies.c: a static object (its constructor runs once per copy) and a
// thread_local (each copy has its own TLS block).
namespace {
int constructions = 0;
struct Counted {
  Counted() { ++constructions; }
};
Counted counted;
thread_local int thread_calls = 0;
}  // namespace

extern "C" int cxx_constructions() { return constructions; }
extern "C" int cxx_thread_calls() { return ++thread_calls; }
