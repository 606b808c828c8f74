// Dense symmetric positive definite algebra for GPTQ and SparseGPT (row-major, double precision,
// blocked so that nearly all the work is dense_gemm's register tiles).
#pragma once

#include <cstdint>
#include <vector>

namespace strata {
class ThreadPool;
}

namespace strata::calib {

// In place: the lower triangle of A [n, n] becomes L with A = L L^T (the strict upper triangle
// is left unspecified). False when A is not numerically positive definite.
bool cholesky_lower(double* A, int64_t n, ThreadPool* pool);

// In place: the lower triangle of L [n, n] (non-singular, lower triangular) becomes L^-1.
void invert_lower(double* L, int64_t n, ThreadPool* pool);

// GPTQ's factor: for H [n, n] symmetric positive definite, the upper triangular U [n, n] with
// U^T U = H^-1 (U[i, i:] is the row the column-i error propagates with). Computed as the
// inverse of the upper factor R of H = R R^T, i.e. the reversed-order Cholesky: half the work
// of inverting H and factoring the inverse. H is destroyed. False when H is not positive
// definite. U's strict lower triangle is zero.
bool inverse_upper_factor(std::vector<double>& H, int64_t n, std::vector<float>* U, ThreadPool* pool);

}  // namespace strata::calib
