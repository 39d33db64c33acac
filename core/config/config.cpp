#include "locus/config.hpp"

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace locus {

namespace {
constexpr long kMaxDeckBytes = 16L << 20;  // a deck is a few KiB; 16 MiB is surely a wrong file
constexpr std::size_t kMaxErrors = 20;
}  // namespace

// ---------------------------------------------------------------- helpers

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? 1u : 0u)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

namespace {

std::string format_real(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  // Keep reals recognisable as reals when echoed (1 -> 1.0).
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string format_bound(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long>(v));
  return format_real(v);
}

std::string describe_key(const KeySpec& k) {
  switch (k.kind) {
    case KeyKind::Integer: {
      bool has_max = k.max < static_cast<double>(Schema::kNoMax);
      if (k.min == 1 && !has_max) return "a positive integer";
      if (k.min == 0 && !has_max) return "a non-negative integer";
      if (!has_max) return "an integer >= " + format_bound(k.min);
      return "an integer in [" + format_bound(k.min) + ", " + format_bound(k.max) + "]";
    }
    case KeyKind::Real: {
      bool has_min = std::isfinite(k.min), has_max = std::isfinite(k.max);
      std::string text;
      if (has_min && k.min == 0 && k.min_exclusive && !has_max)
        text = "a positive number";
      else if (has_min && k.min == 0 && !has_max)
        text = "a non-negative number";
      else if (has_min && has_max)
        text = std::string("a number in ") + (k.min_exclusive ? "(" : "[") + format_bound(k.min) + ", " +
               format_bound(k.max) + (k.max_exclusive ? ")" : "]");
      else if (has_min)
        text = std::string("a number ") + (k.min_exclusive ? "> " : ">= ") + format_bound(k.min);
      else if (has_max)
        text = std::string("a number ") + (k.max_exclusive ? "< " : "<= ") + format_bound(k.max);
      else
        text = "a number";
      return k.allow_auto ? "auto or " + text : text;
    }
    case KeyKind::Boolean:
      return "true or false";
    case KeyKind::String:
      return "a string";
    case KeyKind::Choice: {
      std::string s = "one of ";
      for (std::size_t i = 0; i < k.choices.size(); ++i) s += (i ? ", " : "") + k.choices[i];
      return s;
    }
    case KeyKind::Dims:
      return "auto or a list of three positive integers [px, py, pz]";
  }
  return "";
}

std::string value_text(const Value& v) {
  struct {
    std::string operator()(long x) const { return std::to_string(x); }
    std::string operator()(double x) const { return std::isnan(x) ? "auto" : format_real(x); }
    std::string operator()(bool x) const { return x ? "true" : "false"; }
    std::string operator()(const std::string& x) const { return x; }
    std::string operator()(const Dims& d) const {
      if (d[0] == 0) return "auto";
      std::ostringstream os;
      os << '[' << d[0] << ", " << d[1] << ", " << d[2] << ']';
      return os.str();
    }
  } visit;
  return std::visit(visit, v);
}

// Control characters shown as escapes, so that a message is never cut at a
// NUL or broken over lines by a value it quotes.
std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char ch : s) {
    if (ch == 0) {
      out += "\\0";
    } else if (ch < 0x20 || ch == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out;
}

std::string node_text(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsScalar()) return printable(n.Scalar());
  if (n.IsSequence()) {
    // a short list of scalars as written ([1, 1, 0]), so that the bad
    // element shows; anything longer or nested by its kind
    if (n.size() > 8) return "a list of " + std::to_string(n.size());
    std::string s = "[";
    for (std::size_t i = 0; i < n.size(); ++i) {
      if (!n[i].IsScalar()) return "a list";
      s += (i ? ", " : "") + printable(n[i].Scalar());
    }
    return s + "]";
  }
  return "a mapping";
}

// Decimal integers only: no hex (0x10), no negative zero (-0).
bool parse_long(const std::string& s, long& out) {
  const char* b = s.data();
  const char* e = b + s.size();
  if (b != e && *b == '+') ++b;
  auto res = std::from_chars(b, e, out);
  const bool minus_zero = out == 0 && b != e && *b == '-';
  return res.ec == std::errc() && res.ptr == e && b != e && !minus_zero;
}

