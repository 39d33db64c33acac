#pragma once
// Internal: the progress thread (runtime.progress.thread: on).
//
// One thread per unit keeps MPI progressing while the application
// computes: every `interval` it tests the MPI requests locus has
// outstanding (non-blocking gets and puts on the direct path, adopted
// requests), or, with none, polls MPI's progress engine so that
// operations aimed at this unit complete (target-side progress). The
// requests live in a registry shared by the thread and the application
// under one mutex (MPI_THREAD_MULTIPLE), so either side may complete them.
#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace locus::detail {

class ProgressThread {
 public:
  // Collective over `comm` (the application units).
  ProgressThread(int interval_us, MPI_Comm comm);
  ~ProgressThread();
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

  // Registers a request; returns its entry.
  int add(MPI_Request req);
  // True (and the entry released) when the request has completed.
  bool test(int entry);
  void wait(int entry);
  // Requests the thread completed / times it tested (statistics).
  std::uint64_t completed_by_thread() const { return by_thread_.load(std::memory_order_relaxed); }
  // Sleeps (pause) until resumed, or resumes.
  void pause(bool on);

 private:
  enum State : char { free_entry, active, completed };
  void loop();
  std::mutex m_;
  std::vector<MPI_Request> reqs_;
  std::vector<char> state_;
  std::vector<int> free_;
  std::atomic<int> active_{0};
  std::atomic<bool> stop_{false};
  std::mutex pause_m_;
  std::condition_variable resumed_;
  bool paused_ = false;  // under pause_m_
  std::atomic<std::uint64_t> by_thread_{0};
  int interval_us_;
  MPI_Comm probe_comm_ = MPI_COMM_NULL;
  std::thread thread_;
};

// The thread of this process, or nullptr.
ProgressThread* progress_thread();

}  // namespace locus::detail
