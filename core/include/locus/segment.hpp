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

#include "locus/gptr.hpp"
#include "locus/team.hpp"

namespace locus {

namespace detail {
// Returns the new segment's id. Throws CollectiveError on mismatched calls.
// Collective: `count` elements of `elem_size` bytes from every unit. Before
// anything is mapped, the units check together that the sizes fit (no
// overflow) and that every node can hold its units' parts (free space in
// /dev/shm and available memory); otherwise every unit throws the same
// CollectiveError saying how much the node needs and how much it has.
int allocate_segment(Team& team, std::size_t count, std::size_t elem_size, AsyncHint hint = AsyncHint::follow,
                     AtomicMode atomics = AtomicMode::automatic);
// Collective over the segment's team.
void free_segment(int team, int segment);
// Collective over comm (one node): MPI_Win_allocate_shared of `bytes`
// rounded up to whole pages, non-contiguous so that every part starts on its
// own page (parts share no cache line). Segments and the progress engine's
// memory are allocated this way.
// Collective over comm: a window over `bytes` at `base` (displacement unit
// 1), opened with lock_all(MPI_MODE_NOCHECK). Progress processes join the
// world team's windows with 0 bytes.
MPI_Win create_segment_window(void* base, std::size_t bytes, MPI_Comm comm);
// Closes the epoch and frees the window (collective).
void free_segment_window(MPI_Win& win);
MPI_Win allocate_shared_pages(std::size_t bytes, MPI_Comm comm, void** base);
// Rank `rank`'s part of a window from allocate_shared_pages, in this
// process's mapping, starting at a page (as `base` above); `size` (may be
// null) gets its usable bytes. Use it instead of MPI_Win_shared_query.
char* shared_part(MPI_Win win, int rank, MPI_Aint* size);
// Bytes this node can still map in shared memory (free space in /dev/shm and
// MemAvailable, the smaller; -1 if unknown); `what` says which and how much.
double node_capacity(std::string& what);
// "1.5 GiB"
std::string gib(double bytes);
}  // namespace detail

// Collective over the team, before a large private allocation: every unit
// says how many bytes it is about to need; when the units of a node need
// more than the node's available memory (MemAvailable), every unit throws
// the same CollectiveError: "<what>: needs X GiB on node N (k units), the
// node has Y GiB of memory available". Apps call it before building big
// data structures that do not live in segments (allocate checks those).
void require_node_memory(Team& team, double bytes, const std::string& what);

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
