#pragma once
// What a core test registration checks, as options of the test binary
// (after GoogleTest's own flags), so that a registration in
// core/tests/CMakeLists.txt says it on its command line:
//   --node-size=N             emulated nodes of N consecutive ranks (0: real nodes)
//   --window=segment|dynamic  one window per segment, or the teams' dynamic
//                             windows (comm.window)
//   --progress-processes=K    the last K ranks of every node serve
//   --progress-thread         a progress thread per unit
//   --async=off|on|user|auto  target-side redirection (comm.async; needs
//                             progress processes)
//   --async-ops=all|atomics   what redirection takes (comm.async_ops)
//   --aggregate-applier=owner|progress
//                             who applies aggregated batches (comm.aggregate.applier;
//                             progress needs progress processes)
//   --staging=auto|always     comm.staging (always: fields outside segments,
//                             halos through staging buffers)
//   --fp-locks                same-node floating-point atomics under stripe
//                             locks (comm.fp_locks on; the default is off here)
//   --fail-on-rank=R          Harness.FailureOnOneRankIsPrinted fails on rank R
//   --expect-launcher-binding the launcher bound the ranks (mpiexec -bind-to core)
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "locus/async.hpp"
#include "locus/settings.hpp"

namespace locus::testing {

struct TestOptions {
  CommSettings settings;
  int fail_on_rank = -1;  // -1: no deliberate failure
  bool expect_launcher_binding = false;
};

namespace detail {
inline TestOptions& test_options_storage() {
  static TestOptions options;
  return options;
}

// "--name=value" -> value when arg has that name, else nullptr.
inline const char* option_value(const std::string& arg, const char* name) {
  const std::string prefix = std::string(name) + "=";
  return arg.rfind(prefix, 0) == 0 ? arg.c_str() + prefix.size() : nullptr;
}

inline int option_int(const char* text, const std::string& arg, int low) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (!*text || *end != '\0' || v < low || v > 1000000)
    throw std::invalid_argument(arg + ": needs a whole number >= " + std::to_string(low));
  return static_cast<int>(v);
}
}  // namespace detail

// The options of this run (parse_test_options stores them).
inline const TestOptions& test_options() {
  return detail::test_options_storage();
}

// Reads argv[1..argc) over `defaults` and stores the result; an unknown or
// malformed option throws std::invalid_argument naming it.
inline const TestOptions& parse_test_options(int argc, char** argv, const CommSettings& defaults) {
  TestOptions o;
  o.settings = defaults;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (const char* v = detail::option_value(arg, "--node-size")) {
      o.settings.node_size = detail::option_int(v, arg, 0);
    } else if (const char* w = detail::option_value(arg, "--window")) {
      if (std::string(w) != "segment" && std::string(w) != "dynamic")
        throw std::invalid_argument(arg + ": must be segment or dynamic");
      o.settings.window = std::string(w) == "dynamic" ? WindowKind::dynamic : WindowKind::segment;
    } else if (const char* k = detail::option_value(arg, "--progress-processes")) {
      o.settings.progress.processes_per_node = detail::option_int(k, arg, 0);
    } else if (arg == "--progress-thread") {
      o.settings.progress.thread = true;
    } else if (const char* a = detail::option_value(arg, "--async")) {
      const auto mode = async_mode_from_name(a);
      if (!mode) throw std::invalid_argument(arg + ": must be one of off, on, user, auto");
      o.settings.async.mode = *mode;
    } else if (const char* ops = detail::option_value(arg, "--async-ops")) {
      if (std::string(ops) != "all" && std::string(ops) != "atomics")
        throw std::invalid_argument(arg + ": must be all or atomics");
      o.settings.async.data = std::string(ops) == "all";
    } else if (const char* ap = detail::option_value(arg, "--aggregate-applier")) {
      if (std::string(ap) != "owner" && std::string(ap) != "progress")
        throw std::invalid_argument(arg + ": must be owner or progress");
      o.settings.aggregate.applier =
          std::string(ap) == "progress" ? AggregateApplier::progress : AggregateApplier::owner;
    } else if (const char* st = detail::option_value(arg, "--staging")) {
      if (std::string(st) != "auto" && std::string(st) != "always")
        throw std::invalid_argument(arg + ": must be auto or always");
      o.settings.staging = std::string(st) == "always" ? Staging::always : Staging::automatic;
    } else if (arg == "--fp-locks") {
      o.settings.fp_locks = true;
    } else if (const char* r = detail::option_value(arg, "--fail-on-rank")) {
      o.fail_on_rank = detail::option_int(r, arg, 0);
    } else if (arg == "--expect-launcher-binding") {
      o.expect_launcher_binding = true;
    } else {
      throw std::invalid_argument(arg + ": unknown option (core/tests/test_options.hpp lists them)");
    }
  }
  detail::test_options_storage() = o;
  return detail::test_options_storage();
}

}  // namespace locus::testing
