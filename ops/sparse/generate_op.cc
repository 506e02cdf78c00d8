// Schemas of the sparse generators rmat, stencil_csr and banded_csr, and the attribute
// checks their inference and kernels share (Resolve*). The kernels (generate_ops.h) are
// registered in generate_cuda.cu.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "functors/random.h"
#include "ops/sparse/generate_ops.h"
#include "registry/checked_math.h"
#include "registry/op_schema.h"

namespace kps {
namespace sparse {
namespace {

// A sum of probabilities may exceed 1 by this much (0.1 + 0.2 + 0.7 in double).
constexpr double kProbabilitySlack = 1e-9;

// round(prob * 2^16), at most 2^16: the threshold of a 16-bit half.
uint32_t Threshold16(double prob) {
  const double t = std::nearbyint(prob * 65536.0);
  return t >= 65536.0 ? 65536u : (t <= 0 ? 0u : static_cast<uint32_t>(t));
}

absl::Status CheckIndexDtype(const CallView& call, DataType dt, int64_t max_index) {
  if (dt != DataType::kInt32 && dt != DataType::kInt64) {
    return call.Error("attribute 'index_dtype' is ", DataTypeName(dt), "; it must be int32 or int64");
  }
  if (dt == DataType::kInt32 && max_index > INT32_MAX) {
    return call.Error("attribute 'index_dtype' is int32 but the largest column is ", max_index,
                      ", past int32's 2147483647; use int64");
  }
  return absl::OkStatus();
}

absl::Status CheckValueDtype(const CallView& call, DataType dt) {
  if (IsFloatingPoint(dt)) return absl::OkStatus();
  return call.Error("attribute 'dtype' is ", DataTypeName(dt),
                    "; the values are float16, bfloat16, float32 or float64");
}

absl::Status TooMany(const CallView& call, const char* what, const std::string& count) {
  return call.Error("the attributes ask for ", count, " ", what, ", more than the 2^40 (", kMaxGeneratedEntries,
                    ") a generator makes");
}

// CSR outputs: indptr [rows + 1] int64, indices [nnz] and values [nnz].
void SetCsrOutputs(InferContext& ctx, int64_t rows, int64_t nnz) {
  ctx.SetOutput(0, Shape{rows + 1}, DataType::kInt64);
  ctx.SetOutput(1, Shape{nnz}, ctx.Attr<DataType>("index_dtype"));
  ctx.SetOutput(2, Shape{nnz}, ctx.Attr<DataType>("dtype"));
}

absl::Status InferRmat(InferContext& ctx) {
  KPS_ASSIGN_OR_RETURN(const RmatParams p, ResolveRmat(ctx));
  const DataType dt = ctx.Attr<DataType>("dtype");
  ctx.SetOutput(0, Shape{p.edges}, dt);
  ctx.SetOutput(1, Shape{p.edges}, dt);
  return absl::OkStatus();
}

absl::Status InferStencil(InferContext& ctx) {
  KPS_ASSIGN_OR_RETURN(const StencilParams p, ResolveStencil(ctx));
  SetCsrOutputs(ctx, p.rows, p.nnz);
  return absl::OkStatus();
}

absl::Status InferBanded(InferContext& ctx) {
  KPS_ASSIGN_OR_RETURN(const BandedParams p, ResolveBanded(ctx));
  SetCsrOutputs(ctx, p.n, p.nnz);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RmatParams> ResolveRmat(const CallView& call) {
  RmatParams p;
  const int64_t scale = call.Attr<int64_t>("scale");
  if (scale < 1 || scale > 31) {
    return call.Error("attribute 'scale' is ", scale, "; it must be in [1, 31] (2^scale vertices)");
  }
  p.scale = static_cast<int>(scale);
  const int64_t edge_factor = call.Attr<int64_t>("edge_factor");
  if (edge_factor < 0) return call.Error("attribute 'edge_factor' is ", edge_factor, "; it must be >= 0");
  if (edge_factor > (kMaxGeneratedEntries >> scale)) {
    return TooMany(call, "edges", absl::StrCat("edge_factor * 2^scale = ", edge_factor, " * 2^", scale));
  }
  p.edges = edge_factor << scale;
  const double a = call.Attr<double>("a"), b = call.Attr<double>("b"), c = call.Attr<double>("c");
  const std::pair<const char*, double> probs[] = {{"a", a}, {"b", b}, {"c", c}};
  for (const auto& [name, v] : probs) {
    if (!(v >= 0 && v <= 1)) return call.Error("attribute '", name, "' is ", v, "; it must be in [0, 1]");
  }
  if (a + b + c > 1 + kProbabilitySlack) {
    return call.Error("attributes 'a' + 'b' + 'c' = ", a + b + c, " exceed 1 (d = 1 - a - b - c must be >= 0)");
  }
  p.t_a = Threshold16(a);
  p.t_ab = Threshold16(a + b);
  p.t_abc = Threshold16(a + b + c);
  const DataType dt = call.Attr<DataType>("dtype");
  if (dt != DataType::kInt32 && dt != DataType::kInt64) {
    return call.Error("attribute 'dtype' is ", DataTypeName(dt), "; rmat's ids are int32 or int64");
  }
  const uint64_t seed = static_cast<uint64_t>(call.Attr<int64_t>("seed"));
  p.key = PhiloxKey(seed);
  p.permute = call.Attr<bool>("permute");
  // The permutation's constants: two Philox calls on counters no edge uses (edges' third
  // word is 0 .. 3).
  const uint4 m = Philox4x32_10(uint4{0, 0, 0xffffffffu, 0xffffffffu}, p.key);
  const uint4 k = Philox4x32_10(uint4{1, 0, 0xffffffffu, 0xffffffffu}, p.key);
  const uint32_t mul[4] = {m.x, m.y, m.z, m.w}, add[4] = {k.x, k.y, k.z, k.w};
  for (int r = 0; r < kRmatPermuteRounds; ++r) {
    p.mul[r] = mul[r] | 1u;
    p.add[r] = add[r];
  }
  return p;
}

absl::StatusOr<StencilParams> ResolveStencil(const CallView& call) {
  const std::vector<int64_t>& grid = call.Attr<std::vector<int64_t>>("grid");
  if (grid.size() != 2 && grid.size() != 3) {
    return call.Error("attribute 'grid' has ", grid.size(), " dimensions; it must have 2 or 3");
  }
  StencilParams p;
  int64_t rows = 1;
  for (size_t d = 0; d < grid.size(); ++d) {
    if (grid[d] < 0) return call.Error("attribute 'grid' has ", grid[d], " at ", d, "; sizes must be >= 0");
    if (MulOverflow(rows, grid[d], &rows) || rows > kMaxGeneratedEntries) {
      return TooMany(call, "rows", absl::StrCat("more than 2^40 (grid ", absl::StrJoin(grid, " x "), ")"));
    }
  }
  const bool two_d = grid.size() == 2;
  p.n0 = two_d ? 1 : grid[0];
  p.n1 = grid[two_d ? 0 : 1];
  p.n2 = grid[two_d ? 1 : 2];
  p.rows = rows;
  int64_t points = call.Attr<int64_t>("points");
  if (points == 0) points = two_d ? 5 : 7;
  if (two_d ? (points != 5 && points != 9) : (points != 7 && points != 27)) {
    return call.Error("attribute 'points' is ", points, "; a ", grid.size(), "-D grid takes ",
                      two_d ? "5 or 9" : "7 or 27", " (0: ", two_d ? 5 : 7, ")");
  }
  p.box = points == 9 || points == 27;
  // nnz: box, the product of (3n - 2) over the dimensions; star, each row plus two
  // neighbours per interior edge of each line.
  int64_t nnz = 0;
  if (rows > 0) {
    const int64_t n[3] = {p.n0, p.n1, p.n2};
    if (p.box) {
      nnz = 1;
      for (int64_t m : n) nnz *= 3 * m - 2;  // <= 27 * 2^40: no overflow
    } else {
      nnz = rows;
      for (int64_t m : n) nnz += 2 * (m - 1) * (rows / m);  // <= 6 * 2^40
    }
  }
  if (nnz > kMaxGeneratedEntries) return TooMany(call, "entries", std::to_string(nnz));
  p.nnz = nnz;
  KPS_RETURN_IF_ERROR(CheckValueDtype(call, call.Attr<DataType>("dtype")));
  KPS_RETURN_IF_ERROR(CheckIndexDtype(call, call.Attr<DataType>("index_dtype"), rows - 1));
  return p;
}

absl::StatusOr<BandedParams> ResolveBanded(const CallView& call) {
  BandedParams p;
  const int64_t n = call.Attr<int64_t>("n"), lower = call.Attr<int64_t>("lower"), upper = call.Attr<int64_t>("upper");
  if (n < 0) return call.Error("attribute 'n' is ", n, "; it must be >= 0");
  if (n >= kMaxGeneratedEntries) return TooMany(call, "rows", std::to_string(n));
  if (lower < 0) return call.Error("attribute 'lower' is ", lower, "; it must be >= 0");
  if (upper < 0) return call.Error("attribute 'upper' is ", upper, "; it must be >= 0");
  p.n = n;
  const int64_t widest = n > 0 ? n - 1 : 0;
  p.lower = lower < widest ? lower : widest;
  p.upper = upper < widest ? upper : widest;
  // n * (lower + upper + 1) less the two corner triangles, in 128 bits (n and the widths
  // are below 2^40 here, the product not).
  const __int128 l = p.lower, u = p.upper;
  const __int128 nnz = static_cast<__int128>(n) * (l + u + 1) - l * (l + 1) / 2 - u * (u + 1) / 2;
  if (nnz > kMaxGeneratedEntries) {
    return TooMany(call, "entries", absl::StrCat("about ", static_cast<double>(nnz)));
  }
  p.nnz = static_cast<int64_t>(nnz);
  p.key = PhiloxKey(static_cast<uint64_t>(call.Attr<int64_t>("seed")));
  p.dominant = call.Attr<bool>("dominant");
  KPS_RETURN_IF_ERROR(CheckValueDtype(call, call.Attr<DataType>("dtype")));
  KPS_RETURN_IF_ERROR(CheckIndexDtype(call, call.Attr<DataType>("index_dtype"), n - 1));
  return p;
}

namespace {

const std::vector<DeviceType> kDevices = {DeviceType::kCpu, DeviceType::kCuda};
const std::vector<DataType> kValueTypes = {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                           DataType::kFloat64};

}  // namespace

KPS_REGISTER_OP("rmat")
    .Output("src", "[edge_factor * 2^scale] each edge's source vertex, in [0, 2^scale)")
    .Output("dst", "[edge_factor * 2^scale] each edge's destination vertex, in [0, 2^scale)")
    .RequiredAttr<int64_t>("scale", "log2 of the vertex count, 1 to 31")
    .Attr<int64_t>("edge_factor", int64_t{16}, "edges per vertex (>= 0): edge_factor * 2^scale edges, at most 2^40")
    .Attr<double>("a", 0.57, "probability of the top-left quadrant (src bit 0, dst bit 0) at each level")
    .Attr<double>("b", 0.19, "probability of the top-right quadrant (src bit 0, dst bit 1)")
    .Attr<double>("c", 0.19, "probability of the bottom-left quadrant (src bit 1, dst bit 0); d = 1 - a - b - c")
    .Attr<int64_t>("seed", int64_t{0}, "the Philox key (its 64-bit pattern)")
    .Attr<bool>("permute", true,
                "scramble the vertex labels by a seeded bijection of [0, 2^scale), so that degree does not "
                "follow the id")
    .Attr<DataType>("dtype", DataType::kInt64, "the ids' dtype: int32 or int64")
    .SetInferFn(InferRmat)
    .KeyDataTypeFrom("src")
    .Kernels(kDevices, {DataType::kInt32, DataType::kInt64})
    .Doc(
        "Graph500's R-MAT (Kronecker) edge list: a directed multigraph with self loops and duplicate edges, as "
        "R-MAT makes it (not cleaned). Each of the scale levels of an edge picks a quadrant with probabilities "
        "a, b, c, d; level 0 gives the ids' top bit. The same on CPU and CUDA bit for bit, from the attributes "
        "alone. The stream: key = (lo32(seed), hi32(seed)); edge e's call j (j < ceil(scale / 8)) gives words "
        "w0..w3 = Philox4x32-10(counter (lo32(e), hi32(e), j, 0), key); level l takes the 16-bit half u = "
        "(w[(l % 8) / 2] >> (16 * (l % 2))) & 0xffff of call l / 8 (low half first) and compares it with "
        "integer thresholds ta = round(65536 a), tab = round(65536 (a + b)), tabc = round(65536 (a + b + c)): "
        "the source bit is u >= tab, the destination bit u >= tabc if the source bit is 1, else u >= ta "
        "(probabilities are rounded to multiples of 2^-16; Graph500's reference uses 10^-4). With permute, "
        "both ids then go through 4 rounds of v = (v * m_r + k_r) mod 2^scale; v ^= v >> ceil(scale / 2), "
        "with m_r = (word r of Philox4x32-10((0, 0, 2^32 - 1, 2^32 - 1), key)) | 1 and k_r = word r of "
        "Philox4x32-10((1, 0, 2^32 - 1, 2^32 - 1), key). On CUDA a thread makes 4 consecutive edges.");

KPS_REGISTER_OP("stencil_csr")
    .Output("indptr", "[rows + 1] int64 row offsets; rows = the product of grid")
    .Output("indices", "[nnz] columns (index_dtype), ascending in each row")
    .Output("values", "[nnz] (dtype): the neighbour count on the diagonal, -1 for each neighbour")
    .RequiredAttr<std::vector<int64_t>>("grid", "the grid's sizes (2 or 3 dimensions, each >= 0), row-major ids")
    .Attr<int64_t>("points", int64_t{0}, "the stencil: 5 or 9 for a 2-D grid, 7 or 27 for 3-D; 0: 5 or 7")
    .Attr<DataType>("dtype", DataType::kFloat32, "the values' dtype: float16, bfloat16, float32 or float64")
    .Attr<DataType>("index_dtype", DataType::kInt64, "the indices' dtype: int32 or int64")
    .SetInferFn(InferStencil)
    .KeyDataTypeFrom("values")
    .Kernels(kDevices, kValueTypes)
    .Doc(
        "The CSR graph Laplacian of a grid stencil: vertex (i, j[, k]) is row i * n1 (* n2) + ...; its "
        "neighbours are the grid points at offsets in {-1, 0, 1}^d other than 0 (9 / 27 points) or along one "
        "axis only (5 / 7 points) that lie in the grid, so boundary rows have fewer entries. Sizes are closed "
        "forms (nnz: box, the product of 3n - 2; star, rows + 2 (n - 1) rows / n summed over the "
        "dimensions), and so is every row's offset: on CUDA a thread makes one row, a block stages its rows "
        "in shared memory and stores them coalesced. At most 2^40 rows and entries.");

KPS_REGISTER_OP("banded_csr")
    .Output("indptr", "[n + 1] int64 row offsets")
    .Output("indices", "[nnz] columns (index_dtype), ascending in each row")
    .Output("values", "[nnz] (dtype): uniform in [-1, 1), exactly representable in dtype")
    .RequiredAttr<int64_t>("n", "rows and columns (>= 0)")
    .Attr<int64_t>("lower", int64_t{1}, "sub-diagonals kept (>= 0): row r starts at column max(0, r - lower)")
    .Attr<int64_t>("upper", int64_t{1}, "super-diagonals kept (>= 0): row r ends at column min(n - 1, r + upper)")
    .Attr<DataType>("dtype", DataType::kFloat32, "the values' dtype: float16, bfloat16, float32 or float64")
    .Attr<DataType>("index_dtype", DataType::kInt64, "the indices' dtype: int32 or int64")
    .Attr<int64_t>("seed", int64_t{0}, "the Philox key (its 64-bit pattern)")
    .Attr<bool>("dominant", false,
                "set the diagonal to the row's entry count (rounded to dtype), so that the matrix is strictly "
                "diagonally dominant")
    .SetInferFn(InferBanded)
    .KeyDataTypeFrom("values")
    .Kernels(kDevices, kValueTypes)
    .Doc(
        "An n x n banded matrix in CSR: entry (r, c) for r - lower <= c <= r + upper. The value of (r, c) "
        "depends on (seed, r, c) alone, the same on CPU and CUDA bit for bit: the top b bits k of "
        "Philox4x32-10(counter (lo32(r), hi32(r), lo32(c), hi32(c)), key (lo32(seed), hi32(seed))) (word 0; "
        "words 0 and 1 as w0 << 32 | w1 for float64), v = (k - 2^(b-1)) / 2^(b-1) with b = 11, 8, 24, 53 for "
        "float16, bfloat16, float32, float64. nnz = n (lower + upper + 1) - lower (lower + 1) / 2 - "
        "upper (upper + 1) / 2 (widths clamped to n - 1), at most 2^40. On CUDA a thread writes 4 consecutive "
        "entries, finding its row from the closed-form row offsets.");

}  // namespace sparse
}  // namespace kps
