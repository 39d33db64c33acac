// Config schema checks: every error kind names file:line:col and the key.
#include <gtest/gtest.h>

#include <cmath>

#include "locus/config.hpp"
#include "locus/settings.hpp"

using locus::ConfigError;
using locus::Schema;

namespace {

Schema test_schema() {
  Schema s;
  s.integer("app.grid.nx", 8, 1, Schema::kNoMax, "points in x")
      .integer("app.grid.ny", 8, 1, 100, "points in y")
      .real("app.dt", 0.1, 0.0, HUGE_VAL, "time step", true)
      .real("app.theta", 0.5, 0.0, 1.0, "weight")
      .boolean("app.verbose", false, "chatty")
      .string("app.label", "run", "a label")
      .choice("comm.halo", "p2p", {"p2p", "rma"}, "strategy")
      .dims("app.procs", "process grid");
  return s;
}

// The message of the ConfigError that parsing throws.
std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    locus::parse_config(test_schema(), text, "deck.yaml", overrides);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Config, DefaultsWhenDeckIsEmpty) {
  auto c = locus::parse_config(test_schema(), "", "deck.yaml", {});
  EXPECT_EQ(c.integer("app.grid.nx"), 8);
  EXPECT_DOUBLE_EQ(c.real("app.dt"), 0.1);
  EXPECT_FALSE(c.boolean("app.verbose"));
  EXPECT_EQ(c.string("comm.halo"), "p2p");
  EXPECT_EQ(c.dims("app.procs"), (locus::Dims{0, 0, 0}));
}

TEST(Config, ReadsEveryType) {
  auto c = locus::parse_config(test_schema(),
                               "app:\n  grid: {nx: 12, ny: 100}\n  dt: 2.5e-3\n  verbose: yes\n"
                               "  label: hello\n  procs: [2, 1, 3]\ncomm:\n  halo: rma\n",
                               "deck.yaml", {});
  EXPECT_EQ(c.integer("app.grid.nx"), 12);
  EXPECT_EQ(c.integer("app.grid.ny"), 100);
  EXPECT_DOUBLE_EQ(c.real("app.dt"), 2.5e-3);
  EXPECT_TRUE(c.boolean("app.verbose"));
  EXPECT_EQ(c.string("app.label"), "hello");
  EXPECT_EQ(c.dims("app.procs"), (locus::Dims{2, 1, 3}));
  EXPECT_EQ(c.string("comm.halo"), "rma");
}

TEST(Config, OutOfRangeNamesLineColumnAndKey) {
  EXPECT_EQ(error_of("app:\n  grid:\n    nx: -3\n"),
            "deck.yaml:3:9: app.grid.nx: must be a positive integer (got -3)");
  EXPECT_EQ(error_of("app:\n  grid:\n    ny: 101\n"),
            "deck.yaml:3:9: app.grid.ny: must be an integer in [1, 100] (got 101)");
  EXPECT_EQ(error_of("app:\n  dt: 0\n"), "deck.yaml:2:7: app.dt: must be a positive number (got 0)");
  EXPECT_EQ(error_of("app:\n  theta: 1.5\n"),
            "deck.yaml:2:10: app.theta: must be a number in [0, 1] (got 1.5)");
}

TEST(Config, WrongType) {
  EXPECT_EQ(error_of("app:\n  grid: {nx: 2.5}\n"),
            "deck.yaml:2:14: app.grid.nx: must be a positive integer (got 2.5)");
  EXPECT_EQ(error_of("app:\n  dt: fast\n"), "deck.yaml:2:7: app.dt: must be a positive number (got fast)");
  EXPECT_EQ(error_of("app:\n  verbose: 3\n"), "deck.yaml:2:12: app.verbose: must be true or false (got 3)");
  EXPECT_EQ(error_of("app:\n  grid: [1, 2]\n"),
            "deck.yaml:2:9: app.grid: must be a section (a mapping of keys: nx, ny)");
  EXPECT_EQ(error_of("app:\n  procs: [2, 0, 1]\n"),
            "deck.yaml:2:10: app.procs: must be auto or a list of three positive integers "
            "[px, py, pz] (got [2, 0, 1])");
  EXPECT_EQ(error_of("app:\n  grid:\n    nx:\n"),
            "deck.yaml:3:5: app.grid.nx: must be a positive integer (got nothing)");
  // decimal only: hex integers and floats, negative zero
  EXPECT_EQ(error_of("app:\n  grid: {nx: 0x10}\n"),
            "deck.yaml:2:14: app.grid.nx: must be a positive integer (got 0x10)");
  EXPECT_EQ(error_of("app:\n  dt: 0x1p3\n"), "deck.yaml:2:7: app.dt: must be a positive number (got 0x1p3)");
  EXPECT_EQ(error_of("app:\n  theta: 0x0\n"),
            "deck.yaml:2:10: app.theta: must be a number in [0, 1] (got 0x0)");
  EXPECT_EQ(error_of("app:\n  theta: -0\n"),
            "deck.yaml:2:10: app.theta: must be a number in [0, 1] (got -0)");
  EXPECT_EQ(error_of("app:\n  theta: -0.0\n"),
            "deck.yaml:2:10: app.theta: must be a number in [0, 1] (got -0.0)");
  EXPECT_EQ(error_of("", {"app.theta=0.25"}), "(no error)");
}

