/* The PETSc peer of locus's spmv: PETSc's MatMult and unpreconditioned
   KSPCG on HPCG's 27-point operator, in its own MPI job (PETSc's MPI, no
   locus in the process). `./locus bench spmv` runs it beside the spmv app
   on the same grid and ranks (tools/bench_spmv_peer.py).

   The operator and the vectors are the spmv app's (generator hpcg27,
   spmv.partition: rows, spmv.x: ones): an nx^3 grid numbered
   x + nx (y + nx z), diagonal 26 and -1 for each of the up to 26
   neighbours inside the grid; rank r owns rows [N r / p, N (r + 1) / p).

   Timed: MatMult y = A x (warm-up products, then --reps products, each
   between barriers, the slowest rank's time: median and fastest; then
   --reps products back to back, the slowest rank's loop / reps) and
   KSPCG without a preconditioner for b = A 1 from x0 = 0, either a fixed
   number of iterations (--cg-iterations, no convergence test) or until the
   relative residual 2-norm reaches --cg-tolerance (the spmv app's test,
   ||r|| / ||b||, on the recursively updated residual).

   Checked before anything is timed: y = A x for x = 1 and for x_j = j
   against their analytic values, every row exactly (integers). After CG,
   the true residual ||b - A x|| / ||b|| and max |x - 1|. Exit 1 when a
   check fails, 2 on a bad argument. */
#include <petscksp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* usage =
    "usage: petsc_hpcg27 [--nx N] [--reps R] [--cg-iterations K | --cg-tolerance T] [--inject-error]\n"
    "PETSc MatMult and unpreconditioned KSPCG on HPCG's 27-point operator (the peer of ./locus bench spmv):\n"
    "  --nx N             grid points per dimension, N^3 rows (2-1000; default 48)\n"
    "  --reps R           timed products (1-100000; default 50): R single products between barriers\n"
    "                     (median, fastest), then R back to back (the slowest rank's loop / R)\n"
    "  --cg-iterations K  CG: exactly K iterations, no convergence test (0-100000; default 50; 0: no CG)\n"
    "  --cg-tolerance T   CG: iterate until ||r||/||b|| <= T (0 < T < 1; at most 100000 iterations)\n"
    "  --inject-error     assemble one entry wrong (row 0's diagonal 25): the self-check must fail\n"
    "Prints 'key: name=value ...' lines: problem, matmult, check, cg, cg_check; exit 0 when both\n"
    "checks pass, 1 when one fails, 2 on a bad argument.\n";

typedef struct {
  long nx, reps, cg_iterations;
  double cg_tolerance; /* > 0: run to this tolerance instead of a fixed count */
  int inject_error;
} Options;

/* An integer option: its name, where it goes, its bounds. */
typedef struct {
  const char* name;
  long* into;
  long lo, hi;
} IntOption;

