// The command line of every app (run_parts.hpp).
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <string>
#include <variant>

#include "app/run_parts.hpp"
#include "locus/version.hpp"

namespace locus::detail {

CommandLine parse_args(int argc, char** argv) {
  CommandLine cl;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      cl.help = true;
    } else if (a == "--version") {
      cl.version = true;
    } else if (a == "-q" || a == "--quiet") {
      cl.quiet = true;
    } else if (a == "--print-config") {
      cl.print_config = true;
    } else if (a == "--print-schema") {
      cl.print_schema = true;
    } else if (a == "--machine") {
      cl.machine = true;
    } else if (a == "--summary" || a.rfind("--summary=", 0) == 0) {
      std::string v;
      if (a == "--summary") {
        if (i + 1 >= argc) {
          cl.error = "--summary needs yaml or json";
          return cl;
        }
        v = argv[++i];
      } else {
        v = a.substr(10);
      }
      if (v != "yaml" && v != "json") {
        cl.error = "--summary: yaml or json (got '" + v + "')";
        return cl;
      }
      cl.summary_json = v == "json";
    } else if (a == "--set" || a == "-s") {
      if (i + 1 >= argc) {
        cl.error = a + " needs key=value";
        return cl;
      }
      cl.overrides.push_back(argv[++i]);
    } else if (a.rfind("--set=", 0) == 0) {
      cl.overrides.push_back(a.substr(6));
    } else if (!a.empty() && a[0] == '-') {
      cl.error = "unknown option " + a;
      return cl;
    } else if (cl.deck.empty()) {
      cl.deck = a;
    } else {
      cl.error = "more than one deck given (" + cl.deck + ", " + a + ")";
      return cl;
    }
  }
  if (cl.deck.empty() && !cl.help && !cl.version && !cl.print_schema && !cl.machine)
    cl.error = "no deck given";
  return cl;
}

void print_usage(const AppInfo& app, bool full) {
  // the example override: the app's first integer key with its default
  std::string example = "name=run1";
  for (const KeySpec& k : app.schema.keys())
    if (k.kind == KeyKind::Integer) {
      // twice the default, kept inside the key's range (the example must run)
      long v = std::get<long>(k.fallback);
      long twice = v * 2;
      if (static_cast<double>(twice) <= k.max)
        v = twice;
      else if (static_cast<double>(v) + 1 <= k.max)
        v = v + 1;
      example = k.path + "=" + std::to_string(v);
      break;
    }
  std::printf(
      "usage: %s DECK.yaml [--set key=value]... [--quiet] [--print-config] [--summary yaml|json]\n"
      "       %s --help | --version | --print-schema | --machine\n\n"
      "%s\n\n"
      "  DECK.yaml          the run's configuration (see docs/config.md)\n"
      "  --set key=value    override one key, e.g. --set %s (repeatable)\n"
      "  --quiet, -q        no progress line\n"
      "  --summary FORMAT   the final summary as yaml (default) or json (for scripts)\n"
      "  --print-config     print the effective configuration and exit\n"
      "  --print-schema     print every deck key (type, default, help) as YAML and exit\n"
      "  --machine          print the machine descriptor (CPU, cores, memory, compiler and flags,\n"
      "                     MPI, Kokkos, HDF5, commit) and the STREAM triad bandwidth measured\n"
      "                     by every rank at once, then exit\n"
      "  --version          print the locus version and exit\n",
      app.name.c_str(), app.name.c_str(), app.description.c_str(), example.c_str());
  if (full) std::printf("\nkeys:\n%s", app.schema.help_text().c_str());
}

// --help, --version, --print-schema, or an error on the command line:
// rank 0 answers; returns the exit status.
int answer_without_deck(const AppInfo& app, const CommandLine& cl, int rank) {
  int status = 0;
  if (rank == 0) {
    if (!cl.error.empty()) {
      std::fprintf(stderr, "%s: error: %s\n", app.name.c_str(), cl.error.c_str());
      std::fprintf(stderr, "try '%s --help'\n", app.name.c_str());
    } else if (cl.version) {
      std::printf("%s (locus %s, %s)\n", app.name.c_str(), version(), git_commit());
    } else if (cl.print_schema && !cl.help) {
      YAML::Emitter head;
      head << YAML::BeginMap << YAML::Key << "app" << YAML::Value << app.name << YAML::Key << "description"
           << YAML::Value << app.description << YAML::EndMap;
      std::printf("%s\nkeys:\n%s\n", head.c_str(), app.schema.yaml_text().c_str());
    } else {
      print_usage(app, true);
    }
  }
  if (!cl.error.empty()) status = 2;
  return status;
}

}  // namespace locus::detail
