#pragma once
// The benchmark harness every benchmark in bench/ reports through:
//   - interleaved repeats (every variant once per repeat, in turn, so that
//     a slow spell of the machine falls on all of them alike), medians and
//     spread;
//   - ratios against a named baseline ("-" in a table when the baseline
//     did not run);
//   - a Table of named columns, printed as text and written as CSV, its
//     rows in the JSON summary the same way (the same cells, the same
//     number formatting);
//   - a Report: the "locus_bench:" block at the end of the output (figures,
//     goal verdicts, verification), and the same tree as JSON in
//     <output.dir>/<output.name>.json, which the smoke tests read.
// Benchmarks keep only their own logic: what they time and what they
// compare.
#include <mpi.h>

#include <cstdio>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "locus/app.hpp"
#include "locus/team.hpp"
#include "locus/tree.hpp"

namespace bench {

// The keys every benchmark's deck has: the apps' common keys (name,
// output.*, runtime.*, comm.*) and bench.quick (`./locus bench NAME
// --quick`: smaller sizes and fewer repeats, set by tools/bench.py; the
// report says so, and goals that need the full sizes are not judged).
void add_keys(locus::Schema& schema, const std::string& name);

// "a,b,,c" -> {a, b, c}
std::vector<std::string> split_list(const std::string& s);

// The largest v over the ranks of comm (a time: the slowest rank's).
double max_over_ranks(MPI_Comm comm, double v);

// " (OVER-SUBSCRIBED: P processes on C cores)" when the job has more
// processes than the machine has cores, else "".
std::string oversubscription_note();

// The variants named by the deck key `key` (comma-separated), each one of
// `known` (else the same error on every rank, naming them). "raw" is left
// out, with a note on rank 0, when `raw_possible` is false (the ranks are
// on more than one real node).
std::vector<std::string> chosen_variants(const locus::Context& ctx, const std::string& key,
                                         const std::vector<std::string>& known, bool raw_possible);

// Every unit of the team on this unit's (real or emulated) node.
bool all_same_node(const locus::Team& team);

// ---------------------------------------------------------------- repeats

// Seconds of every run of every variant, by variant name.
using Samples = std::map<std::string, std::vector<double>>;

// Repeat r (0 .. repeats-1) runs every variant of `names` once, starting at
// variant r (mod their number), so that no variant always runs first or
// after the same one (spmv: the mode listed first in bench.modes read 2-4 %
// faster than the same product listed second, rounds in a fixed order);
// run(name, r) does one timed run and returns its seconds.
Samples interleave(long repeats, const std::vector<std::string>& names,
                   const std::function<double(const std::string& name, long repeat)>& run);

// The spread of repeated measurements: (max - min) / median (locus::median,
// the upper one of an even count), 0 for a single one.
double spread(const std::vector<double>& v);

// value[name] / value[baseline]: 0 when either did not run or the baseline
// is 0 (a table shows "-").
double ratio(const std::map<std::string, double>& value, const std::string& name,
             const std::string& baseline);

// Of `names`, the one with the largest value that ran ("" if none did).
std::string best_of(const std::map<std::string, double>& value, std::initializer_list<const char*> names);

// A ratio for a table: "%.2f", "-" for 0 (no baseline in this run).
std::string ratio_text(double r);

// "met" or "missed".
const char* verdict(bool met);

// ---------------------------------------------------------------- tables

// One cell: a number or a text for CSV and JSON, and optionally another
// text for the printed table (a ratio's "-", a verdict with its rule).
struct Cell {
  std::variant<double, long, std::string> value;
  std::string shown;  // empty: the value, in the column's format
  Cell(double v) : value(v) {}
  Cell(long v) : value(v) {}
  Cell(int v) : value(static_cast<long>(v)) {}
  Cell(std::string v) : value(std::move(v)) {}
  Cell(const char* v) : value(std::string(v)) {}
  // value in the data, `text` in the printed table
  static Cell as(std::variant<double, long, std::string> value, std::string text);
  // a ratio: the number in the data, ratio_text in the printed table
  static Cell ratio(double r);
};

class Table {
 public:
  enum class Shown { everywhere, text_only, data_only };
  // A column: `key` names it in CSV and JSON, `header` in the printed table;
  // `format` is how a cell prints, one printf conversion with any text
  // before it (" %10.6f", "  %s"); the header takes the same width.
  Table& column(const std::string& key, const std::string& header, const std::string& format,
                Shown shown = Shown::everywhere);
  // A data column that the printed table leaves out (placement, units).
  Table& data_column(const std::string& key) { return column(key, key, "%s", Shown::data_only); }
  // One cell per column, in column order.
  void row(std::vector<Cell> cells);

