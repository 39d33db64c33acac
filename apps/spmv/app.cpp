// spmv run orchestration: config -> matrix -> operator, products or CG,
// the symmetry test and the CG iteration study, output and summary.
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "locus/error.hpp"
#include "locus/io.hpp"
#include "locus/kokkos.hpp"
#include "locus/limits.hpp"
#include "locus/report.hpp"
#include "locus/rma.hpp"
#include "locus/wait.hpp"
#include "spmv.hpp"

namespace spmv {

using locus::Config;
using locus::Context;

// HPCG's symmetry test as symmetry_test computes it: the deck key's help
// and the summary's "formula" print this one text.
const char* const kSymmetryFormula =
    "|x'Ay - y'Ax| / (2 ||A||_inf max(x'x y'y, (row_nnz + 1) ||x|| ||y||) eps) <= 1, x and y uniform in [0, "
    "1)";

locus::AppInfo app_info() {
  locus::AppInfo app;
  app.name = "spmv";
  app.description =
      "Hybrid MPI + threads sparse matrix-vector product y = A x with communication overlap (APSM's spMVM;\n"
      "GHOST's vector / overlap / task modes, the progress thread, one-sided on the locus core) and CG.";
  auto& s = app.schema;
  const long big = locus::Schema::kNoMax;
  s.choice("spmv.matrix.source", "generator", {"generator", "file"},
           "generator: build the matrix in parallel (spmv.matrix.generator); file: read a Matrix Market file")
      .string("spmv.matrix.file", "",
              "file: Matrix Market path (relative paths are looked up next to the deck first, then in the "
              "working directory)")
      .boolean("spmv.matrix.allow_nonfinite", false,
               "file: accept NaN and inf values (else they are an error)")
      .choice("spmv.matrix.generator", "hpcg27", {"laplace2d", "laplace3d", "hpcg27", "banded"},
              "laplace2d: 5-point (nx x ny); laplace3d: 7-point; hpcg27: HPCG's 27-point operator (26 on the "
              "diagonal, -1 off it); banded: random unsymmetric banded matrix")
      .integer("spmv.matrix.nx", 32, 1, big, "stencil generators: grid points in x")
      .integer("spmv.matrix.ny", 32, 1, big, "stencil generators: grid points in y")
      .integer("spmv.matrix.nz", 32, 1, big, "laplace3d, hpcg27: grid points in z")
      .integer("spmv.matrix.rows", 100000, 1, big, "banded: rows (= columns)")
      .integer("spmv.matrix.bandwidth", 1000, 0, big, "banded: columns within +- this of the diagonal")
      .integer("spmv.matrix.per_row", 27, 1, big,
               "banded: nonzeros per row, diagonal included (fewer near the edges when the band is short)")
      .integer("spmv.matrix.seed", 1, 0, big, "banded: random seed (the matrix does not depend on the ranks)")
      .string("spmv.matrix.export", "",
              "write the assembled matrix to this Matrix Market file (coordinate real general, 17 digits; "
              "ranks append their rows in turn) and continue")
      .choice("spmv.partition", "nonzeros", {"nonzeros", "rows"},
              "rows per rank: about equal nonzeros (default) or equal rows")
      .choice(
          "spmv.mode", "rma", {"vector", "overlap", "task", "thread", "rma"},
          "vector: exchange, then the product; overlap: start the exchange, local part, wait, remote part "
          "(relies on the MPI library's progress); task: one extra thread drives the exchange while the "
          "others compute the local part; thread: overlap with the locus progress thread driving MPI "
          "(needs runtime.progress.thread: true); rma: one-sided on the locus core (transfer plan from "
          "the owners' segments, notified)")
      .integer(
          "spmv.threads", 1, 1, 1024,
          "compute threads (OpenMP) per rank, at most the node's cores; task mode adds one communication "
          "thread; a device build runs the products on the device and ignores it")
      .choice("spmv.solver", "none", {"none", "cg"},
              "none: spmv.repetitions products y = A x; cg: unpreconditioned conjugate gradients for A x = b "
              "with b = A x* for a known x*")
      .integer("spmv.repetitions", 20, 1, big, "solver none: products to time")
      .choice("spmv.x", "random", {"random", "ones"},
              "input vector (solver none) and manufactured solution x* (cg): deterministic pseudo-random "
              "values in [0, 1) from the global index, or all ones")
      .real("spmv.cg.tolerance", 1e-8, 0.0, HUGE_VAL, "cg: stop when ||r||_2 / ||b||_2 falls below this",
            true)
      .integer("spmv.cg.max_iterations", 10000, 1, big, "cg: not converged by then is a failure")
      .choice("spmv.validation.symmetry", "auto", {"auto", "on", "off"},
              std::string("HPCG's symmetry test ") + kSymmetryFormula +
                  ": auto runs it when the input is symmetric (generator or Matrix Market banner)")
      .choice("spmv.validation.mode", "none", {"none", "iterations"},
              "iterations: CG on grids refined by 2 per dimension (Laplacian generators); the iteration "
              "count must grow as points-per-dimension^1 (sqrt of the condition number)")
      .integer("spmv.validation.levels", 3, 2, 6, "iterations: grids n, 2n, 4n, ...")
      .real("spmv.validation.exponent_slack", 0.25, 0.0, 1.0, "iterations: allowed |observed exponent - 1|",
            true);
  locus::add_common_keys(s, "spmv");
  return app;
}

namespace {

struct Settings {
  bool from_file = false;
  std::string file;
  ReadOptions read;
  GeneratorSpec gen;
  std::string export_path;
  bool by_nonzeros = true;
  Mode mode = Mode::rma;
  int threads = 1;
  bool cg = false;
  long repetitions = 1;
  bool ones = false;
  double tolerance = 1e-8;
  long max_iterations = 1;
  std::string symmetry;
  std::string validation;
  long levels = 3;
  double slack = 0.25;
};

// The generator's size key the user wrote, located: banded's row count,
// else the largest of the grid's dimensions (laplace2d: nx, ny).
std::string generator_size_key(const Config& c, const std::string& kind) {
  if (kind == "banded") return c.locate("spmv.matrix.rows");
  if (kind == "laplace2d") return c.locate_largest({"spmv.matrix.nx", "spmv.matrix.ny"});
  return c.locate_largest({"spmv.matrix.nx", "spmv.matrix.ny", "spmv.matrix.nz"});
}

std::string resolve_matrix_path(const Config& c, const std::string& file) {
  namespace fs = std::filesystem;
  if (file.empty() || fs::path(file).is_absolute()) return file;
  const fs::path deck_dir = fs::path(c.source()).parent_path();
  if (!c.source().empty() && !deck_dir.empty()) {
    const fs::path beside = deck_dir / file;
    std::error_code ec;
    if (fs::exists(beside, ec)) return beside.string();
  }
  return file;
}

// A missing Matrix Market file names the key and the places looked in:
// beside the deck, then the working directory (a relative name), or the
// absolute path; the same error on every rank.
void require_matrix_file(const Context& ctx, const std::string& resolved) {
  namespace fs = std::filesystem;
  const Config& c = ctx.config();
  std::error_code ec;
  const std::string given = c.string("spmv.matrix.file");
  std::string tried;
  if (!given.empty() && !fs::path(given).is_absolute() && !c.source().empty())
    tried = (fs::path(c.source()).parent_path() / given).string() + " (beside the deck), ";
  if (!given.empty())
    tried += fs::absolute(given, ec).string() + (fs::path(given).is_absolute() ? "" : " (working directory)");
  locus::collective_require(
      ctx.comm(), given.empty() || fs::exists(resolved, ec),
      c.locate("spmv.matrix.file") + ": Matrix Market file not found; looked for " + tried);
}

Settings read_settings(const Context& ctx) {
  const Config& c = ctx.config();
  Settings s;
  s.from_file = c.string("spmv.matrix.source") == "file";
  s.file = resolve_matrix_path(c, c.string("spmv.matrix.file"));
  if (s.from_file) require_matrix_file(ctx, s.file);
  s.read.allow_nonfinite = c.boolean("spmv.matrix.allow_nonfinite");
  s.gen.kind = c.string("spmv.matrix.generator");
  s.gen.nx = c.integer("spmv.matrix.nx");
  s.gen.ny = c.integer("spmv.matrix.ny");
  s.gen.nz = c.integer("spmv.matrix.nz");
  s.gen.n = c.integer("spmv.matrix.rows");
  s.gen.bandwidth = c.integer("spmv.matrix.bandwidth");
  s.gen.per_row = c.integer("spmv.matrix.per_row");
  s.gen.seed = static_cast<std::uint64_t>(c.integer("spmv.matrix.seed"));
  s.export_path = c.string("spmv.matrix.export");
  s.by_nonzeros = c.string("spmv.partition") == "nonzeros";
  s.mode = parse_mode(c.string("spmv.mode"));
  s.threads = static_cast<int>(c.integer("spmv.threads"));
  s.cg = c.string("spmv.solver") == "cg";
  s.repetitions = c.integer("spmv.repetitions");
  s.ones = c.string("spmv.x") == "ones";
  s.tolerance = c.real("spmv.cg.tolerance");
  s.max_iterations = c.integer("spmv.cg.max_iterations");
  s.symmetry = c.string("spmv.validation.symmetry");
  s.validation = c.string("spmv.validation.mode");
  s.levels = c.integer("spmv.validation.levels");
  s.slack = c.real("spmv.validation.exponent_slack");

  MPI_Comm comm = ctx.comm();
  locus::collective_require(comm, !s.from_file || !s.file.empty(),
                            c.locate("spmv.matrix.file") + ": source file needs a Matrix Market path");
  locus::collective_require(
      comm, s.from_file || c.string("spmv.matrix.file").empty(),
      c.locate("spmv.matrix.file") + ": only read with spmv.matrix.source: file (the source is generator)");
  if (!s.from_file) {
    // Overflow of the row count, before anything is built.
    const double rows = s.gen.kind == "banded"      ? double(s.gen.n)
                        : s.gen.kind == "laplace2d" ? double(s.gen.nx) * double(s.gen.ny)
                                                    : double(s.gen.nx) * double(s.gen.ny) * double(s.gen.nz);
    char text[64];
    std::snprintf(text, sizeof text, "%.3g", rows);
    locus::collective_require(comm, rows < 4.0e18,
                              generator_size_key(c, s.gen.kind) + ": the " +
                                  (s.gen.kind == "banded" ? "matrix" : "grid") + " has " + text +
                                  " rows, more than 64-bit indices hold");
    if (s.gen.kind == "banded") {
      // the bandwidth first: 2 * bandwidth + 1 below overflows for a huge one
      locus::collective_require(comm, s.gen.bandwidth < s.gen.n,
                                c.locate("spmv.matrix.bandwidth") + ": must be below the row count " +
                                    std::to_string(s.gen.n) + " (got " + std::to_string(s.gen.bandwidth) +
                                    ")");
      locus::collective_require(comm, s.gen.per_row <= 2 * s.gen.bandwidth + 1,
                                c.locate("spmv.matrix.per_row") + ": " + std::to_string(s.gen.per_row) +
                                    " nonzeros per row do not fit in a band of +-" +
                                    std::to_string(s.gen.bandwidth) + " (at most " +
                                    std::to_string(2 * s.gen.bandwidth + 1) + ")");
    }
  }
  // more threads than cores only slow a product down, and their stacks
  // can exhaust a job's address-space limit (libgomp then dies)
  locus::require_threads(comm, s.threads, c.locate("spmv.threads"));
  locus::collective_require(
      comm, s.mode != Mode::thread || ctx.runtime().settings().progress.thread,
      c.locate("spmv.mode") +
          ": thread runs the exchange on the locus progress thread; set "
          "runtime.progress.thread: true (or use mode overlap for the same run without it)");
  locus::collective_require(comm, s.validation == "none" || (!s.from_file && s.gen.kind != "banded"),
                            c.locate("spmv.validation.mode") +
                                ": iterations refines a Laplacian generator grid (laplace2d, laplace3d, "
                                "hpcg27); the matrix here is " +
                                (s.from_file ? std::string("a file") : s.gen.kind));
  locus::collective_require(comm, s.validation == "none" || s.cg,
                            c.locate("spmv.validation.mode") + ": iterations runs CG; set spmv.solver: cg");
  return s;
}

// The space for the export first (the exact size of the text: every line
// formatted once here), so that a full file system is one clear error
// before anything is written.
void check_export_space(MPI_Comm comm, const RowBlock& rows, const std::string& tmp,
                        const std::string& path) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  double bytes = 0;
  char line[128];
  for (gidx i = 0; i < rows.rows(); ++i)
    for (gidx k = rows.ptr[i]; k < rows.ptr[i + 1]; ++k)
      bytes +=
          std::snprintf(line, sizeof line, "%lld %lld %.17g\n", static_cast<long long>(rows.first + i + 1),
                        static_cast<long long>(rows.col[k] + 1), rows.val[k]);
  locus::yielding::allreduce(MPI_IN_PLACE, &bytes, 1, MPI_DOUBLE, MPI_SUM, comm);
  double avail = -1;
  if (rank == 0) {
    const std::string dir = std::filesystem::path(tmp).parent_path().string();
    struct statvfs fs {};
    if (::statvfs(dir.empty() ? "." : dir.c_str(), &fs) == 0)
      avail = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
  }
  locus::yielding::bcast(&avail, 1, MPI_DOUBLE, 0, comm);
  const double need = bytes + 64.0 * 1024;  // the header and the file system's blocks
  char text[160];
  std::snprintf(text, sizeof text, "needs %.1f MiB more, the file system has %.1f MiB free", need / 1048576.0,
                avail / 1048576.0);
  locus::collective_require(
      comm, avail < 0 || avail >= need,
      "spmv.matrix.export: writing " + tmp + ": " + text + "; nothing was written under " + path);
}

// Writes the assembled rows as Matrix Market, ranks appending in turn, to
// PATH.tmp, renamed to PATH when every rank's part is written: a failed
// export (a full or read-only file system) leaves no file under either
// name and says why (errno of the failing call).
void export_matrix(MPI_Comm comm, const RowBlock& rows, const std::string& path) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  long long nnz = rows.nnz(), total = 0;
  locus::yielding::allreduce(&nnz, &total, 1, MPI_LONG_LONG, MPI_SUM, comm);
  const std::string tmp = path + ".tmp";
  std::string problem;
  if (rank == 0) {
    // a device, FIFO or directory is never replaced by the rename below
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
      problem = "spmv.matrix.export: " + path + " exists and is not a regular file; give a file name";
    else if (::lstat(tmp.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      problem =
          "spmv.matrix.export: " + tmp + " exists and is not a regular file; remove it or give another name";
  }
  locus::collective_require(comm, problem.empty(), problem);
  check_export_space(comm, rows, tmp, path);
  auto failed = [&](const char* what, int err) {
    problem = "spmv.matrix.export: " + std::string(what) + " " + tmp + " failed (" + std::strerror(err) +
              "); nothing was written under " + path;
  };
  for (int r = 0; r < size; ++r) {
    if (r == rank) {
      std::FILE* f = std::fopen(tmp.c_str(), r == 0 ? "w" : "a");
      if (!f) {
        problem = "spmv.matrix.export: cannot write " + tmp + " (" + std::strerror(errno) + ")";
      } else {
        int err = 0;
        if (r == 0 &&
            std::fprintf(
                f,
                "%%%%MatrixMarket matrix coordinate real general\n%% written by locus spmv\n%lld %lld %lld\n",
                static_cast<long long>(rows.n), static_cast<long long>(rows.n), total) < 0)
          err = errno;
        for (gidx i = 0; err == 0 && i < rows.rows(); ++i)
          for (gidx k = rows.ptr[i]; err == 0 && k < rows.ptr[i + 1]; ++k)
            if (std::fprintf(f, "%lld %lld %.17g\n", static_cast<long long>(rows.first + i + 1),
                             static_cast<long long>(rows.col[k] + 1), rows.val[k]) < 0)
              err = errno;
        if (err == 0 && std::fflush(f) != 0) err = errno;
        if (err == 0 && ::fsync(fileno(f)) != 0 && errno != EINVAL) err = errno;
        if (std::fclose(f) != 0 && err == 0) err = errno;
        if (err != 0) failed("writing", err ? err : EIO);
      }
    }
    int bad = problem.empty() ? 0 : 1, any = 0;
    locus::yielding::allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm);
    if (any) break;
  }
  int bad = problem.empty() ? 0 : 1, any = 0;
  locus::yielding::allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm);
  if (rank == 0) {
    if (any) {
      std::remove(tmp.c_str());
    } else if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      problem =
          "spmv.matrix.export: cannot rename " + tmp + " to " + path + " (" + std::strerror(errno) + ")";
      std::remove(tmp.c_str());
    }
  }
  locus::collective_require(comm, problem.empty(), problem);
}