TEST(Config, UnknownKeySuggestsTheClosest) {
  EXPECT_EQ(error_of("app:\n  grid:\n    nxx: 4\n"),
            "deck.yaml:3:5: app.grid.nxx: unknown key (did you mean 'nx'?)");
  EXPECT_EQ(error_of("comms:\n  halo: p2p\n"), "deck.yaml:1:1: comms: unknown key (did you mean 'comm'?)");
  EXPECT_EQ(error_of("app:\n  zzzzzz: 1\n"),
            "deck.yaml:2:3: app.zzzzzz: unknown key (known here: grid, dt, theta, verbose, label, procs)");
}

TEST(Config, ChoiceSuggestsTheClosest) {
  EXPECT_EQ(error_of("comm:\n  halo: rmma\n"),
            "deck.yaml:2:9: comm.halo: must be one of p2p, rma (got rmma), did you mean 'rma'?");
}

TEST(Config, SyntaxErrorHasALine) {
  std::string e = error_of("app:\n  grid: {nx: 4\n");
  EXPECT_EQ(e.rfind("deck.yaml:3:", 0), 0u) << e;
  EXPECT_NE(e.find("YAML syntax error"), std::string::npos) << e;
}

TEST(Config, DuplicateKey) {
  EXPECT_EQ(error_of("app:\n  dt: 1\n  dt: 2\n"), "deck.yaml:3:3: app.dt: given twice");
}

TEST(Config, AllErrorsAreReportedTogether) {
  std::string e = error_of("app:\n  grid: {nx: 0}\n  dt: -1\n");
  EXPECT_NE(e.find("deck.yaml:2:14: app.grid.nx"), std::string::npos) << e;
  EXPECT_NE(e.find("\ndeck.yaml:3:7: app.dt"), std::string::npos) << e;
}

TEST(Config, MissingFile) {
  try {
    locus::read_deck("/nonexistent/deck.yaml");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/deck.yaml: cannot open deck (No such file or directory)");
  }
}

TEST(Config, OverridesAreCheckedLikeTheDeck) {
  auto c = locus::parse_config(test_schema(), "app:\n  grid: {nx: 4}\n", "deck.yaml",
                               {"app.grid.nx=64", "app.procs=[1, 2, 1]", "comm.halo=rma"});
  EXPECT_EQ(c.integer("app.grid.nx"), 64);
  EXPECT_EQ(c.dims("app.procs"), (locus::Dims{1, 2, 1}));
  EXPECT_EQ(c.string("comm.halo"), "rma");
  EXPECT_EQ(error_of("", {"app.grid.nx=-3"}),
            "--set app.grid.nx=-3: app.grid.nx: must be a positive integer (got -3)");
  EXPECT_EQ(error_of("", {"app.grid.mx=3"}),
            "--set app.grid.mx=3: app.grid.mx: unknown key (did you mean 'app.grid.nx'?)");
  EXPECT_EQ(error_of("", {"app.grid=3"}),
            "--set app.grid=3: app.grid: is a section; set one of its keys (nx, ny)");
  EXPECT_EQ(error_of("", {"app.grid.nx"}),
            "--set app.grid.nx: expected key=value, e.g. --set heat3d.grid.nx=64");
}

