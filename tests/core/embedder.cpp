// What runtimes built on the core use (the Python bindings): raw broadcasts, futures with
// handlers and their value accessors, embedder maps, the embedder's readonly value, the
// embedding hooks. Prints "embedder ok" from PE 0 and exits 0, or aborts naming the failed
// check.
#include <ucharm/charm.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

void expect(bool ok, const char* what) {
  if (!ok) CkAbort("check failed: %s", what);
}

struct Main;
ck::readonly<ck::ChareProxy<Main>> mainProxy;
constexpr int kPerPe = 3;  // array elements per PE
constexpr int kValues = 5;  // values sent to the handler future

// Embedder map: element i on PE (i / kPerPe) reversed, asked through the hook with id 7.
int reversed_map(std::uint32_t id, const ck::Index& idx, const ck::Index& shape, int npes) {
  expect(id == 7, "the map hook gets the map's id");
  expect(shape.x[0] == kPerPe * npes, "the map hook gets the array's bounds");
  return npes - 1 - idx.x[0] / kPerPe;
}

struct Elem;
void on_raw(Elem* e, void* msg);

struct Elem : ck::ArrayElement<Elem> {
  int seen = 0;
};

constexpr const char* kReadonly = "embedder's start-up data";
int readonly_arrivals = 0;  // this PE's calls of the readonly hook
void readonly_arrived(const std::string& value) {
  expect(CkMyPe() != 0, "the readonly hook runs on the PEs that receive the value, not on PE 0");
  expect(value == kReadonly, "the readonly hook gets the value set on PE 0");
  ++readonly_arrivals;
}

struct Main : ck::MainChare<Main> {
  int got = 0, values = 0, sum = 0;
  std::uint32_t fid = 0, typed_fid = 0;
  explicit Main(ck::MainArgs) {
    mainProxy = thisProxy;
    ck::set_embedder_readonly(kReadonly);
    fid = ck::future_create(&on_value);
    auto a = ck::ArrayProxy<Elem>::create(ck::dims(kPerPe * CkNumPes()), ck::embedder_map(7));
    void* msg = ck::raw_alloc(sizeof(int));
    const int v = 42;
    std::memcpy(ck::raw_payload(msg), &v, sizeof v);
    ck::raw_broadcast<ck::RawEntry<Elem, &on_raw>>(a.ref(), msg);
  }
  static void on_value(std::uint32_t id, void* msg);
  static void on_typed(std::uint32_t id, void* msg);
  void arrived(int idx, int pe) {
    expect(pe == CkNumPes() - 1 - idx / kPerPe, "the element lives where the embedder map put it");
    if (++got == kPerPe * CkNumPes()) {
      for (int k = 1; k <= kValues; ++k) {  // one future, several values, from PE 0 and the last PE
        void* m = ck::raw_alloc(sizeof(int));
        std::memcpy(ck::raw_payload(m), &k, sizeof k);
        ck::future_send_raw(CkMyPe(), fid, m);
      }
    }
  }
};

void on_raw(Elem* e, void* msg) {
  int v = 0;
  expect(ck::raw_length(msg) == sizeof v, "a raw broadcast's payload keeps its length");
  std::memcpy(&v, ck::raw_payload(msg), sizeof v);
  expect(v == 42, "a raw broadcast's payload arrives intact");
  CmiFree(msg);
  expect(++e->seen == 1, "each element gets a raw broadcast once");
  expect(ck::embedder_readonly() == kReadonly, "every PE has the embedder's readonly value before its first message");
  expect(readonly_arrivals == (CkMyPe() == 0 ? 0 : 1), "the readonly hook ran once on each PE but PE 0");
  mainProxy->send<&Main::arrived>(e->thisIndex, CkMyPe());
}

void Main::on_value(std::uint32_t id, void* msg) {
  Main* m = mainProxy->local();
  expect(id == m->fid, "the handler gets its future's id");
  expect(ck::future_value_is_raw(msg), "a value sent with future_send_raw is raw");
  expect(!ck::future_value_holds<std::string>(msg), "a raw value holds no typed value");
  int v = 0;
  std::memcpy(&v, ck::raw_payload(msg), sizeof v);
  CmiFree(msg);
  m->sum += v;
  if (++m->values == kValues) {
    expect(m->sum == kValues * (kValues + 1) / 2, "every value reaches the handler");
    ck::future_release(id);
    // A typed value (what a callback or a reduction sends) into a future with a handler.
    m->typed_fid = ck::future_create(&on_typed);
    ck::CkCallback::future(CkMyPe(), m->typed_fid).send(std::string("typed value"));
  }
}

void Main::on_typed(std::uint32_t id, void* msg) {
  expect(!ck::future_value_is_raw(msg), "a typed value is not raw");
  expect(ck::future_value_holds<std::string>(msg), "the value holds the type it was sent with");
  expect(!ck::future_value_holds<int>(msg), "the value holds no other type");
  expect(ck::future_value<std::string>(msg) == "typed value", "future_value unpacks the value");
  CmiFree(msg);
  ck::future_release(id);
  CkPrintf("embedder ok\n");
  CkExit(0);
}

void exit_hook(int code) { std::printf("exit hook %d on PE %d\n", code, CkMyPe()); }

}  // namespace

int main(int argc, char** argv) {
  ck::set_embedder_map(&reversed_map);
  ck::set_embedder_readonly_hook(&readonly_arrived);
  CmiEmbedHooks hooks;
  hooks.on_exit = &exit_hook;
  CkSetEmbedHooks(hooks);
  return ck::start<Main>(argc, argv);
}
