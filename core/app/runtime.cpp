// locus::run, the life of a process: MPI and Kokkos start, the command
// line, the deck read on rank 0 and broadcast, the runtime, the app, the
// error handling and the end.
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "app/kokkos_start.hpp"
#include "locus/app.hpp"
#include "locus/async.hpp"
#include "locus/cpu.hpp"
#include "locus/io.hpp"
#include "locus/kokkos.hpp"
#include "locus/version.hpp"

namespace locus {

namespace {

struct CommandLine {
  std::string deck;
  std::vector<std::string> overrides;
  bool quiet = false;
  bool help = false;
  bool version = false;
  bool print_config = false;
  bool print_schema = false;
  bool machine = false;
  bool summary_json = false;
  std::string error;
};

CommandLine parse_args(int argc, char** argv) {
  CommandLine cl;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      cl.help = true;
    } else if (a == "--version") {
      cl.version = true;
    } else if (a == "-q" || a == "--quiet") {
      cl.quiet = true;
    } else if (a == "--print-config") {
      cl.print_config = true;
    } else if (a == "--print-schema") {
      cl.print_schema = true;
    } else if (a == "--machine") {
      cl.machine = true;
    } else if (a == "--summary" || a.rfind("--summary=", 0) == 0) {
      std::string v;
      if (a == "--summary") {
        if (i + 1 >= argc) {
          cl.error = "--summary needs yaml or json";
          return cl;
        }
        v = argv[++i];
      } else {
        v = a.substr(10);
      }
      if (v != "yaml" && v != "json") {
        cl.error = "--summary: yaml or json (got '" + v + "')";
        return cl;
      }
      cl.summary_json = v == "json";
    } else if (a == "--set" || a == "-s") {
      if (i + 1 >= argc) {
        cl.error = a + " needs key=value";
        return cl;
      }
      cl.overrides.push_back(argv[++i]);
    } else if (a.rfind("--set=", 0) == 0) {
      cl.overrides.push_back(a.substr(6));
    } else if (!a.empty() && a[0] == '-') {
      cl.error = "unknown option " + a;
      return cl;
    } else if (cl.deck.empty()) {
      cl.deck = a;
    } else {
      cl.error = "more than one deck given (" + cl.deck + ", " + a + ")";
      return cl;
    }
  }
  if (cl.deck.empty() && !cl.help && !cl.version && !cl.print_schema && !cl.machine)
    cl.error = "no deck given";
  return cl;
}

void print_usage(const AppInfo& app, bool full) {
  // the example override: the app's first integer key with its default
  std::string example = "name=run1";
  for (const KeySpec& k : app.schema.keys())
    if (k.kind == KeyKind::Integer) {
      // twice the default, kept inside the key's range (the example must run)
      long v = std::get<long>(k.fallback);
      long twice = v * 2;
      if (static_cast<double>(twice) <= k.max)
        v = twice;
      else if (static_cast<double>(v) + 1 <= k.max)
        v = v + 1;
      example = k.path + "=" + std::to_string(v);
      break;
    }
  std::printf(
      "usage: %s DECK.yaml [--set key=value]... [--quiet] [--print-config] [--summary yaml|json]\n"
      "       %s --help | --version | --print-schema | --machine\n\n"
      "%s\n\n"
      "  DECK.yaml          the run's configuration (see docs/config.md)\n"
      "  --set key=value    override one key, e.g. --set %s (repeatable)\n"
      "  --quiet, -q        no progress line\n"
      "  --summary FORMAT   the final summary as yaml (default) or json (for scripts)\n"
      "  --print-config     print the effective configuration and exit\n"
      "  --print-schema     print every deck key (type, default, help) as YAML and exit\n"
      "  --machine          print the machine descriptor (CPU, cores, memory, compiler and flags,\n"
      "                     MPI, Kokkos, HDF5, commit) and the STREAM triad bandwidth measured\n"
      "                     by every rank at once, then exit\n"
      "  --version          print the locus version and exit\n",
      app.name.c_str(), app.name.c_str(), app.description.c_str(), example.c_str());
  if (full) std::printf("\nkeys:\n%s", app.schema.help_text().c_str());
}

