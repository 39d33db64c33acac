// tensor_contract run orchestration: config -> phases, task loops,
// validation (reference, task and counter checks), output and summary.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "locus/async.hpp"
#include "locus/collective.hpp"
#include "locus/cpu.hpp"
#include "locus/io.hpp"
#include "locus/kokkos.hpp"
#include "locus/limits.hpp"
#include "locus/report.hpp"
#include "locus/rma.hpp"
#include "locus/wait.hpp"
#include "openblas_old_cores.hpp"  // generated from openblas_cores_without_avx2.txt
#include "tensor.hpp"

extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_corename(void);

namespace tensor_contract {

using locus::Config;
using locus::Context;

namespace {

void profile_keys(locus::Schema& s, const std::string& base, const std::string& contraction, long extent,
                  long tile, const std::string& what) {
  const long big = locus::Schema::kNoMax;
  s.string(base + ".contraction", contraction,
           what +
               "the contraction 'C = A * B' as index letters, e.g. \"abij = acik * cbkj\", or a preset: "
               "matmul (ij = ik * kj), ccsd (abij = acik * cbkj), triples (abcijk = abil * lcjk)")
      .integer(base + ".extent", extent, 1, big, what + "extent of every index")
      .string(base + ".extents", "", what + "per-index extents overriding extent, e.g. \"a=40,i=20\"")
      .integer(base + ".tile", tile, 1, big, what + "tile size of every index (the last tile may be smaller)")
      .string(base + ".tiles", "", what + "per-index tile sizes overriding tile, e.g. \"a=8,k=16\"");
}

}  // namespace

locus::AppInfo app_info() {
  locus::AppInfo app;
  app.name = "tensor_contract";
  app.description =
      "Block tensor contraction C += A * B in NWChem TCE's get-compute-accumulate pattern: tiles on locus\n"
      "segments, non-blocking gets with prefetch, sort, DGEMM (OpenBLAS, or a portable Kokkos kernel), "
      "atomic accumulate, NXTASK scheduling.";
  auto& s = app.schema;
  const long big = locus::Schema::kNoMax;
  profile_keys(s, "tensor_contract", "ccsd", 24, 8, "");
  s.choice(
       "tensor_contract.symmetry.irreps", "1", {"1", "2", "4", "8"},
       "irreducible representations: tile t of every index has label t mod irreps, and a block is non-zero "
       "only when the XOR of its labels is 0 (TCE's spin/point-group block sparsity); 1: dense")
      .choice("tensor_contract.distribution", "round-robin", {"round-robin", "block-cyclic"},
              "owner of the n-th non-zero block: n mod units, or (n / cyclic_block) mod units")
      .integer("tensor_contract.cyclic_block", 4, 1, 1L << 30, "block-cyclic: consecutive blocks per owner")
      .choice("tensor_contract.values", "integer", {"integer", "random"},
              "integer: small integers in [-2, 2] (every product and sum exact: C is bitwise independent of "
              "ranks, scheduling, chunks and tiles); random: uniform in [-1, 1)")
      .integer("tensor_contract.seed", 1, 0, big, "seed of the values")
      .choice("tensor_contract.scheduling", "nxtask", {"nxtask", "static"},
              "nxtask: dynamic, fetch-and-add on a shared counter (NWChem's NXTASK); static: task k on unit "
              "k mod units, no counter (the baseline)")
      .choice("tensor_contract.counter.owner", "last", {"first", "last"},
              "the unit holding the NXTASK counter (Global Arrays puts it on the last)")
      .integer("tensor_contract.counter.chunk", 1, 1, 1L << 30,
               "tasks handed out per counter hit (at most 2^30, so that the counter, which passes units * "
               "chunk beyond the task count, cannot overflow)")
      .boolean("tensor_contract.counter.skip_first", false,
               "each unit takes its first chunk (unit r: tasks r*chunk...) without touching the counter")
      .integer("tensor_contract.blas_threads", 1, 1, 256,
               "OpenBLAS threads per rank (1 with one rank per core; at most the node's cores)")
      .choice("tensor_contract.gemm", "blas", {"blas", "portable"},
              "the tile product: blas: CBLAS DGEMM (OpenBLAS); portable: the portable Kokkos kernel (16 x 16 "
              "tiles, each element summed in ascending k: not bitwise BLAS's with random values). A device "
              "build (CUDA, HIP) always runs the portable kernel on the device")
      .choice("tensor_contract.accumulate", "sorted", {"sorted", "strided"},
              "sorted: the result is sorted into C's block layout and added by one contiguous accumulate "
              "(TCE's); "
              "strided: added straight from the DGEMM's matrix layout by strided accumulates, one per "
              "combination of C's outer indices (no sort; many small strided operations)")
      .integer("tensor_contract.sort_cache_mb", 128, 0, 1 << 20,
               "operand blocks of this node kept sorted in matrix layout for the tasks that need them again, "
               "MiB per rank (slots allocated and touched before the task loop, no more than the node's "
               "blocks of A and B; least recently used out first; blocks of other nodes are fetched and "
               "sorted each time, as in TCE); 0: every operand sorted for every pair")
      .string(
          "tensor_contract.phases", "",
          "multiphase run: a sequence of comp and comm, e.g. \"comp comp comm comm comp comp comm comm\" "
          "(the "
          "Casper paper's Table 4); each phase uses the tensor_contract.comp.* or .comm.* keys; empty: one "
          "phase with the keys above");
  profile_keys(s, "tensor_contract.comp", "ccsd", 32, 16, "comp phases: ");
  profile_keys(s, "tensor_contract.comm", "ccsd", 32, 4, "comm phases: ");
  s.choice("tensor_contract.validation.mode", "none", {"none", "reference"},
           "reference: rank 0 also computes every phase serially from the dense inputs and compares (integer "
           "values: exactly; random: within the rounding bound); needs the dense sizes to fit "
           "validation.max_elements")
      .integer("tensor_contract.validation.max_elements", 1 << 24, 1, big,
               "largest dense tensor gathered for output or the reference; larger C is written as its blocks")
      .boolean("tensor_contract.output.inputs", false, "also write A and B (dense, when they fit)");
  locus::add_common_keys(s, "tensor_contract");
  return app;
}

namespace {

// "a=40,i=20" -> {a: 40, i: 20}; "" when fine, else what is wrong.
std::string parse_overrides(const std::string& text, std::map<char, long>& out) {
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
    if (item.empty()) continue;
    if (item.size() < 3 || item[1] != '=' || item[0] < 'a' || item[0] > 'z')
      return "expected index=value pairs like \"a=40,i=20\" (got '" + item + "')";
    char* end = nullptr;
    const long v = std::strtol(item.c_str() + 2, &end, 10);
    if (*end != '\0' || v < 1) return "'" + item + "': the value must be a positive integer";
    out[item[0]] = v;
  }
  return "";
}

struct PhaseSpec {
  std::string kind;  // "", comp or comm
  Problem problem;
};

Problem read_problem(const Context& ctx, const std::string& base) {
  const Config& c = ctx.config();
  MPI_Comm comm = ctx.comm();
  Problem p;
  std::string text = c.string(base + ".contraction");
  if (!preset_contraction(text).empty()) text = preset_contraction(text);
  const std::string err = parse_contraction(text, p.con);
  locus::collective_require(comm, err.empty(), c.locate(base + ".contraction") + ": " + err);
  std::map<char, long> ext, til;
  std::string e1 = parse_overrides(c.string(base + ".extents"), ext);
  locus::collective_require(comm, e1.empty(), c.locate(base + ".extents") + ": " + e1);
  std::string e2 = parse_overrides(c.string(base + ".tiles"), til);
  locus::collective_require(comm, e2.empty(), c.locate(base + ".tiles") + ": " + e2);
  const std::string all = p.con.c + p.con.contracted;
  for (const auto& [ch, v] : ext)
    locus::collective_require(comm, all.find(ch) != std::string::npos,
                              c.locate(base + ".extents") + ": index '" + std::string(1, ch) +
                                  "' is not in the contraction " + p.con.text());
  for (const auto& [ch, v] : til)
    locus::collective_require(comm, all.find(ch) != std::string::npos,
                              c.locate(base + ".tiles") + ": index '" + std::string(1, ch) +
                                  "' is not in the contraction " + p.con.text());
  for (char ch : all) {
    IndexSpec is;
    is.extent = ext.count(ch) ? ext[ch] : c.integer(base + ".extent");
    is.tile = til.count(ch) ? til[ch] : c.integer(base + ".tile");
    is.tile = std::min(is.tile, is.extent);
    p.index[ch] = is;
  }
  p.irreps = std::stoi(c.string("tensor_contract.symmetry.irreps"));
  p.distribution = c.string("tensor_contract.distribution") == "round-robin" ? Distribution::round_robin
                                                                             : Distribution::block_cyclic;
  p.cyclic_block = static_cast<int>(c.integer("tensor_contract.cyclic_block"));
  p.values = c.string("tensor_contract.values") == "integer" ? Values::integer : Values::random;
  p.seed = static_cast<std::uint64_t>(c.integer("tensor_contract.seed"));
  // sizes: overflow, tile tables, memory; an error names the per-index key
  // (extents, tiles) when one of its entries is what makes the size
  // (a larger extent, a smaller tile than the scalar key's)
  bool by_extents = false, by_tiles = false;
  for (const auto& [ch, v] : ext) by_extents = by_extents || v > c.integer(base + ".extent");
  for (const auto& [ch, v] : til) by_tiles = by_tiles || v < c.integer(base + ".tile");
  const std::string extent_key = c.locate(base + (by_extents ? ".extents" : ".extent"));
  const std::string tile_key = c.locate(base + (by_tiles ? ".tiles" : ".tile"));
  double elems[3] = {1, 1, 1}, combos[3] = {1, 1, 1};
  const std::string* idx[3] = {&p.con.a, &p.con.b, &p.con.c};
  for (int t = 0; t < 3; ++t)
    for (char ch : *idx[t]) {
      elems[t] *= double(p.index[ch].extent);
      combos[t] *= double(p.index[ch].tiles());
    }
  char buf[200];
  for (int t = 0; t < 3; ++t) {
    std::snprintf(buf, sizeof buf,
                  "%s has %.3g tile blocks; at most 2^26 are supported (raise the tile sizes)",
                  t == 0   ? "A"
                  : t == 1 ? "B"
                           : "C",
                  combos[t]);
    locus::collective_require(comm, combos[t] <= double(1 << 26), tile_key + ": " + buf);
  }
  const double bytes = 8.0 * (elems[0] + elems[1] + elems[2]) / double(p.irreps);
  // and per rank the kept sorted blocks: at most the budget, at most A and B
  const double kept = std::min(double(c.integer("tensor_contract.sort_cache_mb")) * 1048576.0,
                               8.0 * (elems[0] + elems[1]) / double(p.irreps));
  locus::require_run_memory(ctx, 0.0, bytes / ctx.size() + kept,
                            extent_key + ": tensors of " + p.con.text() +
                                " and the kept sorted blocks (tensor_contract.sort_cache_mb)");
  return p;
}

Schedule read_schedule(const Context& ctx) {
  const Config& c = ctx.config();
  Schedule s;
  s.scheduling =
      c.string("tensor_contract.scheduling") == "nxtask" ? Scheduling::nxtask : Scheduling::static_rr;
  s.owner = c.string("tensor_contract.counter.owner") == "first" ? CounterOwner::first : CounterOwner::last;
  s.chunk = c.integer("tensor_contract.counter.chunk");
  s.skip_first = c.boolean("tensor_contract.counter.skip_first");
  s.blas_threads = static_cast<int>(c.integer("tensor_contract.blas_threads"));
  s.gemm = locus::kDeviceBuild || c.string("tensor_contract.gemm") == "portable" ? GemmKind::portable
                                                                                 : GemmKind::blas;
  // above the cores OpenBLAS's per-thread buffers can exhaust a job's
  // address-space limit, and its exit handler then hangs
  locus::require_threads(ctx.comm(), s.blas_threads, c.locate("tensor_contract.blas_threads"));
  s.accumulate =
      c.string("tensor_contract.accumulate") == "strided" ? AccumulateKind::strided : AccumulateKind::sorted;
  s.sort_cache_bytes = static_cast<std::size_t>(c.integer("tensor_contract.sort_cache_mb")) << 20;
  return s;
}

double dense_elements(const Problem& p, const std::string& idx) {
  double e = 1;
  for (char ch : idx) e *= double(p.index.at(ch).extent);
  return e;
}

std::vector<std::uint64_t> h5dims(const Problem& p, const std::string& idx) {
  std::vector<std::uint64_t> d;
  for (char ch : idx) d.push_back(static_cast<std::uint64_t>(p.index.at(ch).extent));
  return d;
}

}  // namespace

