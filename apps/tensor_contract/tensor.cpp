// tensor_contract: contraction parsing, tiled tensors, the task loop, the
// reference.
#include "tensor.hpp"

#include <cblas.h>
#include <mpi.h>
#include <sys/mman.h>
#if defined(__SSE2__) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <set>
#include <unordered_map>

#include "gemm.hpp"
#include "locus/counts.hpp"
#include "locus/error.hpp"
#include "locus/hash.hpp"
#include "locus/kokkos.hpp"
#include "locus/rma.hpp"
#include "locus/wait.hpp"

namespace tensor_contract {

using locus::mix64;

std::string preset_contraction(const std::string& name) {
  if (name == "matmul") return "ij = ik * kj";
  if (name == "ccsd") return "abij = acik * cbkj";
  if (name == "triples") return "abcijk = abil * lcjk";
  return "";
}

std::string parse_contraction(const std::string& text, Contraction& out) {
  std::string s;
  for (char ch : text)
    if (ch != ' ' && ch != '\t') s.push_back(ch);
  const auto eq = s.find('='), star = s.find('*');
  if (eq == std::string::npos || star == std::string::npos || star < eq)
    return "expected 'C = A * B' with index letters, e.g. \"abij = acik * cbkj\" (got \"" + text + "\")";
  out.c = s.substr(0, eq);
  out.a = s.substr(eq + 1, star - eq - 1);
  out.b = s.substr(star + 1);
  for (const std::string* t : {&out.c, &out.a, &out.b}) {
    if (t->empty()) return "a tensor without indices in \"" + text + "\"";
    std::set<char> seen;
    for (char ch : *t) {
      if (ch < 'a' || ch > 'z')
        return std::string("index '") + ch + "' in \"" + text + "\": indices are letters a-z";
      if (!seen.insert(ch).second)
        return std::string("index '") + ch + "' appears twice in " + *t + " (traces are not supported)";
    }
  }
  out.contracted.clear();
  out.ext_a.clear();
  out.ext_b.clear();
  for (char ch : out.a) {
    const bool in_c = out.c.find(ch) != std::string::npos, in_b = out.b.find(ch) != std::string::npos;
    if (in_c && in_b)
      return std::string("index '") + ch + "' is in C, A and B (Hadamard products are not supported)";
    if (!in_c && !in_b) return std::string("index '") + ch + "' of A is neither in C nor in B";
    if (in_b) out.contracted.push_back(ch);
  }
  for (char ch : out.b) {
    const bool in_c = out.c.find(ch) != std::string::npos, in_a = out.a.find(ch) != std::string::npos;
    if (!in_c && !in_a) return std::string("index '") + ch + "' of B is neither in C nor in A";
  }
  for (char ch : out.c) {
    const bool in_a = out.a.find(ch) != std::string::npos, in_b = out.b.find(ch) != std::string::npos;
    if (!in_a && !in_b) return std::string("index '") + ch + "' of C is in neither A nor B";
    (in_a ? out.ext_a : out.ext_b).push_back(ch);
  }
  return "";
}

namespace {

// Host-only helpers (the odometer over std::vector, the set-up of the
// kernels); the kernels themselves and what they call are
// KOKKOS_INLINE_FUNCTION (the same `inline` on a host build).
#define TENSOR_HOST_FUNCTION inline
// Device code in this file: the CUDA or HIP device compilation pass.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define TENSOR_DEVICE_PASS 1
#else
#define TENSOR_DEVICE_PASS 0
#endif

gidx product(const std::vector<gidx>& v) {
  gidx p = 1;
  for (gidx x : v) p *= x;
  return p;
}

// The odometer every walk over an index space here takes: counter c over
// extents ext[0..n), the last index fastest. Steps c to the next
// combination and returns true, or wraps it back to all zeros after the
// last one and returns false. moved(d, delta) hears of every change of
// c[d] (+1, or 1 - ext[d] when it wraps), for offsets kept alongside.
// One source for the host's walks (over std::vector counters) and the
// kernels' (over Kokkos::Array, every execution space): nvcc is told not
// to check the host instantiations' calls (std::vector's operator[] is a
// host function), which no device code makes.
#if defined(__NVCC__)
#pragma nv_exec_check_disable
#endif
template <class Counter, class Extents, class Size, class Moved>
KOKKOS_INLINE_FUNCTION bool odometer_next(Counter& c, const Extents& ext, Size n, Moved&& moved) {
  for (Size d = n; d-- > 0;) {
    if (++c[d] < ext[d]) {
      moved(d, gidx{1});
      return true;
    }
    moved(d, gidx{1} - ext[d]);
    c[d] = 0;
  }
  return false;
}

template <class Counter, class Extents>
TENSOR_HOST_FUNCTION bool odometer_next(Counter& c, const Extents& ext, std::size_t n) {
  return odometer_next(c, ext, n, [](std::size_t, gidx) {});
}

}  // namespace

// dst (index order didx) = src (index order sidx, extents sdims); didx is a
// permutation of sidx. The "sort" of TCE: the plain reference kernel (an
// odometer over the destination).
void permute_reference(const double* src, const std::string& sidx, const std::vector<gidx>& sdims,
                       double* dst, const std::string& didx) {
  const std::size_t r = sidx.size();
  std::vector<gidx> sstr(r, 1), ddims(r), step(r);
  for (std::size_t i = r - 1; i-- > 0;) sstr[i] = sstr[i + 1] * sdims[i + 1];
  for (std::size_t j = 0; j < r; ++j) {
    const std::size_t pos = sidx.find(didx[j]);
    ddims[j] = sdims[pos];
    step[j] = sstr[pos];
  }
  if (sidx == didx) {
    std::copy(src, src + product(sdims), dst);
    return;
  }
  std::vector<gidx> ctr(r, 0);
  gidx off = 0, n = 0;
  const gidx inner = ddims[r - 1], istep = step[r - 1];
  const gidx total = product(ddims);
  while (n < total) {
    if (istep == 1) {  // rows contiguous on both sides: a vector copy
      std::copy(src + off, src + off + inner, dst + n);
      n += inner;
    } else {
      for (gidx k = 0; k < inner; ++k) dst[n++] = src[off + k * istep];
    }
    // advance the odometer over the outer dimensions
    odometer_next(ctr, ddims, r - 1, [&](std::size_t d, gidx delta) { off += delta * step[d]; });
  }
}

namespace {

constexpr std::size_t kMaxRank = 8;
using Extents = Kokkos::Array<gidx, kMaxRank>;

// A row of n doubles: libc's copy on the host (one unrolled run of the
// widest vectors the CPU has for a row of 8-32 doubles; the loop it
// replaced was 16 B a turn), a plain loop in device code.
KOKKOS_INLINE_FUNCTION void copy_row(double* dst, const double* src, gidx n) {
#if TENSOR_DEVICE_PASS
  for (gidx k = 0; k < n; ++k) dst[k] = src[k];
#else
  std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(double));
#endif
}

// The sort as a Kokkos kernel in locus::ExecSpace, on blocks in
// locus::MemSpace (host memory on a host build, device memory on a device
// build). Three shapes: the same order (a copy);
// the last index the same on both sides (contiguous rows, one chunk of
// rows per index); otherwise a transpose between the destination's last
// index and the source's last index, in 8 x 8 tiles (reads and writes both
// touch whole cache lines), one plane of the other indices per index.
struct PermuteRows {
  static constexpr gidx kChunk = 64;  // rows per index: the offsets by division once, then an odometer
  const double* src;
  double* dst;
  // The rows' other indices in the order the rows are visited (the
  // source's: its largest stride first), each with its extent and its
  // stride on both sides. Visiting the rows in source order reads the
  // source (the block fetched from memory, 4 KiB pages in a segment) as
  // one stream; the scattered rows land in the destination, which the
  // task loop reuses (in cache). Visiting them in destination order jumps
  // tile^2 elements in the source per row: a new page per row.
  Extents odims{}, osstep{}, odstep{};
  int outer = 0;
  gidx inner = 0, rows = 0;
  KOKKOS_INLINE_FUNCTION void operator()(gidx chunk) const {
    const gidx r0 = chunk * kChunk, r1 = r0 + kChunk < rows ? r0 + kChunk : rows;
    Extents ctr{};
    gidx soff = 0, doff = 0, rest = r0;
    for (int d = outer; d-- > 0;) {
      ctr[d] = rest % odims[d];
      soff += ctr[d] * osstep[d];
      doff += ctr[d] * odstep[d];
      rest /= odims[d];
    }
    for (gidx row = r0; row < r1; ++row) {
      copy_row(dst + doff, src + soff, inner);
      odometer_next(ctr, odims, outer, [&](int d, gidx delta) {
        soff += delta * osstep[d];
        doff += delta * odstep[d];
      });
    }
  }
};

// The source and destination offsets of `plane`, the plane's index over
// the outer indices odims[0..outer) (the last fastest), whose strides are
// osstep (source) and odstep (destination).
KOKKOS_INLINE_FUNCTION void plane_offsets(gidx plane, int outer, const Extents& odims, const Extents& osstep,
                                          const Extents& odstep, gidx& soff, gidx& doff) {
  for (int d = outer; d-- > 0;) {
    const gidx c = plane % odims[d];
    plane /= odims[d];
    soff += c * osstep[d];
    doff += c * odstep[d];
  }
}

// A row of n doubles by non-temporal stores (16 bytes each; an element
// before the first 16-byte boundary and an odd last one by plain stores),
// and the fence that orders them before later stores; plain copies where
// SSE2 is missing and in device code (where `stream` is never set: the
// stores are a host refinement).
KOKKOS_INLINE_FUNCTION void stream_row(double* dst, const double* src, gidx n) {
#if defined(__SSE2__) && !TENSOR_DEVICE_PASS
  gidx k = 0;
  if (n > 0 && (reinterpret_cast<std::uintptr_t>(dst) & 15) != 0) dst[k] = src[k], ++k;
  for (; k + 2 <= n; k += 2) _mm_stream_pd(dst + k, _mm_loadu_pd(src + k));
  if (k < n) dst[k] = src[k];
#else
  copy_row(dst, src, n);
#endif
}
KOKKOS_INLINE_FUNCTION void stream_fence() {
#if defined(__SSE2__) && !TENSOR_DEVICE_PASS
  _mm_sfence();
#endif
}

// Rows again, when the source's innermost outer index p and the
// destination's q differ: the rows (p, q) of one plane (the other outer
// indices fixed) in kB x kB blocks, q outer and p inner, so that reads run
// along p (contiguous in the source) and a block's writes, contiguous
// along q in the destination, fill whole cache lines while they stay in
// L1. One plane per index.
//
// `stream`: for a destination that is not read again soon from cache (a
// kept sorted block, SortedBlocks): the block is walked p outer, q inner,
// so that consecutive rows are consecutive in the destination, and the
// rows are written by non-temporal stores: whole lines go to memory
// without being read first (a cold destination otherwise costs a read of
// every line: 11-12 against 16 GB/s on the Intel host).
struct PermuteRowsBlocked {
  static constexpr gidx kB = 8;
  const double* src;
  double* dst;
  Extents odims{}, osstep{}, odstep{};  // the other outer indices
  int outer = 0;
  gidx inner = 0;
  gidx np = 0, sp = 0, dp = 0, nq = 0, sq = 0, dq = 0;  // extent, source and destination stride of p, q
  bool stream = false;
  KOKKOS_INLINE_FUNCTION void operator()(gidx plane) const {
    gidx soff = 0, doff = 0;
    plane_offsets(plane, outer, odims, osstep, odstep, soff, doff);
    for (gidx p0 = 0; p0 < np; p0 += kB)
      for (gidx q0 = 0; q0 < nq; q0 += kB) {
        const gidx p1 = p0 + kB < np ? p0 + kB : np, q1 = q0 + kB < nq ? q0 + kB : nq;
        if (stream) {
          for (gidx p = p0; p < p1; ++p)
            for (gidx q = q0; q < q1; ++q)
              stream_row(dst + doff + p * dp + q * dq, src + soff + p * sp + q * sq, inner);
          continue;
        }
        for (gidx q = q0; q < q1; ++q)
          for (gidx p = p0; p < p1; ++p)
            copy_row(dst + doff + p * dp + q * dq, src + soff + p * sp + q * sq, inner);
      }
    if (stream) stream_fence();
  }
};

struct PermuteTranspose {
  const double* src;
  double* dst;
  Extents odims{}, osstep{}, odstep{};  // other dims: extent, source and destination strides
  int outer = 0;
  gidx na = 0, nb = 0;  // a: the destination dim with source stride 1; b: the destination's last dim
  gidx dstep_a = 0, sstep_b = 0;
  KOKKOS_INLINE_FUNCTION void operator()(gidx plane) const {
    gidx soff = 0, doff = 0;
    plane_offsets(plane, outer, odims, osstep, odstep, soff, doff);
    constexpr gidx T = 8;
    for (gidx a0 = 0; a0 < na; a0 += T) {
      const gidx a1 = a0 + T < na ? a0 + T : na;
      for (gidx b0 = 0; b0 < nb; b0 += T) {
        const gidx b1 = b0 + T < nb ? b0 + T : nb;
        for (gidx a = a0; a < a1; ++a) {
          const double* __restrict s = src + soff + a;
          double* __restrict o = dst + doff + a * dstep_a;
          for (gidx b = b0; b < b1; ++b) o[b] = s[b * sstep_b];
        }
      }
    }
  }
};

// Copies between host memory and locus::MemSpace (device builds only: on
// a host build the blocks are host memory and nothing is copied).
using HostBlock = Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using ConstHostBlock =
    Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using MemBlock = Kokkos::View<double*, locus::MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using ConstMemBlock = Kokkos::View<const double*, locus::MemSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
void to_mem(const double* host, double* mem, std::size_t n) {
  if (n) Kokkos::deep_copy(MemBlock(mem, n), ConstHostBlock(host, n));
}
void to_host(const double* mem, double* host, std::size_t n) {
  if (n) Kokkos::deep_copy(HostBlock(host, n), ConstMemBlock(mem, n));
}
std::vector<double> host_vector(const double* mem, std::size_t n) {
  std::vector<double> h(n);
  to_host(mem, h.data(), n);
  return h;
}

struct Copy {
  const double* src;
  double* dst;
  KOKKOS_INLINE_FUNCTION void operator()(gidx i) const { dst[i] = src[i]; }
};

void permute_kernel(const double* src, const std::string& sidx, const std::vector<gidx>& sdims, double* dst,
                    const std::string& didx, bool stream) {
  const std::size_t r = sidx.size();
  const gidx total = product(sdims);
  if (total == 0) return;
  stream = stream && locus::kHostExec;  // non-temporal stores: a host refinement
  if (sidx == didx || r > kMaxRank) {
    if (sidx != didx) {
      // more indices than the kernels' counters hold: the reference, on
      // the host (through host copies on a device build)
      if constexpr (locus::kDeviceBuild) {
        const std::vector<double> h = host_vector(src, static_cast<std::size_t>(total));
        std::vector<double> out(h.size());
        permute_reference(h.data(), sidx, sdims, out.data(), didx);
        to_mem(out.data(), dst, out.size());
        return;
      }
      return permute_reference(src, sidx, sdims, dst, didx);
    }
    Kokkos::parallel_for("tensor::copy", locus::Range<gidx>(0, total), Copy{src, dst});
    Kokkos::fence();
    return;
  }
  std::vector<gidx> sstr(r, 1), ddims(r), step(r), dstr(r, 1);
  for (std::size_t i = r - 1; i-- > 0;) sstr[i] = sstr[i + 1] * sdims[i + 1];
  for (std::size_t j = 0; j < r; ++j) {
    const std::size_t pos = sidx.find(didx[j]);
    ddims[j] = sdims[pos];
    step[j] = sstr[pos];
  }
  for (std::size_t j = r - 1; j-- > 0;) dstr[j] = dstr[j + 1] * ddims[j + 1];
  if (step[r - 1] == 1) {
    PermuteRows f{src, dst, {}, {}, {}, static_cast<int>(r - 1), ddims[r - 1], total / ddims[r - 1]};
    // the outer indices by source stride, largest first
    std::vector<std::size_t> order(r - 1);
    for (std::size_t j = 0; j + 1 < r; ++j) order[j] = j;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t x, std::size_t y) { return step[x] > step[y]; });
    for (std::size_t q = 0; q + 1 < r; ++q) {
      f.odims[q] = ddims[order[q]];
      f.osstep[q] = step[order[q]];
      f.odstep[q] = dstr[order[q]];
    }
    // p: the outer index of the smallest source stride, q: of the
    // smallest destination stride
    const std::size_t p = order[r - 2];
    std::size_t q = order[0];
    for (std::size_t j : order)
      if (dstr[j] < dstr[q]) q = j;
    if (r >= 3 && p != q) {
      PermuteRowsBlocked b{src,      dst,     {},      {},       {},      0,       ddims[r - 1],
                           ddims[p], step[p], dstr[p], ddims[q], step[q], dstr[q], stream};
      for (std::size_t j : order) {
        if (j == p || j == q) continue;
        b.odims[b.outer] = ddims[j];
        b.osstep[b.outer] = step[j];
        b.odstep[b.outer] = dstr[j];
        ++b.outer;
      }
      Kokkos::parallel_for("tensor::sort_rows", locus::Range<gidx>(0, total / (b.inner * b.np * b.nq)), b);
    } else {
      const gidx chunks = (f.rows + PermuteRows::kChunk - 1) / PermuteRows::kChunk;
      Kokkos::parallel_for("tensor::sort_rows", locus::Range<gidx>(0, chunks), f);
    }
  } else {
    const std::size_t pa = didx.find(sidx[r - 1]);  // source stride 1
    PermuteTranspose f{src, dst, {}, {}, {}, 0, ddims[pa], ddims[r - 1], dstr[pa], step[r - 1]};
    for (std::size_t j = 0; j + 1 < r; ++j) {
      if (j == pa) continue;
      f.odims[f.outer] = ddims[j];
      f.osstep[f.outer] = step[j];
      f.odstep[f.outer] = dstr[j];
      ++f.outer;
    }
    Kokkos::parallel_for("tensor::sort_transpose", locus::Range<gidx>(0, total / (f.na * f.nb)), f);
  }
  Kokkos::fence();
}

}  // namespace