// Rank 0 reads the deck and broadcasts it; every rank then checks it the same
// way, so a bad deck is the same CollectiveError everywhere.
Config load_everywhere(MPI_Comm comm, const AppInfo& app, const CommandLine& cl) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string text, read_error;
  if (rank == 0) {
    try {
      text = read_deck(cl.deck);
    } catch (const Error& e) {
      read_error = e.what();
    }
  }
  collective_require(comm, read_error.empty(), read_error);
  long len = static_cast<long>(text.size());
  MPI_Bcast(&len, 1, MPI_LONG, 0, comm);
  text.resize(static_cast<std::size_t>(len));
  MPI_Bcast(text.data(), static_cast<int>(len), MPI_CHAR, 0, comm);
  try {
    return parse_config(app.schema, text, cl.deck, cl.overrides);
  } catch (const ConfigError& e) {
    throw CollectiveError(e.what());
  }
}

// SIGTERM / SIGINT (also forwarded by mpiexec): remove the unfinished
// output, say so once (rank 0), exit 128 + signal. Everything here is
// async-signal-safe.
char g_signal_msg[2][256];
int g_signal_rank = 0;

// The run's status file, <output.dir>/<output.name>.status (rank 0 of the
// world writes it; docs/outputs.md): "running" when the run starts,
// "completed" with the exit status when the app returns, "terminated by
// signal N" from the signal handler; removed after a collective error
// (which leaves no output file). `./locus run` and the study runner read
// it: a launcher may return 0 for a terminated run (MPICH's Hydra does,
// about one time in four).
char g_status_path[4096];
char g_status_sig_tmp[4096];
char g_status_sig_text[2][128];
volatile sig_atomic_t g_status_active = 0;  // the handler records a signal only while the run runs

// Async-signal-safe: TEXT into TMP, renamed over PATH.
bool write_file_atomically(const char* path, const char* tmp, const char* text) {
  const int fd = ::open(tmp, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const std::size_t n = std::strlen(text);
  const bool ok = ::write(fd, text, n) == static_cast<ssize_t>(n);
  const bool closed = ::close(fd) == 0;
  if (!ok || !closed || ::rename(tmp, path) != 0) {
    ::unlink(tmp);
    return false;
  }
  return true;
}

extern "C" void on_terminate(int sig) {
  detail::remove_unfinished_output();
  if (g_signal_rank == 0) {
    if (g_status_active)
      write_file_atomically(g_status_path, g_status_sig_tmp, g_status_sig_text[sig == SIGINT ? 1 : 0]);
    const char* m = g_signal_msg[sig == SIGINT ? 1 : 0];
    ssize_t ignored = ::write(2, m, std::strlen(m));
    (void)ignored;
  }
  ::_exit(128 + sig);
}

struct RunStatus {
  std::string path;         // empty: none (not rank 0, or no run)
  std::string created_dir;  // output.dir, when this run created it
};
RunStatus g_status;

// Rank 0: the status file says "running" (creating output.dir if needed);
// from now on a signal is recorded in it.
void start_status(const Config& c, int rank) {
  if (rank != 0) return;
  namespace fs = std::filesystem;
  const std::string dir = c.string("output.dir");
  const std::string path = dir + "/" + c.string("output.name") + ".status";
  if (path.size() + 8 >= sizeof g_status_path) return;
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (!ec) g_status.created_dir = dir;
  }
  g_status.path = path;
  std::snprintf(g_status_path, sizeof g_status_path, "%s", path.c_str());
  std::snprintf(g_status_sig_tmp, sizeof g_status_sig_tmp, "%s.sig", path.c_str());
  std::snprintf(g_status_sig_text[0], sizeof g_status_sig_text[0],
                "outcome: terminated by signal %d (SIGTERM)\nexit_status: %d\n", SIGTERM, 128 + SIGTERM);
  std::snprintf(g_status_sig_text[1], sizeof g_status_sig_text[1],
                "outcome: terminated by signal %d (SIGINT)\nexit_status: %d\n", SIGINT, 128 + SIGINT);
  const std::string text = "outcome: running\npid: " + std::to_string(::getpid()) + "\n";
  // a stale "completed" must not survive: without a status the run counts as not completed
  if (!write_file_atomically(path.c_str(), (path + ".tmp").c_str(), text.c_str())) ::unlink(path.c_str());
  g_status_active = 1;
}

