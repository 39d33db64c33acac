#pragma once
// The entry points of plan.hpp's TransferPlan (comm/plan.cpp): not an API.
#include <cstddef>
#include <vector>

#include "locus/handle.hpp"
#include "locus/settings.hpp"

namespace locus {
struct PlanEntry;
}  // namespace locus

namespace locus::detail {

class PlanImpl;
// A new plan, owned by the caller (freed with destroy_plan).
PlanImpl* make_plan(int team, int segment, std::vector<PlanEntry> entries, std::size_t esize, bool get,
                    Route route, RemoteMode remote);
void plan_start(PlanImpl& p, void* local_base);
void plan_wait(PlanImpl& p);
std::size_t plan_remote_entries(const PlanImpl& p);
bool plan_message(const PlanImpl& p, int unit);
void plan_set_requests(PlanImpl& p, RemoteRequests way);
RemoteRequests plan_requests(const PlanImpl& p);
void destroy_plan(PlanImpl* p);
struct PlanDeleter {
  void operator()(PlanImpl* p) const { destroy_plan(p); }
};

}  // namespace locus::detail