// The sort the task loop calls: the kernel, checked bitwise against the
// reference the first time each permutation is seen (outside the timers).
void permute(const double* src, const std::string& sidx, const std::vector<gidx>& sdims, double* dst,
             const std::string& didx, SortChecks& checked, bool stream) {
  permute_kernel(src, sidx, sdims, dst, didx, stream);
  const std::string key = sidx + ">" + didx;
  if (checked.count(key)) return;
  const std::size_t n = static_cast<std::size_t>(product(sdims));
  std::vector<double> ref(n), hsrc, hdst;
  const double* s = src;
  const double* d = dst;
  if constexpr (locus::kDeviceBuild) {  // the blocks are in device memory: compared on the host
    hsrc = host_vector(src, n);
    hdst = host_vector(dst, n);
    s = hsrc.data();
    d = hdst.data();
  }
  permute_reference(s, sidx, sdims, ref.data(), didx);
  if (!ref.empty() && std::memcmp(ref.data(), d, ref.size() * sizeof(double)) != 0)
    throw locus::Error("tensor_contract: the sort kernel " + key + " differs from the reference kernel");
  checked.insert(key);
}

// ---- tiled tensors

double TiledTensor::value(const Problem& p, int which, const std::vector<gidx>& coord) {
  (void)which;
  std::uint64_t h = mix64(p.seed * 1000003ULL + static_cast<std::uint64_t>(which));
  for (gidx c : coord) h = mix64(h ^ static_cast<std::uint64_t>(c));
  if (p.values == Values::integer) return static_cast<double>(static_cast<int>(h % 5) - 2);
  return static_cast<double>(h >> 11) * 0x1.0p-52 - 1.0;
}

