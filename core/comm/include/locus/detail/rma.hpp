#pragma once
// What the inline templates of rma.hpp need to see: the general route's
// entry points (rma.cpp, aggregate.cpp) and the inline helpers. Not an API.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "locus/counts.hpp"
#include "locus/detail/lookahead.hpp"
#include "locus/detail/ref.hpp"
#include "locus/gptr.hpp"
#include "locus/handle.hpp"

namespace locus::detail {

void get_strided(void* dst, const Layout& local, const Ref& r, const Layout& remote, std::size_t esize,
                 Route route);
Handle get_strided_async(void* dst, const Layout& local, const Ref& r, const Layout& remote,
                         std::size_t esize, Route route);
void put_strided(const Ref& r, const Layout& remote, const void* src, const Layout& local, std::size_t esize,
                 Route route);
Handle put_strided_async(const Ref& r, const Layout& remote, const void* src, const Layout& local,
                         std::size_t esize, Route route);
Handle accumulate_async(const Ref& r, const Layout& remote, const void* src, const Layout& local,
                        MPI_Datatype type, Op op);
void fetch_and_op(const Ref& r, const void* operand, void* result, MPI_Datatype type, Op op);
void compare_and_swap(const Ref& r, const void* compare, const void* value, void* result, MPI_Datatype type);
void put_nbi(const Ref& r, const void* src);
void get_nbi(void* dst, const Ref& r);
// Copies `count` values when they travel in a batch or must outlive the call.
void accumulate_nbi(const Ref& r, const void* values, std::size_t count, MPI_Datatype type, Op op);

inline Layout contiguous_layout(std::size_t count) {
  return Layout{count, 1, 0, 1, 0};
}

template <class T>
Ref target(const GlobalPtr<T>& p, std::size_t count, const char* what) {
  return Ref{p.team, p.segment, p.unit, p.offset, count * sizeof(T), what};
}
template <class T>
MPI_Datatype mpi_type();
template <>
inline MPI_Datatype mpi_type<std::int32_t>() {
  return MPI_INT32_T;
}
template <>
inline MPI_Datatype mpi_type<std::int64_t>() {
  return MPI_INT64_T;
}
template <>
inline MPI_Datatype mpi_type<std::uint64_t>() {
  return MPI_UINT64_T;
}
template <>
inline MPI_Datatype mpi_type<float>() {
  return MPI_FLOAT;
}
template <>
inline MPI_Datatype mpi_type<double>() {
  return MPI_DOUBLE;
}

// The short path of a handle-free update or one-element get to another
// node's unit on a segment with aggregated atomics: straight into the
// batch (aggregate.cpp), true when it took the call; false sends it to the
// general route (another mechanism, checks failing, the profile measuring).
bool aggregate_update(int team, int segment, int unit, std::uint64_t offset, const void* value,
                      MPI_Datatype type, Op op);
bool aggregate_get(void* dst, int team, int segment, int unit, std::uint64_t offset, std::size_t bytes);
// gather_nbi's bulk path (aggregate.cpp): true when it took the whole call
// (comm.locality on, every unit on my node or a segment with aggregated
// atomics, elements of at most 8 bytes, the profile not measuring); the
// indices are checked first, an Error names the first one out of the
// table.
bool gather_bulk(void* dst, int team, int segment, std::uint64_t offset, std::size_t esize,
                 std::size_t per_unit, const std::uint64_t* index, std::size_t n);
// update_nbi's bulk path: true when it took the whole call (comm.locality
// on, CPU atomics on the segment, every unit on my node or aggregated
// atomics, the profile not measuring, not bxor on a floating type); the
// indices are checked first.
bool update_bulk(int team, int segment, std::uint64_t offset, const void* values, MPI_Datatype type, Op op,
                 std::size_t per_unit, const std::uint64_t* index, std::size_t n);
// An Error (naming the call, `what`) when a unit's part of the segment
// does not hold `per_unit` elements of `esize` bytes from byte `offset`,
// or naming the first index past the table.
void check_table(const char* what, int team, int segment, std::uint64_t offset, std::size_t esize,
                 std::size_t per_unit, const std::uint64_t* index, std::size_t n);

// The inline path of an element-wise accumulate: true when it applied the
// values with CPU atomics on my node (detail/direct.hpp), false when the general
// route must take the call.
template <class T>
bool direct_accumulate(GlobalPtr<T> dst, const T* values, std::size_t count, Op op) {
  if (!std::is_integral_v<T> && op == Op::bxor) return false;  // the general route names the error
  char* a = direct_atomic_address(dst.team, dst.segment, dst.unit, dst.offset, count * sizeof(T),
                                  !std::is_integral_v<T>);
  if (!a) return false;
  complete_lookahead_if_any();  // queued updates first: atomics keep the thread's order
  T* p = reinterpret_cast<T*>(a);
  for (std::size_t i = 0; i < count; ++i) cpu_apply(p + i, values[i], op);
  locus::count(Count::bytes_on_node, count * sizeof(T), Count::atomic_updates, count);
  return true;
}

// Global element g of a table of per_unit elements per unit: its unit and
// element (a shift and a mask when per_unit is a power of two, not a
// 64-bit division per element).
struct TableIndex {
  explicit TableIndex(std::size_t n)
      : per_unit(n), pow2(n && !(n & (n - 1))), shift(pow2 ? __builtin_ctzll(n) : 0) {}
  int unit(std::uint64_t g) const { return static_cast<int>(pow2 ? g >> shift : g / per_unit); }
  std::ptrdiff_t element(std::uint64_t g) const {
    return static_cast<std::ptrdiff_t>(pow2 ? g & (per_unit - 1) : g % per_unit);
  }
  std::size_t per_unit;
  bool pow2;
  int shift;
};

}  // namespace locus::detail
