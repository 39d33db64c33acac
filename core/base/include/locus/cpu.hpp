#pragma once
// What this CPU offers, read once per process: the instruction-set features
// a host-only fast path relies on, and the cache sizes kernels block for.
// Every path that uses one of them asks here, at run time, and has a
// portable fallback; nothing is decided by the build machine's CPU.
//
// LOCUS_CPU_HIDE=rtm,avx2,avx512,stream (or "all") hides features from
// every caller, so that a developer on any CPU runs the fallbacks (the test
// suite registers runs with each hidden). LOCUS_CPU_CACHE=l1d:48k,l2:1m,l3:32m
// replaces detected cache sizes (to try another CPU's blocking). A hidden
// feature is reported as hidden in the summary's machine block.
#include <cstddef>
#include <string>

namespace locus::cpu {

struct Features {
  bool rtm = false;               // Intel TSX restricted transactional memory (xbegin/xend)
  bool avx2 = false;              // 256-bit integer/float vectors
  bool avx512f = false;           // 512-bit vectors (foundation)
  bool streaming_stores = false;  // 256-bit non-temporal stores (vmovntpd; needs AVX)
  std::size_t l1d = 0;            // data cache per core, bytes (0: unknown)
  std::size_t l2 = 0;             // per core (as the OS reports one instance), bytes
  std::size_t l3 = 0;             // one instance (shared), bytes
  std::string vendor;             // CPUID vendor string (GenuineIntel, AuthenticAMD, ...)
  std::string hidden;             // features hidden by LOCUS_CPU_HIDE, comma-separated
  std::string caches_from;        // "sysfs", "sysconf", "LOCUS_CPU_CACHE", "default"
  std::string error;              // a bad LOCUS_CPU_HIDE / LOCUS_CPU_CACHE (locus::run reports it)
};

// The features of this process's CPU after LOCUS_CPU_HIDE / LOCUS_CPU_CACHE
// (read once, on first call; thread-safe).
const Features& features();

// Reads the features again (tests that change the environment variables).
void reset_for_tests();

// "rtm avx2 avx512f streaming_stores" (what is present and not hidden).
std::string feature_list();
// "l1d 48 KiB, l2 2 MiB, l3 260 MiB (sysfs)".
std::string cache_list();

// The CPU as it is, LOCUS_CPU_HIDE not applied: what a library's own
// kernels may use (tensor_contract names the OpenBLAS kernels to run with
// it; ./locus's blas_coretype applies the same rule to /proc/cpuinfo).
struct HardwareIsa {
  bool avx2_fma = false;    // AVX2 and FMA: OpenBLAS's Haswell kernels
  bool avx512_skx = false;  // AVX-512 F, BW, DQ and VL: OpenBLAS's SkylakeX kernels
};
HardwareIsa hardware_isa();

// Rows of a 3-plane stencil block (rows of `row_bytes` bytes, three planes
// reread) that fit a share of L2: the cache blocking of heat3d's sweep.
// Never below 4 or above `rows`.
long stencil_block_rows(std::size_t row_bytes, long rows);

}  // namespace locus::cpu