bool TiledTensor::nonzero(const Problem& p, const std::string& idx, const std::vector<gidx>& coord) {
  int x = 0;
  for (std::size_t i = 0; i < idx.size(); ++i) x ^= p.label(idx[i], coord[i] / p.index.at(idx[i]).tile);
  return x == 0;
}

TiledTensor::TiledTensor(locus::Team& team, const Problem& p, const std::string& idx, int which)
    : p_(p), idx_(idx) {
  const int units = team.size(), me = team.rank();
  for (char ch : idx) ntiles_.push_back(p.index.at(ch).tiles());
  const gidx combos = product(ntiles_);
  lookup_.assign(static_cast<std::size_t>(combos), -1);
  std::vector<gidx> t(idx.size(), 0);
  std::vector<gidx> next_offset(static_cast<std::size_t>(units), 0);
  for (gidx lin = 0; lin < combos; ++lin) {
    int x = 0;
    for (std::size_t i = 0; i < idx.size(); ++i) x ^= p.label(idx[i], t[i]);
    if (x == 0) {
      const gidx id = static_cast<gidx>(owner_.size());
      lookup_[static_cast<std::size_t>(lin)] = id;
      tiles_.push_back(t);
      gidx sz = 1;
      for (std::size_t i = 0; i < idx.size(); ++i) sz *= p.index.at(idx[i]).tile_size(t[i]);
      const int o = p.distribution == Distribution::round_robin
                        ? static_cast<int>(id % units)
                        : static_cast<int>((id / p.cyclic_block) % units);
      owner_.push_back(o);
      offset_.push_back(next_offset[static_cast<std::size_t>(o)]);
      next_offset[static_cast<std::size_t>(o)] += sz;
      size_.push_back(sz);
      total_ += sz;
    }
    odometer_next(t, ntiles_, idx.size());
  }
  data_ = locus::Array<double>(team, static_cast<std::size_t>(next_offset[static_cast<std::size_t>(me)]));
  double* mine = data_.data();
  for (gidx b = 0; b < blocks(); ++b) {
    if (owner(b) != me) continue;
    double* out = mine + offset(b);
    if (which == 2) {
      std::fill(out, out + size(b), 0.0);
      continue;
    }
    const std::vector<gidx> d = dims(b);
    std::vector<gidx> c(idx.size(), 0), coord(idx.size());
    for (gidx e = 0; e < size(b); ++e) {
      for (std::size_t i = 0; i < idx.size(); ++i) coord[i] = tiles_of(b)[i] * p.index.at(idx[i]).tile + c[i];
      out[e] = value(p, which, coord);
      odometer_next(c, d, idx.size());
    }
  }
  locus::barrier(team);
}