  void print_header(std::FILE* out = stdout) const;
  void print_row(std::size_t i, std::FILE* out = stdout) const;
  void print(std::FILE* out = stdout) const;  // header and every row
  // The data columns as CSV (a header line, then the rows); with `append`,
  // the rows go after those of an existing file (the header only into a
  // new one).
  void write_csv(const std::string& path, bool append = false) const;
  // The rows as a sequence of maps of the data columns.
  locus::Tree data() const;
  std::size_t rows() const { return rows_.size(); }

 private:
  struct Column {
    std::string key, header, format;
    Shown shown;
  };
  std::string text(const Column& col, const Cell& cell) const;
  std::vector<Column> columns_;
  std::vector<std::vector<Cell>> rows_;
};

// A number as the CSV and JSON cells write it (six significant digits).
std::string data_text(const std::variant<double, long, std::string>& v);
// The same as one CSV field: quoted when it holds a comma or a quote.
std::string csv_field(const std::variant<double, long, std::string>& v);

// ---------------------------------------------------------------- report

// The summary of a benchmark run (rank 0 fills and prints it): entries in
// the order they are added, printed as "  key: text", in JSON as numbers
// where the text is one.
class Report {
 public:
  // Paths from output.dir (created) and output.name, with `suffix` after
  // the name (latency_same-node.csv).
  Report(const locus::Config& config, const std::string& benchmark, const std::string& suffix = "");
  const std::string& csv_path() const { return csv_; }
  const std::string& json_path() const { return json_; }

  // "csv: <path>" and "json: <path>" (absolute).
  void paths();
  void text(const std::string& key, const std::string& value);
  // A number: "key: <value in format>[  # comment]" printed, the number in
  // the JSON.
  void figure(const std::string& key, double value, const char* format = "%.3f",
              const std::string& comment = "");
  // A nested block ("key:" and its entries one level in): entries added
  // until end_section() go inside.
  void section(const std::string& key);
  void end_section();
  // "goals:": the goals are judged (not over-subscribed); goal() adds one
  // verdict inside.
  void goals();
  // "key: met" or "key: missed", with " (note)" after it when given.
  void goal(const std::string& key, bool met, const std::string& note = "");
  // A goal that only the full sizes judge honestly (a memory roofline out
  // of the caches, the largest messages, the full DGEMM): as goal(), and
  // "key: not judged (quick)" in a quick run.
  void sized_goal(const std::string& key, bool met, const std::string& note = "");
  // "key: not judged (why)".
  void not_judged(const std::string& key, const std::string& why);
  bool quick() const { return quick_; }
  // "verification: PASS", or "FAIL" with " (why)" after it when given.
  void verification(bool pass, const std::string& why = "");
  // The table's rows: its CSV at csv_path() (appended to, with `append`),
  // its rows in the JSON.
  void table(const Table& t, bool append = false);
  // Another table's rows in the JSON under `key` (no CSV).
  void data(const std::string& key, const Table& t);
  // Prints the "locus_bench:" block and writes the JSON.
  void finish(std::FILE* out = stdout) const;

 private:
  locus::Tree& current();
  std::string benchmark_, csv_, json_;
  bool quick_ = false;
  std::vector<std::string> lines_;  // the printed block, one entry a line
  locus::Tree tree_;                // the same as JSON
  locus::Tree section_;             // the open section, if any
  std::string section_key_;
  locus::Tree rows_;
  locus::Tree extra_;  // data(): more tables' rows, by key
};

}  // namespace bench
