#pragma once
// The Kokkos execution space the apps' kernels run in, and a profiling
// region guard.
//
// Kernels run in the build's default execution space. When that space can
// reach host memory (Serial, OpenMP, Threads) fields and vectors live in
// host memory (segments of the one-sided core, MPI windows); when it cannot
// (a CUDA or HIP Kokkos) they live in its memory space and halos and remote
// vector entries stage through host segments (comm.staging, staging.hpp).
#include <Kokkos_Core.hpp>
#include <string>
#include <type_traits>

namespace locus {

// True when the default execution space cannot reach host memory (a device
// build: CUDA, HIP).
inline constexpr bool kDeviceBuild =
    !Kokkos::SpaceAccessibility<Kokkos::DefaultExecutionSpace, Kokkos::HostSpace>::accessible;

using ExecSpace = Kokkos::DefaultExecutionSpace;
using MemSpace = std::conditional_t<kDeviceBuild, ExecSpace::memory_space, Kokkos::HostSpace>;

// A 1D index range in ExecSpace.
// A loop whose only dependence between iterations is a max reduction into
// VAR (a stencil's residual): vectorised by the host compiler through
// OpenMP SIMD (-fopenmp-simd, no OpenMP runtime), a plain loop in device
// code. max is exact and order-independent, so the result is bitwise the
// loop's. The same source is every execution space's kernel.
#define LOCUS_PRAGMA(x) _Pragma(#x)
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__) || !(defined(__GNUC__) || defined(__clang__))
#define LOCUS_SIMD_MAX(var)
#else
#define LOCUS_SIMD_MAX(var) LOCUS_PRAGMA(omp simd reduction(max : var))
#endif

// A cache-line prefetch on host compilers (rw: 0 read, 1 write); nothing in
// device code.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__) || !(defined(__GNUC__) || defined(__clang__))
#define LOCUS_PREFETCH(p, rw) ((void)0)
#else
#define LOCUS_PREFETCH(p, rw) __builtin_prefetch((p), (rw))
#endif

// A kernel's one source may also be compiled for AVX2 as a host
// specialisation (LOCUS_TARGET_AVX2 on a wrapper whose body is the source),
// chosen at run time by host_avx2().
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDA_ARCH__)
#define LOCUS_HOST_AVX2 1
#define LOCUS_TARGET_AVX2 __attribute__((target("avx2")))
#else
#define LOCUS_HOST_AVX2 0
#define LOCUS_TARGET_AVX2
#endif

// True when kernels of ExecSpace run on the host (host-only refinements,
// such as streaming stores, may then replace the portable kernel).
inline constexpr bool kHostExec = Kokkos::SpaceAccessibility<ExecSpace, Kokkos::HostSpace>::accessible;

// Whether host kernels run their AVX2 compilation: kernels on the host, an
// x86-64 host compiler, and AVX2 on this CPU (locus/cpu.hpp, not hidden).
bool host_avx2();

template <class I = long>
using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<I>>;

// The execution space of kernels over data the host reads and writes in
// place (host vectors, segments): ExecSpace on a host build (the same
// type), the default host execution space on a device build.
using HostExecSpace = std::conditional_t<kDeviceBuild, Kokkos::DefaultHostExecutionSpace, ExecSpace>;
// Its memory space: MemSpace on a host build, HostSpace on a device build.
using HostMemSpace = std::conditional_t<kDeviceBuild, Kokkos::HostSpace, MemSpace>;
template <class I = long>
using HostRange = Kokkos::RangePolicy<HostExecSpace, Kokkos::IndexType<I>>;

// A Kokkos::Profiling region for the lifetime of the object (kokkos-tools
// connectors such as space-time-stack or Caliper show them).
class Region {
 public:
  explicit Region(const std::string& name) {
    if (Kokkos::is_initialized()) {
      Kokkos::Profiling::pushRegion(name);
      on_ = true;
    }
  }
  ~Region() {
    if (on_) Kokkos::Profiling::popRegion();
  }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

 private:
  bool on_ = false;
};

}  // namespace locus