gidx TiledTensor::find(const std::vector<gidx>& tiles) const {
  gidx lin = 0;
  for (std::size_t i = 0; i < tiles.size(); ++i) lin = lin * ntiles_[i] + tiles[i];
  return lookup_[static_cast<std::size_t>(lin)];
}

std::vector<gidx> TiledTensor::dims(gidx block) const {
  std::vector<gidx> d(idx_.size());
  for (std::size_t i = 0; i < idx_.size(); ++i) d[i] = p_.index.at(idx_[i]).tile_size(tiles_of(block)[i]);
  return d;
}

std::uint64_t expected_counter(gidx tasks, int units, gidx chunk, bool skip_first) {
  const gidx fetches_ok = (tasks + chunk - 1) / chunk;
  if (!skip_first) return static_cast<std::uint64_t>(chunk * (fetches_ok + units));
  return static_cast<std::uint64_t>(chunk * (std::max<gidx>(fetches_ok, units) + units));
}

// ---- the task loop

namespace {

struct Pair {
  gidx a, b;
};

// The task loop's buffers (fetched blocks, sorted blocks, the product):
// blocks of several MB whose sorts and products sweep them with strides,
// so they ask for transparent huge pages (2 MiB: far fewer TLB misses);
// smaller ones are plain allocations.
template <class T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr std::size_t kHuge = std::size_t(2) << 20;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kHuge) return static_cast<T*>(::operator new(bytes));
    const std::size_t whole = (bytes + kHuge - 1) / kHuge * kHuge;  // aligned_alloc wants a multiple
    void* p = std::aligned_alloc(kHuge, whole);
    if (!p) throw std::bad_alloc();
    madvise(p, whole, MADV_HUGEPAGE);  // a hint: no error if refused
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) {
    if (n * sizeof(T) < kHuge)
      ::operator delete(p);
    else
      std::free(p);
  }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const HugePageAllocator<U>&) const {
    return false;
  }
};
using Buffer = std::vector<double, HugePageAllocator<double>>;

// A block in device memory (locus::MemSpace of a device build): the
// vector operations of Buffer the task loop uses. resize keeps no contents
// (the loop overwrites every block it resizes).
class DeviceBuffer {
 public:
  void resize(std::size_t n) {
    if (n > v_.extent(0)) v_ = View(Kokkos::view_alloc(Kokkos::WithoutInitializing, "tensor::block"), n);
    n_ = n;
  }
  void assign(std::size_t n, double x) {
    resize(n);
    if (n) Kokkos::deep_copy(Kokkos::subview(v_, std::make_pair(std::size_t{0}, n)), x);
  }
  double* data() const { return v_.data(); }
  std::size_t size() const { return n_; }
  void swap(DeviceBuffer& o) {
    std::swap(v_, o.v_);
    std::swap(n_, o.n_);
  }

 private:
  using View = Kokkos::View<double*, locus::MemSpace>;
  View v_;
  std::size_t n_ = 0;
};
// The blocks the kernels read and write (staged and sorted operands, kept
// sorted blocks, the product and the sorted result): in locus::MemSpace.
// On a host build that is host memory, and they are the Buffer they always
// were (nothing staged, nothing copied back).
using Block = std::conditional_t<locus::kDeviceBuild, DeviceBuffer, Buffer>;

// n doubles of a host block (a fetched tile, or one read in place in a
// segment) where the kernels read them: `src` itself on a host build, a
// copy in `stage` on a device build.
const double* staged(const double* src, std::size_t n, Block& stage) {
  if constexpr (locus::kDeviceBuild) {
    stage.resize(n);
    to_mem(src, stage.data(), n);
    return stage.data();
  }
  (void)n;
  (void)stage;
  return src;
}
// A block the kernels wrote, where the host (the accumulates) reads it:
// the block itself on a host build, a copy in `host` on a device build.
const double* host_side(const Block& b, Buffer& host) {
  if constexpr (locus::kDeviceBuild) {
    host.resize(b.size());
    to_host(b.data(), host.data(), b.size());
    return host.data();
  }
  (void)host;
  return b.data();
}