TEST(Config, EffectiveYamlRoundTrips) {
  auto c = locus::parse_config(test_schema(), "app:\n  dt: 0.1\n  label: '123'\n", "deck.yaml",
                               {"app.theta=0.3", "app.procs=[2,2,1]"});
  std::string text = c.yaml();
  auto again = locus::parse_config(test_schema(), text, "echo.yaml", {});
  EXPECT_EQ(again.yaml(), text);
  EXPECT_DOUBLE_EQ(again.real("app.theta"), 0.3);
  EXPECT_EQ(again.string("app.label"), "123");
  EXPECT_EQ(again.dims("app.procs"), (locus::Dims{2, 2, 1}));
  EXPECT_NE(text.find("theta: 0.3"), std::string::npos) << text;
}

TEST(Config, WrongAccessorIsAnError) {
  auto c = locus::parse_config(test_schema(), "", "deck.yaml", {});
  EXPECT_THROW(c.real("app.grid.nx"), locus::Error);
  EXPECT_THROW(c.integer("app.nothing"), locus::Error);
}

TEST(Config, EditDistance) {
  EXPECT_EQ(locus::edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(locus::edit_distance("", "abc"), 3u);
  EXPECT_EQ(locus::closest_match("tolerence", {"tolerance", "dt"}), "tolerance");
  EXPECT_EQ(locus::closest_match("qqqqqq", {"tolerance", "dt"}), "");
}

TEST(Config, RealOrAutoAndOpenBounds) {
  locus::Schema schema;
  schema.real_or_auto("s.omega", 0.0, 2.0, true, true, "relaxation");
  auto cfg = locus::parse_config(schema, "s: {omega: auto}\n", "d.yaml", {});
  EXPECT_TRUE(std::isnan(cfg.real("s.omega")));
  EXPECT_NE(cfg.yaml().find("omega: auto"), std::string::npos) << cfg.yaml();
  EXPECT_TRUE(std::isnan(locus::parse_config(schema, "", "d.yaml", {}).real("s.omega")));
  EXPECT_EQ(locus::parse_config(schema, "s: {omega: 1.5}\n", "d.yaml", {}).real("s.omega"), 1.5);
  for (const char* bad : {"0", "2", "2.5", "-1", "fast"}) {
    try {
      locus::parse_config(schema, std::string("s:\n  omega: ") + bad + "\n", "d.yaml", {});
      ADD_FAILURE() << bad << " accepted";
    } catch (const locus::ConfigError& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("d.yaml:2:10: s.omega: must be auto or a number in (0, 2) (got ") + bad + ")");
    }
  }
}

TEST(Config, LocateNamesWhereAValueCameFrom) {
  locus::Schema schema;
  schema.integer("a.n", 4, 1, 100, "n").integer("a.m", 4, 1, 100, "m").integer("a.k", 4, 1, 100, "k");
  auto cfg = locus::parse_config(schema, "a:\n  n: 7\n", "deck.yaml", {"a.m=9"});
  EXPECT_EQ(cfg.locate("a.n"), "deck.yaml:2:6: a.n");
  EXPECT_EQ(cfg.locate("a.m"), "--set a.m=9: a.m");
  EXPECT_EQ(cfg.locate("a.k"), "a.k (default)");
  EXPECT_THROW(cfg.locate("a.zz"), locus::Error);
}

// A check on several keys names the one the user wrote: the largest value,
// or the one given last (--set, then the deck, then a default).
TEST(Config, LocateTheKeyTheUserWrote) {
  locus::Schema schema;
  schema.integer("g.nx", 4, 1, locus::Schema::kNoMax, "x")
      .integer("g.ny", 4, 1, locus::Schema::kNoMax, "y")
      .integer("g.nz", 4, 1, locus::Schema::kNoMax, "z");
  auto cfg = locus::parse_config(schema, "g:\n  nx: 8\n  nz: 8\n", "deck.yaml", {"g.ny=4294967296"});
  EXPECT_EQ(cfg.precedence("g.nx"), 1);
  EXPECT_EQ(cfg.precedence("g.ny"), 2);
  EXPECT_EQ(cfg.locate_largest({"g.nx", "g.ny", "g.nz"}), "--set g.ny=4294967296: g.ny");
  EXPECT_EQ(cfg.locate_latest({"g.nx", "g.ny", "g.nz"}), "--set g.ny=4294967296: g.ny");
  // equal values: the one given in the deck before a default
  auto tie = locus::parse_config(schema, "g:\n  nz: 4\n", "deck.yaml", {});
  EXPECT_EQ(tie.precedence("g.nx"), 0);
  EXPECT_EQ(tie.locate_largest({"g.nx", "g.ny", "g.nz"}), "deck.yaml:2:7: g.nz");
  EXPECT_EQ(tie.locate_latest({"g.nx", "g.ny"}), "g.nx (default)");
  EXPECT_THROW(tie.locate_largest({}), locus::Error);
}

