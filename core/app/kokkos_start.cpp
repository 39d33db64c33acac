// Kokkos: the --kokkos-* options and the threads per rank.
#include "app/kokkos_start.hpp"

#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "locus/kokkos.hpp"
#include "locus/machine.hpp"
#include "locus/version.hpp"

namespace locus {

SplitArgs split_kokkos_args(int argc, char** argv) {
  SplitArgs a;
  for (int i = 0; i < argc; ++i) {
    const bool value_of_set =
        i > 0 && (std::strcmp(argv[i - 1], "--set") == 0 || std::strcmp(argv[i - 1], "-s") == 0);
    if (i > 0 && !value_of_set && std::strncmp(argv[i], "--kokkos-", 9) == 0)
      a.kokkos.emplace_back(argv[i]);
    else
      a.rest.push_back(argv[i]);
  }
  a.rest.push_back(nullptr);
  return a;
}

bool has_option(const std::vector<std::string>& args, const std::string& name) {
  for (const auto& a : args)
    if (a == name || a.rfind(name + "=", 0) == 0) return true;
  return false;
}

namespace {

// Either spelling of the threads option, in the one this Kokkos takes
// (--kokkos-num-threads from 3.7, --kokkos-threads before): the user guide
// and scripts need not know which Kokkos the build found.
void respell_threads_option(std::vector<std::string>& args, const std::string& spelling) {
  for (auto& a : args)
    for (const char* name : {"--kokkos-num-threads", "--kokkos-threads"})
      if (a.rfind(std::string(name) + "=", 0) == 0 && name != spelling)
        a = spelling + a.substr(std::strlen(name));
}

// Threads asked of a Kokkos whose host backend has none (Serial): said
// once, not silently ignored.
void warn_if_no_threads(const std::string& app, const std::vector<std::string>& args,
                        const std::string& spelling) {
#if !defined(KOKKOS_ENABLE_OPENMP) && !defined(KOKKOS_ENABLE_THREADS)
  for (const auto& a : args)
    if (a.rfind(spelling + "=", 0) == 0 && std::atol(a.c_str() + spelling.size() + 1) > 1)
      std::fprintf(stderr,
                   "%s: warning: %s asks for threads, but this Kokkos has no threaded host backend (%s): "
                   "every rank runs one thread (docs/building.md: Kokkos with OpenMP)\n",
                   app.c_str(), a.c_str(), Kokkos::DefaultHostExecutionSpace::name());
#else
  (void)app, (void)args, (void)spelling;
#endif
}

// The CPUs this process may run on (its affinity mask), FALLBACK when the
// mask cannot be read.
long affinity_cpus(long fallback) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  return sched_getaffinity(0, sizeof mask, &mask) == 0 ? std::max(1, CPU_COUNT(&mask)) : fallback;
}

// Set (to "1") in the environment of a process that locus started again
// with OMP_WAIT_POLICY=passive.
constexpr const char* kPassiveMark = "LOCUS_SET_OMP_WAIT_POLICY";

bool locus_set_passive() {
  const char* m = std::getenv(kPassiveMark);
  return m && std::strcmp(m, "1") == 0;
}

}  // namespace

namespace detail {

// The ranks the launcher put on this node, read before MPI_Init: MPICH's
// Hydra, Open MPI, Slurm (SLURM_STEP_TASKS_PER_NODE "2(x3),1", this
// node's entry by SLURM_NODEID). 1 when no launcher says.
int launcher_ranks_on_node() {
  for (const char* v : {"MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE"})
    if (const char* s = std::getenv(v))
      if (std::atoi(s) > 0) return std::atoi(s);
  const char* list = std::getenv("SLURM_STEP_TASKS_PER_NODE");
  const char* id = std::getenv("SLURM_NODEID");
  if (!list || !id) return 1;
  long node = std::atol(id);
  for (const char* p = list; *p;) {
    char* end = nullptr;
    const long tasks = std::strtol(p, &end, 10);
    if (end == p) break;
    long repeat = 1;
    if (std::strncmp(end, "(x", 2) == 0) {
      repeat = std::strtol(end + 2, &end, 10);
      if (*end == ')') ++end;
    }
    if (node < repeat) return tasks > 0 ? int(tasks) : 1;
    node -= repeat;
    p = *end == ',' ? end + 1 : end;
  }
  return 1;
}

// The threads per rank the user asked for: --kokkos-num-threads (or
// --kokkos-threads), KOKKOS_NUM_THREADS, OMP_NUM_THREADS (its first
// level); 0 when none (locus then fits the threads to the cores).
long asked_threads(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    for (const char* name : {"--kokkos-num-threads", "--kokkos-threads"}) {
      const std::size_t n = std::strlen(name);
      if (std::strncmp(argv[i], name, n) != 0) continue;
      if (argv[i][n] == '=') return std::atol(argv[i] + n + 1);
      if (argv[i][n] == '\0' && i + 1 < argc) return std::atol(argv[i + 1]);
    }
  for (const char* v : {"KOKKOS_NUM_THREADS", "OMP_NUM_THREADS"})
    if (const char* s = std::getenv(v)) return std::atol(s);
  return 0;
}

bool oversubscribed_at_launch(int argc, char** argv, long cpus, long online) {
  const long threads = asked_threads(argc, argv);
  return threads > 1 && (threads > cpus || threads * launcher_ranks_on_node() > online);
}

}  // namespace detail

