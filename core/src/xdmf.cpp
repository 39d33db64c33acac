// XDMF files beside grid outputs, for ParaView and VisIt.
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

}  // namespace locus
