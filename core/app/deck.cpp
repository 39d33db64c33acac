// The deck, read by rank 0 and checked on every rank, and the output keys
// (run_parts.hpp).
#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>

#include "app/run_parts.hpp"
#include "locus/collective.hpp"
#include "locus/wait.hpp"

namespace locus::detail {

// Rank 0 reads the deck and broadcasts it; every rank then checks it the same
// way, so a bad deck is the same CollectiveError everywhere.
Config load_everywhere(MPI_Comm comm, const AppInfo& app, const CommandLine& cl) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string text, read_error;
  if (rank == 0) {
    try {
      text = read_deck(cl.deck);
    } catch (const Error& e) {
      read_error = e.what();
    }
  }
  collective_require(comm, read_error.empty(), read_error);
  long len = static_cast<long>(text.size());
  locus::yielding::bcast(&len, 1, MPI_LONG, 0, comm);
  text.resize(static_cast<std::size_t>(len));
  locus::yielding::bcast(text.data(), static_cast<int>(len), MPI_CHAR, 0, comm);
  try {
    return parse_config(app.schema, text, cl.deck, cl.overrides);
  } catch (const ConfigError& e) {
    throw CollectiveError(e.what());
  }
}

// output.dir and output.name name a file this run can create: checked on
// every rank alike (the config is the same everywhere), before any work.
void check_output_keys(MPI_Comm comm, const Config& c) {
  const std::string& name = c.string("output.name");
  const std::string& dir = c.string("output.dir");
  std::string problem;
  if (name.empty())
    problem = c.locate("output.name") + ": empty; give a file stem such as run1";
  else if (name.find('\0') != std::string::npos)
    problem = c.locate("output.name") + ": contains a NUL byte";
  else if (std::any_of(name.begin(), name.end(), [](unsigned char ch) { return ch < 0x20 || ch == 0x7f; }))
    problem = c.locate("output.name") + ": contains a control character (a line break, tab or escape)";
  else if (name.find('/') != std::string::npos)
    problem = c.locate("output.name") + ": a file stem, not a path (put directories in output.dir)";
  else if (name == "." || name == "..")
    problem = c.locate("output.name") + ": '" + name + "' is not a file name";
  else if (name.size() + 8 > 255)  // NAME.h5.lock must fit NAME_MAX
    problem = c.locate("output.name") + ": " + std::to_string(name.size()) +
              " characters; file names have at most 255 (247 for the stem)";
  else if (dir.empty())
    problem = c.locate("output.dir") + ": empty; use . for the working directory";
  else if (dir.find('\0') != std::string::npos)
    problem = c.locate("output.dir") + ": contains a NUL byte";
  else if (dir.size() + name.size() + 9 > 4095)
    problem = c.locate("output.dir") + ": the output path would be longer than 4095 characters";
  else {
    std::string part;
    std::stringstream ss(dir);
    while (std::getline(ss, part, '/'))
      if (part.size() > 255) {
        problem = c.locate("output.dir") + ": a directory name of " + std::to_string(part.size()) +
                  " characters; at most 255";
        break;
      }
  }
  collective_require(comm, problem.empty(), problem);
}

std::string stem_of(const std::string& path) {
  return std::filesystem::path(path).stem().string();
}

}  // namespace locus::detail
