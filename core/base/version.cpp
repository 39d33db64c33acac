// Build provenance: the version, the git commit, the MPI library, the date.
#include "locus/version.hpp"

#include <mpi.h>

#include <cstring>
#include <ctime>
#include <string>

#include "build_info.hpp"
#include "git_commit.hpp"

namespace locus {

const char* version() {
  return LOCUS_VERSION;
}
const char* git_commit() {
  return LOCUS_GIT_COMMIT;
}

std::string mpi_library() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(buf, &len);
  const std::string all(buf, static_cast<std::size_t>(len));
  // "MPICH Version:\t4.0.2": one space for any run of blanks
  auto squeeze = [](const std::string& s) {
    std::string o;
    for (char c : s) {
      bool blank = c == ' ' || c == '\t';
      if (c == '\0') break;
      if (blank && (o.empty() || o.back() == ' ')) continue;
      o += blank ? ' ' : c;
    }
    while (!o.empty() && o.back() == ' ') o.pop_back();
    return o;
  };
  std::string o = squeeze(all.substr(0, all.find('\n')));
  // MPICH names its device on another line ("MPICH Device:\tch4:ucx"):
  // the results depend on it (ch4:ucx, ch4:ofi, ch3:nemesis), so it is kept.
  const auto dev = all.find("MPICH Device:");
  if (dev != std::string::npos) {
    const auto end = all.find('\n', dev);
    o += ", device " +
         squeeze(all.substr(dev + 13, end == std::string::npos ? std::string::npos : end - dev - 13));
  }
  return o;
}

const char* mpi_flavour() {
  return LOCUS_MPI_FLAVOUR;
}

std::string iso_date_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace locus
