// The distributed operator: split storage, the halo plan, and the five
// ways of running y = A x.
#include <mpi.h>
#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDA_ARCH__)
#include <immintrin.h>  // the AVX2 host refinement (LOCUS_HOST_AVX2)
#endif

#include "locus/collective.hpp"
#include "locus/counts.hpp"
#include "locus/error.hpp"
#include "locus/kokkos.hpp"
#include "locus/plan.hpp"
#include "locus/rma.hpp"
#include "locus/wait.hpp"
#include "spmv.hpp"

namespace spmv {

Mode parse_mode(const std::string& s) {
  if (s == "vector") return Mode::vector;
  if (s == "overlap") return Mode::overlap;
  if (s == "task") return Mode::task;
  if (s == "thread") return Mode::thread;
  if (s == "rma") return Mode::rma;
  throw locus::Error("spmv: unknown mode " + s);
}

std::string mode_name(Mode m) {
  switch (m) {
    case Mode::vector:
      return "vector";
    case Mode::overlap:
      return "overlap";
    case Mode::task:
      return "task";
    case Mode::thread:
      return "thread";
    case Mode::rma:
      return "rma";
  }
  return "?";
}

struct Operator::RmaState {
  locus::Array<std::uint64_t> flags;  // per unit: ready[P] then done[P]
  locus::GetPlan<double> plan;
  std::uint64_t step = 0;
  int size = 0;
};

// The communication thread of task mode: sleeps until a product starts,
// posts the exchange, drives it to completion (testing, then sleeping
// briefly, so that it leaves the core to the workers), and says so.
struct Operator::TaskThread {
  std::mutex m;
  std::condition_variable cv;
  std::uint64_t started = 0;  // products handed to the thread (under m)
  std::atomic<std::uint64_t> finished{0};
  bool stop = false;
  double post = 0, wait = 0;  // of the last product (read after finished)
  std::thread thread;
};

// The split storage, built once from the rows: the local part (all rows,
// columns < rows) and the remote part (only rows with halo entries; its
// columns index x after the owned part), the thread ranges by nonzeros
// over both, and what the rma plan is built from. The arrays are host
// vectors (the reference kernels and the traffic model read them); the
// kernels read them through `space`, views of the memory space: on a
// host build the same memory, on a device build copies.
struct Operator::Matrix {
  std::vector<gidx> lptr;
  std::vector<std::int32_t> lcol;
  std::vector<double> lval;
  std::vector<gidx> rrow, rptr;
  std::vector<std::int32_t> rcol;
  std::vector<double> rval;
  std::vector<gidx> lsplit, rsplit;
  std::vector<gidx> halo;    // the global columns of the halo, ascending
  std::vector<gidx> starts;  // the partition: first row of every rank
  template <class T>
  using SpaceView = Kokkos::View<const T*, locus::MemSpace>;
  struct {
    SpaceView<gidx> lptr, rrow, rptr;
    SpaceView<std::int32_t> lcol, rcol;
    SpaceView<double> lval, rval;
  } space;
  void to_space();
};

namespace {

// A host vector as seen by the kernels: the vector itself where the
// memory space is the host's, else a copy in the memory space.
template <class T>
Kokkos::View<const T*, locus::MemSpace> in_space(const std::vector<T>& v, const char* label) {
  if constexpr (!locus::kDeviceBuild) {
    return Kokkos::View<const T*, locus::MemSpace>(v.data(), v.size());
  } else {
    Kokkos::View<T*, locus::MemSpace> d(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)),
                                        v.size());
    Kokkos::deep_copy(d, Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                             v.data(), v.size()));
    return d;
  }
}

template <class T>
using HostUnmanaged = Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
template <class T>
using SpaceUnmanaged = Kokkos::View<T*, locus::MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

}  // namespace

void Operator::Matrix::to_space() {
  space.lptr = in_space(lptr, "spmv::lptr");
  space.lcol = in_space(lcol, "spmv::lcol");
  space.lval = in_space(lval, "spmv::lval");
  space.rrow = in_space(rrow, "spmv::rrow");
  space.rptr = in_space(rptr, "spmv::rptr");
  space.rcol = in_space(rcol, "spmv::rcol");
  space.rval = in_space(rval, "spmv::rval");
}

void copy_to_space(double* space, const double* host, gidx n) {
  const auto count = static_cast<std::size_t>(n);
  if (count > 0 && space != host)
    Kokkos::deep_copy(SpaceUnmanaged<double>(space, count), HostUnmanaged<const double>(host, count));
}

void copy_to_host(double* host, const double* space, gidx n) {
  const auto count = static_cast<std::size_t>(n);
  if (count > 0 && space != host)
    Kokkos::deep_copy(HostUnmanaged<double>(host, count), SpaceUnmanaged<const double>(space, count));
}

