#pragma once
// The end of every app's run, written once for the four apps: the output
// path from the deck, the memory check, provenance attributes, the verdict,
// the summary written into the run's HDF5 output, the XDMF file beside it,
// and what rank 0 prints.
#include <array>
#include <string>
#include <vector>

#include "locus/app.hpp"
#include "locus/io.hpp"
#include "locus/profile.hpp"
#include "locus/tree.hpp"

namespace locus {

// <output.dir>/<output.name><suffix> of the deck: ".h5" the run's HDF5
// output, ".xmf" the XDMF file beside it (heat3d: ".restart.h5").
std::string output_path(const Config& cfg, const std::string& suffix = ".h5");
// Collective: the run's HDF5 output (output_path, output.overwrite),
// created now as NAME.h5.tmp so that a clash with an existing output is
// reported before the run, not after it.
H5Output open_output(const Context& ctx);

// Collective over the run's ranks, before anything big is allocated:
// require_memory on the world team with `shared` bytes in segments and
// `private_bytes` per rank, plus `fields` bytes of grid fields, which live
// in segments unless comm.staging: always keeps them private
// (fields_in_segments).
void require_run_memory(const Context& ctx, double shared, double private_bytes, const std::string& what,
                        double fields = 0.0);

// The head of the summary's results.kernels block, the same in every app:
// `space`, the execution space the kernels ran in (empty: Kokkos's
// ExecSpace), and its concurrency; with `grid_fields` also the memory space
// and where the grid fields live (field_storage). The app adds its `check`
// and what else its kernels report.
Tree kernels_summary(bool grid_fields, const std::string& space = "");

// Run provenance as root attributes: effective config, locus version, git
// commit, MPI library, ranks, node map, date, command line.
void write_provenance(H5Output& out, const Context& ctx);

// The verdict of a run or of one check: "FAIL" when it failed, "not
// checked" when it passed with nothing compared, else "pass".
const char* verdict(bool pass, bool checked = true);
// The run's verdict at the end of its validation block: first, when it
// passed with nothing compared and `unchecked_reason` is not empty, that
// reason as validation["reason"]; then validation["verdict"].
void set_verdict(Tree& validation, bool pass, bool checked, const std::string& unchecked_reason = "");

// The end of every app's run. Collective: stops the `total` timer, builds
// the summary (timers reduced over ranks, the app's results and validation
// blocks, the output path), writes the per-rank timers and the summary into
// `out` and commits it. Returns the summary's YAML text for rank 0 to print.
std::string finish_output(H5Output& out, const Context& ctx, Timers& timers, const Tree& results,
                          const Tree& validation);

// A grid dataset of the output, for the XDMF file beside it (write_xdmf's
// arguments: xyz order; ndims 2 for a (ny, nx) dataset; `precision` the
// element size in bytes; `more` further datasets on the same grid).
struct XdmfField {
  std::string dataset;
  std::array<long, 3> dims{};
  std::array<double, 3> origin{}, spacing{};
  double time = 0.0;
  int ndims = 3;
  int precision = 8;
  std::vector<std::string> more;
};

// Rank 0, after finish_output: <output.name>.xmf beside the output at
// `h5_path`, describing `field`, when output.write_field and output.xdmf
// are set. Returns false, after "<app>: error: <why> (<h5_path> itself is
// complete)" on stderr, when it could not be written.
bool write_xdmf_beside(const Context& ctx, const std::string& h5_path, const XdmfField& field);

// The end of every app's run after its datasets are written. Collective:
// finish_output, then on rank 0 the XDMF file of `field` (when not null),
// the summary on stdout and, when not empty, "<app>: warning: <warning>"
// on stderr. Returns the exit status: 0 when `pass` and the XDMF file, if
// due, was written; else 1.
int finish_run(H5Output& out, const Context& ctx, Timers& timers, const Tree& results, const Tree& validation,
               bool pass, const XdmfField* field = nullptr, const std::string& warning = "");

}  // namespace locus
