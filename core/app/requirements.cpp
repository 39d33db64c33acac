// The counted requirements of a run (requirements.hpp): every rank's
// counts per phase and kind, their sum and maximum over the ranks, the
// memory footprint and the kernels' formulas.
#include "app/requirements.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "locus/counts.hpp"
#include "locus/wait.hpp"

namespace locus::detail {

namespace {

constexpr const char* kFootprint[] = {"segment_peak_bytes", "private_bytes", "footprint_bytes"};
constexpr std::size_t kFootprints = 3;

// Sum and maximum over the ranks, element by element.
void reduce(const std::vector<std::uint64_t>& mine, std::vector<std::uint64_t>& sum,
            std::vector<std::uint64_t>& max, MPI_Comm comm) {
  sum.assign(mine.size(), 0);
  max.assign(mine.size(), 0);
  const int n = static_cast<int>(mine.size());
  locus::yielding::allreduce(mine.data(), sum.data(), n, MPI_UINT64_T, MPI_SUM, comm);
  locus::yielding::allreduce(mine.data(), max.data(), n, MPI_UINT64_T, MPI_MAX, comm);
}

YAML::Node sum_max(std::uint64_t sum, std::uint64_t max) {
  YAML::Node n;
  n["sum"] = sum;
  n["max"] = max;
  n.SetStyle(YAML::EmitterStyle::Flow);
  return n;
}

// Every rank's formulas, gathered, each once, in rank order.
std::vector<std::pair<std::string, std::string>> all_formulas(MPI_Comm comm) {
  std::string mine;
  for (const auto& [k, text] : count_formulas()) mine += std::string(count_name(k)) + '\t' + text + '\n';
  int size = 1;
  MPI_Comm_size(comm, &size);
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<std::size_t>(size)), displs(static_cast<std::size_t>(size));
  locus::yielding::allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm);
  int total = 0;
  for (int r = 0; r < size; ++r)
    displs[static_cast<std::size_t>(r)] = total, total += lens[static_cast<std::size_t>(r)];
  std::string all(static_cast<std::size_t>(total), '\0');
  locus::yielding::allgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR,
                              comm);
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t at = 0; at < all.size();) {
    const std::size_t tab = all.find('\t', at), end = all.find('\n', at);
    std::pair<std::string, std::string> f{all.substr(at, tab - at), all.substr(tab + 1, end - tab - 1)};
    if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(std::move(f));
    at = end + 1;
  }
  return out;
}

// This rank's counts, phase by phase (`phases`' order), kind by kind, then
// the footprint.
std::vector<std::uint64_t> my_counts(const std::vector<std::string>& phases) {
  std::vector<std::uint64_t> v;
  for (const auto& name : phases) {
    const int p = name == "outside" ? 0 : count_phase(name);
    for (unsigned k = 0; k < kCountKinds; ++k)
      v.push_back(p == 0 && name != "outside" ? 0 : counted(p, static_cast<Count>(k)));
  }
  const std::uint64_t seg = segment_bytes_peak(), priv = private_bytes_declared();
  v.insert(v.end(), {seg, priv, seg + priv});
  return v;
}

}  // namespace

Requirements gather_requirements(const Timers& timers, MPI_Comm comm) {
  std::vector<std::string> phases = timers.names();
  phases.push_back("outside");
  std::vector<std::uint64_t> mine = my_counts(phases);
  // the run's whole: every phase's counts of a rank added up
  for (unsigned k = 0; k < kCountKinds; ++k) {
    std::uint64_t all = 0;
    for (std::size_t p = 0; p < phases.size(); ++p) all += mine[p * kCountKinds + k];
    mine.push_back(all);
  }
  std::vector<std::uint64_t> sum, max;
  reduce(mine, sum, max, comm);
  Requirements r;
  YAML::Node block, by_phase, all;
  for (unsigned k = 0; k < kCountKinds; ++k) block["kinds"].push_back(count_name(static_cast<Count>(k)));
  block["kinds"].SetStyle(YAML::EmitterStyle::Flow);
  for (std::size_t p = 0; p < phases.size(); ++p) {
    YAML::Node ph(YAML::NodeType::Map);
    for (unsigned k = 0; k < kCountKinds; ++k) {
      const std::size_t i = p * kCountKinds + k;
      if (sum[i]) ph[count_name(static_cast<Count>(k))] = sum_max(sum[i], max[i]);
      r.columns += (r.columns.empty() ? "" : ",") + phases[p] + "." + count_name(static_cast<Count>(k));
    }
    if (ph.size() == 0) ph.SetStyle(YAML::EmitterStyle::Flow);  // {} on the phase's line
    by_phase[phases[p]] = ph;
  }
  const std::size_t foot = phases.size() * kCountKinds, whole = foot + kFootprints;
  for (unsigned k = 0; k < kCountKinds; ++k)
    if (sum[whole + k]) all[count_name(static_cast<Count>(k))] = sum_max(sum[whole + k], max[whole + k]);
  block["phases"] = by_phase;
  block["all_phases"] = all.IsNull() ? YAML::Node(YAML::NodeType::Map) : all;
  for (std::size_t f = 0; f < kFootprints; ++f) {
    block[kFootprint[f]] = sum_max(sum[foot + f], max[foot + f]);
    r.columns += std::string(",") + kFootprint[f];
  }
  YAML::Node formulas(YAML::NodeType::Map);
  for (const auto& [kind, text] : all_formulas(comm)) {
    formulas[kind].push_back(text);
    r.formulas += kind + ": " + text + "\n";
  }
  block["formulas"] = formulas;
  r.summary = block;
  r.row.assign(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(whole));
  return r;
}

}  // namespace locus::detail