void copy_in_space(double* to, const double* from, gidx n) {
  const auto count = static_cast<std::size_t>(n);
  if (count > 0 && to != from)
    Kokkos::deep_copy(SpaceUnmanaged<double>(to, count), SpaceUnmanaged<const double>(from, count));
}

const double* host_readable(const double* space, gidx n, std::vector<double>& keep) {
  if constexpr (!locus::kDeviceBuild) return space;
  keep.resize(static_cast<std::size_t>(n));
  copy_to_host(keep.data(), space, n);
  return keep.data();
}

namespace {

constexpr int kTag = 7301;

// Splits [0, count) into `parts` ranges of about equal nonzeros by `ptr`.
std::vector<gidx> split_by_nonzeros(const std::vector<gidx>& ptr, gidx count, int parts) {
  std::vector<gidx> s(static_cast<std::size_t>(parts) + 1, count);
  s[0] = 0;
  const gidx total = ptr[count] - ptr[0];
  for (int t = 1; t < parts; ++t) {
    const gidx target = ptr[0] + static_cast<gidx>(static_cast<__int128>(total) * t / parts);
    s[t] = std::lower_bound(ptr.begin(), ptr.begin() + count, target) - ptr.begin();
    s[t] = std::max(s[t], s[t - 1]);
  }
  return s;
}

// The x entries a rank needs from others: distinct columns outside its
// rows [first, first + count), ascending (so grouped by owner, owners
// ascending).
std::vector<gidx> halo_columns(const RowBlock& rows, gidx first, gidx count) {
  std::vector<gidx> halo;
  for (gidx c : rows.col)
    if (c < first || c >= first + count) halo.push_back(c);
  std::sort(halo.begin(), halo.end());
  halo.erase(std::unique(halo.begin(), halo.end()), halo.end());
  return halo;
}

}  // namespace

Operator::Operator(locus::Team& team, RowBlock rows, const std::vector<gidx>& starts, Mode mode, int threads)
    : team_(team), mode_(mode), threads_(std::max(1, threads)) {
  MPI_Comm comm = team.comm();
  const int me = team.rank();
  n_ = rows.n;
  first_ = rows.first;
  nrows_ = rows.rows();

  std::vector<gidx> halo = halo_columns(rows, first_, nrows_);
  const gidx nhalo = static_cast<gidx>(halo.size());
  locus::collective_require(
      comm, nrows_ + nhalo < INT_MAX,
      "spmv: rank " + std::to_string(me) + " would hold " + std::to_string(nrows_ + nhalo) +
          " entries of x (owned + halo), more than 32-bit local indices address; use more ranks");
  exchange_wish_lists(halo, starts);
  split_storage(rows, std::move(halo), starts);
  rows = RowBlock{};  // the assembled copy is no longer needed
  set_up_mode();
}

// Everything but the matrix is the operator's own: the exchange lists are
// copied (small), x and the mode's state are made anew.
Operator::Operator(const Operator& like, Mode mode)
    : team_(like.team_),
      mode_(mode),
      threads_(like.threads_),
      n_(like.n_),
      first_(like.first_),
      nrows_(like.nrows_),
      nnz_local_(like.nnz_local_),
      nnz_remote_(like.nnz_remote_),
      row_abs_max_(like.row_abs_max_),
      a_(like.a_),
      recv_rank_(like.recv_rank_),
      send_rank_(like.send_rank_),
      recv_off_(like.recv_off_),
      recv_cnt_(like.recv_cnt_),
      send_off_(like.send_off_),
      send_idx_(like.send_idx_),
      send_buf_(like.send_buf_.size()),
      halo_(like.halo_) {
  set_up_mode();
}

// x, then what the mode needs: the rma plan and flags, task's thread.
void Operator::set_up_mode() {
  allocate_x(static_cast<gidx>(a_->halo.size()));
  if (mode_ == Mode::rma) build_rma_plan();
  if (mode_ == Mode::task) {
    locus::require_thread_level(MPI_THREAD_MULTIPLE, "spmv.mode: task");
    task_ = std::make_unique<TaskThread>();
    task_->thread = std::thread([this] { task_loop(); });
  }
  locus::barrier(team_);  // flags zeroed everywhere before anyone notifies
}

