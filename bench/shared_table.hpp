#pragma once
// The two MPI tables the random-access benchmarks (gups, ig) compare locus
// with, owned here so that every window is freed:
//   WindowTable  an MPI_Win_allocate window of n words per rank, locked
//                for all (the MPI one-sided baseline); between emulated
//                nodes an MPI_Win_create window over MPI_Alloc_mem memory,
//                which takes the library's inter-node path as locus's
//                segment windows do (Open MPI serves an allocated window
//                of ranks on one host with its shared-memory component);
//   NodeTable    one MPI shared-memory table over the ranks of the node
//                (the raw limit: loads and CPU atomics, no library in the
//                loop), only when every rank shares one real node.
#include <mpi.h>

#include <cstddef>
#include <vector>

namespace bench {

template <class T>
class WindowTable {
 public:
  WindowTable(MPI_Comm comm, std::size_t n, bool emulated_nodes) : own_(emulated_nodes) {
    const auto bytes = static_cast<MPI_Aint>(n * sizeof(T));
    if (own_) {
      MPI_Alloc_mem(bytes, MPI_INFO_NULL, &base_);
      MPI_Win_create(base_, bytes, sizeof(T), MPI_INFO_NULL, comm, &win_);
    } else {
      MPI_Win_allocate(bytes, sizeof(T), MPI_INFO_NULL, comm, &base_, &win_);
    }
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win_);
  }
  ~WindowTable() {
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
    if (own_) MPI_Free_mem(base_);
  }
  WindowTable(const WindowTable&) = delete;
  WindowTable& operator=(const WindowTable&) = delete;
  T* data() const { return base_; }
  MPI_Win win() const { return win_; }

 private:
  bool own_;  // base_ from MPI_Alloc_mem
  T* base_ = nullptr;
  MPI_Win win_ = MPI_WIN_NULL;
};

template <class T>
class NodeTable {
 public:
  // Collective over comm: n words per rank when every rank of comm is on
  // this real node; otherwise nothing is allocated (available() is false).
  NodeTable(MPI_Comm comm, std::size_t n) {
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node_);
    int node_size = 0, size = 0;
    MPI_Comm_size(node_, &node_size);
    MPI_Comm_size(comm, &size);
    if (node_size != size) return;
    MPI_Win_allocate_shared(static_cast<MPI_Aint>(n * sizeof(T)), sizeof(T), MPI_INFO_NULL, node_, &base_,
                            &win_);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win_);
    for (int r = 0; r < node_size; ++r) {
      MPI_Aint bytes = 0;
      int disp = 0;
      T* p = nullptr;
      MPI_Win_shared_query(win_, r, &bytes, &disp, &p);
      parts_.push_back(p);
    }
  }
  ~NodeTable() {
    if (win_ != MPI_WIN_NULL) {
      MPI_Win_unlock_all(win_);
      MPI_Win_free(&win_);
    }
    MPI_Comm_free(&node_);
  }
  NodeTable(const NodeTable&) = delete;
  NodeTable& operator=(const NodeTable&) = delete;
  bool available() const { return win_ != MPI_WIN_NULL; }
  T* data() const { return base_; }                        // my part
  const std::vector<T*>& parts() const { return parts_; }  // every rank's part, by rank
  // The whole table as one array when the parts follow each other in rank
  // order (MPI_Win_allocate_shared's default, contiguous), else nullptr.
  T* contiguous(std::size_t n) const {
    if (parts_.empty()) return nullptr;
    for (std::size_t r = 0; r < parts_.size(); ++r)
      if (parts_[r] != parts_[0] + r * n) return nullptr;
    return parts_[0];
  }
  // Memory synchronisation before others read what this rank wrote.
  void sync() const {
    if (win_ != MPI_WIN_NULL) MPI_Win_sync(win_);
  }

 private:
  MPI_Comm node_ = MPI_COMM_NULL;
  T* base_ = nullptr;
  MPI_Win win_ = MPI_WIN_NULL;
  std::vector<T*> parts_;
};

}  // namespace bench
