// Notified transfers: notify a flag, wait for it (rma.hpp).
#include <atomic>

#include "comm/aggregate.hpp"
#include "comm/calls.hpp"
#include "comm/comm_state.hpp"
#include "locus/counts.hpp"
#include "locus/rma.hpp"
#include "locus/wait.hpp"
#include "xfer/transfer.hpp"

namespace locus {

namespace detail {

// Counted (counts.hpp) as one atomic update, no bytes (a flag is
// synchronisation, not data), and one RMA call when MPI writes it.
void notify(const Target& t, std::uint64_t value) {
  locus::count(Count::atomic_updates, 1);
  if ((*detail::core().settings).locality && same_node(t)) {
    std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(cpu_address(t)))
        .store(value, std::memory_order_release);
    return;
  }
  // Earlier puts to this unit are complete (blocking puts and completed
  // handles are flushed), so only the flag itself moves here: an atomic
  // replace, completed locally only (the value is on the stack). Its
  // remote completion needs no wait of ours: the consumer polls, and the
  // next flush to this target (or MPI progress on either side) completes
  // it; accumulates from one origin to one location stay ordered, so a
  // later value never lands before an earlier one. (A same-node flag is a
  // release store above, redirection or not: a flag has one producer.)
  locus::count(Count::rma_ops, 1);
  const Endpoint e = endpoint(t, atomic_path(t));
  MPI_Accumulate(&value, 1, MPI_UINT64_T, e.rank, e.disp, 1, MPI_UINT64_T, MPI_REPLACE, e.win);
  MPI_Win_flush_local(e.rank, e.win);
  e.issued();
}

}  // namespace detail

void notify(GlobalPtr<std::uint64_t> flag, std::uint64_t value) {
  detail::notify(detail::resolve(detail::target(flag, 1, "notify")), value);
}

std::uint64_t wait_notify(const std::uint64_t* flag, std::uint64_t value) {
  detail::CommScope timed;
  unsigned spins = 0;
  Team& world = (*detail::core().world);
  detail::Aggregator* agg = detail::aggregator_of(world);
  for (;;) {
    const std::uint64_t v = __atomic_load_n(flag, __ATOMIC_ACQUIRE);
    if (v >= value) return v;
    if (agg) agg->progress();
    relax_with_progress(spins, world.comm());
  }
}

}  // namespace locus
