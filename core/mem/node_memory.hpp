#pragma once
// Internal: what a node and a process can still hold (limits.cpp), for the
// checks before an allocation (locus/limits.hpp, segments, the progress
// engine's staging areas).
#include <string>

namespace locus::detail {

// "1.5 GiB"
std::string gib(double bytes);
// MemAvailable of /proc/meminfo in bytes; -1 if unknown. The one reader.
double mem_available();
// Bytes this node can still map in shared memory (free space in /dev/shm,
// MemAvailable and the control group's room, the smallest; -1 if unknown);
// `what` says which and how much.
double node_capacity(std::string& what);
// The problem with mapping `shared` more bytes of shared memory and
// allocating `private_bytes` in this process ("" when both fit).
std::string process_limit_problem(double shared, double private_bytes);

}  // namespace locus::detail
