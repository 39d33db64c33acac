// The settings table (config/settings_table.hpp) is the one declaration of
// the core's settings: every entry is in the schema with its default,
// range, choices and help; a deck value of every key lands in CommSettings;
// the summary prints every entry that says where, and CommSettings' own
// defaults are the table's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "app/settings_summary.hpp"
#include "config/settings_table.hpp"
#include "locus/config.hpp"
#include "locus/settings.hpp"

using locus::CommSettings;
using locus::Printed;
using locus::Setting;
using locus::SettingKind;
using locus::Value;

namespace {

// The environment overrides stay out of these tests.
class Settings : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("LOCUS_NODE_SIZE");
    unsetenv("LOCUS_ASYNC");
    dir_ = std::filesystem::temp_directory_path() / ("locus_settings_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A file in the test's directory.
  std::string file(const std::string& name, const std::string& text) const {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::string thresholds() const { return file("thresholds.yaml", "low: 0.2\nhigh: 0.7\n"); }
  std::string calibration() const {
    return file("remote.yaml", "library: test\npoints:\n  - {bytes: 8, message_us: 1, rma_us: 2}\n");
  }

  std::filesystem::path dir_;
};

locus::Schema common_schema() {
  locus::Schema s;
  locus::add_common_keys(s, "test");
  return s;
}

CommSettings parse(const std::vector<std::string>& sets) {
  return locus::comm_settings(locus::parse_config(common_schema(), "", "deck.yaml", sets));
}

std::string text(const Value& v) {
  if (const bool* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const long* l = std::get_if<long>(&v)) return std::to_string(*l);
  return std::get<std::string>(v);
}

// A value of the entry's key other than its default, with the other keys
// it needs (`sets`). Numbers are chosen by hand (exact in binary).
Value other_value(const Setting& e, std::vector<std::string>& sets, const std::string& thresholds_file) {
  static const std::map<std::string, double> numbers = {
      {"comm.adapt.interval", 2.5}, {"comm.adapt.low", 0.25}, {"comm.adapt.high", 0.75}};
  if (e.key == "comm.async" || e.key == "comm.aggregate.applier")
    sets.push_back("runtime.progress.processes_per_node=1");
  if (e.key == "comm.async_phases") return std::string("a,b");
  if (e.key == "comm.adapt.thresholds") return thresholds_file;
  switch (e.kind) {
    case SettingKind::boolean:
      return !std::get<bool>(e.fallback);
    case SettingKind::integer: {
      const long d = std::get<long>(e.fallback);
      return d < std::get<long>(e.max) ? d + 1 : d - 1;
    }
    case SettingKind::number:
      return numbers.at(e.key);
    case SettingKind::choice:
      for (const std::string& c : e.choices)
        if (c != std::get<std::string>(e.fallback)) return c;
      break;
    case SettingKind::string:
      break;
  }
  return std::string("x");
}

// The summary's node at a dotted path ("remote.mode", "htm").
YAML::Node at_path(const YAML::Node& tree, const std::string& path) {
  const std::size_t dot = path.find('.');
  if (dot == std::string::npos) return tree[path];
  return tree[path.substr(0, dot)][path.substr(dot + 1)];
}

// Whether `node` shows `p` as settings_summary writes it.
bool shows(const YAML::Node& node, const Printed& p) {
  if (!node.IsDefined()) return false;
  if (const bool* b = std::get_if<bool>(&p)) return node.as<bool>() == *b;
  if (const long* l = std::get_if<long>(&p)) return node.as<long>() == *l;
  if (const double* d = std::get_if<double>(&p)) return node.as<double>() == *d;
  if (const auto* v = std::get_if<std::vector<std::string>>(&p))
    return node.IsSequence() && node.as<std::vector<std::string>>() == *v;
  return node.as<std::string>() == std::get<std::string>(p);
}

}  // namespace

// Every entry is a schema key with the entry's kind, default, range,
// choices and help; every runtime.* and comm.* key of the schema is an
// entry (none declared anywhere else); keys are unique.
TEST_F(Settings, TableIsTheSchema) {
  const locus::Schema schema = common_schema();
  std::set<std::string> keys;
  for (const Setting& e : locus::settings_table()) {
    SCOPED_TRACE(e.key);
    EXPECT_TRUE(keys.insert(e.key).second) << "declared twice";
    const locus::KeySpec* k = schema.find(e.key);
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->fallback, e.fallback);
    EXPECT_EQ(k->help, e.help);
    EXPECT_EQ(k->choices, e.choices);
    switch (e.kind) {
      case SettingKind::boolean:
        EXPECT_EQ(k->kind, locus::KeyKind::Boolean);
        break;
      case SettingKind::integer:
        EXPECT_EQ(k->kind, locus::KeyKind::Integer);
        EXPECT_EQ(k->min, static_cast<double>(std::get<long>(e.min)));
        EXPECT_EQ(k->max, static_cast<double>(std::get<long>(e.max)));
        break;
      case SettingKind::number:
        EXPECT_EQ(k->kind, locus::KeyKind::Real);
        EXPECT_EQ(k->min, std::get<double>(e.min));
        EXPECT_EQ(k->max, std::get<double>(e.max));
        break;
      case SettingKind::choice:
        EXPECT_EQ(k->kind, locus::KeyKind::Choice);
        break;
      case SettingKind::string:
        EXPECT_EQ(k->kind, locus::KeyKind::String);
        break;
    }
  }
  for (const locus::KeySpec& k : schema.keys()) {
    const bool core_key = k.path.rfind("runtime.", 0) == 0 || k.path.rfind("comm.", 0) == 0;
    EXPECT_TRUE(!core_key || keys.count(k.path)) << k.path << " is declared outside the settings table";
  }
}

