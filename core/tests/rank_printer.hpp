#pragma once
// GoogleTest output for MPI tests: rank 0 keeps the usual printer; every
// other rank prints its own failures, prefixed with its rank, so a failure
// on rank 1 is never silent.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace locus::testing {

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  // The test's name is kept here: GoogleTest calls OnTestPartResult with
  // its own lock held, so asking it for the current test there deadlocks.
  void OnTestStart(const ::testing::TestInfo& t) override {
    test_ = std::string(t.test_suite_name()) + "." + t.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s: %s:%d: failure\n%s\n", rank_, test_.c_str(),
                 r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
    std::fflush(stderr);
  }

 private:
  int rank_;
  std::string test_ = "?";
};

// Call after InitGoogleTest.
inline void print_failures_on_every_rank(int rank) {
  if (rank == 0) return;
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  delete listeners.Release(listeners.default_result_printer());
  listeners.Append(new RankFailurePrinter(rank));
}

}  // namespace locus::testing
