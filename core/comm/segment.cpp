// Segments: the collective allocation protocol (segment.hpp) over the
// memory layer's windows, with the progress processes, redirection and
// aggregation that a segment takes part in, and the release of a team's
// segments when the team goes.
#include "locus/segment.hpp"

#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "comm/aggregate.hpp"
#include "comm/comm_state.hpp"
#include "locus/async.hpp"
#include "locus/collective.hpp"
#include "locus/counts.hpp"
#include "locus/wait.hpp"
#include "mem/core_state.hpp"
#include "mem/node_memory.hpp"
#include "mem/shared_pages.hpp"
#include "mem/stripe_locks.hpp"
#include "progress/progress_engine.hpp"
#include "xfer/transfer.hpp"

namespace locus {

namespace detail {

namespace {

// Collective over the team: the sizes fit and every node can hold its
// units' parts. Runs before the progress processes are told anything.
void check_allocation(Team& team, std::size_t count, std::size_t elem_size, std::size_t& bytes) {
  const bool overflow = elem_size != 0 && count > std::numeric_limits<std::size_t>::max() / elem_size / 2;
  bytes = overflow ? 0 : count * elem_size;
  double mine = overflow ? 0.0 : static_cast<double>(page_round(bytes));
  double node_total = 0.0;
  locus::yielding::allreduce(&mine, &node_total, 1, MPI_DOUBLE, MPI_SUM, team.node_comm());
  std::string msg;
  if (overflow) {
    msg = "allocate: " + std::to_string(count) + " elements of " + std::to_string(elem_size) +
          " bytes overflow a 64-bit size (unit " + std::to_string(team.rank()) + ")";
  } else {
    int node_rank = 0;
    MPI_Comm_rank(team.node_comm(), &node_rank);
    std::string what;
    const double cap = node_rank == 0 ? node_capacity(what) : -1.0;
    if (cap >= 0 && node_total > cap)
      msg = "allocate: the units of team " + std::to_string(team.id()) + " on the node of unit " +
            std::to_string(team.rank()) + " need " + gib(node_total) +
            " of shared memory, but the node has " + what + " (make the problem smaller or use more nodes)";
    // every process maps all parts of its node: its address-space limit
    const std::string limit = process_limit_problem(node_total, 0.0);
    if (msg.empty() && !limit.empty())
      msg = "allocate: unit " + std::to_string(team.rank()) + " of team " + std::to_string(team.id()) + " " +
            limit + " (make the problem smaller or use more nodes)";
  }
  collective_require(team.comm(), msg.empty(), msg);
}

// Where my part lies in my node's shared memory, from the node's lowest
// part: the ghost exposes that range (redirection, async.hpp). Offsets
// are the same in every process of the node (one mapping).
long long node_offset_of(Team& team, const SegmentInfo& seg, std::size_t bytes) {
  if (!team.served() || bytes == 0) return 0;
  int n = 0;
  MPI_Comm_size(team.shm_comm(), &n);
  const char* lowest = seg.base;
  for (int r = 0; r < n; ++r) {
    MPI_Aint size = 0;
    const char* p = shared_part(seg.shm, r, &size);
    if (size > 0 && p < lowest) lowest = p;
  }
  return static_cast<long long>(seg.base - lowest);
}

// Every unit's displacement, size and same-node address from the gathered
// claims (and, on a served team, its ghost). Returns "" or the mismatch of
// a unit that allocates another segment or element size.
std::string record_claims(Team& team, SegmentInfo& seg, const std::vector<Claim>& all, const Claim& mine) {
  seg.peer.assign(all.size(), nullptr);
  seg.disp.resize(all.size());
  seg.bytes.resize(all.size());
  std::string mismatch;
  for (int u = 0; u < team.size(); ++u) {
    const Claim& c = all[static_cast<std::size_t>(u)];
    seg.disp[static_cast<std::size_t>(u)] = static_cast<MPI_Aint>(c.disp);
    seg.bytes[static_cast<std::size_t>(u)] = static_cast<std::size_t>(c.bytes);
    if (c.segment != seg.id || c.elem_size != mine.elem_size)
      mismatch = "allocate: mismatched collective call on team " + std::to_string(team.id()) + ": unit " +
                 std::to_string(u) + " allocates segment " + std::to_string(c.segment) + " of " +
                 std::to_string(c.elem_size) + "-byte elements, unit " + std::to_string(team.rank()) +
                 " segment " + std::to_string(seg.id) + " of " + std::to_string(mine.elem_size) +
                 "-byte elements";
    int nr = team.node_rank(u);
    if (nr >= 0) {
      seg.peer[static_cast<std::size_t>(u)] = shared_part(seg.shm, nr, nullptr);
    }
  }
  if (team.served()) {
    const ProgressEngine* engine = core().engine;
    seg.ghost.resize(all.size());
    seg.ghost_disp.resize(all.size());
    for (std::size_t u = 0; u < all.size(); ++u) {
      seg.ghost[u] = engine->ghost_of(static_cast<int>(u));
      seg.ghost_disp[u] = static_cast<MPI_Aint>(all[u].node_offset);
    }
  }
  return mismatch;
}

// The segment's atomics (MPI, CPU, or aggregated) and the window the
// remote path uses (its own, or the team's dynamic one).
void choose_atomics_and_window(Team& team, SegmentInfo& seg, std::size_t bytes, bool own, AsyncHint hint,
                               AtomicMode atomics) {
  const CommSettings& settings = *core().settings;
  bool one_node = true;
  for (int u = 0; u < team.size(); ++u) one_node = one_node && team.same_node(u);
  // comm.atomics: aggregate needs comm.locality (CPU atomics on the node).
  if (atomics == AtomicMode::automatic) atomics = settings.atomics;
  seg.aggregate = settings.locality && !one_node && atomics == AtomicMode::aggregate;
  seg.cpu_atomics = settings.locality && (one_node || seg.aggregate);
  if (seg.aggregate) hint = AsyncHint::never;  // applied on its node, never redirected
  if (own) {
    seg.own = create_segment_window(seg.base, bytes,
                                    team.served() ? core().engine->layout().full_comm : team.comm());
    seg.rma = seg.own;
    seg.hint = hint;
    seg.redirect = team.served() && async_default_on() && hint != AsyncHint::never;
  } else {
    seg.rma = team_window(team);
  }
}

}  // namespace

int allocate_segment(Team& team, std::size_t count, std::size_t elem_size, AsyncHint hint,
                     AtomicMode atomics) {
  std::size_t bytes = 0;
  check_allocation(team, count, elem_size, bytes);
  CoreState& st = core();
  auto seg = std::make_unique<SegmentInfo>();
  seg->team = team.id();
  seg->id = next_segment_id(team);
  seg->elem_size = elem_size;

  // Shared memory among this team's units on my node. A served team's
  // progress processes join with zero bytes (they are told to by the node's
  // first unit) and so map every part.
  if (team.served()) core().engine->notify_servers(Control::alloc, team.id(), seg->id);
  void* base = nullptr;
  // comm.fp_locks: the part's stripe locks after its data (never with
  // progress processes: decide_fp_locks)
  seg->fp_locks = st.settings->fp_locks && !team.served();
  seg->shm =
      allocate_shared_pages(seg->fp_locks ? page_round(bytes) + kStripeArea : bytes, team.shm_comm(), &base);
  // My lock words start free: MPI need not zero a window's memory (MPICH
  // hands out reused pages). The claims' allgather below orders this
  // before any unit's first use.
  if (seg->fp_locks) std::memset(stripe_area(static_cast<char*>(base), bytes), 0, kStripeArea);
  // An epoch for MPI_Win_sync and the unified memory model; never closed
  // before the window is freed.
  MPI_Win_lock_all(MPI_MODE_NOCHECK, seg->shm);
  seg->base = static_cast<char*>(base);

  const bool own = st.settings->window == WindowKind::segment;
  MPI_Aint disp = 0;
  if (!own && bytes > 0) {
    MPI_Win_attach(team_window(team), seg->base, static_cast<MPI_Aint>(bytes));
    MPI_Get_address(seg->base, &disp);
  }
  const long long node_offset = node_offset_of(team, *seg, bytes);
  Claim mine{static_cast<long long>(disp), static_cast<long long>(bytes), node_offset, seg->id,
             static_cast<int>(elem_size)};
  std::vector<Claim> all(static_cast<std::size_t>(team.size()));
  locus::yielding::allgather(&mine, sizeof(Claim), MPI_BYTE, all.data(), sizeof(Claim), MPI_BYTE,
                             team.comm());
  if (team.served())
    locus::yielding::bcast(all.data(), static_cast<int>(all.size() * sizeof(Claim)), MPI_BYTE, 0,
                           team.shm_comm());
  const std::string mismatch = record_claims(team, *seg, all, mine);
  choose_atomics_and_window(team, *seg, bytes, own, hint, atomics);
  int id = seg->id;
  const bool aggregate = seg->aggregate;
  st.segments.add(std::move(seg));
  note_segment_bytes(static_cast<std::int64_t>(bytes));  // the footprint (counts.hpp): my part, unrounded
  if (aggregate && mismatch.empty()) ensure_aggregator(team);
  if (!mismatch.empty()) {
    // Every unit saw the same gathered claims, so every unit raises this.
    free_segment(team.id(), id);
    throw CollectiveError(mismatch);
  }
  return id;
}

void free_segment(int team_id, int segment) {
  complete_lookahead();  // nothing of this thread may still read the segment
  recycle_values();      // nor remember its window
  CoreState& st = core();
  Team& team = detail::team(team_id);
  if (st.settings->check) {
    int ids[2] = {segment, -segment};
    locus::yielding::allreduce(MPI_IN_PLACE, ids, 2, MPI_INT, MPI_MAX, team.comm());
    if (ids[0] != -ids[1])
      throw CollectiveError("free: mismatched collective call on team " + std::to_string(team_id) +
                            ": units free different segments (ids " + std::to_string(-ids[1]) + " to " +
                            std::to_string(ids[0]) + ")");
  }
  const SegmentInfo* live = st.segments.find(team_id, segment);
  if (!live)
    throw Error("free: segment " + std::to_string(segment) + " of team " + std::to_string(team_id) +
                " is not allocated (freed twice?)");
  // Nobody may still be reading or writing it (aggregated batches still
  // in flight included: that barrier applies them while it waits).
  if (Aggregator* agg = aggregator_of(team); agg && live->aggregate)
    agg->barrier();
  else
    locus::yielding::barrier(team.comm());
  auto seg = st.segments.take(team_id, segment);
  note_segment_bytes(-static_cast<std::int64_t>(seg->bytes[static_cast<std::size_t>(team.rank())]));
  if (team.served()) core().engine->notify_servers(Control::free, team_id, segment);
  if (seg->own != MPI_WIN_NULL) {
    free_segment_window(seg->own);
  } else if (seg->bytes[static_cast<std::size_t>(team.rank())] > 0) {
    MPI_Win_detach(team_window(team), seg->base);
  }
  MPI_Win_unlock_all(seg->shm);
  MPI_Win_free(&seg->shm);
}

void release_team(Team& team) {
  Aggregator* agg = aggregator_of(team);
  // Aggregated batches still in flight land in this team's segments.
  if (agg) agg->shutdown();
  std::vector<int> ids;
  core().segments.for_each(team.id(), [&](const SegmentInfo& seg) { ids.push_back(seg.id); });
  for (int id : ids) free_segment(team.id(), id);
  if (agg) drop_aggregator(team);
}

}  // namespace detail

SegmentState segment_state(int team, int segment) {
  const SegmentInfo& s = detail::segment(team, segment);
  return SegmentState{s.cpu_atomics, s.aggregate, s.redirect, s.fp_locks};
}

}  // namespace locus
