#pragma once
// Transfer plans: who moves what from (or to) whom, built once, executed
// every step (Cabana's Halo, built from export ids and ranks, is the model).
//
// A plan is a list of entries over one segment: a remote unit, an offset
// into that unit's part, an offset into a local buffer, and the layout of
// the elements on each side — contiguous, strided (Layout) or an index list
// (element offsets, each the start of `block` contiguous elements). The
// plan resolves every entry's route once (shared memory, MPI on the
// segment's window, or the node's progress process), builds the MPI
// datatypes of index lists and strided layouts once, and then a step is
// start() + wait() (or execute()).
//
//   std::vector<PlanEntry> wish = ...;  // e.g. spmv: the x entries I need
//   GetPlan<double> halo(x.gptr(), wish);
//   for (step...) { halo.execute(x_halo.data()); ... }
//
// Synchronisation is the caller's (a barrier, or notified transfers): the
// plan only moves data. Not thread-safe: one thread executes a plan.
//
// Routes to other nodes (comm.remote, settings.hpp). A plan built with
// RemoteMode::rma (the default) is one-sided: only the units that build it
// take part. With any other mode the plan may send entries to units of
// other nodes as two-sided messages instead: then construction is
// collective over the segment's team (every unit builds the plan, with the
// same entries it will use, in the same order relative to its other plans),
// each unit learns which of its own data the others' entries read (gets) or
// write (puts), and every execution is collective between the units of a
// pair that message(): both start() and wait() as many times. A message
// entry needs no announcement (its arrival is one): users skip their flags
// for the units message() names. Entries to same-node units, and to all
// units under RemoteMode::rma, stay as above.
#include <mpi.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "locus/detail/plan.hpp"
#include "locus/gptr.hpp"
#include "locus/rma.hpp"
#include "locus/settings.hpp"

namespace locus {

// One side of a plan entry. An index list wins over the layout when it is
// not empty: `index` holds element offsets, each the start of
// `index_block` contiguous elements.
struct Side {
  std::size_t offset = 0;  // elements: into the local buffer, or into the unit's part
  Layout layout{};
  std::vector<std::size_t> index{};
  std::size_t index_block = 1;
  std::size_t elements() const { return index.empty() ? layout.elements() : index.size() * index_block; }
  static Side contiguous(std::size_t offset, std::size_t count) {
    return Side{offset, Layout{count, 1, 0, 1, 0}, {}, 1};
  }
  static Side strided(std::size_t offset, const Layout& l) { return Side{offset, l, {}, 1}; }
  static Side indexed(std::size_t offset, std::vector<std::size_t> index, std::size_t block = 1) {
    return Side{offset, Layout{}, std::move(index), block};
  }
};

struct PlanEntry {
  int unit = -1;  // remote unit (team rank of the segment's team)
  Side local, remote;
};

// Gets (get = true) or puts of a plan's entries over the segment `seg`
// points into (its unit and offset are ignored: entries name both).
template <class T, bool Get>
class TransferPlan {
 public:
  TransferPlan() = default;
  // Checks every entry (same element count on both sides, bounds of the
  // remote side); throws Error naming the entry. With Route::automatic and
  // progress processes, entries of at least runtime.progress.threshold
  // bytes whose sides are layouts (not index lists) are handed to the
  // node's progress process; Route::local never does that.
  // `remote`: RemoteMode::deck follows comm.remote; anything but rma makes
  // construction and execution collective (above). Two units that build
  // the plan with different modes or calibrations get an Error on both.
  TransferPlan(GlobalPtr<T> seg, std::vector<PlanEntry> entries, Route route = Route::automatic,
               RemoteMode remote = RemoteMode::rma)
      : impl_(detail::make_plan(seg.team, seg.segment, std::move(entries), sizeof(T), Get, route, remote)) {}
  // Starts every entry; `local` is the local buffer the entries' local
  // offsets count from. Same-node entries are complete on return.
  void start(T* local) { detail::plan_start(*impl_, local); }
  // Completes what start() began (one flush per target window).
  void wait() { detail::plan_wait(*impl_); }
  void execute(T* local) {
    start(local);
    wait();
  }
  // Entries this unit moves by MPI itself (not memcpy, not offloaded;
  // messages included).
  std::size_t remote_entries() const { return detail::plan_remote_entries(*impl_); }
  // Transfers between this unit and `unit` travel as messages, in either
  // direction (my entries to it, or its entries to me): no flags needed.
  bool message(int unit) const { return detail::plan_message(*impl_, unit); }
  // How this unit posts its messages (comm.remote_requests decides at
  // construction; never automatic): immediate requests, persistent ones
  // (MPI_Send_init/MPI_Recv_init once per local buffer, MPI_Startall at
  // each start) or eager sends (MPI_Irecv, then blocking MPI_Send). Local
  // to the unit (any send matches any receive); set between executions.
  // Asking for eager on a plan whose pairs move more than kEagerMaxBytes
  // gives immediate. Without message pairs: immediate.
  RemoteRequests requests() const { return detail::plan_requests(*impl_); }
  void requests(RemoteRequests way) { detail::plan_set_requests(*impl_, way); }
  bool persistent_requests() const { return requests() == RemoteRequests::persistent; }
  void persistent_requests(bool on) { requests(on ? RemoteRequests::persistent : RemoteRequests::immediate); }

 private:
  std::unique_ptr<detail::PlanImpl, detail::PlanDeleter> impl_;
};

// The route a collective plan built with `mode` takes between this unit and
// `unit` of team `team` when the pair moves `bytes` per execution in its
// larger direction: true for messages (a unit of another node, and
// comm.remote message, or auto with the calibration favouring messages).
// Every plan decides its pairs with this; callers that split their
// transfers by route before building plans (the notified halo) ask it too.
bool message_route(int team, int unit, double bytes, RemoteMode mode = RemoteMode::deck);

// What this unit's collective plans decided so far: pairs (a plan and
// another unit of another node) that exchange by message or by RMA, and the
// largest bytes per execution of each (for the run summary).
struct RemoteRoutes {
  long message_pairs = 0, rma_pairs = 0;
  long persistent_plans = 0, immediate_plans = 0,
       eager_plans = 0;  // plans with message pairs, by how they post
  double message_max_bytes = 0, rma_max_bytes = 0;
};
RemoteRoutes remote_routes();

template <class T>
using GetPlan = TransferPlan<T, true>;
template <class T>
using PutPlan = TransferPlan<T, false>;

}  // namespace locus
