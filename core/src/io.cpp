#include "locus/io.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "locus/async.hpp"
#include "locus/runtime.hpp"
#include "locus/version.hpp"

namespace fs = std::filesystem;

namespace locus {

namespace detail {
// The output this process is writing (rank 0), for the signal handler:
// removed when a run is terminated. Plain arrays: read in a signal handler.
char g_output_tmp[4096] = {0};
char g_output_lock[4096] = {0};

bool g_output_abandoned = false;
bool g_reaper_capable = false;
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

// The watcher of one output (see spawn_output_reaper): waits for the run's
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
    // the run died: also what MPICH left in /dev/shm
    const char* since = std::getenv("LOCUS_REAP_SINCE");
    if (since && *since) remove_orphan_shm(static_cast<std::time_t>(std::atoll(since)));
    return 0;
  }
  ::close(fd);
  return 0;
}
}  // namespace detail

namespace {

void remember(char* slot, const std::string& path) {
  if (path.size() < 4095) {
    std::memcpy(slot, path.c_str(), path.size() + 1);
  } else {
    slot[0] = 0;
  }
}

// HDF5 identifiers closed with their owner.
class Id {
 public:
  Id(hid_t id, herr_t (*close)(hid_t), const std::string& what) : id_(id), close_(close) {
    if (id_ < 0) throw Error("HDF5: " + what + " failed");
  }
  ~Id() {
    if (id_ >= 0) close_(id_);
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  operator hid_t() const { return id_; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

void check(herr_t status, const std::string& what) {
  if (status < 0) throw Error("HDF5: " + what + " failed");
}

void quiet_hdf5() {
  // No HDF5 clean-up at exit: every output is closed (or, after a failed
  // write, deliberately abandoned) by locus; HDF5's own exit handler would
  // try to close an abandoned file again, and hang or crash.
  static const bool once = [] {
    H5dont_atexit();
    return true;
  }();
  (void)once;
  // Errors become locus::Error messages; HDF5's own stack dump only adds noise.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

Id open_access(MPI_Comm comm) {
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate");
  check(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL), "H5Pset_fapl_mpio");
  return Id(H5Pcopy(fapl), H5Pclose, "H5Pcopy");
}

void write_attr(hid_t obj, const std::string& name, hid_t type, hid_t space, const void* data) {
  if (H5Aexists(obj, name.c_str()) > 0) check(H5Adelete(obj, name.c_str()), "H5Adelete " + name);
  Id attr(H5Acreate2(obj, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
          "creating attribute " + name);
  check(H5Awrite(attr, type, data), "writing attribute " + name);
}

// The interior of a rank's block in the field array and in the file. The
// file space has `ndims` dimensions (z dropped for 2D); memory is always the
// stored 3D block.
void select_block(const CartDecomp& dc, const BlockShape& s, int ndims, hid_t filespace, hid_t memspace) {
  const auto& n = dc.local();
  const auto& o = dc.offset();
  hsize_t count[3] = {hsize_t(n[2]), hsize_t(n[1]), hsize_t(n[0])};
  hsize_t fstart[3] = {hsize_t(o[2]), hsize_t(o[1]), hsize_t(o[0])};
  hsize_t mstart[3] = {hsize_t(s.g[2]), hsize_t(s.g[1]), hsize_t(s.g[0])};
  const int skip = 3 - ndims;
  check(H5Sselect_hyperslab(filespace, H5S_SELECT_SET, fstart + skip, nullptr, count + skip, nullptr),
        "file hyperslab");
  check(H5Sselect_hyperslab(memspace, H5S_SELECT_SET, mstart, nullptr, count, nullptr), "memory hyperslab");
}

Id memory_space(const BlockShape& s) {
  hsize_t m[3] = {hsize_t(s.extent(2)), hsize_t(s.extent(1)), hsize_t(s.extent(0))};
  return Id(H5Screate_simple(3, m, nullptr), H5Sclose, "H5Screate_simple");
}

BlockShape shape_of(const Field3D& f) {
  return BlockShape{{long(f.extent(2)) - 2, long(f.extent(1)) - 2, long(f.extent(0)) - 2}, {1, 1, 1}};
}

template <class T>
hid_t native_type();
template <>
hid_t native_type<float>() {
  return H5T_NATIVE_FLOAT;
}
template <>
hid_t native_type<double>() {
  return H5T_NATIVE_DOUBLE;
}

// Fields are chunked and carry HDF5's Fletcher32 checksum per chunk, so a
// damaged file (a flipped byte in a restart) is an error when read, not
// silently wrong data. A chunk is one rank's block (the largest of the
// decomposition: ceil(global / procs)), halved along its longest extent
// while above kChunkBytes, so that the filter's buffer per chunk stays
// small; every rank computes the same layout (dataset creation is
// collective).
constexpr double kChunkBytes = 16.0 * 1024 * 1024;

Id checked_layout(const CartDecomp& dc, int ndims, std::size_t elem) {
  Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate");
  const auto& g = dc.global();
  const auto& p = dc.procs();
  hsize_t chunk[3];
  for (int d = 0; d < 3; ++d) {
    const long procs = std::max(1, p[d]);
    chunk[2 - d] = hsize_t(std::max(1L, (g[d] + procs - 1) / procs));
  }
  const int skip = 3 - ndims;
  auto bytes = [&] {
    double b = double(elem);
    for (int i = skip; i < 3; ++i) b *= double(chunk[i]);
    return b;
  };
  while (bytes() > kChunkBytes) {
    int longest = skip;
    for (int i = skip; i < 3; ++i)
      if (chunk[i] > chunk[longest]) longest = i;
    if (chunk[longest] <= 1) break;
    chunk[longest] = (chunk[longest] + 1) / 2;
  }
  check(H5Pset_chunk(dcpl, ndims, chunk + skip), "H5Pset_chunk");
  check(H5Pset_fletcher32(dcpl), "H5Pset_fletcher32");
  // every element is written: no fill pass
  check(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
  return Id(H5Pcopy(dcpl), H5Pclose, "H5Pcopy");
}

// The HDF5 error stack of the last failed call, as one line ("" if empty).
std::string hdf5_errors() {
  std::string text;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* e, void* data) -> herr_t {
        auto* t = static_cast<std::string*>(data);
        if (e->desc && *e->desc) *t += std::string(t->empty() ? "" : "; ") + e->desc;
        return 0;
      },
      &text);
  return text;
}

Id collective_transfer() {
  Id dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose, "H5Pcreate");
  check(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
  return Id(H5Pcopy(dxpl), H5Pclose, "H5Pcopy");
}

}  // namespace

// ---------------------------------------------------------------- output

H5Output::H5Output(MPI_Comm comm, const std::string& path, bool overwrite)
    : comm_(comm), path_(path), tmp_(path + ".tmp") {
  quiet_hdf5();
  MPI_Comm_rank(comm, &rank_);
  std::string problem;
  if (rank_ == 0) {
    std::error_code ec;
    fs::path parent = fs::path(path).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
    if (ec) {
      problem = "output: cannot create directory " + parent.string() + " (" + ec.message() + ")";
    } else {
      // One run per output: the first holds a lock on NAME.h5.lock until it
      // commits or fails, so a second run with the same output is refused
      // before any work (the lock dies with its process; a lock file left
      // by a killed run is taken over).
      lock_ = path + ".lock";
      lock_fd_ = ::open(lock_.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
      if (lock_fd_ < 0) {
        problem = "output: cannot create " + lock_ + " (" + std::strerror(errno) + ")";
      } else if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
        problem = "output: another run is writing " + path + " right now (it holds " + lock_ +
                  "); wait for it or choose another output.dir/output.name";
        ::close(lock_fd_);
        lock_fd_ = -1;
      } else {
        remember(detail::g_output_lock, lock_);
        // The watcher first: from here on a kill -9 leaves files (the lock
        // now, NAME.h5.tmp soon), and HDF5's file creation below takes a
        // while (checkpoints run this often: killed in between, they left
        // their .lock).
        spawn_reaper();
        if (const char* hold = std::getenv("LOCUS_TEST_HOLD_LOCK_MS"); hold && *hold)
          ::usleep(static_cast<useconds_t>(std::atol(hold)) * 1000);  // tests: a kill lands here
        const bool exists = fs::exists(path, ec);
        if (ec)
          problem = "output: cannot use " + path + " (" + ec.message() + ")";
        else if (exists && fs::is_directory(path, ec))
          problem = "output: " + path + " is a directory; choose another output.name";
        else if (exists && !overwrite)
          problem = "output: " + path +
                    " exists; set output.overwrite: true (or --set output.overwrite=true) to replace it, "
                    "or choose another output.dir/output.name";
        else if (fs::is_directory(tmp_, ec))
          problem = "output: " + tmp_ + " is a directory; remove it or choose another output.name";
        else
          fs::remove(tmp_, ec);  // a stale file from a killed run
        // never silently: say which file this run replaces
        if (problem.empty() && exists)
          std::fprintf(stderr, "note: this run replaces %s (output.overwrite: true)\n", path.c_str());
      }
    }
    if (!problem.empty()) release_lock();
  }
  collective_require(comm, problem.empty(), problem);
  Id fapl = open_access(comm);
  file_ = H5Fcreate(tmp_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  // every rank knows the paths: whichever rank a signal reaches first
  // removes the unfinished output (the launcher may kill the others)
  if (file_ >= 0) {
    remember(detail::g_output_tmp, tmp_);
    remember(detail::g_output_lock, path + ".lock");
  }
  if (file_ < 0 && rank_ == 0) release_lock();
  collective_require(comm, file_ >= 0, "output: cannot create " + tmp_ + " (" + std::strerror(errno) + ")");
  xfer_ = H5Pcreate(H5P_DATASET_XFER);
  check(H5Pset_dxpl_mpio(xfer_, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
}

H5Output::~H5Output() {
  if (committed_) return;
  // Closing is collective: only safe when every rank is here. A local error
  // is followed by MPI_Abort; then rank 0 still removes NAME.h5.tmp (never
  // NAME.h5 exists) before the job ends.
  if (collective_cleanup_allowed() && !broken_) {
    if (xfer_ >= 0) H5Pclose(xfer_);
    if (file_ >= 0) H5Fclose(file_);
  }
  if (broken_) detail::g_output_abandoned = true;
  if (rank_ == 0) {
    std::remove(tmp_.c_str());
    release_lock();
  }
  detail::g_output_tmp[0] = 0;
  detail::g_output_lock[0] = 0;
}

void H5Output::ensure_space(double bytes, const std::string& name) {
  // HDF5 1.10 does not survive a write that fails on some ranks only (the
  // others stay inside MPI-IO collectives): check the space first.
  double avail = -1;
  if (rank_ == 0) {
    struct statvfs fs {};
    const std::string dir = fs::path(tmp_).parent_path().string();
    if (::statvfs(dir.empty() ? "." : dir.c_str(), &fs) == 0)
      avail = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
  }
  MPI_Bcast(&avail, 1, MPI_DOUBLE, 0, comm_);
  const double need = bytes + 256.0 * 1024;  // the data and room for metadata
  char text[160];
  std::snprintf(text, sizeof text, "needs %.1f MiB more, the file system has %.1f MiB free", need / 1048576.0,
                avail / 1048576.0);
  collective_require(
      comm_, avail < 0 || avail >= need,
      "output: writing " + name + " to " + tmp_ + ": " + text + "; nothing was written under " + path_);
}

void H5Output::written(herr_t status, const std::string& name) {
  const int err = errno;
  std::string why = status < 0 ? std::string(std::strerror(err)) : std::string();
  int bad = status < 0 ? 1 : 0, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm_);
  // After a failed write HDF5's close runs different collectives on
  // different ranks (one flushes metadata, another truncates) and hangs:
  // such a file is abandoned, not closed.
  if (any) broken_ = true;
  collective_require(comm_, status >= 0,
                     "output: writing " + name + " to " + tmp_ + " failed (" + why +
                         "; is the file system full or read-only?); nothing was written under " + path_);
}

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

hid_t H5Output::object(const std::string& name) const {
  if (name.empty()) return H5Oopen(file_, "/", H5P_DEFAULT);
  return H5Oopen(file_, name.c_str(), H5P_DEFAULT);
}

// Attributes are metadata, which parallel HDF5 needs identical on every
// rank (else its close runs mismatched collectives and hangs): every
// attribute writes rank 0's value.
void H5Output::attribute(const std::string& obj, const std::string& name, const std::string& given) {
  std::string value = given;
  long long len = static_cast<long long>(value.size());
  MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, comm_);
  value.resize(static_cast<std::size_t>(len));
  MPI_Bcast(value.data(), static_cast<int>(len), MPI_CHAR, 0, comm_);
  Id o(object(obj), H5Oclose, "opening " + obj);
  Id type(H5Tcopy(H5T_C_S1), H5Tclose, "H5Tcopy");
  check(H5Tset_size(type, H5T_VARIABLE), "H5Tset_size");
  check(H5Tset_cset(type, H5T_CSET_UTF8), "H5Tset_cset");
  Id space(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate");
  const char* p = value.c_str();
  write_attr(o, name, type, space, &p);
}

void H5Output::attribute(const std::string& obj, const std::string& name, double value) {
  MPI_Bcast(&value, 1, MPI_DOUBLE, 0, comm_);
  Id o(object(obj), H5Oclose, "opening " + obj);
  Id space(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate");
  write_attr(o, name, H5T_NATIVE_DOUBLE, space, &value);
}

void H5Output::attribute(const std::string& obj, const std::string& name, long value) {
  MPI_Bcast(&value, 1, MPI_LONG, 0, comm_);
  Id o(object(obj), H5Oclose, "opening " + obj);
  Id space(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate");
  write_attr(o, name, H5T_NATIVE_LONG, space, &value);
}

void H5Output::attribute(const std::string& obj, const std::string& name, const std::vector<double>& given) {
  std::vector<double> v = given;
  long long len = static_cast<long long>(v.size());
  MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, comm_);
  v.resize(static_cast<std::size_t>(len));
  MPI_Bcast(v.data(), static_cast<int>(len), MPI_DOUBLE, 0, comm_);
  Id o(object(obj), H5Oclose, "opening " + obj);
  hsize_t n = v.size();
  Id space(H5Screate_simple(1, &n, nullptr), H5Sclose, "H5Screate_simple");
  write_attr(o, name, H5T_NATIVE_DOUBLE, space, v.data());
}

void H5Output::write_block(const std::string& name, const void* data, hid_t type, const BlockShape& shape,
                           const CartDecomp& dc, int ndims) {
  if (ndims != 2 && ndims != 3) throw Error("output: " + name + ": ndims must be 2 or 3");
  const auto& g = dc.global();
  if (ndims == 2 && g[2] != 1) throw Error("output: " + name + ": a 2D dataset needs a grid of z extent 1");
  hsize_t dims[3] = {hsize_t(g[2]), hsize_t(g[1]), hsize_t(g[0])};
  const int skip = 3 - ndims;
  Id filespace(H5Screate_simple(ndims, dims + skip, nullptr), H5Sclose, "H5Screate_simple");
  Id dcpl = checked_layout(dc, ndims, H5Tget_size(type));
  Id dset(H5Dcreate2(file_, name.c_str(), type, filespace, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose,
          "creating dataset " + name);
  Id memspace = memory_space(shape);
  select_block(dc, shape, ndims, filespace, memspace);
  ensure_space(double(dims[0]) * double(dims[1]) * double(dims[2]) * double(H5Tget_size(type)), name);
  written(H5Dwrite(dset, type, memspace, filespace, xfer_, data), name);
}

void H5Output::write_field(const std::string& name, const Field3D& f, const CartDecomp& dc) {
  write_block(name, f.data(), H5T_NATIVE_DOUBLE, shape_of(f), dc, 3);
}

template <class T>
void H5Output::write_field(const std::string& name, const GridFieldT<T>& f, const CartDecomp& dc, int ndims) {
  write_block(name, f.data(), native_type<T>(), f.shape(), dc, ndims);
}

template void H5Output::write_field<float>(const std::string&, const GridFieldT<float>&, const CartDecomp&,
                                           int);
template void H5Output::write_field<double>(const std::string&, const GridFieldT<double>&, const CartDecomp&,
                                            int);

void H5Output::write_root_vector(const std::string& name, const std::vector<double>& v) {
  unsigned long long n = v.size();
  MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, comm_);
  hsize_t dims = n;
  Id filespace(H5Screate_simple(1, &dims, nullptr), H5Sclose, "H5Screate_simple");
  Id dset(
      H5Dcreate2(file_, name.c_str(), H5T_NATIVE_DOUBLE, filespace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose, "creating dataset " + name);
  Id memspace(H5Screate_simple(1, &dims, nullptr), H5Sclose, "H5Screate_simple");
  if (rank_ != 0 || n == 0) {
    H5Sselect_none(filespace);
    H5Sselect_none(memspace);
  }
  if (n > 0) ensure_space(8.0 * double(n), name);
  if (n > 0) written(H5Dwrite(dset, H5T_NATIVE_DOUBLE, memspace, filespace, xfer_, v.data()), name);
}

void H5Output::write_root_array(const std::string& name, const std::vector<double>& v,
                                const std::vector<hsize_t>& dims) {
  hsize_t n = 1;
  for (hsize_t d : dims) n *= d;
  if (rank_ == 0 && v.size() != n)
    throw Error("output: " + name + ": " + std::to_string(v.size()) + " values for a dataset of " +
                std::to_string(n));
  Id filespace(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose,
               "H5Screate_simple");
  Id dset(
      H5Dcreate2(file_, name.c_str(), H5T_NATIVE_DOUBLE, filespace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose, "creating dataset " + name);
  Id memspace(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose,
              "H5Screate_simple");
  if (rank_ != 0 || n == 0) {
    H5Sselect_none(filespace);
    H5Sselect_none(memspace);
  }
  if (n > 0) ensure_space(8.0 * double(n), name);
  if (n > 0) written(H5Dwrite(dset, H5T_NATIVE_DOUBLE, memspace, filespace, xfer_, v.data()), name);
}

void H5Output::write_distributed(const std::string& name, const double* data, std::uint64_t count,
                                 std::uint64_t offset, std::uint64_t global) {
  hsize_t dims = global;
  Id filespace(H5Screate_simple(1, &dims, nullptr), H5Sclose, "H5Screate_simple");
  Id dset(
      H5Dcreate2(file_, name.c_str(), H5T_NATIVE_DOUBLE, filespace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose, "creating dataset " + name);
  hsize_t start = offset, n = count;
  Id memspace(H5Screate_simple(1, &n, nullptr), H5Sclose, "H5Screate_simple");
  if (count == 0) {
    H5Sselect_none(filespace);
    H5Sselect_none(memspace);
  } else {
    check(H5Sselect_hyperslab(filespace, H5S_SELECT_SET, &start, nullptr, &n, nullptr), "hyperslab");
  }
  if (global > 0) ensure_space(8.0 * double(global), name);
  if (global > 0) written(H5Dwrite(dset, H5T_NATIVE_DOUBLE, memspace, filespace, xfer_, data), name);
}

void H5Output::write_rank_rows(const std::string& name, const std::vector<double>& row) {
  int size = 1;
  MPI_Comm_size(comm_, &size);
  hsize_t dims[2] = {hsize_t(size), row.size()};
  Id filespace(H5Screate_simple(2, dims, nullptr), H5Sclose, "H5Screate_simple");
  Id dset(
      H5Dcreate2(file_, name.c_str(), H5T_NATIVE_DOUBLE, filespace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose, "creating dataset " + name);
  hsize_t start[2] = {hsize_t(rank_), 0}, count[2] = {1, row.size()};
  check(H5Sselect_hyperslab(filespace, H5S_SELECT_SET, start, nullptr, count, nullptr), "hyperslab");
  Id memspace(H5Screate_simple(2, count, nullptr), H5Sclose, "H5Screate_simple");
  if (!row.empty()) ensure_space(8.0 * double(size) * double(row.size()), name);
  if (!row.empty()) written(H5Dwrite(dset, H5T_NATIVE_DOUBLE, memspace, filespace, xfer_, row.data()), name);
}

void H5Output::commit() {
  H5Pclose(xfer_);
  xfer_ = -1;
  herr_t st = H5Fclose(file_);
  file_ = -1;
  const int err = errno;
  if (st < 0) broken_ = true;
  if (st < 0 && rank_ == 0) std::remove(tmp_.c_str());  // the destructor removes it too; be explicit
  collective_require(comm_, st >= 0,
                     "output: writing " + tmp_ + " failed at close (" + std::strerror(err) +
                         "; is the file system full?); nothing was written under " + path_);
  std::string problem;
  if (rank_ == 0) {
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
      problem = "output: cannot rename " + tmp_ + " to " + path_ + " (" + std::strerror(errno) + ")";
      std::remove(tmp_.c_str());
    }
    release_lock();
  }
  detail::g_output_tmp[0] = 0;
  detail::g_output_lock[0] = 0;
  committed_ = true;
  collective_require(comm_, problem.empty(), problem);
}

void write_provenance(H5Output& out, const Context& ctx) {
  out.attribute("", "app", ctx.app().name);
  out.attribute("", "run_name", ctx.run_name());
  out.attribute("", "config", ctx.config().yaml());
  out.attribute("", "deck", ctx.config().source());
  out.attribute("", "locus_version", std::string(version()));
  out.attribute("", "git_commit", std::string(git_commit()));
  out.attribute("", "mpi_library", mpi_library());
  // The machine and build (rank 0's: attribute values must agree), as YAML.
  std::string machine;
  for (const auto& [k, v] : machine_description()) machine += k + ": " + YAML::Dump(YAML::Node(v)) + "\n";
  int mlen = static_cast<int>(machine.size());
  MPI_Bcast(&mlen, 1, MPI_INT, 0, ctx.comm());
  machine.resize(static_cast<std::size_t>(mlen));
  MPI_Bcast(machine.data(), mlen, MPI_CHAR, 0, ctx.comm());
  out.attribute("", "machine", machine);
  out.attribute("", "ranks", static_cast<long>(ctx.size()));
  out.attribute("", "node_map", ctx.runtime().node_map().describe());
  out.attribute("", "emulated_node_size", static_cast<long>(ctx.runtime().node_map().emulated_size));
  out.attribute("", "progress", ctx.runtime().progress_description());
  // Same date on every rank: attribute values must agree.
  std::string date = iso_date_now();
  int len = static_cast<int>(date.size());
  MPI_Bcast(&len, 1, MPI_INT, 0, ctx.comm());
  date.resize(static_cast<std::size_t>(len));
  MPI_Bcast(date.data(), len, MPI_CHAR, 0, ctx.comm());
  out.attribute("", "date", date);
  out.attribute("", "command_line", ctx.command_line());
}

// ---------------------------------------------------------------- input

H5Input::H5Input(MPI_Comm comm, const std::string& path) : comm_(comm), path_(path) {
  quiet_hdf5();
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // stat, not open: a FIFO would block; a directory or device is no file
  std::string problem;
  if (rank == 0) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
      problem =
          errno == ENOENT ? path + ": no such file" : path + ": cannot open (" + std::strerror(errno) + ")";
    else if (!S_ISREG(st.st_mode))
      problem = path + ": not a regular file (" +
                (S_ISDIR(st.st_mode) ? "a directory" : "a FIFO, device or socket") + "); give an HDF5 file";
  }
  collective_require(comm, problem.empty(), problem);
  Id fapl = open_access(comm);
  file_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl);
  collective_require(comm, file_ >= 0, path + ": not an HDF5 file (or unreadable)");
}

H5Input::~H5Input() {
  if (file_ >= 0 && collective_cleanup_allowed()) H5Fclose(file_);
}

bool H5Input::has(const std::string& name) const {
  return H5Lexists(file_, name.c_str(), H5P_DEFAULT) > 0;
}

namespace {
// "float64" when the dataset's type is a 64-bit IEEE float, else its kind.
std::string float64_or_kind(hid_t dset) {
  Id t(H5Dget_type(dset), H5Tclose, "H5Dget_type");
  const H5T_class_t cls = H5Tget_class(t);
  const std::size_t size = H5Tget_size(t);
  if (cls == H5T_FLOAT && size == 8) return "float64";
  if (cls == H5T_FLOAT) return "float" + std::to_string(8 * size);
  if (cls == H5T_INTEGER) return "int" + std::to_string(8 * size);
  if (cls == H5T_STRING) return "string";
  return "a non-numeric type";
}
}  // namespace

void H5Input::read_field(const std::string& name, Field3D& f, const CartDecomp& dc) {
  collective_require(comm_, has(name), path_ + ": has no dataset " + name);
  Id dset(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose, "opening " + name);
  {
    const std::string kind = float64_or_kind(dset);
    collective_require(comm_, kind == "float64", path_ + ": " + name + " is " + kind + ", expected float64");
  }
  Id filespace(H5Dget_space(dset), H5Sclose, "H5Dget_space");
  hsize_t dims[3] = {0, 0, 0};
  int rank = H5Sget_simple_extent_ndims(filespace);
  if (rank == 3) H5Sget_simple_extent_dims(filespace, dims, nullptr);
  const auto& g = dc.global();
  bool same = rank == 3 && dims[0] == hsize_t(g[2]) && dims[1] == hsize_t(g[1]) && dims[2] == hsize_t(g[0]);
  std::ostringstream msg;
  msg << path_ << ": " << name << " is " << dims[2] << "x" << dims[1] << "x" << dims[0]
      << " but the run's grid is " << g[0] << "x" << g[1] << "x" << g[2];
  collective_require(comm_, same, msg.str());
  const BlockShape shape = shape_of(f);
  Id memspace = memory_space(shape);
  select_block(dc, shape, 3, filespace, memspace);
  // Independent reads: a rank whose chunk fails its checksum returns alone,
  // with no collective left waiting for it; the verdict is collective below.
  Id dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose, "H5Pcreate");
  check(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_INDEPENDENT), "H5Pset_dxpl_mpio");
  const herr_t st = H5Dread(dset, H5T_NATIVE_DOUBLE, memspace, filespace, dxpl, f.data());
  std::string why;
  if (st < 0) {
    const std::string stack = hdf5_errors();
    why = stack.find("Fletcher32") != std::string::npos || stack.find("checksum") != std::string::npos
              ? "its Fletcher32 checksum does not match: the file is damaged"
              : "damaged file?" + (stack.empty() ? std::string() : " HDF5: " + stack.substr(0, 200));
  }
  collective_require(comm_, st >= 0, path_ + ": reading dataset " + name + " failed (" + why + ")");
}

std::vector<double> H5Input::read_vector(const std::string& name, std::size_t max_elements) {
  collective_require(comm_, has(name), path_ + ": has no dataset " + name);
  Id dset(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose, "opening " + name);
  {
    const std::string kind = float64_or_kind(dset);
    collective_require(comm_, kind == "float64", path_ + ": " + name + " is " + kind + ", expected float64");
  }
  Id space(H5Dget_space(dset), H5Sclose, "H5Dget_space");
  hssize_t n = H5Sget_simple_extent_npoints(space);
  collective_require(comm_, n >= 0 && static_cast<std::size_t>(n) <= max_elements,
                     path_ + ": " + name + " has " + std::to_string(n) + " elements, more than the " +
                         std::to_string(max_elements) + " it may have");
  std::vector<double> v(static_cast<std::size_t>(n));
  if (n == 0) return v;
  Id dxpl = collective_transfer();
  const herr_t st = H5Dread(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, dxpl, v.data());
  collective_require(comm_, st >= 0, path_ + ": reading " + name + " failed (damaged file?)");
  return v;
}

namespace {
template <class T>
T read_scalar_attr(MPI_Comm comm, hid_t file, const std::string& path, const std::string& name, hid_t type) {
  bool ok = H5Aexists(file, name.c_str()) > 0;
  collective_require(comm, ok, path + ": has no attribute " + name);
  Id attr(H5Aopen(file, name.c_str(), H5P_DEFAULT), H5Aclose, "opening attribute " + name);
  // the stored type must be the same kind (a number) and a scalar
  Id stored(H5Aget_type(attr), H5Tclose, "H5Aget_type");
  Id space(H5Aget_space(attr), H5Sclose, "H5Aget_space");
  const H5T_class_t want = H5Tget_class(type), have = H5Tget_class(stored);
  const bool scalar = H5Sget_simple_extent_npoints(space) == 1;
  collective_require(comm, want == have && scalar,
                     path + ": attribute " + name + " is not a single " +
                         (want == H5T_FLOAT ? "floating-point number" : "integer"));
  T v{};
  const herr_t st = H5Aread(attr, type, &v);
  collective_require(comm, st >= 0, path + ": reading attribute " + name + " failed (damaged file?)");
  return v;
}
}  // namespace

double H5Input::real_attribute(const std::string& name) {
  return read_scalar_attr<double>(comm_, file_, path_, name, H5T_NATIVE_DOUBLE);
}

long H5Input::integer_attribute(const std::string& name) {
  return read_scalar_attr<long>(comm_, file_, path_, name, H5T_NATIVE_LONG);
}

std::string H5Input::string_attribute(const std::string& name) {
  bool ok = H5Aexists(file_, name.c_str()) > 0;
  collective_require(comm_, ok, path_ + ": has no attribute " + name);
  Id attr(H5Aopen(file_, name.c_str(), H5P_DEFAULT), H5Aclose, "opening attribute " + name);
  {
    Id stored(H5Aget_type(attr), H5Tclose, "H5Aget_type");
    collective_require(comm_, H5Tget_class(stored) == H5T_STRING && H5Tis_variable_str(stored) > 0,
                       path_ + ": attribute " + name + " is not a text attribute");
  }
  Id type(H5Tcopy(H5T_C_S1), H5Tclose, "H5Tcopy");
  check(H5Tset_size(type, H5T_VARIABLE), "H5Tset_size");
  check(H5Tset_cset(type, H5T_CSET_UTF8), "H5Tset_cset");
  char* p = nullptr;
  check(H5Aread(attr, type, &p), "reading attribute " + name);
  std::string s = p ? p : "";
  H5free_memory(p);
  return s;
}

// ---------------------------------------------------------------- XDMF

std::string write_xdmf(const std::string& xmf_path, const std::string& h5_file, const std::string& dataset,
                       const std::array<long, 3>& n, const std::array<double, 3>& origin,
                       const std::array<double, 3>& spacing, double time, int ndims, int precision,
                       const std::vector<std::string>& more) {
  try {
    write_xdmf_file(xmf_path, h5_file, dataset, n, origin, spacing, time, ndims, precision, more);
  } catch (const std::exception& e) {
    std::remove((xmf_path + ".tmp").c_str());
    return e.what();
  }
  return "";
}

void write_xdmf_file(const std::string& xmf_path, const std::string& h5_file, const std::string& dataset,
                     const std::array<long, 3>& n, const std::array<double, 3>& origin,
                     const std::array<double, 3>& spacing, double time, int ndims, int precision,
                     const std::vector<std::string>& more) {
  std::string tmp = xmf_path + ".tmp";
  {
    std::error_code ec;
    if (fs::is_directory(tmp, ec)) throw Error("output: " + tmp + " is a directory; remove it");
  }
  {
    std::ofstream x(tmp);
    if (!x) throw Error("output: cannot write " + tmp + " (" + std::strerror(errno) + ")");
    x.precision(17);
    // XDMF lists dimensions slowest first: z y x (or y x).
    auto zyx = [ndims](const auto& v) {
      std::ostringstream o;
      o.precision(17);
      if (ndims == 3) o << v[2] << " ";
      o << v[1] << " " << v[0];
      return o.str();
    };
    const std::string mesh = ndims == 3 ? "3DCoRectMesh" : "2DCoRectMesh";
    const std::string geometry = ndims == 3 ? "ORIGIN_DXDYDZ" : "ORIGIN_DXDY";
    x << "<?xml version=\"1.0\" ?>\n"
      << "<Xdmf Version=\"3.0\">\n <Domain>\n  <Grid Name=\"" << dataset << "\" GridType=\"Uniform\">\n"
      << "   <Time Value=\"" << time << "\"/>\n"
      << "   <Topology TopologyType=\"" << mesh << "\" Dimensions=\"" << zyx(n) << "\"/>\n"
      << "   <Geometry GeometryType=\"" << geometry << "\">\n"
      << "    <DataItem Format=\"XML\" Dimensions=\"" << ndims << "\">" << zyx(origin) << "</DataItem>\n"
      << "    <DataItem Format=\"XML\" Dimensions=\"" << ndims << "\">" << zyx(spacing) << "</DataItem>\n"
      << "   </Geometry>\n";
    std::vector<std::string> all{dataset};
    all.insert(all.end(), more.begin(), more.end());
    for (const auto& d : all)
      x << "   <Attribute Name=\"" << d << "\" AttributeType=\"Scalar\" Center=\"Node\">\n"
        << "    <DataItem Format=\"HDF\" NumberType=\"Float\" Precision=\"" << precision << "\" Dimensions=\""
        << zyx(n) << "\">" << h5_file << ":/" << d << "</DataItem>\n"
        << "   </Attribute>\n";
    x << "  </Grid>\n </Domain>\n</Xdmf>\n";
    if (!x) throw Error("output: writing " + tmp + " failed");
  }
  if (std::rename(tmp.c_str(), xmf_path.c_str()) != 0)
    throw Error("output: cannot rename " + tmp + " to " + xmf_path + " (" + std::strerror(errno) + ")");
}

std::string finish_output(H5Output& out, const Context& ctx, Timers& timers, const YAML::Node& results,
                          const YAML::Node& validation) {
  timers.stop("total");
  Summary summary(ctx, reduce_timers(timers, ctx.comm()));
  summary.results = results;
  summary.validation = validation;
  summary.output = fs::absolute(out.path()).string();
  const AsyncSettings& as = ctx.runtime().settings().async;
  if (as.mode != AsyncMode::off) {
    // What redirection did: the mode and one entry per phase point, in the
    // summary and as datasets (async_time, async_on, async_cr: points x units).
    YAML::Node a;
    a["mode"] = async_mode_name(as.mode);
    if (as.mode == AsyncMode::user) a["on_phases"] = yaml_flow_list(as.on_phases);
    if (as.mode == AsyncMode::automatic) {
      a["interval"] = yaml_number(as.interval);
      a["low"] = yaml_number(as.low);
      a["high"] = yaml_number(as.high);
      if (!as.thresholds.empty()) a["thresholds"] = as.thresholds;
    }
    const auto& log = async_log();
    std::vector<double> t, on, cr;
    for (const auto& d : log) {
      YAML::Node e;
      e["time"] = yaml_number(std::round(d.time * 1e4) / 1e4);
      e["phase"] = d.phase;
      e["mean_cr"] = yaml_number(std::round(d.mean_cr * 1e3) / 1e3);
      e["on"] = d.on;
      e["why"] = d.why;
      a["decisions"].push_back(e);
      t.push_back(d.time);
      on.push_back(d.on ? 1.0 : 0.0);
      cr.insert(cr.end(), d.cr.begin(), d.cr.end());
    }
    a["on_at_end"] = async_enabled(ctx.runtime().world());
    summary.async = a;
    if (!log.empty()) {
      out.write_root_vector("async_time", t);
      out.write_root_vector("async_on", on);
      out.write_root_array("async_cr", cr,
                           {static_cast<hsize_t>(log.size()), static_cast<hsize_t>(log[0].cr.size())});
      std::string phases;
      for (const auto& d : log) phases += (phases.empty() ? "" : ",") + d.phase;
      out.attribute("async_on", "phases", phases);
      out.attribute(
          "async_cr", "meaning",
          std::string("communication ratio Tcomm/(Tcomm+Tcomp) of each unit (columns) over the profile "
                      "interval ending at each phase point (rows)"));
    }
  }
  // The figure of merit as root attributes too (docs/outputs.md).
  // (a const lookup of a missing key gives an invalid node: test IsDefined first)
  const YAML::Node fom = results.IsMap() ? results["figure_of_merit"] : YAML::Node();
  if (fom.IsDefined() && fom.IsMap()) {
    out.attribute("", "figure_of_merit_name", fom["name"].as<std::string>());
    out.attribute("", "figure_of_merit_value", fom["value"].as<double>());
    out.attribute("", "figure_of_merit_unit", fom["unit"].as<std::string>());
    out.attribute("", "figure_of_merit_seconds", fom["seconds"].as<double>());
    out.attribute("", "figure_of_merit_divides_by", fom["divides_by"].as<std::string>());
  }
  out.write_rank_rows("timers", timers.values());
  std::string columns;
  for (const auto& n : timers.names()) columns += (columns.empty() ? "" : ",") + n;
  out.attribute("timers", "columns", columns);
  const std::string text = summary.yaml();
  out.attribute("", "summary", text);
  out.commit();
  return ctx.summary_json() ? summary.json() : text;
}

}  // namespace locus