// CG's vector operations as Kokkos kernels in locus::ExecSpace on vectors
// in locus::MemSpace (spmv::Vector). The dot product is deterministic for
// any thread count and execution space: fixed blocks of kDotBlock
// entries, each summed in order by one thread, then the block sums in
// order on the host (dot_reference is the same sum as a plain loop).
constexpr gidx kDotBlock = 2048;

double dot_reference(const double* a, const double* b, gidx n) {
  double total = 0;
  for (gidx b0 = 0; b0 < n; b0 += kDotBlock) {
    double s = 0;
    const gidx e = std::min(n, b0 + kDotBlock);
    for (gidx i = b0; i < e; ++i) s += a[i] * b[i];
    total += s;
  }
  return total;
}

struct DotBlocks {
  const double* a;
  const double* b;
  double* part;
  gidx n;
  KOKKOS_INLINE_FUNCTION void operator()(gidx blk) const {
    const gidx b0 = blk * kDotBlock, e = b0 + kDotBlock < n ? b0 + kDotBlock : n;
    double s = 0;
    for (gidx i = b0; i < e; ++i) s += a[i] * b[i];
    part[blk] = s;
  }
};

// The dot products of one solve or test over `comm` (a and b: n values
// in the memory space): the kernel's per-block sums (kept between calls)
// and whether its first product was checked against the reference yet.
class Dot {
 public:
  explicit Dot(MPI_Comm comm) : comm_(comm) {}
  double operator()(const double* a, const double* b, gidx n) {
    double s = local(a, b, n), t = 0;
    if (!checked_) {
      std::vector<double> ah, bh;  // host copies where a and b are device data
      a = host_readable(a, n, ah);
      b = host_readable(b, n, bh);
      const double r = dot_reference(a, b, n);
      if (std::memcmp(&r, &s, sizeof r) != 0)
        throw locus::Error("spmv: the dot-product kernel differs from the reference (" + std::to_string(s) +
                           " vs " + std::to_string(r) + ")");
      checked_ = true;
    }
    locus::Region region("spmv::reduce");
    locus::count(locus::Count::collectives, 1);
    MPI_Allreduce(&s, &t, 1, MPI_DOUBLE, MPI_SUM, comm_);
    return t;
  }

