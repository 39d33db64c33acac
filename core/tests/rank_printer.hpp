#pragma once
// GoogleTest output for MPI tests: rank 0 keeps the usual printer; every
// other rank prints its own failures, prefixed with its rank, so a failure
// on rank 1 is never silent.
#include <gtest/gtest.h>

#include <cstdio>

namespace locus::testing {

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
    std::fprintf(stderr, "[rank %d] %s.%s: %s:%d: failure\n%s\n", rank_, t ? t->test_suite_name() : "?",
                 t ? t->name() : "?", r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
    std::fflush(stderr);
  }

 private:
  int rank_;
};

// Call after InitGoogleTest.
inline void print_failures_on_every_rank(int rank) {
  if (rank == 0) return;
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  delete listeners.Release(listeners.default_result_printer());
  listeners.Append(new RankFailurePrinter(rank));
}

}  // namespace locus::testing