// Operand blocks of this node, sorted into matrix layout, kept for the
// tasks that need them again: a block of A serves every task with the same
// external tiles of A (4 tasks of 16 in the CCSD term with 2 tiles per
// index). Only blocks read in place from shared memory are kept (a block
// of another node is fetched and sorted each time, so the communication
// stays TCE's); A and B do not change during a phase. The least recently
// used block leaves first. The slots (as many as the byte budget holds,
// no more than there are blocks to keep, none unless two fit) are allocated and touched
// when the loop is built, so that no sort writes into unmapped memory.
class SortedBlocks {
 public:
  SortedBlocks(std::size_t budget_bytes, std::size_t slot_elements, std::size_t wanted) {
    const std::size_t bytes = slot_elements * sizeof(double);
    std::size_t n = bytes ? std::min(wanted, budget_bytes / bytes) : 0;
    // Two at least: a pair's A sits in the most recently used slot while
    // its B takes the least recently used one; with one slot B would
    // overwrite A before the DGEMM.
    if (n < 2) n = 0;
    slots_.resize(n);
    for (Slot& s : slots_) s.data.assign(slot_elements, 0.0);
    // Least recently used first: slot 0, 1, ... as none has been used.
    for (std::size_t i = 0; i < n; ++i) {
      slots_[i].older = i == 0 ? kNone : i - 1;
      slots_[i].newer = i + 1 == n ? kNone : i + 1;
    }
    oldest_ = n ? 0 : kNone;
    newest_ = n ? n - 1 : kNone;
    where_.reserve(n);
  }
  // The sorted block (tensor `which`, block id), or nullptr. A hash lookup
  // and a move to the most recently used end: O(1), as the node's blocks
  // number in the tens of thousands at large extents (a scan of the slots
  // per operand made the sorts quadratic in the block count).
  const double* find(int which, gidx block) {
    const auto it = where_.find(key(which, block));
    if (it == where_.end()) return nullptr;
    touch(it->second);
    return slots_[it->second].data.data();
  }
  // The slot to sort block (which, block) into (the least recently used),
  // kept afterwards; nullptr when there are no slots or n does not fit.
  double* make(int which, gidx block, std::size_t n) {
    if (slots_.empty() || n > slots_.front().data.size()) return nullptr;
    const std::size_t i = oldest_;
    Slot& s = slots_[i];
    if (s.block >= 0) where_.erase(key(s.which, s.block));
    s.which = which;
    s.block = block;
    where_[key(which, block)] = i;
    touch(i);
    return s.data.data();
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  struct Slot {
    int which = -1;
    gidx block = -1;
    std::size_t older = kNone, newer = kNone;  // the recency list's neighbours
    Block data;
  };
  static std::uint64_t key(int which, gidx block) {
    return (static_cast<std::uint64_t>(block) << 1) | static_cast<std::uint64_t>(which & 1);
  }
  // Slot i becomes the most recently used.
  void touch(std::size_t i) {
    if (i == newest_) return;
    Slot& s = slots_[i];
    if (s.older != kNone)
      slots_[s.older].newer = s.newer;
    else
      oldest_ = s.newer;
    slots_[s.newer].older = s.older;  // s.newer exists: i is not the newest
    s.older = newest_;
    s.newer = kNone;
    slots_[newest_].newer = i;
    newest_ = i;
  }
  std::vector<Slot> slots_;
  std::unordered_map<std::uint64_t, std::size_t> where_;  // (which, block) -> slot
  std::size_t oldest_ = kNone, newest_ = kNone;
};

// The counted requirements of the task loop's kernels (counts.hpp), in the
// phase of the caller's timer (contract). The NXTASK counter, the gets and
// the accumulates count themselves in the core.
void count_product(gidx m, gidx n, gidx k) {
  const auto mm = static_cast<std::uint64_t>(m), nn = static_cast<std::uint64_t>(n),
             kk = static_cast<std::uint64_t>(k);
  locus::count(locus::Count::flops, 2 * mm * nn * kk,
               "tensor_contract tile product (dgemm C += A B, m x k by k x n): 2 m n k");
  locus::count(locus::Count::memory_bytes, 8 * (mm * kk + kk * nn + 2 * mm * nn),
               "tensor_contract tile product: 8 (m k + k n + 2 m n) bytes (A and B read, C read and written "
               "once)");
}
void count_sort(std::size_t elements) {
  locus::count(locus::Count::memory_bytes, 16 * static_cast<std::uint64_t>(elements),
               "tensor_contract sort (a block permuted into matrix or C layout): 16 bytes per element (read "
               "and written once)");
}

class Loop {
 public:
  Loop(locus::Team& team, const Problem& p, const Schedule& s, TiledTensor& A, TiledTensor& B, TiledTensor& C,
       LoopStats& st, SortChecks& checked)
      : team_(team),
        p_(p),
        strided_(s.accumulate == AccumulateKind::strided),
        A_(A),
        B_(B),
        C_(C),
        st_(st),
        checked_(checked),
        portable_(locus::kDeviceBuild || s.gemm == GemmKind::portable),
        cache_(s.sort_cache_bytes, std::max(largest_block(A), largest_block(B)), in_place_blocks(A, B)) {
    const Contraction& k = p.con;
    for (char ch : k.contracted) cntiles_.push_back(p.index.at(ch).tiles());
    a_dst_ = k.ext_a + k.contracted;
    b_dst_ = k.contracted + k.ext_b;
    c_mat_ = k.ext_a + k.ext_b;
  }

  // One task: the product of every pair of A and B blocks contributing to
  // C's block `cblock`, accumulated into it.
  void task(gidx cblock) {
    const Contraction& k = p_.con;
    find_pairs(C_.tiles_of(cblock));
    // matrix shape of the result
    gidx m = 1, nn = 1;
    const std::vector<gidx> cd = C_.dims(cblock);
    for (char ch : k.ext_a) m *= cd[k.c.find(ch)];
    for (char ch : k.ext_b) nn *= cd[k.c.find(ch)];
    if (!accs_.empty()) {  // strided: this buffer's accumulates from two tasks ago
      const double t0 = MPI_Wtime();
      locus::wait_all(accs_);
      accs_.clear();
      st_.accumulate += MPI_Wtime() - t0;
    }
    cmat_.assign(static_cast<std::size_t>(m * nn), 0.0);
    multiply_pairs(m, nn);
    // the previous task's accumulate must be done before its buffer is reused
    double t3 = MPI_Wtime();
    if (acc_.live()) locus::wait(acc_);
    double t4 = MPI_Wtime();
    st_.accumulate += t4 - t3;
    if (strided_) {
      // straight from the matrix layout; cmat_ and cnext_ alternate so the
      // accumulates complete while the next task computes
      accumulate_strided(cblock, cd, host_side(cmat_, cmat_host_));
      cmat_.swap(cnext_);
      cmat_host_.swap(cnext_host_);
      std::swap(accs_, accs_next_);
      st_.accumulate += MPI_Wtime() - t4;
    } else {
      accumulate_sorted(cblock, cd, m * nn, t4);
    }
    ++st_.tasks;
  }

  void finish() {
    const double t0 = MPI_Wtime();
    if (acc_.live()) locus::wait(acc_);
    locus::wait_all(accs_);
    locus::wait_all(accs_next_);
    st_.accumulate += MPI_Wtime() - t0;
  }

