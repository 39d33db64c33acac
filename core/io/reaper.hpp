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

// Removes the .tmp and .lock of the output this process is writing, if
// any (async-signal-safe: the runtime's SIGTERM/SIGINT handler calls it).
void remove_unfinished_output() noexcept;
// True after an output whose write failed was abandoned (not closed): the
// process must not call MPI_Finalize (HDF5's hook would hang).
bool output_abandoned();
// The output watcher's main (the executable started with
// --locus-reap-output LOCK TMP; see H5Output::spawn_reaper).
int reap_output(const char* lock, const char* tmp);
// Called by locus::run: this executable handles --locus-reap-output, so
// outputs may start their watcher (test programs with their own main do not).
void set_reaper_capable();

}  // namespace locus::detail
