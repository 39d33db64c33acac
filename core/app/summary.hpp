#pragma once
// Internal: the run's summary as the app layer builds it (summary.cpp,
// report.cpp), on yaml-cpp trees; the apps see only locus::Tree
// (tree.hpp) and the text.
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "locus/profile.hpp"
#include "locus/tree.hpp"

namespace locus {

class Context;

// A YAML scalar with the shortest text that reads back as the same double.
YAML::Node yaml_number(double v);
// A YAML list shown inline: [1, 2, 4].
template <class T>
YAML::Node yaml_flow_list(const std::vector<T>& v) {
  YAML::Node n(YAML::NodeType::Sequence);
  for (const auto& x : v) n.push_back(x);
  n.SetStyle(YAML::EmitterStyle::Flow);
  return n;
}
// A Tree as a yaml-cpp tree (scalars keep their text).
YAML::Node to_yaml(const Tree& t);
// A YAML tree as JSON (plain numbers and booleans unquoted, the rest as
// strings).
std::string yaml_to_json(const YAML::Node& tree);

// The end-of-run summary: config name, ranks, timers, results, verdict.
// finish_output (report.hpp) fills `results` and `validation` from the
// app's trees.
class Summary {
 public:
  Summary(const Context& ctx, const std::vector<TimerStats>& timers);
  YAML::Node results;     // app figures (steps, residual, ...)
  YAML::Node validation;  // mode, verdict, figures
  std::string output;     // path of the output file
  YAML::Node async;       // redirection mode and decisions (comm.async not off)
  // The counted requirements (counts.hpp; docs/outputs.md, "requirements").
  YAML::Node requirements;
  // The rating of the timed loop (VALID / INVALID and why; report.hpp,
  // validity), after `validation`.
  YAML::Node validity;
  std::string yaml() const;
  // The same tree as JSON (numbers and booleans unquoted; NaN and
  // infinities as strings, which JSON has no numbers for).
  std::string json() const;

 private:
  YAML::Node tree() const;
  YAML::Node head_;   // what ran: app, name, ranks
  YAML::Node setup_;  // where and how: deck, nodes, node map, progress, machine, config
  YAML::Node timers_;
};

}  // namespace locus