namespace {

// The phases of tensor_contract.phases (comp / comm), each with its own
// problem; one unnamed phase without them.
std::vector<PhaseSpec> read_phases(const Context& ctx) {
  const Config& cfg = ctx.config();
  std::vector<PhaseSpec> phases;
  std::stringstream ss(cfg.string("tensor_contract.phases"));
  std::string word;
  while (ss >> word) {
    std::string w = word;
    std::transform(w.begin(), w.end(), w.begin(), ::tolower);
    locus::collective_require(
        ctx.comm(), w == "comp" || w == "comm",
        cfg.locate("tensor_contract.phases") + ": '" + word + "' is not a phase (comp or comm)");
    phases.push_back({w, Problem{}});
  }
  if (phases.empty()) phases.push_back({"", Problem{}});
  for (auto& ph : phases)
    ph.problem = read_problem(ctx, ph.kind.empty() ? "tensor_contract" : "tensor_contract." + ph.kind);
  return phases;
}

// validation.mode reference: the dense tensors and the serial work fit.
void require_reference_fits(const Context& ctx, const std::vector<PhaseSpec>& phases, double max_dense) {
  const Config& cfg = ctx.config();
  for (const auto& ph : phases) {
    const Problem& p = ph.problem;
    double work = dense_elements(p, p.con.c);
    for (char ch : p.con.contracted) work *= double(p.index.at(ch).extent);
    const bool fits = dense_elements(p, p.con.a) <= max_dense && dense_elements(p, p.con.b) <= max_dense &&
                      dense_elements(p, p.con.c) <= max_dense && work <= 64.0 * max_dense;
    locus::collective_require(ctx.comm(), fits,
                              cfg.locate("tensor_contract.validation.mode") +
                                  ": reference needs the dense tensors within validation.max_elements (" +
                                  std::to_string(long(max_dense)) +
                                  ") and the serial work within 64 times "
                                  "that; this run's " +
                                  p.con.text() + " is larger");
  }
}

// What the run keeps across its phases.
struct Run {
  locus::Tree validation = locus::Tree::map();
  bool pass = true;
  std::vector<double> ph_seconds, ph_gflops, ph_comm_ratio;
  std::vector<std::int64_t> ph_tasks;
  locus::RepeatTimes phase_times;  // each phase's task loop on this rank (timer contract)
  std::vector<double> last_c, last_a, last_b;
  std::vector<std::int64_t> last_task_unit;  // the last phase's schedule (rank 0)
  std::unique_ptr<TiledTensor> A, B, C;
  const Problem* last = nullptr;
  LoopStats sum;
  SortChecks sorts_checked;
};

void add_stats(LoopStats& sum, const LoopStats& st) {
  sum.get += st.get;
  sum.wait += st.wait;
  sum.sort += st.sort;
  sum.dgemm += st.dgemm;
  sum.accumulate += st.accumulate;
  sum.nxtask += st.nxtask;
  sum.tasks += st.tasks;
  sum.flops += st.flops;
  sum.sorts += st.sorts;
  sum.sorts_kept += st.sorts_kept;
}

// C against the serial reference (rank 0 computes it; the verdict is
// everyone's): exact for integer values, else within (K + 2) eps sum|a b|.
locus::Tree compare_reference(MPI_Comm comm, bool root, const Problem& p, const std::vector<double>& cd,
                              bool& ok) {
  int verdict = 1;
  double maxdiff = 0, maxbound = 0;
  if (root) {
    std::vector<double> ref, ref_abs;
    reference(p, ref, ref_abs);
    double k = 1;
    for (char ch : p.con.contracted) k *= double(p.index.at(ch).extent);
    const double gamma = (k + 2) * std::numeric_limits<double>::epsilon();
    for (std::size_t e = 0; e < ref.size(); ++e) {
      const double diff = std::fabs(cd[e] - ref[e]);
      const double bound = p.values == Values::integer ? 0.0 : gamma * ref_abs[e];
      maxdiff = std::max(maxdiff, diff);
      maxbound = std::max(maxbound, bound);
      if (diff > bound) verdict = 0;
    }
  }
  locus::yielding::bcast(&verdict, 1, MPI_INT, 0, comm);
  locus::yielding::bcast(&maxdiff, 1, MPI_DOUBLE, 0, comm);
  locus::yielding::bcast(&maxbound, 1, MPI_DOUBLE, 0, comm);
  locus::Tree rf;
  rf["max_abs_difference"] = maxdiff;
  rf["bound"] = p.values == Values::integer ? std::string("exact (integer values)")
                                            : std::string("(K + 2) eps sum|a b| per element");
  if (p.values != Values::integer) rf["largest_bound"] = maxbound;
  rf["verdict"] = locus::verdict(verdict);
  ok = ok && verdict;
  return rf;
}

// A phase's entry in the summary: what ran and how fast.
locus::Tree phase_entry(const Context& ctx, const PhaseSpec& spec, std::size_t i, const Run& run,
                        const PhaseResult& r, double gflops, double comm_t, double tot) {
  const Problem& p = spec.problem;
  locus::Tree ph;
  ph["phase"] = static_cast<long>(i + 1);
  if (!spec.kind.empty()) ph["kind"] = spec.kind;
  ph["contraction"] = p.con.text();
  std::string tiles;
  for (const auto& [ch, is] : p.index)
    tiles += (tiles.empty() ? "" : ", ") + std::string(1, ch) + "=" + std::to_string(is.extent) + "/" +
             std::to_string(is.tile);
  ph["extents_tiles"] = tiles;
  ph["blocks_a_b_c"] = locus::Tree::flow_list(
      std::vector<long>{long(run.A->blocks()), long(run.B->blocks()), long(run.C->blocks())});
  ph["tasks"] = r.tasks;
  ph["seconds"] = r.seconds;
  if (ctx.runtime().settings().async.mode != locus::AsyncMode::off)
    ph["redirection"] = locus::async_enabled(ctx.runtime().world());
  ph["gflop_per_s"] = std::round(gflops * 1000) / 1000;
  ph["communication_ratio"] = tot > 0 ? std::round(comm_t / tot * 1000) / 1000 : 0.0;
  long long acc = r.stats.accumulates, all = 0;
  locus::yielding::allreduce(&acc, &all, 1, MPI_LONG_LONG, MPI_SUM, ctx.comm());
  ph["accumulates"] = all;
  ph["every_task_once"] = r.every_task_once;
  return ph;
}

// One phase: fresh tensors, a phase point, the task loop, its checks.
void run_phase(Context& ctx, const Schedule& sched, const PhaseSpec& spec, std::size_t i, bool final_phase,
               locus::Timers& timers, Run& run) {
  const Config& cfg = ctx.config();
  MPI_Comm comm = ctx.comm();
  locus::Team& world = ctx.runtime().world();
  const std::string mode = cfg.string("tensor_contract.validation.mode");
  const double max_dense = double(cfg.integer("tensor_contract.validation.max_elements"));
  const Problem& p = spec.problem;
  timers.start("setup");
  run.C.reset();
  run.B.reset();
  run.A.reset();
  run.A = std::make_unique<TiledTensor>(world, p, p.con.a, 0);
  run.B = std::make_unique<TiledTensor>(world, p, p.con.b, 1);
  run.C = std::make_unique<TiledTensor>(world, p, p.con.c, 2);
  // A phase point (flush-all + barrier): comm.async user/auto decide here
  // whether this phase runs with redirection (locus/async.hpp).
  locus::phase_point(world, spec.kind.empty() ? "contract" : spec.kind);
  timers.stop("setup");
  const double before = timers.seconds("contract");
  PhaseResult r = contract(world, p, sched, *run.A, *run.B, *run.C, run.sorts_checked, &timers);
  run.phase_times.add(timers.seconds("contract") - before);
  auto check = timers.scope("check");  // the phase's figures and checks
  const LoopStats& st = r.stats;
  add_stats(run.sum, st);
  double flops = 0, comm_t = 0, tot = 0;
  const double mine_comm = st.get + st.wait + st.accumulate + st.nxtask;
  locus::yielding::allreduce(&st.flops, &flops, 1, MPI_DOUBLE, MPI_SUM, comm);
  locus::yielding::allreduce(&mine_comm, &comm_t, 1, MPI_DOUBLE, MPI_SUM, comm);
  locus::yielding::allreduce(&st.total, &tot, 1, MPI_DOUBLE, MPI_SUM, comm);
  const double gflops = r.seconds > 0 ? flops / r.seconds / 1e9 : 0.0;
  locus::Tree ph = phase_entry(ctx, spec, i, run, r, gflops, comm_t, tot);
  if (sched.scheduling == Scheduling::nxtask) {
    ph["counter_final"] = static_cast<unsigned long>(r.counter_final);
    ph["counter_expected"] = static_cast<unsigned long>(r.counter_expected);
  }
  bool ok = r.every_task_once && r.counter_final == r.counter_expected;
  if (!r.every_task_once) ph["task_errors"] = r.task_errors;
  // The dense tensors are gathered only for their users: C for the
  // reference and, like A and B, for the output of the last phase (a sweep
  // without either gathered 0.3 s and a tensor's memory at extent 64 for
  // nothing; write_output writes A and B only with output.write_field).
  const bool writes = final_phase && cfg.boolean("output.write_field");
  const bool dense_used = mode == "reference" || writes;
  std::vector<double> cd;
  if (dense_used && dense_elements(p, p.con.c) <= max_dense) cd = gather_dense(world, p, *run.C);
  if (mode == "reference") {
    auto t = timers.scope("reference");
    ph["reference"] = compare_reference(comm, ctx.rank() == 0, p, cd, ok);
  }
  ph["verdict"] = locus::verdict(ok, mode != "none");
  run.pass = run.pass && ok;
  run.validation["phases"].push_back(ph);
  run.ph_seconds.push_back(r.seconds);
  run.ph_gflops.push_back(gflops);
  run.ph_comm_ratio.push_back(tot > 0 ? comm_t / tot : 0.0);
  run.ph_tasks.push_back(std::int64_t(r.tasks));
  if (final_phase) {
    run.last_c = std::move(cd);
    run.last_task_unit = std::move(r.task_unit);
    run.last = &p;
    if (writes && cfg.boolean("tensor_contract.output.inputs")) {
      if (dense_elements(p, p.con.a) <= max_dense) run.last_a = gather_dense(world, p, *run.A);
      if (dense_elements(p, p.con.b) <= max_dense) run.last_b = gather_dense(world, p, *run.B);
    }
  }
}

// OpenBLAS chooses its kernels once, when the library loads, from the CPU
// model, or from OPENBLAS_CORETYPE. An OpenBLAS older than the CPU does not
// know its model and falls back to generic kernels: Debian 12's 0.3.21
// takes an Intel Xeon of family 6 model 207 (AVX-512) for Prescott (SSE3),
// 12-21 GFLOP/s per core in DGEMM 1536^3 against 56-66 with
// OPENBLAS_CORETYPE=SkylakeX or Cooperlake. The kernel set it chose, and,
// when that set is older than what this CPU offers (locus::cpu), the
// kernel set to name instead: SkylakeX on a CPU with AVX-512 F, BW, DQ and
// VL, Haswell on one with AVX2 and FMA (the CPU as it is: LOCUS_CPU_HIDE
// hides features from locus's paths, not from OpenBLAS). ./locus sets
// OPENBLAS_CORETYPE itself in that case, by the same rule (its
// blas_coretype); a run started by mpiexec directly says so.
struct BlasCore {
  std::string core, suggest;
};
BlasCore blas_core() {
  BlasCore b;
  const char* name = openblas_get_corename();
  b.core = name ? name : "";
  bool old = false;  // a kernel set without AVX2 (openblas_cores_without_avx2.txt)
  for (const char* k : kOpenblasCoresWithoutAvx2) old = old || b.core == k;
  const locus::cpu::HardwareIsa isa = locus::cpu::hardware_isa();
  if (old && isa.avx512_skx)
    b.suggest = "SkylakeX";
  else if (old && isa.avx2_fma)
    b.suggest = "Haswell";
  return b;
}

// The summary's blas_warning and the run's stderr line: empty when
// OpenBLAS's kernels match the CPU.
std::string blas_warning(const BlasCore& b) {
  if (b.suggest.empty()) return "";
  return "OpenBLAS chose its " + b.core + " kernels on a CPU with " +
         (b.suggest == "SkylakeX" ? "AVX-512" : "AVX2") +
         "; DGEMM runs several times slower than it could. Set OPENBLAS_CORETYPE=" + b.suggest +
         " (./locus does when it is unset).";
}

// The run's results: the schedule, the kernels, tasks, rates.
locus::Tree results_of(const Context& ctx, const Schedule& sched, const Run& run, const locus::Timers& timers,
                       std::size_t phases) {
  const Config& cfg = ctx.config();
  MPI_Comm comm = ctx.comm();
  locus::Tree results = locus::Tree::map();
  double flops = 0, tasks = 0, tmin = 0, tmax = 0, t = double(run.sum.tasks);
  locus::yielding::allreduce(&run.sum.flops, &flops, 1, MPI_DOUBLE, MPI_SUM, comm);
  locus::yielding::allreduce(&t, &tasks, 1, MPI_DOUBLE, MPI_SUM, comm);
  locus::yielding::allreduce(&t, &tmin, 1, MPI_DOUBLE, MPI_MIN, comm);
  locus::yielding::allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, comm);
  // every phase's task loop, summed on each rank: the slowest rank's sum
  double secs = timers.seconds("contract");
  locus::yielding::allreduce(MPI_IN_PLACE, &secs, 1, MPI_DOUBLE, MPI_MAX, comm);
  results["scheduling"] = cfg.string("tensor_contract.scheduling");
  if (sched.scheduling == Scheduling::nxtask) {
    results["counter_owner"] = cfg.string("tensor_contract.counter.owner");
    results["chunk"] = sched.chunk;
    results["skip_first"] = sched.skip_first;
  }
  results["accumulate"] = cfg.string("tensor_contract.accumulate");
  locus::Tree k = locus::kernels_summary(false);  // the sorts and the portable product: locus::ExecSpace
  k["memory_space"] = locus::MemSpace::name();    // of the staged and sorted tiles and the products
  k["gemm"] = sched.gemm == GemmKind::portable ? "portable" : "blas";
  if (sched.gemm == GemmKind::blas) {
    const BlasCore b = blas_core();
    const char* env = std::getenv("OPENBLAS_CORETYPE");
    k["blas_core"] =
        b.core + (env ? std::string(" (OPENBLAS_CORETYPE=") + env + ")" : " (OpenBLAS's own choice)");
    if (const std::string w = blas_warning(b); !w.empty()) k["blas_warning"] = w;
  }
  std::string kinds;
  for (const auto& key : run.sorts_checked) kinds += (kinds.empty() ? "" : ", ") + key;
  k["check"] = "every sort kind bitwise equal to the reference kernel on first use (" +
               (kinds.empty() ? std::string("none needed") : kinds) + ")";
  results["kernels"] = k;
  {
    // sorts done and operand sorts saved by the kept blocks, all ranks
    long long counts[2] = {static_cast<long long>(run.sum.sorts), static_cast<long long>(run.sum.sorts_kept)};
    locus::yielding::allreduce(MPI_IN_PLACE, counts, 2, MPI_LONG_LONG, MPI_SUM, comm);
    locus::Tree sorts;
    sorts["cache_mb_per_rank"] = cfg.integer("tensor_contract.sort_cache_mb");
    sorts["done"] = counts[0];
    sorts["kept"] = counts[1];
    results["sorts"] = sorts;
  }
  results["phases"] = static_cast<long>(phases);
  results["tasks"] = static_cast<long>(tasks);
  results["tasks_per_rank_min_max"] = locus::Tree::flow_list(std::vector<long>{long(tmin), long(tmax)});
  results["seconds"] = secs;
  results["gflop"] = flops / 1e9;
  results["figure_of_merit"] = locus::figure_of_merit(
      "floating-point operations per second", flops / 1e9, "GFLOP/s", timers, "contract",
      "the whole task loop of every phase to its closing barrier, summed over phases, slowest rank: gets, "
      "waits, sorts, DGEMMs, accumulates and the task counter",
      comm, run.phase_times, "phase");
  results["gflop_per_s_per_rank"] = secs > 0 ? std::round(flops / secs / ctx.size() / 1e6) / 1e3 : 0.0;
  // Beside it, the DGEMMs alone (slowest rank's dgemm time).
  double dgemm = run.sum.dgemm;
  locus::yielding::allreduce(MPI_IN_PLACE, &dgemm, 1, MPI_DOUBLE, MPI_MAX, comm);
  results["compute_only_gflop_per_s"] = locus::rate(flops / 1e9, dgemm);
  return results;
}