// Rank 0: the app returned STATUS.
void complete_status(int status) {
  if (g_status.path.empty()) return;
  g_status_active = 0;
  const std::string text = "outcome: completed\nexit_status: " + std::to_string(status) + "\n";
  if (!write_file_atomically(g_status.path.c_str(), (g_status.path + ".tmp").c_str(), text.c_str()))
    std::fprintf(stderr, "warning: cannot record the run's outcome in %s (%s)\n", g_status.path.c_str(),
                 std::strerror(errno));
}

// Rank 0, after a collective error: no status file (nor the directory this
// run created for it, when empty): an error leaves no file behind.
void drop_status() {
  if (g_status.path.empty()) return;
  g_status_active = 0;
  ::unlink(g_status.path.c_str());
  if (!g_status.created_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove(g_status.created_dir, ec);  // only when empty
  }
  g_status = RunStatus{};
}

void install_signal_handlers(const std::string& app, int rank) {
  g_signal_rank = rank;
  std::snprintf(g_signal_msg[0], sizeof g_signal_msg[0],
                "%s: terminated (SIGTERM); the unfinished output was removed\n", app.c_str());
  std::snprintf(g_signal_msg[1], sizeof g_signal_msg[1],
                "%s: interrupted (SIGINT); the unfinished output was removed\n", app.c_str());
  struct sigaction sa {};
  sa.sa_handler = on_terminate;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

// output.dir and output.name name a file this run can create: checked on
// every rank alike (the config is the same everywhere), before any work.
void check_output_keys(MPI_Comm comm, const Config& c) {
  const std::string& name = c.string("output.name");
  const std::string& dir = c.string("output.dir");
  std::string problem;
  if (name.empty())
    problem = c.locate("output.name") + ": empty; give a file stem such as run1";
  else if (name.find('\0') != std::string::npos)
    problem = c.locate("output.name") + ": contains a NUL byte";
  else if (std::any_of(name.begin(), name.end(), [](unsigned char ch) { return ch < 0x20 || ch == 0x7f; }))
    problem = c.locate("output.name") + ": contains a control character (a line break, tab or escape)";
  else if (name.find('/') != std::string::npos)
    problem = c.locate("output.name") + ": a file stem, not a path (put directories in output.dir)";
  else if (name == "." || name == "..")
    problem = c.locate("output.name") + ": '" + name + "' is not a file name";
  else if (name.size() + 8 > 255)  // NAME.h5.lock must fit NAME_MAX
    problem = c.locate("output.name") + ": " + std::to_string(name.size()) +
              " characters; file names have at most 255 (247 for the stem)";
  else if (dir.empty())
    problem = c.locate("output.dir") + ": empty; use . for the working directory";
  else if (dir.find('\0') != std::string::npos)
    problem = c.locate("output.dir") + ": contains a NUL byte";
  else if (dir.size() + name.size() + 9 > 4095)
    problem = c.locate("output.dir") + ": the output path would be longer than 4095 characters";
  else {
    std::string part;
    std::stringstream ss(dir);
    while (std::getline(ss, part, '/'))
      if (part.size() > 255) {
        problem = c.locate("output.dir") + ": a directory name of " + std::to_string(part.size()) +
                  " characters; at most 255";
        break;
      }
  }
  collective_require(comm, problem.empty(), problem);
}

std::string stem_of(const std::string& path) {
  return std::filesystem::path(path).stem().string();
}

}  // namespace

