#pragma once
// locus::Error: every error a user can act on. The runtime turns it into a
// clean, collective exit (see runtime.hpp).
#include <stdexcept>
#include <string>

namespace locus {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An error every rank of a communicator raises together, with the same
// message (see collective_require in runtime.hpp). The runtime prints it
// once and all ranks exit cleanly with a non-zero status; any other Error
// is local to one rank and aborts the job.
//
// While a CollectiveError object exists (thrown and not yet handled) every
// rank is unwinding together, so destructors may still make collective
// calls (free segments, stop the progress processes). The state belongs to
// the error: it ends when the error is handled, so a caught and handled
// CollectiveError leaves no trace.
class CollectiveError : public Error {
 public:
  explicit CollectiveError(const std::string& what) : Error(what) { ++live(); }
  CollectiveError(const CollectiveError& o) : Error(o) { ++live(); }
  CollectiveError& operator=(const CollectiveError&) = default;
  ~CollectiveError() override { --live(); }
  // CollectiveError objects alive in this process.
  static int alive() { return live(); }

 private:
  static int& live();
};

// False while a local (one-rank) error unwinds the stack: destructors must
// then skip collective calls (the other ranks are not coming; the runtime
// aborts the job next). True in normal scope exit and collective unwinding.
bool collective_cleanup_allowed();

}  // namespace locus