 private:
  double local(const double* a, const double* b, gidx n) {
    const gidx nb = (n + kDotBlock - 1) / kDotBlock;
    if (part_.extent(0) != static_cast<std::size_t>(nb)) {
      part_ = Vector("spmv::dot_blocks", static_cast<std::size_t>(nb));
      part_host_ = Kokkos::create_mirror_view(part_);
    }
    if (nb > 0)
      Kokkos::parallel_for("spmv::dot", locus::Range<gidx>(0, nb), DotBlocks{a, b, part_.data(), n});
    Kokkos::fence();
    Kokkos::deep_copy(part_host_, part_);  // (the same view on a host build: no copy)
    double total = 0;
    for (gidx k = 0; k < nb; ++k) total += part_host_(k);
    return total;
  }
  MPI_Comm comm_;
  Vector part_;
  Vector::HostMirror part_host_;
  bool checked_ = false;
};

// x += alpha p, r -= alpha ap.
struct CgUpdate {
  double* x;
  double* r;
  const double* p;
  const double* ap;
  double alpha;
  KOKKOS_INLINE_FUNCTION void operator()(gidx i) const {
    x[i] += alpha * p[i];
    r[i] -= alpha * ap[i];
  }
};

// r = b - r.
struct Residual {
  double* r;
  const double* b;
  KOKKOS_INLINE_FUNCTION void operator()(gidx i) const { r[i] = b[i] - r[i]; }
};

