// The keys every app's deck has, beside the app's own: name, output.* and
// validity.* (what the app layer reads), then the core's settings (runtime.*, comm.*)
// from their table (settings_table.cpp).
#include "config/settings_table.hpp"
#include "locus/settings.hpp"

namespace locus {

namespace {

// name, output.* and validity.*
void add_output_keys(Schema& s, const std::string& app_name) {
  s.string("name", "", "run name for summaries (default: the deck's file name without .yaml)")
      .string("output.dir", "output", "directory for " + app_name + ".h5 and friends (created if missing)")
      .string("output.name", app_name, "output file stem: <output.dir>/<output.name>.h5")
      .boolean("output.overwrite", false, "replace an existing output file")
      .boolean("output.write_field", true, "write the final field(s) into the HDF5 file")
      .boolean("output.xdmf", true, "write an XDMF file next to grid fields (ParaView)")
      .real("validity.min_timed_seconds", 1.0, 0.0, 1.0e6,
            "the shortest timed loop (the figure of merit's seconds) rated VALID in the summary's validity "
            "(HPCG's rule: a run must time long enough to be measured)");
}

// One entry of the settings table as a schema key.
void add_setting(Schema& s, const Setting& e) {
  switch (e.kind) {
    case SettingKind::boolean:
      s.boolean(e.key, std::get<bool>(e.fallback), e.help);
      return;
    case SettingKind::integer:
      s.integer(e.key, std::get<long>(e.fallback), std::get<long>(e.min), std::get<long>(e.max), e.help);
      return;
    case SettingKind::number:
      s.real(e.key, std::get<double>(e.fallback), std::get<double>(e.min), std::get<double>(e.max), e.help);
      return;
    case SettingKind::choice:
      s.choice(e.key, std::get<std::string>(e.fallback), e.choices, e.help);
      return;
    case SettingKind::string:
      s.string(e.key, std::get<std::string>(e.fallback), e.help);
      return;
  }
}

}  // namespace

void add_common_keys(Schema& s, const std::string& app_name) {
  add_output_keys(s, app_name);
  for (const Setting& e : settings_table()) add_setting(s, e);
}

}  // namespace locus
