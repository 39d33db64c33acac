#include "locus/limits.hpp"

#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "locus/collective.hpp"
#include "locus/counts.hpp"
#include "locus/wait.hpp"
#include "mem/node_memory.hpp"
#include "mem/shared_pages.hpp"

namespace locus {

namespace {

// What MPI, HDF5 and the C++ runtime still map after a check (buffers,
// thread stacks, file views): kept free below every limit.
constexpr double kSlack = 64.0 * 1024 * 1024;

// A field of /proc/self/status in bytes ("VmSize:  123 kB"), or -1.
double status_bytes(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, key.size() + 1, key + ":") == 0) {
      std::istringstream ss(line.substr(key.size() + 1));
      double kib = -1;
      ss >> kib;
      return kib < 0 ? -1.0 : kib * 1024.0;
    }
  return -1.0;
}

// The soft limit of a resource in bytes, or -1 when unlimited.
double soft_limit(int resource) {
  struct rlimit rl {};
  if (getrlimit(resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return -1.0;
  return static_cast<double>(rl.rlim_cur);
}

// A number in a control-group file ("max" and v1's near-2^63: none), or -1.
double cgroup_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return -1.0;
  char* end = nullptr;
  const double v = std::strtod(word.c_str(), &end);
  if (end == word.c_str() || v >= 4.0e18) return -1.0;
  return v;
}

// Reclaimable page cache of a control group (inactive file pages).
double cgroup_inactive_file(const std::string& dir, bool v1) {
  std::ifstream in(dir + "/memory.stat");
  std::string key;
  double v = 0;
  const std::string want = v1 ? "total_inactive_file" : "inactive_file";
  while (in >> key >> v)
    if (key == want) return v;
  return 0.0;
}

// The cgroup's directory path of this process for the memory controller
// ("/a/b"), and whether it is a v1 hierarchy.
bool cgroup_path(std::string& path, bool& v1) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  bool found = false;
  while (std::getline(in, line)) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string p = line.substr(b + 1);
    std::stringstream cs(controllers);
    std::string c;
    bool memory = false;
    while (std::getline(cs, c, ',')) memory = memory || c == "memory";
    if (memory) {  // v1 memory controller: preferred
      path = p;
      v1 = true;
      return true;
    }
    if (controllers.empty() && line.compare(0, 2, "0:") == 0) {
      path = p;
      v1 = false;
      found = true;
    }
  }
  return found;
}

}  // namespace

double address_space_headroom(std::string& what) {
  const double limit = soft_limit(RLIMIT_AS);
  if (limit < 0) return -1.0;
  const double used = std::max(0.0, status_bytes("VmSize"));
  const double room = std::max(0.0, limit - used - kSlack);
  what = "the address-space limit (RLIMIT_AS, ulimit -v) of " + detail::gib(limit) + " leaves " +
         detail::gib(room) + " per process";
  return room;
}

double private_headroom(std::string& what) {
  double room = address_space_headroom(what);
  const double limit = soft_limit(RLIMIT_DATA);
  if (limit >= 0) {
    const double used = std::max(0.0, status_bytes("VmData"));
    const double data = std::max(0.0, limit - used - kSlack);
    if (room < 0 || data < room) {
      room = data;
      what = "the data limit (RLIMIT_DATA, ulimit -d) of " + detail::gib(limit) + " leaves " +
             detail::gib(data) + " per process";
    }
  }
  return room;
}

double cgroup_headroom(std::string& what) {
  std::string path;
  bool v1 = false;
  if (!cgroup_path(path, v1)) return -1.0;
  const char* env = std::getenv("LOCUS_CGROUP_ROOT");
  std::string root = env && *env ? env : "/sys/fs/cgroup";
  if (v1) root += "/memory";
  const std::string limit_file = v1 ? "memory.limit_in_bytes" : "memory.max";
  const std::string usage_file = v1 ? "memory.usage_in_bytes" : "memory.current";
  // From the process's group up to the root; inside a container the group's
  // path is often not visible and the mount's root is the container's group.
  double best = -1.0;
  std::string rel = path;
  for (;;) {
    const std::string dir = root + (rel == "/" ? "" : rel);
    const double limit = cgroup_number(dir + "/" + limit_file);
    if (limit >= 0) {
      const double usage =
          std::max(0.0, cgroup_number(dir + "/" + usage_file) - cgroup_inactive_file(dir, v1));
      const double room = std::max(0.0, limit - usage - kSlack);
      if (best < 0 || room < best) {
        best = room;
        what = detail::gib(room) + " left under its control group's memory limit of " + detail::gib(limit) +
               " (" + dir + "/" + limit_file + ")";
      }
    }
    if (rel.empty() || rel == "/") break;
    const auto slash = rel.find_last_of('/');
    rel = slash == 0 || slash == std::string::npos ? "/" : rel.substr(0, slash);
  }
  return best;
}

