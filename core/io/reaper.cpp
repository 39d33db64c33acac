// The output watcher: what a killed run leaves behind (NAME.h5.tmp, its
// lock, MPICH's shared-memory files) is removed by a small process rank 0
// starts beside the run (H5Output::spawn_reaper), or by the signal handler.
#include "io/reaper.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>

#include "locus/io.hpp"

namespace locus {

namespace detail {
// The output this process is writing (rank 0), for the signal handler:
// removed when a run is terminated. Plain arrays: read in a signal handler.
char g_output_tmp[4096] = {0};
char g_output_lock[4096] = {0};

bool g_output_abandoned = false;
namespace {
// locus::run's executables handle --locus-reap-output (set_reaper_capable).
bool g_reaper_capable = false;
}  // namespace

void set_reaper_capable() {
  g_reaper_capable = true;
}

bool output_abandoned() {
  return g_output_abandoned;
}

void remove_unfinished_output() noexcept {
  if (g_output_tmp[0]) ::unlink(g_output_tmp);
  if (g_output_lock[0]) ::unlink(g_output_lock);
}

namespace {
// The run's start (the process's, at load): the watcher removes only shared
// memory files created since.
const std::time_t g_process_start = std::time(nullptr);

// True when some process has `path` open or mapped (the processes this one
// can see: its user's, or all as root).
bool in_use(const std::string& path) {
  DIR* proc = ::opendir("/proc");
  if (!proc) return true;
  bool used = false;
  while (dirent* e = ::readdir(proc)) {
    if (used) break;
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string base = std::string("/proc/") + e->d_name;
    {
      std::ifstream maps(base + "/maps");
      std::string line;
      while (!used && std::getline(maps, line)) {
        const auto at = line.find(path);
        used = at != std::string::npos && (at + path.size() == line.size() || line[at + path.size()] == ' ');
      }
    }
    if (DIR* fds = ::opendir((base + "/fd").c_str())) {
      while (!used)
        if (dirent* f = ::readdir(fds)) {
          char target[4096];
          const ssize_t n = ::readlinkat(::dirfd(fds), f->d_name, target, sizeof target - 1);
          if (n > 0) {
            target[n] = 0;
            used = path == target;
          }
        } else {
          break;
        }
      ::closedir(fds);
    }
  }
  ::closedir(proc);
  return used;
}

// MPICH backs a shared-memory window by a file in /dev/shm
// (mpich_shar_tmpXXXXXX, or mpich_s_shar_tmp...) that it unlinks once every
// process of the node has mapped it; a job killed inside
// MPI_Win_allocate_shared leaves it behind (sparse, as large as the
// window). After a run died: remove such files of this user, created since
// `since`, that no process has open or mapped any more (a live job's file
// always is: its creator maps it). Ranks still ending keep theirs mapped for
// a moment: retried for up to 5 s.
void remove_orphan_shm(std::time_t since) {
  for (int attempt = 0; attempt < 25; ++attempt) {
    bool pending = false;
    DIR* shm = ::opendir("/dev/shm");
    if (!shm) return;
    while (dirent* e = ::readdir(shm)) {
      const std::string name = e->d_name;
      if (name.rfind("mpich_", 0) != 0 || name.find("shar_tmp") == std::string::npos) continue;
      const std::string path = "/dev/shm/" + name;
      struct stat st {};
      if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::getuid() ||
          st.st_mtime + 1 < since)
        continue;
      if (in_use(path))
        pending = true;
      else
        ::unlink(path.c_str());
    }
    ::closedir(shm);
    if (!pending) return;
    ::usleep(200000);
  }
}
}  // namespace

// The run's status file beside output TMP (NAME.h5.tmp -> NAME.status):
// a run still "running" when its watcher finds the lock abandoned was
// killed (SIGKILL: its handler could not record it). Said so, atomically.
void record_killed(const char* tmp) {
  const std::string t(tmp), suffix = ".h5.tmp";
  if (t.size() <= suffix.size() || t.compare(t.size() - suffix.size(), suffix.size(), suffix) != 0) return;
  const std::string status = t.substr(0, t.size() - suffix.size()) + ".status";
  std::string first;
  {
    std::ifstream in(status);
    std::getline(in, first);
  }
  if (first != "outcome: running") return;
  const std::string part = status + ".reaped";
  {
    std::ofstream out(part, std::ios::trunc);
    out << "outcome: killed (the run died without finishing: its output watcher found the run's lock "
           "abandoned)\nexit_status: 137\n";
    if (!out) return;
  }
  if (std::rename(part.c_str(), status.c_str()) != 0) ::unlink(part.c_str());
}

// The watcher of one output (see H5Output::spawn_reaper): waits for the run's
// lock on LOCK, then, if LOCK is still the file it locked (a run that ends
// normally unlinks it first), the run died without cleaning up: remove TMP
// and LOCK. Runs without MPI, in its own session.
int reap_output(const char* lock, const char* tmp) {
  const int fd = ::open(lock, O_RDWR | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat locked {};
  if (::fstat(fd, &locked) != 0) return 0;
  while (::flock(fd, LOCK_EX) != 0)
    if (errno != EINTR) return 0;
  struct stat now {};
  if (::stat(lock, &now) == 0 && now.st_ino == locked.st_ino && now.st_dev == locked.st_dev) {
    ::unlink(tmp);
    ::unlink(lock);
    ::close(fd);
    record_killed(tmp);
    // the run died: also what MPICH left in /dev/shm
    const char* since = std::getenv("LOCUS_REAP_SINCE");
    if (since && *since) remove_orphan_shm(static_cast<std::time_t>(std::atoll(since)));
    return 0;
  }
  ::close(fd);
  return 0;
}
}  // namespace detail

// A run killed with SIGKILL (a launcher cleaning up after one dead rank
// kills the rest that way) cannot remove its own NAME.h5.tmp: rank 0 starts
// a small watcher, this executable in reaper mode (locus::run handles the
// argument before MPI_Init), in a session of its own so that the launcher's
// kill does not reach it. It waits on the run's lock and removes what a
// killed run left. Best effort: if it cannot start, the next run with the
// same output removes the stale files (the lock says the run is gone).
void H5Output::spawn_reaper() {
  // Only an executable whose main is locus::run knows the reaper mode.
  if (!detail::g_reaper_capable) return;
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return;
  exe[n] = 0;
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  if (posix_spawn_file_actions_init(&actions) != 0) return;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  // no descriptor of the run: the launcher waits for its output pipes
  for (int f = 0; f < 3; ++f) posix_spawn_file_actions_addopen(&actions, f, "/dev/null", O_RDWR, 0);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  std::string lock = lock_, tmp = tmp_;
  char arg0[] = "locus-output-reaper";
  char mode[] = "--locus-reap-output";
  char* argv[] = {arg0, mode, lock.data(), tmp.data(), nullptr};
  std::string since = "LOCUS_REAP_SINCE=" + std::to_string(static_cast<long long>(detail::g_process_start));
  char* envp[] = {since.data(), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, exe, &actions, &attr, argv, envp) == 0) reaper_ = pid;
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
}

void H5Output::release_lock() {
  if (lock_fd_ >= 0) {
    ::unlink(lock_.c_str());
    ::close(lock_fd_);
    lock_fd_ = -1;
  }
  if (reaper_ > 0) {
    // It wakes on the released lock, finds the file gone and ends; should
    // it not within 2 s, it is stopped (never wait on it forever).
    for (int i = 0; i < 2000; ++i) {
      const pid_t r = ::waitpid(reaper_, nullptr, WNOHANG);
      if (r == reaper_ || (r < 0 && errno != EINTR)) {
        reaper_ = 0;
        break;
      }
      ::usleep(1000);
    }
    if (reaper_ > 0) {
      ::kill(reaper_, SIGKILL);
      ::waitpid(reaper_, nullptr, 0);
      reaper_ = 0;
    }
  }
  detail::g_output_lock[0] = 0;
}

}  // namespace locus
