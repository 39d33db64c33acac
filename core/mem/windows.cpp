// The MPI windows under segments (shared_pages.hpp): shared pages per
// node and a window per segment.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "mem/shared_pages.hpp"

namespace locus::detail {

std::size_t page_round(std::size_t bytes) {
  static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

namespace {
// A part's first byte, moved up to a page boundary: MPICH maps every part
// at a page, Open MPI at a page plus a header (0x108 seen), and the areas
// put in shared memory are cache-line aligned types (aligned vector moves
// on them fault otherwise). The offset within a page is the same in every
// process of the node, so every process finds the same byte.
char* page_align(void* p) {
  const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t page = static_cast<std::uintptr_t>(page_round(1));
  return reinterpret_cast<char*>((a + page - 1) / page * page);
}
}  // namespace

MPI_Win allocate_shared_pages(std::size_t bytes, MPI_Comm comm, void** base) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  MPI_Win win;
  // one page more than asked for, so that the part can start at a page
  const std::size_t ask = bytes > 0 ? page_round(bytes) + page_round(1) : 0;
  MPI_Win_allocate_shared(static_cast<MPI_Aint>(ask), 1, info, comm, base, &win);
  MPI_Info_free(&info);
  if (bytes > 0) *base = page_align(*base);
  return win;
}

char* shared_part(MPI_Win win, int rank, MPI_Aint* size) {
  MPI_Aint sz = 0;
  int unit = 0;
  void* p = nullptr;
  MPI_Win_shared_query(win, rank, &sz, &unit, &p);
  if (sz <= 0 || p == nullptr) {
    if (size) *size = 0;
    return static_cast<char*>(p);
  }
  char* a = page_align(p);
  if (size) *size = sz - static_cast<MPI_Aint>(a - static_cast<char*>(p));
  return a;
}

MPI_Win create_segment_window(void* base, std::size_t bytes, MPI_Comm comm) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "same_disp_unit", "true");
  MPI_Win win;
  MPI_Win_create(bytes > 0 ? base : nullptr, static_cast<MPI_Aint>(bytes), 1, info, comm, &win);
  MPI_Info_free(&info);
  open_epoch(win);
  return win;
}

void free_segment_window(MPI_Win& win) {
  close_epoch(win);
  MPI_Win_free(&win);
}

#ifdef LOCUS_SMPI
namespace {
// This rank's windows whose epoch rma_epoch opened (SMPI privatizes the
// library's globals: one list per simulated rank).
std::vector<MPI_Win>& opened_epochs() {
  static std::vector<MPI_Win> opened;
  return opened;
}
}  // namespace

void open_epoch(MPI_Win) {}

void rma_epoch(MPI_Win win) {
  std::vector<MPI_Win>& opened = opened_epochs();
  if (win == MPI_WIN_NULL || std::find(opened.begin(), opened.end(), win) != opened.end()) return;
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  opened.push_back(win);
}

void close_epoch(MPI_Win win) {
  std::vector<MPI_Win>& opened = opened_epochs();
  const auto it = std::find(opened.begin(), opened.end(), win);
  if (it == opened.end()) return;
  MPI_Win_unlock_all(win);
  opened.erase(it);
}
#else
void open_epoch(MPI_Win win) {
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
}

void close_epoch(MPI_Win win) {
  MPI_Win_unlock_all(win);
}
#endif

}  // namespace locus::detail