// C too large to gather: every unit writes its blocks, with a table of
// where each block is.
void write_c_blocks(const Context& ctx, locus::H5Output& out, const TiledTensor& C, const Problem& p) {
  MPI_Comm comm = ctx.comm();
  long long mine = C.local_size(), before = 0, total = 0;
  locus::exscan_sum(comm, &mine, &before, 1);
  locus::yielding::allreduce(&mine, &total, 1, MPI_LONG_LONG, MPI_SUM, comm);
  out.write_distributed("C_blocks", C.local(), static_cast<std::uint64_t>(mine),
                        static_cast<std::uint64_t>(before), static_cast<std::uint64_t>(total));
  std::vector<std::int64_t> table;  // per block: owner, offset in the owner's part, then its tile indices
  for (gidx b = 0; b < C.blocks(); ++b) {
    table.push_back(C.owner(b));
    table.push_back(std::int64_t(C.offset(b)));
    for (gidx tt : C.tiles_of(b)) table.push_back(std::int64_t(tt));
  }
  out.write_root_vector("C_block_table", table);
  out.attribute("C_blocks", "meaning",
                std::string("every unit's C blocks in unit order; C_block_table: per block owner, offset in "
                            "the owner's part, tile indices (" +
                            p.con.c + ")"));
  out.attribute("C_blocks", "units", std::string("1 (as the tensors' elements)"));
  out.attribute("C_block_table", "meaning",
                std::string("per block: owning unit, offset in its part of C_blocks, tile indices"));
  out.attribute("C_block_table", "units", std::string("unit, elements, tiles"));
}

