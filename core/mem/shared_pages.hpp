#pragma once
// Internal: the MPI windows under segments (windows.cpp): shared pages per
// node and a window per segment.
#include <mpi.h>

#include <cstddef>
#include <string>

namespace locus::detail {

// Collective over comm: a window over `bytes` at `base` (displacement unit
// 1), opened with lock_all(MPI_MODE_NOCHECK) (open_epoch). Progress
// processes join the world team's windows with 0 bytes.
MPI_Win create_segment_window(void* base, std::size_t bytes, MPI_Comm comm);
// Closes the epoch (close_epoch) and frees the window (collective).
void free_segment_window(MPI_Win& win);

// The passive-target epoch of a window of the remote path (segment and team
// windows): lock_all(MPI_MODE_NOCHECK), never closed before the window is
// freed. open_epoch when the window is created, rma_epoch before every RMA
// call on it, close_epoch before it is freed.
//
// The real build opens the epoch in open_epoch and closes it in
// close_epoch; rma_epoch costs nothing. The SMPI build (SimGrid 3.32) opens
// it at the window's first RMA call instead (rma_epoch) and closes only
// epochs it opened: there, lock_all and unlock_all lock and unlock every
// rank one by one, and each unlock searches the target's list of lockers,
// so one window's unlock_all by every rank costs O(ranks^3) (86 s of this
// host's CPU at 1,024 ranks, lock_all 2.3 s), while the two-sided
// baselines and the message route the SMPI build runs make no RMA call.
void open_epoch(MPI_Win win);
void close_epoch(MPI_Win win);
#ifdef LOCUS_SMPI
void rma_epoch(MPI_Win win);
#else
inline void rma_epoch(MPI_Win) {}
#endif
// Collective over comm (one node): MPI_Win_allocate_shared of `bytes`
// rounded up to whole pages, non-contiguous so that every part starts on its
// own page (parts share no cache line). Segments and the progress engine's
// memory are allocated this way.
MPI_Win allocate_shared_pages(std::size_t bytes, MPI_Comm comm, void** base);
// Rank `rank`'s part of a window from allocate_shared_pages, in this
// process's mapping, starting at a page (as `base` above); `size` (may be
// null) gets its usable bytes. Use it instead of MPI_Win_shared_query.
char* shared_part(MPI_Win win, int rank, MPI_Aint* size);
// `bytes` rounded up to whole pages.
std::size_t page_round(std::size_t bytes);

}  // namespace locus::detail
