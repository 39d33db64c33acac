#pragma once
// tensor_contract's tile product C += A B as a portable Kokkos kernel: the
// product of a device build (where no host BLAS can be called on the
// tiles), and on a host build the alternative to CBLAS DGEMM that
// tensor.gemm: portable selects (so that CI tests the device's kernel
// against BLAS).
#include <cstdint>

namespace tensor_contract {

// c (m x n) += a (m x k) * b (k x n): row-major and contiguous (leading
// dimensions k, n and n; no transposes, the only form the task loop calls:
// its sorts put both operands into matrix layout), every pointer in
// locus::MemSpace. A kernel "tensor::gemm" in locus::ExecSpace, fenced
// before it returns: one team per 16 x 16 tile of c, the operands' 16 x 16
// panels staged in team scratch, each element of c summed in ascending k
// from its old value (the order is fixed: every backend and team size sums
// alike).
void gemm_portable(std::int64_t m, std::int64_t n, std::int64_t k, const double* a, const double* b,
                   double* c);

}  // namespace tensor_contract
