#pragma once
// spmv: hybrid MPI + threads sparse matrix-vector product y = A x with
// communication overlap (the APSM paper's spMVM, GHOST's vector / overlap /
// task modes), plus a one-sided mode on the locus core, and unpreconditioned
// CG on top (HPCG's main loop without the multigrid).
//
// Rows are distributed in contiguous blocks. Each rank stores its rows as
// two CSR parts (GHOST's split storage): the local part, whose columns are
// rows this rank owns, and the remote part, whose columns are halo entries
// of x appended after the owned part. Every mode computes the local part,
// then adds the remote part row by row, so y is bitwise the same in every
// mode for a fixed rank and thread count.
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "locus/app.hpp"
#include "locus/kokkos.hpp"
#include "locus/profile.hpp"
#include "locus/segment.hpp"
#include "locus/staging.hpp"

namespace spmv {

using gidx = std::int64_t;

// Vectors the products read and write live in the apps' memory space
// (locus::MemSpace: the host's on a host build, the device's on a device
// build); the products and CG's vector kernels run in locus::ExecSpace.
// Pointers named "in the memory space" below point there.
using Vector = Kokkos::View<double*, locus::MemSpace>;
// n doubles from host memory into the memory space, and back (on a host
// build, plain copies). Both complete on return.
void copy_to_space(double* space, const double* host, gidx n);
void copy_to_host(double* host, const double* space, gidx n);
// n values from `from` to `to`, both in the memory space.
void copy_in_space(double* to, const double* from, gidx n);
// n values of the memory space readable on the host: `space` itself on a
// host build, else a copy kept in `keep`.
const double* host_readable(const double* space, gidx n, std::vector<double>& keep);

locus::AppInfo app_info();
int run(locus::Context& ctx);

// ---- matrices

// A rank's rows in CSR with global column indices (sorted, unique per row).
struct RowBlock {
  gidx n = 0;      // global rows = columns
  gidx first = 0;  // first global row held here
  std::vector<gidx> ptr{0};
  std::vector<gidx> col;
  std::vector<double> val;
  gidx rows() const { return static_cast<gidx>(ptr.size()) - 1; }
  gidx nnz() const { return static_cast<gidx>(col.size()); }
};

// What the input says about itself (Matrix Market banner, or the generator).
struct MatrixInfo {
  std::string source;      // file path or generator description
  std::string format;      // coordinate | array | generator
  std::string field;       // real | integer | pattern
  std::string symmetry;    // general | symmetric | skew-symmetric
  gidx entries = 0;        // entries announced in the file (before expansion)
  bool symmetric = false;  // known symmetric (banner or generator)
  double load_seconds = 0;
  double file_bytes = 0;
};

struct ReadOptions {
  bool allow_nonfinite = false;  // NaN / inf values accepted
  // Called collectively once the header is read (rows, entries announced,
  // symmetric expansion), before any entry is stored: the caller's
  // memory check.
  std::function<void(gidx rows, gidx entries, bool expands)> before_entries;
};

// Collective: reads a Matrix Market file in parallel (each rank parses a
// byte range of the file; entries are sent to the owners of their rows, so
// no rank holds the whole matrix). Returns rows in equal-row blocks.
// Throws CollectiveError "file:LINE: what is wrong" on every rank.
RowBlock read_matrix_market(MPI_Comm comm, const std::string& path, const ReadOptions& opt, MatrixInfo& info);

struct GeneratorSpec {
  std::string kind;  // laplace2d | laplace3d | hpcg27 | banded
  gidx nx = 0, ny = 0, nz = 0;
  gidx n = 0;          // banded: rows
  gidx bandwidth = 0;  // banded: columns within +- bandwidth of the diagonal
  gidx per_row = 0;    // banded: nonzeros per row (diagonal included)
  std::uint64_t seed = 0;
};
// Collective: builds the rows of an equal-row block partition; every entry
// depends on its row only, so the matrix is the same for every rank count.
RowBlock generate(MPI_Comm comm, const GeneratorSpec& g, MatrixInfo& info);

// First row of every rank (size ranks + 1) for equal rows or equal
// nonzeros (a rank may get no rows when one row holds many nonzeros).
std::vector<gidx> partition(MPI_Comm comm, const RowBlock& rows, bool by_nonzeros);
// The rank whose rows of the partition `starts` hold `row`.
int owner_of(const std::vector<gidx>& starts, gidx row);
// Collective: moves rows to the partition `starts`.
RowBlock redistribute(MPI_Comm comm, const RowBlock& rows, const std::vector<gidx>& starts);

// ---- the distributed operator

enum class Mode { vector, overlap, task, thread, rma };
Mode parse_mode(const std::string& s);
std::string mode_name(Mode m);

struct HaloStats {
  int neighbours = 0;     // ranks I receive x entries from
  gidx halo_entries = 0;  // x entries I receive per product
  gidx send_entries = 0;  // x entries I send per product
  int readers = 0;        // ranks I send to
};

// Per-rank time (seconds) spent in the phases of the products so far.
struct ModeTimes {
  double local = 0, remote = 0, post = 0, wait = 0, total = 0;
  // task mode: how long the compute threads waited for the communication
  // thread after the local part (wait is the communication thread's own)
  double comm_wait = 0;
  long products = 0;
};

class Operator {
 public:
  // Collective over the team's ranks. Takes the rows of this rank (already
  // in their final partition `starts`) and builds the split storage, the
  // halo plan (wish lists exchanged explicitly) and, for rma, the transfer
  // plan and the notification flags.
  Operator(locus::Team& team, RowBlock rows, const std::vector<gidx>& starts, Mode mode, int threads);
  // Collective: an operator in `mode` over the matrix of `like`, whose
  // split storage it shares (not copied; x and the mode's communication
  // are its own). The benchmark runs every mode on the same memory.
  Operator(const Operator& like, Mode mode);
  ~Operator();
  Operator(const Operator&) = delete;
  Operator& operator=(const Operator&) = delete;

