// The output watcher: what a killed run leaves behind (NAME.h5.tmp, its
// lock, MPICH's shared-memory files) is removed by a small process rank 0
// starts beside the run (H5Output::spawn_reaper), or by the signal handler.
#include "io/reaper.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
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
// True when process `pid` (a /proc entry name) has `path` open or mapped.
bool holds(const std::string& pid, const std::string& path) {
  const std::string base = "/proc/" + pid;
  {
    std::ifstream maps(base + "/maps");
    std::string line;
    while (std::getline(maps, line)) {
      const auto at = line.find(path);
      if (at != std::string::npos && (at + path.size() == line.size() || line[at + path.size()] == ' '))
        return true;
    }
  }
  bool used = false;
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
  return used;
}

// The parent of process `pid` (0 when it is gone).
pid_t parent_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(in, text);
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  char state = 0;
  long ppid = 0;
  if (std::sscanf(text.c_str() + close + 1, " %c %ld", &state, &ppid) != 2) return 0;
  return static_cast<pid_t>(ppid);
}

// True when some process has `path` open or mapped (the processes this one
// can see: its user's, or all as root); with `children_of` > 0 only that
// process's children and `also` count.
bool in_use(const std::string& path, pid_t children_of = 0, pid_t also = 0) {
  DIR* proc = ::opendir("/proc");
  if (!proc) return true;
  bool used = false;
  while (!used)
    if (dirent* e = ::readdir(proc)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      const pid_t pid = static_cast<pid_t>(std::atol(e->d_name));
      if (children_of > 0 && pid != also && parent_of(pid) != children_of) continue;
      used = holds(e->d_name, path);
    } else {
      break;
    }
  ::closedir(proc);
  return used;
}

// MPICH backs a shared-memory window by a file in /dev/shm
// (mpich_shar_tmpXXXXXX, or mpich_s_shar_tmp...) that it unlinks once every
// process of the node has mapped it; a job killed inside
// MPI_Win_allocate_shared leaves it behind (sparse, as large as the
// window). Its name is random (mkstemp) and it holds only the window's
// data: nothing in it says whose it is, and after a kill no process of the
// run is left to ask. So the watcher looks while the run lives: every such
// file that appears (inotify) or exists when it starts is the run's when one
// of the run's processes on this node has it open or mapped -- rank 0 (the
// watcher's parent) and its siblings, the children of the launcher's
// process on this node (Hydra's proxy, slurmstepd, orted), which are this
// job's ranks and progress processes.
bool is_backing_file(const std::string& name) {
  return name.rfind("mpich_", 0) == 0 && name.find("shar_tmp") != std::string::npos;
}

class ShmWatch {
 public:
  ShmWatch() : rank0_(::getppid()), launcher_(rank0_ > 1 ? parent_of(rank0_) : 0) {
    fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd_ >= 0 && ::inotify_add_watch(fd_, "/dev/shm", IN_CREATE) < 0) {
      ::close(fd_);
      fd_ = -1;
    }
    // what exists already (created before the watcher started: claimed
    // only while a process of the run holds it)
    if (DIR* shm = ::opendir("/dev/shm")) {
      while (dirent* e = ::readdir(shm)) consider(e->d_name);
      ::closedir(shm);
    }
  }
  ~ShmWatch() {
    if (fd_ >= 0) ::close(fd_);
  }
  ShmWatch(const ShmWatch&) = delete;
  ShmWatch& operator=(const ShmWatch&) = delete;

  // Waits up to `ms` for new files and claims those of the run.
  void wait(int ms) {
    if (fd_ < 0) {
      ::usleep(static_cast<useconds_t>(ms) * 1000);
      return;
    }
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) return;
    alignas(inotify_event) char buf[8192];
    ssize_t n;
    while ((n = ::read(fd_, buf, sizeof buf)) > 0)
      for (char* at = buf; at < buf + n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(at);
        if (ev->len > 0) consider(ev->name);
        at += sizeof(inotify_event) + ev->len;
      }
  }

  // After the run died: remove the run's files that are still there and
  // that no process has open or mapped any more; ranks still ending keep
  // theirs mapped for a moment: retried for up to 5 s.
  void remove_orphans() {
    for (int attempt = 0; attempt < 25 && !mine_.empty(); ++attempt) {
      for (auto it = mine_.begin(); it != mine_.end();) {
        const std::string path = "/dev/shm/" + *it;
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0) {
          it = mine_.erase(it);  // MPICH unlinked it
        } else if (!in_use(path)) {
          ::unlink(path.c_str());
          it = mine_.erase(it);
        } else {
          ++it;
        }
      }
      if (!mine_.empty()) ::usleep(200000);
    }
  }

 private:
  void consider(const std::string& name) {
    if (rank0_ <= 1 || !is_backing_file(name) || mine_.count(name)) return;  // rank 0 gone: nothing known
    const std::string path = "/dev/shm/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::getuid()) return;
    // Rank 0 first (one look at its fds and maps): MPICH's node root, rank 0
    // on the first node, creates the file, and a kill right after the
    // creation leaves no holder for a later look (shm_orphans once lost
    // that race in CI while this process scanned /proc).
    if (holds(std::to_string(rank0_), path) ||
        (launcher_ > 1 ? in_use(path, launcher_, rank0_) : in_use(path, rank0_, rank0_)))
      mine_.insert(name);
  }

  pid_t rank0_, launcher_;
  int fd_ = -1;
  std::set<std::string> mine_;  // the run's backing files seen
};
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
  // the run's shared-memory files, watched while it holds the lock
  ShmWatch shm;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) return 0;
    shm.wait(100);
  }
  struct stat now {};
  if (::stat(lock, &now) == 0 && now.st_ino == locked.st_ino && now.st_dev == locked.st_dev) {
    ::unlink(tmp);
    ::unlink(lock);
    ::close(fd);
    record_killed(tmp);
    // the run died: also what MPICH left of it in /dev/shm
    shm.remove_orphans();
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
  char* envp[] = {nullptr};
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
