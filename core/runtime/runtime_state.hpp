#pragma once
// Internal: the state the Runtime owns, one part per layer, from its
// constructor to its destructor. The layers below reach their parts
// through mem/core_state.hpp (`core()`), which the Runtime attaches.
//
// What stays process-wide, and why: the attached pointer itself
// (core_state.hpp) and the Runtime pointer (Runtime::current); g_direct
// and g_measure_comm (direct.hpp), because the inline path reads them
// without a call; t_lookahead (direct.hpp), because it is per thread; the
// output being written and the run's signal text (io/reaper.hpp,
// app/runtime.cpp), because a signal handler can read only static
// storage; the Kokkos start-up record (app/kokkos_start.cpp), because
// Kokkos starts before the Runtime and ends after it.
#include <memory>

#include "comm/comm_state.hpp"
#include "mem/core_state.hpp"
#include "progress/progress_engine.hpp"
#include "progress/progress_thread.hpp"
#include "xfer/transfer.hpp"

namespace locus::detail {

struct RuntimeState {
  CoreState core;  // attached (attach_core) while the runtime lives
  TypeCache types;
  CommState comm;
  std::unique_ptr<ProgressEngine> engine;
  std::unique_ptr<ProgressThread> thread;
};

}  // namespace locus::detail
