// CPU features and cache sizes, read once (locus/cpu.hpp).
#include "locus/cpu.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include "base/cpu_parse.hpp"
#include "locus/error.hpp"
#include "locus/kokkos.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define LOCUS_CPU_X86 1
#else
#define LOCUS_CPU_X86 0
#endif

namespace locus::cpu {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> split_list(const std::string& spec) {
  std::vector<std::string> out;
  std::stringstream ss(spec);
  std::string w;
  while (std::getline(ss, w, ',')) {
    w.erase(0, w.find_first_not_of(" \t"));
    w.erase(w.find_last_not_of(" \t") + 1);
    if (!w.empty()) out.push_back(lower(w));
  }
  return out;
}

void detect_isa(Features& f) {
#if LOCUS_CPU_X86
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d)) {
    char v[13] = {};
    std::copy_n(reinterpret_cast<const char*>(&b), 4, v);
    std::copy_n(reinterpret_cast<const char*>(&d), 4, v + 4);
    std::copy_n(reinterpret_cast<const char*>(&c), 4, v + 8);
    f.vendor = v;
  }
  // RTM: CPUID leaf 7, EBX bit 11 (a microcode that disables TSX clears it;
  // one whose transactions always abort is caught by the give-up rule of
  // the transactional paths).
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) f.rtm = (b >> 11) & 1u;
  // AVX2 / AVX-512F with the OS saving the registers (GCC's check reads
  // XGETBV as well as CPUID).
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.streaming_stores = f.avx2;  // the 256-bit streaming stores of the host kernels
#else
  f.vendor = "non-x86";
#endif
}

// One cache level from sysfs: the first index of cpu0 with this level and
// a data or unified type.
std::size_t sysfs_cache(int level) {
  for (int i = 0; i < 16; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream lf(dir + "level");
    if (!lf) break;
    int l = 0;
    lf >> l;
    std::string type;
    std::ifstream(dir + "type") >> type;
    if (l != level || type == "Instruction") continue;
    std::string size;
    std::ifstream(dir + "size") >> size;
    return detail::parse_cache_size(size);
  }
  return 0;
}

void detect_caches(Features& f) {
  f.l1d = sysfs_cache(1);
  f.l2 = sysfs_cache(2);
  f.l3 = sysfs_cache(3);
  f.caches_from = "sysfs";
  if (f.l2 == 0) {
#ifdef _SC_LEVEL2_CACHE_SIZE
    const long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE),
               l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l2 > 0) {
      f.l1d = l1 > 0 ? std::size_t(l1) : 0;
      f.l2 = std::size_t(l2);
      f.l3 = l3 > 0 ? std::size_t(l3) : 0;
      f.caches_from = "sysconf";
    }
#endif
  }
  if (f.l2 == 0) {  // nothing reported (some containers, non-Linux): a common size
    f.l1d = 32u << 10;
    f.l2 = 1u << 20;
    f.l3 = 0;
    f.caches_from = "default (not reported by the OS)";
  }
}

Features detect() {
  Features f;
  detect_isa(f);
  detect_caches(f);
  try {
    if (const char* h = std::getenv("LOCUS_CPU_HIDE"); h && *h) detail::apply_hide(f, h);
    if (const char* c = std::getenv("LOCUS_CPU_CACHE"); c && *c) detail::apply_cache_override(f, c);
  } catch (const Error& e) {
    f.error = e.what();  // locus::run ends every rank with it (callers here may be noexcept)
  }
  return f;
}

std::mutex g_mutex;
std::atomic<Features*> g_features{nullptr};