// Wish lists: how many entries I want from each owner, then which; the
// owners keep what they are asked for (send lists).
void Operator::exchange_wish_lists(const std::vector<gidx>& halo, const std::vector<gidx>& starts) {
  MPI_Comm comm = team_.comm();
  const int p = team_.size();
  std::vector<int> want(p, 0), give(p, 0);
  for (gidx c : halo) ++want[owner_of(starts, c)];
  locus::yielding::alltoall(want.data(), 1, MPI_INT, give.data(), 1, MPI_INT, comm);
  std::vector<int> sdisp(p, 0), rdisp(p, 0);
  for (int q = 1; q < p; ++q) {
    sdisp[q] = sdisp[q - 1] + want[q - 1];
    rdisp[q] = rdisp[q - 1] + give[q - 1];
  }
  std::vector<gidx> asked(static_cast<std::size_t>(rdisp[p - 1] + give[p - 1]));
  locus::alltoallv(halo.data(), want.data(), sdisp.data(), asked.data(), give.data(), rdisp.data(),
                   MPI_INT64_T, comm);
  for (int q = 0; q < p; ++q) {
    if (want[q] > 0) {
      recv_rank_.push_back(q);
      recv_off_.push_back(sdisp[q]);
      recv_cnt_.push_back(want[q]);
    }
  }
  send_off_.push_back(0);
  for (int q = 0; q < p; ++q) {
    if (give[q] == 0) continue;
    send_rank_.push_back(q);
    for (int k = 0; k < give[q]; ++k) {
      const gidx g = asked[static_cast<std::size_t>(rdisp[q] + k)];
      if (g < first_ || g >= first_ + nrows_)
        throw locus::Error("spmv: a wish list names a row I do not own");
      send_idx_.push_back(static_cast<std::int32_t>(g - first_));
    }
    send_off_.push_back(static_cast<gidx>(send_idx_.size()));
  }
  send_buf_.resize(send_idx_.size());
  halo_.neighbours = static_cast<int>(recv_rank_.size());
  halo_.readers = static_cast<int>(send_rank_.size());
  halo_.halo_entries = static_cast<gidx>(halo.size());
  halo_.send_entries = static_cast<gidx>(send_idx_.size());
}

// Split storage: the local part (my columns) of every row, the remote part
// (halo columns, indexing x after the owned part) of the rows that have one.
void Operator::split_storage(const RowBlock& rows, std::vector<gidx> halo, const std::vector<gidx>& starts) {
  auto a = std::make_shared<Matrix>();
  a->lptr.assign(static_cast<std::size_t>(nrows_) + 1, 0);
  a->rptr.push_back(0);
  for (gidx r = 0; r < nrows_; ++r) {
    bool has_remote = false;
    double abs_sum = 0;
    for (gidx k = rows.ptr[r]; k < rows.ptr[r + 1]; ++k) {
      const gidx c = rows.col[k];
      abs_sum += std::fabs(rows.val[k]);
      if (c >= first_ && c < first_ + nrows_) {
        a->lcol.push_back(static_cast<std::int32_t>(c - first_));
        a->lval.push_back(rows.val[k]);
      } else {
        const gidx pos = std::lower_bound(halo.begin(), halo.end(), c) - halo.begin();
        a->rcol.push_back(static_cast<std::int32_t>(nrows_ + pos));
        a->rval.push_back(rows.val[k]);
        has_remote = true;
      }
    }
    row_abs_max_ = std::max(row_abs_max_, abs_sum);
    a->lptr[r + 1] = static_cast<gidx>(a->lcol.size());
    if (has_remote) {
      a->rrow.push_back(r);
      a->rptr.push_back(static_cast<gidx>(a->rcol.size()));
    }
  }
  nnz_local_ = static_cast<gidx>(a->lcol.size());
  nnz_remote_ = static_cast<gidx>(a->rcol.size());
  a->lsplit = split_by_nonzeros(a->lptr, nrows_, threads_);
  a->rsplit = split_by_nonzeros(a->rptr, static_cast<gidx>(a->rrow.size()), threads_);
  a->halo = std::move(halo);
  a->starts = starts;
  a->to_space();
  a_ = std::move(a);
}

// x lives in a segment: owned part, then the halo. On the staging path
// it lives in the memory space instead, out of the core's reach: its
// entries travel packed, through host segments.
void Operator::allocate_x(gidx nhalo) {
  staged_ = locus::staging_active<locus::MemSpace>();
  const auto xsize = static_cast<std::size_t>(nrows_ + nhalo);
  if (staged_) {
    xview_ = Vector("spmv::x", xsize);  // zeroed
    xext_ = xview_.data();
    stage_send_ = locus::StagingBuffer<double, locus::MemSpace>(team_, send_idx_.size(), "spmv::stage_send");
    stage_recv_ = locus::Array<double>(team_, static_cast<std::size_t>(nhalo));
    send_idx_space_ = in_space(send_idx_, "spmv::send_idx");
  } else {
    xseg_ = locus::Array<double>(team_, xsize);
    xext_ = xseg_.data();
    std::fill(xext_, xext_ + xsize, 0.0);
  }
}

