// The end of every app's run (report.hpp): the output path, the memory
// check, provenance, the verdict, the summary into the HDF5 output, the
// XDMF file beside it and what rank 0 prints.
#include "locus/report.hpp"

#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "app/requirements.hpp"
#include "app/summary.hpp"
#include "locus/async.hpp"
#include "locus/field.hpp"
#include "locus/kokkos.hpp"
#include "locus/limits.hpp"
#include "locus/machine.hpp"
#include "locus/version.hpp"
#include "locus/wait.hpp"

namespace fs = std::filesystem;

namespace locus {

std::string output_path(const Config& cfg, const std::string& suffix) {
  return cfg.string("output.dir") + "/" + cfg.string("output.name") + suffix;
}

H5Output open_output(const Context& ctx) {
  return H5Output(ctx.comm(), output_path(ctx.config()), ctx.config().boolean("output.overwrite"));
}

void require_run_memory(const Context& ctx, double shared, double private_bytes, const std::string& what,
                        double fields) {
  const bool in_segments = fields_in_segments();
  require_memory(ctx.runtime().world(), shared + (in_segments ? fields : 0.0),
                 private_bytes + (in_segments ? 0.0 : fields), what);
}

Tree kernels_summary(bool grid_fields, const std::string& space) {
  Tree k = Tree::map();
  k["space"] = space.empty() ? std::string(ExecSpace::name()) : space;
  k["concurrency"] = ExecSpace().concurrency();
  if (grid_fields) {
    k["memory_space"] = MemSpace::name();
    k["fields"] = field_storage();
  }
  return k;
}

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
  locus::yielding::bcast(&mlen, 1, MPI_INT, 0, ctx.comm());
  machine.resize(static_cast<std::size_t>(mlen));
  locus::yielding::bcast(machine.data(), mlen, MPI_CHAR, 0, ctx.comm());
  out.attribute("", "machine", machine);
  out.attribute("", "ranks", static_cast<long>(ctx.size()));
  out.attribute("", "node_map", ctx.runtime().node_map().describe());
  out.attribute("", "emulated_node_size", static_cast<long>(ctx.runtime().node_map().emulated_size));
  out.attribute("", "progress", ctx.runtime().progress_description());
  // Same date on every rank: attribute values must agree.
  std::string date = iso_date_now();
  int len = static_cast<int>(date.size());
  locus::yielding::bcast(&len, 1, MPI_INT, 0, ctx.comm());
  date.resize(static_cast<std::size_t>(len));
  locus::yielding::bcast(date.data(), len, MPI_CHAR, 0, ctx.comm());
  out.attribute("", "date", date);
  out.attribute("", "command_line", ctx.command_line());
}

const char* verdict(bool pass, bool checked) {
  return !pass ? "FAIL" : checked ? "pass" : "not checked";
}

void set_verdict(Tree& validation, bool pass, bool checked, const std::string& unchecked_reason) {
  if (pass && !checked && !unchecked_reason.empty()) validation["reason"] = unchecked_reason;
  validation["verdict"] = verdict(pass, checked);
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
  out.attribute("requirements", "units",
                std::string("bytes for *_bytes and footprint, flops for *flops, else a count of calls"));
  out.attribute(
      "requirements", "meaning",
      std::string("counted exactly per rank (rows) and per phase: PHASE.KIND is what ran while timer "
                  "PHASE was the innermost running one (outside: none); docs/outputs.md"));
}

// `v` with three significant digits, as text.
std::string three_digits(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// The rating of the run's timed loop, after HPCG's rule (docs/outputs.md,
// "Validity"): VALID when the loop the figure of merit divides by ran at
// least validity.min_timed_seconds and the verdict is pass; else INVALID,
// with every reason. The loop's repeats and their spread, when the app
// measured them (results.figure_of_merit.repeats).
YAML::Node rate_validity(const Config& cfg, const YAML::Node& results, const YAML::Node& validation) {
  const double least = cfg.real("validity.min_timed_seconds");
  const YAML::Node fom = results.IsMap() ? results["figure_of_merit"] : YAML::Node();
  const bool timed = fom.IsDefined() && fom.IsMap() && fom["seconds"].IsDefined();
  const double seconds = timed ? fom["seconds"].as<double>() : 0.0;
  const std::string timer = timed && fom["timer"].IsDefined() ? fom["timer"].as<std::string>() : "";
  const std::string loop = timer.empty() ? "the timed loop" : "the timed loop (" + timer + ")";
  const YAML::Node verdict_node = validation.IsMap() ? validation["verdict"] : YAML::Node();
  const std::string verdict = verdict_node.IsDefined() ? verdict_node.as<std::string>() : "none";
  const std::string minimum = "the " + three_digits(least) + " s minimum (validity.min_timed_seconds)";
  std::vector<std::string> why;
  if (!timed)
    why.push_back("no timed loop: the run reports no figure of merit (a refinement study)");
  else if (!(seconds >= least))
    why.push_back(loop + " ran " + three_digits(seconds) + " s, under " + minimum);
  if (verdict == "FAIL")
    why.push_back("the verdict is FAIL");
  else if (verdict != "pass")
    why.push_back("the result was not checked (verdict: " + verdict + ")");
  YAML::Node v;
  v["rating"] = why.empty() ? "VALID" : "INVALID";
  std::string reason;
  for (const auto& w : why) reason += (reason.empty() ? "" : "; ") + w;
  v["reason"] = why.empty() ? loop + " ran " + three_digits(seconds) + " s, at least " + minimum +
                                  ", and the verdict is pass"
                            : reason;
  if (timed) v["timed_seconds"] = yaml_number(seconds);
  v["min_timed_seconds"] = yaml_number(least);
  const YAML::Node r = timed ? fom["repeats"] : YAML::Node();
  if (r.IsDefined() && r.IsMap()) {
    v["repeats"] = r["count"].as<long>();
    v["each"] = r["each"].as<std::string>();
    const double lo = r["seconds_min"].as<double>(), mean = r["seconds_mean"].as<double>(),
                 hi = r["seconds_max"].as<double>();
    YAML::Node per;
    per["min"] = yaml_number(lo);
    per["mean"] = yaml_number(mean);
    per["max"] = yaml_number(hi);
    v["seconds_per_repeat"] = per;
    // (max - min) / mean: 0 when every repeat took as long
    v["spread"] = yaml_number(mean > 0 ? std::stod(three_digits((hi - lo) / mean)) : 0.0);
  } else if (timed) {
    v["repeats"] = "not measured";
  }
  return v;
}
}  // namespace

