#pragma once
// tensor_contract: block tensor contraction C += A * B in the
// get-compute-accumulate pattern of NWChem's TCE kernels over Global
// Arrays, with NXTASK dynamic task scheduling (a fetch-and-add counter).
//
// Every index has an extent and a tile size; a tensor is stored as its
// non-zero tile blocks (block sparsity from irrep labels: a block is
// non-zero when the XOR of its tiles' labels is 0), each block contiguous
// in its owner's part of a locus segment, in the tensor's index order.
// A task is one block of C: for every pair of A and B blocks that
// contribute, get both (non-blocking, the next pair prefetched), sort them
// into matrix layout, DGEMM, and once all pairs are done sort the result
// back and accumulate it into C's block (atomic sum).
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "locus/app.hpp"
#include "locus/profile.hpp"
#include "locus/segment.hpp"

namespace tensor_contract {

using gidx = std::int64_t;

locus::AppInfo app_info();
int run(locus::Context& ctx);

// "abij = acik * cbkj": output, left and right operand index strings.
struct Contraction {
  std::string c, a, b;
  std::string contracted;    // in A's order
  std::string ext_a, ext_b;  // external indices of A and B, in C's order
  std::string text() const { return c + " = " + a + " * " + b; }
};
// Parses and checks the string; returns "" or what is wrong.
std::string parse_contraction(const std::string& text, Contraction& out);
// The presets: matmul, ccsd (doubles), triples.
std::string preset_contraction(const std::string& name);

struct IndexSpec {
  gidx extent = 0;
  gidx tile = 0;
  gidx tiles() const { return (extent + tile - 1) / tile; }
  gidx tile_size(gidx t) const { return std::min(tile, extent - t * tile); }
};

enum class Distribution { round_robin, block_cyclic };
enum class Values { integer, random };

// One phase's problem.
struct Problem {
  Contraction con;
  std::map<char, IndexSpec> index;
  int irreps = 1;  // 1: dense; 2, 4, 8: block sparse
  Distribution distribution = Distribution::round_robin;
  int cyclic_block = 4;
  Values values = Values::integer;
  std::uint64_t seed = 1;
  // Irrep label of a tile (the same rule for every index).
  int label(char, gidx tile) const { return static_cast<int>(tile % irreps); }
};

// A tiled tensor: its non-zero blocks, who owns them, where they are.
class TiledTensor {
 public:
  // Collective over the team: builds the block table (the same on every
  // unit), allocates the parts and fills this unit's blocks with the
  // tensor's values (`which`: 0 = A, 1 = B, 2 = C, C starts at zero).
  TiledTensor(locus::Team& team, const Problem& p, const std::string& idx, int which);
  const std::string& indices() const { return idx_; }
  gidx blocks() const { return static_cast<gidx>(owner_.size()); }
  // Block id of a tile tuple (in this tensor's index order), or -1 (zero).
  gidx find(const std::vector<gidx>& tiles) const;
  const std::vector<gidx>& tiles_of(gidx block) const { return tiles_[static_cast<std::size_t>(block)]; }
  int owner(gidx block) const { return owner_[static_cast<std::size_t>(block)]; }
  gidx offset(gidx block) const { return offset_[static_cast<std::size_t>(block)]; }
  gidx size(gidx block) const { return size_[static_cast<std::size_t>(block)]; }
  // Tile extents of a block, in index order.
  std::vector<gidx> dims(gidx block) const;
  locus::GlobalPtr<double> at(gidx block) const { return data_.gptr(owner(block)) + offset(block); }
  double* local() const { return data_.data(); }
  gidx local_size() const { return static_cast<gidx>(data_.size()); }
  gidx total_elements() const { return total_; }
  // Element value of the tensor at global coordinates (index order).
  static double value(const Problem& p, int which, const std::vector<gidx>& coord);
  // Whether an element is in a non-zero block.
  static bool nonzero(const Problem& p, const std::string& idx, const std::vector<gidx>& coord);