 private:
  // The pairs of A and B blocks of the task whose C block has tiles `ct`:
  // every combination of the contracted indices' tiles whose blocks exist.
  void find_pairs(const std::vector<gidx>& ct) {
    const Contraction& k = p_.con;
    pairs_.clear();
    std::vector<gidx> combo(k.contracted.size(), 0), at(k.a.size()), bt(k.b.size());
    const gidx combos = product(cntiles_);
    for (gidx n = 0; n < combos; ++n) {
      for (std::size_t i = 0; i < k.a.size(); ++i) {
        const auto pc = k.contracted.find(k.a[i]);
        at[i] = pc != std::string::npos ? combo[pc] : ct[k.c.find(k.a[i])];
      }
      for (std::size_t i = 0; i < k.b.size(); ++i) {
        const auto pc = k.contracted.find(k.b[i]);
        bt[i] = pc != std::string::npos ? combo[pc] : ct[k.c.find(k.b[i])];
      }
      const gidx ab = A_.find(at), bb = B_.find(bt);
      if (ab >= 0 && bb >= 0) pairs_.push_back({ab, bb});
      odometer_next(combo, cntiles_, combo.size());
    }
  }

  // cmat_ (m x nn) += every pair's A x B: the next pair's gets in flight
  // while this one is sorted into matrix layout and multiplied.
  void multiply_pairs(gidx m, gidx nn) {
    const Contraction& k = p_.con;
    if (pairs_.empty()) return;
    issue(0, 0);
    for (std::size_t i = 0; i < pairs_.size(); ++i) {
      const int cur = static_cast<int>(i % 2);
      if (i + 1 < pairs_.size()) issue(i + 1, 1 - cur);  // prefetch the next pair
      double t0 = MPI_Wtime();
      if (ha_[cur].live()) locus::wait(ha_[cur]);
      if (hb_[cur].live()) locus::wait(hb_[cur]);
      double t1 = MPI_Wtime();
      st_.wait += t1 - t0;
      const Pair& pr = pairs_[i];
      const std::vector<gidx> ad = A_.dims(pr.a), bd = B_.dims(pr.b);
      gidx kk = 1;
      for (char ch : k.contracted) kk *= ad[k.a.find(ch)];
      // the sort: skipped when the block already is in matrix layout
      const double* amat = operand(0, A_, pr.a, ad, a_dst_, asrc_[cur], ain_[cur], astage_, asort_);
      const double* bmat = operand(1, B_, pr.b, bd, b_dst_, bsrc_[cur], bin_[cur], bstage_, bsort_);
      double t2 = MPI_Wtime();
      st_.sort += t2 - t1;
      if (portable_)
        gemm_portable(m, nn, kk, amat, bmat, cmat_.data());
      else
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(nn),
                    static_cast<int>(kk), 1.0, amat, static_cast<int>(kk), bmat, static_cast<int>(nn), 1.0,
                    cmat_.data(), static_cast<int>(nn));
      st_.dgemm += MPI_Wtime() - t2;
      st_.flops += 2.0 * double(m) * double(nn) * double(kk);
      count_product(m, nn, kk);
      ++st_.pairs;
    }
  }

  static std::size_t largest_block(const TiledTensor& t) {
    gidx n = 0;
    for (gidx b = 0; b < t.blocks(); ++b) n = std::max(n, t.size(b));
    return static_cast<std::size_t>(n);
  }
  // Blocks of A and B this unit reads in place (its node's, comm.locality on).
  static std::size_t in_place_blocks(const TiledTensor& A, const TiledTensor& B) {
    std::size_t n = 0;
    for (const TiledTensor* t : {&A, &B})
      for (gidx b = 0; b < t->blocks(); ++b) n += t->at(b).is_local() ? 1 : 0;
    return n;
  }

  // Block `block` of operand `which` (0: A, 1: B; host data at `src`) in
  // matrix layout `to`, where the kernels read it: the block itself (staged
  // into `stage` on a device build) when it already is in that layout, else
  // sorted.
  const double* operand(int which, const TiledTensor& t, gidx block, const std::vector<gidx>& dims,
                        const std::string& to, const double* src, bool in_place, Block& stage,
                        Block& scratch) {
    if (t.indices() == to) return staged(src, static_cast<std::size_t>(t.size(block)), stage);
    return sorted(which, t, block, dims, to, src, in_place, stage, scratch);
  }

  // Block `block` of operand `which` sorted into layout `to`: from the kept
  // blocks when it was read in place (`in_place`) and is there, else sorted
  // from `src` (staged into `stage` on a device build) into a kept buffer
  // or `scratch`.
  const double* sorted(int which, const TiledTensor& t, gidx block, const std::vector<gidx>& dims,
                       const std::string& to, const double* src, bool in_place, Block& stage,
                       Block& scratch) {
    const std::size_t n = static_cast<std::size_t>(t.size(block));
    double* dst = nullptr;
    if (in_place) {
      if (const double* kept = cache_.find(which, block)) {
        ++st_.sorts_kept;
        return kept;
      }
      dst = cache_.make(which, block, n);
    }
    if (!dst) {
      scratch.resize(n);
      dst = scratch.data();
    }
    permute(staged(src, n, stage), t.indices(), dims, dst, to, checked_, dst != scratch.data());
    st_.sort_bytes += 16.0 * double(n);
    count_sort(n);
    ++st_.sorts;
    return dst;
  }

  // The result sorted into C's layout (unless it already is), then one
  // non-blocking accumulate of the block; `t4` starts the sort's time.
  void accumulate_sorted(gidx cblock, const std::vector<gidx>& cd, gidx elements, double t4) {
    const Contraction& k = p_.con;
    cblk_.resize(static_cast<std::size_t>(elements));
    if (c_mat_ == k.c) {
      cblk_.swap(cmat_);  // already in C's layout
    } else {
      std::vector<gidx> mdims;
      for (char ch : c_mat_) mdims.push_back(cd[k.c.find(ch)]);
      permute(cmat_.data(), c_mat_, mdims, cblk_.data(), k.c, checked_);
      st_.sort_bytes += 16.0 * double(cblk_.size());
      count_sort(cblk_.size());
      ++st_.sorts;
    }
    const double* out = host_side(cblk_, cblk_host_);
    double t5 = MPI_Wtime();
    st_.sort += t5 - t4;
    acc_ = locus::accumulate_async(C_.at(cblock), out, static_cast<std::size_t>(C_.size(cblock)),
                                   locus::Op::sum);
    ++st_.accumulates;
    st_.accumulate += MPI_Wtime() - t5;
  }

  // Starts the transfers of pair i into buffer set `slot`. A block in
  // shared memory on this node (comm.locality on) is not copied at all: the
  // sort reads it in place (A and B do not change during a phase).
  void issue(std::size_t i, int slot) {
    const double t0 = MPI_Wtime();
    const Pair& pr = pairs_[i];
    asrc_[slot] = fetch(A_, pr.a, abuf_[slot], ha_[slot]);
    bsrc_[slot] = fetch(B_, pr.b, bbuf_[slot], hb_[slot]);
    ain_[slot] = asrc_[slot] != abuf_[slot].data();
    bin_[slot] = bsrc_[slot] != bbuf_[slot].data();
    st_.get += MPI_Wtime() - t0;
  }