/* 0: run; 1: help printed; 2: error printed (rank 0 prints, every rank returns the same). */
static int parse(int argc, char** argv, int rank, Options* o) {
  *o = (Options){.nx = 48, .reps = 50, .cg_iterations = 50, .cg_tolerance = 0, .inject_error = 0};
  const IntOption ints[] = {{"--nx", &o->nx, 2, 1000},
                            {"--reps", &o->reps, 1, 100000},
                            {"--cg-iterations", &o->cg_iterations, 0, 100000}};
  int fixed = 0;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      if (rank == 0) fputs(usage, stdout);
      return 1;
    }
    if (!strcmp(a, "--inject-error")) {
      o->inject_error = 1;
      continue;
    }
    const IntOption* opt = NULL;
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; ++k)
      if (!strcmp(a, ints[k].name)) opt = &ints[k];
    if (!opt && strcmp(a, "--cg-tolerance")) {
      if (rank == 0) fprintf(stderr, "petsc_hpcg27: unknown argument '%s'\n%s", a, usage);
      return 2;
    }
    if (i + 1 == argc) {
      if (rank == 0) fprintf(stderr, "petsc_hpcg27: %s needs a value\n%s", a, usage);
      return 2;
    }
    const char* v = argv[++i];
    char* end = NULL;
    if (opt) {
      const long x = strtol(v, &end, 10);
      if (*v == '\0' || *end != '\0' || x < opt->lo || x > opt->hi) {
        if (rank == 0)
          fprintf(stderr, "petsc_hpcg27: %s must be an integer from %ld to %ld (got '%s')\n", a, opt->lo,
                  opt->hi, v);
        return 2;
      }
      *opt->into = x;
      fixed |= opt->into == &o->cg_iterations;
      continue;
    }
    const double x = strtod(v, &end);
    if (*v == '\0' || *end != '\0' || !(x > 0 && x < 1)) {
      if (rank == 0)
        fprintf(stderr,
                "petsc_hpcg27: --cg-tolerance must be a number between 0 and 1, exclusive (got '%s')\n", v);
      return 2;
    }
    o->cg_tolerance = x;
  }
  if (fixed && o->cg_tolerance > 0) {
    if (rank == 0) fprintf(stderr, "petsc_hpcg27: give --cg-iterations or --cg-tolerance, not both\n");
    return 2;
  }
  return 0;
}

/* Neighbours of coordinate c along one dimension of n points: how many
   offsets in {-1, 0, 1} stay inside (count), and their sum. */
static void along(PetscInt c, PetscInt n, PetscInt* count, PetscInt* sum) {
  *count = 1;
  *sum = 0;
  if (c > 0) ++*count, --*sum;
  if (c < n - 1) ++*count, ++*sum;
}

/* Row i of A times x, exactly, for x = 1 (index = 0) or x_j = j (index = 1):
   27 - |stencil| for ones; 27 i - sum of the stencil's columns for j. */
static double expected_row(PetscInt i, PetscInt n, int index) {
  PetscInt cx, sx, cy, sy, cz, sz;
  along(i % n, n, &cx, &sx);
  along((i / n) % n, n, &cy, &sy);
  along(i / (n * n), n, &cz, &sz);
  const double cnt = (double)(cx * cy * cz);
  if (!index) return 27.0 - cnt;
  const double cols =
      cnt * (double)i + (double)sx * cy * cz + (double)n * sy * cx * cz + (double)n * n * sz * cx * cy;
  return 27.0 * (double)i - cols;
}

static PetscErrorCode assemble(const Options* o, PetscInt lo, PetscInt hi, Mat* A) {
  const PetscInt n = (PetscInt)o->nx, N = n * n * n;
  PetscCall(MatCreate(PETSC_COMM_WORLD, A));
  PetscCall(MatSetSizes(*A, hi - lo, hi - lo, N, N));
  PetscCall(MatSetType(*A, MATAIJ));
  PetscCall(MatSeqAIJSetPreallocation(*A, 27, NULL));
  PetscCall(MatMPIAIJSetPreallocation(*A, 27, NULL, 18, NULL));
  for (PetscInt r = lo; r < hi; ++r) {
    const PetscInt x = r % n, y = (r / n) % n, z = r / (n * n);
    PetscInt cols[27], k = 0;
    PetscScalar vals[27];
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          const PetscInt xx = x + dx, yy = y + dy, zz = z + dz;
          if (xx < 0 || xx >= n || yy < 0 || yy >= n || zz < 0 || zz >= n) continue;
          cols[k] = xx + n * (yy + n * zz);
          vals[k] = (dx || dy || dz) ? -1.0 : (o->inject_error && r == 0 ? 25.0 : 26.0);
          ++k;
        }
    PetscCall(MatSetValues(*A, 1, &r, k, cols, vals, INSERT_VALUES));
  }
  PetscCall(MatAssemblyBegin(*A, MAT_FINAL_ASSEMBLY));
  PetscCall(MatAssemblyEnd(*A, MAT_FINAL_ASSEMBLY));
  return 0;
}

/* y = A x for x = 1 and x_j = j, every row against its analytic value;
   the rows that differ (all ranks), and the sum of A 1. */
