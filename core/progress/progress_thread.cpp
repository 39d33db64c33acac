#include "progress/progress_thread.hpp"

#include <sched.h>
#include <time.h>

#include "locus/error.hpp"
#include "locus/wait.hpp"
#include "mem/core_state.hpp"

namespace locus::detail {

ProgressThread* progress_thread() {
  CoreState* s = core_if_any();
  return s ? s->thread : nullptr;
}

ProgressThread::ProgressThread(int interval_us, MPI_Comm comm) : interval_us_(interval_us) {
  // A communicator no message is ever sent on: probing it drives MPI's
  // progress engine without matching anything of the application's. (A
  // duplicate of MPI_COMM_SELF is not enough: MPICH serves it by its self
  // path, and one-sided operations from other processes wait for UCX's
  // 1 ms timer instead.) Collective over the units.
  yielding::comm_dup(comm, &probe_comm_);
  thread_ = std::thread([this] { loop(); });
}

ProgressThread::~ProgressThread() {
  {
    std::lock_guard<std::mutex> lock(pause_m_);
    stop_.store(true);
  }
  resumed_.notify_all();
  thread_.join();
  MPI_Comm_free(&probe_comm_);
}

void ProgressThread::loop() {
  const timespec pause{0, static_cast<long>(interval_us_) * 1000};
  while (!stop_.load(std::memory_order_relaxed)) {
    {
      std::unique_lock<std::mutex> lock(pause_m_);
      resumed_.wait(lock, [this] { return !paused_ || stop_.load(); });
      if (stop_.load()) break;
    }
    if (active_.load(std::memory_order_acquire) == 0) {
      // Nothing of ours outstanding: still drive MPI's progress engine, so
      // that one-sided operations other units aim at this one (an NXTASK
      // fetch-and-add on a counter it holds, gets of its data) complete
      // while the application computes without MPI calls (the target-side
      // half of asynchronous progress).
      int flag = 0;
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, probe_comm_, &flag, MPI_STATUS_IGNORE);
    } else {
      std::lock_guard<std::mutex> lock(m_);
      for (std::size_t i = 0; i < reqs_.size(); ++i) {
        if (state_[i] != active) continue;
        int flag = 0;
        MPI_Test(&reqs_[i], &flag, MPI_STATUS_IGNORE);
        if (flag) {
          state_[i] = completed;
          active_.fetch_sub(1, std::memory_order_relaxed);
          by_thread_.fetch_add(1, std::memory_order_relaxed);
        }
      }
    }
    if (interval_us_ > 0)
      nanosleep(&pause, nullptr);
    else
      sched_yield();
  }
}

void ProgressThread::pause(bool on) {
  {
    std::lock_guard<std::mutex> lock(pause_m_);
    paused_ = on;
  }
  resumed_.notify_all();
}

int ProgressThread::add(MPI_Request req) {
  std::lock_guard<std::mutex> lock(m_);
  int e;
  if (free_.empty()) {
    e = static_cast<int>(reqs_.size());
    reqs_.push_back(req);
    state_.push_back(active);
  } else {
    e = free_.back();
    free_.pop_back();
    reqs_[static_cast<std::size_t>(e)] = req;
    state_[static_cast<std::size_t>(e)] = active;
  }
  active_.fetch_add(1, std::memory_order_release);
  return e;
}

bool ProgressThread::test(int entry) {
  std::lock_guard<std::mutex> lock(m_);
  const auto i = static_cast<std::size_t>(entry);
  if (state_[i] == active) {
    int flag = 0;
    MPI_Test(&reqs_[i], &flag, MPI_STATUS_IGNORE);
    if (!flag) return false;
    active_.fetch_sub(1, std::memory_order_relaxed);
  }
  state_[i] = free_entry;
  free_.push_back(entry);
  return true;
}

void ProgressThread::wait(int entry) {
  for (unsigned spins = 0; !test(entry);) relax(spins);
}

}  // namespace locus::detail
