// The built-in primitive catalogue (issue 19; docs/primitives.md, "The
// built-in catalogue"): alternatives for the Conv, Gemm and MatMul ops of an
// ONNX model from a simple cost model, for plans that ask for time and give
// no measured timings. A model, not a measurement of any device. Every size
// is counted in float32 (4 bytes an element), whatever the tensors' type.
//
// Conv (exactly the model of bench/make_primitives.py, so that the
// benchmark's numbers stay comparable), X [N, C, H, W], W [M, C/group, kh,
// kw], Y [N, M, Ho, Wo], MACs = N * M * Ho * Wo * (C/group) * kh * kw:
//   direct      MACs / 2000 us (2 GMAC/s), no workspace;
//   im2col      MACs / 8000 us (GEMM at 8 GMAC/s), workspace the patch
//               matrix of one group, 4 * N * (C/group) * kh * kw * Ho * Wo
//               bytes; not for a 1x1 kernel with strides 1 (it needs none);
//   winograd23  F(2,3), only for 3x3 kernels with strides 1, dilations 1
//               and group 1: MACs / (8000 * 2.25) us, workspace the
//               transformed input and output tiles, 4 * 16 * (C + M) * T2
//               bytes with T2 = N * ceil(Ho / 2) * ceil(Wo / 2);
//   winograd43  F(4,3), the same kernels: MACs / (8000 * 4) us, workspace
//               4 * 36 * (C + M) * T4 bytes with T4 = N * ceil(Ho / 4) *
//               ceil(Wo / 4).
// Only 2-D convolutions (X, W and Y of rank 4). The kernel size is W's, the
// strides and dilations the attributes' (default 1).
//
// Gemm and MatMul (this catalogue's own model), a product of [M, K] by
// [K, N] repeated B times (Gemm: B = 1, M and K after transA, N from Y;
// MatMul: numpy's rules, a 1-D A is [1, K], a 1-D B is [K, 1], B the product
// of Y's batch dims), MACs = B * M * K * N:
//   naive       MACs / 2000 us, no workspace;
//   packed      MACs / 8000 us (a blocked GEMM), workspace the packed
//               panels of A and B of one product, 4 * (M * K + K * N)
//               bytes; not for a matrix-vector product (M = 1 or N = 1),
//               which packing does not speed up.
//
// Transformed weights: winograd23 and winograd43 keep the filter W
// transformed, (2 + 2)^2 = 16 and (4 + 2)^2 = 36 values for each 9 of the
// 3x3 filter; their weight_bytes is the op's own weights (the weight tensors
// only it reads, in their own type, as the graph sizes them) with W's bytes
// F replaced by WinogradFilterBytes (16/9 F and 4 F, rounded up), the others
// (the bias) unchanged; 0 (the weights as given) when another op reads W
// too, or W is not a weight. direct, im2col, naive and packed keep the weights as given (packed packs
// its panels into its workspace at every call), weight_bytes 0. None sets
// `layout`. bench/make_primitives.py does the same. An op whose numbers do
// not fit (bytes beyond 2^63, a time above kMaxPrimitiveTimeUs) gets no
// alternatives and runs as before.
#ifndef SERENITY_CORE_ONNX_PRIMITIVE_CATALOGUE_H_
#define SERENITY_CORE_ONNX_PRIMITIVE_CATALOGUE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/graph/graph.h"

namespace onnx {
class GraphProto;
}  // namespace onnx

namespace serenity {

// The shapes and attributes of one 2-D convolution the Conv model reads.
struct ConvGeometry {
  int64_t n = 1;      // batch (X[0])
  int64_t c = 1;      // input channels (X[1])
  int64_t m = 1;      // output channels (W[0])
  int64_t cg = 1;     // input channels per group (W[1])
  int64_t kh = 1;     // kernel height (W[2])
  int64_t kw = 1;     // kernel width (W[3])
  int64_t ho = 1;     // output height (Y[2])
  int64_t wo = 1;     // output width (Y[3])
  int64_t group = 1;  // attribute group
  int64_t stride_h = 1, stride_w = 1;
  int64_t dilation_h = 1, dilation_w = 1;
};

// A matrix product repeated `batch` times: [m, k] by [k, n].
struct MatMulGeometry {
  int64_t batch = 1;
  int64_t m = 1;
  int64_t k = 1;
  int64_t n = 1;
};

// The bytes of a 3x3 filter of `filter_bytes` transformed for Winograd
// F(tile, 3), tile 2 or 4: (tile + 2)^2 / 9 of them, rounded up to a whole
// byte; nullopt for another tile, negative bytes or beyond INT64_MAX.
std::optional<int64_t> WinogradFilterBytes(int tile, int64_t filter_bytes);

// The Conv model's alternatives (direct first), or none when a number does
// not fit. Dims must not be negative. Their weight_bytes are 0 (the
// geometry does not tell the weights; CatalogueAlternatives sets them).
std::vector<Primitive> ConvCatalogue(const ConvGeometry& conv);

// The Gemm/MatMul model's alternatives (naive first), or none when a number
// does not fit. Dims must not be negative.
std::vector<Primitive> MatMulCatalogue(const MatMulGeometry& product);

// The catalogue's alternatives of every op of `spec`, which
// OnnxModelToGraphSpec made from `graph` (spec.ops[i] is graph.node(i);
// shapes, weights and who reads them are read from spec by tensor name):
// entry i is empty for ops other than Conv, Gemm and MatMul of the default
// domain and for those whose shapes the models do not cover. InvalidArgument
// when spec has not one op per node.
absl::StatusOr<std::vector<std::vector<Primitive>>> CatalogueAlternatives(const onnx::GraphProto& graph,
                                                                          const GraphSpec& spec);

// The same for a serialized ModelProto that OnnxToGraphSpec imported into
// `spec`; InvalidArgument also when the bytes do not parse.
absl::StatusOr<std::vector<std::vector<Primitive>>> CatalogueAlternatives(absl::string_view model_bytes,
                                                                          const GraphSpec& spec);

}  // namespace serenity

#endif  // SERENITY_CORE_ONNX_PRIMITIVE_CATALOGUE_H_