// rma: the notification flags and one get plan from the owners' x (index
// lists), or from their packed buffers on the staging path.
void Operator::build_rma_plan() {
  const std::vector<gidx>&halo = a_->halo, &starts = a_->starts;
  MPI_Comm comm = team_.comm();
  const int p = team_.size();
  rma_ = std::make_unique<RmaState>();
  rma_->size = p;
  rma_->flags = locus::Array<std::uint64_t>(team_, 2 * static_cast<std::size_t>(p));
  std::fill(rma_->flags.data(), rma_->flags.data() + 2 * p, 0);
  // Staged: where my entries start in every owner's packed buffer.
  std::vector<gidx> offer(static_cast<std::size_t>(p), -1), packed_at(static_cast<std::size_t>(p), -1);
  if (staged_) {
    for (std::size_t i = 0; i < send_rank_.size(); ++i) offer[send_rank_[i]] = send_off_[i];
    locus::yielding::alltoall(offer.data(), 1, MPI_INT64_T, packed_at.data(), 1, MPI_INT64_T, comm);
  }
  std::vector<locus::PlanEntry> entries;
  for (std::size_t i = 0; i < recv_rank_.size(); ++i) {
    const int q = recv_rank_[i];
    if (staged_) {
      entries.push_back(locus::PlanEntry{q,
                                         locus::Side::contiguous(static_cast<std::size_t>(recv_off_[i]),
                                                                 static_cast<std::size_t>(recv_cnt_[i])),
                                         locus::Side::contiguous(static_cast<std::size_t>(packed_at[q]),
                                                                 static_cast<std::size_t>(recv_cnt_[i]))});
      continue;
    }
    std::vector<std::size_t> idx(static_cast<std::size_t>(recv_cnt_[i]));
    for (gidx k = 0; k < recv_cnt_[i]; ++k)
      idx[static_cast<std::size_t>(k)] = static_cast<std::size_t>(halo[recv_off_[i] + k] - starts[q]);
    locus::PlanEntry e;
    e.unit = q;
    e.remote = locus::Side::indexed(0, std::move(idx));
    e.local = locus::Side::contiguous(static_cast<std::size_t>(nrows_ + recv_off_[i]),
                                      static_cast<std::size_t>(recv_cnt_[i]));
    entries.push_back(std::move(e));
  }
  // Owners on other nodes may send their x as messages (comm.remote): no
  // flags for those pairs.
  rma_->plan = locus::GetPlan<double>(staged_ ? stage_send_.gptr() : xseg_.gptr(), std::move(entries),
                                      locus::Route::automatic, locus::RemoteMode::deck);
}

Operator::~Operator() {
  if (task_) {
    {
      std::lock_guard<std::mutex> lock(task_->m);
      task_->stop = true;
    }
    task_->cv.notify_one();
    task_->thread.join();
  }
}

double Operator::model_bytes() const {
  const double nnz = static_cast<double>(nnz_local_ + nnz_remote_);
  const double rows = static_cast<double>(nrows_), halo = static_cast<double>(halo_.halo_entries);
  const double rrows = static_cast<double>(a_->rrow.size());
  // values + 32-bit indices, row pointers, x owned + halo, y written; the
  // remote part re-reads and re-writes y on its rows and reads its row list
  return 12.0 * nnz + 8.0 * (rows + 1) + 8.0 * (rows + halo) + 8.0 * rows + rrows * (8.0 + 8.0 + 16.0);
}

double Operator::local_model_bytes() const {
  const double rows = static_cast<double>(nrows_);
  return 12.0 * static_cast<double>(nnz_local_) + 8.0 * (rows + 1) + 8.0 * rows + 8.0 * rows;
}

double* Operator::x() {
  if (rma_) {
    // Readers fetch my owned x during their apply(step); they say so with
    // done[me] = step. Wait for all of them before x changes.
    const std::uint64_t* done = rma_->flags.data() + rma_->size;
    for (int q : send_rank_)
      if (!rma_->plan.message(q)) locus::wait_notify(done + q, rma_->step);
  }
  return xext_;
}

void Operator::set_x(const double* host) {
  copy_to_space(x(), host, nrows_);
}

void Operator::local_rows(const double* x, double* y, gidx r0, gidx r1) const {
  const gidx* ptr = a_->lptr.data();
  const std::int32_t* col = a_->lcol.data();
  const double* val = a_->lval.data();
  // Four partial sums per row: a single chain of dependent adds makes a
  // 27-entry row latency-bound (4 cycles per add) instead of memory-bound.
  // The order is fixed by the row alone, so y is the same in every mode.
  for (gidx i = r0; i < r1; ++i) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    gidx k = ptr[i];
    const gidx e = ptr[i + 1];
    for (; k + 3 < e; k += 4) {
      s0 += val[k] * x[col[k]];
      s1 += val[k + 1] * x[col[k + 1]];
      s2 += val[k + 2] * x[col[k + 2]];
      s3 += val[k + 3] * x[col[k + 3]];
    }
    for (; k < e; ++k) s0 += val[k] * x[col[k]];
    y[i] = (s0 + s1) + (s2 + s3);
  }
}

