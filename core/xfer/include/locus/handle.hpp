#pragma once
// The vocabulary of one transfer, shared by every layer that moves data:
// the route a call asks for, a strided layout, the handle of a
// non-blocking operation (locus/rma.hpp has the calls).
#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace locus {

// automatic: the route the core picks (below); local: the same, but never
// through a progress process; mpi: MPI RMA on the segment's window.
enum class Route { automatic, local, mpi };

// A strided region, in elements: `rows` rows, each `count` blocks of `block`
// contiguous elements, `stride` apart; rows `row_stride` apart.
struct Layout {
  std::size_t block = 0;
  std::size_t count = 1;
  std::size_t stride = 0;
  std::size_t rows = 1;
  std::size_t row_stride = 0;
  std::size_t elements() const { return block * count * rows; }
  // Elements from the first to one past the last.
  std::size_t extent() const;
  bool operator<(const Layout& o) const;
  bool operator==(const Layout& o) const = default;
};

// A non-blocking operation in flight, owned by exactly one Handle
// (move-only). wait() or a test() that returns true completes it, and the
// handle is spent: waiting or testing it again, or using a moved-from
// handle, throws Error (DART's contract: after a successful wait the
// handle is invalid). wait_all() skips handles that are already spent (as
// MPI_Waitall skips MPI_REQUEST_NULL). A handle destroyed (or assigned to)
// while its operation is in flight completes it first, so no request,
// completion slot or flush leaks; during exception unwinding it is
// abandoned instead (the job is ending).
//
// Thread safety: a handle belongs to the thread that waits on it; several
// threads of a unit may each issue, wait and test their own handles.
class Handle {
 public:
  Handle() = default;
  Handle(Handle&& o) noexcept;
  Handle& operator=(Handle&& o) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle();

  // True when the operation has been started and not yet completed by
  // wait/test (it may have finished in the meantime).
  bool live() const { return o_.state >= State::ready; }
  // True when nothing is outstanding: never started, completed, or moved from.
  bool done() const { return !live(); }
  // True when a progress process carries the operation.
  bool offloaded() const { return o_.state == State::offload; }

 private:
  friend struct HandleAccess;
  enum class State : std::uint8_t { empty, spent, moved, ready, mpi, thread, offload };
  void abandon_or_complete() noexcept;
  // What the handle owns, moved as one.
  struct Owned {
    State state = State::empty;
    bool flush = false;  // mpi/thread: a flush of (target, win) completes it
    MPI_Request req = MPI_REQUEST_NULL;
    // mpi/thread with flush: the window to flush, kept as its bits (an
    // MPI_Win is an int or a pointer; HandleAccess converts it), so that
    // no public header names a window.
    std::uint64_t win = 0;
    int target = -1;
    std::int32_t slot = -1;  // progress-process completion slot
    std::int32_t reg = -1;   // progress-thread registry entry
    std::uint32_t esize = 0;
    std::uint64_t staged = 0, staged_bytes = 0;  // staging-area offset and size
    void* unpack = nullptr;                      // staged get: copied out to here at completion
    Layout unpack_layout{};
  } o_;
};

}  // namespace locus
