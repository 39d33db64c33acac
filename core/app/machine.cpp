// The machine description of every run (machine.hpp), the Kokkos launch
// record it shows, and the STREAM kernels.
#include "locus/machine.hpp"

#ifndef LOCUS_SMPI
#include <hdf5.h>
#endif
#include <mpi.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <thread>

#include "app/run_parts.hpp"
#include "build_info.hpp"
#include "locus/cpu.hpp"
#include "locus/kokkos.hpp"
#include "locus/version.hpp"
#include "locus/wait.hpp"

namespace locus {

namespace {
std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0 || line.rfind("Model", 0) == 0) {
      auto c = line.find(':');
      if (c != std::string::npos) {
        std::string v = line.substr(c + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        return v;
      }
    }
  }
  return "unknown";
}

std::string os_name() {
  std::ifstream f("/etc/os-release");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return "unknown";
}

// Distinct "physical id"s in /proc/cpuinfo (1 when the kernel names none).
std::string sockets() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  std::set<std::string> ids;
  while (std::getline(f, line))
    if (line.rfind("physical id", 0) == 0) ids.insert(line.substr(line.find(':') + 1));
  return std::to_string(ids.empty() ? 1 : ids.size());
}

std::string numa_nodes() {
  std::error_code ec;
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("node", 0) == 0 && name.size() > 4 && std::isdigit(static_cast<unsigned char>(name[4])))
      ++n;
  }
  return n ? std::to_string(n) : "unknown";
}

// The variables that change how MPI, OpenMP and Kokkos behave, sorted
// (LD_PRELOAD too: a preloaded library can change how MPI waits).
std::string relevant_environment() {
  std::vector<std::string> v;
  for (char** e = environ; e && *e; ++e) {
    const char* s = *e;
    for (const char* p : {"MPIR_CVAR_", "OMPI_MCA_", "OMP_", "KOKKOS_", "LD_PRELOAD="})
      if (std::strncmp(s, p, std::strlen(p)) == 0) v.emplace_back(s);
  }
  std::sort(v.begin(), v.end());
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : " ") + x;
  return out.empty() ? "(none set)" : out;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}
}  // namespace

namespace {
std::string g_kokkos_args, g_kokkos_threads_source, g_kokkos_binding;
}

void set_kokkos_launch(const std::string& args, const std::string& threads_source,
                       const std::string& binding) {
  g_kokkos_args = args;
  g_kokkos_threads_source = threads_source;
  g_kokkos_binding = binding;
}

std::vector<std::pair<std::string, std::string>> machine_description() {
  std::vector<std::pair<std::string, std::string>> m;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  m.emplace_back("host", host);
  m.emplace_back("cpu_model", cpu_model());
  // what the run-time paths were allowed to use (locus/cpu.hpp), after
  // LOCUS_CPU_HIDE / LOCUS_CPU_CACHE
  m.emplace_back("cpu_vendor", cpu::features().vendor);
  m.emplace_back("cpu_features", cpu::feature_list());
  m.emplace_back("cpu_caches", cpu::cache_list());
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  m.emplace_back("cores", std::to_string(cores));
  double mem = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  m.emplace_back("memory_gib", fixed(mem / (1024.0 * 1024.0 * 1024.0), 1));
  m.emplace_back("sockets", sockets());
  m.emplace_back("numa_nodes", numa_nodes());
  m.emplace_back("os", os_name());
  struct utsname u {};
  m.emplace_back("kernel", uname(&u) == 0 ? std::string(u.sysname) + " " + u.release : "unknown");
  m.emplace_back("compiler", LOCUS_CXX_COMPILER);
  m.emplace_back("flags", LOCUS_CXX_FLAGS);
  m.emplace_back("build_type", LOCUS_BUILD_TYPE);
  m.emplace_back("mpi_library", mpi_library());
  const int kv = KOKKOS_VERSION;
  m.emplace_back("kokkos", std::to_string(kv / 10000) + "." + std::to_string(kv / 100 % 100) + "." +
                               std::to_string(kv % 100));
  m.emplace_back("kokkos_execution_space", ExecSpace::name());
  m.emplace_back("kokkos_memory_space", MemSpace::name());
  m.emplace_back("kokkos_concurrency",
                 Kokkos::is_initialized() ? std::to_string(ExecSpace().concurrency()) : "not initialized");
  m.emplace_back("kokkos_threads_per_rank_from",
                 g_kokkos_threads_source.empty() ? "-" : g_kokkos_threads_source);
  m.emplace_back("kokkos_binding", g_kokkos_binding.empty() ? "-" : g_kokkos_binding);
  m.emplace_back("kokkos_args", g_kokkos_args.empty() ? "none" : g_kokkos_args);
#ifdef LOCUS_SMPI
  m.emplace_back("hdf5", "none (SMPI build)");
#else
  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion(&maj, &min, &rel);
  m.emplace_back("hdf5", std::to_string(maj) + "." + std::to_string(min) + "." + std::to_string(rel));
#endif
  m.emplace_back("locus", version());
  m.emplace_back("git_commit", git_commit());
  // How the ranks were started (./locus run and studies set it) and the
  // environment that changes MPI, OpenMP and Kokkos.
  const char* launch = std::getenv("LOCUS_LAUNCH_LINE");
  m.emplace_back("launch_line", launch && *launch ? launch : "(not started by ./locus)");
  m.emplace_back("environment", relevant_environment());
  return m;
}

