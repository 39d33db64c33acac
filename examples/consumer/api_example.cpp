// The example of docs/core-api.md, built and run by CTest (core.api_example)
// so that the page stays true; docs_example.py checks the page quotes the
// part between the markers verbatim.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "locus/app.hpp"
#include "locus/rma.hpp"
#include "locus/segment.hpp"

// --- docs/core-api.md begins
#include "locus/plan.hpp"
#include "locus/rma.hpp"
#include "locus/segment.hpp"

int app(locus::Context& ctx) {
  locus::Team& world = ctx.runtime().world();

  // Collective: every unit contributes 1024 doubles (counts may differ, 0 is fine).
  locus::Array<double> a(world, 1024);
  std::fill(a.data(), a.data() + a.size(), world.rank());  // my part, plain memory
  locus::barrier(world);

  // Blocking get from the right neighbour: memcpy when it is on my node
  // (and comm.locality is on), MPI RMA on the segment's own window otherwise.
  int right = (world.rank() + 1) % world.size();
  std::vector<double> buf(16);
  locus::get(buf.data(), a.gptr(right) + 100, 16);
  if (buf[0] != right) throw locus::Error("get returned the wrong data");

  // Non-blocking, completed together (one flush per target window). A
  // handle is move-only and spent after wait: waiting twice is an Error.
  std::vector<locus::Handle> hs;
  hs.push_back(locus::get_async(buf.data(), a.gptr(right), 8));
  hs.push_back(locus::put_async(a.gptr(right) + 500, buf.data(), 8));
  locus::wait_all(hs);

  // Strided: 4 rows of 3 elements, 10 apart at the target, packed here.
  locus::Layout remote{.block = 3, .count = 4, .stride = 10};
  locus::Layout packed{.block = 3, .count = 4, .stride = 3};
  locus::get(buf.data(), packed, a.gptr(right), remote);

  // Atomics take one mechanism per segment (CPU atomics when the team is on
  // one node, else MPI), so they are atomic with each other.
  locus::Array<std::int64_t> counter(world, 1);
  counter.data()[0] = 0;  // segments are not zeroed
  locus::barrier(world);
  std::int64_t ticket = locus::fetch_and_op(counter.gptr(0), std::int64_t(1), locus::Op::sum);
  if (ticket < 0 || ticket >= world.size()) throw locus::Error("tickets are 0 .. units-1");
  locus::barrier(world);  // every unit has its ticket before the counter moves on
  std::int64_t one = 1;
  locus::Handle acc = locus::accumulate_async(counter.gptr(0), &one, 1, locus::Op::sum);
  locus::wait(acc);

  // Handle-free updates (OpenSHMEM's shmem_atomic_add + shmem_quiet): no
  // handle, no allocation; inline CPU atomics on my node, and on a segment
  // with aggregated atomics, batches to units of other nodes that their
  // owners apply. flush completes them; barrier also applies what others sent.
  locus::Array<std::uint64_t> hits(world, 4, locus::AsyncHint::follow, locus::AtomicMode::aggregate);
  std::fill(hits.data(), hits.data() + 4, 0);
  locus::barrier(world);
  for (int u = 0; u < world.size(); ++u)
    locus::atomic_update(hits.gptr(u) + 2, std::uint64_t(1), locus::Op::sum);
  locus::barrier(world);
  if (hits.data()[2] != static_cast<std::uint64_t>(world.size())) throw locus::Error("one hit per unit");

  // Notified put: the right neighbour waits for my data, nobody else does.
  locus::Array<std::uint64_t> flag(world, 1);
  flag.data()[0] = 0;
  locus::barrier(world);
  double mine = world.rank();
  locus::put_notify(a.gptr(right) + 1000, &mine, 1, flag.gptr(right), 1);
  locus::wait_notify(flag.data(), 1);  // my left neighbour's value is here
  int left = (world.rank() + world.size() - 1) % world.size();
  if (a.data()[1000] != left) throw locus::Error("notified put: wrong data");

  // A transfer plan: built once, executed every step (here: elements 3, 7
  // and 9 of every unit's part into one local buffer).
  std::vector<locus::PlanEntry> entries;
  for (int u = 0; u < world.size(); ++u)
    entries.push_back({u, locus::Side::contiguous(3 * u, 3), locus::Side::indexed(0, {3, 7, 9})});
  locus::GetPlan<double> plan(a.gptr(), entries);
  locus::barrier(world);
  std::vector<double> gathered(3 * world.size());
  plan.execute(gathered.data());

  // Force the MPI path for one call (the baseline, from the same code).
  locus::get(buf.data(), a.gptr(right), 16, locus::Route::mpi);

  // Sub-teams have their own segments (and windows).
  auto half = world.split(world.rank() % 2);
  locus::Array<int> b(*half, 4);
  locus::barrier(*half);
  return 0;
}  // Arrays free their segments (collectively) when they go out of scope
// --- docs/core-api.md ends

int main(int argc, char** argv) {
  locus::AppInfo info;
  info.name = "api_example";
  info.description = "the example of docs/core-api.md";
  locus::add_common_keys(info.schema, "api_example");
  return locus::run(argc, argv, info, app);
}