// Decimal reals only: no hex floats (0x1p3, 0x10), no negative zero (-0,
// -0.0), nothing strtod would skip or spell out (leading blanks, inf, nan).
bool parse_double(const std::string& s, double& out) {
  if (s.empty() || s.find_first_of("xXpP") != std::string::npos ||
      std::isspace(static_cast<unsigned char>(s[0])))
    return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && errno == 0 && std::isfinite(out) &&
         !(out == 0.0 && std::signbit(out));
}

bool parse_bool(const std::string& s, bool& out) {
  static const std::set<std::string> yes{"true", "True", "TRUE", "yes", "Yes", "on", "On"};
  static const std::set<std::string> no{"false", "False", "FALSE", "no", "No", "off", "Off"};
  if (yes.count(s)) return out = true, true;
  if (no.count(s)) return out = false, true;
  return false;
}

// Converts a YAML node to the key's type; returns an error text or "".
std::string convert(const KeySpec& k, const YAML::Node& n, Value& out) {
  const std::string fail = "must be " + describe_key(k) + " (got " + node_text(n) + ")";
  if (k.kind == KeyKind::Dims) {
    if (n.IsScalar() && n.Scalar() == "auto") return out = Dims{0, 0, 0}, "";
    if (!n.IsSequence() || n.size() != 3) return fail;
    Dims d{};
    for (std::size_t i = 0; i < 3; ++i) {
      long v = 0;
      if (!n[i].IsScalar() || !parse_long(n[i].Scalar(), v) || v < 1 || v > 1000000) return fail;
      d[i] = static_cast<int>(v);
    }
    return out = d, "";
  }
  if (!n.IsScalar()) return fail;
  const std::string& s = n.Scalar();
  if (s.find('\0') != std::string::npos)
    return "contains a NUL byte (\"" + printable(s) + "\"); a value is text without NUL bytes";
  switch (k.kind) {
    case KeyKind::Integer: {
      long v = 0;
      if (!parse_long(s, v) || v < k.min || static_cast<double>(v) > k.max) return fail;
      return out = v, "";
    }
    case KeyKind::Real: {
      double v = 0;
      if (k.allow_auto && s == "auto") return out = std::numeric_limits<double>::quiet_NaN(), "";
      if (!parse_double(s, v) || v < k.min || v > k.max || (k.min_exclusive && v == k.min) ||
          (k.max_exclusive && v == k.max))
        return fail;
      return out = v, "";
    }
    case KeyKind::Boolean: {
      bool v = false;
      if (!parse_bool(s, v)) return fail;
      return out = v, "";
    }
    case KeyKind::String:
      return out = s, "";
    case KeyKind::Choice: {
      if (std::find(k.choices.begin(), k.choices.end(), s) != k.choices.end()) return out = s, "";
      std::string hint = closest_match(s, k.choices);
      return hint.empty() ? fail : fail + ", did you mean '" + hint + "'?";
    }
    case KeyKind::Dims:
      break;
  }
  return fail;
}

std::string where(const std::string& source, const YAML::Mark& m) {
  return source + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": ";
}

