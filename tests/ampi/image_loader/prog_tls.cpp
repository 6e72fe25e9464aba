// thread_local in a program image: general dynamic (an exported variable), local dynamic
// (file statics), a pointer in .tdata that needs relocation, a thread_local with a destructor.
#include <cstring>

int some_global = 77;
thread_local int tls_counter = 5;
static thread_local int tls_static = 100;
static thread_local int* tls_pointer = &some_global;
static char dtor_log[16];
struct WithDtor {
  int v = 3;
  ~WithDtor() { std::strcat(dtor_log, "T"); }
};
static thread_local WithDtor with_dtor;

extern "C" {
int tls_bump() { return ++tls_counter; }
int tls_static_bump() { return ++tls_static; }
int* tls_address() { return &tls_counter; }
int tls_pointer_ok() { return tls_pointer == &some_global && *tls_pointer == 77; }
int tls_with_dtor() { return with_dtor.v; }
const char* tls_dtor_log() { return dtor_log; }
}
