#pragma once
// The Kokkos execution space the apps' kernels run in, and a profiling
// region guard.
//
// Fields and vectors live in host memory (segments of the one-sided core,
// MPI windows), so kernels run in the build's default execution space when
// that space can reach host memory (Serial, OpenMP, Threads), and in the
// default host space otherwise (a CUDA or HIP Kokkos: the kernels stay on
// the host until the data path stages through device memory).
#include <Kokkos_Core.hpp>
#include <string>
#include <type_traits>

namespace locus {

using ExecSpace = std::conditional_t<
    Kokkos::SpaceAccessibility<Kokkos::DefaultExecutionSpace, Kokkos::HostSpace>::accessible,
    Kokkos::DefaultExecutionSpace, Kokkos::DefaultHostExecutionSpace>;
using MemSpace = Kokkos::HostSpace;

// A 1D index range in ExecSpace.
template <class I = long>
using Range = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<I>>;

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