  gidx rows() const { return nrows_; }
  gidx first() const { return first_; }
  gidx n() const { return n_; }
  gidx nnz() const { return nnz_local_ + nnz_remote_; }
  gidx nnz_local() const { return nnz_local_; }
  gidx nnz_remote() const { return nnz_remote_; }
  Mode mode() const { return mode_; }
  int threads() const { return threads_; }
  const HaloStats& halo() const { return halo_; }
  const ModeTimes& times() const { return times_; }
  void reset_times() { times_ = ModeTimes{}; }
  // max_i sum_j |a_ij| over this rank's rows
  double row_abs_max() const { return row_abs_max_; }

  // The owned part of x (rows() values, in the memory space). Write x
  // here before apply(); in rma mode the call first waits until every
  // reader has fetched the previous x.
  double* x();
  // x() filled from rows() values in host memory.
  void set_x(const double* host);
  // y = A x (y: rows() values in the memory space). Collective in the
  // sense that every rank must call it the same number of times.
  void apply(double* y);

  // The local part alone (y = A_local x_owned), for the bandwidth
  // measurement of the benchmark; and its traffic by the same model.
  // local_rows and remote_rows are the plain reference kernels (host
  // code on host copies).
  void apply_local(double* y) { compute_local(y); }
  double local_model_bytes() const;

  // Bytes moved per product by the traffic model: 12 B per nonzero (value
  // and 32-bit column index), 8 B per row pointer, x (owned + halo) read
  // once, y written once.
  double model_bytes() const;

 private:
  // the constructor's steps
  void exchange_wish_lists(const std::vector<gidx>& halo, const std::vector<gidx>& starts);
  void split_storage(const RowBlock& rows, std::vector<gidx> halo, const std::vector<gidx>& starts);
  void allocate_x(gidx nhalo);
  void build_rma_plan();
  void set_up_mode();  // x and the mode's state (both constructors end here)

  void local_rows(const double* x, double* y, gidx r0, gidx r1) const;
  void remote_rows(const double* x, double* y, gidx k0, gidx k1) const;
  void compute_local(double* y);
  void compute_remote(double* y);
  bool openmp_threads() const;
  void check_against_reference(const double* y);
  void post_exchange(std::vector<MPI_Request>& reqs);
  void apply_two_sided(double* y);
  void apply_task(double* y);
  void apply_rma(double* y);

  locus::Team& team_;
  Mode mode_;
  int threads_ = 1;
  gidx n_ = 0, first_ = 0, nrows_ = 0;
  gidx nnz_local_ = 0, nnz_remote_ = 0;
  double row_abs_max_ = 0;
  // the split storage (operators made from another share it)
  struct Matrix;
  std::shared_ptr<const Matrix> a_;
  // x: owned part then halo, in a locus segment (rma reads it in place);
  // on the staging path (comm.staging, and always on a device build) in
  // a View of the memory space instead, which only kernels and copies
  // touch
  locus::Array<double> xseg_;
  Vector xview_;
  double* xext_ = nullptr;
  // staging: send_idx_'s entries packed, in the app's space and a host
  // segment; the halo part as received, in a host segment; send_idx_ in
  // the memory space for the pack kernel
  bool staged_ = false;
  locus::StagingBuffer<double, locus::MemSpace> stage_send_;
  Kokkos::View<const std::int32_t*, locus::MemSpace> send_idx_space_;
  locus::Array<double> stage_recv_;
  void stage_pack();
  void stage_unpack();
  // two-sided halo: receive from owners, send to readers
  std::vector<int> recv_rank_, send_rank_;
  std::vector<gidx> recv_off_, recv_cnt_;  // into the halo part
  std::vector<gidx> send_off_;             // into send_idx_, size readers+1
  std::vector<std::int32_t> send_idx_;     // owned rows to pack
  std::vector<double> send_buf_;
  // rma: the plan and the flags (per unit: ready[P], done[P])
  struct RmaState;
  std::unique_ptr<RmaState> rma_;
  struct TaskThread;
  std::unique_ptr<TaskThread> task_;
  void task_loop();
  HaloStats halo_;
  ModeTimes times_;
  bool checked_ = false;

 public:
  // True once the first product matched the reference kernels bitwise.
  bool kernel_checked() const { return checked_; }
  // Where the products run: the Kokkos execution space, or "OpenMP" (a
  // one-thread host Kokkos with spmv.threads > 1).
  std::string kernel_space() const;
  // Which local-product kernel runs: the portable one or the host's AVX2
  // refinement (chosen at run time).
  static std::string local_kernel();
};

// Deterministic pseudo-random value in [0, 1) from (seed, index): vectors
// filled with it are the same for every rank count.
double hash_uniform(std::uint64_t seed, std::uint64_t index);

}  // namespace spmv
