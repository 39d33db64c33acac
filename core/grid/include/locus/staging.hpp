#pragma once
// Staging: moving data of an app's Kokkos memory space through host
// segments (comm.staging).
//
// The one-sided core moves host memory: segments are MPI windows. Data in
// a memory space the host cannot address (a device space) leaves it the
// way Cabana's halo moves it: a pack kernel into a buffer in that space,
// a copy into a host buffer that is part of a segment, the transfer (and
// its notification), a copy back into the app's space, an unpack kernel.
// comm.staging: always takes this path in a host build too, so that the
// path is tested where CI runs (bitwise against the direct transfers).
//
//   StagingBuffer<double> b(team, n, "faces");
//   pack kernel writing b.device();  b.to_host();     // then transfer b.host()
//   transfer into b.host();          b.to_device();   // then unpack from b.device()
#include <Kokkos_Core.hpp>
#include <cstddef>
#include <string>

#include "locus/kokkos.hpp"
#include "locus/runtime.hpp"
#include "locus/segment.hpp"
#include "locus/settings.hpp"
#include "locus/team.hpp"

namespace locus {

// True when the core can read and write memory of `Space` in place.
template <class Space>
inline constexpr bool core_addressable =
    Kokkos::SpaceAccessibility<Kokkos::DefaultHostExecutionSpace, Space>::accessible;

// Whether transfers of data in `Space` (the apps' memory space by default)
// take the staging path: comm.staging always, or a memory space out of the
// core's reach.
template <class Space = MemSpace>
bool staging_active() {
  return Runtime::current().settings().staging == Staging::always || !core_addressable<Space>;
}

// A staging buffer of `count` elements: device() in the app's memory space
// (pack kernels write it, unpack kernels read it) and host() in a segment
// (what the core transfers; other units reach it by gptr()). Collective
// over the team (the segment).
template <class T, class Space = MemSpace>
class StagingBuffer {
 public:
  using DeviceView = Kokkos::View<T*, Space>;
  using HostView = Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  StagingBuffer() = default;
  StagingBuffer(Team& team, std::size_t count, const std::string& label)
      : host_(team, count), device_(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), count) {}

  T* device() const { return device_.data(); }
  T* host() const { return host_.data(); }
  std::size_t size() const { return host_.size(); }
  GlobalPtr<T> gptr(int unit) const { return host_.gptr(unit); }
  GlobalPtr<T> gptr() const { return host_.gptr(); }

  // Elements [first, first + count) from the app's space into the segment,
  // and back. Both complete on return (deep_copy fences).
  void to_host(std::size_t first, std::size_t count) {
    Kokkos::deep_copy(host_view(first, count), device_view(first, count));
  }
  void to_device(std::size_t first, std::size_t count) {
    Kokkos::deep_copy(device_view(first, count), host_view(first, count));
  }
  void to_host() { to_host(0, size()); }
  void to_device() { to_device(0, size()); }

 private:
  HostView host_view(std::size_t first, std::size_t count) const {
    return HostView(host_.data() + first, count);
  }
  auto device_view(std::size_t first, std::size_t count) const {
    return Kokkos::subview(device_, std::make_pair(first, first + count));
  }

  Array<T> host_;
  DeviceView device_;
};

}  // namespace locus
