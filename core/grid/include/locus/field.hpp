#pragma once
// Grid fields: a rank's block plus ghost layers, a Kokkos view in a memory
// space (the apps' MemSpace by default).
//
// Where the one-sided core can address that space and transfers do not
// stage (comm.staging: auto on a host build), the block is stored in a
// segment, so neighbours get/put its faces in place, and the view is that
// segment's memory. Otherwise (comm.staging: always, or a memory space the
// host cannot address) the block is a Kokkos allocation of the space and
// belongs to no segment: halos move it through staging buffers
// (staging.hpp), and gptr() is an error.
//
// Every field is stored as a 3D block indexed (z, y, x), x fastest. The
// ghost width is 1 or 0 per dimension: heat3d uses {1, 1, 1}; a 2D app
// (poisson5pt) uses a grid of z extent 1 with ghosts {1, 1, 0}, so the same
// decomposition, halo and I/O code serve both.
#include <Kokkos_Core.hpp>
#include <array>
#include <cstdint>
#include <string>

#include "locus/collective.hpp"
#include "locus/decomp.hpp"
#include "locus/error.hpp"
#include "locus/limits.hpp"
#include "locus/segment.hpp"
#include "locus/staging.hpp"

namespace locus {

template <class T, class Space = MemSpace>
using FieldView = Kokkos::View<T***, Kokkos::LayoutRight, Space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using Field3D = FieldView<double>;
// A field's block as the host reads and writes it (HDF5 I/O, reference
// checks); the same type as Field3D on a host build.
using HostField3D = FieldView<double, Kokkos::HostSpace>;

// Interior extents n (x, y, z) and ghost widths g of one rank's block.
struct BlockShape {
  std::array<long, 3> n{};
  std::array<long, 3> g{1, 1, 1};
  // Stored extent in dimension d (ghosts included).
  long extent(int d) const { return n[d] + 2 * g[d]; }
  // Cells stored (ghosts included); a product past 64 bits saturates to
  // SIZE_MAX, which allocate() refuses collectively as an overflow.
  std::size_t cells() const {
    std::size_t c = 1;
    for (int d = 0; d < 3; ++d) {
      const auto e = static_cast<std::size_t>(extent(d));
      if (e != 0 && c > SIZE_MAX / e) return SIZE_MAX;
      c *= e;
    }
    return c;
  }
  // Element offset of (x, y, z) in stored coordinates (ghost layer at 0).
  std::size_t offset(long x, long y, long z) const {
    return static_cast<std::size_t>((z * extent(1) + y) * extent(0) + x);
  }
};

// True when GridFieldT<T, Space> keeps its block in a segment: the core
// can address the space and transfers do not stage.
template <class Space = MemSpace>
bool fields_in_segments() {
  return core_addressable<Space> && !staging_active();
}

// Where GridFieldT<T, Space> keeps a field, for run summaries.
template <class Space = MemSpace>
std::string field_storage() {
  if (fields_in_segments<Space>()) return "segments (MPI windows): neighbours reach them in place";
  return "Kokkos allocations outside segments (comm.staging: always, or a space the core cannot address): "
         "halos stage";
}

template <class T, class Space = MemSpace>
class GridFieldT {
 public:
  using memory_space = Space;
  using View = FieldView<T, Space>;

  // Collective over the team (the decomposition's units, same order).
  // `ghosts` is the ghost width per dimension (x, y, z), 0 or 1.
  GridFieldT(Team& team, const CartDecomp& d, const std::array<long, 3>& ghosts = {1, 1, 1})
      : shape_{d.local(), ghosts} {
    const std::size_t cells = shape_.cells();
    if (fields_in_segments<Space>()) {
      storage_ = Array<T>(team, cells);
      view_ = View(storage_.data(), shape_.extent(2), shape_.extent(1), shape_.extent(0));
      return;
    }
    const bool overflow = cells > SIZE_MAX / sizeof(T) / 2;
    collective_require(team.comm(), !overflow,
                       "field: " + std::to_string(cells) + " cells overflow a 64-bit size (unit " +
                           std::to_string(team.rank()) + ")");
    if (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Space>::accessible)
      require_memory(team, 0.0, static_cast<double>(cells * sizeof(T)), "field");
    owned_ = Kokkos::View<T***, Kokkos::LayoutRight, Space>("locus::field", shape_.extent(2),
                                                            shape_.extent(1), shape_.extent(0));
    view_ = View(owned_.data(), shape_.extent(2), shape_.extent(1), shape_.extent(0));
  }

  View& view() { return view_; }
  const View& view() const { return view_; }
  // The block's first element, in Space (host-addressable in a host build).
  T* data() { return view_.data(); }
  const T* data() const { return view_.data(); }
  const BlockShape& shape() const { return shape_; }
  // True when the block is stored in a segment (other units reach it).
  bool in_segment() const { return owned_.data() == nullptr; }
  // Element (0, 0, 0) of `unit`'s block (ghosts included). An error for a
  // field outside segments.
  GlobalPtr<T> gptr(int unit) const {
    if (!in_segment())
      throw Error(
          "field: this field is a Kokkos allocation outside segments (comm.staging: always, or a "
          "memory space the core cannot address): it has no global pointer; transfers stage");
    return storage_.gptr(unit);
  }

  static std::size_t cells(const std::array<long, 3>& n) { return BlockShape{n, {1, 1, 1}}.cells(); }

 private:
  BlockShape shape_;
  Array<T> storage_;                                      // in a segment, or empty
  Kokkos::View<T***, Kokkos::LayoutRight, Space> owned_;  // outside segments, or empty
  View view_;
};

using GridField = GridFieldT<double>;

// `f`'s block as the host reads it: the field's own view where the host
// can address its memory space (no copy), else a host copy. HDF5 output,
// the apps' first-step reference checks and their host-side reductions
// read fields through it.
template <class T, class Space>
auto host_copy(const GridFieldT<T, Space>& f) {
  return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), f.view());
}

// Writes `f`'s block on the host: `fill(h)` gets a host view of the block
// holding its current values (the field's own where the host can address
// it), which is then copied into the field's space.
template <class T, class Space, class F>
void host_fill(GridFieldT<T, Space>& f, F&& fill) {
  auto h = host_copy(f);
  fill(h);
  Kokkos::deep_copy(f.view(), h);
}

}  // namespace locus
