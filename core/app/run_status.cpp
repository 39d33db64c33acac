// The run's status file and the signal handlers (run_parts.hpp). The
// handler reads only static storage (async-signal-safe), so what it needs
// lives here, set before the run starts.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "app/run_parts.hpp"
#include "io/reaper.hpp"
#include "locus/io.hpp"

namespace locus::detail {

namespace {

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

}  // namespace

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

}  // namespace locus::detail
