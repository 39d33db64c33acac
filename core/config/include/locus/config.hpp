#pragma once
// Typed, schema-checked configuration from YAML decks.
//
// A Schema lists every key an app accepts (dotted path, type, default,
// range, help). A deck is checked against it: unknown keys (with a
// did-you-mean suggestion), wrong types and out-of-range values become
// errors of the form
//     deck.yaml:LINE:COL: heat3d.grid.nx: must be a positive integer (got -3)
// `--set a.b=c` overrides go through the same checks. Every key ends up
// with a value (from the deck, an override or its default); Config::yaml()
// is that effective configuration, echoed into summaries and outputs.
#include <array>
#include <limits>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "locus/error.hpp"

namespace locus {

// All problems found in one deck, one per line, each naming file:line:col
// (or the --set argument) and the key.
class ConfigError : public Error {
 public:
  using Error::Error;
};

enum class KeyKind { Integer, Real, Boolean, String, Choice, Dims };

// Three positive extents, or {0,0,0} for `auto`.
using Dims = std::array<int, 3>;
using Value = std::variant<long, double, bool, std::string, Dims>;

struct KeySpec {
  std::string path;
  KeyKind kind;
  Value fallback;  // the default
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false;
  std::vector<std::string> choices;
  std::string help;
  bool max_exclusive = false;
  bool allow_auto = false;  // reals: the word `auto` (read back as NaN)
};

class Schema {
 public:
  static constexpr long kNoMax = std::numeric_limits<long>::max();

  Schema& integer(const std::string& path, long fallback, long min, long max, const std::string& help);
  // A real number in [min, max] (or (min, max] when min_exclusive).
  Schema& real(const std::string& path, double fallback, double min, double max, const std::string& help,
               bool min_exclusive = false);
  // `auto` (the default) or a real number between min and max, each bound
  // open or closed; Config::real() returns NaN for auto.
  Schema& real_or_auto(const std::string& path, double min, double max, bool min_exclusive,
                       bool max_exclusive, const std::string& help);
  Schema& boolean(const std::string& path, bool fallback, const std::string& help);
  Schema& string(const std::string& path, const std::string& fallback, const std::string& help);
  Schema& choice(const std::string& path, const std::string& fallback, std::vector<std::string> choices,
                 const std::string& help);
  // `auto` or a list of three positive integers (a process grid).
  Schema& dims(const std::string& path, const std::string& help);

  const KeySpec* find(const std::string& path) const;
  bool is_section(const std::string& path) const;
  // Names directly below a section ("" is the top level).
  std::vector<std::string> children(const std::string& section) const;
  const std::vector<KeySpec>& keys() const { return keys_; }
  // A table of every key for --help.
  std::string help_text() const;
  // Every key as YAML (path, type, default, help, choices) for --print-schema.
  std::string yaml_text() const;
  // "a positive integer", "one of p2p, rma", ...
  static std::string describe(const KeySpec& k);

 private:
  Schema& add(KeySpec spec);
  std::vector<KeySpec> keys_;
};

class Config {
 public:
  long integer(const std::string& path) const;
  double real(const std::string& path) const;
  bool boolean(const std::string& path) const;
  const std::string& string(const std::string& path) const;
  Dims dims(const std::string& path) const;

  // Where a key's value came from, followed by the key, for error messages
  // about values that pass the schema but not the app's own checks:
  //   "deck.yaml:12:8: poisson5pt.grid.n", "--set a.b=3: a.b" or "a.b (default)".
  std::string locate(const std::string& path) const;
  // Where a key's value came from: 0 its default, 1 the deck, 2 an --set
  // override (the later the word, the higher).
  int precedence(const std::string& path) const;
  // For a check on several keys at once (low < high, a grid's memory): the
  // key the user wrote, located. locate_latest: the one given last (--set
  // before the deck before a default; ties: the first listed).
  // locate_largest (integer keys): the one with the largest value (ties as
  // locate_latest).
  std::string locate_latest(const std::vector<std::string>& paths) const;
  std::string locate_largest(const std::vector<std::string>& paths) const;

  // Where the deck came from (file name) and the overrides applied.
  const std::string& source() const { return source_; }
  const std::vector<std::string>& overrides() const { return overrides_; }
  // The effective configuration as nested YAML.
  std::string yaml() const;

 private:
  friend Config parse_config(const Schema&, const std::string&, const std::string&,
                             const std::vector<std::string>&);
  const Value& at(const std::string& path) const;
  std::vector<std::string> order_;  // schema order, for yaml()
  std::map<std::string, Value> values_;
  std::map<std::string, std::string> origins_;  // key -> file:line:col or --set argument
  std::string source_;
  std::vector<std::string> overrides_;
};

// Checks `text` (the content of deck `source`) and the overrides against the
// schema. Throws ConfigError listing every problem.
Config parse_config(const Schema& schema, const std::string& text, const std::string& source,
                    const std::vector<std::string>& overrides);

// Reads the file (throws ConfigError when it cannot be read).
std::string read_deck(const std::string& path);

// Levenshtein distance, for did-you-mean suggestions.
std::size_t edit_distance(const std::string& a, const std::string& b);
// The closest candidate, or "" when none is close enough to suggest.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace locus