// The output file: provenance, the last phase's tensors, per-phase and
// per-rank figures.
void write_output(const Context& ctx, locus::H5Output& out, const Run& run) {
  const Config& cfg = ctx.config();
  const double max_dense = double(cfg.integer("tensor_contract.validation.max_elements"));
  locus::write_provenance(out, ctx);
  const Problem& p = *run.last;
  if (cfg.boolean("output.write_field")) {
    if (dense_elements(p, p.con.c) <= max_dense) {
      out.write_root_array("C", run.last_c, h5dims(p, p.con.c));
      out.attribute("C", "indices", p.con.c);
      out.attribute("C", "meaning", std::string("the contraction's result of the last phase, dense"));
      out.attribute("C", "units", std::string("1 (as the tensors' elements)"));
    } else {
      write_c_blocks(ctx, out, *run.C, p);
    }
    const bool inputs = cfg.boolean("tensor_contract.output.inputs");
    if (inputs && dense_elements(p, p.con.a) <= max_dense) {
      out.write_root_array("A", run.last_a, h5dims(p, p.con.a));
      out.attribute("A", "indices", p.con.a);
      out.attribute("A", "units", std::string("1 (the generated elements)"));
      out.attribute("A", "meaning", std::string("the contraction's first operand of the last phase, dense"));
    }
    if (inputs && dense_elements(p, p.con.b) <= max_dense) {
      out.write_root_array("B", run.last_b, h5dims(p, p.con.b));
      out.attribute("B", "indices", p.con.b);
      out.attribute("B", "units", std::string("1 (the generated elements)"));
      out.attribute("B", "meaning", std::string("the contraction's second operand of the last phase, dense"));
    }
  }
  out.write_root_vector("phase_seconds", run.ph_seconds);
  out.write_root_vector("phase_gflop_per_s", run.ph_gflops);
  out.write_root_vector("phase_communication_ratio", run.ph_comm_ratio);
  out.write_root_vector("phase_tasks", run.ph_tasks);
  out.write_root_vector("task_unit", run.last_task_unit);
  const char* phase_units[][3] = {
      {"phase_seconds", "s", "wall time of each phase's timed loop (max over units)"},
      {"phase_gflop_per_s", "GFLOP/s", "the phase's contraction flops over its seconds"},
      {"phase_communication_ratio", "1", "get, wait, accumulate and nxtask time over the loop's, all units"},
      {"phase_tasks", "tasks", "tasks (block contractions) done in each phase, all units"},
      {"task_unit", "unit",
       "the last phase's schedule: the unit (team rank) that ran each task, in task order"}};
  for (const auto& u : phase_units) {
    out.attribute(u[0], "units", std::string(u[1]));
    out.attribute(u[0], "meaning", std::string(u[2]));
  }
  const LoopStats& st = run.sum;
  out.write_rank_rows(
      "loop", {st.get, st.wait, st.sort, st.dgemm, st.accumulate, st.nxtask, double(st.tasks), st.flops});
  out.attribute("loop", "columns", std::string("get,wait,sort,dgemm,accumulate,nxtask,tasks,flops"));
  out.attribute("loop", "units",
                std::string("s for the six times, then tasks and flops (per unit, all phases)"));
}

}  // namespace