namespace {
// Best of `repeats` passes of kernel(a, b, c, n) over three arrays of n
// doubles (a = 0, b = 1, c = 2), in seconds. With a communicator, its
// ranks start every pass together and a pass takes its slowest rank's time.
template <class Kernel>
double best_stream_pass(long n, int repeats, MPI_Comm comm, Kernel kernel) {
  std::unique_ptr<double[]> a(new double[static_cast<std::size_t>(n)]);
  std::unique_ptr<double[]> b(new double[static_cast<std::size_t>(n)]);
  std::unique_ptr<double[]> c(new double[static_cast<std::size_t>(n)]);
  for (long i = 0; i < n; ++i) {
    a[i] = 0.0;
    b[i] = 1.0;
    c[i] = 2.0;
  }
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    if (comm != MPI_COMM_NULL) locus::yielding::barrier(comm);
    auto t0 = std::chrono::steady_clock::now();
    kernel(a.get(), b.get(), c.get(), n);
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (comm != MPI_COMM_NULL) locus::yielding::allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
    best = std::min(best, t);
  }
  // keep the result alive
  volatile double sink = a[static_cast<std::size_t>(n / 2)];
  (void)sink;
  return best;
}
}  // namespace

double stream_triad_gbs(long n, int repeats, MPI_Comm comm) {
  const double t = best_stream_pass(
      n, repeats, comm,
      [](double* __restrict a, const double* __restrict b, const double* __restrict c, long len) {
        for (long i = 0; i < len; ++i) a[i] = b[i] + 3.0 * c[i];
      });
  return 24.0 * static_cast<double>(n) / t / 1e9;
}

double stream_scale_gbs(long n, int repeats, MPI_Comm comm) {
  const double t = best_stream_pass(
      n, repeats, comm, [](double* __restrict a, const double* __restrict b, const double*, long len) {
        for (long i = 0; i < len; ++i) a[i] = 3.0 * b[i];
      });
  return 16.0 * static_cast<double>(n) / t / 1e9;
}

double stream_read_gbs(long n, int repeats, MPI_Comm comm) {
  double sum = 0;
  const double t = best_stream_pass(
      n, repeats, comm, [&sum](double*, const double* __restrict b, const double* __restrict c, long len) {
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        long i = 0;
        for (; i + 3 < len; i += 4) {
          s0 += b[i] * c[i];
          s1 += b[i + 1] * c[i + 1];
          s2 += b[i + 2] * c[i + 2];
          s3 += b[i + 3] * c[i + 3];
        }
        for (; i < len; ++i) s0 += b[i] * c[i];
        sum += s0 + s1 + s2 + s3;
      });
  volatile double sink = sum;
  (void)sink;
  return 16.0 * static_cast<double>(n) / t / 1e9;
}

namespace detail {

// --machine: the machine descriptor (rank 0's) and STREAM triad bandwidth
// measured by every rank at once (32 MiB per array: out of cache), and in
// cache (the three arrays in half of L2), as YAML.
void print_machine(const AppInfo& app, int rank, int size) {
  locus::yielding::barrier(MPI_COMM_WORLD);
  double mine = stream_triad_gbs(4L << 20, 5);
  std::vector<double> all(static_cast<std::size_t>(size));
  locus::yielding::gather(&mine, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  const std::size_t l2 = cpu::features().l2 ? cpu::features().l2 : (std::size_t{256} << 10);
  const long in_cache = static_cast<long>(l2 / 2 / (3 * sizeof(double)));
  locus::yielding::barrier(MPI_COMM_WORLD);
  double cached = stream_triad_gbs(in_cache, 2000), cached_min = 0;
  locus::yielding::reduce(&cached, &cached_min, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
  if (rank != 0) return;
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "locus_machine" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "app" << YAML::Value << app.name;
  for (const auto& [k, v] : machine_description()) out << YAML::Key << k << YAML::Value << v;
  out << YAML::Key << "date" << YAML::Value << iso_date_now();
  out << YAML::Key << "ranks" << YAML::Value << size;
  double total = 0;
  out << YAML::Key << "stream_triad_gbs_per_rank" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (double g : all) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", g);
    out << buf;
    total += g;
  }
  out << YAML::EndSeq;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", total);
  out << YAML::Key << "stream_triad_gbs_total" << YAML::Value << buf;
  std::snprintf(buf, sizeof buf, "%.2f", cached_min);
  out << YAML::Key << "stream_triad_in_cache_gbs_per_rank" << YAML::Value << buf;
  out << YAML::Key << "stream_triad_in_cache_bytes" << YAML::Value << 3 * sizeof(double) * in_cache;
  out << YAML::EndMap << YAML::EndMap;
  std::printf("%s\n", out.c_str());
}

}  // namespace detail

}  // namespace locus