// Every entry says where the summary prints it or why it does not, and
// every key that no `set` takes says what code reads it.
TEST_F(Settings, EveryEntrySaysWhereItIsPrinted) {
  for (const Setting& e : locus::settings_table()) {
    SCOPED_TRACE(e.key);
    EXPECT_NE(e.summary.empty(), e.not_printed.empty()) << "a summary path or a reason, not both";
    EXPECT_LE(std::count(e.summary.begin(), e.summary.end(), '.'), 1) << e.summary;
    EXPECT_TRUE(e.set || !e.special.empty()) << "read by code: `special` says which";
    EXPECT_TRUE(e.get || e.value || e.summary.empty()) << "printed, but by which value?";
  }
}

// A CommSettings without a deck, and the settings of an empty deck, hold
// the table's defaults.
TEST_F(Settings, DefaultsAreTheTables) {
  const CommSettings from_deck = parse({});
  for (const Setting& e : locus::settings_table()) {
    if (!e.get) continue;
#ifndef NDEBUG
    if (e.key == "comm.check") continue;  // on in debug builds
#endif
    SCOPED_TRACE(e.key);
    EXPECT_EQ(e.get(CommSettings{}), e.fallback);
    EXPECT_EQ(e.get(from_deck), e.fallback);
  }
}

// Any other value of a key lands in CommSettings: the entry reads it back,
// and no other entry's value moves (two entries on one field would).
TEST_F(Settings, EveryKeyLandsInCommSettings) {
  const std::string thresholds_file = thresholds();
  for (const Setting& e : locus::settings_table()) {
    if (!e.set) continue;
    SCOPED_TRACE(e.key);
    std::vector<std::string> sets;
    const Value v = other_value(e, sets, thresholds_file);
    ASSERT_NE(v, e.fallback);
    const CommSettings before = parse(sets);
    sets.push_back(e.key + "=" +
                   (std::holds_alternative<double>(v) ? std::to_string(std::get<double>(v)) : text(v)));
    const CommSettings after = parse(sets);
    EXPECT_EQ(e.get(after), v);
    for (const Setting& other : locus::settings_table()) {
      // (a thresholds file replaces comm.adapt.low and high)
      const bool replaced = e.key == "comm.adapt.thresholds" && other.key.rfind("comm.adapt.", 0) == 0;
      if (other.get && &other != &e && !replaced) {
        EXPECT_EQ(other.get(after), other.get(before)) << other.key << " moved too";
      }
    }
  }
}