  static const double* fetch(const TiledTensor& t, gidx block, Buffer& buf, locus::Handle& h) {
    const locus::GlobalPtr<double> src = t.at(block);
    if (src.is_local()) return src.local();
    buf.resize(static_cast<std::size_t>(t.size(block)));
    h = locus::get_async(buf.data(), src, buf.size());
    return buf.data();
  }

  // Strided accumulates of the matrix-layout result `mat` (index order
  // c_mat_) into C's block (index order k.c): C's last index is the
  // layout's block when it is also the matrix's last (else blocks of one),
  // the next two of C's indices its count and rows; one accumulate per
  // combination of C's remaining (outer) indices.
  void accumulate_strided(gidx cblock, const std::vector<gidx>& cd, const double* mat) {
    const Contraction& k = p_.con;
    const std::size_t r = k.c.size();
    std::vector<gidx> cstr(r, 1), mstr(r, 1);  // strides of each of C's indices in C and in the matrix
    for (std::size_t i = r - 1; i-- > 0;) cstr[i] = cstr[i + 1] * cd[i + 1];
    {
      std::vector<gidx> md(r), ms(r, 1);
      for (std::size_t i = 0; i < r; ++i) md[i] = cd[k.c.find(c_mat_[i])];
      for (std::size_t i = r - 1; i-- > 0;) ms[i] = ms[i + 1] * md[i + 1];
      for (std::size_t i = 0; i < r; ++i) mstr[k.c.find(c_mat_[i])] = ms[i];
    }
    // dims of C (from the last): block, count, rows; the rest are outer
    std::vector<std::size_t> inner;  // positions in C: count, rows
    std::size_t block = 1, pos = r;
    if (c_mat_.back() == k.c.back()) {
      block = static_cast<std::size_t>(cd[r - 1]);
      pos = r - 1;
    }
    while (pos > 0 && inner.size() < 2) inner.push_back(--pos);
    locus::Layout remote{block, 1, 0, 1, 0}, local{block, 1, 0, 1, 0};
    if (inner.size() >= 1) {
      remote.count = local.count = static_cast<std::size_t>(cd[inner[0]]);
      remote.stride = static_cast<std::size_t>(cstr[inner[0]]);
      local.stride = static_cast<std::size_t>(mstr[inner[0]]);
    }
    if (inner.size() >= 2) {
      remote.rows = local.rows = static_cast<std::size_t>(cd[inner[1]]);
      remote.row_stride = static_cast<std::size_t>(cstr[inner[1]]);
      local.row_stride = static_cast<std::size_t>(mstr[inner[1]]);
    }
    // outer indices: C positions [0, pos)
    std::vector<gidx> ctr(pos, 0);
    const locus::GlobalPtr<double> base = C_.at(cblock);
    while (true) {
      gidx roff = 0, loff = 0;
      for (std::size_t i = 0; i < pos; ++i) {
        roff += ctr[i] * cstr[i];
        loff += ctr[i] * mstr[i];
      }
      accs_.push_back(locus::accumulate_async(base + roff, remote, mat + loff, local, locus::Op::sum));
      ++st_.accumulates;
      if (!odometer_next(ctr, cd, pos)) break;
    }
  }

  locus::Team& team_;
  const Problem& p_;
  bool strided_ = false;
  std::vector<locus::Handle> accs_;  // strided accumulates in flight (from cmat_)
  TiledTensor &A_, &B_, &C_;
  LoopStats& st_;
  SortChecks& checked_;
  bool portable_ = false;  // the product by gemm_portable, not CBLAS
  SortedBlocks cache_;
  std::vector<gidx> cntiles_;
  std::string a_dst_, b_dst_, c_mat_;
  std::vector<Pair> pairs_;
  Buffer abuf_[2], bbuf_[2];  // fetched blocks (host memory: the gets' targets)
  Block astage_, bstage_, asort_, bsort_, cmat_, cblk_, cnext_;
  Buffer cmat_host_, cnext_host_, cblk_host_;  // a device build's copies of cmat_, cnext_, cblk_ on the host
  std::vector<locus::Handle> accs_next_;
  bool ain_[2] = {false, false}, bin_[2] = {false, false};  // read in place (not fetched)
  const double* asrc_[2] = {nullptr, nullptr};
  const double* bsrc_[2] = {nullptr, nullptr};
  locus::Handle ha_[2], hb_[2], acc_;
};

// The task loop's parts, measured inside it, added to the app's timers
// (while `contract` runs: within it).
void add_loop_parts(locus::Timers& timers, const LoopStats& st) {
  timers.add("get", st.get);
  timers.add("wait", st.wait);
  timers.add("sort", st.sort);
  timers.add("dgemm", st.dgemm);
  timers.add("accumulate", st.accumulate);
  timers.add("nxtask", st.nxtask);
}

// Collective, after the task loop: every task exactly once (the marks in
// `done`) and the counter's final value, into `res`.
void check_phase(locus::Team& team, const Schedule& s, locus::Array<std::int64_t>& done,
                 locus::Array<std::uint64_t>& counter, int owner, std::uint64_t init, PhaseResult& res) {
  const int units = team.size(), me = team.rank();
  const gidx n = res.tasks, per = (n + units - 1) / units;
  gidx bad = 0;
  for (gidx i = 0; i < per; ++i) {
    const gidx k = i * units + me;
    if (k < n && done.data()[i] != 1) ++bad;
  }
  locus::yielding::allreduce(&bad, &res.task_errors, 1, MPI_INT64_T, MPI_SUM, team.comm());
  res.every_task_once = res.task_errors == 0;
  std::uint64_t fin = me == owner ? counter.data()[0] : 0;
  locus::yielding::allreduce(MPI_IN_PLACE, &fin, 1, MPI_UINT64_T, MPI_MAX, team.comm());
  res.counter_final = fin;
  res.counter_expected =
      s.scheduling == Scheduling::nxtask ? expected_counter(n, units, s.chunk, s.skip_first) : init;
  locus::barrier(team);
}

// Collective, after the task loop: which unit ran each task (the tasks
// in `ran`, this unit's), into team rank 0's res.task_unit; -1 for a task
// no unit ran (check_phase counts those).
void record_schedule(locus::Team& team, const std::vector<std::int64_t>& ran, PhaseResult& res) {
  std::vector<std::int64_t> mine(static_cast<std::size_t>(res.tasks), -1);
  for (std::int64_t k : ran)
    if (k >= 0 && k < res.tasks) mine[static_cast<std::size_t>(k)] = team.rank();
  if (team.rank() == 0) res.task_unit.assign(mine.size(), -1);
  locus::yielding::reduce(mine.data(), team.rank() == 0 ? res.task_unit.data() : nullptr,
                          static_cast<int>(mine.size()), MPI_INT64_T, MPI_MAX, 0, team.comm());
}

}  // namespace

