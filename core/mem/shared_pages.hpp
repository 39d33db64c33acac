#pragma once
// Internal: the MPI windows under segments (windows.cpp): shared pages per
// node and a window per segment.
#include <mpi.h>

#include <cstddef>
#include <string>

namespace locus::detail {

// Collective over comm: a window over `bytes` at `base` (displacement unit
// 1), opened with lock_all(MPI_MODE_NOCHECK). Progress processes join the
// world team's windows with 0 bytes.
MPI_Win create_segment_window(void* base, std::size_t bytes, MPI_Comm comm);
// Closes the epoch and frees the window (collective).
void free_segment_window(MPI_Win& win);
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