// --machine: the machine descriptor (rank 0's) and STREAM triad bandwidth
// measured by every rank at once (32 MiB per array: out of cache), as YAML.
void print_machine(const AppInfo& app, int rank, int size) {
  MPI_Barrier(MPI_COMM_WORLD);
  double mine = stream_triad_gbs(4L << 20, 5);
  std::vector<double> all(static_cast<std::size_t>(size));
  MPI_Gather(&mine, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank != 0) return;
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "locus_machine" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "app" << YAML::Value << app.name;
  for (const auto& [k, v] : machine_description()) out << YAML::Key << k << YAML::Value << v;
  out << YAML::Key << "date" << YAML::Value << iso_date_now();
  out << YAML::Key << "ranks" << YAML::Value << size;
  double total = 0;
  out << YAML::Key << "stream_triad_gbs_per_rank" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (double g : all) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", g);
    out << buf;
    total += g;
  }
  out << YAML::EndSeq;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", total);
  out << YAML::Key << "stream_triad_gbs_total" << YAML::Value << buf;
  out << YAML::EndMap << YAML::EndMap;
  std::printf("%s\n", out.c_str());
}

namespace {

// --help, --version, --print-schema, or an error on the command line:
// rank 0 answers; returns the exit status.
int answer_without_deck(const AppInfo& app, const CommandLine& cl, int rank) {
  int status = 0;
  if (rank == 0) {
    if (!cl.error.empty()) {
      std::fprintf(stderr, "%s: error: %s\n", app.name.c_str(), cl.error.c_str());
      std::fprintf(stderr, "try '%s --help'\n", app.name.c_str());
    } else if (cl.version) {
      std::printf("%s (locus %s, %s)\n", app.name.c_str(), version(), git_commit());
    } else if (cl.print_schema && !cl.help) {
      YAML::Emitter head;
      head << YAML::BeginMap << YAML::Key << "app" << YAML::Value << app.name << YAML::Key << "description"
           << YAML::Value << app.description << YAML::EndMap;
      std::printf("%s\nkeys:\n%s\n", head.c_str(), app.schema.yaml_text().c_str());
    } else {
      print_usage(app, true);
    }
  }
  if (!cl.error.empty()) status = 2;
  return status;
}

// Starts Kokkos. A --kokkos-* option Kokkos does not take, --kokkos-help
// and --machine end the process here: then Kokkos and MPI are finalized
// and the exit status returned.
std::optional<int> start_kokkos_or_finish(const AppInfo& app, const std::vector<std::string>& kokkos_args,
                                          bool machine, int rank, int size) {
  const KokkosStart ks = start_kokkos(app.name, kokkos_args, rank);
  if (ks.error.empty() && !ks.help && !machine) return std::nullopt;
  if (!ks.error.empty() && rank == 0) {
    std::fprintf(stderr, "%s: error: %s\n", app.name.c_str(), ks.error.c_str());
    std::fprintf(stderr, "try '%s --kokkos-help'\n", app.name.c_str());
  }
  if (ks.error.empty() && !ks.help) print_machine(app, rank, size);
  Kokkos::finalize();
  MPI_Finalize();
  return ks.error.empty() ? 0 : 2;
}

// Kokkos, then MPI, end; returns STATUS.
int finish(int status) {
  Kokkos::finalize();
  if (detail::output_abandoned()) {
    // An output whose write failed could not be closed (HDF5 would hang in
    // mismatched collectives); HDF5's MPI_Finalize hook would try again and
    // hang. Every rank knows (the failure was collective): end here.
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(status == 0 ? 1 : status);
  }
  MPI_Finalize();
  return status;
}

}  // namespace

Context::Context(const AppInfo& app, int argc, char** argv, bool quiet, bool summary_json)
    : app_(&app), quiet_(quiet), summary_json_(summary_json) {
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  for (int i = 0; i < argc; ++i) {
    if (i) command_line_ += ' ';
    command_line_ += argv[i];
  }
}