 private:
  const Problem& p_;
  std::string idx_;
  std::vector<gidx> ntiles_;
  std::vector<gidx> lookup_;  // linear tile tuple -> block id or -1
  std::vector<std::vector<gidx>> tiles_;
  std::vector<int> owner_;
  std::vector<gidx> offset_, size_;
  gidx total_ = 0;
  locus::Array<double> data_;
};

enum class Scheduling { nxtask, static_rr };
enum class CounterOwner { first, last };

// How a task's result reaches C: sorted into C's block layout, then one
// contiguous accumulate (TCE's); or straight from the DGEMM's matrix
// layout by strided accumulates (no sort; one per combination of C's
// outer indices: many small strided operations).
enum class AccumulateKind { sorted, strided };

// The tile product: CBLAS DGEMM (OpenBLAS), or the portable Kokkos kernel
// (gemm.hpp; always on a device build, where the tiles are in device memory).
enum class GemmKind { blas, portable };

struct Schedule {
  Scheduling scheduling = Scheduling::nxtask;
  AccumulateKind accumulate = AccumulateKind::sorted;
  CounterOwner owner = CounterOwner::last;
  gidx chunk = 1;
  bool skip_first = false;
  int blas_threads = 1;
  GemmKind gemm = GemmKind::blas;
  std::size_t sort_cache_bytes = 0;  // sorted operand blocks kept per rank (0: none)
};

// Per-rank timers of the task loop (seconds) and counts.
struct LoopStats {
  double get = 0, wait = 0, sort = 0, dgemm = 0, accumulate = 0, nxtask = 0, total = 0;
  gidx tasks = 0, pairs = 0, counter_hits = 0, accumulates = 0;
  gidx sorts = 0, sorts_kept = 0;  // sorts done; operand sorts saved (the block was kept sorted)
  double flops = 0;
  double sort_bytes = 0;  // bytes the sorts read and wrote (16 per element)
};

struct PhaseResult {
  LoopStats stats;  // this rank's
  gidx tasks = 0;   // blocks of C
  std::uint64_t counter_final = 0, counter_expected = 0;
  bool every_task_once = false;
  gidx task_errors = 0;  // tasks done 0 or > 1 times
  double seconds = 0;    // the loop to its closing barrier, max over ranks
  // The schedule: task_unit[k] is the unit that ran task k (team rank 0's;
  // empty elsewhere). The requirement models of ./locus predict read it.
  std::vector<std::int64_t> task_unit;
};

// The permutations ("sidx>didx") checked against the reference so far: a
// run keeps one across its phases.
using SortChecks = std::set<std::string>;

// The sort: dst (index order didx) = src (index order sidx, extents
// sdims) as a Kokkos kernel (`stream`: by non-temporal stores where the
// kernel moves rows in blocks, for a destination not read again soon), checked bitwise against
// permute_reference the first time each (sidx, didx) is seen (not in `checked`: then added);
// permute_reference is the plain odometer loop.
void permute(const double* src, const std::string& sidx, const std::vector<gidx>& sdims, double* dst,
             const std::string& didx, SortChecks& checked, bool stream = false);
void permute_reference(const double* src, const std::string& sidx, const std::vector<gidx>& sdims,
                       double* dst, const std::string& didx);

// Collective: runs the task loop of one phase over C += A * B. With
// `timers` (the app's): the counter and bookkeeping arrays in `setup`, the
// loop to its closing flush and barrier in `contract` (whose time is
// `seconds`, and which the loop's parts get ... nxtask are added to), the
// every-task-once and counter checks in `check`.
PhaseResult contract(locus::Team& team, const Problem& p, const Schedule& s, TiledTensor& A, TiledTensor& B,
                     TiledTensor& C, SortChecks& checked, locus::Timers* timers = nullptr);

// The counter's final value for n tasks: every unit's last hit overshoots.
std::uint64_t expected_counter(gidx tasks, int units, gidx chunk, bool skip_first);

// Dense copy of a tensor on rank 0 (others get an empty vector), by
// one-sided gets of every block; zero blocks stay zero.
std::vector<double> gather_dense(locus::Team& team, const Problem& p, const TiledTensor& t);
// Dense global extents of a tensor, in index order.
std::vector<gidx> dense_dims(const Problem& p, const std::string& idx);
// Serial reference contraction on dense arrays (built from the element
// values), and the same with absolute values (the rounding bound).
void reference(const Problem& p, std::vector<double>& c, std::vector<double>& c_abs);

}  // namespace tensor_contract