std::string join(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

// Walks one mapping of the deck, checking every key against the schema.
class Checker {
 public:
  Checker(const Schema& s, const std::string& src, std::map<std::string, Value>& v,
          std::map<std::string, std::string>& origins, std::vector<std::string>& e)
      : schema_(s), source_(src), values_(v), origins_(origins), errors_(e) {}

  void mapping(const YAML::Node& node, const std::string& prefix) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      const YAML::Node key = it->first;
      const YAML::Node val = it->second;
      std::string at = where(source_, key.Mark());
      if (!key.IsScalar()) {
        errors_.push_back(at + "keys must be plain names");
        continue;
      }
      std::string path = join(prefix, key.Scalar());
      if (!seen_.insert(path).second) {
        errors_.push_back(at + path + ": given twice");
        continue;
      }
      if (const KeySpec* spec = schema_.find(path)) {
        Value v;
        std::string err = convert(*spec, val, v);
        const std::string loc = where(source_, val.IsNull() ? key.Mark() : val.Mark());
        if (err.empty()) {
          values_[path] = v;
          origins_[path] = loc.substr(0, loc.size() - 2);
        } else {
          errors_.push_back(loc + path + ": " + err);
        }
      } else if (schema_.is_section(path)) {
        if (val.IsMap())
          mapping(val, path);
        else if (!val.IsNull())
          errors_.push_back(where(source_, val.Mark()) + path +
                            ": must be a section (a mapping of keys: " + list(schema_.children(path)) + ")");
      } else {
        std::string msg = at + path + ": unknown key";
        std::string hint = closest_match(key.Scalar(), schema_.children(prefix));
        if (!hint.empty())
          msg += " (did you mean '" + hint + "'?)";
        else
          msg += " (known here: " + list(schema_.children(prefix)) + ")";
        errors_.push_back(msg);
      }
    }
  }

  static std::string list(const std::vector<std::string>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s;
  }

 private:
  const Schema& schema_;
  const std::string& source_;
  std::map<std::string, Value>& values_;
  std::map<std::string, std::string>& origins_;
  std::vector<std::string>& errors_;
  std::set<std::string> seen_;
};

void apply_override(const Schema& schema, const std::string& arg, std::map<std::string, Value>& values,
                    std::map<std::string, std::string>& origins, std::vector<std::string>& errors) {
  const std::string at = "--set " + arg + ": ";
  auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0) {
    errors.push_back(at + "expected key=value, e.g. --set heat3d.grid.nx=64");
    return;
  }
  std::string path = arg.substr(0, eq);
  const KeySpec* spec = schema.find(path);
  if (!spec) {
    if (schema.is_section(path)) {
      errors.push_back(at + path + ": is a section; set one of its keys (" +
                       Checker::list(schema.children(path)) + ")");
      return;
    }
    std::vector<std::string> all;
    for (const auto& k : schema.keys()) all.push_back(k.path);
    std::string hint = closest_match(path, all);
    errors.push_back(at + path + ": unknown key" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
    return;
  }
  YAML::Node node;
  try {
    const std::string value = arg.substr(eq + 1);
    if (value.find('\0') != std::string::npos || value.find('\n') != std::string::npos) {
      errors.push_back(at + path + ": a value is one line of text (no line breaks or NUL bytes)");
      return;
    }
    std::vector<YAML::Node> docs = YAML::LoadAll(value);
    if (docs.size() > 1) {
      errors.push_back(at + path + ": one value, not several YAML documents");
      return;
    }
    if (!docs.empty()) node = docs[0];
  } catch (const YAML::Exception& e) {
    errors.push_back(at + path + ": cannot parse value: " + e.msg);
    return;
  }
  Value v;
  std::string err = convert(*spec, node, v);
  if (err.empty()) {
    values[path] = v;
    origins[path] = "--set " + arg;
  } else
    errors.push_back(at + path + ": " + err);
}

void emit_value(YAML::Emitter& out, const Value& v) {
  if (const auto* d = std::get_if<Dims>(&v); d && (*d)[0] != 0) {
    out << YAML::Flow << YAML::BeginSeq << (*d)[0] << (*d)[1] << (*d)[2] << YAML::EndSeq;
  } else if (const auto* s = std::get_if<std::string>(&v)) {
    // Quote strings that YAML would otherwise read as another type.
    bool plain = !s->empty();
    long l;
    double x;
    bool b;
    if (parse_long(*s, l) || parse_double(*s, x) || parse_bool(*s, b) || *s == "null" || *s == "~")
      plain = false;
    if (plain)
      out << *s;
    else
      out << YAML::DoubleQuoted << *s;
  } else {
    out << value_text(v);
  }
}

}  // namespace

// ---------------------------------------------------------------- Schema

Schema& Schema::add(KeySpec spec) {
  if (find(spec.path) || is_section(spec.path)) throw Error("schema: key " + spec.path + " declared twice");
  keys_.push_back(std::move(spec));
  return *this;
}

Schema& Schema::integer(const std::string& path, long fallback, long min, long max, const std::string& help) {
  return add({path, KeyKind::Integer, fallback, double(min), double(max), false, {}, help});
}