std::string finish_output(H5Output& out, const Context& ctx, Timers& timers, const Tree& app_results,
                          const Tree& app_validation) {
  const YAML::Node results = to_yaml(app_results);
  timers.stop("total");
  Summary summary(ctx, reduce_timers(timers, ctx.comm()));
  write_requirements(out, summary, timers, ctx.comm());
  summary.results = results;
  summary.validation = to_yaml(app_validation);
  summary.validity = rate_validity(ctx.config(), results, summary.validation);
  // the SMPI build writes no output (io_none.cpp): its path is empty
  summary.output = out.path().empty() ? std::string("none (SMPI build: no HDF5 output)")
                                      : fs::absolute(out.path()).string();
  const AsyncSettings& as = ctx.runtime().settings().async;
  if (as.mode != AsyncMode::off) {
    // What redirection did: after its settings (the Summary prints them),
    // one entry per phase point, in the summary and as datasets
    // (async_time, async_on, async_cr: points x units).
    YAML::Node a = summary.async;
    const auto& log = async_log();
    std::vector<double> t, cr;
    std::vector<std::int64_t> on;
    for (const auto& d : log) {
      YAML::Node e;
      e["time"] = yaml_number(std::round(d.time * 1e4) / 1e4);
      e["phase"] = d.phase;
      e["mean_cr"] = yaml_number(std::round(d.mean_cr * 1e3) / 1e3);
      e["on"] = d.on;
      e["why"] = d.why;
      a["decisions"].push_back(e);
      t.push_back(d.time);
      on.push_back(d.on ? 1 : 0);
      cr.insert(cr.end(), d.cr.begin(), d.cr.end());
    }
    a["on_at_end"] = async_enabled(ctx.runtime().world());
    if (!log.empty()) {
      out.write_root_vector("async_time", t);
      out.write_root_vector("async_on", on);
      out.write_root_array(
          "async_cr", cr,
          {static_cast<std::uint64_t>(log.size()), static_cast<std::uint64_t>(log[0].cr.size())});
      std::string phases;
      for (const auto& d : log) phases += (phases.empty() ? "" : ",") + d.phase;
      out.attribute("async_on", "phases", phases);
      out.attribute("async_on", "meaning",
                    std::string("1 where redirection was on after the phase point, else 0"));
      out.attribute("async_on", "units", std::string("1 (flag)"));
      out.attribute("async_time", "meaning", std::string("time of each phase point since the run's start"));
      out.attribute("async_time", "units", std::string("s"));
      out.attribute("async_cr", "units", std::string("1 (ratio)"));
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
  out.attribute("", "validity", summary.validity["rating"].as<std::string>());
  out.attribute("", "validity_reason", summary.validity["reason"].as<std::string>());
  out.attribute("", "validity_min_timed_seconds", summary.validity["min_timed_seconds"].as<double>());
  out.write_rank_rows("timers", timers.values());
  std::string columns;
  for (const auto& n : timers.names()) columns += (columns.empty() ? "" : ",") + n;
  out.attribute("timers", "columns", columns);
  out.attribute("timers", "units", std::string("s (wall time per rank)"));
  const std::string text = summary.yaml();
  out.attribute("", "summary", text);
  out.commit();
  return ctx.summary_json() ? summary.json() : text;
}

bool write_xdmf_beside(const Context& ctx, const std::string& h5_path, const XdmfField& f) {
  const Config& cfg = ctx.config();
  if (!cfg.boolean("output.write_field") || !cfg.boolean("output.xdmf")) return true;
  const std::string err =
      write_xdmf(output_path(cfg, ".xmf"), fs::path(h5_path).filename().string(), f.dataset, f.dims, f.origin,
                 f.spacing, f.time, f.ndims, f.precision, f.more);
  if (err.empty()) return true;
  std::fprintf(stderr, "%s: error: %s (%s itself is complete)\n", ctx.app().name.c_str(), err.c_str(),
               h5_path.c_str());
  return false;
}

int finish_run(H5Output& out, const Context& ctx, Timers& timers, const Tree& results, const Tree& validation,
               bool pass, const XdmfField* field, const std::string& warning) {
  const std::string summary = finish_output(out, ctx, timers, results, validation);
  if (ctx.rank() == 0) {
    if (field && !out.path().empty() && !write_xdmf_beside(ctx, out.path(), *field)) pass = false;
    std::fputs(summary.c_str(), stdout);
    std::fflush(stdout);
    if (!warning.empty()) std::fprintf(stderr, "%s: warning: %s\n", ctx.app().name.c_str(), warning.c_str());
  }
  return pass ? 0 : 1;
}

}  // namespace locus