std::string size_text(std::size_t b) {
  if (b == 0) return "unknown";
  if (b % (1u << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b % (1u << 10) == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

}  // namespace

namespace detail {

void apply_hide(Features& f, const std::string& spec) {
  std::string hidden;
  auto hide = [&](bool& flag, const char* name) {
    flag = false;
    if (hidden.find(name) != std::string::npos) return;
    if (!hidden.empty()) hidden += ',';
    hidden += name;
  };
  for (const std::string& w : split_list(spec)) {
    if (w == "rtm" || w == "all") hide(f.rtm, "rtm");
    if (w == "avx512" || w == "avx512f" || w == "avx2" || w == "all") hide(f.avx512f, "avx512");
    if (w == "avx2" || w == "all") hide(f.avx2, "avx2");
    // without AVX2 the host kernels have no 256-bit streaming stores
    if (w == "stream" || w == "streaming_stores" || w == "avx2" || w == "all")
      hide(f.streaming_stores, "stream");
    if (w != "rtm" && w != "all" && w != "avx512" && w != "avx512f" && w != "avx2" && w != "stream" &&
        w != "streaming_stores" && w != "none")
      throw Error("LOCUS_CPU_HIDE: unknown feature '" + w +
                  "' (known: rtm, avx2, avx512, stream, all, none)");
  }
  f.hidden = hidden;
}

std::size_t parse_cache_size(const std::string& s) {
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) return 0;
  std::size_t pos = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(s, &pos);
  } catch (...) {
    return 0;
  }
  const std::string unit = lower(s.substr(pos));
  if (unit.empty() || unit == "b") return std::size_t(v);
  if (unit == "k" || unit == "kb" || unit == "kib") return std::size_t(v) << 10;
  if (unit == "m" || unit == "mb" || unit == "mib") return std::size_t(v) << 20;
  if (unit == "g" || unit == "gb" || unit == "gib") return std::size_t(v) << 30;
  return 0;
}

void apply_cache_override(Features& f, const std::string& spec) {
  for (const std::string& w : split_list(spec)) {
    const auto colon = w.find(':');
    const std::string key = w.substr(0, colon);
    const std::size_t size = colon == std::string::npos ? 0 : parse_cache_size(w.substr(colon + 1));
    if (size == 0 || (key != "l1d" && key != "l2" && key != "l3"))
      throw Error("LOCUS_CPU_CACHE: '" + w + "' is not LEVEL:SIZE (levels l1d, l2, l3; sizes like 48k, 1m)");
    (key == "l1d" ? f.l1d : key == "l2" ? f.l2 : f.l3) = size;
  }
  f.caches_from = "LOCUS_CPU_CACHE";
}

}  // namespace detail

const Features& features() {
  if (Features* f = g_features.load(std::memory_order_acquire)) return *f;  // the common case: one load
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_features.load(std::memory_order_relaxed))
    g_features.store(new Features(detect()), std::memory_order_release);  // lives for the process
  return *g_features.load(std::memory_order_relaxed);
}

void reset_for_tests() {
  const Features fresh = detect();
  std::lock_guard<std::mutex> lock(g_mutex);
  if (Features* f = g_features.load(std::memory_order_relaxed))
    *f = fresh;
  else
    g_features.store(new Features(fresh), std::memory_order_release);
}

std::string feature_list() {
  const Features& f = features();
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(f.rtm, "rtm");
  add(f.avx2, "avx2");
  add(f.avx512f, "avx512f");
  add(f.streaming_stores, "streaming_stores");
  if (s.empty()) s = "(none of rtm, avx2, avx512f, streaming_stores)";
  if (!f.hidden.empty()) s += " (hidden by LOCUS_CPU_HIDE: " + f.hidden + ")";
  return s;
}

HardwareIsa hardware_isa() {
  HardwareIsa h;
#if LOCUS_CPU_X86
  __builtin_cpu_init();
  h.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  h.avx512_skx = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#endif
  return h;
}

std::string cache_list() {
  const Features& f = features();
  return "l1d " + size_text(f.l1d) + ", l2 " + size_text(f.l2) + ", l3 " + size_text(f.l3) + " (" +
         f.caches_from + ")";
}

}  // namespace locus::cpu

namespace locus {
bool host_avx2() {
  return LOCUS_HOST_AVX2 && kHostExec && cpu::features().avx2;
}
}  // namespace locus

namespace locus::cpu {

long stencil_block_rows(std::size_t row_bytes, long rows) {
  // A quarter of L2 for the three planes' rows the block rereads: the other
  // three quarters hold the output rows and the prefetched plane above.
  // (Intel host, 2 MiB L2, nx = 256: 21 rows; the constant 32 it replaces
  // measured 0.742-0.779 of triad against 0.713-0.752 for no blocking.)
  const std::size_t share = features().l2 / 4;
  long r = row_bytes ? static_cast<long>(share / (3 * row_bytes)) : rows;
  r = std::max(4L, r);
  return std::max(1L, std::min(r, rows));
}

}  // namespace locus::cpu
