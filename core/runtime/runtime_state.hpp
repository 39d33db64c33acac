#pragma once
// Internal: the state the Runtime owns (Runtime::State), one part per
// layer, from its constructor to its destructor. The layers below reach
// their parts through mem/core_state.hpp (`core()`), which the Runtime
// attaches.
//
// What stays process-wide outside it, and why: docs/design.md, "The
// runtime's state".
#include <memory>

#include "comm/comm_state.hpp"
#include "locus/runtime.hpp"
#include "mem/core_state.hpp"
#include "progress/progress_engine.hpp"
#include "progress/progress_thread.hpp"
#include "xfer/transfer.hpp"

namespace locus {

struct Runtime::State {
  detail::CoreState core;  // attached (attach_core) while the runtime lives
  detail::TypeCache types;
  detail::CommState comm;
  std::unique_ptr<detail::ProgressEngine> engine;
  std::unique_ptr<detail::ProgressThread> thread;
};

}  // namespace locus