// comm.remote: auto's choices from a calibration: the route (message or
// RMA) and, on the message route, immediate, persistent or eager posting,
// by the nearest calibrated sizes (log-linear in between, the ends beyond).
TEST(RemoteCalibration, RouteAndRequestsBySize) {
  using locus::RemoteRequests;
  locus::RemoteSettings r;
  EXPECT_TRUE(r.message_for(100));                            // no calibration: message
  EXPECT_EQ(r.requests_for(100), RemoteRequests::immediate);  // and immediate requests
  r.points = {{8, 1.0, 2.0, 1.5}, {512, 2.0, 3.0, 1.0}, {8192, 5.0, 4.0, 4.0}};
  EXPECT_TRUE(r.message_for(4));
  EXPECT_TRUE(r.message_for(512));
  EXPECT_FALSE(r.message_for(8192));
  EXPECT_FALSE(r.message_for(1e6));
  // RMA only where it beats messages by more than kRmaMargin: 4 % is a tie
  r.points[2].rma_us = 4.8;
  EXPECT_TRUE(r.message_for(8192));
  r.points[2].rma_us = 5.0 * (1.0 - locus::kRmaMargin) - 0.01;
  EXPECT_FALSE(r.message_for(8192));
  r.points[2].rma_us = 4.0;
  EXPECT_EQ(r.requests_for(8), RemoteRequests::immediate);     // persistent 1.5 against 1.0
  EXPECT_EQ(r.requests_for(512), RemoteRequests::persistent);  // 1.0 against 2.0
  EXPECT_EQ(r.requests_for(1e6), RemoteRequests::persistent);
  // halfway (log) between 8 and 512: message 1.5, persistent 1.25
  EXPECT_EQ(r.requests_for(64), RemoteRequests::persistent);
  // eager sends: 0.9 at 8 B (the fastest), 1.2 at 512 B (persistent's 1.0
  // wins there), 3.0 at 8 KiB, past the eager bound (immediate's 5.0 loses
  // to persistent's 4.0)
  for (auto& [p, e] : {std::pair{&r.points[0], 0.9}, {&r.points[1], 1.2}, {&r.points[2], 3.0}})
    p->eager_us = e;
  EXPECT_EQ(r.requests_for(8), RemoteRequests::eager);
  EXPECT_EQ(r.requests_for(512), RemoteRequests::persistent);
  EXPECT_EQ(r.requests_for(8192), RemoteRequests::persistent);
  r.points[1].eager_us = 0.5;
  EXPECT_EQ(r.requests_for(512), RemoteRequests::eager);
  EXPECT_EQ(r.requests_for(locus::kEagerMaxBytes), RemoteRequests::eager);  // 0.5 to 3.0 by log: < 2.5
  EXPECT_EQ(r.requests_for(locus::kEagerMaxBytes + 1), RemoteRequests::persistent);
  r.points[1].persistent_us = 0;  // a file without the persistent figures: eager against immediate
  EXPECT_EQ(r.requests_for(8192), RemoteRequests::immediate);
  EXPECT_EQ(r.requests_for(512), RemoteRequests::eager);
  r.points[1].eager_us = 0;  // nor the eager ones
  EXPECT_EQ(r.requests_for(512), RemoteRequests::immediate);
  r.requests = RemoteRequests::persistent;  // comm.remote_requests forced
  EXPECT_EQ(r.requests_for(8), RemoteRequests::persistent);
  r.requests = RemoteRequests::immediate;
  EXPECT_EQ(r.requests_for(512), RemoteRequests::immediate);
  r.requests = RemoteRequests::eager;  // forced, but only up to the bound
  EXPECT_EQ(r.requests_for(8), RemoteRequests::eager);
  EXPECT_EQ(r.requests_for(locus::kEagerMaxBytes + 1), RemoteRequests::immediate);
}
