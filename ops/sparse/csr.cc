// kps::SparseCsr's calls: each one op by name (csr.h).
#include "ops/sparse/csr.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "registry/call.h"
#include "registry/data_type.h"
#include "registry/status.h"

namespace kps {
namespace {

absl::Status Bad(const std::string& what) { return absl::InvalidArgumentError(absl::StrCat("SparseCsr: ", what)); }

bool IsIndexType(DataType dt) { return dt == DataType::kInt32 || dt == DataType::kInt64; }

// The call on the stream when one is given (else the inputs' device's default stream).
Call& On(Call& call, const Stream* stream) {
  if (stream != nullptr) call.OnStream(*stream);
  return call;
}

// The CSR inputs of a call.
Call& WithCsr(Call& call, const SparseCsr& a) {
  call.Input("indptr", a.indptr).Input("indices", a.indices);
  if (a.values.defined()) call.Input("values", a.values);
  return call;
}

}  // namespace

absl::StatusOr<SparseCsr> SparseCsr::FromTensors(Tensor indptr, Tensor indices, Tensor values, int64_t cols) {
  if (!indptr.defined() || !indices.defined()) return Bad("indptr and indices must be given");
  if (indptr.rank() != 1 || indices.rank() != 1) {
    return Bad(absl::StrCat("indptr (rank ", indptr.rank(), ") and indices (rank ", indices.rank(),
                            ") must be 1-D"));
  }
  if (!IsIndexType(indptr.dtype()) || !IsIndexType(indices.dtype())) {
    return Bad(absl::StrCat("indptr (", DataTypeName(indptr.dtype()), ") and indices (",
                            DataTypeName(indices.dtype()), ") must be int32 or int64"));
  }
  if (indptr.numel() < 1) return Bad("indptr is empty; a matrix of m rows has m + 1 offsets");
  if (cols < 0) return Bad(absl::StrCat("cols = ", cols, "; it must be >= 0"));
  if (values.defined() && (values.rank() != 1 || values.numel() != indices.numel())) {
    return Bad(absl::StrCat("values has shape ", values.shape().ToString(), " but indices has ", indices.numel(),
                            " entries"));
  }
  if (indices.device() != indptr.device() || (values.defined() && values.device() != indptr.device())) {
    return Bad("indptr, indices and values must be on one device");
  }
  SparseCsr a;
  a.rows = indptr.numel() - 1;
  a.cols = cols;
  a.indptr = std::move(indptr);
  a.indices = std::move(indices);
  a.values = std::move(values);
  return a;
}

absl::StatusOr<SparseCsr> SparseCsr::FromCoo(const Tensor& row_ids, const Tensor& col_ids, const Tensor& values,
                                             int64_t rows, int64_t cols, bool sum_duplicates, const Stream* stream) {
  Call call("coo_to_csr");
  call.Input("rows", row_ids).Input("cols", col_ids);
  if (values.defined()) call.Input("values", values);
  call.Attr("num_rows", rows).Attr("num_cols", cols).Attr("sum_duplicates", sum_duplicates);
  KPS_ASSIGN_OR_RETURN(std::vector<Tensor> out, On(call, stream).Run());
  return FromTensors(std::move(out[0]), std::move(out[1]), values.defined() ? std::move(out[2]) : Tensor(), cols);
}

absl::Status SparseCsr::Validate(bool sorted, const Stream* stream) const {
  Call call("csr_validate");
  call.Input("indptr", indptr).Input("indices", indices).Attr("num_cols", cols).Attr("sorted", sorted);
  return On(call, stream).Run().status();
}

absl::StatusOr<SparseCsr> SparseCsr::Transpose(const Stream* stream) const {
  Call call("csr_transpose");
  WithCsr(call, *this).Attr("num_cols", cols);
  KPS_ASSIGN_OR_RETURN(std::vector<Tensor> out, On(call, stream).Run());
  SparseCsr t;
  t.rows = cols;
  t.cols = rows;
  t.indptr = std::move(out[0]);
  t.indices = std::move(out[1]);
  if (values.defined()) t.values = std::move(out[2]);
  return t;
}

absl::StatusOr<Tensor> SparseCsr::Matvec(const Tensor& x, bool check, const Stream* stream) const {
  Call call("spmv");
  WithCsr(call, *this).Input("x", x).Attr("check", check);
  return On(call, stream).RunOne();
}

absl::StatusOr<Tensor> SparseCsr::Matmul(const Tensor& b, bool check, const Stream* stream) const {
  Call call("spmm");
  WithCsr(call, *this).Input("b", b).Attr("check", check);
  return On(call, stream).RunOne();
}

absl::StatusOr<SparseCsr> SparseCsr::To(DeviceType device, const Stream* stream) const {
  const Stream s = stream != nullptr ? *stream : Stream();
  SparseCsr a = *this;
  KPS_ASSIGN_OR_RETURN(a.indptr, indptr.To(device, s));
  KPS_ASSIGN_OR_RETURN(a.indices, indices.To(device, s));
  if (values.defined()) {
    KPS_ASSIGN_OR_RETURN(a.values, values.To(device, s));
  }
  return a;
}

}  // namespace kps
