// The end of every app's run (report.hpp): provenance and the summary
// into the HDF5 output.
#include "locus/report.hpp"

#include <mpi.h>

#include <cmath>
#include <filesystem>
#include <vector>

#include "app/requirements.hpp"
#include "locus/async.hpp"
#include "locus/machine.hpp"
#include "locus/version.hpp"

namespace fs = std::filesystem;

namespace locus {

void write_provenance(H5Output& out, const Context& ctx) {
  out.attribute("", "app", ctx.app().name);
  out.attribute("", "run_name", ctx.run_name());
  out.attribute("", "config", ctx.config().yaml());
  out.attribute("", "deck", ctx.config().source());
  out.attribute("", "locus_version", std::string(version()));
  out.attribute("", "git_commit", std::string(git_commit()));
  out.attribute("", "mpi_library", mpi_library());
  // The machine and build (rank 0's: attribute values must agree), as YAML.
  std::string machine;
  for (const auto& [k, v] : machine_description()) machine += k + ": " + YAML::Dump(YAML::Node(v)) + "\n";
  int mlen = static_cast<int>(machine.size());
  MPI_Bcast(&mlen, 1, MPI_INT, 0, ctx.comm());
  machine.resize(static_cast<std::size_t>(mlen));
  MPI_Bcast(machine.data(), mlen, MPI_CHAR, 0, ctx.comm());
  out.attribute("", "machine", machine);
  out.attribute("", "ranks", static_cast<long>(ctx.size()));
  out.attribute("", "node_map", ctx.runtime().node_map().describe());
  out.attribute("", "emulated_node_size", static_cast<long>(ctx.runtime().node_map().emulated_size));
  out.attribute("", "progress", ctx.runtime().progress_description());
  // Same date on every rank: attribute values must agree.
  std::string date = iso_date_now();
  int len = static_cast<int>(date.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, ctx.comm());
  date.resize(static_cast<std::size_t>(len));
  MPI_Bcast(date.data(), len, MPI_CHAR, 0, ctx.comm());
  out.attribute("", "date", date);
  out.attribute("", "command_line", ctx.command_line());
}

namespace {
// The counted requirements (counts.hpp) into the summary and the output:
// the dataset `requirements` (ranks x columns) and its formulas.
void write_requirements(H5Output& out, Summary& summary, const Timers& timers, MPI_Comm comm) {
  const detail::Requirements r = detail::gather_requirements(timers, comm);
  summary.requirements = r.summary;
  out.write_rank_rows("requirements", r.row);
  out.attribute("requirements", "columns", r.columns);
  out.attribute("requirements", "formulas", r.formulas);
  out.attribute(
      "requirements", "meaning",
      std::string("counted exactly per rank (rows) and per phase: PHASE.KIND is what ran while timer "
                  "PHASE was the innermost running one (outside: none); docs/outputs.md"));
}
}  // namespace

std::string finish_output(H5Output& out, const Context& ctx, Timers& timers, const YAML::Node& results,
                          const YAML::Node& validation) {
  timers.stop("total");
  Summary summary(ctx, reduce_timers(timers, ctx.comm()));
  write_requirements(out, summary, timers, ctx.comm());
  summary.results = results;
  summary.validation = validation;
  summary.output = fs::absolute(out.path()).string();
  const AsyncSettings& as = ctx.runtime().settings().async;
  if (as.mode != AsyncMode::off) {
    // What redirection did: the mode and one entry per phase point, in the
    // summary and as datasets (async_time, async_on, async_cr: points x units).
    YAML::Node a;
    a["mode"] = async_mode_name(as.mode);
    if (as.mode == AsyncMode::user) a["on_phases"] = yaml_flow_list(as.on_phases);
    if (as.mode == AsyncMode::automatic) {
      a["interval"] = yaml_number(as.interval);
      a["low"] = yaml_number(as.low);
      a["high"] = yaml_number(as.high);
      if (!as.thresholds.empty()) a["thresholds"] = as.thresholds;
    }
    const auto& log = async_log();
    std::vector<double> t, on, cr;
    for (const auto& d : log) {
      YAML::Node e;
      e["time"] = yaml_number(std::round(d.time * 1e4) / 1e4);
      e["phase"] = d.phase;
      e["mean_cr"] = yaml_number(std::round(d.mean_cr * 1e3) / 1e3);
      e["on"] = d.on;
      e["why"] = d.why;
      a["decisions"].push_back(e);
      t.push_back(d.time);
      on.push_back(d.on ? 1.0 : 0.0);
      cr.insert(cr.end(), d.cr.begin(), d.cr.end());
    }
    a["on_at_end"] = async_enabled(ctx.runtime().world());
    summary.async = a;
    if (!log.empty()) {
      out.write_root_vector("async_time", t);
      out.write_root_vector("async_on", on);
      out.write_root_array(
          "async_cr", cr,
          {static_cast<std::uint64_t>(log.size()), static_cast<std::uint64_t>(log[0].cr.size())});
      std::string phases;
      for (const auto& d : log) phases += (phases.empty() ? "" : ",") + d.phase;
      out.attribute("async_on", "phases", phases);
      out.attribute(
          "async_cr", "meaning",
          std::string("communication ratio Tcomm/(Tcomm+Tcomp) of each unit (columns) over the profile "
                      "interval ending at each phase point (rows)"));
    }
  }
  // The figure of merit as root attributes too (docs/outputs.md).
  // (a const lookup of a missing key gives an invalid node: test IsDefined first)
  const YAML::Node fom = results.IsMap() ? results["figure_of_merit"] : YAML::Node();
  if (fom.IsDefined() && fom.IsMap()) {
    out.attribute("", "figure_of_merit_name", fom["name"].as<std::string>());
    out.attribute("", "figure_of_merit_value", fom["value"].as<double>());
    out.attribute("", "figure_of_merit_unit", fom["unit"].as<std::string>());
    out.attribute("", "figure_of_merit_seconds", fom["seconds"].as<double>());
    out.attribute("", "figure_of_merit_divides_by", fom["divides_by"].as<std::string>());
  }
  out.write_rank_rows("timers", timers.values());
  std::string columns;
  for (const auto& n : timers.names()) columns += (columns.empty() ? "" : ",") + n;
  out.attribute("timers", "columns", columns);
  const std::string text = summary.yaml();
  out.attribute("", "summary", text);
  out.commit();
  return ctx.summary_json() ? summary.json() : text;
}

}  // namespace locus