void passive_wait_if_oversubscribed(int argc, char** argv) {
#ifdef KOKKOS_ENABLE_OPENMP
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv(kPassiveMark)) return;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (!detail::oversubscribed_at_launch(argc, argv, affinity_cpus(online), online)) return;
  setenv("OMP_WAIT_POLICY", "passive", 1);
  setenv(kPassiveMark, "1", 1);
  execv("/proc/self/exe", argv);
  // not replaced: go on as asked; the over-subscription warning names the remedy
  unsetenv("OMP_WAIT_POLICY");
  unsetenv(kPassiveMark);
#else
  (void)argc;
  (void)argv;
#endif
}

// One warning (rank 0) when threads x ranks exceed the node's CPUs.
void warn_if_oversubscribed(const std::string& app_name, int ranks_on_node, long online) {
  if (ExecSpace().concurrency() <= 1 || long(ExecSpace().concurrency()) * ranks_on_node <= online) return;
  std::string remedy;
  if (locus_set_passive())
    remedy = "; waiting threads sleep: locus set OMP_WAIT_POLICY=passive";
  else if (!std::getenv("OMP_WAIT_POLICY"))
    remedy = ", or OMP_WAIT_POLICY=passive so that waiting threads leave the cores to the others";
  std::fprintf(stderr,
               "%s: warning: %d threads per rank x %d ranks on this node > %ld CPUs (over-subscribed: "
               "set --kokkos-num-threads or OMP_NUM_THREADS%s)\n",
               app_name.c_str(), int(ExecSpace().concurrency()), ranks_on_node, online, remedy.c_str());
}

KokkosStart start_kokkos(const std::string& app_name, std::vector<std::string> args, int rank) {
  KokkosStart ks;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int ranks_on_node = 1;
  MPI_Comm_size(node, &ranks_on_node);
  MPI_Comm_free(&node);
  const int cpus = static_cast<int>(affinity_cpus(1));
  const long online = sysconf(_SC_NPROCESSORS_ONLN);

#if KOKKOS_VERSION >= 30700
  const std::string threads_opt = "--kokkos-num-threads";
#else
  const std::string threads_opt = "--kokkos-threads";
#endif
  std::string source;
  int threads = std::max(1, cpus / std::max(1, ranks_on_node));
  if (has_option(args, "--kokkos-threads") || has_option(args, "--kokkos-num-threads")) {
    source = "command line";
    respell_threads_option(args, threads_opt);
    if (rank == 0) warn_if_no_threads(app_name, args, threads_opt);
  } else if (std::getenv("KOKKOS_NUM_THREADS")) {
    source = "KOKKOS_NUM_THREADS";
  } else if (std::getenv("OMP_NUM_THREADS")) {
    source = "OMP_NUM_THREADS";
  } else {
    source = "cpus / ranks per node (" + std::to_string(cpus) + " / " + std::to_string(ranks_on_node) + ")";
    args.push_back(threads_opt + "=" + std::to_string(threads));
  }
  std::string binding = "n/a (one thread per rank)";
#ifdef KOKKOS_ENABLE_OPENMP
  // Threads bind inside the CPUs a launcher gave the rank; when every rank
  // may run anywhere, binding them would stack every rank's first thread
  // on the same CPU, so they are left unbound.
  if (!std::getenv("OMP_PROC_BIND")) {
    const bool own_cpus = cpus < online || ranks_on_node == 1;
    setenv("OMP_PROC_BIND", own_cpus ? "spread" : "false", 0);
    if (own_cpus) setenv("OMP_PLACES", "threads", 0);
  }
  binding = std::string("OMP_PROC_BIND=") + std::getenv("OMP_PROC_BIND");
  if (locus_set_passive())
    binding += ", OMP_WAIT_POLICY=passive (set by locus: threads x ranks over-subscribe the node)";
#endif
  (void)online;
  ks.help = has_option(args, "--kokkos-help");
  if (rank != 0) {
    if (!has_option(args, "--kokkos-disable-warnings")) args.push_back("--kokkos-disable-warnings");
    // the help once per job
    args.erase(std::remove(args.begin(), args.end(), std::string("--kokkos-help")), args.end());
  }
  std::string shown;
  for (const auto& a : args) shown += (shown.empty() ? "" : " ") + a;
  set_kokkos_launch(shown, source, binding);

  std::vector<std::string> store = args;
  std::vector<char*> argv;
  std::string prog = app_name;
  argv.push_back(prog.data());
  for (auto& a : store) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(argv.size()) - 1;
  Kokkos::initialize(argc, argv.data());
  // Kokkos removes the options it took; what is left it does not know.
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[static_cast<std::size_t>(i)], "--kokkos-", 9) == 0 &&
        std::strcmp(argv[static_cast<std::size_t>(i)], "--kokkos-help") != 0) {
      ks.error = std::string("unknown Kokkos option ") + argv[static_cast<std::size_t>(i)];
      break;
    }
  if (ks.error.empty() && rank == 0) warn_if_oversubscribed(app_name, ranks_on_node, online);
  return ks;
}

}  // namespace locus
