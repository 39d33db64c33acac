#pragma once
// The translation table: (team id, segment id) -> SegmentInfo, indexed
// directly (no map, no hash), and the few process-wide values the inline
// same-node path reads. DASH's local-pointer access and OpenSHMEM's
// shmem_ptr are the models: a global pointer to my node becomes an address
// in a handful of instructions (locus/direct.hpp).
//
// Team ids and segment ids are small integers handed out in order (a team
// keeps counting; freed ids are not reused), so a table row per team and a
// slot per segment id stay small. Rows and slots change only inside the
// collective allocate/free and team split/free, which must not run while
// other threads of the unit use the core; lookups are plain loads.
#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "locus/settings.hpp"

namespace locus {

// One collective allocation: the translation-table entry of a segment.
struct SegmentInfo {
  int team = 0, id = 0;
  std::size_t elem_size = 1;
  MPI_Win shm = MPI_WIN_NULL;  // shared-memory window on the team's node communicator
  // The window the remote path uses for this segment (always in a lock_all
  // epoch): `own` (comm.window: segment) or the team's dynamic window.
  MPI_Win rma = MPI_WIN_NULL;
  MPI_Win own = MPI_WIN_NULL;  // the segment's own window, or MPI_WIN_NULL
  // Redirection (async.hpp): when on, operations on a unit of another node
  // and every atomic on the segment go to the main progress process of the
  // target's node, which exposes its node's parts in the segment's own
  // window at ghost_disp. Changed only collectively (set_async).
  bool redirect = false;
  AsyncHint hint = AsyncHint::follow;
  std::vector<int> ghost;            // team unit -> rank in `own` of its node's main progress process
  std::vector<MPI_Aint> ghost_disp;  // team unit -> displacement of its part in the ghost's window
  // Atomics on same-node targets use CPU atomics on the shared memory (the
  // whole team on one node, or atomics == aggregate; comm.locality on),
  // else MPI accumulates. Fixed at allocation so every atomic on the
  // segment takes the same mechanism.
  bool cpu_atomics = false;
  // Atomics on other nodes' units travel in batches that the target applies
  // with CPU atomics (aggregate.hpp); never redirected.
  bool aggregate = false;
  char* base = nullptr;            // my part
  std::vector<char*> peer;         // team unit -> address of its part if on my node, else nullptr
  std::vector<MPI_Aint> disp;      // team unit -> displacement of its part in `rma` (0 for `own`)
  std::vector<std::size_t> bytes;  // team unit -> size of its part
  // The inline path's view of `peer` (SegmentTable::add sets them): the
  // addresses and their number, read without a vector's end-begin.
  char* const* peer_at = nullptr;
  std::uint32_t units = 0;
  // Set after an MPI operation on `rma` was issued (Endpoint::issued),
  // cleared by flush(team) before it flushes the window: a flush with
  // nothing issued since the last one (every same-node transfer, CPU
  // atomics) calls no MPI.
  std::atomic<bool> unflushed{false};
};

namespace detail {

// One team's segments as the inline path reads them: slot[id] (null for a
// free id), n slots.
struct SegmentRow {
  SegmentInfo* const* slot = nullptr;
  std::uint32_t n = 0;
};

class SegmentTable {
 public:
  SegmentInfo* find(int team, int id) const noexcept {
    if (static_cast<unsigned>(team) >= index_.size()) return nullptr;
    const SegmentRow& row = index_[static_cast<std::size_t>(team)];
    if (static_cast<unsigned>(id) >= row.n) return nullptr;
    return row.slot[id];
  }
  const SegmentRow* rows() const noexcept { return index_.data(); }
  std::uint32_t row_count() const noexcept { return static_cast<std::uint32_t>(index_.size()); }
  void add(std::unique_ptr<SegmentInfo> s);
  std::unique_ptr<SegmentInfo> take(int team, int id);
  std::size_t count() const { return count_; }
  // fn(SegmentInfo&) for every live segment of the team, in id order.
  template <class Fn>
  void for_each(int team, Fn&& fn) const {
    if (static_cast<unsigned>(team) >= rows_.size()) return;
    for (const auto& s : rows_[static_cast<std::size_t>(team)])
      if (s) fn(*s);
  }

 private:
  void reindex();
  std::vector<std::vector<SegmentInfo*>> rows_;      // team id -> segment id -> segment (null: free)
  std::vector<std::unique_ptr<SegmentInfo>> owned_;  // the live segments
  std::vector<SegmentRow> index_;                    // over rows_
  std::size_t count_ = 0;
};

// What the inline paths read, set by the Runtime (null/false without one);
// rows/nrows mirror the table's index (SegmentTable keeps them current), so
// that a lookup starts from a global instead of loading the table first.
struct Direct {
  const SegmentTable* table = nullptr;
  bool locality = false;  // comm.locality
  bool check = false;     // comm.check, or a debug build of the library
  const SegmentRow* rows = nullptr;
  std::uint32_t nrows = 0;
  // The segment of (team, id), or nullptr.
  const SegmentInfo* find(int team, int id) const noexcept {
    if (static_cast<unsigned>(team) >= nrows) return nullptr;
    const SegmentRow& row = rows[team];
    if (static_cast<unsigned>(id) >= row.n) return nullptr;
    return row.slot[id];
  }
};
extern Direct g_direct;
// The communication-ratio profile (async.hpp, auto mode) is measuring: the
// inline paths step aside so that the timed general route counts them.
extern std::atomic<bool> g_measure_comm;

}  // namespace detail
}  // namespace locus