PhaseResult contract(locus::Team& team, const Problem& p, const Schedule& s, TiledTensor& A, TiledTensor& B,
                     TiledTensor& C, SortChecks& checked, locus::Timers* timers) {
  if (timers) timers->start("setup");
  const int units = team.size(), me = team.rank();
  PhaseResult res;
  res.tasks = C.blocks();
  const gidx n = res.tasks;
  const int owner = s.owner == CounterOwner::first ? 0 : units - 1;
  locus::Array<std::uint64_t> counter(team, 1);
  const std::uint64_t init = s.skip_first ? static_cast<std::uint64_t>(units * s.chunk) : 0;
  counter.data()[0] = init;
  const gidx per = (n + units - 1) / units;
  locus::Array<std::int64_t> done(team, static_cast<std::size_t>(std::max<gidx>(per, 1)));
  std::fill(done.data(), done.data() + std::max<gidx>(per, 1), 0);
  locus::barrier(team);

  LoopStats& st = res.stats;
  Loop loop(team, p, s, A, B, C, st, checked);
  std::vector<locus::Handle> marks;
  std::vector<std::int64_t> ran;  // the tasks this unit ran (for the schedule record)
  const std::int64_t one = 1;
  auto run_task = [&](gidx k) {
    loop.task(k);
    ran.push_back(static_cast<std::int64_t>(k));
    marks.push_back(locus::accumulate_async(done.gptr(static_cast<int>(k % units)) + (k / units), &one, 1,
                                            locus::Op::sum));
  };
  auto next_chunk = [&]() -> gidx {
    const double t0 = MPI_Wtime();
    const std::uint64_t v =
        locus::fetch_and_op(counter.gptr(owner), static_cast<std::uint64_t>(s.chunk), locus::Op::sum);
    st.nxtask += MPI_Wtime() - t0;
    ++st.counter_hits;
    return static_cast<gidx>(v);
  };
  if (timers) timers->stop("setup");
  locus::yielding::barrier(team.comm());
  const double before = timers ? timers->seconds("contract") : 0.0;
  if (timers) timers->start("contract");
  const double t0 = MPI_Wtime();
  if (s.scheduling == Scheduling::static_rr) {
    for (gidx k = me; k < n; k += units) run_task(k);
  } else {
    gidx start = s.skip_first ? static_cast<gidx>(me) * s.chunk : next_chunk();
    bool from_counter = !s.skip_first;
    while (true) {
      if (start < n) {
        for (gidx k = start; k < std::min(n, start + s.chunk); ++k) run_task(k);
      } else if (from_counter) {
        break;
      }
      start = next_chunk();
      from_counter = true;
    }
  }
  loop.finish();
  locus::wait_all(marks);
  st.total = MPI_Wtime() - t0;
  locus::flush(team);
  locus::barrier(team);
  double span = MPI_Wtime() - t0;  // the loop to its closing barrier
  if (timers) {
    add_loop_parts(*timers, st);
    timers->stop("contract");
    span = timers->seconds("contract") - before;
    timers->start("check");
  }
  locus::yielding::allreduce(&span, &res.seconds, 1, MPI_DOUBLE, MPI_MAX, team.comm());
  check_phase(team, s, done, counter, owner, init, res);
  record_schedule(team, ran, res);
  if (timers) timers->stop("check");
  return res;
}

// ---- dense views and the reference

std::vector<gidx> dense_dims(const Problem& p, const std::string& idx) {
  std::vector<gidx> d;
  for (char ch : idx) d.push_back(p.index.at(ch).extent);
  return d;
}

std::vector<double> gather_dense(locus::Team& team, const Problem& p, const TiledTensor& t) {
  std::vector<double> dense;
  if (team.rank() != 0) return dense;
  const std::string& idx = t.indices();
  const std::vector<gidx> gd = dense_dims(p, idx);
  dense.assign(static_cast<std::size_t>(product(gd)), 0.0);
  std::vector<gidx> gstr(idx.size(), 1);
  for (std::size_t i = idx.size() - 1; i-- > 0;) gstr[i] = gstr[i + 1] * gd[i + 1];
  std::vector<double> buf;
  for (gidx b = 0; b < t.blocks(); ++b) {
    buf.resize(static_cast<std::size_t>(t.size(b)));
    locus::get(buf.data(), t.at(b), buf.size());
    const std::vector<gidx> d = t.dims(b);
    std::vector<gidx> c(idx.size(), 0);
    for (gidx e = 0; e < t.size(b); ++e) {
      gidx off = 0;
      for (std::size_t i = 0; i < idx.size(); ++i)
        off += (t.tiles_of(b)[i] * p.index.at(idx[i]).tile + c[i]) * gstr[i];
      dense[static_cast<std::size_t>(off)] = buf[static_cast<std::size_t>(e)];
      odometer_next(c, d, idx.size());
    }
  }
  return dense;
}

void reference(const Problem& p, std::vector<double>& c, std::vector<double>& c_abs) {
  const Contraction& k = p.con;
  auto dense = [&](const std::string& idx, int which) {
    const std::vector<gidx> d = dense_dims(p, idx);
    std::vector<double> v(static_cast<std::size_t>(product(d)));
    std::vector<gidx> coord(idx.size(), 0);
    for (std::size_t e = 0; e < v.size(); ++e) {
      v[e] = TiledTensor::nonzero(p, idx, coord) ? TiledTensor::value(p, which, coord) : 0.0;
      odometer_next(coord, d, idx.size());
    }
    return v;
  };
  const std::vector<double> a = dense(k.a, 0), b = dense(k.b, 1);
  const std::vector<gidx> cd = dense_dims(p, k.c);
  c.assign(static_cast<std::size_t>(product(cd)), 0.0);
  c_abs.assign(c.size(), 0.0);
  // every index: C's, then the contracted ones; strides in each tensor
  const std::string all = k.c + k.contracted;
  auto strides = [&](const std::string& idx) {
    const std::vector<gidx> d = dense_dims(p, idx);
    std::vector<gidx> s(all.size(), 0);
    gidx st = 1;
    for (std::size_t i = idx.size(); i-- > 0;) {
      s[all.find(idx[i])] = st;
      st *= d[i];
    }
    return s;
  };
  const std::vector<gidx> sa = strides(k.a), sb = strides(k.b), sc = strides(k.c);
  std::vector<gidx> ext;
  for (char ch : all) ext.push_back(p.index.at(ch).extent);
  std::vector<gidx> ctr(all.size(), 0);
  gidx oa = 0, ob = 0, oc = 0;
  const gidx total = product(ext);
  for (gidx n = 0; n < total; ++n) {
    const double x = a[static_cast<std::size_t>(oa)], y = b[static_cast<std::size_t>(ob)];
    c[static_cast<std::size_t>(oc)] += x * y;
    c_abs[static_cast<std::size_t>(oc)] += std::fabs(x * y);
    odometer_next(ctr, ext, all.size(), [&](std::size_t d, gidx delta) {
      oa += delta * sa[d];
      ob += delta * sb[d];
      oc += delta * sc[d];
    });
  }
}

}  // namespace tensor_contract
