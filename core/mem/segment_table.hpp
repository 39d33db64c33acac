#pragma once
// Internal: the core's segment records and the translation table, (team
// id, segment id) -> SegmentInfo, indexed directly (no map, no hash). The
// table keeps the inline path's plain-data mirror (locus/detail/direct.hpp) in
// step with the records; the Runtime owns the table (runtime_state.hpp).
//
// Team ids and segment ids are small integers handed out in order (a team
// keeps counting; freed ids are not reused), so a row per team and a slot
// per segment id stay small. Rows and slots change only inside the
// collective allocate/free, team split/free and set_async, which must not
// run while other threads of the unit use the core; lookups are plain loads.
#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "locus/detail/direct.hpp"
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
  // Every part is followed by its stripe locks (comm.fp_locks,
  // mem/stripe_locks.hpp) at part + page_round(its bytes); fixed at
  // allocation.
  bool fp_locks = false;
  char* base = nullptr;            // my part
  std::vector<char*> peer;         // team unit -> address of its part if on my node, else nullptr
  std::vector<MPI_Aint> disp;      // team unit -> displacement of its part in `rma` (0 for `own`)
  std::vector<std::size_t> bytes;  // team unit -> size of its part
  // Set after an MPI operation on `rma` was issued (Endpoint::issued),
  // cleared by flush(team) before it flushes the window: a flush with
  // nothing issued since the last one (every same-node transfer, CPU
  // atomics) calls no MPI.
  std::atomic<bool> unflushed{false};
};

namespace detail {

class SegmentTable {
 public:
  SegmentInfo* find(int team, int id) const noexcept {
    if (static_cast<unsigned>(team) >= rows_.size()) return nullptr;
    const auto& row = rows_[static_cast<std::size_t>(team)];
    if (static_cast<unsigned>(id) >= row.size()) return nullptr;
    return row[static_cast<std::size_t>(id)];
  }
  void add(std::unique_ptr<SegmentInfo> s);
  std::unique_ptr<SegmentInfo> take(int team, int id);
  std::size_t count() const { return owned_.size(); }
  // fn(SegmentInfo&) for every live segment of the team, in id order.
  template <class Fn>
  void for_each(int team, Fn&& fn) const {
    if (static_cast<unsigned>(team) >= rows_.size()) return;
    for (SegmentInfo* s : rows_[static_cast<std::size_t>(team)])
      if (s) fn(*s);
  }
  // Rewrites the inline path's entry of every segment of the team (after
  // their redirection changed).
  void refresh(int team);
  // The inline path reads this table from now on (g_direct's rows), with
  // these settings; unpublish empties g_direct.
  void publish(bool locality, bool check);
  // The team's aggregator, as the inline path finds it (null: none).
  void set_aggregator(int team, Aggregator* a);
  void unpublish();

 private:
  void mirror(const SegmentInfo& s);
  void reindex();
  std::vector<std::vector<SegmentInfo*>> rows_;      // team id -> segment id -> segment (null: free)
  std::vector<std::vector<DirectSegment>> direct_;   // the same, as the inline path reads it
  std::vector<DirectRow> index_;                     // over direct_
  std::vector<Aggregator*> aggregators_;             // team id -> its aggregator
  std::vector<std::unique_ptr<SegmentInfo>> owned_;  // the live segments
  bool published_ = false;
};

}  // namespace detail
}  // namespace locus
