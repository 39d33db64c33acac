// heat3d run orchestration: config -> problem, time loop, checkpoints,
// validation verdicts, output and summary.
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "heat3d.hpp"
#include "locus/console.hpp"
#include "locus/field.hpp"
#include "locus/io.hpp"
#include "locus/kokkos.hpp"
#include "locus/report.hpp"
#include "locus/wait.hpp"

namespace heat3d {

using locus::Config;
using locus::Context;

locus::AppInfo app_info() {
  locus::AppInfo app;
  app.name = "heat3d";
  app.description =
      "3D heat conduction on the unit cube: forward Euler, 7-point stencil, checkerboard\n"
      "decomposition (the dournac heat3d of the DART locality paper).";
  auto& s = app.schema;
  const long big = locus::Schema::kNoMax;
  s.integer("heat3d.grid.nx", 64, 1, big, "interior grid points in x")
      .integer("heat3d.grid.ny", 64, 1, big, "interior grid points in y")
      .integer("heat3d.grid.nz", 64, 1, big, "interior grid points in z")
      .dims("heat3d.procs", "process grid [px, py, pz], or auto (MPI_Dims_create)")
      .real("heat3d.physics.k0", 1.0, 0.0, HUGE_VAL, "thermal conductivity", true)
      .real("heat3d.physics.t_boundary", 10.0, -HUGE_VAL, HUGE_VAL, "fixed boundary temperature")
      .real("heat3d.physics.t_initial", -10.0, -HUGE_VAL, HUGE_VAL, "initial interior temperature")
      .real("heat3d.time.dt", 1.0e-3, 0.0, HUGE_VAL,
            "largest time step; the run uses min(dt, 0.125 h_min^2 / k0)", true)
      .integer("heat3d.time.max_steps", 10000, 0, big, "stop after this many steps")
      .real("heat3d.time.tolerance", 1.0e-6, 0.0, HUGE_VAL,
            "stop when max |T_new - T_old| falls below this (0: run max_steps)")
      .choice("heat3d.validation.mode", "none", {"none", "sine", "order", "steady"},
              "check the result: sine, order or steady (see docs/user-guide.md); failure exits non-zero")
      .real("heat3d.validation.sine_tol", 1.0e-12, 0.0, 1.0, "sine: largest relative error allowed", true)
      .real("heat3d.validation.order_time", 0.05, 0.0, HUGE_VAL,
            "order: physical time at which the three refinements are compared", true)
      .real("heat3d.validation.order_slack", 0.1, 0.0, 1.0, "order: allowed |observed order - 2|", true)
      .real("heat3d.validation.steady_tol", 1.0e-4, 0.0, HUGE_VAL,
            "steady: largest |T - t_boundary| allowed at the end", true)
      .choice("heat3d.kernel.streaming_stores", "auto", {"auto", "on", "off"},
              "stencil stores: on (streaming: no read for ownership of the new field, 16 B of traffic per "
              "cell instead of 24; AVX2), off (cached), or auto (the faster, timed on steps 2-9)");
  locus::add_halo_key(s)
      .integer("checkpoint.every", 0, 0, big, "write a restart file every N steps (0: never)")
      .string("checkpoint.file", "", "restart file to write (default <output.dir>/<output.name>.restart.h5)")
      .string("checkpoint.restart", "", "restart file to resume from (empty: start fresh)");
  locus::add_common_keys(s, "heat3d");
  return app;
}

namespace {

struct Settings {
  Problem problem;
  locus::Dims procs{};
  std::string halo;
  Stores stores = Stores::automatic;
  std::string mode;
  long max_steps = 0;
  double tolerance = 0;
  long checkpoint_every = 0;
  std::string checkpoint_file, restart_file;
};

Settings read_settings(const Config& c) {
  Settings s;
  Problem& p = s.problem;
  p.n = {c.integer("heat3d.grid.nx"), c.integer("heat3d.grid.ny"), c.integer("heat3d.grid.nz")};
  p.k0 = c.real("heat3d.physics.k0");
  p.t_boundary = c.real("heat3d.physics.t_boundary");
  p.t_initial = c.real("heat3d.physics.t_initial");
  s.mode = c.string("heat3d.validation.mode");
  if (s.mode == "sine" || s.mode == "order") {
    p.init = Init::Sine;
    p.t_boundary = 0.0;
  }
  p.dt = std::min(c.real("heat3d.time.dt"), p.dt_limit());
  s.procs = c.dims("heat3d.procs");
  s.halo = c.string("comm.halo");
  const std::string stores = c.string("heat3d.kernel.streaming_stores");
  s.stores = stores == "on" ? Stores::streaming : stores == "off" ? Stores::cached : Stores::automatic;
  s.max_steps = c.integer("heat3d.time.max_steps");
  s.tolerance = c.real("heat3d.time.tolerance");
  s.checkpoint_every = c.integer("checkpoint.every");
  s.checkpoint_file = c.string("checkpoint.file");
  if (s.checkpoint_file.empty()) s.checkpoint_file = locus::output_path(c, ".restart.h5");
  s.restart_file = c.string("checkpoint.restart");
  return s;
}

// The state a restart file carries besides the field.
struct History {
  long step = 0;
  std::vector<double> residuals;  // one per step, rank 0's copy is written
};

void write_checkpoint(const Context& ctx, const Solver& solver, const History& h, const std::string& path) {
  locus::H5Output out(ctx.comm(), path, true);
  locus::write_provenance(out, ctx);
  out.write_field("temperature", solver.field(), solver.decomp());
  out.attribute("temperature", "units", std::string("1 (nondimensional: the deck's temperatures)"));
  out.write_root_vector("residual", h.residuals);
  out.attribute("residual", "units", std::string("1 (nondimensional, as temperature)"));
  out.attribute("", "step", h.step);
  out.attribute("", "dt", solver.problem().dt);
  out.attribute("", "validation_mode", ctx.config().string("heat3d.validation.mode"));
  out.commit();
}

History read_checkpoint(const Context& ctx, Solver& solver, const std::string& path) {
  locus::H5Input in(ctx.comm(), path);
  // every attribute against its checksum first (step, dt, validation mode,
  // the deck): a flipped byte is "damaged", not a plausible value; the
  // datasets carry Fletcher32, verified as they are read below
  in.verify_attributes();
  double dt = in.real_attribute("dt");
  locus::collective_require(ctx.comm(), dt == solver.problem().dt,
                            path + ": written with dt " + std::to_string(dt) + ", this run uses dt " +
                                std::to_string(solver.problem().dt) + " (grid, k0 or time.dt differ)");
  std::string mode = in.string_attribute("validation_mode");
  locus::collective_require(ctx.comm(), mode == ctx.config().string("heat3d.validation.mode"),
                            path + ": written in validation mode '" + mode + "', this run uses '" +
                                ctx.config().string("heat3d.validation.mode") + "'");
  History h;
  const long max_steps = ctx.config().integer("heat3d.time.max_steps");
  h.step = in.integer_attribute("step");
  locus::collective_require(ctx.comm(), h.step >= 0 && h.step <= max_steps,
                            path + ": step " + std::to_string(h.step) + " is outside [0, " +
                                std::to_string(max_steps) + "] (heat3d.time.max_steps of this run)");
  h.residuals = in.read_vector("residual", static_cast<std::size_t>(h.step));
  bool good = h.residuals.size() == static_cast<std::size_t>(h.step);
  for (double r : h.residuals) good = good && std::isfinite(r) && r >= 0;
  locus::collective_require(ctx.comm(), good,
                            path + ": residual must hold " + std::to_string(h.step) +
                                " finite, non-negative values (one per step); it has " +
                                std::to_string(h.residuals.size()) + (good ? "" : " or bad values"));
  const auto& n = solver.decomp().local();
  Kokkos::View<double***, Kokkos::LayoutRight, Kokkos::HostSpace> tmp("heat3d::restart", n[2] + 2, n[1] + 2,
                                                                      n[0] + 2);
  locus::HostField3D file_block(tmp.data(), n[2] + 2, n[1] + 2, n[0] + 2);
  in.read_field("temperature", file_block, solver.decomp());
  solver.load_interior(file_block);
  // every value finite (a NaN would make every later figure meaningless)
  locus::collective_require(ctx.comm(), solver.all_finite(),
                            path + ": temperature holds NaN or infinite values");
  return h;
}

struct Outcome {
  History history;
  bool converged = false;
  locus::RepeatTimes steps;  // each step's time on this rank (checkpoint writes left out)
};

// The time loop: from h.step to max_steps or convergence, in timer
// `solve` (the figure of merit's); checkpoint writes pause it and run in
// `checkpoint`.
Outcome integrate(const Context& ctx, Solver& solver, const Settings& s, History h, locus::Timers& timers,
                  bool show) {
  locus::ProgressLine progress(show, s.max_steps, s.tolerance);
  Outcome out;
  double res = h.residuals.empty() ? HUGE_VAL : h.residuals.back();
  out.converged = s.tolerance > 0 && res < s.tolerance;
  locus::yielding::barrier(ctx.comm());
  timers.start("solve");
  while (!out.converged && h.step < s.max_steps) {
    const double t0 = MPI_Wtime();
    res = solver.step();
    ++h.step;
    h.residuals.push_back(res);
    progress.update(h.step, res);
    out.converged = s.tolerance > 0 && res < s.tolerance;
    out.steps.add(MPI_Wtime() - t0);
    if (s.checkpoint_every > 0 && h.step % s.checkpoint_every == 0) {
      timers.stop("solve");
      {
        auto t = timers.scope("checkpoint");
        write_checkpoint(ctx, solver, h, s.checkpoint_file);
      }
      timers.start("solve");
    }
  }
  timers.stop("solve");
  progress.finish();
  out.history = std::move(h);
  return out;
}

double sine_amplitude(const Problem& p, long steps) {
  double sum = 0.0;
  for (int d = 0; d < 3; ++d) {
    double s = std::sin(M_PI * p.h(d) / 2.0);
    sum += s * s / (p.h(d) * p.h(d));
  }
  double g = 1.0 - 4.0 * p.k0 * p.dt * sum;
  return std::pow(g, static_cast<double>(steps));
}

// Convergence order against exp(-3 pi^2 k0 t): three grids, each with half
// the spacing of the one before and a quarter of its time step.
locus::Tree order_study(const Context& ctx, const Settings& s, locus::Timers& timers, bool& pass) {
  const double t_end = ctx.config().real("heat3d.validation.order_time");
  const double slack = ctx.config().real("heat3d.validation.order_slack");
  Problem base = s.problem;
  long steps0 = static_cast<long>(std::ceil(t_end / base.dt));
  locus::Tree out;
  std::vector<double> errors;
  for (int level = 0; level < 3; ++level) {
    Problem p = base;
    long scale = 1L << level;
    for (int d = 0; d < 3; ++d) p.n[d] = (base.n[d] + 1) * scale - 1;
    long steps = steps0 * scale * scale;
    p.dt = t_end / static_cast<double>(steps);
    Solver solver(ctx.runtime().world(), p, s.procs, s.halo, timers);
    solver.set_stores(s.stores);
    solver.initialize();
    for (long i = 0; i < steps; ++i) solver.step();
    double exact = std::exp(-3.0 * M_PI * M_PI * p.k0 * t_end);
    double err = solver.sine_relative_error(exact);
    errors.push_back(err);
    locus::Tree lv;
    lv["grid"] = std::to_string(p.n[0]) + "x" + std::to_string(p.n[1]) + "x" + std::to_string(p.n[2]);
    lv["steps"] = steps;
    lv["dt"] = p.dt;
    lv["max_rel_error"] = err;
    out["levels"].push_back(lv);
  }
  pass = true;
  for (std::size_t i = 0; i + 1 < errors.size(); ++i) {
    double order = std::log2(errors[i] / errors[i + 1]);
    out["observed_order"].push_back(order);
    pass = pass && std::fabs(order - 2.0) <= slack;
  }
  out["expected_order"] = 2;
  out["allowed_deviation"] = slack;
  return out;
}

// The process grid, the checkpoint's paths and the memory, against the
// deck, before anything is allocated.
void check_settings(const Context& ctx, const Settings& s) {
  const Config& cfg = ctx.config();
  {
    // the process grid against the ranks and the grid, with the deck line
    const locus::Dims pg = s.procs[0] == 0 ? locus::auto_process_grid(ctx.size(), 3) : s.procs;
    locus::check_process_grid(ctx.comm(), pg, s.problem.n, cfg.locate("heat3d.procs"), [&](int d) {
      return cfg.locate("heat3d.procs") + ": " + std::to_string(pg[d]) + " blocks in " + "xyz"[d] +
             " but heat3d.grid.n" + "xyz"[d] + " is " + std::to_string(s.problem.n[d]) +
             "; use a smaller process grid or a larger grid";
    });
  }
  {
    // the checkpoint must not land on the output (or its .tmp) or on the
    // file it restarts from
    namespace fs = std::filesystem;
    auto norm = [](const std::string& p) { return fs::absolute(fs::path(p)).lexically_normal().string(); };
    const std::string out_path = norm(locus::output_path(cfg));
    const std::string ck = norm(s.checkpoint_file);
    locus::collective_require(ctx.comm(),
                              ck != out_path && ck != out_path + ".tmp" && ck != out_path + ".lock",
                              cfg.locate("checkpoint.file") + ": " + s.checkpoint_file +
                                  " is the run's output file; give the checkpoint another name");
    locus::collective_require(ctx.comm(), s.restart_file.empty() || norm(s.restart_file) != out_path,
                              cfg.locate("checkpoint.restart") + ": " + s.restart_file +
                                  " is the run's own output file, which this run replaces; copy it first");
  }
  {
    // Memory before anything is allocated (the order study's finest grid):
    // the halo's face buffers in segments, received faces in private
    // memory, the two fields in segments or (comm.staging: always) private;
    // under a job's limits a late failure would be an MPI error stack or a
    // hang inside MPI_Win_allocate_shared.
    const locus::Dims pg = s.procs[0] == 0 ? locus::auto_process_grid(ctx.size(), 3) : s.procs;
    const double scale = s.mode == "order" ? 4.0 : 1.0;
    double b[3];
    for (int d = 0; d < 3; ++d)
      b[d] = std::ceil((double(s.problem.n[d]) + 1.0) * scale / double(pg[d])) + 2.0;  // a block with ghosts
    const double face_bytes = 8.0 * 2.0 * 2.0 * (b[0] * b[1] + b[1] * b[2] + b[0] * b[2]);
    const double fields = 8.0 * 2.0 * b[0] * b[1] * b[2];
    char grid[96];
    std::snprintf(grid, sizeof grid, ": a %ldx%ldx%ld grid%s", s.problem.n[0], s.problem.n[1], s.problem.n[2],
                  s.mode == "order" ? " (order study: the finest grid is 4x as fine)" : "");
    locus::require_run_memory(
        ctx, face_bytes, face_bytes,
        cfg.locate_largest({"heat3d.grid.nx", "heat3d.grid.ny", "heat3d.grid.nz"}) + grid, fields);
  }
  locus::collective_require(
      ctx.comm(), !(s.mode == "order" && (s.checkpoint_every > 0 || !s.restart_file.empty())),
      "checkpoint: not available with heat3d.validation.mode: order (it runs three grids)");
}

// The state to start from: the restart file's when there is one.
History restart(const Context& ctx, const Settings& s, Solver& solver, locus::Timers& timers,
                locus::Tree& results) {
  History start;
  if (s.restart_file.empty()) return start;
  auto t = timers.scope("checkpoint");
  try {
    start = read_checkpoint(ctx, solver, s.restart_file);
  } catch (const locus::CollectiveError& e) {
    // Every rank has the same message: name the key and its deck line.
    throw locus::CollectiveError(ctx.config().locate("checkpoint.restart") + ": " + e.what());
  }
  results["restarted_from"] = s.restart_file;
  results["restart_step"] = start.step;
  return start;
}

// The run's figures into RESULTS: the process grid, kernels, steps, the
// field's extremes and the figure of merit over the `solve` timer.
void report_run(const Context& ctx, const Solver& solver, const locus::Timers& timers, const Outcome& outcome,
                long first_step, locus::Tree& results) {
  const Problem& p = solver.problem();
  const auto& pg = solver.decomp().procs();
  results["process_grid"] = locus::Tree::flow_list(std::vector<int>{pg[0], pg[1], pg[2]});
  results["halo"] = solver.halo_name();
  {
    locus::Tree k = locus::kernels_summary(true);
    k["check"] =
        solver.kernel_checked() ? "step 1 bitwise equal to the reference kernel" : "not run (no step)";
    k["stores"] = solver.stores_report();
    k["row_kernel"] = solver.row_kernel();
    k["block_rows"] = solver.block_rows();  // rows of y per cache block, from this CPU's L2
    results["kernels"] = k;
  }
  results["dt"] = p.dt;
  results["steps"] = outcome.history.step;
  results["converged"] = outcome.converged;
  results["final_residual"] = outcome.history.residuals.empty() ? 0.0 : outcome.history.residuals.back();
  results["min"] = solver.global_min();
  results["max"] = solver.global_max();
  results["centre"] = solver.centre_value();
  const double cells = double(p.n[0]) * double(p.n[1]) * double(p.n[2]);
  const double updates = cells * double(outcome.history.step - first_step);
  double compute = timers.seconds("compute");
  locus::yielding::allreduce(MPI_IN_PLACE, &compute, 1, MPI_DOUBLE, MPI_MAX, ctx.comm());
  results["figure_of_merit"] = locus::figure_of_merit(
      "cell updates per second", updates / 1e6, "Mcell_updates/s", timers, "solve",
      "the whole time loop of the slowest rank: compute, halo exchange and residual reductions "
      "(checkpoint writes left out)",
      ctx.comm(), outcome.steps, "step");
  // Beside it, the stencil alone (slowest rank's compute timer).
  results["compute_only_mcell_updates_per_s"] = locus::rate(updates / 1e6, compute);
}

// Restart when asked, then the time loop; its figures into RESULTS.
Outcome solve(const Context& ctx, const Settings& s, Solver& solver, locus::Timers& timers,
              locus::Tree& results, bool show) {
  History start = restart(ctx, s, solver, timers, results);
  const long first_step = start.step;
  Outcome outcome = integrate(ctx, solver, s, std::move(start), timers, show);
  auto t = timers.scope("check");  // the field's extremes, centre and the rates: collectives
  report_run(ctx, solver, timers, outcome, first_step, results);
  return outcome;
}

// The sine and steady verdicts (none: nothing to check); returns the pass.
bool validate(const Config& cfg, const Settings& s, const Solver& solver, const Outcome& outcome,
              locus::Tree& validation) {
  const Problem& p = solver.problem();
  if (s.mode == "sine") {
    double amp = sine_amplitude(p, outcome.history.step);
    double err = solver.sine_relative_error(amp);
    double tol = cfg.real("heat3d.validation.sine_tol");
    validation["amplitude"] = amp;
    validation["max_rel_error"] = err;
    validation["tolerance"] = tol;
    return err <= tol;
  }
  if (s.mode == "steady") {
    double dev = std::max(std::fabs(solver.global_max() - p.t_boundary),
                          std::fabs(solver.global_min() - p.t_boundary));
    double tol = cfg.real("heat3d.validation.steady_tol");
    validation["max_abs_deviation"] = dev;
    validation["tolerance"] = tol;
    validation["converged"] = outcome.converged;
    if (!outcome.converged) validation["reason"] = "did not reach time.tolerance within max_steps";
    return outcome.converged && dev <= tol;
  }
  return true;
}

void write_results(locus::H5Output& out, const Context& ctx, const Solver* solver, const Outcome& outcome) {
  locus::write_provenance(out, ctx);
  if (!solver) return;
  if (ctx.config().boolean("output.write_field")) {
    out.write_field("temperature", solver->field(), solver->decomp());
    const Problem& p = solver->problem();
    // spacing in the dataset's axis order, as layout names it
    out.attribute("temperature", "spacing", std::vector<double>{p.h(2), p.h(1), p.h(0)});
    out.attribute("temperature", "layout",
                  std::string("(z, y, x), x fastest; interior points only; spacing (hz, hy, hx)"));
    out.attribute("temperature", "units", std::string("1 (nondimensional: the deck's temperatures)"));
    out.attribute("temperature", "meaning", std::string("the temperature T after the last step"));
  }
  out.write_root_vector("residual", outcome.history.residuals);
  out.attribute("residual", "meaning", std::string("max |T_new - T_old| after each step"));
  out.attribute("residual", "units", std::string("1 (nondimensional, as temperature)"));
}

// The temperature field on its grid, for the XDMF file beside the output.
locus::XdmfField xdmf_field(const Solver& solver, const Outcome& outcome) {
  const Problem& p = solver.problem();
  locus::XdmfField f;
  f.dataset = "temperature";
  f.dims = p.n;
  f.origin = f.spacing = {p.h(0), p.h(1), p.h(2)};
  f.time = p.dt * double(outcome.history.step);
  return f;
}

}  // namespace

int run(Context& ctx) {
  const Config& cfg = ctx.config();
  const Settings s = read_settings(cfg);
  check_settings(ctx, s);
  const bool show = ctx.show_progress();

  // total: the whole run; setup (the output file, the solver, the initial
  // field), solve (the time loop: compute, halo, reduce), checkpoint
  // (reading a restart file, writing checkpoints), check (the verdict and
  // the figures of the summary; the order study's grids), io (the output)
  locus::Timers timers({"total", "setup", "solve", "compute", "halo", "reduce", "checkpoint", "check", "io"});
  timers.start("total");
  timers.start("setup");
  locus::H5Output out = locus::open_output(ctx);

  locus::Tree results = locus::Tree::map(), validation;
  validation["mode"] = s.mode;
  bool pass = true;
  std::unique_ptr<Solver> solver;
  Outcome outcome;
  if (s.mode == "order") {
    timers.stop("setup");
    auto t = timers.scope("check");
    validation["study"] = order_study(ctx, s, timers, pass);
  } else {
    solver = std::make_unique<Solver>(ctx.runtime().world(), s.problem, s.procs, s.halo, timers);
    solver->set_stores(s.stores);
    solver->initialize();
    timers.stop("setup");
    outcome = solve(ctx, s, *solver, timers, results, show);
    auto t = timers.scope("check");
    pass = validate(cfg, s, *solver, outcome, validation);
  }
  bool finite = true;
  if (solver) {
    auto t = timers.scope("check");
    finite = solver->all_finite();
    validation["field_finite"] = finite;
    if (!finite) validation["reason"] = "the temperature field holds NaN or infinite values";
  }
  pass = pass && finite;
  locus::set_verdict(validation, pass, s.mode != "none");

  {
    auto t = timers.scope("io");
    write_results(out, ctx, solver.get(), outcome);
  }
  const locus::XdmfField field = solver ? xdmf_field(*solver, outcome) : locus::XdmfField{};
  return locus::finish_run(out, ctx, timers, results, validation, pass, solver ? &field : nullptr);
}

}  // namespace heat3d
