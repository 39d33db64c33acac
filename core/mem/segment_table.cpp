// The segment table (segment_table.hpp), the inline path's global
// (detail/direct.hpp), the look-ahead queue (detail/lookahead.hpp) and
// the runtime's attached state (core_state.hpp).
#include "mem/segment_table.hpp"

#include <string>

#include "locus/detail/lookahead.hpp"
#include "locus/error.hpp"
#include "locus/gptr.hpp"
#include "locus/team.hpp"
#include "mem/core_state.hpp"

namespace locus::detail {

namespace {
// The runtime's state while a runtime exists (attach_core).
CoreState* g_core = nullptr;
}  // namespace

Direct g_direct;
constinit thread_local Lookahead t_lookahead;

CoreState& core() {
  if (!g_core) throw Error("internal: no locus runtime (create one with locus::run or locus::Runtime)");
  return *g_core;
}

CoreState* core_if_any() noexcept {
  return g_core;
}

void attach_core(CoreState* state) noexcept {
  g_core = state;
}

SegmentInfo& segment(int team, int id) {
  SegmentInfo* s = core().segments.find(team, id);
  if (!s)
    throw Error("segment " + std::to_string(id) + " of team " + std::to_string(team) +
                " is not allocated (freed, or a stale global pointer)");
  return *s;
}

const SegmentInfo* segment_containing(int team, const void* p, std::size_t bytes) {
  const char* c = static_cast<const char*>(p);
  const SegmentInfo* found = nullptr;
  CoreState& st = core();
  const auto me = static_cast<std::size_t>(st.world->rank());
  st.segments.for_each(team, [&](const SegmentInfo& seg) {
    if (found || !seg.base) return;
    if (c >= seg.base && c + bytes <= seg.base + seg.bytes[me]) found = &seg;
  });
  return found;
}

void* shared_address(int team, int segment, int unit, std::uint64_t offset) {
  SegmentInfo& s = detail::segment(team, segment);
  if (unit < 0 || static_cast<std::size_t>(unit) >= s.peer.size()) return nullptr;
  char* base = s.peer[static_cast<std::size_t>(unit)];
  return base ? base + offset : nullptr;
}

Team& team(int id) {
  const CoreState& st = core();
  if (id < 0 || static_cast<std::size_t>(id) >= st.teams.size() || !st.teams[static_cast<std::size_t>(id)])
    throw Error("team " + std::to_string(id) + " does not exist (freed?)");
  return *st.teams[static_cast<std::size_t>(id)];
}

void SegmentTable::add(std::unique_ptr<SegmentInfo> s) {
  const auto t = static_cast<std::size_t>(s->team), i = static_cast<std::size_t>(s->id);
  if (rows_.size() <= t) {
    rows_.resize(t + 1);
    direct_.resize(t + 1);
  }
  if (rows_[t].size() <= i) {
    rows_[t].resize(i + 1);
    direct_[t].resize(i + 1);
  }
  if (rows_[t][i]) (void)take(s->team, s->id);
  rows_[t][i] = s.get();
  mirror(*s);
  owned_.push_back(std::move(s));
  reindex();
}

std::unique_ptr<SegmentInfo> SegmentTable::take(int team, int id) {
  SegmentInfo* p = find(team, id);
  if (!p) return nullptr;
  const auto t = static_cast<std::size_t>(team), i = static_cast<std::size_t>(id);
  rows_[t][i] = nullptr;
  direct_[t][i] = DirectSegment{};
  std::unique_ptr<SegmentInfo> s;
  for (auto it = owned_.begin(); it != owned_.end(); ++it)
    if (it->get() == p) {
      s = std::move(*it);
      owned_.erase(it);
      break;
    }
  return s;
}

void SegmentTable::refresh(int team) {
  for_each(team, [this](const SegmentInfo& s) { mirror(s); });
}

// The inline path's entry of one segment, from its record.
void SegmentTable::mirror(const SegmentInfo& s) {
  DirectSegment& d = direct_[static_cast<std::size_t>(s.team)][static_cast<std::size_t>(s.id)];
  d.peer = s.peer.data();
  d.bytes = s.bytes.data();
  d.units = static_cast<std::uint32_t>(s.peer.size());
  d.cpu_atomics = s.cpu_atomics && !s.redirect;
  d.aggregate = s.aggregate && s.cpu_atomics && !s.redirect;
  d.fp_locks = s.fp_locks;
}

// Points the index at the rows (a row's storage moves when it grows) and,
// when published, hands it to the inline path.
void SegmentTable::reindex() {
  index_.resize(direct_.size());
  for (std::size_t t = 0; t < direct_.size(); ++t)
    index_[t] = DirectRow{direct_[t].data(), static_cast<std::uint32_t>(direct_[t].size()),
                          t < aggregators_.size() ? aggregators_[t] : nullptr};
  if (published_) {
    g_direct.rows = index_.data();
    g_direct.nrows = static_cast<std::uint32_t>(index_.size());
  }
}

void SegmentTable::set_aggregator(int team, Aggregator* a) {
  const auto t = static_cast<std::size_t>(team);
  if (aggregators_.size() <= t) aggregators_.resize(t + 1, nullptr);
  aggregators_[t] = a;
  reindex();
}

void SegmentTable::publish(bool locality, bool check) {
  published_ = true;
  g_direct.locality = locality;
  g_direct.check = check;
  g_direct.rows = nullptr;
  g_direct.nrows = 0;
  reindex();
}

void SegmentTable::unpublish() {
  if (published_) {
    g_direct.locality = g_direct.check = false;
    g_direct.rows = nullptr;
    g_direct.nrows = 0;
  }
  published_ = false;
}

}  // namespace locus::detail
