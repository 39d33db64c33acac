// Nodes: which units share a node (real shared-memory nodes, or emulated
// ones of a fixed size), and the processor names.
#include "locus/node_map.hpp"

#include <mpi.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "locus/wait.hpp"

namespace locus {

std::vector<std::string> processor_names(MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::vector<char> all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  locus::yielding::allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                             MPI_CHAR, comm);
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r) out.emplace_back(&all[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
  return out;
}

std::vector<int> detect_nodes(MPI_Comm comm, int emulated) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Comm shared;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
  int local = 0;
  MPI_Comm_rank(shared, &local);
  int leader = rank;  // lowest world rank of my real node
  locus::yielding::allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, shared);
  MPI_Comm_free(&shared);
  int key[2] = {leader, emulated > 0 ? local / emulated : 0};
  std::vector<int> all(2 * static_cast<std::size_t>(size));
  locus::yielding::allgather(key, 2, MPI_INT, all.data(), 2, MPI_INT, comm);
  // Number the distinct (leader, group) pairs in order of first appearance.
  std::vector<std::pair<int, int>> seen;
  std::vector<int> node_of(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    std::pair<int, int> k{all[2 * r], all[2 * r + 1]};
    auto it = std::find(seen.begin(), seen.end(), k);
    if (it == seen.end()) {
      seen.push_back(k);
      it = seen.end() - 1;
    }
    node_of[static_cast<std::size_t>(r)] = static_cast<int>(it - seen.begin());
  }
  return node_of;
}
int NodeMap::nodes() const {
  return node_of.empty() ? 0 : *std::max_element(node_of.begin(), node_of.end()) + 1;
}

std::string NodeMap::describe() const {
  std::ostringstream os;
  for (int n = 0; n < nodes(); ++n) {
    os << "node " << n << ": units";
    for (std::size_t u = 0; u < node_of.size(); ++u)
      if (node_of[u] == n) os << ' ' << u;
    for (std::size_t u = 0; u < node_of.size(); ++u)
      if (node_of[u] == n) {
        os << " (" << hosts[u] << (emulated_size > 0 ? ", emulated" : "") << ")";
        break;
      }
    os << '\n';
  }
  return os.str();
}

}  // namespace locus
