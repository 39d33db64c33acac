#pragma once
// The blocks an app adds to its run summary (report.hpp: results and
// validation), as a tree of maps, lists and scalars that the core prints
// as YAML or JSON. Plain values: a copy is a copy (no aliasing); maps keep
// their keys in the order they were first set.
//
//   locus::Tree results = locus::Tree::map();
//   results["steps"] = 120;                  // integers as such
//   results["residual"] = 1e-12;             // the shortest text that reads back the same
//   results["halo"] = "locus-nb";
//   results["grid"] = locus::Tree::flow_list(std::vector<int>{2, 2, 1});   // [2, 2, 1]
//   results["levels"].push_back(level);      // a null entry becomes a list
#include <list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace locus {

class Tree {
 public:
  // Null ("~"): becomes a map at its first [key], a list at its first push_back.
  Tree() = default;
  Tree(const char* text) : kind_(Kind::scalar), text_(text) {}
  Tree(std::string text) : kind_(Kind::scalar), text_(std::move(text)) {}
  Tree(bool v) : kind_(Kind::scalar), text_(v ? "true" : "false") {}
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Tree(T v) : kind_(Kind::scalar), text_(std::to_string(v)) {}
  // The shortest text that reads back as the same double (1e-12, not
  // 9.9999999999999998e-13); nan and inf as such.
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Tree(T v) : kind_(Kind::scalar), text_(shortest(static_cast<double>(v))) {}

  // An empty map ("{}") and an empty list ("[]").
  static Tree map() { return Tree(Kind::map); }
  static Tree list() { return Tree(Kind::list); }
  // A list shown inline: [1, 2, 4].
  template <class T>
  static Tree flow_list(const std::vector<T>& v) {
    Tree t(Kind::list);
    t.flow_ = true;
    for (const auto& x : v) t.push_back(Tree(x));
    return t;
  }

  // The entry `key` of a map, made (null) when missing; a null tree
  // becomes a map first. Error for a scalar or a list.
  Tree& operator[](const std::string& key);
  // Appends to a list; a null tree becomes a list first. Error for a
  // scalar or a map.
  void push_back(Tree v);

  bool is_null() const { return kind_ == Kind::null; }
  bool is_scalar() const { return kind_ == Kind::scalar; }
  bool is_list() const { return kind_ == Kind::list; }
  bool is_map() const { return kind_ == Kind::map; }
  bool flow() const { return flow_; }
  // A scalar's text ("" for the others).
  const std::string& text() const { return text_; }
  // A list's items and a map's entries, in order (not of a temporary:
  // they would not outlive it).
  const std::list<Tree>& items() const& { return items_; }
  const std::list<std::pair<std::string, Tree>>& entries() const& { return entries_; }
  void items() && = delete;
  void entries() && = delete;

  // The tree as a YAML document and as JSON (plain numbers and booleans
  // unquoted, the rest as strings; NaN and infinities as strings).
  std::string yaml() const;
  std::string json() const;

  // The shortest text that reads back as `v`.
  static std::string shortest(double v);

 private:
  enum class Kind : unsigned char { null, scalar, list, map };
  explicit Tree(Kind k) : kind_(k) {}
  Kind kind_ = Kind::null;
  bool flow_ = false;
  std::string text_;
  std::list<Tree> items_;
  std::list<std::pair<std::string, Tree>> entries_;
};

}  // namespace locus
