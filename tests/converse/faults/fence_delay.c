/* Fault injector for start-up tests, loaded with LD_PRELOAD into the ranks of a job:
 * on the rank named by UCHARM_TEST_FENCE_DELAY_RANK, the completion of the first
 * PMIx_Fence_nb (the start-up fence that exchanges UCX addresses) is reported
 * UCHARM_TEST_FENCE_DELAY_MS later than it happens (default 700 ms). The other ranks
 * leave the fence and start sending while this one is still inside it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pmix.h>
#include <stdlib.h>
#include <time.h>

struct held {
  pmix_op_cbfunc_t cb;
  void* arg;
};

static long delay_ms(void) {
  const char* v = getenv("UCHARM_TEST_FENCE_DELAY_MS");
  return v ? atol(v) : 700;
}

static void late(pmix_status_t status, void* p) {
  struct held* h = p;
  struct timespec ts = {delay_ms() / 1000, (delay_ms() % 1000) * 1000000L};
  nanosleep(&ts, NULL); /* on PMIx's progress thread: holds only this fence's completion */
  h->cb(status, h->arg);
  free(h);
}

pmix_status_t PMIx_Fence_nb(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[],
                            size_t ninfo, pmix_op_cbfunc_t cbfunc, void* cbdata) {
  typedef pmix_status_t (*fence_fn)(const pmix_proc_t[], size_t, const pmix_info_t[], size_t,
                                    pmix_op_cbfunc_t, void*);
  static fence_fn real;
  static int calls;
  if (!real) real = (fence_fn)dlsym(RTLD_NEXT, "PMIx_Fence_nb");
  const char* rank = getenv("UCHARM_TEST_FENCE_DELAY_RANK");
  const char* me = getenv("PMIX_RANK");
  if (calls++ == 0 && rank && me && atoi(rank) == atoi(me)) {
    struct held* h = malloc(sizeof *h);
    h->cb = cbfunc;
    h->arg = cbdata;
    return real(procs, nprocs, info, ninfo, late, h);
  }
  return real(procs, nprocs, info, ninfo, cbfunc, cbdata);
}
