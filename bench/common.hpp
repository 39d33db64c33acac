#pragma once
// The helpers the benchmarks share now live in the harness (harness.hpp:
// split_list, max_over_ranks, oversubscription_note, and the tables,
// repeats and reports); this header stays for the benchmarks that still
// include it.
#include "harness.hpp"
