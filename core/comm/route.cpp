// The one route decision of the core (transfer.hpp): which path a
// transfer or an atomic takes, and where it goes.
#include "comm/comm_state.hpp"
#include "locus/async.hpp"
#include "mem/shared_pages.hpp"
#include "progress/progress_engine.hpp"
#include "xfer/transfer.hpp"

namespace locus::detail {

bool same_node(const Target& t) {
  return t.seg->peer[static_cast<std::size_t>(t.unit)] != nullptr;
}

// The one route decision of a get/put.
Path choose(const Target& t, Route r, std::size_t bytes, bool async) {
  if (r == Route::mpi) return Path::direct;
  const CommSettings& cs = (*detail::core().settings);
  const bool shm = cs.locality && same_node(t);
  // Redirection on (comm.async_ops: all): another node's unit is reached
  // through its ghost.
  if (t.seg->redirect && cs.async.data && !shm) return Path::redirect;
  if (async && r == Route::automatic) {
    const ProgressEngine* e = progress_engine();
    if (e && t.team->served() && bytes >= e->settings().threshold) return Path::offload;
  }
  return shm ? Path::shared : Path::direct;
}

// Atomics: all of a segment's go through one mechanism, fixed at
// allocation (segment_table.hpp): CPU atomics on the node's shared memory
// (for other nodes' units, in batches the target applies: aggregate), or
// MPI on the unit -- through the target's ghost while redirection is on,
// local origins included.
AtomicPath atomic_route(const Target& t) {
  if (t.seg->redirect) return AtomicPath::redirect;
  if (t.seg->cpu_atomics) return same_node(t) ? AtomicPath::cpu : AtomicPath::aggregate;
  return AtomicPath::mpi;
}
Path atomic_path(const Target& t) {
  return t.seg->redirect ? Path::redirect : Path::direct;
}
Endpoint endpoint(const Target& t, Path p) {
  Endpoint e;
  const auto u = static_cast<std::size_t>(t.unit);
  if (p == Path::shared) {
    e.shared = t.seg->peer[u] + t.offset;
  } else if (p == Path::redirect) {
    e.seg = t.seg;
    e.win = t.seg->rma;
    rma_epoch(e.win);
    e.rank = t.seg->ghost[u];
    e.disp = t.seg->ghost_disp[u] + static_cast<MPI_Aint>(t.offset);
  } else {
    e.seg = t.seg;
    e.win = t.seg->rma;
    rma_epoch(e.win);  // the SMPI build's epoch at the first RMA (shared_pages.hpp)
    e.rank = t.unit;
    e.disp = t.seg->disp[u] + static_cast<MPI_Aint>(t.offset);
  }
  return e;
}

}  // namespace locus::detail
