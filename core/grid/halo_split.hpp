#pragma once
// The split-phase frame the notified halos share (halo.cpp's NotifiedHalo,
// halo_staged.cpp's StagedHalo): start() begins an exchange, finish()
// completes it; exchange() is both, and begin()/end() split them when the
// strategy is non-blocking (locus-nb).
#include <cstddef>
#include <string>
#include <utility>

#include "locus/halo.hpp"
#include "locus/kokkos.hpp"
#include "locus/rma.hpp"

namespace locus::detail {

// The pack (field -> packed) or unpack (packed -> field) of one face as a
// Kokkos kernel (Cabana's halo: pack kernel, fence, transfer, unpack
// kernel); `l` is the face's layout in the field, the packed side is
// contiguous. Parallel over the layout's rows, or over its blocks when it
// has one row (a 2D grid's face): no division per block (a 64-bit divide
// per element made a 64-element column's pack and unpack cost 0.5 us
// each). The caller fences.
template <class T>
void face_kernel(const char* name, T* field, const Layout& l, T* packed, bool pack) {
  const std::size_t len = l.block, count = l.count, stride = l.stride, row_stride = l.row_stride;
  const bool by_rows = l.rows > 1;
  const std::size_t outer = by_rows ? l.rows : count, inner = by_rows ? count : 1;
  Kokkos::parallel_for(
      name, Range<std::size_t>(0, outer), KOKKOS_LAMBDA(std::size_t i) {
        for (std::size_t c = 0; c < inner; ++c) {
          T* __restrict f = field + (by_rows ? i * row_stride + c * stride : i * stride);
          T* __restrict p = packed + (i * inner + c) * len;
          if (pack)
            for (std::size_t e = 0; e < len; ++e) p[e] = f[e];
          else
            for (std::size_t e = 0; e < len; ++e) f[e] = p[e];
        }
      });
}

template <class T>
class SplitHalo : public HaloExchange<T> {
 public:
  void exchange(GridFieldT<T>& field) override {
    start(field);
    finish(field);
  }
  void begin(GridFieldT<T>& field) override {
    if (nonblocking_)
      start(field);
    else
      exchange(field);
  }
  void end(GridFieldT<T>& field) override {
    if (nonblocking_) finish(field);
  }
  bool split_phase() const override { return nonblocking_; }
  std::string name() const override { return name_; }

 protected:
  SplitHalo(std::string name, bool nonblocking) : name_(std::move(name)), nonblocking_(nonblocking) {}
  virtual void start(GridFieldT<T>& field) = 0;
  virtual void finish(GridFieldT<T>& field) = 0;

  std::string name_;
  bool nonblocking_;
};

}  // namespace locus::detail
