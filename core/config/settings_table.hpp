#pragma once
// The core's settings (the runtime.* and comm.* keys of every deck), each
// declared once in one table, as Sandia OpenSHMEM declares its environment
// (src/shmem_env_defs.h): deck key, kind, default, range or choices, help,
// where the value lands in CommSettings and where the run summary prints
// it. From the table come
//   - the schema (add_common_keys, hence --print-schema, --help and
//     docs/config-reference.md),
//   - the parsing (comm_settings: every entry's `set`),
//   - the summary's lines for these settings (settings_summary in
//     core/app/summary.cpp).
// What one entry cannot say is code beside the table in comm_settings.cpp,
// named by the entry's `special`: the LOCUS_NODE_SIZE and LOCUS_ASYNC
// environment overrides, the thresholds and calibration files, the comm.htm
// decision, checks across keys.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "locus/config.hpp"
#include "locus/settings.hpp"

namespace locus {

enum class SettingKind { boolean, integer, number, choice, string };

// A setting's resolved value as the summary prints it: a scalar, or a list
// shown inline ([a, b]).
using Printed = std::variant<bool, long, double, std::string, std::vector<std::string>>;

struct Setting {
  std::string key;  // the deck key, e.g. "comm.remote"
  SettingKind kind;
  Value fallback;                    // the default: bool, long, double or std::string (a choice's name)
  Value min, max;                    // integer (long) and number (double): the closed range
  std::vector<std::string> choices;  // choice: the names, in the order --help lists them
  std::string help;
  // How the deck's value (of the type of `fallback`) lands in CommSettings,
  // and the value CommSettings holds, spelt as in a deck. Empty for a key
  // that only code beside the table reads (then `special` says which).
  std::function<void(CommSettings&, const Value&)> set;
  std::function<Value(const CommSettings&)> get;
  // What comm_settings does with the key after the table ("" when nothing).
  std::string special;
  // Where the run summary prints the resolved value: a dotted path below
  // locus_summary ("remote.mode"), or "" with the reason in `not_printed`.
  // The value is `get`'s unless `value` is given; `when` (if given) says in
  // which runs the key is there.
  std::string summary;
  std::string not_printed;
  std::function<bool(const CommSettings&)> when;
  std::function<Printed(const CommSettings&)> value;

  // What the summary prints at `summary` for these settings (nullopt: the
  // key is left out in this run, or never printed).
  std::optional<Printed> print(const CommSettings& s) const;

  // The table's modifiers (settings_table.cpp).
  Setting& printed(std::string path, std::function<bool(const CommSettings&)> only_when = {},
                   std::function<Printed(const CommSettings&)> shown = {});
  Setting& unprinted(std::string why);
  Setting& then(std::string what);
};

// The table, in --print-schema order.
const std::vector<Setting>& settings_table();
// The entry of `key`, or nullptr.
const Setting* find_setting(const std::string& key);

// The deck's value of the entry's key (`config` checked against a schema
// with add_common_keys), of the type of its default.
Value deck_value(const Config& config, const Setting& setting);

}  // namespace locus
