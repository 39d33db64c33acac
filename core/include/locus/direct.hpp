#pragma once
// The inline same-node path (included by rma.hpp and gptr.hpp).
//
// A global pointer into a part on my node resolves to an address with two
// indexed loads from the translation table (segment_table.hpp): no lookup
// call, no map, no handle. The calls in rma.hpp try it first and fall back
// to the general route (rma.cpp) whenever it does not apply: another node,
// comm.locality off, Route::mpi, redirection on, the communication-ratio
// profile measuring, a failed bounds check, or a segment that is not
// allocated (the general route then raises the error). So the semantics,
// the errors included, are those of the general route.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "locus/segment_table.hpp"

namespace locus {

// sum, min, max, replace for every element type; bxor (bitwise exclusive
// or, HPCC RandomAccess) for the integer types only.
enum class Op { sum, min, max, replace, bxor };

namespace detail {

// The bounds rule of the inline paths, the same as bounds_problem's:
// [offset, offset + bytes) lies in the unit's part (written so that a huge
// offset cannot wrap around).
inline bool fits_part(const SegmentInfo& s, int unit, std::uint64_t offset, std::size_t bytes) noexcept {
  const std::size_t part = s.bytes[static_cast<std::size_t>(unit)];
  return offset <= part && bytes <= part - offset;
}

// The part of `unit` in the segment when it lies on my node (whatever
// comm.locality says), else nullptr; nullptr also for an unknown segment
// or unit.
inline char* node_part(int team, int segment, int unit) noexcept {
  const SegmentInfo* s = g_direct.find(team, segment);
  if (!s || static_cast<unsigned>(unit) >= s->units) return nullptr;
  return s->peer_at[unit];
}

// The address of `bytes` at `offset` in `unit`'s part when a load or store
// may serve a transfer there now (same node, comm.locality on, in bounds
// when checks are on, the profile not measuring), else nullptr.
inline char* direct_address(int team, int segment, int unit, std::uint64_t offset,
                            std::size_t bytes) noexcept {
  const Direct& d = g_direct;
  if (!d.locality) return nullptr;
  const SegmentInfo* s = d.find(team, segment);
  if (!s || static_cast<unsigned>(unit) >= s->units) return nullptr;
  char* part = s->peer_at[unit];
  if (!part) return nullptr;
  if (d.check && !fits_part(*s, unit, offset, bytes)) return nullptr;
  if (g_measure_comm.load(std::memory_order_relaxed)) return nullptr;
  return part + offset;
}

// The same for an atomic: only where the segment's atomics are CPU atomics
// on this node now (segment_table.hpp: cpu_atomics, not redirected).
inline char* direct_atomic_address(int team, int segment, int unit, std::uint64_t offset,
                                   std::size_t bytes) noexcept {
  const Direct& d = g_direct;
  const SegmentInfo* s = d.find(team, segment);
  if (!s || !s->cpu_atomics || s->redirect || static_cast<unsigned>(unit) >= s->units) return nullptr;
  char* part = s->peer_at[unit];
  if (!part) return nullptr;
  if (d.check && !fits_part(*s, unit, offset, bytes)) return nullptr;
  if (g_measure_comm.load(std::memory_order_relaxed)) return nullptr;
  return part + offset;
}

// Applies op with a CPU atomic; returns the old value. atomic_update and
// the updates an aggregator applies pass memory_order_relaxed: they are
// complete at a flush, whose full fence gives their visibility; the other
// callers keep acquire-release.
template <class T>
T cpu_apply(T* p, T v, Op op, std::memory_order order = std::memory_order_acq_rel) noexcept {
  std::atomic_ref<T> a(*p);
  if constexpr (std::is_integral_v<T>) {
    if (op == Op::sum) return a.fetch_add(v, order);
    if (op == Op::bxor) return a.fetch_xor(v, order);
  }
  if (op == Op::replace) return a.exchange(v, order);
  T old = a.load(std::memory_order_relaxed);
  for (;;) {
    T next = old;
    switch (op) {
      case Op::sum:
        next = old + v;
        break;
      case Op::min:
        next = v < old ? v : old;
        break;
      case Op::max:
        next = v > old ? v : old;
        break;
      default:
        break;
    }
    if (a.compare_exchange_weak(old, next, order, std::memory_order_relaxed)) return old;
  }
}

}  // namespace detail
}  // namespace locus
