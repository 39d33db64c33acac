// The run's status file and the signal handlers (run_parts.hpp,
// RunSignals). The handler is async-signal-safe: it reads the run's record
// through one process-wide pointer, and the record's plain arrays, set
// before the run starts.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "app/run_parts.hpp"
#include "io/reaper.hpp"
#include "locus/io.hpp"

namespace locus::detail {

namespace {

// The record the handlers read while a run lives (RunSignals): the one
// process-wide pointer a signal handler needs, since it can reach nothing
// else.
std::atomic<const RunSignals*> g_signals{nullptr};
static_assert(std::atomic<const RunSignals*>::is_always_lock_free, "read in a signal handler");

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

// The contents of a status file (a few lines), or "" when there is none:
// stat first, as read_deck does, so that a FIFO in its place never blocks
// and a large file is not read.
std::string read_small_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 4096) return {};
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// SIGTERM / SIGINT (also forwarded by mpiexec): remove the unfinished
// output, say so once (rank 0), exit 128 + signal.
extern "C" void on_terminate(int sig) {
  detail::remove_unfinished_output();
  if (const RunSignals* s = g_signals.load(std::memory_order_acquire)) s->on_signal(sig);
  ::_exit(128 + sig);
}

}  // namespace

RunSignals::RunSignals(const std::string& app, int rank) : rank_(rank) {
  std::snprintf(msg_[0], sizeof msg_[0], "%s: terminated (SIGTERM); the unfinished output was removed\n",
                app.c_str());
  std::snprintf(msg_[1], sizeof msg_[1], "%s: interrupted (SIGINT); the unfinished output was removed\n",
                app.c_str());
  g_signals.store(this, std::memory_order_release);
  struct sigaction sa {};
  sa.sa_handler = on_terminate;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

RunSignals::~RunSignals() {
  g_signals.store(nullptr, std::memory_order_release);
}

RunSignals* RunSignals::current() noexcept {
  return const_cast<RunSignals*>(g_signals.load(std::memory_order_acquire));
}

void RunSignals::on_signal(int sig) const noexcept {
  if (rank_ != 0) return;
  const int k = sig == SIGINT ? 1 : 0;
  if (active_) write_file_atomically(status_path_, sig_tmp_, sig_text_[k]);
  ssize_t ignored = ::write(2, msg_[k], std::strlen(msg_[k]));
  (void)ignored;
}

void RunSignals::start_status(const Config& c) {
  if (rank_ != 0) return;
  namespace fs = std::filesystem;
  const std::string dir = c.string("output.dir");
  const std::string path = dir + "/" + c.string("output.name") + ".status";
  if (path.size() + 8 >= sizeof status_path_) return;
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (!ec) created_dir_ = dir;
  }
  path_ = path;
  std::snprintf(status_path_, sizeof status_path_, "%s", path.c_str());
  std::snprintf(sig_tmp_, sizeof sig_tmp_, "%s.sig", path.c_str());
  std::snprintf(sig_text_[0], sizeof sig_text_[0],
                "outcome: terminated by signal %d (SIGTERM)\nexit_status: %d\n", SIGTERM, 128 + SIGTERM);
  std::snprintf(sig_text_[1], sizeof sig_text_[1],
                "outcome: terminated by signal %d (SIGINT)\nexit_status: %d\n", SIGINT, 128 + SIGINT);
  const std::string text = "outcome: running\npid: " + std::to_string(::getpid()) + "\n";
  before_ = read_small_file(path);
  mine_ = text;
  // a stale "completed" must not survive: without a status the run counts as not completed
  if (!write_file_atomically(path.c_str(), (path + ".tmp").c_str(), text.c_str())) ::unlink(path.c_str());
  active_ = 1;
}

void RunSignals::complete_status(int status) {
  if (path_.empty()) return;
  active_ = 0;
  const std::string text = "outcome: completed\nexit_status: " + std::to_string(status) + "\n";
  if (!write_file_atomically(path_.c_str(), (path_ + ".tmp").c_str(), text.c_str()))
    std::fprintf(stderr, "warning: cannot record the run's outcome in %s (%s)\n", path_.c_str(),
                 std::strerror(errno));
}

void RunSignals::drop_status() {
  if (path_.empty()) return;
  active_ = 0;
  // Another run's status is left as it is now (it wrote since), or put
  // back as it was; this run's own goes.
  if (read_small_file(path_) == mine_) {
    if (before_.empty() || !write_file_atomically(path_.c_str(), (path_ + ".tmp").c_str(), before_.c_str()))
      ::unlink(path_.c_str());
  }
  if (!created_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove(created_dir_, ec);  // only when empty
  }
  path_.clear();
  created_dir_.clear();
}

}  // namespace locus::detail
