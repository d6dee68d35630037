// LD_PRELOAD helper for the GPU machine, which has no gdb: on SIGSEGV or SIGBUS it prints the native
// stack to stderr, each frame as library+offset (addr2line resolves it against the unstripped build),
// then dies of the same signal. Built by scripts/gpu_pack.sh into .gpu/bin/segv_backtrace.so.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static void on_signal(int sig) {
  void* frames[64];
  int n = backtrace(frames, 64);
  char line[512];
  int len = snprintf(line, sizeof line, "\n=== native backtrace (signal %d) ===\n", sig);
  write(2, line, len);
  for (int i = 0; i < n; ++i) {
    Dl_info info;
    if (dladdr(frames[i], &info) && info.dli_fname)
      len = snprintf(line, sizeof line, "#%d %s+0x%lx %s\n", i, info.dli_fname,
                     (unsigned long)((char*)frames[i] - (char*)info.dli_fbase), info.dli_sname ? info.dli_sname : "?");
    else
      len = snprintf(line, sizeof line, "#%d %p\n", i, frames[i]);
    write(2, line, len);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}
__attribute__((constructor)) static void install(void) {
  signal(SIGSEGV, on_signal);
  signal(SIGBUS, on_signal);
}