// p = r + beta p.
struct CgDirection {
  double* p;
  const double* r;
  double beta;
  KOKKOS_INLINE_FUNCTION void operator()(gidx i) const { p[i] = r[i] + beta * p[i]; }
};

void fill_vector(double* v, gidx first, gidx n, std::uint64_t seed, bool ones) {
  for (gidx i = 0; i < n; ++i) v[i] = ones ? 1.0 : hash_uniform(seed, static_cast<std::uint64_t>(first + i));
}

struct CgResult {
  long iterations = 0;
  bool converged = false;
  double relative_residual = 0;
  double true_residual = 0;  // ||b - A x|| / ||b|| recomputed at the end
  double max_error = 0;      // max |x - x*|
  double seconds = 0;
  std::vector<double> history;
  locus::RepeatTimes iteration_times;  // each iteration's time on this rank
};

// What the operator's products spent in each part while a timer ran (the
// difference of two ModeTimes), added to the timers of those parts.
void add_mode_times(locus::Timers& timers, const ModeTimes& before, const ModeTimes& after) {
  timers.add("local", after.local - before.local);
  timers.add("remote", after.remote - before.remote);
  timers.add("post", after.post - before.post);
  timers.add("wait", after.wait - before.wait);
}

// Unpreconditioned CG for A x = b, b = A x*, x0 = 0, on vectors in the
// memory space; x and x* (host vectors) are what the run writes. With
// `timers` (the app's): b and the first residual in `setup`, the
// iteration loop in `cg` (the figure of merit's; `seconds` is its time),
// the true residual and the error in `check`.
CgResult conjugate_gradients(MPI_Comm comm, Operator& op, const Settings& s, std::vector<double>& x,
                             std::vector<double>& xstar, bool show, locus::Timers* timers = nullptr) {
  const gidx n = op.rows();
  const auto un = static_cast<std::size_t>(n);
  Dot dot(comm);
  CgResult res;
  if (timers) timers->start("setup");
  xstar.assign(un, 0.0);
  fill_vector(xstar.data(), op.first(), n, 7, s.ones);
  Vector b("spmv::b", un), r("spmv::r", un), ap("spmv::ap", un), xs("spmv::x", un);  // (zeroed)
  op.set_x(xstar.data());
  op.apply(b.data());
  Kokkos::deep_copy(r, b);
  double* p = op.x();
  copy_in_space(p, r.data(), n);
  const double bnorm = std::sqrt(dot(b.data(), b.data(), n));
  double rr = dot(r.data(), r.data(), n);
  if (timers) timers->stop("setup");
  locus::yielding::barrier(comm);
  const ModeTimes modes_before = op.times();
  const double before = timers ? timers->seconds("cg") : 0.0;
  if (timers) timers->start("cg");
  const double t0 = MPI_Wtime();
  res.history.push_back(bnorm > 0 ? std::sqrt(rr) / bnorm : 0.0);
  while (res.iterations < s.max_iterations && res.history.back() > s.tolerance) {
    const double ti = MPI_Wtime();
    op.apply(ap.data());
    p = op.x();  // (rma: waits until the readers fetched p; nothing writes p before the update below)
    const double pap = dot(p, ap.data(), n);
    const double alpha = rr / pap;
    Kokkos::parallel_for("spmv::cg_update", locus::Range<gidx>(0, n),
                         CgUpdate{xs.data(), r.data(), p, ap.data(), alpha});
    Kokkos::fence();
    const double rr_new = dot(r.data(), r.data(), n);
    const double beta = rr_new / rr;
    rr = rr_new;
    Kokkos::parallel_for("spmv::cg_direction", locus::Range<gidx>(0, n), CgDirection{p, r.data(), beta});
    Kokkos::fence();
    ++res.iterations;
    res.history.push_back(std::sqrt(rr) / bnorm);
    res.iteration_times.add(MPI_Wtime() - ti);
    if (!std::isfinite(res.history.back())) break;
    if (show && res.iterations % 50 == 0)
      std::fprintf(stderr, "\rspmv: cg iteration %ld, relative residual %.3e   ", res.iterations,
                   res.history.back());
  }
  if (show) std::fprintf(stderr, "\r%60s\r", "");
  double mine = MPI_Wtime() - t0;
  if (timers) {
    add_mode_times(*timers, modes_before, op.times());  // (while cg runs: its parts)
    timers->stop("cg");
    mine = timers->seconds("cg") - before;
    timers->start("check");
  }
  locus::yielding::allreduce(&mine, &res.seconds, 1, MPI_DOUBLE, MPI_MAX, comm);
  res.relative_residual = res.history.back();
  res.converged = res.relative_residual <= s.tolerance;
  // The true residual and the error.
  copy_in_space(op.x(), xs.data(), n);
  op.apply(ap.data());
  Kokkos::parallel_for("spmv::residual", locus::Range<gidx>(0, n), Residual{ap.data(), b.data()});
  Kokkos::fence();
  res.true_residual = bnorm > 0 ? std::sqrt(dot(ap.data(), ap.data(), n)) / bnorm : 0.0;
  x.resize(un);
  copy_to_host(x.data(), xs.data(), n);
  double err = 0;
  for (gidx i = 0; i < n; ++i) err = std::max(err, std::fabs(x[i] - xstar[i]));
  locus::yielding::allreduce(&err, &res.max_error, 1, MPI_DOUBLE, MPI_MAX, comm);
  if (timers) timers->stop("check");
  return res;
}

