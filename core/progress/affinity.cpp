// CPU placement of application units and progress processes
// (runtime.progress.bind). Design: locus/progress.hpp.
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "locus/wait.hpp"
#include "progress/progress_layout.hpp"

namespace locus::detail {

std::vector<int> place_on_cpus(const std::vector<int>& cpus, const std::vector<HostRank>& ranks) {
  std::vector<int> out(ranks.size(), -1);
  if (cpus.empty()) return out;
  std::vector<int> load(cpus.size(), 0);
  std::vector<std::size_t> slot(ranks.size(), 0);
  std::size_t next = 0;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].server) continue;
    slot[r] = next++ % cpus.size();
    ++load[slot[r]];
  }
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (!ranks[r].server) continue;
    std::vector<char> own(cpus.size(), 0);
    for (int u : ranks[r].serves)
      if (u >= 0 && static_cast<std::size_t>(u) < ranks.size() && !ranks[static_cast<std::size_t>(u)].server)
        own[slot[static_cast<std::size_t>(u)]] = 1;
    const bool any_free = std::find(own.begin(), own.end(), 0) != own.end();
    std::size_t best = cpus.size();
    for (std::size_t c = 0; c < cpus.size(); ++c) {
      if (any_free && own[c]) continue;
      if (best == cpus.size() || load[c] <= load[best]) best = c;
    }
    slot[r] = best;
    ++load[best];
  }
  for (std::size_t r = 0; r < ranks.size(); ++r) out[r] = cpus[slot[r]];
  return out;
}

namespace {

std::vector<int> cpus_of(const cpu_set_t& set) {
  std::vector<int> out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

// One rank's CPU mask. A named struct around cpu_set_t (a typedef of an
// unnamed struct): nvcc 13's front end fails with an internal error on
// std::vector<cpu_set_t> (libstdc++ 12's stl_construct.h).
struct CpuMask {
  cpu_set_t set;
};

// The ranks of this host (their ranks in the layout's communicator) and
// the CPU masks they start with.
struct HostMasks {
  std::vector<int> members;
  cpu_set_t mine;
  std::vector<CpuMask> masks;
  bool all_ok = false;  // every rank could read its mask
};

HostMasks host_masks(MPI_Comm comm, int rank) {
  HostMasks h;
  MPI_Comm host = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host);
  int hsize = 0;
  MPI_Comm_size(host, &hsize);
  h.members.resize(static_cast<std::size_t>(hsize));
  locus::yielding::allgather(&rank, 1, MPI_INT, h.members.data(), 1, MPI_INT, host);

  CPU_ZERO(&h.mine);
  const bool have = sched_getaffinity(0, sizeof h.mine, &h.mine) == 0;
  h.masks.resize(static_cast<std::size_t>(hsize));
  locus::yielding::allgather(&h.mine, sizeof h.mine, MPI_BYTE, h.masks.data(), sizeof h.mine, MPI_BYTE, host);
  int ok = have ? 1 : 0, all_ok = 0;
  locus::yielding::allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, host);
  MPI_Comm_free(&host);
  h.all_ok = all_ok != 0;
  return h;
}

