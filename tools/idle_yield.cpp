// An aid for over-subscribed runs (more ranks than cores), preloaded with
// LD_PRELOAD into every test process (cmake/LocusTesting.cmake) and into the
// counting runs of ./locus predict that over-subscribe this host
// (tools/locuslib.py, idle_yield_env): counts do not depend on time.
//
// MPICH's ch4 device busy-polls in every blocking call and never gives the
// core away (its MPIR_CVAR_POLLS_BEFORE_YIELD belongs to ch3). Four ranks on
// two cores then wait out a scheduler time slice for each step of a
// collective: 100 barriers took 0.8 s at 4 ranks on 2 cores, against 0.2 ms
// at 2 ranks. Every poll of that loop calls UCX's ucp_worker_progress through
// the dynamic linker, so this library wraps it: after kIdlePolls polls in a
// row that progressed nothing, the thread yields once. With it, the same 100
// barriers take 2 ms.
//
// It changes when a waiting rank runs, never what it computes. Where nothing
// else is runnable, sched_yield returns at once. Processes that do not use
// UCX never call it. The sanitizer build has no such library
// (AddressSanitizer must come first among the preloaded libraries), and the
// apps record LD_PRELOAD in their summary's environment line.
#include <dlfcn.h>
#include <sched.h>

#include <atomic>

namespace {
using Progress = unsigned (*)(void*);
constexpr unsigned kIdlePolls = 64;
std::atomic<Progress> g_real{nullptr};
thread_local unsigned t_idle = 0;

Progress real_progress() {
  Progress f = g_real.load(std::memory_order_acquire);
  if (!f) {
    f = reinterpret_cast<Progress>(dlsym(RTLD_NEXT, "ucp_worker_progress"));
    g_real.store(f, std::memory_order_release);
  }
  return f;
}
}  // namespace

// UCX's signature: unsigned ucp_worker_progress(ucp_worker_h worker).
extern "C" __attribute__((visibility("default"))) unsigned ucp_worker_progress(void* worker) {
  const unsigned done = real_progress()(worker);
  if (done != 0) {
    t_idle = 0;
  } else if (++t_idle >= kIdlePolls) {
    t_idle = 0;
    sched_yield();
  }
  return done;
}
