// A small locus app for the fault tests of progress processes
// (tests/progress_faults.py): it moves data through the servers, then
// fails as the deck says. No mode may hang or leave a process behind.
//   none        finish normally (exit 0)
//   local       unit 0 throws a locus::Error while the others wait in a
//               barrier: the runtime aborts the job (servers included)
//   collective  every unit raises the same error: clean exit 1, the
//               servers are told to stop
//   abort       unit 0 calls MPI_Abort with an offloaded get in flight
//   core        a mismatched collective allocate (unit 0 allocates floats,
//               the others doubles): the core's CollectiveError must end
//               every unit and server within seconds
#include <mpi.h>

#include <vector>

#include "locus/app.hpp"
#include "locus/rma.hpp"
#include "locus/segment.hpp"

namespace {

int app(locus::Context& ctx) {
  locus::Team& world = ctx.runtime().world();
  const std::string mode = ctx.config().string("progress_fault.mode");
  const std::size_t n = 8192;
  locus::Array<double> a(world, n);
  for (std::size_t i = 0; i < n; ++i) a.data()[i] = world.rank() + 0.5;
  locus::barrier(world);
  const int right = (world.rank() + 1) % world.size();
  std::vector<double> buf(n);
  for (int k = 0; k < 20; ++k) {
    locus::Handle h = locus::get_async(buf.data(), a.gptr(right), n);
    locus::wait(h);
    if (buf[n - 1] != right + 0.5) throw locus::Error("progress_fault: wrong data");
  }
  if (mode == "local") {
    if (world.rank() == 0) throw locus::Error("deliberate local failure on unit 0");
    locus::barrier(world);  // never completes: unit 0 is gone
  } else if (mode == "collective") {
    locus::collective_require(ctx.comm(), world.rank() != 0, "deliberate collective failure");
  } else if (mode == "core") {
    if (world.rank() == 0) {
      locus::Array<float> wrong(world, 16);
    } else {
      locus::Array<double> right_kind(world, 16);
    }
  } else if (mode == "abort") {
    locus::Handle h = locus::get_async(buf.data(), a.gptr(right), n);
    if (world.rank() == 0) MPI_Abort(ctx.comm(), 3);
    locus::wait(h);
    locus::barrier(world);
  }
  if (ctx.rank() == 0) std::printf("progress_fault: %s done on %d units\n", mode.c_str(), ctx.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  locus::AppInfo info{"progress_fault", "fault injection for progress-process tests", {}};
  info.schema.choice("progress_fault.mode", "none", {"none", "local", "collective", "abort", "core"},
                     "how to fail after moving data through the progress processes");
  locus::add_common_keys(info.schema, "progress_fault");
  return locus::run(argc, argv, info, app);
}