// This host's ranks with their roles; a server serves the units of its
// node whose index there is its own modulo the servers per node.
std::vector<HostRank> host_roles(const ProgressLayout& layout, const std::vector<int>& members, int size) {
  std::vector<int> server_of(static_cast<std::size_t>(size), -1), node_of(static_cast<std::size_t>(size), -1);
  std::vector<int> app_index(static_cast<std::size_t>(size), -1);
  std::vector<int> count_apps, count_servers;
  auto bump = [](std::vector<int>& v, int n) {
    if (static_cast<int>(v.size()) <= n) v.resize(static_cast<std::size_t>(n) + 1, 0);
    return v[static_cast<std::size_t>(n)]++;
  };
  for (std::size_t u = 0; u < layout.app_ranks.size(); ++u) {
    const auto r = static_cast<std::size_t>(layout.app_ranks[u]);
    node_of[r] = layout.app_node[u];
    app_index[r] = bump(count_apps, layout.app_node[u]);
  }
  for (std::size_t s = 0; s < layout.server_ranks.size(); ++s) {
    const auto r = static_cast<std::size_t>(layout.server_ranks[s]);
    node_of[r] = layout.server_node[s];
    server_of[r] = bump(count_servers, layout.server_node[s]);
  }
  std::vector<HostRank> ranks(members.size());
  for (std::size_t i = 0; i < members.size(); ++i) {
    const auto r = static_cast<std::size_t>(members[i]);
    if (server_of[r] < 0) continue;
    ranks[i].server = true;
    for (std::size_t j = 0; j < members.size(); ++j) {
      const auto q = static_cast<std::size_t>(members[j]);
      if (server_of[q] < 0 && node_of[q] == node_of[r] &&
          server_in_node(app_index[q], layout.node_servers) == server_of[r])
        ranks[i].serves.push_back(static_cast<int>(j));
    }
  }
  return ranks;
}

// Every rank's CPU (-1: not bound) and, unless all were bound, the reason
// of the lowest rank that has one.
Binding gather_binding(MPI_Comm comm, int size, int cpu, const std::string& why, bool all_bound) {
  Binding b;
  b.cpu.resize(static_cast<std::size_t>(size));
  locus::yielding::allgather(&cpu, 1, MPI_INT, b.cpu.data(), 1, MPI_INT, comm);
  char text[200] = {};
  if (!why.empty()) std::snprintf(text, sizeof text, "%s", why.c_str());
  std::vector<char> all(static_cast<std::size_t>(size) * sizeof text);
  locus::yielding::allgather(text, sizeof text, MPI_CHAR, all.data(), sizeof text, MPI_CHAR, comm);
  b.how = "auto";
  for (int r = 0; r < size && !all_bound; ++r) {
    const char* t = all.data() + static_cast<std::size_t>(r) * sizeof text;
    if (*t) {
      b.how = std::string(t, strnlen(t, sizeof text));
      break;
    }
  }
  return b;
}

}  // namespace

Binding bind_progress_layout(MPI_Comm comm, const ProgressLayout& layout) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const HostMasks h = host_masks(comm, rank);

  // The launcher bound the ranks when their masks differ or hold one CPU:
  // its placement stands.
  const std::vector<int> cpus = cpus_of(h.mine);
  bool launcher = cpus.size() <= 1;
  for (const CpuMask& m : h.masks) launcher = launcher || !CPU_EQUAL(&m.set, &h.mine);
  std::string why;
  if (!h.all_ok)
    why = "not bound (sched_getaffinity failed)";
  else if (launcher)
    why = "not bound (the launcher bound the ranks, or one CPU)";

  int cpu = -1;
  if (why.empty()) {
    const std::vector<int> placed = place_on_cpus(cpus, host_roles(layout, h.members, size));
    const auto me =
        static_cast<std::size_t>(std::find(h.members.begin(), h.members.end(), rank) - h.members.begin());
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(placed[me], &one);
    if (sched_setaffinity(0, sizeof one, &one) == 0)
      cpu = placed[me];
    else
      why = std::string("not bound (sched_setaffinity: ") + std::strerror(errno) + ")";
  }
  // All or nothing: where any rank could not be bound, every rank goes back
  // to the mask it started with and the summary says why.
  int bound = why.empty() ? 1 : 0, all_bound = 0;
  locus::yielding::allreduce(&bound, &all_bound, 1, MPI_INT, MPI_MIN, comm);
  if (!all_bound && cpu >= 0) {
    sched_setaffinity(0, sizeof h.mine, &h.mine);
    cpu = -1;
  }
  return gather_binding(comm, size, cpu, why, all_bound != 0);
}

}  // namespace locus::detail