// HPCG's symmetry test with ||A||_inf for HPCG's 2 * 26. HPCG scales the
// departure by x'x y'y, which grows as n^2 and so covers the rounding of the
// two n-term sums; on a tiny matrix (n = 1: x'x y'y < 1) it is below one
// rounding unit of x'Ay itself. The scale is therefore at least
// (row_nnz + 1) ||x|| ||y||, the rounding bound of one row's sum and one
// product, which HPCG's term exceeds from a few rows on.
locus::Tree symmetry_test(MPI_Comm comm, Operator& op, long long row_nnz, bool& pass) {
  const gidx n = op.rows();
  Dot dot(comm);
  const auto un = static_cast<std::size_t>(n);
  std::vector<double> xh(un), yh(un);
  fill_vector(xh.data(), op.first(), n, 11, false);
  fill_vector(yh.data(), op.first(), n, 13, false);
  Vector xv("spmv::sym_x", un), yv("spmv::sym_y", un), z("spmv::sym_z", un);
  copy_to_space(xv.data(), xh.data(), n);
  copy_to_space(yv.data(), yh.data(), n);
  const double xx = dot(xv.data(), xv.data(), n), yy = dot(yv.data(), yv.data(), n);
  op.set_x(yh.data());
  op.apply(z.data());
  const double xtay = dot(xv.data(), z.data(), n);
  op.set_x(xh.data());
  op.apply(z.data());
  const double ytax = dot(yv.data(), z.data(), n);
  double anorm = 0, mine = op.row_abs_max();
  locus::yielding::allreduce(&mine, &anorm, 1, MPI_DOUBLE, MPI_MAX, comm);
  const double scale = std::max(xx * yy, double(row_nnz + 1) * std::sqrt(xx) * std::sqrt(yy));
  const double departure = std::fabs(static_cast<long double>(xtay - ytax)) /
                           (2.0 * anorm * scale * std::numeric_limits<double>::epsilon());
  pass = departure <= 1.0;
  locus::Tree out;
  out["xtAy"] = xtay;
  out["ytAx"] = ytax;
  out["a_norm_inf"] = anorm;
  out["departure_scaled"] = departure;
  out["threshold"] = 1.0;
  out["formula"] = kSymmetryFormula;
  out["row_nnz_max"] = row_nnz;
  out["verdict"] = locus::verdict(pass);
  return out;
}

struct Built {
  RowBlock rows;
  MatrixInfo info;
  std::vector<gidx> starts;
};

// Bytes per stored nonzero while the matrix is built: entries in flight
// (32 B triplets, twice), the assembled and redistributed rows (16 B each)
// and the split storage (12 B); per row: pointers and vectors.
constexpr double kBytesPerEntry = 2 * 32 + 16 + 16 + 12, kBytesPerRow = 3 * 8 + 6 * 8;

void check_memory(const Context& ctx, double rows, double entries, const std::string& what) {
  const double p = ctx.size();
  locus::require_run_memory(ctx, 0.0, (entries * kBytesPerEntry + rows * kBytesPerRow) / p, what);
}

Built build_matrix(const Context& ctx, const Settings& s, const GeneratorSpec& gen) {
  MPI_Comm comm = ctx.comm();
  Built b;
  RowBlock raw;
  if (s.from_file) {
    ReadOptions opt = s.read;
    opt.before_entries = [&](gidx rows, gidx entries, bool expands) {
      check_memory(ctx, double(rows), double(entries) * (expands ? 2.0 : 1.0),
                   "spmv.matrix.file: " + s.file + " (" + std::to_string(rows) + " rows, " +
                       std::to_string(entries) + " entries)");
    };
    raw = read_matrix_market(comm, s.file, opt, b.info);
  } else {
    const double rows = gen.kind == "banded"      ? double(gen.n)
                        : gen.kind == "laplace2d" ? double(gen.nx) * double(gen.ny)
                                                  : double(gen.nx) * double(gen.ny) * double(gen.nz);
    const double per_row = gen.kind == "banded"      ? double(gen.per_row)
                           : gen.kind == "laplace2d" ? 5.0
                           : gen.kind == "laplace3d" ? 7.0
                                                     : 27.0;
    check_memory(ctx, rows, rows * per_row,
                 generator_size_key(ctx.config(), gen.kind) + ": the " + gen.kind + " generator's matrix");
    raw = generate(comm, gen, b.info);
  }
  b.starts = partition(comm, raw, s.by_nonzeros);
  b.rows = redistribute(comm, raw, b.starts);
  return b;
}

