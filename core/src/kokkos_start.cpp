// Kokkos: the --kokkos-* options and the threads per rank.
#include "kokkos_start.hpp"

#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "locus/kokkos.hpp"
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

// One warning (rank 0) when threads x ranks exceed the node's CPUs.
void warn_if_oversubscribed(const std::string& app_name, int ranks_on_node, long online) {
  if (ExecSpace().concurrency() <= 1 || long(ExecSpace().concurrency()) * ranks_on_node <= online) return;
  // OpenMP runtimes read OMP_WAIT_POLICY when they load, before main:
  // the remedy for spinning threads can only be named, not applied.
  std::fprintf(stderr,
               "%s: warning: %d threads per rank x %d ranks on this node > %ld CPUs (over-subscribed: "
               "set --kokkos-num-threads or OMP_NUM_THREADS%s)\n",
               app_name.c_str(), int(ExecSpace().concurrency()), ranks_on_node, online,
               std::getenv("OMP_WAIT_POLICY") ? ""
                                              : ", or OMP_WAIT_POLICY=passive so that waiting threads "
                                                "leave the cores to the others");
}

KokkosStart start_kokkos(const std::string& app_name, std::vector<std::string> args, int rank) {
  KokkosStart ks;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int ranks_on_node = 1;
  MPI_Comm_size(node, &ranks_on_node);
  MPI_Comm_free(&node);
  cpu_set_t mask;
  CPU_ZERO(&mask);
  int cpus = 1;
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) cpus = std::max(1, CPU_COUNT(&mask));
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
