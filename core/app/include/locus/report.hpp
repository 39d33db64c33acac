#pragma once
// The end of every app's run, written once for the four apps: provenance
// attributes and the summary written into the run's HDF5 output.
#include <yaml-cpp/yaml.h>

#include <string>

#include "locus/app.hpp"
#include "locus/io.hpp"
#include "locus/profile.hpp"

namespace locus {

// Run provenance as root attributes: effective config, locus version, git
// commit, MPI library, ranks, node map, date, command line.
void write_provenance(H5Output& out, const Context& ctx);

// The end of every app's run. Collective: stops the `total` timer, builds
// the summary (timers reduced over ranks, the app's results and validation
// blocks, the output path), writes the per-rank timers and the summary into
// `out` and commits it. Returns the summary's YAML text for rank 0 to print.
std::string finish_output(H5Output& out, const Context& ctx, Timers& timers, const YAML::Node& results,
                          const YAML::Node& validation);

}  // namespace locus
