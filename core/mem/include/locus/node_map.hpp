#pragma once
// The node map of a run: which node every unit is on.
//
// Real nodes come from MPI_Comm_split_type(SHARED); *emulated* nodes are
// groups of N consecutive ranks of a real node (`runtime.node_size`, env
// LOCUS_NODE_SIZE), so that the inter-node paths run on one host.
#include <mpi.h>

#include <string>
#include <vector>

namespace locus {

struct NodeMap {
  std::vector<int> node_of;        // world unit -> node index
  std::vector<std::string> hosts;  // world unit -> processor name
  int emulated_size = 0;           // 0: real nodes
  int nodes() const;
  // "node 0: units 0-1 (vm); node 1: ..." one line per node.
  std::string describe() const;
};

// Collective over comm: the node index of every rank (real shared-memory
// nodes, each cut into groups of `emulated` consecutive ranks when
// emulated > 0), numbered in order of first appearance.
std::vector<int> detect_nodes(MPI_Comm comm, int emulated);
// Collective over comm: every rank's processor name.
std::vector<std::string> processor_names(MPI_Comm comm);

}  // namespace locus