int run(Context& ctx) {
  const Config& cfg = ctx.config();
  const Schedule sched = read_schedule(ctx);
  openblas_set_num_threads(sched.blas_threads);
  if (sched.gemm == GemmKind::blas && ctx.rank() == 0 && !std::getenv("OPENBLAS_CORETYPE"))
    if (const std::string w = blas_warning(blas_core()); !w.empty())
      std::fprintf(stderr, "tensor_contract: warning: %s\n", w.c_str());
  const std::vector<PhaseSpec> phases = read_phases(ctx);
  const std::string mode = cfg.string("tensor_contract.validation.mode");
  if (mode == "reference")
    require_reference_fits(ctx, phases, double(cfg.integer("tensor_contract.validation.max_elements")));
  // total: the whole run; setup (the output file; per phase the tensors,
  // the phase point, the counter), contract (every phase's task loop; get
  // ... nxtask its parts), check (the task and counter checks, gathering
  // C, the figures; reference: the comparison), io (the output)
  locus::Timers timers({"total", "setup", "contract", "get", "wait", "sort", "dgemm", "accumulate", "nxtask",
                        "check", "reference", "io"});
  timers.start("total");
  timers.start("setup");
  locus::H5Output out = locus::open_output(ctx);
  timers.stop("setup");
  Run run;
  for (std::size_t i = 0; i < phases.size(); ++i)
    run_phase(ctx, sched, phases[i], i, i + 1 == phases.size(), timers, run);
  timers.start("check");
  const locus::Tree results = results_of(ctx, sched, run, timers, phases.size());
  timers.stop("check");
  // validation.mode none: C is compared with nothing, "not checked" (a task
  // or counter error still fails the run).
  locus::set_verdict(run.validation, run.pass, mode != "none",
                     "validation.mode none: C is not compared with a reference (every task ran once and "
                     "the counter ended where it should)");
  {
    auto t = timers.scope("io");
    write_output(ctx, out, run);
  }
  run.C.reset();
  run.B.reset();
  run.A.reset();
  return locus::finish_run(out, ctx, timers, results, run.validation, run.pass);
}

}  // namespace tensor_contract