// The iteration study's finest refined grid (and the first, still held)
// must fit before any is built.
void check_study_memory(const Context& ctx, const Settings& s) {
  if (s.validation != "iterations") return;
  const double f = std::ldexp(1.0, int(s.levels - 1)), f3 = s.gen.kind == "laplace2d" ? 1.0 : f;
  const double rows0 = s.gen.kind == "laplace2d" ? double(s.gen.nx) * double(s.gen.ny)
                                                 : double(s.gen.nx) * double(s.gen.ny) * double(s.gen.nz);
  const double rows = rows0 * (1.0 + f * f * f3);
  const double per_row = s.gen.kind == "laplace2d" ? 5.0 : s.gen.kind == "laplace3d" ? 7.0 : 27.0;
  check_memory(ctx, rows, rows * per_row,
               ctx.config().locate("spmv.validation.levels") + ": the finest refined grid of " + s.gen.kind);
}

// The most nonzeros of any row, over all ranks.
long long max_row_nonzeros(MPI_Comm comm, const RowBlock& rows) {
  long long row_nnz = 0;
  for (gidx i = 0; i < rows.rows(); ++i)
    row_nnz = std::max<long long>(row_nnz, rows.ptr[i + 1] - rows.ptr[i]);
  locus::yielding::allreduce(MPI_IN_PLACE, &row_nnz, 1, MPI_LONG_LONG, MPI_MAX, comm);
  return row_nnz;
}

// The nonzeros of the whole matrix and of the fullest rank.
struct NonzeroCounts {
  long long total = 0, max = 0;
};

NonzeroCounts count_nonzeros(MPI_Comm comm, gidx mine) {
  NonzeroCounts c;
  long long m = mine;
  locus::yielding::allreduce(&m, &c.total, 1, MPI_LONG_LONG, MPI_SUM, comm);
  locus::yielding::allreduce(&m, &c.max, 1, MPI_LONG_LONG, MPI_MAX, comm);
  return c;
}

locus::Tree matrix_summary(const MatrixInfo& info, const Operator& op, long long nnz_total) {
  locus::Tree matrix;
  matrix["source"] = info.source;
  matrix["format"] = info.format;
  if (info.format != "generator") {
    matrix["field"] = info.field;
    matrix["symmetry"] = info.symmetry;
    matrix["entries_in_file"] = info.entries;
  }
  matrix["rows"] = op.n();
  matrix["nonzeros"] = nnz_total;
  matrix["load_seconds"] = info.load_seconds;
  if (info.file_bytes > 0 && info.load_seconds > 0) {
    matrix["load_mb_per_s"] = std::round(info.file_bytes / info.load_seconds / 1e5) / 10;
  }
  if (info.load_seconds > 0)
    matrix["load_mnonzeros_per_s"] = std::round(double(nnz_total) / info.load_seconds / 1e5) / 10;
  return matrix;
}

locus::Tree halo_summary(MPI_Comm comm, const Operator& op) {
  const HaloStats& h = op.halo();
  int nb_max = 0;
  long long halo_total = 0, halo_mine = h.halo_entries;
  locus::yielding::allreduce(&h.neighbours, &nb_max, 1, MPI_INT, MPI_MAX, comm);
  locus::yielding::allreduce(&halo_mine, &halo_total, 1, MPI_LONG_LONG, MPI_SUM, comm);
  locus::Tree hn;
  hn["max_neighbours"] = nb_max;
  hn["halo_entries"] = halo_total;
  hn["halo_bytes_per_product"] = halo_total * 8;
  return hn;
}

// The problem as built: matrix, mode, partition and halo into RESULTS.
void describe_problem(const Context& ctx, const Settings& s, const MatrixInfo& info, const Operator& op,
                      const NonzeroCounts& nnz, locus::Tree& results) {
  MPI_Comm comm = ctx.comm();
  results["matrix"] = matrix_summary(info, op, nnz.total);
  results["mode"] = mode_name(s.mode);
  results["threads"] = s.threads;
  results["partition"] = ctx.config().string("spmv.partition");
  results["nonzero_imbalance"] = nnz.total > 0 ? double(nnz.max) * ctx.size() / double(nnz.total) : 1.0;
  results["halo"] = halo_summary(comm, op);
}

// HPCG's symmetry test when asked for (or, with auto, when the input is
// symmetric); returns whether it ran.
bool check_symmetry(MPI_Comm comm, const Settings& s, const MatrixInfo& info, Operator& op, long long row_nnz,
                    locus::Tree& validation, bool& pass) {
  const bool run_sym = s.symmetry == "on" || (s.symmetry == "auto" && info.symmetric);
  if (run_sym) {
    bool ok = false;
    validation["symmetry"] = symmetry_test(comm, op, row_nnz, ok);
    pass = pass && ok;
  } else {
    validation["symmetry"] = s.symmetry == "off" ? "off" : "not run (input not symmetric)";
  }
  return run_sym;
}

// The vectors a run writes (host vectors; y is copied from y_space, where
// the products write it), and CG's outcome.
struct Solution {
  std::vector<double> xin, y, xsol, xstar;
  Vector y_space;
  CgResult cg;
  locus::RepeatTimes product_times;  // each timed product on this rank (solver none)
};

// One untimed product checks the kernels against the reference ones.
void check_kernels(Operator& op, const Settings& s, Vector& y, locus::Tree& results) {
  if (!op.kernel_checked()) {
    std::vector<double> x(static_cast<std::size_t>(op.rows()));
    fill_vector(x.data(), op.first(), op.rows(), 7, s.ones);
    op.set_x(x.data());
    op.apply(y.data());
  }
  locus::Tree k = locus::kernels_summary(false, op.kernel_space());
  k["check"] = "product bitwise equal to the reference kernels";
  k["local"] = Operator::local_kernel();
  results["kernels"] = k;
}

// The timed product loop, in timer `products` (the figure of merit's).
void time_products(MPI_Comm comm, Operator& op, const Settings& s, locus::Timers& timers, Solution& sol) {
  sol.xin.resize(static_cast<std::size_t>(op.rows()));
  fill_vector(sol.xin.data(), op.first(), op.rows(), 7, s.ones);
  locus::yielding::barrier(comm);
  const ModeTimes before = op.times();
  timers.start("products");
  for (long rep = 0; rep < s.repetitions; ++rep) {
    const double t0 = MPI_Wtime();
    op.set_x(sol.xin.data());
    op.apply(sol.y_space.data());
    sol.product_times.add(MPI_Wtime() - t0);
  }
  add_mode_times(timers, before, op.times());  // (while products runs: its parts)
  timers.stop("products");
}