Schema& Schema::real(const std::string& path, double fallback, double min, double max,
                     const std::string& help, bool min_exclusive) {
  return add({path, KeyKind::Real, fallback, min, max, min_exclusive, {}, help});
}

Schema& Schema::real_or_auto(const std::string& path, double min, double max, bool min_exclusive,
                             bool max_exclusive, const std::string& help) {
  KeySpec k{path, KeyKind::Real, std::numeric_limits<double>::quiet_NaN(), min, max, min_exclusive, {}, help};
  k.max_exclusive = max_exclusive;
  k.allow_auto = true;
  return add(std::move(k));
}

Schema& Schema::boolean(const std::string& path, bool fallback, const std::string& help) {
  return add({path, KeyKind::Boolean, fallback, 0, 0, false, {}, help});
}

Schema& Schema::string(const std::string& path, const std::string& fallback, const std::string& help) {
  return add({path, KeyKind::String, fallback, 0, 0, false, {}, help});
}

Schema& Schema::choice(const std::string& path, const std::string& fallback, std::vector<std::string> choices,
                       const std::string& help) {
  return add({path, KeyKind::Choice, fallback, 0, 0, false, std::move(choices), help});
}

Schema& Schema::dims(const std::string& path, const std::string& help) {
  return add({path, KeyKind::Dims, Dims{0, 0, 0}, 0, 0, false, {}, help});
}

const KeySpec* Schema::find(const std::string& path) const {
  for (const auto& k : keys_)
    if (k.path == path) return &k;
  return nullptr;
}

bool Schema::is_section(const std::string& path) const {
  for (const auto& k : keys_)
    if (k.path.size() > path.size() && k.path.compare(0, path.size(), path) == 0 &&
        k.path[path.size()] == '.')
      return true;
  return false;
}

