// locus::Tree (tree.hpp): the apps' summary blocks, and their yaml-cpp
// form for the summary (summary.hpp).
#include "locus/tree.hpp"

#include <charconv>

#include "app/summary.hpp"
#include "locus/error.hpp"

namespace locus {

Tree& Tree::operator[](const std::string& key) {
  if (kind_ == Kind::null) kind_ = Kind::map;
  if (kind_ != Kind::map)
    throw Error("internal: summary tree: entry '" + key + "' of a value that is not a map");
  for (auto& [k, v] : entries_)
    if (k == key) return v;
  return entries_.emplace_back(key, Tree()).second;
}

void Tree::push_back(Tree v) {
  if (kind_ == Kind::null) kind_ = Kind::list;
  if (kind_ != Kind::list) throw Error("internal: summary tree: push_back on a value that is not a list");
  items_.push_back(std::move(v));
}

std::string Tree::shortest(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

std::string Tree::yaml() const {
  YAML::Emitter out;
  out << to_yaml(*this);
  return std::string(out.c_str()) + "\n";
}

std::string Tree::json() const {
  return yaml_to_json(to_yaml(*this));
}

YAML::Node to_yaml(const Tree& t) {
  if (t.is_scalar()) return YAML::Node(t.text());
  if (t.is_list()) {
    YAML::Node n(YAML::NodeType::Sequence);
    for (const Tree& x : t.items()) n.push_back(to_yaml(x));
    if (t.flow()) n.SetStyle(YAML::EmitterStyle::Flow);
    return n;
  }
  if (t.is_map()) {
    YAML::Node n(YAML::NodeType::Map);
    for (const auto& [k, v] : t.entries()) n[k] = to_yaml(v);
    return n;
  }
  return YAML::Node();
}

YAML::Node yaml_number(double v) {
  return YAML::Node(Tree::shortest(v));
}

}  // namespace locus