// The deck is loaded: --print-config, or the run.
int Context::run_deck(const std::string& deck, bool print_config, const std::function<int(Context&)>& main) {
  check_output_keys(comm_, config_);
  run_name_ = config_.string("name").empty() ? stem_of(deck) : config_.string("name");
  if (print_config) {
    if (rank_ == 0) std::fputs(config_.yaml().c_str(), stdout);
    return 0;
  }
  start_status(config_, rank_);
  const int status = run_app(main);
  if (rank_ == 0) complete_status(status);
  return status;
}

// The runtime over the run's ranks; a progress process serves, an
// application unit runs `main`, which sees the application units only.
int Context::run_app(const std::function<int(Context&)>& main) {
  CommSettings settings;
  collectively(comm_, [&] { settings = comm_settings(config_); });
  Runtime runtime(comm_, settings);
  if (runtime.is_server()) return runtime.serve();
  MPI_Comm all = comm_;
  comm_ = runtime.app_comm();
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  runtime_ = &runtime;
  struct Restore {  // the run's own communicator again, also when main throws
    Context& c;
    MPI_Comm all;
    ~Restore() {
      c.runtime_ = nullptr;
      c.comm_ = all;
      MPI_Comm_rank(all, &c.rank_);
      MPI_Comm_size(all, &c.size_);
    }
  } restore{*this, all};
  return main(*this);
}

int run(int argc, char** argv, const AppInfo& app, const std::function<int(Context&)>& main) {
  // The output watcher rank 0 starts (reaper.cpp): no MPI, no deck.
  if (argc == 4 && std::strcmp(argv[1], "--locus-reap-output") == 0)
    return detail::reap_output(argv[2], argv[3]);
  detail::g_reaper_capable = true;
  passive_wait_if_oversubscribed(argc, argv);
  int provided = 0;
  prepare_mpi_environment();
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  install_signal_handlers(app.name, rank);
  // A bad LOCUS_CPU_HIDE / LOCUS_CPU_CACHE (locus/cpu.hpp): one message, every
  // rank ends (the variables may differ between ranks: agree first).
  {
    const std::string& cpu_error = cpu::features().error;
    int bad = cpu_error.empty() ? 0 : 1, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any) {
      int first = bad ? rank : size, who = 0;
      MPI_Allreduce(&first, &who, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      if (rank == who) std::fprintf(stderr, "%s: error: %s\n", app.name.c_str(), cpu_error.c_str());
      MPI_Finalize();
      return 2;
    }
  }

  SplitArgs split = split_kokkos_args(argc, argv);
  CommandLine cl = parse_args(static_cast<int>(split.rest.size()) - 1, split.rest.data());
  const bool kokkos_help = has_option(split.kokkos, "--kokkos-help");
  if (kokkos_help && cl.error == "no deck given") cl.error.clear();
  if (cl.help || cl.version || cl.print_schema || !cl.error.empty()) {
    const int status = answer_without_deck(app, cl, rank);
    MPI_Finalize();
    return status;
  }
  if (const std::optional<int> status = start_kokkos_or_finish(app, split.kokkos, cl.machine, rank, size))
    return *status;
  int status = 1;
  {
    Context ctx(app, argc, argv, cl.quiet, cl.summary_json);
    try {
      ctx.config_ = load_everywhere(ctx.comm_, app, cl);
      status = ctx.run_deck(cl.deck, cl.print_config, main);
    } catch (const CollectiveError& e) {
      // Errors the runtime raises about a deck key get the key's place.
      std::string msg = e.what();
      const std::string key = "runtime.progress.processes_per_node";
      if (msg.rfind(key + ": ", 0) == 0) msg = ctx.config_.locate(key) + msg.substr(key.size());
      if (rank == 0) std::fprintf(stderr, "%s: error: %s\n", app.name.c_str(), msg.c_str());
      if (rank == 0) drop_status();
      status = 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: error on rank %d: %s\n", app.name.c_str(), rank, e.what());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_free(&ctx.comm_);
  }
  return finish(status);
}

}  // namespace locus