int node_cores() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

namespace detail {

double mem_available() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  double kib = 0;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024.0;
  return -1.0;
}

std::string gib(double bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return text;
}

// Bytes this node can still map: free space of /dev/shm (where the MPI
// library backs shared-memory windows) and MemAvailable, the smaller.
double node_capacity(std::string& what) {
  double cap = -1.0;
  struct statvfs fs;
  if (statvfs("/dev/shm", &fs) == 0) {
    cap = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
    what = gib(cap) + " free in /dev/shm";
  }
  const double avail = mem_available();
  if (avail >= 0 && (cap < 0 || avail < cap)) {
    cap = avail;
    what = gib(avail) + " of memory available";
  }
  std::string group;
  const double room = cgroup_headroom(group);  // a batch job's memory limit
  if (room >= 0 && (cap < 0 || room < cap)) {
    cap = room;
    what = group;
  }
  return cap;
}

std::string process_limit_problem(double shared, double private_bytes) {
  std::string what;
  const double as = address_space_headroom(what);
  if (as >= 0 && shared + private_bytes > as) {
    std::string parts = gib(shared) + " of shared segments";
    if (private_bytes > 0) parts += " and " + gib(private_bytes) + " of private memory";
    return "needs " + gib(shared + private_bytes) + " of address space in one process (" + parts + "), but " +
           what;
  }
  const double data = private_headroom(what);
  if (data >= 0 && private_bytes > data)
    return "needs " + gib(private_bytes) + " of private memory in one process, but " + what;
  return "";
}

}  // namespace detail

void require_memory(Team& team, double shared, double private_bytes, const std::string& what) {
  using detail::gib;
  note_private_bytes(private_bytes);  // the footprint (counts.hpp): the largest declaration
  double mine[2] = {shared, private_bytes}, node[2] = {0, 0};
  locus::yielding::allreduce(mine, node, 2, MPI_DOUBLE, MPI_SUM, team.node_comm());
  int units = 1, node_rank = 0;
  MPI_Comm_size(team.node_comm(), &units);
  MPI_Comm_rank(team.node_comm(), &node_rank);
  const std::string on = " (" + std::to_string(units) + " unit" + (units == 1 ? "" : "s") + " on this node)";
  std::string problem;
  if (node_rank == 0) {
    // the node: shared memory first (/dev/shm, MemAvailable, the control
    // group: detail::node_capacity), then everything against memory
    std::string cap_what;
    const double cap = detail::node_capacity(cap_what);
    double avail = detail::mem_available();
    std::string avail_what = avail >= 0 ? gib(avail) + " of memory available" : "";
    std::string cg_what;
    const double cg = cgroup_headroom(cg_what);
    if (cg >= 0 && (avail < 0 || cg < avail)) {
      avail = cg;
      avail_what = cg_what;
    }
    const double total = node[0] + node[1];
    if (cap >= 0 && node[0] > cap)
      problem = "needs " + gib(node[0]) + " of shared memory, but the node has " + cap_what + on;
    else if (avail >= 0 && total > avail)
      problem = "needs " + gib(total) + " of memory (" + gib(node[0]) + " shared, " + gib(node[1]) +
                " private), but the node has " + avail_what + on;
  }
  if (problem.empty()) {
    // this process: it maps every shared part of its node
    const std::string p = detail::process_limit_problem(node[0], private_bytes);
    if (!p.empty()) problem = p + " (unit " + std::to_string(team.rank()) + ")";
  }
  if (!problem.empty()) problem = what + ": " + problem + "; make the problem smaller or use more nodes";
  collective_require(team.comm(), problem.empty(), problem);
}

void require_threads(MPI_Comm comm, long threads, const std::string& what, double stack) {
  const int cores = node_cores();
  std::string problem;
  if (threads > cores) {
    problem = what + ": " + std::to_string(threads) + " threads per rank, but this node has " +
              std::to_string(cores) + " core" + (cores == 1 ? "" : "s") + " (at most " +
              std::to_string(cores) + ")";
  } else {
    if (stack <= 0) {
      const double s = soft_limit(RLIMIT_STACK);
      stack = s > 0 ? s : 8.0 * 1024 * 1024;
    }
    std::string limit;
    const double room = address_space_headroom(limit);
    if (room >= 0 && double(threads) * stack > room)
      problem = what + ": " + std::to_string(threads) + " threads need " +
                detail::gib(double(threads) * stack) + " of stacks, but " + limit;
  }
  collective_require(comm, problem.empty(), problem);
}

}  // namespace locus