static PetscErrorCode check_product(Mat A, Vec x, Vec y, PetscInt lo, PetscInt n, long* wrong, double* sum) {
  *wrong = 0;
  *sum = 0;
  for (int index = 0; index <= 1; ++index) {
    PetscScalar* xv;
    PetscInt m;
    PetscCall(VecGetLocalSize(x, &m));
    PetscCall(VecGetArray(x, &xv));
    for (PetscInt i = 0; i < m; ++i) xv[i] = index ? (PetscScalar)(lo + i) : 1.0;
    PetscCall(VecRestoreArray(x, &xv));
    PetscCall(MatMult(A, x, y));
    const PetscScalar* yv;
    PetscCall(VecGetArrayRead(y, &yv));
    for (PetscInt i = 0; i < m; ++i) {
      if (yv[i] != expected_row(lo + i, n, index)) ++*wrong;
      if (!index) *sum += yv[i];
    }
    PetscCall(VecRestoreArrayRead(y, &yv));
  }
  MPI_Allreduce(MPI_IN_PLACE, wrong, 1, MPI_LONG, MPI_SUM, PETSC_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, sum, 1, MPI_DOUBLE, MPI_SUM, PETSC_COMM_WORLD);
  return 0;
}

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* --reps products after 3 untimed ones, each between barriers: the median
   and the fastest of the slowest rank's times; then --reps products back to
   back: the slowest rank's whole loop / reps (as the spmv app times its
   product loop). Seconds. */
static PetscErrorCode time_products(Mat A, Vec x, Vec y, long reps, double* median, double* fastest,
                                    double* loop) {
  double* t = malloc(sizeof(double) * (size_t)reps);
  if (!t) SETERRQ(PETSC_COMM_SELF, PETSC_ERR_MEM, "no memory for %ld times", reps);
  PetscCall(VecSet(x, 1.0));
  for (int w = 0; w < 3; ++w) PetscCall(MatMult(A, x, y));
  for (long i = 0; i < reps; ++i) {
    MPI_Barrier(PETSC_COMM_WORLD);
    const double t0 = MPI_Wtime();
    PetscCall(MatMult(A, x, y));
    double dt = MPI_Wtime() - t0;
    MPI_Allreduce(&dt, &t[i], 1, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD);
  }
  qsort(t, (size_t)reps, sizeof(double), by_value);
  *median = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
  *fastest = t[0];
  free(t);
  MPI_Barrier(PETSC_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (long i = 0; i < reps; ++i) PetscCall(MatMult(A, x, y));
  double dt = MPI_Wtime() - t0;
  MPI_Allreduce(&dt, loop, 1, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD);
  *loop /= (double)reps;
  return 0;
}

typedef struct {
  PetscInt iterations;
  KSPConvergedReason reason;
  double seconds, residual, true_residual, max_error;
} CgOutcome;

/* KSPCG, no preconditioner, b = A 1, x0 = 0: a fixed iteration count
   (no norms: two reductions per iteration, as the spmv app's CG) or to a
   relative tolerance on the natural norm (with no preconditioner, the
   2-norm of the recursively updated residual: the app's test). */
static PetscErrorCode solve_cg(Mat A, const Options* o, CgOutcome* out) {
  Vec b, x, r, ones;
  KSP ksp;
  PC pc;
  PetscCall(MatCreateVecs(A, &x, &b));
  PetscCall(VecDuplicate(b, &r));
  PetscCall(VecDuplicate(b, &ones));
  PetscCall(VecSet(ones, 1.0));
  PetscCall(MatMult(A, ones, b));
  PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
  PetscCall(KSPSetOperators(ksp, A, A));
  PetscCall(KSPSetType(ksp, KSPCG));
  PetscCall(KSPGetPC(ksp, &pc));
  PetscCall(PCSetType(pc, PCNONE));
  PetscCall(KSPSetInitialGuessNonzero(ksp, PETSC_FALSE));
  if (o->cg_tolerance > 0) {
    PetscCall(KSPSetNormType(ksp, KSP_NORM_NATURAL));
    PetscCall(KSPSetTolerances(ksp, o->cg_tolerance, 0.0, PETSC_DEFAULT, 100000));
  } else {
    PetscCall(KSPSetNormType(ksp, KSP_NORM_NONE));
    PetscCall(KSPSetConvergenceTest(ksp, KSPConvergedSkip, NULL, NULL));
    PetscCall(KSPSetTolerances(ksp, PETSC_DEFAULT, PETSC_DEFAULT, PETSC_DEFAULT, (PetscInt)o->cg_iterations));
  }
  PetscCall(KSPSetUp(ksp));
  PetscCall(VecSet(x, 0.0));
  MPI_Barrier(PETSC_COMM_WORLD);
  const double t0 = MPI_Wtime();
  PetscCall(KSPSolve(ksp, b, x));
  double dt = MPI_Wtime() - t0;
  MPI_Allreduce(&dt, &out->seconds, 1, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD);
  PetscCall(KSPGetIterationNumber(ksp, &out->iterations));
  PetscCall(KSPGetConvergedReason(ksp, &out->reason));
  PetscReal rn = 0, bn = 0, en = 0;
  PetscCall(KSPGetResidualNorm(ksp, &rn));
  PetscCall(VecNorm(b, NORM_2, &bn));
  out->residual = o->cg_tolerance > 0 ? rn / bn : -1.0; /* no norm is computed with a fixed count */
  PetscCall(MatMult(A, x, r));
  PetscCall(VecAYPX(r, -1.0, b));
  PetscCall(VecNorm(r, NORM_2, &rn));
  out->true_residual = rn / bn;
  PetscCall(VecAXPY(x, -1.0, ones));
  PetscCall(VecNorm(x, NORM_INFINITY, &en));
  out->max_error = en;
  PetscCall(KSPDestroy(&ksp));
  PetscCall(VecDestroy(&b));
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&r));
  PetscCall(VecDestroy(&ones));
  return 0;
}

