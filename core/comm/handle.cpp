// Handles (handle.hpp) and their completion: wait, wait_all, test, adopt.
#include <cstdio>
#include <exception>
#include <set>
#include <vector>

#include "comm/aggregate.hpp"
#include "comm/calls.hpp"
#include "comm/comm_state.hpp"
#include "locus/rma.hpp"
#include "locus/wait.hpp"
#include "progress/progress_engine.hpp"
#include "progress/progress_thread.hpp"
#include "xfer/transfer.hpp"

namespace locus {

using detail::Endpoint;
using detail::Started;

namespace detail {

Handle make_handle(const Started& s, const Endpoint& e) {
  if (s.complete()) return HandleAccess::ready();
  Handle h = HandleAccess::make(s.req, e.win, e.rank, s.flush);
  if (s.req != MPI_REQUEST_NULL)
    if (detail::ProgressThread* th = detail::progress_thread()) {
      HandleAccess::reg(h) = th->add(s.req);
      HandleAccess::req(h) = MPI_REQUEST_NULL;
      HandleAccess::set_state(h, HandleAccess::State::thread);
    }
  return h;
}

}  // namespace detail

Handle::Handle(Handle&& o) noexcept {
  *this = std::move(o);
}

Handle& Handle::operator=(Handle&& o) noexcept {
  if (this == &o) return *this;
  abandon_or_complete();
  o_ = o.o_;
  o.o_ = Owned{};
  o.o_.state = State::moved;
  return *this;
}

Handle::~Handle() {
  abandon_or_complete();
}

void Handle::abandon_or_complete() noexcept {
  if (!live()) return;
  if (std::uncaught_exceptions() > 0 || !detail::core_if_any()) {
    o_.state = State::spent;  // the job is ending: leave the operation to it
    return;
  }
  try {
    wait(*this);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "locus: an operation completed by a destroyed handle failed: %s\n", e.what());
    o_.state = State::spent;
  }
}

namespace {
void check_live(const Handle& h, const char* what) {
  switch (HandleAccess::state(h)) {
    case HandleAccess::State::empty:
      throw Error(std::string(what) + ": the handle was never started (default-constructed)");
    case HandleAccess::State::spent:
      throw Error(std::string(what) +
                  ": the handle is spent (already completed by wait or test); wait once per operation");
    case HandleAccess::State::moved:
      throw Error(std::string(what) + ": the handle was moved from; wait on the handle it was moved to");
    default:
      return;
  }
}

void finish_flush(Handle& h) {
  if (HandleAccess::flush(h)) MPI_Win_flush(HandleAccess::target(h), HandleAccess::win(h));
  HandleAccess::set_state(h, HandleAccess::State::spent);
}
}  // namespace

Handle adopt(MPI_Request req) {
  if (req == MPI_REQUEST_NULL) return HandleAccess::ready();
  Started s{};
  s.req = req;
  return make_handle(s, Endpoint{});
}

void wait(Handle& h) {
  check_live(h, "wait");
  detail::CommScope timed;
  using S = HandleAccess::State;
  switch (HandleAccess::state(h)) {
    case S::offload:
      // spent also when the server reports a failure (the slot is released)
      try {
        detail::progress_engine()->wait(h);
      } catch (...) {
        HandleAccess::set_state(h, S::spent);
        throw;
      }
      HandleAccess::set_state(h, S::spent);
      return;
    case S::thread:
      detail::progress_thread()->wait(HandleAccess::reg(h));
      HandleAccess::reg(h) = -1;
      break;
    case S::mpi:
      if (HandleAccess::req(h) != MPI_REQUEST_NULL) wait_yielding(HandleAccess::req(h));
      break;
    default:
      break;
  }
  finish_flush(h);
}

void wait_all(std::vector<Handle>& hs) {
  detail::CommScope timed;
  using S = HandleAccess::State;
  std::vector<MPI_Request> reqs;
  std::set<std::pair<MPI_Win, int>> flushes;
  reqs.reserve(hs.size());
  for (auto& h : hs) {
    if (HandleAccess::state(h) == S::moved) check_live(h, "wait_all");
    if (HandleAccess::state(h) != S::mpi) continue;
    if (HandleAccess::req(h) != MPI_REQUEST_NULL) reqs.push_back(HandleAccess::req(h));
    if (HandleAccess::flush(h)) flushes.insert({HandleAccess::win(h), HandleAccess::target(h)});
    HandleAccess::req(h) = MPI_REQUEST_NULL;
    HandleAccess::set_state(h, S::spent);
  }
  if (!reqs.empty()) wait_all_yielding(reqs);
  for (const auto& [win, target] : flushes) MPI_Win_flush(target, win);
  // Offloaded and thread-registered handles one by one (they run
  // concurrently, so the order does not matter).
  for (auto& h : hs)
    if (h.live()) wait(h);
}

bool test(Handle& h) {
  check_live(h, "test");
  using S = HandleAccess::State;
  switch (HandleAccess::state(h)) {
    case S::offload:
      try {
        if (!detail::progress_engine()->test(h)) return false;
      } catch (...) {
        HandleAccess::set_state(h, S::spent);
        throw;
      }
      HandleAccess::set_state(h, S::spent);
      return true;
    case S::thread:
      if (!detail::progress_thread()->test(HandleAccess::reg(h))) return false;
      HandleAccess::reg(h) = -1;
      break;
    case S::mpi:
      if (HandleAccess::req(h) != MPI_REQUEST_NULL) {
        int flag = 0;
        MPI_Test(&HandleAccess::req(h), &flag, MPI_STATUS_IGNORE);
        if (!flag) return false;
      }
      break;
    default:
      break;
  }
  finish_flush(h);
  return true;
}

}  // namespace locus