void Operator::remote_rows(const double* x, double* y, gidx k0, gidx k1) const {
  for (gidx kk = k0; kk < k1; ++kk) {
    double s = 0;
    for (gidx k = a_->rptr[kk]; k < a_->rptr[kk + 1]; ++k) s += a_->rval[k] * x[a_->rcol[k]];
    y[a_->rrow[kk]] += s;
  }
}

namespace {

// Rows [r0, r1) of the local product, the reference's arithmetic (lane l
// of the four partial sums takes entries ptr[i] + l, + 4, ...; the tail
// goes to lane 0; the fold is (s0 + s1) + (s2 + s3); multiply then add,
// no contraction), so y is bitwise local_rows' y. One source for every
// execution space: four scalar partial sums, x gathered by four loads.
// The value and index streams are prefetched kPrefetch entries ahead on
// host compilers (LOCUS_PREFETCH): the hardware prefetcher alone keeps too
// few lines in flight for one core to reach its bandwidth (measured: 0.52
// -> 0.65 of the model's roofline on the HPCG matrix).
[[maybe_unused]] constexpr gidx kPrefetch = 512;  // (device code does not prefetch)

KOKKOS_FORCEINLINE_FUNCTION void local_range_body(const gidx* __restrict ptr,
                                                  const std::int32_t* __restrict col,
                                                  const double* __restrict val, const double* __restrict x,
                                                  double* __restrict y, gidx r0, gidx r1) {
  for (gidx i = r0; i < r1; ++i) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    gidx k = ptr[i];
    const gidx e = ptr[i + 1];
    for (gidx q = k; q < e; q += 8) LOCUS_PREFETCH(val + q + kPrefetch, 0);
    for (gidx q = k; q < e; q += 16) LOCUS_PREFETCH(col + q + kPrefetch, 0);
    for (; k + 3 < e; k += 4) {
      s0 += val[k] * x[col[k]];
      s1 += val[k + 1] * x[col[k + 1]];
      s2 += val[k + 2] * x[col[k + 2]];
      s3 += val[k + 3] * x[col[k + 3]];
    }
    for (; k < e; ++k) s0 += val[k] * x[col[k]];
    y[i] = (s0 + s1) + (s2 + s3);
  }
}

#if LOCUS_HOST_AVX2
// The host refinement, chosen at run time where the CPU has AVX2
// (locus::cpu; LOCUS_CPU_HIDE=avx2 hides it) and the kernels run on the
// host. A row's four partial sums are the four lanes of one vector: lane
// l takes entries ptr[i] + l, + 4, ... (multiply, then add; x gathered by
// four scalar loads, not vgatherdpd, which microcode makes slow on some
// Intel parts), the tail goes to lane 0, the fold is (s0 + s1) + (s2 +
// s3): local_range_body's arithmetic, so the same bits. Two rows advance
// together, two independent vector chains of adds. Intel Xeon (model 207,
// no RTM), one rank, ./locus bench spmv's local part alone, 3 interleaved
// runs against local_range_body compiled for AVX2: HPCG 27-point 20^3
// rows 124-181 -> 96-104 us (in cache); at 128^3 (out of cache, bound by
// the lines one core keeps in flight) no gain beyond the noise.
LOCUS_TARGET_AVX2 inline __m256d quad_product(const std::int32_t* col, const double* val, const double* x,
                                              gidx k) {
  return _mm256_mul_pd(_mm256_loadu_pd(val + k),
                       _mm256_set_pd(x[col[k + 3]], x[col[k + 2]], x[col[k + 1]], x[col[k]]));
}

// Lane 0 plus the row's tail, folded with lanes 1-3.
LOCUS_TARGET_AVX2 inline double fold_row(__m256d s, const std::int32_t* col, const double* val,
                                         const double* x, gidx k, gidx e) {
  alignas(32) double lane[4];
  _mm256_store_pd(lane, s);
  for (; k < e; ++k) lane[0] += val[k] * x[col[k]];
  return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}

LOCUS_TARGET_AVX2 void local_range_avx2(const gidx* __restrict ptr, const std::int32_t* __restrict col,
                                        const double* __restrict val, const double* __restrict x,
                                        double* __restrict y, gidx r0, gidx r1) {
  gidx i = r0;
  for (; i + 1 < r1; i += 2) {
    gidx ka = ptr[i], kb = ptr[i + 1];
    const gidx ea = kb, eb = ptr[i + 2];
    for (gidx q = ka; q < eb; q += 8) LOCUS_PREFETCH(val + q + kPrefetch, 0);
    for (gidx q = ka; q < eb; q += 16) LOCUS_PREFETCH(col + q + kPrefetch, 0);
    __m256d a = _mm256_setzero_pd(), b = _mm256_setzero_pd();
    for (; ka + 3 < ea && kb + 3 < eb; ka += 4, kb += 4) {
      a = _mm256_add_pd(a, quad_product(col, val, x, ka));
      b = _mm256_add_pd(b, quad_product(col, val, x, kb));
    }
    for (; ka + 3 < ea; ka += 4) a = _mm256_add_pd(a, quad_product(col, val, x, ka));
    for (; kb + 3 < eb; kb += 4) b = _mm256_add_pd(b, quad_product(col, val, x, kb));
    y[i] = fold_row(a, col, val, x, ka, ea);
    y[i + 1] = fold_row(b, col, val, x, kb, eb);
  }
  if (i < r1) {
    gidx k = ptr[i];
    const gidx e = ptr[i + 1];
    __m256d a = _mm256_setzero_pd();
    for (; k + 3 < e; k += 4) a = _mm256_add_pd(a, quad_product(col, val, x, k));
    y[i] = fold_row(a, col, val, x, k, e);
  }
}
#endif