/* CG did what was asked: the fixed count with a residual below the start,
   or convergence with a true residual within 10x the tolerance. */
static int cg_passes(const Options* o, const CgOutcome* c) {
  if (!(c->true_residual == c->true_residual)) return 0; /* NaN */
  if (o->cg_tolerance > 0) return c->reason > 0 && c->true_residual <= 10 * o->cg_tolerance;
  return c->iterations == o->cg_iterations && c->true_residual < 1.0;
}

static PetscErrorCode run(const Options* o, int size, int* pass) {
  const PetscInt n = (PetscInt)o->nx, N = n * n * n;
  int rank;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  const PetscInt lo = (PetscInt)((long long)N * rank / size),
                 hi = (PetscInt)((long long)N * (rank + 1) / size);
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(mpi, &len);
  mpi[strcspn(mpi, ",\n")] = '\0';
  Mat A;
  Vec x, y;
  PetscCall(assemble(o, lo, hi, &A));
  PetscCall(MatCreateVecs(A, &x, &y));
  MatInfo info;
  PetscCall(MatGetInfo(A, MAT_GLOBAL_SUM, &info));
  PetscCall(
      PetscPrintf(PETSC_COMM_WORLD,
                  "# PETSc %d.%d.%d, %s: MatMult and KSPCG (no preconditioner) on HPCG's 27-point operator, "
                  "%ld^3 grid, rows split equally in rank order\n",
                  PETSC_VERSION_MAJOR, PETSC_VERSION_MINOR, PETSC_VERSION_SUBMINOR, mpi, o->nx));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD, "problem: nx=%ld rows=%ld nnz=%.0f ranks=%d petsc=%d.%d.%d\n",
                        o->nx, (long)N, (double)info.nz_used, size, PETSC_VERSION_MAJOR, PETSC_VERSION_MINOR,
                        PETSC_VERSION_SUBMINOR));
  long wrong = 0;
  double sum = 0;
  PetscCall(check_product(A, x, y, lo, n, &wrong, &sum));
  const double s = 3.0 * (double)n - 2.0, want = 27.0 * (double)N - s * s * s;
  const int product_ok = wrong == 0 && sum == want;
  PetscCall(
      PetscPrintf(PETSC_COMM_WORLD,
                  "check: sum_A1=%.17g expected=%.17g rows_wrong=%ld (y = A x against its analytic value, "
                  "every row, for x = 1 and x_j = j) %s\n",
                  sum, want, wrong, product_ok ? "PASS" : "FAIL"));
  double median = 0, fastest = 0, loop = 0;
  PetscCall(time_products(A, x, y, o->reps, &median, &fastest, &loop));
  PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                        "matmult: reps=%ld median_s=%.6e min_s=%.6e loop_s=%.6e gflops=%.4f\n", o->reps,
                        median, fastest, loop, 2.0 * info.nz_used / median * 1e-9));
  int cg_ok = 1;
  if (o->cg_tolerance > 0 || o->cg_iterations > 0) {
    CgOutcome c;
    PetscCall(solve_cg(A, o, &c));
    cg_ok = cg_passes(o, &c);
    const double per = c.iterations > 0 ? c.seconds / (double)c.iterations : 0.0;
    char recursive[64] = "none"; /* a fixed count computes no residual norm */
    if (c.residual >= 0) snprintf(recursive, sizeof recursive, "%.3e", c.residual);
    PetscCall(PetscPrintf(PETSC_COMM_WORLD,
                          "cg: stop=%s iterations=%ld seconds=%.6e per_iteration_s=%.6e relative_residual=%s "
                          "true_relative_residual=%.3e max_error=%.3e reason=%s\n",
                          o->cg_tolerance > 0 ? "tolerance" : "fixed", (long)c.iterations, c.seconds, per,
                          recursive, c.true_residual, c.max_error, KSPConvergedReasons[c.reason]));
    if (o->cg_tolerance > 0)
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "cg_check: converged to %.3e, true residual <= 10x: %s\n",
                            o->cg_tolerance, cg_ok ? "PASS" : "FAIL"));
    else
      PetscCall(PetscPrintf(PETSC_COMM_WORLD, "cg_check: %ld iterations, true residual below 1: %s\n",
                            o->cg_iterations, cg_ok ? "PASS" : "FAIL"));
  }
  PetscCall(VecDestroy(&x));
  PetscCall(VecDestroy(&y));
  PetscCall(MatDestroy(&A));
  *pass = product_ok && cg_ok;
  return 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Options o;
  const int parsed = parse(argc, argv, rank, &o);
  if (parsed == 0 && 27.0 * (double)o.nx * (double)o.nx * (double)o.nx > (double)PETSC_MAX_INT) {
    if (rank == 0)
      fprintf(stderr,
              "petsc_hpcg27: --nx %ld: %.0f nonzeros do not fit this PETSc's indices (at most %.0f)\n", o.nx,
              27.0 * (double)o.nx * o.nx * o.nx, (double)PETSC_MAX_INT);
    MPI_Finalize();
    return 2;
  }
  if (parsed == 0 && o.nx * o.nx * o.nx < size) {
    if (rank == 0)
      fprintf(stderr, "petsc_hpcg27: --nx %ld: %ld rows for %d ranks (every rank needs one)\n", o.nx,
              o.nx * o.nx * o.nx, size);
    MPI_Finalize();
    return 2;
  }
  if (parsed != 0) {
    MPI_Finalize();
    return parsed == 1 ? 0 : 2;
  }
  int pass = 0;
  PetscErrorCode ierr = PetscInitializeNoArguments();
  if (!ierr) ierr = run(&o, size, &pass);
  if (!ierr) ierr = PetscFinalize();
  if (ierr) MPI_Abort(MPI_COMM_WORLD, 3);
  MPI_Finalize();
  return pass ? 0 : 1;
}
