#pragma once
// Internal: the output this process is writing, as the signal handler and
// the output watcher (reaper.cpp) see it; H5Output keeps it up to date.
namespace locus::detail {

// The output this process is writing (rank 0), for the signal handler:
// removed when a run is terminated. Plain arrays: read in a signal handler.
extern char g_output_tmp[4096];
extern char g_output_lock[4096];
// Set when an output whose write failed is abandoned (see output_abandoned).
extern bool g_output_abandoned;

}  // namespace locus::detail
