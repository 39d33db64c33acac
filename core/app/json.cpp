// YAML trees as JSON (app/summary.hpp, yaml_to_json): the summary for
// scripts (--summary json).
#include <cctype>
#include <charconv>
#include <cstdio>
#include <string>

#include "app/summary.hpp"

namespace locus {

namespace {
std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        o += "\\\"";
        break;
      case '\\':
        o += "\\\\";
        break;
      case '\n':
        o += "\\n";
        break;
      case '\t':
        o += "\\t";
        break;
      case '\r':
        o += "\\r";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o + "\"";
}

// A YAML scalar as JSON: plain numbers and booleans as such, the rest as
// strings (yaml-cpp keeps no types for nodes built in code).
std::string json_scalar(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return json_string(s);  // quoted in the source
  if (s == "true" || s == "false") return s;
  if (s == "~" || s == "null") return "null";
  if (!s.empty()) {
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    bool plain = end && *end == 0 && s.find_first_of("xXpP") == std::string::npos &&
                 (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '.');
    if (plain && std::isfinite(v)) return s[0] == '.' ? "0" + s : s;
  }
  return json_string(s);
}

void to_json(const YAML::Node& n, std::string& o, int indent) {
  const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      if (n.size() == 0) {
        o += "{}";
        return;
      }
      o += "{\n";
      bool first = true;
      for (auto it = n.begin(); it != n.end(); ++it) {
        if (!first) o += ",\n";
        first = false;
        o += pad;
        o += json_string(it->first.as<std::string>());
        o += ": ";
        to_json(it->second, o, indent + 2);
      }
      o += '\n';
      o.append(static_cast<std::size_t>(indent), ' ');
      o += '}';
      return;
    }
    case YAML::NodeType::Sequence: {
      o += "[";
      for (std::size_t i = 0; i < n.size(); ++i) {
        if (i) o += ", ";
        to_json(n[i], o, indent + 2);
      }
      o += "]";
      return;
    }
    case YAML::NodeType::Scalar:
      o += json_scalar(n);
      return;
    default:
      o += "null";
  }
}
}  // namespace

std::string yaml_to_json(const YAML::Node& tree) {
  std::string o;
  to_json(tree, o, 0);
  return o + "\n";
}

}  // namespace locus