std::vector<std::string> Schema::children(const std::string& section) const {
  std::vector<std::string> out;
  std::string prefix = section.empty() ? "" : section + ".";
  for (const auto& k : keys_) {
    if (k.path.compare(0, prefix.size(), prefix) != 0) continue;
    std::string rest = k.path.substr(prefix.size());
    std::string name = rest.substr(0, rest.find('.'));
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

namespace {
std::string shown_default(const Value& v) {
  std::string s = value_text(v);
  return s.empty() ? "\"\"" : s;
}
}  // namespace

std::string Schema::help_text() const {
  std::size_t w = 0;
  for (const auto& k : keys_) w = std::max(w, k.path.size());
  std::ostringstream os;
  for (const auto& k : keys_) {
    os << "  " << k.path << std::string(w + 2 - k.path.size(), ' ') << k.help << "\n"
       << std::string(w + 4, ' ') << describe_key(k) << "; default " << shown_default(k.fallback) << "\n";
  }
  return os.str();
}

std::string Schema::describe(const KeySpec& k) {
  return describe_key(k);
}

std::string Schema::yaml_text() const {
  YAML::Emitter out;
  out << YAML::BeginSeq;
  for (const auto& k : keys_) {
    out << YAML::BeginMap << YAML::Key << "path" << YAML::Value << k.path << YAML::Key << "type"
        << YAML::Value << describe_key(k) << YAML::Key << "default" << YAML::Value << YAML::DoubleQuoted
        << shown_default(k.fallback) << YAML::Key << "help" << YAML::Value << k.help;
    if (!k.choices.empty()) out << YAML::Key << "choices" << YAML::Value << YAML::Flow << k.choices;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  return out.c_str();
}

// ---------------------------------------------------------------- Config

const Value& Config::at(const std::string& path) const {
  auto it = values_.find(path);
  if (it == values_.end()) throw Error("internal: config key " + path + " is not in the schema");
  return it->second;
}

template <class T>
static const T& typed(const Value& v, const std::string& path) {
  if (const T* p = std::get_if<T>(&v)) return *p;
  throw Error("internal: config key " + path + " read with the wrong type");
}

std::string Config::locate(const std::string& path) const {
  at(path);
  auto it = origins_.find(path);
  if (it == origins_.end()) return path + " (default)";
  return it->second + ": " + path;
}

int Config::precedence(const std::string& path) const {
  at(path);
  auto it = origins_.find(path);
  if (it == origins_.end()) return 0;
  return it->second.rfind("--set ", 0) == 0 ? 2 : 1;
}

std::string Config::locate_latest(const std::vector<std::string>& paths) const {
  if (paths.empty()) throw Error("internal: Config::locate_latest of no keys");
  std::string best = paths.front();
  for (const std::string& p : paths)
    if (precedence(p) > precedence(best)) best = p;
  return locate(best);
}

std::string Config::locate_largest(const std::vector<std::string>& paths) const {
  if (paths.empty()) throw Error("internal: Config::locate_largest of no keys");
  std::string best = paths.front();
  for (const std::string& p : paths)
    if (integer(p) > integer(best) || (integer(p) == integer(best) && precedence(p) > precedence(best)))
      best = p;
  return locate(best);
}

long Config::integer(const std::string& path) const {
  return typed<long>(at(path), path);
}
double Config::real(const std::string& path) const {
  return typed<double>(at(path), path);
}
bool Config::boolean(const std::string& path) const {
  return typed<bool>(at(path), path);
}
const std::string& Config::string(const std::string& path) const {
  return typed<std::string>(at(path), path);
}
Dims Config::dims(const std::string& path) const {
  return typed<Dims>(at(path), path);
}

namespace {
// Keys grouped by section, sections in order of first appearance.
struct Tree {
  std::string name;
  const Value* value = nullptr;
  std::vector<Tree> children;

  void insert(const std::string& path, const Value* v) {
    auto dot = path.find('.');
    std::string head = path.substr(0, dot);
    auto it = std::find_if(children.begin(), children.end(), [&](const Tree& t) { return t.name == head; });
    if (it == children.end()) {
      children.push_back({head, nullptr, {}});
      it = children.end() - 1;
    }
    if (dot == std::string::npos)
      it->value = v;
    else
      it->insert(path.substr(dot + 1), v);
  }

  void emit(YAML::Emitter& out) const {
    out << YAML::BeginMap;
    for (const auto& c : children) {
      out << YAML::Key << c.name << YAML::Value;
      if (c.value)
        emit_value(out, *c.value);
      else
        c.emit(out);
    }
    out << YAML::EndMap;
  }
};
}  // namespace

std::string Config::yaml() const {
  Tree root;
  for (const auto& path : order_) root.insert(path, &values_.at(path));
  YAML::Emitter out;
  root.emit(out);
  return std::string(out.c_str()) + "\n";
}

std::string read_deck(const std::string& path) {
  // stat before open: a FIFO would block, a device never end
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw ConfigError(path + ": cannot open deck (" + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode)) throw ConfigError(path + ": is a directory, not a deck (give a YAML file)");
  if (!S_ISREG(st.st_mode))
    throw ConfigError(path + ": not a regular file (a FIFO, device or socket); a deck is a YAML file");
  if (st.st_size > kMaxDeckBytes)
    throw ConfigError(path + ": " + std::to_string(st.st_size) + " bytes; a deck may have at most " +
                      std::to_string(kMaxDeckBytes) + " (is it the right file?)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot open deck (" + std::strerror(errno) + ")");
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

namespace {

// The line (from 1) of byte I of TEXT.
long line_of(const std::string& text, std::size_t i) {
  return 1 + static_cast<long>(std::count(text.begin(), text.begin() + static_cast<long>(i), '\n'));
}

// Old Mac line ends (CR alone) would make the whole deck one line, so
// that a leading comment swallows every key: refused, as NUL bytes are.
void check_line_ends(const std::string& text, const std::string& source) {
  for (std::size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n')) {
      const long line = line_of(text, i);
      throw ConfigError(
          source + ":" + std::to_string(line) +
          ": a carriage return without a line feed (old Mac line ends); save the deck with LF or "
          "CRLF line ends");
    }
  if (text.find('\0') != std::string::npos) {
    const std::size_t i = text.find('\0');
    const long line = line_of(text, i);
    throw ConfigError(source + ":" + std::to_string(line) + ": a NUL byte; a deck is a text file");
  }
}

// Tabs in the indentation (YAML allows only spaces; yaml-cpp would say
// "illegal map value" somewhere else on the line).
void check_indentation(const std::string& text, const std::string& source) {
  long line = 1;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '\n') {
      for (std::size_t j = start; j < i && (text[j] == ' ' || text[j] == '\t'); ++j)
        if (text[j] == '\t')
          throw ConfigError(source + ":" + std::to_string(line) + ":" + std::to_string(j - start + 1) +
                            ": a tab in the indentation; YAML indents with spaces only");
      start = i + 1;
      ++line;
    }
  }
}

// Nesting deeper than any deck needs (yaml-cpp gives up with "bad file").
void check_nesting(const std::string& text, const std::string& source) {
  long depth = 0, worst = 0, line = 1, worst_line = 1;
  bool quoted = false, comment = false;
  char quote = 0, prev = '\n';
  for (char ch : text) {
    const char before = prev;
    prev = ch;
    if (ch == '\n') {
      ++line;
      comment = false;
      quoted = false;  // (multi-line scalars do not matter here)
      continue;
    }
    if (comment) continue;
    if (quoted) {
      if (ch == quote) quoted = false;
      continue;
    }
    if (ch == '#' && (before == ' ' || before == '\t' || before == '\n')) {
      comment = true;
    } else if (ch == '"' || ch == '\'') {
      quoted = true;
      quote = ch;
    } else if (ch == '[' || ch == '{') {
      if (++depth > worst) {
        worst = depth;
        worst_line = line;
      }
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
  if (worst > 64)
    throw ConfigError(source + ":" + std::to_string(worst_line) + ": brackets nested " +
                      std::to_string(worst) + " deep; a deck needs a few levels (at most 64 accepted)");
}

// The deck's one YAML document (null when empty).
YAML::Node load_document(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    std::vector<YAML::Node> docs = YAML::LoadAll(text);
    if (docs.size() > 1)
      throw ConfigError(where(source, docs[1].Mark()) +
                        "a second YAML document ('---'); a deck is one document");
    if (!docs.empty()) root = docs[0];
  } catch (const YAML::Exception& e) {
    std::string msg = e.msg;
    if (msg == "bad file") msg = "the structure is too deeply nested or malformed for the YAML parser";
    throw ConfigError(where(source, e.mark) + "YAML syntax error: " + msg);
  }
  return root;
}

// The deck's problems as one message: at most kMaxErrors, each at most
// 400 characters.
std::string error_report(const std::vector<std::string>& errors, const std::string& source) {
  std::string msg;
  for (std::size_t i = 0; i < errors.size() && i < kMaxErrors; ++i) {
    std::string e = errors[i];
    if (e.size() > 400)
      e = e.substr(0, 400) + "... (" + std::to_string(errors[i].size() - 400) + " more characters)";
    msg += (msg.empty() ? "" : "\n") + e;
  }
  if (errors.size() > kMaxErrors)
    msg += "\n... and " + std::to_string(errors.size() - kMaxErrors) + " more problems in " + source;
  return msg;
}

}  // namespace

Config parse_config(const Schema& schema, const std::string& text, const std::string& source,
                    const std::vector<std::string>& overrides) {
  Config cfg;
  cfg.source_ = source;
  cfg.overrides_ = overrides;
  for (const auto& k : schema.keys()) {
    cfg.order_.push_back(k.path);
    cfg.values_[k.path] = k.fallback;
  }
  std::vector<std::string> errors;
  check_line_ends(text, source);
  check_indentation(text, source);
  check_nesting(text, source);
  YAML::Node root = load_document(text, source);
  if (root.IsMap())
    Checker(schema, source, cfg.values_, cfg.origins_, errors).mapping(root, "");
  else if (!root.IsNull())
    errors.push_back(source + ":1:1: a deck must be a mapping of sections (" +
                     Checker::list(schema.children("")) + ")");
  for (const auto& o : overrides) apply_override(schema, o, cfg.values_, cfg.origins_, errors);
  if (!errors.empty()) throw ConfigError(error_report(errors, source));
  return cfg;
}

}  // namespace locus
