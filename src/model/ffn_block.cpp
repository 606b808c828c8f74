// The dense gated feed-forward network (also the dense leading layers and the shared experts of
// deepseek2): two projections, the architecture's gated activation, the down projection.
#include "model/decoder_blocks.h"

namespace strata {

void ffn_block(BlockContext& ctx, const BackendMatrix* gate, const BackendMatrix& up,
               const BackendMatrix& down, const float* in, float* out) {
  Backend& be = ctx.backend;
  const int64_t n = ctx.n, width = down.n_in();
  float* g = fp(ctx.s.gate);
  float* u = fp(ctx.s.up);
  const GluKind act = ctx.c.info->ffn_act;
  if (gate) {
    ctx.timed(OpProfile::Matmul, [&] { be.matmul(*gate, in, g, n); });
    ctx.timed(OpProfile::Matmul, [&] { be.matmul(up, in, u, n); });
    ctx.timed(OpProfile::Elementwise, [&] { be.glu(act, g, u, width, g, n, width); });
    ctx.timed(OpProfile::Matmul, [&] { be.matmul(down, g, out, n); });
  } else {
    // Fused: each row of the product is [gate | up]; the activation writes rows of `width`.
    ctx.timed(OpProfile::Matmul, [&] { be.matmul(up, in, g, n); });
    ctx.timed(OpProfile::Elementwise, [&] { be.glu(act, g, g + width, 2 * width, u, n, width); });
    ctx.timed(OpProfile::Matmul, [&] { be.matmul(down, u, out, n); });
  }
}

}  // namespace strata