void solve_cg(MPI_Comm comm, Operator& op, const Settings& s, bool show, locus::Timers& timers, Solution& sol,
              locus::Tree& results, locus::Tree& validation, bool& pass) {
  sol.cg = conjugate_gradients(comm, op, s, sol.xsol, sol.xstar, show, &timers);
  // y = A x (the solution)
  auto t = timers.scope("check");
  op.set_x(sol.xsol.data());
  op.apply(sol.y_space.data());
  const CgResult& cg = sol.cg;
  locus::Tree c;
  c["iterations"] = cg.iterations;
  c["converged"] = cg.converged;
  c["tolerance"] = s.tolerance;
  c["relative_residual"] = cg.relative_residual;
  c["true_relative_residual"] = cg.true_residual;
  c["max_error"] = cg.max_error;
  c["seconds"] = cg.seconds;
  results["cg"] = c;
  validation["cg_converged"] = cg.converged;
  pass = pass && cg.converged;
}

// The kernel check, then spmv.repetitions timed products or CG.
Solution solve(const Context& ctx, const Settings& s, Operator& op, locus::Timers& timers,
               locus::Tree& results, locus::Tree& validation, bool& pass) {
  const bool show = ctx.show_progress();
  Solution sol;
  sol.y.resize(static_cast<std::size_t>(op.rows()));
  sol.y_space = Vector("spmv::y", sol.y.size());
  {
    auto t = timers.scope("check");
    check_kernels(op, s, sol.y_space, results);
  }
  op.reset_times();
  if (!s.cg)
    time_products(ctx.comm(), op, s, timers, sol);
  else
    solve_cg(ctx.comm(), op, s, show, timers, sol, results, validation, pass);
  copy_to_host(sol.y.data(), sol.y_space.data(), op.rows());
  return sol;
}

// The figure of merit: the whole timed loop (products with their halo
// exchange, or CG with its dot products), slowest rank.
locus::Tree loop_figure_of_merit(MPI_Comm comm, const Settings& s, const Operator& op,
                                 const locus::Timers& timers, const Solution& sol, long long nnz_total) {
  if (!s.cg) {
    return locus::figure_of_merit(
        "floating-point operations per second", 2.0 * double(nnz_total) * double(s.repetitions) / 1e9,
        "GFLOP/s", timers, "products",
        "the whole timed product loop of the slowest rank (2 nonzeros flops per product): copies, halo "
        "exchange and multiplication",
        comm, sol.product_times, "product");
  }
  const double n_rows = double(op.n());
  return locus::figure_of_merit(
      "floating-point operations per second",
      (2.0 * double(nnz_total) + 10.0 * n_rows) * double(sol.cg.iterations) / 1e9, "GFLOP/s", timers, "cg",
      "the whole CG loop of the slowest rank (per iteration 2 nonzeros + 10 rows flops: a product, two "
      "dot products, three vector updates), halo exchanges and reductions included",
      comm, sol.cg.iteration_times, "iteration");
}

// Per-product figures (max over ranks of each phase), the figure of merit
// and beside it the local and remote multiplications alone.
void report_products(MPI_Comm comm, const Settings& s, const Operator& op, const locus::Timers& timers,
                     const Solution& sol, long long nnz_total, locus::Tree& results) {
  const ModeTimes& t = op.times();
  double v[5] = {t.total, t.local, t.remote, t.post, t.wait}, mx[5];
  locus::yielding::allreduce(v, mx, 5, MPI_DOUBLE, MPI_MAX, comm);
  const double per = t.products > 0 ? mx[0] / double(t.products) : 0.0;
  double bytes = op.model_bytes(), bytes_total = 0;
  locus::yielding::allreduce(&bytes, &bytes_total, 1, MPI_DOUBLE, MPI_SUM, comm);
  locus::Tree pn;
  pn["products"] = t.products;
  pn["seconds_per_product"] = per;
  auto us = [&](double x) { return (t.products > 0 ? std::round(x / double(t.products) * 1e8) / 100 : 0.0); };
  pn["local_us"] = us(mx[1]);
  pn["remote_us"] = us(mx[2]);
  pn["post_us"] = us(mx[3]);
  pn["wait_us"] = us(mx[4]);
  pn["gflop_per_s"] = per > 0 ? std::round(2.0 * double(nnz_total) / per / 1e6) / 1e3 : 0.0;
  results["figure_of_merit"] = loop_figure_of_merit(comm, s, op, timers, sol, nnz_total);
  double mult[2] = {t.local + t.remote, 0.0};
  locus::yielding::allreduce(&mult[0], &mult[1], 1, MPI_DOUBLE, MPI_MAX, comm);
  results["compute_only_gflop_per_s"] =
      locus::rate(2.0 * double(nnz_total) * double(t.products) / 1e9, mult[1]);
  pn["model_gb_per_s"] = per > 0 ? std::round(bytes_total / per / 1e6) / 1e3 : 0.0;
  results["product"] = pn;
}

// CG iteration growth on refined grids; returns whether it holds.
bool iteration_study(const Context& ctx, const Settings& s, locus::Tree& validation) {
  locus::Tree study;
  std::vector<double> its;
  bool all = true;
  for (long level = 0; level < s.levels; ++level) {
    GeneratorSpec g = s.gen;
    g.nx <<= level;
    g.ny <<= level;
    if (g.kind != "laplace2d") g.nz <<= level;
    Built lb = build_matrix(ctx, s, g);
    Operator lop(ctx.runtime().world(), std::move(lb.rows), lb.starts, s.mode, s.threads);
    std::vector<double> lx, lxs;
    CgResult r = conjugate_gradients(ctx.comm(), lop, s, lx, lxs, false);
    locus::Tree lv;
    lv["grid"] = lb.info.source;
    lv["iterations"] = r.iterations;
    lv["converged"] = r.converged;
    lv["max_error"] = r.max_error;
    study["levels"].push_back(lv);
    its.push_back(double(r.iterations));
    all = all && r.converged;
  }
  bool ok = all;
  for (std::size_t i = 0; i + 1 < its.size(); ++i) {
    const double e = std::log2(its[i + 1] / its[i]);
    study["observed_exponent"].push_back(e);
    ok = ok && std::isfinite(e) && std::fabs(e - 1.0) <= s.slack;
  }
  study["expected_exponent"] = 1.0;
  study["allowed_deviation"] = s.slack;
  study["meaning"] = "CG iterations ~ sqrt(condition number) ~ points per dimension";
  validation["study"] = study;
  return ok;
}