// Rows [r0, r1) with the compilation this process runs (avx2: chosen once
// per product from locus::cpu, never true in device code).
KOKKOS_INLINE_FUNCTION void local_range(const gidx* ptr, const std::int32_t* col, const double* val,
                                        const double* x, double* y, gidx r0, gidx r1, bool avx2) {
#if LOCUS_HOST_AVX2 && !defined(__CUDA_ARCH__)
  if (avx2) return local_range_avx2(ptr, col, val, x, y, r0, r1);
#endif
  (void)avx2;
  local_range_body(ptr, col, val, x, y, r0, r1);
}

// The Kokkos kernels of the product, the same arithmetic as the reference
// kernels above (local_rows, remote_rows), so y is bitwise the same
// whatever the execution space and thread count. The local product: a
// chunk of kRows rows per index.
struct LocalProduct {
  static constexpr gidx kRows = 256;
  const gidx* ptr;
  const std::int32_t* col;
  const double* val;
  const double* x;
  double* y;
  gidx rows;
  bool avx2;  // the host AVX2 refinement (locus::host_avx2(): host kernels, AVX2 not hidden)
  KOKKOS_INLINE_FUNCTION void operator()(gidx chunk) const {
    const gidx r0 = chunk * kRows;
    local_range(ptr, col, val, x, y, r0, r0 + kRows < rows ? r0 + kRows : rows, avx2);
  }
  gidx chunks() const { return (rows + kRows - 1) / kRows; }
};

// Remote rows are distinct, so the updates of y do not race.
struct RemoteProduct {
  const gidx* row;
  const gidx* ptr;
  const std::int32_t* col;
  const double* val;
  const double* x;
  double* y;
  KOKKOS_INLINE_FUNCTION void operator()(gidx kk) const {
    double s = 0;
    for (gidx k = ptr[kk]; k < ptr[kk + 1]; ++k) s += val[k] * x[col[k]];
    y[row[kk]] += s;
  }
};

struct Pack {
  const std::int32_t* idx;
  const double* x;
  double* buf;
  KOKKOS_INLINE_FUNCTION void operator()(gidx k) const { buf[k] = x[idx[k]]; }
};

}  // namespace

// The products run as Kokkos kernels in locus::ExecSpace on the matrix,
// x and y in locus::MemSpace (the device's on a device build). A host
// Kokkos whose execution space has one thread (Debian's Serial) cannot
// thread them, so spmv.threads > 1 then keeps OpenMP over row ranges of
// equal nonzeros (the same kernels, called per range).
bool Operator::openmp_threads() const {
  return locus::kHostExec && threads_ > 1 && locus::ExecSpace().concurrency() == 1;
}

void Operator::compute_local(double* y) {
  const auto& m = a_->space;
  const LocalProduct f{m.lptr.data(), m.lcol.data(), m.lval.data(), xext_, y, nrows_, locus::host_avx2()};
  if (openmp_threads()) {
#pragma omp parallel num_threads(threads_)
    {
      const int t = omp_get_thread_num();
      local_range(f.ptr, f.col, f.val, f.x, f.y, a_->lsplit[t], a_->lsplit[t + 1], f.avx2);
    }
    return;
  }
  Kokkos::parallel_for("spmv::local", locus::Range<gidx>(0, f.chunks()), f);
  Kokkos::fence();
}

void Operator::compute_remote(double* y) {
  const auto& m = a_->space;
  const RemoteProduct f{m.rrow.data(), m.rptr.data(), m.rcol.data(), m.rval.data(), xext_, y};
  const gidx nr = static_cast<gidx>(a_->rrow.size());
  if (openmp_threads()) {
#pragma omp parallel num_threads(threads_)
    {
      const int t = omp_get_thread_num();
      for (gidx kk = a_->rsplit[t]; kk < a_->rsplit[t + 1]; ++kk) f(kk);
    }
    return;
  }
  if (nr > 0) Kokkos::parallel_for("spmv::remote", locus::Range<gidx>(0, nr), f);
  Kokkos::fence();
}