// The keys only code reads, and the environment overrides.
TEST_F(Settings, SpecialCases) {
  CommSettings s = parse({"comm.htm=off"});
  EXPECT_FALSE(s.htm);
  EXPECT_EQ(s.htm_why, "off (comm.htm)");
  // comm.fp_locks: auto takes them exactly where nothing else applies
  // same-node floating-point runs better or needs them off.
  EXPECT_TRUE(s.fp_locks) << s.fp_locks_why;
  EXPECT_EQ(s.fp_locks_why, "on (auto: no transactions; floating-point runs under 4 KiB stripe locks)");
  s = parse({"comm.htm=off", "comm.fp_locks=off"});
  EXPECT_FALSE(s.fp_locks);
  EXPECT_EQ(s.fp_locks_why.rfind("off (comm.fp_locks)", 0), 0u) << s.fp_locks_why;
  s = parse({"comm.htm=off", "comm.locality=off"});
  EXPECT_FALSE(s.fp_locks);
  EXPECT_EQ(s.fp_locks_why, "off (auto: comm.locality off, atomics are MPI's)");
  s = parse({"comm.htm=off", "runtime.progress.processes_per_node=1"});
  EXPECT_FALSE(s.fp_locks);
  EXPECT_EQ(s.fp_locks_why, "off (auto: progress processes do not map the lock words)");
  s = parse({});  // auto: off exactly where comm.htm took the CPU's RTM
  EXPECT_EQ(s.fp_locks, !s.htm) << s.htm_why << "; " << s.fp_locks_why;
  const std::string cal = calibration();
  s = parse({"comm.remote_calibration=" + cal});
  EXPECT_EQ(s.remote.calibration, std::filesystem::absolute(cal).lexically_normal().string());
  EXPECT_EQ(s.remote.why, "calibrated with test");
  EXPECT_EQ(parse({"comm.remote=message", "comm.remote_calibration=" + cal}).remote.why,
            "comm.remote: message");
  s = parse({"comm.adapt.thresholds=" + thresholds()});
  EXPECT_EQ(s.async.low, 0.2);
  EXPECT_EQ(s.async.high, 0.7);
  setenv("LOCUS_NODE_SIZE", "3", 1);
  EXPECT_EQ(parse({}).node_size, 3);
  EXPECT_EQ(parse({"runtime.node_size=2"}).node_size, 2);
  setenv("LOCUS_ASYNC", "user", 1);
  EXPECT_EQ(parse({"runtime.progress.processes_per_node=1"}).async.mode, locus::AsyncMode::user);
  // The checks across keys, with the messages the app tests look for.
  try {
    parse({});
    ADD_FAILURE() << "LOCUS_ASYNC=user without progress processes was accepted";
  } catch (const locus::CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("LOCUS_ASYNC=user: redirection needs progress processes"),
              std::string::npos)
        << e.what();
  }
  unsetenv("LOCUS_ASYNC");
  try {
    parse({"comm.aggregate.applier=progress"});
    ADD_FAILURE() << "applier progress without progress processes was accepted";
  } catch (const locus::CollectiveError& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "--set comm.aggregate.applier=progress: comm.aggregate.applier: progress needs progress processes "
        "(runtime.progress.processes_per_node >= 1): they apply the batches");
  }
}

// The summary prints every entry that has a summary path, at that path,
// in a run where the entry's condition holds (redirection on for async.*).
TEST_F(Settings, SummaryPrintsEveryPrintedEntry) {
  const std::map<std::string, std::vector<std::string>> needs = {
      {"async.mode", {"comm.async=on"}},
      {"async.on_phases", {"comm.async=user"}},
      {"async.interval", {"comm.async=auto"}},
      {"async.low", {"comm.async=auto"}},
      {"async.high", {"comm.async=auto"}},
      {"async.thresholds", {"comm.async=auto", "comm.adapt.thresholds=" + thresholds()}},
      {"remote.calibration", {"comm.remote_calibration=" + calibration()}},
  };
  std::set<std::string> printed;
  for (const Setting& e : locus::settings_table()) {
    if (e.summary.empty()) continue;
    SCOPED_TRACE(e.key);
    std::vector<std::string> sets = {"runtime.progress.processes_per_node=1"};
    if (auto it = needs.find(e.summary); it != needs.end())
      sets.insert(sets.end(), it->second.begin(), it->second.end());
    const CommSettings s = parse(sets);
    const std::optional<Printed> p = e.print(s);
    ASSERT_TRUE(p.has_value()) << "not printed with " << ::testing::PrintToString(sets);
    EXPECT_TRUE(shows(at_path(locus::settings_summary(s), e.summary), *p)) << e.summary;
    printed.insert(e.summary);
  }
  // What tools/study.py and the app tests read.
  for (const char* path : {"node_map.emulated_node_size", "progress.thread", "remote.mode", "remote.faces",
                           "remote.requests", "htm", "fp_locks", "async.mode"})
    EXPECT_TRUE(printed.count(path)) << path;
  // Redirection off: no async section.
  EXPECT_FALSE(locus::settings_summary(parse({}))["async"].IsDefined());
}
