// A minimal kokkos-tools connector for the tests: records the names of the
// profiling regions and kernels a run shows to tools, one file per process
// ($LOCUS_KOKKOS_REGIONS.<pid>, written at finalize), the way Caliper's or
// space-time-stack's connector would see them.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

namespace {
std::set<std::string>& names() {
  static std::set<std::string> n;
  return n;
}
// spmv's task mode launches kernels from its communication thread too.
std::mutex names_mutex;
void record(std::string name) {
  std::lock_guard<std::mutex> lock(names_mutex);
  names().insert(std::move(name));
}
int depth = 0, max_depth = 0;
}  // namespace

extern "C" {
void kokkosp_init_library(const int, const std::uint64_t, const std::uint32_t, void*) {}

void kokkosp_finalize_library() {
  const char* base = std::getenv("LOCUS_KOKKOS_REGIONS");
  if (!base) return;
  const std::string path = std::string(base) + "." + std::to_string(getpid());
  if (std::FILE* f = std::fopen(path.c_str(), "w")) {
    for (const auto& n : names()) std::fprintf(f, "%s\n", n.c_str());
    std::fprintf(f, "max_depth %d\nopen_at_end %d\n", max_depth, depth);
    std::fclose(f);
  }
}

void kokkosp_push_profile_region(const char* name) {
  record(std::string("region ") + name);
  max_depth = ++depth > max_depth ? depth : max_depth;
}

void kokkosp_pop_profile_region() {
  --depth;
}

void kokkosp_begin_parallel_for(const char* name, const std::uint32_t, std::uint64_t* id) {
  record(std::string("kernel ") + name);
  *id = 0;
}
void kokkosp_end_parallel_for(const std::uint64_t) {}
void kokkosp_begin_parallel_reduce(const char* name, const std::uint32_t, std::uint64_t* id) {
  record(std::string("kernel ") + name);
  *id = 0;
}
void kokkosp_end_parallel_reduce(const std::uint64_t) {}
}
