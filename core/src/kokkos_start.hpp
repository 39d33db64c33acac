#pragma once
// Internal: how locus::run starts Kokkos (kokkos_start.cpp).
#include <string>
#include <vector>

namespace locus {

// The --kokkos-* options of the command line (they go to Kokkos) and the
// rest (they go to locus's own parser).
struct SplitArgs {
  std::vector<std::string> kokkos;
  std::vector<char*> rest;
};

SplitArgs split_kokkos_args(int argc, char** argv);

// True when ARGS hold option NAME (alone or as NAME=value).
bool has_option(const std::vector<std::string>& args, const std::string& name);

struct KokkosStart {
  std::string error;  // an option Kokkos did not take
  bool help = false;
};

// Collective. Starts Kokkos with the user's --kokkos-* options and
// KOKKOS_* variables (Kokkos reads them itself), adding when the user
// gave none: threads per rank = the CPUs this rank may run on / the ranks
// on its node (a rank per core gets one thread), and on every rank but the
// first --kokkos-disable-warnings (Kokkos' start-up warnings once per job,
// not once per rank).
KokkosStart start_kokkos(const std::string& app_name, std::vector<std::string> args, int rank);

}  // namespace locus