// The vectors, the partition, per-rank halo and mode timers, CG's residuals.
void write_results(locus::H5Output& out, const Context& ctx, const Settings& s, const Operator& op,
                   const std::vector<gidx>& row_starts, const Solution& sol) {
  locus::write_provenance(out, ctx);
  const auto n = static_cast<std::uint64_t>(op.n());
  const auto first = static_cast<std::uint64_t>(op.first()), rows = static_cast<std::uint64_t>(op.rows());
  if (ctx.config().boolean("output.write_field")) {
    out.write_distributed("y", sol.y.data(), rows, first, n);
    if (!s.cg) {
      out.write_distributed("x", sol.xin.data(), rows, first, n);
      out.attribute("x", "meaning", std::string("the input vector of the products"));
    } else {
      out.write_distributed("x", sol.xsol.data(), rows, first, n);
      out.attribute("x", "meaning", std::string("the CG solution"));
      out.write_distributed("x_exact", sol.xstar.data(), rows, first, n);
    }
    out.attribute("y", "meaning", std::string("A x"));
    for (const char* v : {"x", "y"}) out.attribute(v, "units", std::string("1 (as the matrix and x)"));
    if (s.cg) {
      out.attribute("x_exact", "meaning", std::string("the manufactured solution b was made from"));
      out.attribute("x_exact", "units", std::string("1 (as x)"));
    }
  }
  out.write_root_vector("row_partition", row_starts);
  out.attribute("row_partition", "meaning", std::string("first row of every rank, then the row count"));
  out.attribute("row_partition", "units", std::string("rows (0-based)"));
  const HaloStats& h = op.halo();
  const ModeTimes& mt = op.times();
  out.write_rank_rows(
      "halo", {double(h.neighbours), double(h.halo_entries), double(h.halo_entries) * 8.0, double(h.readers),
               double(h.send_entries), double(op.rows()), double(op.nnz()), double(op.nnz_remote())});
  out.attribute("halo", "columns",
                std::string("neighbours,halo_entries,halo_bytes,readers,send_entries,rows,nonzeros,"
                            "remote_nonzeros"));
  out.attribute("halo", "units", std::string("counts, except halo_bytes (bytes)"));
  out.write_rank_rows("mode_timers", {mt.local, mt.remote, mt.post, mt.wait, mt.total, double(mt.products)});
  out.attribute("mode_timers", "columns", std::string("local,remote,post,wait,total,products"));
  out.attribute("mode_timers", "units", std::string("s for the five times, then a count of products"));
  if (s.cg) {
    out.write_root_vector("residual", sol.cg.history);
    out.attribute("residual", "meaning", std::string("||r||_2 / ||b||_2 at each CG iteration"));
    out.attribute("residual", "units", std::string("1 (relative)"));
  }
}

}  // namespace

int run(Context& ctx) {
  MPI_Comm comm = ctx.comm();
  const Settings s = read_settings(ctx);
  // total: the whole run; load (the matrix), setup (the output file, the
  // operator: wish lists, split storage, plans; CG's right-hand side),
  // products or cg (the timed loop; local, remote, post, wait its parts),
  // check (the kernel check, the symmetry test, CG's true residual, the
  // figures of the summary, the iteration study), io (the matrix export
  // and the output)
  locus::Timers timers(
      {"total", "load", "setup", "products", "local", "remote", "post", "wait", "cg", "check", "io"});
  timers.start("total");
  check_study_memory(ctx, s);

  // The matrix first: a malformed file ends the run before the output exists.
  timers.start("load");
  Built built = build_matrix(ctx, s, s.gen);
  timers.stop("load");
  if (!s.export_path.empty()) {
    auto t = timers.scope("io");
    export_matrix(comm, built.rows, s.export_path);
  }

  timers.start("setup");
  locus::H5Output out = locus::open_output(ctx);
  const gidx nnz_mine = built.rows.nnz();
  const long long row_nnz = max_row_nonzeros(comm, built.rows);
  Operator op(ctx.runtime().world(), std::move(built.rows), built.starts, s.mode, s.threads);
  locus::Tree results = locus::Tree::map(), validation;
  const NonzeroCounts nnz = count_nonzeros(comm, nnz_mine);
  describe_problem(ctx, s, built.info, op, nnz, results);
  timers.stop("setup");

  bool pass = true;
  timers.start("check");
  const bool run_sym = check_symmetry(comm, s, built.info, op, row_nnz, validation, pass);
  timers.stop("check");
  const Solution sol = solve(ctx, s, op, timers, results, validation, pass);
  {
    auto t = timers.scope("check");
    report_products(comm, s, op, timers, sol, nnz.total, results);
    if (s.validation == "iterations") {
      const bool ok = iteration_study(ctx, s, validation);
      pass = pass && ok;
    }
  }
  // Nothing checked (no symmetry test, no validation study): "not checked";
  // CG that did not converge still fails.
  locus::set_verdict(validation, pass, run_sym || s.validation != "none",
                     "no symmetry test and validation.mode none: the result is not checked");

  {
    auto t = timers.scope("io");
    write_results(out, ctx, s, op, built.starts, sol);
  }
  char warning[160] = "";
  if (s.cg && !sol.cg.converged)
    std::snprintf(warning, sizeof warning, "CG did not converge: relative residual %.3e after %ld iterations",
                  sol.cg.relative_residual, sol.cg.iterations);
  return locus::finish_run(out, ctx, timers, results, validation, pass, nullptr, warning);
}

}  // namespace spmv
