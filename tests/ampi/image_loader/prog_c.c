/* A C program image for image_loader's tests (test_image_loader.cpp): globals, a static
 * array, function and string pointers in data, libc calls (qsort calling back into the
 * image), a constructor, exit handlers, symbols from a library it needs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int counter = 7;
static int table[100];
int* counter_ptr = &counter;
static int add1(int x) { return x + 1; }
static int twice(int x) { return 2 * x; }
int (*ops[])(int) = {add1, twice};
const char* names[] = {"alpha", "beta"};
size_t (*strlen_in_data)(const char*) = strlen; /* R_X86_64_64 against libc */
int ctor_runs;

/* hooklib.c: the driver defines hook_value too (its definition wins, as with ld.so);
 * local_only only hooklib; versioned@V1 is not the default version. */
int hook_value(void);
int local_only(void);
int versioned(void);
__asm__(".symver versioned, versioned@V1");
extern void weak_missing(void) __attribute__((weak));

static char exit_log[32];
static void log_char(char c) {
  size_t n = strlen(exit_log);
  if (n + 1 < sizeof exit_log) exit_log[n] = c;
}
static void handler1(void) { log_char('1'); }
static void handler2(void) { log_char('2'); }
__attribute__((destructor)) static void fini(void) { log_char('D'); }
__attribute__((constructor)) static void init(void) {
  ++ctor_runs;
  table[99] = 42;
  atexit(handler1);
  atexit(handler2);
}

const char* exit_log_text(void) { return exit_log; }
int table_last(void) { return table[99]; }
int apply(int i, int x) { return ops[i](x); }
size_t name_length(int i) { return strlen_in_data(names[i]); }
int bump(void) { return ++counter; }
int* counter_address(void) { return counter_ptr; }
void* strlen_address(void) { return (void*)&strlen; }
int hook(void) { return hook_value(); }
int local(void) { return local_only(); }
int version_v1(void) { return versioned(); }
int weak_is_null(void) { return &weak_missing == 0; }
static int cmp(const void* a, const void* b) { return *(const int*)a - *(const int*)b; }
int sorted(void) {
  int v[] = {5, 3, 9, 1, 7};
  qsort(v, 5, sizeof v[0], cmp);
  return v[0] == 1 && v[1] == 3 && v[2] == 5 && v[3] == 7 && v[4] == 9;
}
int format(char* buf, size_t n) { return snprintf(buf, n, "%d-%s", counter, names[1]); }

/* argc*100 + the length of the last argument; "image main" on stdout. */
int main(int argc, char** argv) {
  printf("image main: %d arguments\n", argc);
  fflush(stdout);
  return argc * 100 + (int)strlen(argv[argc - 1]);
}
