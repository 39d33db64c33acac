#include "harness.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "locus/profile.hpp"
#include "locus/wait.hpp"

namespace bench {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

double max_over_ranks(MPI_Comm comm, double v) {
  double out = 0;
  locus::allreduce_yielding(&v, &out, 1, MPI_DOUBLE, MPI_MAX, comm);
  return out;
}

std::string oversubscription_note() {
  int processes = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  const unsigned cores = std::thread::hardware_concurrency();
  if (cores == 0 || static_cast<unsigned>(processes) <= cores) return "";
  return " (OVER-SUBSCRIBED: " + std::to_string(processes) + " processes on " + std::to_string(cores) +
         " cores)";
}

std::vector<std::string> chosen_variants(const locus::Context& ctx, const std::string& key,
                                         const std::vector<std::string>& known, bool raw_possible) {
  const locus::Config& c = ctx.config();
  std::vector<std::string> names = split_list(c.string(key));
  std::string bad, all;
  for (const auto& n : names)
    if (std::find(known.begin(), known.end(), n) == known.end() && bad.empty()) bad = n;
  for (const auto& k : known) all += k + ", ";
  locus::collective_require(ctx.comm(), bad.empty() && !names.empty(),
                            c.locate(key) + ": unknown variant '" + bad + "' (" + all + "comma-separated)");
  const auto raw = std::find(names.begin(), names.end(), "raw");
  if (!raw_possible && raw != names.end()) {
    names.erase(raw);
    if (ctx.rank() == 0) std::printf("# raw skipped: the ranks are on more than one real node\n");
  }
  return names;
}

bool all_same_node(const locus::Team& team) {
  for (int u = 0; u < team.size(); ++u)
    if (!team.same_node(u)) return false;
  return true;
}

// ---------------------------------------------------------------- repeats

Samples interleave(long repeats, const std::vector<std::string>& names,
                   const std::function<double(const std::string& name, long repeat)>& run) {
  Samples out;
  const std::size_t n = names.size();
  for (long rep = 0; rep < repeats; ++rep)
    for (std::size_t i = 0; i < n; ++i) {
      const std::string& name = names[(i + static_cast<std::size_t>(rep)) % n];
      out[name].push_back(run(name, rep));
    }
  return out;
}

double spread(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  const double m = locus::median(v);
  return m > 0 ? (*hi - *lo) / m : 0.0;
}

double ratio(const std::map<std::string, double>& value, const std::string& name,
             const std::string& baseline) {
  const auto a = value.find(name), b = value.find(baseline);
  if (a == value.end() || b == value.end() || b->second <= 0) return 0.0;
  return a->second / b->second;
}

std::string best_of(const std::map<std::string, double>& value, std::initializer_list<const char*> names) {
  std::string best;
  for (const char* n : names) {
    const auto it = value.find(n);
    if (it != value.end() && (best.empty() || it->second > value.at(best))) best = n;
  }
  return best;
}

std::string ratio_text(double r) {
  char buf[32] = "-";
  if (r > 0) std::snprintf(buf, sizeof buf, "%.2f", r);
  return buf;
}

const char* verdict(bool met) {
  return met ? "met" : "missed";
}

// ---------------------------------------------------------------- tables

Cell Cell::as(std::variant<double, long, std::string> value, std::string text) {
  Cell c(0L);
  c.value = std::move(value);
  c.shown = std::move(text);
  return c;
}

Cell Cell::ratio(double r) {
  return as(r, ratio_text(r));
}

std::string data_text(const std::variant<double, long, std::string>& v) {
  std::ostringstream o;
  std::visit([&](const auto& x) { o << x; }, v);
  return o.str();
}

std::string csv_field(const std::variant<double, long, std::string>& v) {
  std::string t = data_text(v);
  if (t.find_first_of(",\"") == std::string::npos) return t;
  std::string q = "\"";
  for (char ch : t) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

namespace {

// The conversion of a column's format: where it starts ('%') and ends.
std::pair<std::size_t, std::size_t> conversion(const std::string& format) {
  const std::size_t at = format.find('%');
  const std::size_t end = format.find_first_of("sfdgeu", at);
  if (at == std::string::npos || end == std::string::npos)
    throw std::logic_error("bench::Table: format '" + format + "' has no printf conversion");
  return {at, end};
}

// printf of one value with a format holding one conversion.
template <class T>
std::string printed(const std::string& format, T value) {
  const int n = std::snprintf(nullptr, 0, format.c_str(), value);
  std::string out(static_cast<std::size_t>(n), '\0');
  std::snprintf(out.data(), out.size() + 1, format.c_str(), value);
  return out;
}

// The same format for text: its flags and width, precision and length dropped.
std::string as_text_format(const std::string& format) {
  const auto [at, end] = conversion(format);
  std::string spec = format.substr(at + 1, end - at - 1);
  spec = spec.substr(0, spec.find('.'));
  spec.erase(std::remove(spec.begin(), spec.end(), 'l'), spec.end());
  return format.substr(0, at) + "%" + spec + "s" + format.substr(end + 1);
}

}  // namespace

Table& Table::column(const std::string& key, const std::string& header, const std::string& format,
                     Shown shown) {
  conversion(format);  // a format without a conversion is a programming error, found at once
  columns_.push_back({key, header, format, shown});
  return *this;
}

void Table::row(std::vector<Cell> cells) {
  if (cells.size() != columns_.size())
    throw std::logic_error("bench::Table: a row of " + std::to_string(cells.size()) + " cells for " +
                           std::to_string(columns_.size()) + " columns");
  rows_.push_back(std::move(cells));
}

std::string Table::text(const Column& col, const Cell& cell) const {
  if (!cell.shown.empty()) return printed(as_text_format(col.format), cell.shown.c_str());
  if (const auto* d = std::get_if<double>(&cell.value)) return printed(col.format, *d);
  if (const auto* l = std::get_if<long>(&cell.value)) return printed(col.format, *l);
  return printed(as_text_format(col.format), std::get<std::string>(cell.value).c_str());
}

void Table::print_header(std::FILE* out) const {
  std::string line;
  for (const Column& col : columns_)
    if (col.shown != Shown::data_only) line += printed(as_text_format(col.format), col.header.c_str());
  std::fprintf(out, "%s\n", line.c_str());
}

void Table::print_row(std::size_t i, std::FILE* out) const {
  std::string line;
  for (std::size_t c = 0; c < columns_.size(); ++c)
    if (columns_[c].shown != Shown::data_only) line += text(columns_[c], rows_.at(i)[c]);
  std::fprintf(out, "%s\n", line.c_str());
}

void Table::print(std::FILE* out) const {
  print_header(out);
  for (std::size_t i = 0; i < rows_.size(); ++i) print_row(i, out);
}

void Table::write_csv(const std::string& path, bool append) const {
  const bool fresh = !append || !std::filesystem::exists(path);
  std::ofstream csv(path, fresh ? std::ios::trunc : std::ios::app);
  // one CSV line: the data columns' texts, comma-separated
  auto line = [&](const std::function<std::string(std::size_t)>& field) {
    bool first = true;
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      if (columns_[c].shown == Shown::text_only) continue;
      if (!first) csv << ',';
      csv << field(c);
      first = false;
    }
    csv << '\n';
  };
  if (fresh) line([&](std::size_t c) { return columns_[c].key; });
  for (const auto& r : rows_) line([&](std::size_t c) { return csv_field(r[c].value); });
}

locus::Tree Table::data() const {
  locus::Tree rows = locus::Tree::list();
  for (const auto& r : rows_) {
    locus::Tree m = locus::Tree::map();
    for (std::size_t c = 0; c < columns_.size(); ++c)
      if (columns_[c].shown != Shown::text_only) m[columns_[c].key] = data_text(r[c].value);
    rows.push_back(m);
  }
  return rows;
}

// ---------------------------------------------------------------- report

Report::Report(const locus::Config& config, const std::string& benchmark, const std::string& suffix)
    : benchmark_(benchmark), tree_(locus::Tree::map()), rows_(locus::Tree::list()) {
  const std::string dir = config.string("output.dir");
  std::filesystem::create_directories(dir);
  const std::string stem = dir + "/" + config.string("output.name") + suffix;
  csv_ = stem + ".csv";
  json_ = stem + ".json";
  text("benchmark", benchmark);
  quick_ = config.boolean("bench.quick");
  text("quick", quick_ ? "true" : "false");
  tree_["quick"] = quick_;
  if (quick_)
    lines_.back() +=
        "  # smaller sizes, fewer repeats: figures indicative; goals that need the full sizes "
        "not judged";
}

void add_keys(locus::Schema& schema, const std::string& name) {
  locus::add_common_keys(schema, name);
  schema.boolean("bench.quick", false,
                 "a quick run (./locus bench NAME --quick sets it with smaller sizes and fewer repeats): the "
                 "report says so, and goals that need the full sizes read 'not judged (quick)'");
}

locus::Tree& Report::current() {
  return section_key_.empty() ? tree_ : section_;
}

void Report::paths() {
  text("csv", std::filesystem::absolute(csv_).string());
  text("json", std::filesystem::absolute(json_).string());
}

void Report::text(const std::string& key, const std::string& value) {
  lines_.push_back((section_key_.empty() ? "  " : "    ") + key + ": " + value);
  current()[key] = value;
}

void Report::figure(const std::string& key, double value, const char* format, const std::string& comment) {
  const std::string shown = printed(format, value);
  text(key, shown);
  if (!comment.empty()) lines_.back() += "  # " + comment;
}

void Report::section(const std::string& key) {
  end_section();
  lines_.push_back("  " + key + ":");
  section_key_ = key;
  section_ = locus::Tree::map();
}

void Report::end_section() {
  if (section_key_.empty()) return;
  tree_[section_key_] = section_;
  section_key_.clear();
}

void Report::goals() {
  section("goals");
}

void Report::goal(const std::string& key, bool met, const std::string& note) {
  if (section_key_ != "goals") throw std::logic_error("bench::Report: goal '" + key + "' outside goals()");
  text(key, verdict(met));
  if (!note.empty()) lines_.back() += " (" + note + ")";
}

void Report::sized_goal(const std::string& key, bool met, const std::string& note) {
  if (quick_)
    not_judged(key, "quick");
  else
    goal(key, met, note);
}

void Report::not_judged(const std::string& key, const std::string& why) {
  if (section_key_ != "goals") throw std::logic_error("bench::Report: goal '" + key + "' outside goals()");
  text(key, "not judged (" + why + ")");
}

void Report::verification(bool pass, const std::string& why) {
  end_section();
  text("verification", pass ? "PASS" : "FAIL");
  if (!pass && !why.empty()) lines_.back() += " (" + why + ")";
}

void Report::table(const Table& t, bool append) {
  t.write_csv(csv_, append);
  const locus::Tree rows = t.data();
  for (const locus::Tree& r : rows.items()) rows_.push_back(r);
}

void Report::data(const std::string& key, const Table& t) {
  extra_[key] = t.data();
}

void Report::finish(std::FILE* out) const {
  std::fprintf(out, "\nlocus_bench:\n");
  for (const std::string& line : lines_) std::fprintf(out, "%s\n", line.c_str());
  locus::Tree tree = tree_;
  if (!section_key_.empty()) tree[section_key_] = section_;
  tree["rows"] = rows_;
  for (const auto& [key, rows] : extra_.entries()) tree[key] = rows;
  locus::Tree root;
  root["locus_bench"] = tree;
  std::ofstream(json_) << root.json();
}

}  // namespace bench
