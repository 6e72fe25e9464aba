/* Images the loader must refuse with a clear message (one per -D). */
#if defined(BAD_IFUNC)
static int impl(void) { return 1; }
static void* resolve_impl(void) { return (void*)impl; }
int chosen(void) __attribute__((ifunc("resolve_impl")));
int call_chosen(void) { return chosen(); }
#elif defined(BAD_INITIAL_EXEC)
__thread int ie_var __attribute__((tls_model("initial-exec")));
int* ie_address(void) { return &ie_var; }
#elif defined(BAD_UNDEFINED)
int missing_function(void);
int call_missing(void) { return missing_function(); }
#endif