std::string Operator::local_kernel() {
  if (locus::host_avx2())  // as compute_local (host_avx2 already asks kHostExec)
    return "AVX2 vectors, two rows at a time (host refinement, chosen at run time)";
  if constexpr (!locus::kHostExec) return "portable (the one source, compiled for the device)";
  return "portable (the one source, the build's baseline ISA)";
}

std::string Operator::kernel_space() const {
  return openmp_threads() ? "OpenMP" : locus::ExecSpace::name();
}

// The reference kernels run on the host, on host copies of x and y where
// these live in a device's memory.
void Operator::check_against_reference(const double* y_space) {
  const gidx nx = nrows_ + static_cast<gidx>(a_->halo.size());
  std::vector<double> ref(static_cast<std::size_t>(nrows_)), xh, yh;
  const double* x = host_readable(xext_, nx, xh);
  const double* y = host_readable(y_space, nrows_, yh);
  {
    locus::Region region("spmv::reference");
    local_rows(x, ref.data(), 0, nrows_);
    remote_rows(x, ref.data(), 0, static_cast<gidx>(a_->rrow.size()));
  }
  gidx differ = 0;
  for (gidx i = 0; i < nrows_; ++i) differ += std::memcmp(&ref[i], &y[i], sizeof(double)) != 0;
  if (differ)
    throw locus::Error("spmv: the product kernels differ from the reference kernels in " +
                       std::to_string(differ) + " of " + std::to_string(nrows_) +
                       " rows on the first product");
  checked_ = true;
}

// Staging (comm.staging): every reader's entries packed in the app's
// memory space, then copied into the host segment the transfers read.
// Called by the thread that runs the kernels (in task mode too, before the
// communication thread posts the messages).
void Operator::stage_pack() {
  const auto n = static_cast<gidx>(send_idx_.size());
  if (n > 0)
    Kokkos::parallel_for("spmv::stage_pack", locus::Range<gidx>(0, n),
                         Pack{send_idx_space_.data(), xext_, stage_send_.device()});
  Kokkos::fence();
  stage_send_.to_host();
}

// Staging: the received halo entries, copied from their host segment into
// the halo part of x (in received order: no unpack kernel needed).
void Operator::stage_unpack() {
  using HostView = Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const auto first = static_cast<std::size_t>(nrows_);
  Kokkos::deep_copy(Kokkos::subview(xview_, std::make_pair(first, first + stage_recv_.size())),
                    HostView(stage_recv_.data(), stage_recv_.size()));
}

void Operator::post_exchange(std::vector<MPI_Request>& reqs) {
  MPI_Comm comm = team_.comm();
  reqs.clear();
  double* halo = staged_ ? stage_recv_.data() : xext_ + nrows_;
  for (std::size_t i = 0; i < recv_rank_.size(); ++i) {
    reqs.emplace_back();
    MPI_Irecv(halo + recv_off_[i], static_cast<int>(recv_cnt_[i]), MPI_DOUBLE, recv_rank_[i], kTag, comm,
              &reqs.back());
  }
  const double* packed = staged_ ? stage_send_.host() : send_buf_.data();
  for (std::size_t i = 0; i < send_rank_.size(); ++i) {
    const gidx b = send_off_[i], e = send_off_[i + 1];
    if (!staged_) {
      if (e > b)
        Kokkos::parallel_for("spmv::pack", locus::HostRange<gidx>(b, e),
                             Pack{send_idx_.data(), xext_, send_buf_.data()});
      Kokkos::fence();
    }
    reqs.emplace_back();
    MPI_Isend(packed + b, static_cast<int>(e - b), MPI_DOUBLE, send_rank_[i], kTag, comm, &reqs.back());
    // counted (counts.hpp) at the sender: one message, its entries' bytes
    locus::count(locus::Count::messages, 1);
    locus::count_bytes(team_.same_node(send_rank_[i]), static_cast<std::uint64_t>(e - b) * sizeof(double));
  }
}

void Operator::apply_two_sided(double* y) {
  std::vector<MPI_Request> reqs;
  double t0 = MPI_Wtime();
  if (staged_) stage_pack();
  post_exchange(reqs);
  double t1 = MPI_Wtime();
  times_.post += t1 - t0;
  if (mode_ == Mode::vector) {
    locus::wait_all_yielding(reqs);
    if (staged_) stage_unpack();
    double t2 = MPI_Wtime();
    times_.wait += t2 - t1;
    compute_local(y);
    double t3 = MPI_Wtime();
    times_.local += t3 - t2;
    compute_remote(y);
    times_.remote += MPI_Wtime() - t3;
    return;
  }
  std::vector<locus::Handle> handles;
  if (mode_ == Mode::thread) {
    // APSM: the progress thread drives the requests while we compute
    handles.reserve(reqs.size());
    for (MPI_Request r : reqs) handles.push_back(locus::adopt(r));
    const double t1b = MPI_Wtime();
    times_.post += t1b - t1;
    t1 = t1b;
  }
  compute_local(y);
  double t2 = MPI_Wtime();
  times_.local += t2 - t1;
  if (mode_ == Mode::thread)
    locus::wait_all(handles);
  else
    locus::wait_all_yielding(reqs);
  if (staged_) stage_unpack();
  double t3 = MPI_Wtime();
  times_.wait += t3 - t2;
  compute_remote(y);
  times_.remote += MPI_Wtime() - t3;
}

