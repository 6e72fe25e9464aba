// setjmp and longjmp that survive a rank's move to another process.
//
// glibc mangles the stack pointer, frame pointer and return address it saves in a jmp_buf
// with the process's pointer guard (random per process, in the thread control block at
// %fs:0x30), so a jmp_buf filled in one process is garbage in another. The guard cannot be
// made the same in every process: ld.so sets it from the kernel's AT_RANDOM before any code
// of ours runs, and exit handlers and other glibc state are mangled with it right away. So
// libucharm-ampi defines setjmp, _setjmp, __sigsetjmp and the longjmp family itself (the
// program and its libraries bind to these, as to its malloc and exit): in a rank's code the
// three words are mangled with the rank's own key instead (Rank::jmp_key, which moves with
// it), and the jmp_buf is marked as such; anywhere else (the runtime, code outside the ranks)
// the jmp_buf is exactly glibc's. longjmp turns a marked jmp_buf back into glibc's format for
// this process, in a copy, and lets glibc's longjmp do the rest (cancellation clean-up,
// signal mask, fortify check). A jmp_buf is valid only in the rank that filled it (C allows
// a longjmp only in the thread of the setjmp): another rank's, or a marked one used outside
// any rank, stops the job naming both.
#include "rank.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>

#include <cstdint>
#include <cstring>

// Not in AddressSanitizer builds: ranks do not move there, and ASan's own longjmp handling
// (it unpoisons the stack it leaves) misreads a jump made through these on a rank's stack.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)

extern "C" [[noreturn]] void __longjmp_chk(struct __jmp_buf_tag env[1], int val) noexcept;

namespace ampi {
namespace {

// glibc's x86-64 layout of __jmpbuf: rbx, rbp, r12-r15, rsp, return address; rbp, rsp and
// the address are mangled (xor with the guard, rotate left by 17).
enum : int { kRbp = 1, kRsp = 6, kPc = 7 };
// Words of the signal mask area past what sigprocmask writes (8 bytes) and past glibc's
// shadow-stack slot: the marker and the owner's world rank.
enum : int { kMarkWord = 14, kOwnerWord = 15 };
constexpr std::uint64_t kMarker = 0x75636861726d4a42ull;  // "ucharmJB"
static_assert(sizeof(__sigset_t) / sizeof(unsigned long) > kOwnerWord);

std::uint64_t rotl(std::uint64_t x) { return (x << 17) | (x >> 47); }
std::uint64_t rotr(std::uint64_t x) { return (x >> 17) | (x << 47); }
std::uint64_t mangle(std::uint64_t x, std::uint64_t key) { return rotl(x ^ key); }
std::uint64_t demangle(std::uint64_t x, std::uint64_t key) { return rotr(x) ^ key; }

std::uint64_t process_guard() {
  std::uint64_t g;
  asm volatile("mov %%fs:0x30, %0" : "=r"(g));
  return g;
}

std::uint64_t* words(__jmp_buf_tag* env) { return reinterpret_cast<std::uint64_t*>(env->__jmpbuf); }
unsigned long* extra(__jmp_buf_tag* env) { return env->__saved_mask.__val; }

using Jump = void (*)(__jmp_buf_tag*, int);
Jump libc(const char* name) {
  auto f = reinterpret_cast<Jump>(dlsym(RTLD_NEXT, name));
  if (!f) CkAbort("cannot find libc's %s: %s", name, dlerror());
  return f;
}

// A jmp_buf in this process's glibc format: `env` itself, or (marked) a copy in `tmp`.
__jmp_buf_tag* for_libc(__jmp_buf_tag* env, __jmp_buf_tag* tmp, const char* fn) {
  if (extra(env)[kMarkWord] != kMarker) return env;
  const auto owner = static_cast<int>(extra(env)[kOwnerWord]);
  const Rank* r = g_running.rank;
  if (!r)
    CkAbort("%s: the jmp_buf was filled by setjmp in MPI rank %d and is used outside that rank's code: a jmp_buf "
            "is valid only in the thread (rank) that filled it",
            fn, owner);
  if (owner != r->world_rank())
    CkAbort("%s in MPI rank %d to a jmp_buf that rank %d filled: a jmp_buf is valid only in the thread (rank) "
            "that filled it",
            fn, r->world_rank(), owner);
  std::memcpy(tmp, env, sizeof *tmp);
  const std::uint64_t guard = process_guard();
  for (int w : {kRbp, kRsp, kPc}) words(tmp)[w] = mangle(demangle(words(env)[w], r->jmp_key), guard);
  extra(tmp)[kMarkWord] = 0;
  return tmp;
}

}  // namespace
}  // namespace ampi

