// XDMF files beside grid outputs, for ParaView and VisIt.
#include <sys/statvfs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "locus/error.hpp"
#include "locus/io.hpp"

namespace fs = std::filesystem;

namespace locus {

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
    std::ostringstream x;
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
    const std::string text = x.str();
    // the space first: a full file system is one clear error, nothing written
    struct statvfs fs {};
    const std::string dir = fs::path(tmp).parent_path().string();
    if (::statvfs(dir.empty() ? "." : dir.c_str(), &fs) == 0) {
      const double avail = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
      const double need = static_cast<double>(text.size()) + 4096.0;  // one block at least
      if (avail < need) {
        char msg[160];
        std::snprintf(msg, sizeof msg, "needs %.1f MiB more, the file system has %.1f MiB free",
                      need / 1048576.0, avail / 1048576.0);
        throw Error("output: writing " + tmp + ": " + msg + "; nothing was written under " + xmf_path);
      }
    }
    std::ofstream out(tmp);
    if (!out) throw Error("output: cannot write " + tmp + " (" + std::strerror(errno) + ")");
    out << text;
    out.flush();
    if (!out) {
      const int err = errno;
      out.close();
      std::remove(tmp.c_str());
      throw Error("output: writing " + tmp + " failed (" + std::strerror(err) +
                  "); nothing was written under " + xmf_path);
    }
  }
  if (std::rename(tmp.c_str(), xmf_path.c_str()) != 0)
    throw Error("output: cannot rename " + tmp + " to " + xmf_path + " (" + std::strerror(errno) + ")");
}

}  // namespace locus