void Operator::task_loop() {
  TaskThread& tt = *task_;
  std::uint64_t seen = 0;
  std::vector<MPI_Request> reqs;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(tt.m);
      tt.cv.wait(lock, [&] { return tt.stop || tt.started > seen; });
      if (tt.stop) return;
      seen = tt.started;
    }
    const double t0 = MPI_Wtime();
    post_exchange(reqs);
    const double t1 = MPI_Wtime();
    int flag = 0;
    for (int spins = 0;; ++spins) {
      MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &flag, MPI_STATUSES_IGNORE);
      if (flag) break;
      if (spins < 8)
        sched_yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    tt.post = t1 - t0;
    tt.wait = MPI_Wtime() - t1;
    tt.finished.store(seen, std::memory_order_release);
  }
}

void Operator::apply_task(double* y) {
  // Explicit overlap: the communication thread runs the exchange while the
  // compute threads do the local part; then the remote part.
  TaskThread& tt = *task_;
  if (staged_) stage_pack();
  std::uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(tt.m);
    ticket = ++tt.started;
  }
  tt.cv.notify_one();
  const double t0 = MPI_Wtime();
  compute_local(y);
  const double t1 = MPI_Wtime();
  while (tt.finished.load(std::memory_order_acquire) < ticket) sched_yield();
  if (staged_) stage_unpack();
  const double t2 = MPI_Wtime();
  compute_remote(y);
  times_.local += t1 - t0;
  times_.post += tt.post;
  times_.wait += tt.wait;
  times_.comm_wait += t2 - t1;
  times_.remote += MPI_Wtime() - t2;
}

void Operator::apply_rma(double* y) {
  RmaState& s = *rma_;
  const int me = team_.rank();
  const double t0 = MPI_Wtime();
  if (staged_) {
    // My readers fetched the previous packed entries before I repack (a
    // message pair's send completed in the last wait()).
    const std::uint64_t* done = s.flags.data() + s.size;
    for (int q : send_rank_)
      if (!s.plan.message(q)) locus::wait_notify(done + q, s.step);
    stage_pack();
  }
  const std::uint64_t step = ++s.step;
  // My x is ready for my readers; wait until my owners' x is ready.
  for (int q : send_rank_)
    if (!s.plan.message(q)) locus::notify(s.flags.gptr(q) + me, step);
  for (int q : recv_rank_)
    if (!s.plan.message(q)) locus::wait_notify(s.flags.data() + q, step);
  s.plan.start(staged_ ? stage_recv_.data() : xext_);
  const double t1 = MPI_Wtime();
  compute_local(y);
  const double t2 = MPI_Wtime();
  s.plan.wait();
  for (int q : recv_rank_)
    if (!s.plan.message(q)) locus::notify(s.flags.gptr(q) + (s.size + me), step);
  if (staged_) stage_unpack();
  const double t3 = MPI_Wtime();
  compute_remote(y);
  times_.post += t1 - t0;
  times_.local += t2 - t1;
  times_.wait += t3 - t2;
  times_.remote += MPI_Wtime() - t3;
}

void Operator::apply(double* y) {
  const double t0 = MPI_Wtime();
  // The product's counted requirements (counts.hpp), in the phase of the
  // caller's timer (products, cg); the exchange counts its own.
  locus::count(locus::Count::flops, 2 * static_cast<std::uint64_t>(nnz_local_ + nnz_remote_),
               "spmv product: 2 per nonzero (a multiplication and an addition)");
  locus::count(locus::Count::memory_bytes, static_cast<std::uint64_t>(model_bytes()),
               "spmv product: the CSR bytes, 12 per nonzero (value, 32-bit column) + 8 (rows + 1) row "
               "pointers + 8 (rows + halo entries) of x + 8 rows of y + 32 per row with halo entries (its "
               "row, pointer, y read and written again)");
  switch (mode_) {
    case Mode::vector:
    case Mode::overlap:
    case Mode::thread:
      apply_two_sided(y);
      break;
    case Mode::task:
      apply_task(y);
      break;
    case Mode::rma:
      apply_rma(y);
      break;
  }
  times_.total += MPI_Wtime() - t0;
  ++times_.products;
  // The first product is checked against the reference kernels (after
  // the exchange, so the halo part of x is in; outside the timers).
  if (!checked_) check_against_reference(y);
}

}  // namespace spmv