using namespace ampi;

// The entry points save the caller's registers raw, then jump (same stack, same return
// address) to ucharm_ampi_setjmp_finish, which mangles them and returns 0 to the caller.
extern "C" [[gnu::visibility("hidden")]] int ucharm_ampi_setjmp_finish(__jmp_buf_tag* env, int savemask) {
  const Rank* r = g_running.rank;
  const std::uint64_t key = r ? r->jmp_key : process_guard();
  for (int w : {kRbp, kRsp, kPc}) words(env)[w] = mangle(words(env)[w], key);
  extra(env)[kMarkWord] = r ? kMarker : 0;
  if (r) extra(env)[kOwnerWord] = static_cast<unsigned long>(r->world_rank());
  env->__mask_was_saved = savemask != 0 && sigprocmask(SIG_BLOCK, nullptr, &env->__saved_mask) == 0;
  return 0;
}

asm(R"(
        .text
        .p2align 4
        .globl  setjmp
        .type   setjmp, @function
setjmp:
        endbr64
        movl    $1, %esi
        jmp     .Lucharm_ampi_sigsetjmp
        .size   setjmp, .-setjmp

        .p2align 4
        .globl  _setjmp
        .type   _setjmp, @function
_setjmp:
        endbr64
        xorl    %esi, %esi
        jmp     .Lucharm_ampi_sigsetjmp
        .size   _setjmp, .-_setjmp

        .p2align 4
        .globl  __sigsetjmp
        .type   __sigsetjmp, @function
__sigsetjmp:
        endbr64
.Lucharm_ampi_sigsetjmp:
        movq    %rbx, 0(%rdi)
        movq    %rbp, 8(%rdi)
        movq    %r12, 16(%rdi)
        movq    %r13, 24(%rdi)
        movq    %r14, 32(%rdi)
        movq    %r15, 40(%rdi)
        leaq    8(%rsp), %rdx
        movq    %rdx, 48(%rdi)
        movq    (%rsp), %rdx
        movq    %rdx, 56(%rdi)
        jmp     ucharm_ampi_setjmp_finish
        .size   __sigsetjmp, .-__sigsetjmp
)");

#pragma GCC visibility push(default)
extern "C" {

void longjmp(struct __jmp_buf_tag env[1], int val) noexcept {
  static const Jump real = libc("longjmp");
  __jmp_buf_tag tmp;
  real(for_libc(env, &tmp, "longjmp"), val);
  __builtin_unreachable();
}

void _longjmp(struct __jmp_buf_tag env[1], int val) noexcept {
  static const Jump real = libc("_longjmp");
  __jmp_buf_tag tmp;
  real(for_libc(env, &tmp, "_longjmp"), val);
  __builtin_unreachable();
}

void siglongjmp(struct __jmp_buf_tag env[1], int val) noexcept {
  static const Jump real = libc("siglongjmp");
  __jmp_buf_tag tmp;
  real(for_libc(env, &tmp, "siglongjmp"), val);
  __builtin_unreachable();
}

// What longjmp becomes with _FORTIFY_SOURCE: glibc's checks the target frame.
void __longjmp_chk(struct __jmp_buf_tag env[1], int val) noexcept {
  static const Jump real = libc("__longjmp_chk");
  __jmp_buf_tag tmp;
  real(for_libc(env, &tmp, "longjmp"), val);
  __builtin_unreachable();
}

}  // extern "C"
#pragma GCC visibility pop

#endif  // __x86_64__ && !__SANITIZE_ADDRESS__
