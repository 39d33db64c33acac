#pragma once
// Collective allocation of global memory: nested windows.
//
// allocate<T>(team, count) is collective over the team; each unit
// contributes `count` elements (0 allowed, counts may differ), not
// initialised. The memory is a page-rounded MPI_Win_allocate_shared on the
// team's node communicator (so same-node units can load/store it), with
// its own MPI window over the team (comm.window: segment, the default) or
// attached to the team's dynamic window (comm.window: dynamic, the DART
// design), so that other nodes reach it by MPI RMA. A segment id keys the translation table that maps a
// global pointer to a shared-memory address (same node) or a window displacement (other node).
#include <mpi.h>

#include <cstddef>
#include <string>
#include <utility>

#include "locus/detail/segment.hpp"
#include "locus/gptr.hpp"
#include "locus/settings.hpp"
#include "locus/team.hpp"

namespace locus {

// Collective. `hint` (async.hpp): AsyncHint::never keeps the segment out
// of redirection whatever the team's state. `atomics` (settings.hpp): how
// the segment's atomics reach other nodes (automatic: comm.atomics); the
// same on every unit.
template <class T>
GlobalPtr<T> allocate(Team& team, std::size_t count, AsyncHint hint = AsyncHint::follow,
                      AtomicMode atomics = AtomicMode::automatic) {
  static_assert(std::is_trivially_copyable_v<T>, "segments hold trivially copyable types");
  int id = detail::allocate_segment(team, count, sizeof(T), hint, atomics);
  return GlobalPtr<T>{team.rank(), team.id(), id, 0, 0};
}

// How a segment's operations travel now, for reports and tests.
struct SegmentState {
  // Atomics on same-node units are CPU atomics on the shared memory (fixed
  // at allocation: the team on one node, or comm.atomics: aggregate).
  bool cpu_atomics = false;
  // Atomics and one-element gets to other nodes' units travel in batches
  // (comm.atomics: aggregate).
  bool aggregated = false;
  // Redirection (async.hpp) sends its operations to progress processes now.
  bool redirected = false;
  // Same-node floating-point atomics and compare-and-swaps take stripe
  // locks (comm.fp_locks; fixed at allocation).
  bool fp_locks = false;
};
// Error when the segment is not allocated.
SegmentState segment_state(int team, int segment);
template <class T>
SegmentState segment_state(GlobalPtr<T> p) {
  return segment_state(p.team, p.segment);
}

template <class T>
void free(GlobalPtr<T> p) {
  detail::free_segment(p.team, p.segment);
}

// A segment owned by an object: allocated in the constructor, freed
// (collectively) in the destructor. Move-only.
template <class T>
class Array {
 public:
  Array() = default;
  Array(Team& team, std::size_t count, AsyncHint hint = AsyncHint::follow,
        AtomicMode atomics = AtomicMode::automatic)
      : base_(allocate<T>(team, count, hint, atomics)), count_(count) {
    data_ = base_.local();
  }
  ~Array() { reset(); }
  Array(Array&& o) noexcept { *this = std::move(o); }
  Array& operator=(Array&& o) noexcept {
    if (this != &o) {
      reset();
      std::swap(base_, o.base_);
      std::swap(count_, o.count_);
      std::swap(data_, o.data_);
    }
    return *this;
  }
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;

  // My part.
  T* data() const { return data_; }
  std::size_t size() const { return count_; }
  // Element 0 of `unit`'s part.
  GlobalPtr<T> gptr(int unit) const { return base_.at(unit); }
  GlobalPtr<T> gptr() const { return base_; }

  void reset() {
    if (!base_.is_null() && collective_cleanup_allowed()) free(base_);
    base_ = GlobalPtr<T>{};
    count_ = 0;
    data_ = nullptr;
  }

 private:
  GlobalPtr<T> base_{};
  std::size_t count_ = 0;
  T* data_ = nullptr;
};

}  // namespace locus
