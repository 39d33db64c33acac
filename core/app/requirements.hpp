#pragma once
// Internal: the counted requirements of a run (counts.hpp) reduced over the
// ranks for the summary, and each rank's row for the output
// (docs/outputs.md, "requirements").
#include <mpi.h>
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "locus/profile.hpp"

namespace locus::detail {

struct Requirements {
  YAML::Node summary;       // the summary's `requirements` block (the same on every rank)
  std::vector<double> row;  // this rank's counts: phase x kind, then the footprint
  std::string columns;      // the row's column names ("compute.flops", ..., "footprint_bytes")
  std::string formulas;     // every formula noted on any rank, one "kind: text" a line
};

// Collective over comm: the phases are the timers' (in their order) and
// "outside" (no timer running); call it after the app's threads joined.
Requirements gather_requirements(const Timers& timers, MPI_Comm comm);

}  // namespace locus::detail
