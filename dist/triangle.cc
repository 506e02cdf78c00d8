// The distributed triangle count (dist/triangle.h has the contract, the layered CSR and the
// exchange): host planning, serving and assembly, then the exchange, the counts and the
// reduction through registered ops; with DistributedCountOptions::device_exchange (1-D) the
// planning, serving and assembly run on the GPU instead (CountOnDevice1D, kernels in
// dist/triangle_cuda.cu).
#include "dist/triangle.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "dist/communicator.h"
#include "dist/triangle_cuda.h"
#include "registry/call.h"
#include "registry/status.h"
#include "registry/stream.h"

namespace kps {
namespace dist {
namespace {

int IndexBytes(DataType dtype) { return dtype == DataType::kInt32 ? 4 : 8; }

double Ms(absl::Time since) { return absl::ToDoubleMilliseconds(absl::Now() - since); }

int64_t SumOthers(const std::vector<int64_t>& per_rank, int me) {
  int64_t s = 0;
  for (size_t i = 0; i < per_rank.size(); ++i) {
    if (static_cast<int>(i) != me) s += per_rank[i];
  }
  return s;
}

// Runs fn(lo, hi) over [0, n) cut into `threads` contiguous chunks, one thread each (the
// caller's thread takes the first); the first error wins. threads <= 1 runs inline.
absl::Status ParallelFor(int64_t n, int threads, const std::function<absl::Status(int64_t, int64_t)>& fn) {
  // At least 1024 items a thread: below that a thread costs more than it saves.
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(threads, n / 1024 + 1));
  if (parts == 1) return fn(0, n);
  std::vector<absl::Status> status(static_cast<size_t>(parts));
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < parts; ++t) {
    pool.emplace_back([&, t] { status[t] = fn(n * t / parts, n * (t + 1) / parts); });
  }
  status[0] = fn(0, n / parts);
  for (std::thread& th : pool) th.join();
  for (const absl::Status& s : status) KPS_RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

// Whether the whole row N+(x) is in `local` (1-D: rows are never split over columns).
bool WholeRowLocal(const RankPartition& local, const Partition& p, int64_t x) {
  return p.grid_cols == 1 && local.rows.Contains(x);
}

// The rows a rank can read: its own block, and the pieces fetched from other ranks.
class RowSource {
 public:
  RowSource(const RankPartition& local, const Partition& p) : local_(local), p_(p) {}

  absl::Status AddFetched(const FetchedRows& f) {
    const size_t ranks = static_cast<size_t>(p_.num_ranks);
    if (f.counts.empty() && f.ids.empty() && f.lengths.empty() && f.entries.empty()) return absl::OkStatus();
    if (f.counts.size() != ranks) {
      return absl::InvalidArgumentError(
          absl::StrCat("fetched rows: counts has ", f.counts.size(), " entries for ", ranks, " ranks"));
    }
    int64_t ids = 0;
    for (int64_t c : f.counts) {
      if (c < 0) return absl::InvalidArgumentError(absl::StrCat("fetched rows: a negative count ", c));
      ids += c;
    }
    if (ids != static_cast<int64_t>(f.ids.size()) || f.lengths.size() != f.ids.size()) {
      return absl::InvalidArgumentError(absl::StrCat("fetched rows: counts add up to ", ids, " but there are ",
                                                     f.ids.size(), " ids and ", f.lengths.size(), " lengths"));
    }
    pieces_.reserve(f.ids.size());
    entries_ = absl::MakeConstSpan(f.entries);
    int64_t at = 0;
    size_t k = 0;
    for (int owner = 0; owner < p_.num_ranks; ++owner) {
      for (int64_t i = 0; i < f.counts[static_cast<size_t>(owner)]; ++i, ++k) {
        const int64_t len = f.lengths[k];
        if (len < 0 || len > static_cast<int64_t>(f.entries.size()) - at) {
          return absl::InvalidArgumentError(absl::StrCat("fetched rows: row ", f.ids[k], " from rank ", owner,
                                                         " has length ", len, ", past the ", f.entries.size(),
                                                         " entries received"));
        }
        pieces_[{f.ids[k], p_.ColOf(owner)}] = {at, len};
        at += len;
      }
    }
    if (at != static_cast<int64_t>(f.entries.size())) {
      return absl::InvalidArgumentError(absl::StrCat("fetched rows: lengths add up to ", at, " but ",
                                                     f.entries.size(), " entries were received"));
    }
    return absl::OkStatus();
  }

  // Calls fn(span) for each piece of the whole row N+(x), in column order (so the entries
  // come ascending).
  template <typename F>
  absl::Status ForRow(int64_t x, F&& fn) const {
    if (WholeRowLocal(local_, p_, x)) {
      fn(local_.Row(x));
      return absl::OkStatus();
    }
    const int row = p_.RowRangeOf(x);
    for (int c = 0; c < p_.grid_cols; ++c) {
      const int owner = p_.RankAt(row, c);
      if (owner == local_.rank) {
        fn(local_.Row(x));
        continue;
      }
      auto it = pieces_.find(std::make_pair(x, c));
      if (it == pieces_.end()) {
        return absl::FailedPreconditionError(absl::StrCat("rank ", local_.rank, " needs row ", x, " from rank ",
                                                          owner, " but did not receive it"));
      }
      fn(entries_.subspan(it->second.first, it->second.second));
    }
    return absl::OkStatus();
  }

 private:
  const RankPartition& local_;
  const Partition& p_;
  absl::flat_hash_map<std::pair<int64_t, int>, std::pair<int64_t, int64_t>> pieces_;  // (x, col) -> (at, len)
  absl::Span<const int64_t> entries_;
};

template <typename I>
void Fill(const std::vector<int64_t>& v, Tensor* t) {
  I* out = t->data<I>();
  for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<I>(v[i]);
}

// A CPU tensor of `dtype` (int32 or int64) holding v.
absl::StatusOr<Tensor> HostIndexTensor(const std::vector<int64_t>& v, DataType dtype) {
  KPS_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(Shape{static_cast<int64_t>(v.size())}, dtype, DeviceType::kCpu));
  if (dtype == DataType::kInt32) {
    Fill<int32_t>(v, &t);
  } else {
    Fill<int64_t>(v, &t);
  }
  return t;
}

// The values of an int32 or int64 tensor (any device; read in the order of `stream`).
absl::StatusOr<std::vector<int64_t>> ReadIndices(const Tensor& t, const Stream& stream) {
  KPS_ASSIGN_OR_RETURN(Tensor h, t.To(DeviceType::kCpu, stream));
  std::vector<int64_t> out(static_cast<size_t>(h.numel()));
  if (h.dtype() == DataType::kInt32) {
    const int32_t* p = h.data<int32_t>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = p[i];
  } else if (h.numel() > 0) {
    std::memcpy(out.data(), h.data<int64_t>(), out.size() * sizeof(int64_t));
  }
  return out;
}

}  // namespace

// ---- host planning ---------------------------------------------------------------------------

namespace {

// InvalidArgument unless `local` is a block of p (ranks, ranges, indptr's size).
absl::Status CheckBlockOf(const RankPartition& local, const Partition& p) {
  const int ranks = p.num_ranks;
  if (local.rank < 0 || local.rank >= ranks || local.num_ranks != ranks || local.num_vertices != p.num_vertices ||
      p.row_splits.size() != static_cast<size_t>(p.grid_rows) + 1 ||
      p.col_splits.size() != static_cast<size_t>(p.grid_cols) + 1 || p.grid_rows * p.grid_cols != ranks ||
      local.rows.begin != p.Rows(local.rank).begin || local.rows.end != p.Rows(local.rank).end ||
      local.cols.begin != p.Cols(local.rank).begin || local.cols.end != p.Cols(local.rank).end ||
      local.indptr.size() != static_cast<size_t>(local.rows.size()) + 1) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", local.rank, "'s block (of ", local.num_ranks,
                                                   " ranks) does not belong to this partition of ", ranks, " ranks"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CountPlan> PlanCount(const RankPartition& local, const Partition& p) {
  const int ranks = p.num_ranks;
  KPS_RETURN_IF_ERROR(CheckBlockOf(local, p));
  // The rows whose whole N+ this rank needs: its own u with an edge here, and every v. The
  // same lists as RemoteRowsNeeded, found by marking (one byte per vertex, one pass over the
  // block) instead of sorting the block's entries, which at R-MAT 24 took seconds.
  const int64_t n = p.num_vertices;
  std::vector<uint8_t> needed(static_cast<size_t>(n), 0);
  for (int64_t v : local.indices) {
    if (v < 0 || v >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat("rank ", local.rank, "'s block names vertex ", v, ", outside [0, ", n, ")"));
    }
    needed[v] = 1;
  }
  CountPlan plan;
  for (int64_t u = local.rows.begin; u < local.rows.end; ++u) {
    const absl::Span<const int64_t> row = local.Row(u);
    if (row.empty()) continue;
    needed[u] = 1;
    const bool row_local = WholeRowLocal(local, p, u);
    bool any_local = false, any_remote = !row_local;
    for (size_t k = 0; k < row.size() && !(any_local && any_remote); ++k) {
      (WholeRowLocal(local, p, row[k]) ? any_local : any_remote) = true;
    }
    if (row_local && any_local) plan.local_roots.push_back(u);
    if (any_remote) plan.remote_roots.push_back(u);
  }
  std::vector<std::vector<int64_t>> by_owner(static_cast<size_t>(ranks));
  int grid_row = 0;
  for (int64_t x = 0; x < n; ++x) {
    if (!needed[x]) continue;
    while (p.row_splits[grid_row + 1] <= x) ++grid_row;  // x ascends, so the row range does too
    for (int c = 0; c < p.grid_cols; ++c) {
      const int owner = p.RankAt(grid_row, c);
      if (owner != local.rank) by_owner[static_cast<size_t>(owner)].push_back(x);
    }
  }
  plan.request_counts.assign(static_cast<size_t>(ranks), 0);
  for (int owner = 0; owner < ranks; ++owner) {
    const std::vector<int64_t>& ids = by_owner[static_cast<size_t>(owner)];
    plan.request_counts[static_cast<size_t>(owner)] = static_cast<int64_t>(ids.size());
    plan.request_ids.insert(plan.request_ids.end(), ids.begin(), ids.end());
  }
  return plan;
}

absl::StatusOr<ServedPieces> ServePieces(const RankPartition& local, absl::Span<const int64_t> asked, int from) {
  ServedPieces out;
  out.lengths.reserve(asked.size());
  int64_t total = 0;
  for (int64_t x : asked) {
    if (!local.rows.Contains(x)) {
      return absl::InvalidArgumentError(absl::StrCat("rank ", from, " asked rank ", local.rank, " for row ", x,
                                                     ", outside its rows [", local.rows.begin, ", ", local.rows.end,
                                                     "): the ranks disagree on the partition"));
    }
    total += static_cast<int64_t>(local.Row(x).size());
  }
  out.entries.reserve(static_cast<size_t>(total));
  for (int64_t x : asked) {
    const absl::Span<const int64_t> row = local.Row(x);
    out.lengths.push_back(static_cast<int64_t>(row.size()));
    out.entries.insert(out.entries.end(), row.begin(), row.end());
  }
  return out;
}

absl::StatusOr<std::vector<Tensor>> LayeredCountCsr(const RankPartition& local, const Partition& p,
                                                    absl::Span<const int64_t> roots, const FetchedRows& fetched,
                                                    int threads, Heads heads) {
  RowSource rows(local, p);
  KPS_RETURN_IF_ERROR(rows.AddFetched(fetched));
  const int64_t n = p.num_vertices;
  // Whether the root's block entry v is one this CSR counts over.
  auto counted = [&](int64_t v) {
    return heads == Heads::kAll || (heads == Heads::kLocal) == WholeRowLocal(local, p, v);
  };
  for (size_t i = 0; i < roots.size(); ++i) {
    if (!local.rows.Contains(roots[i]) || (i > 0 && roots[i] <= roots[i - 1])) {
      return absl::InvalidArgumentError(absl::StrCat("root ", roots[i], " (position ", i,
                                                     ") is not in ascending order inside rank ", local.rank,
                                                     "'s rows [", local.rows.begin, ", ", local.rows.end, ")"));
    }
  }
  // C: the union of the roots' whole rows, marked, then numbered in one ascending scan (no
  // sort); pos[x] is x's place in C (-1: not in C). A dense map: 8 bytes per vertex of the
  // graph, below the layered CSR's own size.
  std::vector<int64_t> pos(static_cast<size_t>(n), -1);
  bool bad = false;  // a fetched entry outside [0, n), from a peer that disagrees on the graph
  int64_t bad_value = 0;
  for (int64_t u : roots) {
    KPS_RETURN_IF_ERROR(rows.ForRow(u, [&](absl::Span<const int64_t> piece) {
      for (int64_t x : piece) {
        if (x < 0 || x >= n) {
          bad = true;
          bad_value = x;
        } else {
          pos[x] = 0;
        }
      }
    }));
    if (bad) {
      return absl::InvalidArgumentError(
          absl::StrCat("row ", u, " as received holds vertex ", bad_value, ", outside [0, ", n, ")"));
    }
  }
  std::vector<int64_t> c_list;
  for (int64_t x = 0; x < n; ++x) {
    if (pos[x] == 0) {
      pos[x] = static_cast<int64_t>(c_list.size());
      c_list.push_back(x);
    }
  }
  // B: the v of the roots' block entries (a subset of C), whose rows are the second hop.
  std::vector<char> in_b(c_list.size(), 0);
  for (int64_t u : roots) {
    for (int64_t v : local.Row(u)) {
      if (counted(v)) in_b[pos[v]] = 1;
    }
  }
  const int64_t r = static_cast<int64_t>(roots.size()), c = static_cast<int64_t>(c_list.size());
  const int64_t n_layered = r + 2 * c;
  std::vector<int64_t> indptr(static_cast<size_t>(n_layered) + 1, 0);
  // Pass 1: row lengths (rows of roots, then rows of B), each row on its own.
  KPS_RETURN_IF_ERROR(ParallelFor(r + c, threads, [&](int64_t lo, int64_t hi) -> absl::Status {
    for (int64_t i = lo; i < hi; ++i) {
      int64_t len = 0;
      if (i < r) {
        for (int64_t v : local.Row(roots[i])) len += counted(v) ? 1 : 0;
        KPS_RETURN_IF_ERROR(rows.ForRow(roots[i], [&](absl::Span<const int64_t> piece) { len += piece.size(); }));
      } else if (in_b[i - r]) {
        KPS_RETURN_IF_ERROR(rows.ForRow(c_list[i - r], [&](absl::Span<const int64_t> piece) {
          for (int64_t w : piece) len += (w >= 0 && w < n && pos[w] >= 0) ? 1 : 0;
        }));
      }
      indptr[i + 1] = len;
    }
    return absl::OkStatus();
  }));
  for (int64_t i = 0; i < n_layered; ++i) indptr[i + 1] += indptr[i];
  // Pass 2: the entries, written straight into the tensor (int32 when the ids fit: half the
  // bytes to copy to the GPU and to read in the count); rows are disjoint ranges.
  const DataType dtype = n_layered < (int64_t{1} << 31) ? DataType::kInt32 : DataType::kInt64;
  KPS_ASSIGN_OR_RETURN(Tensor ptr_t, HostIndexTensor(indptr, DataType::kInt64));
  KPS_ASSIGN_OR_RETURN(Tensor idx_t, Tensor::Empty(Shape{indptr.back()}, dtype, DeviceType::kCpu));
  const int64_t b0 = r, c0 = r + c;
  auto write = [&](auto* indices) -> absl::Status {
    using I = std::remove_pointer_t<decltype(indices)>;
    return ParallelFor(r + c, threads, [&](int64_t lo, int64_t hi) -> absl::Status {
      for (int64_t i = lo; i < hi; ++i) {
        int64_t at = indptr[i];
        if (i < r) {
          for (int64_t v : local.Row(roots[i])) {
            if (counted(v)) indices[at++] = static_cast<I>(b0 + pos[v]);
          }
          KPS_RETURN_IF_ERROR(rows.ForRow(roots[i], [&](absl::Span<const int64_t> piece) {
            for (int64_t x : piece) indices[at++] = static_cast<I>(c0 + pos[x]);
          }));
        } else if (in_b[i - r]) {
          KPS_RETURN_IF_ERROR(rows.ForRow(c_list[i - r], [&](absl::Span<const int64_t> piece) {
            for (int64_t w : piece) {
              if (w >= 0 && w < n && pos[w] >= 0) indices[at++] = static_cast<I>(c0 + pos[w]);
            }
          }));
        }
      }
      return absl::OkStatus();
    });
  };
  KPS_RETURN_IF_ERROR(dtype == DataType::kInt32 ? write(idx_t.data<int32_t>()) : write(idx_t.data<int64_t>()));
  return std::vector<Tensor>{ptr_t, idx_t};
}

absl::StatusOr<std::vector<Tensor>> RangeCountCsr(const RankPartition& local, const Partition& p,
                                                  const FetchedRows& fetched, int threads) {
  if (p.grid_cols != 1) {
    return absl::InvalidArgumentError(absl::StrCat("RangeCountCsr takes a 1-D partition; this one is ", p.grid_rows,
                                                   " x ", p.grid_cols, " (use LayeredCountCsr)"));
  }
  const int64_t n = p.num_vertices;
  // Where each fetched row's entries start in fetched.entries (the lengths in order).
  const size_t k = fetched.ids.size();
  if (fetched.lengths.size() != k) {
    return absl::InvalidArgumentError(
        absl::StrCat("fetched rows: ", k, " ids but ", fetched.lengths.size(), " lengths"));
  }
  std::vector<int64_t> at(k + 1, 0);
  std::vector<int64_t> indptr(static_cast<size_t>(n) + 1, 0);
  std::vector<char> seen(static_cast<size_t>(n), 0);
  for (size_t j = 0; j < k; ++j) {
    const int64_t x = fetched.ids[j], len = fetched.lengths[j];
    if (x < 0 || x >= n || local.rows.Contains(x) || seen[x] || len < 0) {
      return absl::InvalidArgumentError(absl::StrCat("fetched rows: row ", x, " (length ", len,
                                                     ") is outside [0, ", n, "), rank ", local.rank,
                                                     "'s own, repeated, or of negative length"));
    }
    seen[x] = 1;
    indptr[x + 1] = len;
    at[j + 1] = at[j] + len;
  }
  if (at[k] != static_cast<int64_t>(fetched.entries.size())) {
    return absl::InvalidArgumentError(absl::StrCat("fetched rows: lengths add up to ", at[k], " but ",
                                                   fetched.entries.size(), " entries were received"));
  }
  for (int64_t x = local.rows.begin; x < local.rows.end; ++x) indptr[x + 1] = static_cast<int64_t>(local.Row(x).size());
  for (int64_t x = 0; x < n; ++x) indptr[x + 1] += indptr[x];
  const DataType dtype = n < (int64_t{1} << 31) ? DataType::kInt32 : DataType::kInt64;
  KPS_ASSIGN_OR_RETURN(Tensor ptr_t, HostIndexTensor(indptr, DataType::kInt64));
  KPS_ASSIGN_OR_RETURN(Tensor idx_t, Tensor::Empty(Shape{indptr.back()}, dtype, DeviceType::kCpu));
  // A fetched entry outside [0, n), from a peer that disagrees on the graph.
  std::atomic<bool> bad{false};
  std::atomic<int64_t> bad_value{0};
  auto write = [&](auto* indices) -> absl::Status {
    using I = std::remove_pointer_t<decltype(indices)>;
    const int64_t own = local.rows.end - local.rows.begin;
    return ParallelFor(own + static_cast<int64_t>(k), threads, [&](int64_t lo, int64_t hi) -> absl::Status {
      for (int64_t r = lo; r < hi; ++r) {
        if (r < own) {
          const int64_t x = local.rows.begin + r;
          I* out = indices + indptr[x];
          for (int64_t v : local.Row(x)) *out++ = static_cast<I>(v);
        } else {
          const size_t j = static_cast<size_t>(r - own);
          I* out = indices + indptr[fetched.ids[j]];
          for (int64_t e = at[j]; e < at[j + 1]; ++e) {
            const int64_t w = fetched.entries[static_cast<size_t>(e)];
            if (w < 0 || w >= n) {
              bad_value.store(w);
              bad.store(true);
            }
            *out++ = static_cast<I>(w);
          }
        }
      }
      return absl::OkStatus();
    });
  };
  KPS_RETURN_IF_ERROR(dtype == DataType::kInt32 ? write(idx_t.data<int32_t>()) : write(idx_t.data<int64_t>()));
  if (bad.load()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a fetched row holds vertex ", bad_value.load(), ", outside [0, ", n, ")"));
  }
  return std::vector<Tensor>{ptr_t, idx_t};
}

absl::StatusOr<ExchangeResult> ExchangeRows(const RankPartition& local, const Partition& p, const CountPlan& plan,
                                            const HostAllToAll& all_to_all) {
  const size_t ranks = static_cast<size_t>(p.num_ranks);
  const int me = local.rank;
  const int ib = IndexBytes(local.index_dtype);
  if (plan.request_counts.size() != ranks) {
    return absl::InvalidArgumentError(absl::StrCat("the plan has ", plan.request_counts.size(), " request counts for ",
                                                   ranks, " ranks"));
  }
  const std::vector<int64_t> ones(ranks, 1);
  // 1. How many ids each rank asks of each other.
  KPS_ASSIGN_OR_RETURN(std::vector<int64_t> asked_counts,
                       all_to_all(plan.request_counts, ones, ones, DataType::kInt64));
  int64_t asked_total = 0;
  for (int64_t c : asked_counts) {
    if (c < 0) return absl::InvalidArgumentError(absl::StrCat("rank ", me, " was asked for ", c, " rows"));
    asked_total += c;
  }
  // 2. The ids.
  KPS_ASSIGN_OR_RETURN(std::vector<int64_t> asked,
                       all_to_all(plan.request_ids, plan.request_counts, asked_counts, local.index_dtype));
  if (static_cast<int64_t>(asked.size()) != asked_total) {
    return absl::InternalError(absl::StrCat("rank ", me, " received ", asked.size(), " ids, expected ", asked_total));
  }
  // 3. The lengths of the pieces this rank serves, by asking rank.
  ServedPieces served;
  std::vector<int64_t> served_entries(ranks, 0);
  size_t at = 0;
  for (size_t r = 0; r < ranks; ++r) {
    const size_t k = static_cast<size_t>(asked_counts[r]);
    KPS_ASSIGN_OR_RETURN(ServedPieces s,
                         ServePieces(local, absl::MakeConstSpan(asked).subspan(at, k), static_cast<int>(r)));
    at += k;
    for (int64_t len : s.lengths) served_entries[r] += len;
    served.lengths.insert(served.lengths.end(), s.lengths.begin(), s.lengths.end());
    served.entries.insert(served.entries.end(), s.entries.begin(), s.entries.end());
  }
  ExchangeResult out;
  FetchedRows& fetched = out.fetched;
  KPS_ASSIGN_OR_RETURN(fetched.lengths,
                       all_to_all(served.lengths, asked_counts, plan.request_counts, DataType::kInt64));
  if (fetched.lengths.size() != plan.request_ids.size()) {
    return absl::InternalError(absl::StrCat("rank ", me, " received ", fetched.lengths.size(), " lengths for ",
                                            plan.request_ids.size(), " rows asked"));
  }
  // 4. The pieces.
  std::vector<int64_t> fetched_entries(ranks, 0);
  at = 0;
  for (size_t r = 0; r < ranks; ++r) {
    for (int64_t i = 0; i < plan.request_counts[r]; ++i) {
      const int64_t len = fetched.lengths[at++];
      if (len < 0) return absl::InvalidArgumentError(absl::StrCat("rank ", r, " sent a piece of length ", len));
      fetched_entries[r] += len;
    }
  }
  KPS_ASSIGN_OR_RETURN(fetched.entries, all_to_all(served.entries, served_entries, fetched_entries, local.index_dtype));
  fetched.counts = plan.request_counts;
  fetched.ids = plan.request_ids;
  out.rows_served = SumOthers(asked_counts, me);
  out.bytes_sent = 8 * (p.num_ranks - 1) + ib * SumOthers(plan.request_counts, me) + 8 * out.rows_served +
                   ib * SumOthers(served_entries, me);
  out.bytes_received = 8 * (p.num_ranks - 1) + ib * SumOthers(asked_counts, me) +
                       8 * SumOthers(plan.request_counts, me) + ib * SumOthers(fetched_entries, me);
  return out;
}

// ---- the count on GPUs -----------------------------------------------------------------------

namespace {

// The host threads of options.host_threads (0: this machine's cores shared by its ranks).
int HostThreads(const DistributedCountOptions& o) {
  if (o.host_threads > 0) return o.host_threads;
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  int local_ranks = 1;
  const char* env = std::getenv("LOCAL_WORLD_SIZE");
  if (env != nullptr && (!absl::SimpleAtoi(env, &local_ranks) || local_ranks < 1)) local_ranks = 1;
  return std::max(1, cores / local_ranks);
}

// An all_to_all through the registered op on `stream`, waited for with the communicator's
// timeout (a peer that never joins is an error, not a hang).
absl::StatusOr<Tensor> AllToAll(const Tensor& x, const std::vector<int64_t>& send, const std::vector<int64_t>& recv,
                                const std::string& group, const Communicator& comm, const Stream& stream) {
  KPS_ASSIGN_OR_RETURN(Tensor out, Call("all_to_all")
                                       .Input("x", x)
                                       .Attr("input_split_sizes", send)
                                       .Attr("output_split_sizes", recv)
                                       .Attr("group", group)
                                       .OnStream(stream)
                                       .RunOne());
  KPS_RETURN_IF_ERROR(comm.Synchronize(stream));
  return out;
}

// Host values -> a CUDA tensor of `dtype` on `stream`.
absl::StatusOr<Tensor> ToDevice(const std::vector<int64_t>& v, DataType dtype, const Stream& stream) {
  KPS_ASSIGN_OR_RETURN(Tensor h, HostIndexTensor(v, dtype));
  return h.To(DeviceType::kCuda, stream);
}

// Events around one stretch of a stream, for GPU time.
class EventPair {
 public:
  EventPair() {
    cudaEventCreate(&a_);
    cudaEventCreate(&b_);
  }
  ~EventPair() {
    cudaEventDestroy(a_);
    cudaEventDestroy(b_);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  void Start(cudaStream_t s) { cudaEventRecord(a_, s); }
  void Stop(cudaStream_t s) {
    cudaEventRecord(b_, s);
    recorded_ = true;
  }
  // Milliseconds between the two (0 when never recorded); waits for the second.
  double Ms() const {
    if (!recorded_) return 0;
    cudaEventSynchronize(b_);
    float ms = 0;
    cudaEventElapsedTime(&ms, a_, b_);
    return ms;
  }

 private:
  cudaEvent_t a_ = nullptr, b_ = nullptr;
  bool recorded_ = false;
};

// Starts triangle_count on a CSR (roots [root_begin, root_end)) on `stream`: copies CPU tensors
// over (CUDA ones are used as they are) and launches; *count becomes the count's device tensor,
// left undefined when there is nothing to count.
absl::Status LaunchCount(const std::vector<Tensor>& csr, const DistributedCountOptions& o, const Stream& stream,
                         EventPair* timer, Tensor* count, int64_t root_begin = 0, int64_t root_end = -1) {
  if (csr[0].numel() <= 1 || csr[1].numel() == 0) return absl::OkStatus();
  Tensor ptr = csr[0], idx = csr[1];
  if (ptr.device() != DeviceType::kCuda) {
    KPS_ASSIGN_OR_RETURN(ptr, csr[0].To(DeviceType::kCuda, stream));
  }
  if (idx.device() != DeviceType::kCuda) {
    KPS_ASSIGN_OR_RETURN(idx, csr[1].To(DeviceType::kCuda, stream));
  }
  timer->Start(stream.cuda_stream());
  KPS_ASSIGN_OR_RETURN(*count, Call("triangle_count")
                                   .Input("indptr", ptr)
                                   .Input("indices", idx)
                                   .Attr("oriented", true)
                                   .Attr("root_begin", root_begin)
                                   .Attr("root_end", root_end)
                                   .Attr("check", o.check_csr)
                                   .OnStream(stream)
                                   .RunOne());
  timer->Stop(stream.cuda_stream());
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ReadCount(const Tensor& count, const Stream& stream) {
  if (!count.defined()) return 0;
  KPS_ASSIGN_OR_RETURN(std::vector<int64_t> v, count.ToVector<int64_t>(stream));
  return v.empty() ? 0 : v[0];
}

// ---- the 1-D count on the device (DistributedCountOptions::device_exchange) ----

// A device tensor's typed address; null when it holds nothing (an empty tensor may have no storage).
template <typename T>
T* DevicePtr(const Tensor& t) {
  return t.defined() && t.numel() > 0 ? t.data<T>() : nullptr;
}

// Word `at` of an int64 device tensor, as the kernels' atomics take it.
unsigned long long* Word(const Tensor& words, int64_t at) {
  return reinterpret_cast<unsigned long long*>(words.data<int64_t>() + at);
}

bool Faulted(int64_t word) { return static_cast<uint64_t>(word) != gpu::kNoFault; }

// `count` int64 words on the GPU, every byte `fill` (0: zeros; 0xff: each word gpu::kNoFault).
absl::StatusOr<Tensor> DeviceWords(int64_t count, int fill, const Stream& stream) {
  KPS_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(Shape{count}, DataType::kInt64, DeviceType::kCuda, stream));
  if (count > 0) {
    KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(t.raw_data(), fill, t.nbytes(), stream.cuda_stream()),
                             "cudaMemsetAsync");
  }
  return t;
}

// Element `pos` of an int32 or int64 device tensor, on the host (to name a bad value).
absl::StatusOr<int64_t> ReadAt(const Tensor& t, int64_t pos, const Stream& stream) {
  KPS_ASSIGN_OR_RETURN(Tensor one, t.Slice(0, pos, pos + 1));
  KPS_ASSIGN_OR_RETURN(std::vector<int64_t> v, ReadIndices(one, stream));
  return v[0];
}

// The rank whose block holds position `pos` of a sequence of per-rank blocks of counts[r] items.
int RankAt(const std::vector<int64_t>& counts, int64_t pos) {
  for (size_t r = 0; r < counts.size(); ++r) {
    if (pos < counts[r]) return static_cast<int>(r);
    pos -= counts[r];
  }
  return static_cast<int>(counts.size()) - 1;
}

int64_t Sum(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

// The exclusive running sum of an int64 device vector (the cumsum op): given count + 1 values
// ending in 0, the count starts followed by the total.
absl::StatusOr<Tensor> ExclusiveCumsum(const Tensor& x, const Stream& stream) {
  return Call("cumsum").Input("x", x).Attr("dim", int64_t{0}).Attr("exclusive", true).OnStream(stream).RunOne();
}

// The rank's block on the GPU: indptr (int64, as held) and the indices in the partition's
// index dtype, narrowed to int32 on `threads` host threads first (half the bytes to copy).
absl::StatusOr<std::pair<Tensor, Tensor>> BlockToDevice(const RankPartition& local, int threads,
                                                        const Stream& stream) {
  const int64_t rows = static_cast<int64_t>(local.indptr.size()), m = local.num_edges();
  KPS_ASSIGN_OR_RETURN(Tensor ptr, Tensor::Empty(Shape{rows}, DataType::kInt64, DeviceType::kCuda, stream));
  if (rows > 0) {
    KPS_RETURN_IF_ERROR(
        CopyBytes(ptr.raw_data(), DeviceType::kCuda, local.indptr.data(), DeviceType::kCpu, ptr.nbytes(), stream));
  }
  Tensor idx;
  if (local.index_dtype == DataType::kInt64) {
    KPS_ASSIGN_OR_RETURN(idx, Tensor::Empty(Shape{m}, DataType::kInt64, DeviceType::kCuda, stream));
    if (m > 0) {
      KPS_RETURN_IF_ERROR(
          CopyBytes(idx.raw_data(), DeviceType::kCuda, local.indices.data(), DeviceType::kCpu, idx.nbytes(), stream));
    }
  } else {
    KPS_ASSIGN_OR_RETURN(Tensor host, Tensor::Empty(Shape{m}, DataType::kInt32, DeviceType::kCpu));
    int32_t* out = m > 0 ? host.data<int32_t>() : nullptr;
    KPS_RETURN_IF_ERROR(ParallelFor(m, threads, [&](int64_t lo, int64_t hi) -> absl::Status {
      for (int64_t i = lo; i < hi; ++i) out[i] = static_cast<int32_t>(local.indices[static_cast<size_t>(i)]);
      return absl::OkStatus();
    }));
    KPS_ASSIGN_OR_RETURN(idx, host.To(DeviceType::kCuda, stream));
  }
  return std::make_pair(std::move(ptr), std::move(idx));
}

// The 1-D count of rank local.rank with everything after loading on its GPU: the host path's
// plan, exchange, serving and counted CSR (RangeCountCsr's, the same ids) as kernels
// (dist/triangle_cuda.cu) and registered ops (nonzero, cumsum, all_to_all, triangle_count),
// all on `stream`. The host reads back only P values a step (split sizes, per-rank sums) and
// the fault words through which the kernels report what a peer sent wrong. Fills the
// report's plan, exchange and assembly fields and launches the count (*timer, *count).
absl::Status CountOnDevice1D(const RankPartition& local, const Partition& p, const DistributedCountOptions& o,
                             const Communicator& comm, const Stream& stream, int threads,
                             DistributedCountReport* rep, EventPair* timer, Tensor* count) {
  const int ranks = p.num_ranks, me = local.rank;
  const int64_t n = p.num_vertices, begin = local.rows.begin, end = local.rows.end;
  const int64_t m = local.num_edges();
  const int ib = IndexBytes(local.index_dtype);
  KPS_RETURN_IF_ERROR(CheckBlockOf(local, p));
  if (local.indptr.front() != 0 || local.indptr.back() != m) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", me, "'s block: indptr runs from ", local.indptr.front(),
                                                   " to ", local.indptr.back(), ", not from 0 to its ", m,
                                                   " entries"));
  }

  // The plan: the heads of the block's entries marked (a byte per vertex), the marked rows of
  // other ranks listed by the nonzero op (ascending, so grouped by owner), counted per owner.
  absl::Time t = absl::Now();
  KPS_ASSIGN_OR_RETURN(auto block, BlockToDevice(local, threads, stream));
  const Tensor& ptr = block.first;
  const Tensor& idx = block.second;
  // [0] an entry outside [0, n), [1] a malformed row (fault words); [2, 3] the local and
  // remote roots; [4, 4 + P) the ids asked of each rank (the first exchange's input).
  KPS_ASSIGN_OR_RETURN(Tensor info, DeviceWords(4 + ranks, 0, stream));
  KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(info.raw_data(), 0xff, 2 * sizeof(int64_t), stream.cuda_stream()),
                           "cudaMemsetAsync");
  Tensor ids64;  // the ids to ask for, int64 (the nonzero op's)
  {
    KPS_ASSIGN_OR_RETURN(Tensor mark, Tensor::Empty(Shape{n}, DataType::kUInt8, DeviceType::kCuda, stream));
    uint8_t* marks = DevicePtr<uint8_t>(mark);
    if (n > 0) {
      KPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(marks, 0, static_cast<size_t>(n), stream.cuda_stream()),
                               "cudaMemsetAsync");
    }
    KPS_RETURN_IF_ERROR(gpu::MarkHeads(idx, n, marks, Word(info, 0), stream));
    // The rank's own rows are whole here (1-D): never asked for.
    if (end > begin) {
      KPS_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(marks + begin, 0, static_cast<size_t>(end - begin), stream.cuda_stream()),
          "cudaMemsetAsync");
    }
    KPS_RETURN_IF_ERROR(gpu::CountRootKinds(ptr, idx, begin, end, Word(info, 2), Word(info, 1), stream));
    KPS_ASSIGN_OR_RETURN(Tensor marked, Call("nonzero").Input("x", mark).OnStream(stream).RunOne());  // [k, 1]
    KPS_ASSIGN_OR_RETURN(ids64, marked.AsStrided(Shape{marked.shape()[0]}, {1}, marked.offset()));
  }
  const int64_t k = ids64.numel();
  if (ranks == 1 && k != 0) {
    return absl::InternalError(absl::StrCat("a world of 1 asks for ", k, " rows"));
  }
  Tensor ids = ids64;  // in the index dtype, as they travel
  if (local.index_dtype == DataType::kInt32) {
    KPS_ASSIGN_OR_RETURN(ids, Tensor::Empty(Shape{k}, DataType::kInt32, DeviceType::kCuda, stream));
    KPS_RETURN_IF_ERROR(gpu::NarrowToInt32(DevicePtr<int64_t>(ids64), k, DevicePtr<int32_t>(ids), stream));
  }
  KPS_ASSIGN_OR_RETURN(Tensor splits_host, Tensor::FromVector(p.row_splits, Shape{ranks + 1}));
  KPS_ASSIGN_OR_RETURN(Tensor splits, splits_host.To(DeviceType::kCuda, stream));
  KPS_RETURN_IF_ERROR(gpu::CountPerOwner(DevicePtr<int64_t>(ids64), k, splits.data<int64_t>(), ranks,
                                         info.data<int64_t>() + 4, stream));
  KPS_ASSIGN_OR_RETURN(const std::vector<int64_t> plan_info, ReadIndices(info, stream));
  if (Faulted(plan_info[0])) {
    KPS_ASSIGN_OR_RETURN(const int64_t v, ReadAt(idx, plan_info[0], stream));
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", me, "'s block names vertex ", v, ", outside [0, ", n, ")"));
  }
  if (Faulted(plan_info[1])) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", me, "'s block: row ", begin + plan_info[1],
                                                   " has an indptr range outside its entries or decreasing"));
  }
  rep->local_roots = plan_info[2];
  rep->remote_roots = plan_info[3];
  const std::vector<int64_t> request_counts(plan_info.begin() + 4, plan_info.end());
  rep->rows_fetched = k;
  rep->plan_ms = Ms(t);

  // The exchange (skipped in a world of 1, which needs no rows from anyone): the host path's
  // four all_to_all calls, on device tensors.
  t = absl::Now();
  std::vector<int64_t> fetched_entries(static_cast<size_t>(ranks), 0);
  Tensor fetched, fetched_offsets;  // the pieces received, and where each row's starts [k + 1]
  if (ranks > 1) {
    const std::vector<int64_t> ones(static_cast<size_t>(ranks), 1);
    // 1. How many ids each rank asks of each other (P values to the host: the split sizes).
    KPS_ASSIGN_OR_RETURN(const Tensor request_counts_dev, info.Slice(0, 4, 4 + ranks));
    KPS_ASSIGN_OR_RETURN(const Tensor asked_counts_dev,
                         AllToAll(request_counts_dev, ones, ones, o.group, comm, stream));
    KPS_ASSIGN_OR_RETURN(const std::vector<int64_t> asked_counts, ReadIndices(asked_counts_dev, stream));
    for (int64_t c : asked_counts) {
      if (c < 0) return absl::InvalidArgumentError(absl::StrCat("rank ", me, " was asked for ", c, " rows"));
    }
    // 2. The ids.
    KPS_ASSIGN_OR_RETURN(const Tensor asked, AllToAll(ids, request_counts, asked_counts, o.group, comm, stream));
    const int64_t num_asked = asked.numel();
    // 3. Serving: the asked rows' lengths (checked: an id of another rank's rows is refused),
    // their offsets, the entries served to each rank (P values to the host), the pieces.
    KPS_ASSIGN_OR_RETURN(Tensor lengths,
                         Tensor::Empty(Shape{num_asked + 1}, DataType::kInt64, DeviceType::kCuda, stream));
    KPS_ASSIGN_OR_RETURN(Tensor serve_info, DeviceWords(1 + ranks, 0xff, stream));  // [0] fault, then sums
    KPS_RETURN_IF_ERROR(
        gpu::AskedRowLengths(asked, ptr, begin, end, lengths.data<int64_t>(), Word(serve_info, 0), stream));
    KPS_ASSIGN_OR_RETURN(const Tensor served_offsets, ExclusiveCumsum(lengths, stream));
    KPS_RETURN_IF_ERROR(gpu::SumsPerRank(served_offsets.data<int64_t>(), asked_counts_dev.data<int64_t>(), ranks,
                                         serve_info.data<int64_t>() + 1, stream));
    KPS_ASSIGN_OR_RETURN(const std::vector<int64_t> served_info, ReadIndices(serve_info, stream));
    if (Faulted(served_info[0])) {
      KPS_ASSIGN_OR_RETURN(const int64_t x, ReadAt(asked, served_info[0], stream));
      return absl::InvalidArgumentError(absl::StrCat("rank ", RankAt(asked_counts, served_info[0]), " asked rank ", me,
                                                     " for row ", x, ", outside its rows [", begin, ", ", end,
                                                     "): the ranks disagree on the partition"));
    }
    const std::vector<int64_t> served_entries(served_info.begin() + 1, served_info.end());
    KPS_ASSIGN_OR_RETURN(
        const Tensor served,
        Tensor::Empty(Shape{Sum(served_entries)}, local.index_dtype, DeviceType::kCuda, stream));
    KPS_RETURN_IF_ERROR(
        gpu::GatherAskedRows(asked, ptr, idx, begin, end, served_offsets.data<int64_t>(), served, stream));
    KPS_ASSIGN_OR_RETURN(const Tensor served_lengths, lengths.Slice(0, 0, num_asked));
    KPS_ASSIGN_OR_RETURN(const Tensor fetched_lengths,
                         AllToAll(served_lengths, asked_counts, request_counts, o.group, comm, stream));
    // 4. The pieces: the lengths received checked (a row has at most n - 1 entries), their
    // offsets, the entries expected from each rank (P values to the host).
    KPS_ASSIGN_OR_RETURN(Tensor checked, Tensor::Empty(Shape{k + 1}, DataType::kInt64, DeviceType::kCuda, stream));
    KPS_ASSIGN_OR_RETURN(Tensor fetch_info, DeviceWords(1 + ranks, 0xff, stream));  // [0] fault, then sums
    KPS_RETURN_IF_ERROR(gpu::CheckedLengths(DevicePtr<int64_t>(fetched_lengths), k, n, checked.data<int64_t>(),
                                            Word(fetch_info, 0), stream));
    KPS_ASSIGN_OR_RETURN(fetched_offsets, ExclusiveCumsum(checked, stream));
    KPS_RETURN_IF_ERROR(gpu::SumsPerRank(fetched_offsets.data<int64_t>(), request_counts_dev.data<int64_t>(), ranks,
                                         fetch_info.data<int64_t>() + 1, stream));
    KPS_ASSIGN_OR_RETURN(const std::vector<int64_t> fetched_info, ReadIndices(fetch_info, stream));
    if (Faulted(fetched_info[0])) {
      const int64_t j = fetched_info[0];
      KPS_ASSIGN_OR_RETURN(const int64_t len, ReadAt(fetched_lengths, j, stream));
      KPS_ASSIGN_OR_RETURN(const int64_t x, ReadAt(ids64, j, stream));
      return absl::InvalidArgumentError(absl::StrCat("rank ", RankAt(request_counts, j), " sent rank ", me, " row ",
                                                     x, " with length ", len, ", outside [0, ", n - 1, "]"));
    }
    fetched_entries.assign(fetched_info.begin() + 1, fetched_info.end());
    KPS_ASSIGN_OR_RETURN(fetched, AllToAll(served, served_entries, fetched_entries, o.group, comm, stream));
    rep->rows_served = SumOthers(asked_counts, me);
    rep->bytes_sent = 8 * (ranks - 1) + ib * SumOthers(request_counts, me) + 8 * rep->rows_served +
                      ib * SumOthers(served_entries, me);
    rep->bytes_received = 8 * (ranks - 1) + ib * SumOthers(asked_counts, me) + 8 * SumOthers(request_counts, me) +
                          ib * SumOthers(fetched_entries, me);
  }
  rep->exchange_ms = Ms(t);

  // The counted CSR over [0, n): the row lengths (the block's and the fetched ones) scattered,
  // the cumsum op for indptr, then the rows copied in, a warp each.
  t = absl::Now();
  KPS_ASSIGN_OR_RETURN(Tensor row_lengths, DeviceWords(n + 1, 0, stream));
  KPS_RETURN_IF_ERROR(gpu::ScatterRowLengths(ptr, begin, DevicePtr<int64_t>(ids64),
                                             DevicePtr<int64_t>(fetched_offsets), k, row_lengths.data<int64_t>(),
                                             stream));
  KPS_ASSIGN_OR_RETURN(const Tensor indptr, ExclusiveCumsum(row_lengths, stream));
  row_lengths = Tensor();
  const DataType dtype = n < (int64_t{1} << 31) ? DataType::kInt32 : DataType::kInt64;
  KPS_ASSIGN_OR_RETURN(const Tensor indices,
                       Tensor::Empty(Shape{m + Sum(fetched_entries)}, dtype, DeviceType::kCuda, stream));
  KPS_ASSIGN_OR_RETURN(Tensor fault, DeviceWords(1, 0xff, stream));
  KPS_RETURN_IF_ERROR(gpu::AssembleRows(ptr, idx, begin, DevicePtr<int64_t>(ids64),
                                        DevicePtr<int64_t>(fetched_offsets), fetched, k, indptr.data<int64_t>(), n,
                                        indices, Word(fault, 0), stream));
  KPS_ASSIGN_OR_RETURN(const std::vector<int64_t> assembled, ReadIndices(fault, stream));
  if (Faulted(assembled[0])) {
    KPS_ASSIGN_OR_RETURN(const int64_t w, ReadAt(fetched, assembled[0], stream));
    return absl::InvalidArgumentError(absl::StrCat("rank ", RankAt(fetched_entries, assembled[0]), " sent rank ", me,
                                                   " a row holding vertex ", w, ", outside [0, ", n, ")"));
  }
  rep->layered_entries = indices.numel();
  KPS_RETURN_IF_ERROR(LaunchCount({indptr, indices}, o, stream, timer, count, begin, end));
  rep->assemble_ms = Ms(t);
  return absl::OkStatus();
}

// The fields of a report as doubles (exact: every count is far below 2^53), for all_gather.
std::vector<double> Pack(const DistributedCountReport& r) {
  return {static_cast<double>(r.rank),        static_cast<double>(r.num_ranks),
          static_cast<double>(r.triangles),   static_cast<double>(r.rank_triangles),
          static_cast<double>(r.vertices),    static_cast<double>(r.edges),
          static_cast<double>(r.local_roots), static_cast<double>(r.remote_roots),
          static_cast<double>(r.rows_fetched), static_cast<double>(r.rows_served),
          static_cast<double>(r.bytes_sent),  static_cast<double>(r.bytes_received),
          static_cast<double>(r.layered_entries), r.load_ms,
          r.plan_ms, r.exchange_ms, r.assemble_ms, r.count_ms, r.count_local_ms, r.count_remote_ms,
          r.reduce_ms, r.total_ms};
}

DistributedCountReport Unpack(const double* d) {
  DistributedCountReport r;
  int k = 0;
  auto i64 = [&] { return static_cast<int64_t>(d[k++]); };
  r.rank = static_cast<int>(i64());
  r.num_ranks = static_cast<int>(i64());
  r.triangles = i64();
  r.rank_triangles = i64();
  r.vertices = i64();
  r.edges = i64();
  r.local_roots = i64();
  r.remote_roots = i64();
  r.rows_fetched = i64();
  r.rows_served = i64();
  r.bytes_sent = i64();
  r.bytes_received = i64();
  r.layered_entries = i64();
  for (double* f : {&r.load_ms, &r.plan_ms, &r.exchange_ms, &r.assemble_ms, &r.count_ms, &r.count_local_ms,
                    &r.count_remote_ms, &r.reduce_ms, &r.total_ms}) {
    *f = d[k++];
  }
  return r;
}

}  // namespace

absl::StatusOr<DistributedCountReport> CountTrianglesDistributed(const RankPartition& local, const Partition& p,
                                                                 const DistributedCountOptions& o) {
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Communicator> comm, GetGroup(o.group));
  if (comm->size() != p.num_ranks || comm->rank() != local.rank) {
    return absl::FailedPreconditionError(
        absl::StrCat("the partition has ", p.num_ranks, " ranks and this block is rank ", local.rank, ", but group '",
                     o.group, "' is ", comm->Describe(), ": run one process per block (kps launch --nproc ",
                     p.num_ranks, ")"));
  }
  KPS_CUDA_RETURN_IF_ERROR(cudaSetDevice(comm->cuda_device()), "cudaSetDevice");
  const absl::Time start = absl::Now();
  const int threads = HostThreads(o);
  DistributedCountReport rep;
  rep.rank = local.rank;
  rep.num_ranks = p.num_ranks;
  rep.vertices = p.num_vertices;
  rep.edges = local.num_edges();
  // Two non-blocking streams: the count of the local roots runs on one while the exchange
  // waits on the other (neither waits for the legacy default stream).
  KPS_ASSIGN_OR_RETURN(OwnedCudaStream count_owned, OwnedCudaStream::Create());
  KPS_ASSIGN_OR_RETURN(OwnedCudaStream comm_owned, OwnedCudaStream::Create());
  const Stream count_stream = count_owned.stream(), comm_stream = comm_owned.stream();

  const bool one_d = p.grid_cols == 1;
  EventPair local_timer, remote_timer;
  Tensor local_count, remote_count;
  absl::Time t;
  // device_exchange (1-D): every step on comm_stream, the count too, so that the device tensors
  // the steps free are reused only after the count has read them.
  const bool on_device = one_d && o.device_exchange;
  if (on_device) {
    KPS_RETURN_IF_ERROR(CountOnDevice1D(local, p, o, *comm, comm_stream, threads, &rep, &remote_timer, &remote_count));
  } else {
    t = absl::Now();
    KPS_ASSIGN_OR_RETURN(CountPlan plan, PlanCount(local, p));
    rep.plan_ms = Ms(t);
    rep.local_roots = static_cast<int64_t>(plan.local_roots.size());
    rep.remote_roots = static_cast<int64_t>(plan.remote_roots.size());
    rep.rows_fetched = static_cast<int64_t>(plan.request_ids.size());

    // 2-D: the local roots, counted while the exchange runs.
    if (!one_d) {
      t = absl::Now();
      KPS_ASSIGN_OR_RETURN(std::vector<Tensor> local_csr,
                           LayeredCountCsr(local, p, plan.local_roots, FetchedRows{}, threads, Heads::kLocal));
      rep.layered_entries += local_csr[1].numel();
      KPS_RETURN_IF_ERROR(LaunchCount(local_csr, o, count_stream, &local_timer, &local_count));
      local_csr.clear();
      rep.assemble_ms += Ms(t);
      if (!o.overlap) KPS_RETURN_IF_ERROR(count_stream.Synchronize());
    }

    // The exchange (skipped in a world of 1, which needs no rows from anyone).
    t = absl::Now();
    ExchangeResult ex;
    if (p.num_ranks > 1) {
      // Each step: the values to the GPU, the all_to_all op, the result back to the host.
      const HostAllToAll device_all_to_all =
          [&](const std::vector<int64_t>& send, const std::vector<int64_t>& send_splits,
              const std::vector<int64_t>& recv_splits, DataType dtype) -> absl::StatusOr<std::vector<int64_t>> {
        KPS_ASSIGN_OR_RETURN(Tensor x, ToDevice(send, dtype, comm_stream));
        KPS_ASSIGN_OR_RETURN(Tensor y, AllToAll(x, send_splits, recv_splits, o.group, *comm, comm_stream));
        return ReadIndices(y, comm_stream);
      };
      KPS_ASSIGN_OR_RETURN(ex, ExchangeRows(local, p, plan, device_all_to_all));
    }
    const FetchedRows& fetched = ex.fetched;
    rep.rows_served = ex.rows_served;
    rep.bytes_sent = ex.bytes_sent;
    rep.bytes_received = ex.bytes_received;
    rep.exchange_ms = Ms(t);

    // 2-D: the remote roots, with the fetched rows; 1-D: every root of the rank's range, over
    // its own rows and the fetched ones.
    t = absl::Now();
    KPS_ASSIGN_OR_RETURN(std::vector<Tensor> remote_csr,
                         one_d ? RangeCountCsr(local, p, fetched, threads)
                               : LayeredCountCsr(local, p, plan.remote_roots, fetched, threads, Heads::kRemote));
    rep.layered_entries += remote_csr[1].numel();
    KPS_RETURN_IF_ERROR(LaunchCount(remote_csr, o, count_stream, &remote_timer, &remote_count,
                                    one_d ? local.rows.begin : 0, one_d ? local.rows.end : -1));
    remote_csr.clear();
    rep.assemble_ms += Ms(t);
  }
  KPS_ASSIGN_OR_RETURN(int64_t a, ReadCount(local_count, count_stream));
  KPS_ASSIGN_OR_RETURN(int64_t b, ReadCount(remote_count, on_device ? comm_stream : count_stream));
  rep.rank_triangles = a + b;
  rep.count_local_ms = local_timer.Ms();
  rep.count_remote_ms = remote_timer.Ms();
  rep.count_ms = rep.count_local_ms + rep.count_remote_ms;

  // The shares, summed over the group.
  t = absl::Now();
  KPS_ASSIGN_OR_RETURN(Tensor share, ToDevice({rep.rank_triangles}, DataType::kInt64, comm_stream));
  KPS_ASSIGN_OR_RETURN(Tensor total,
                       Call("all_reduce").Input("x", share).Attr("op", "sum").Attr("group", o.group)
                           .OnStream(comm_stream).RunOne());
  KPS_RETURN_IF_ERROR(comm->Synchronize(comm_stream));
  KPS_ASSIGN_OR_RETURN(int64_t sum, ReadCount(total, comm_stream));
  rep.triangles = sum;
  rep.reduce_ms = Ms(t);
  rep.total_ms = Ms(start);
  return rep;
}

absl::StatusOr<DistributedCountReport> CountTrianglesDistributed(const std::string& dir,
                                                                 const DistributedCountOptions& o) {
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Communicator> comm, GetGroup(o.group));
  KPS_ASSIGN_OR_RETURN(Manifest m, ReadManifest(dir));
  if (m.partition.num_ranks != comm->size()) {
    return absl::FailedPreconditionError(absl::StrCat("the partition in ", dir, " has ", m.partition.num_ranks,
                                                      " ranks but group '", o.group, "' has ", comm->size(),
                                                      ": launch one process per rank (kps launch --nproc ",
                                                      m.partition.num_ranks, ")"));
  }
  const absl::Time t = absl::Now();
  KPS_ASSIGN_OR_RETURN(RankPartition local, LoadPartition(dir, comm->rank()));
  const double load_ms = Ms(t);
  KPS_ASSIGN_OR_RETURN(DistributedCountReport rep, CountTrianglesDistributed(local, m.partition, o));
  rep.load_ms = load_ms;
  return rep;
}

absl::StatusOr<std::vector<DistributedCountReport>> GatherReports(const DistributedCountReport& mine,
                                                                  const std::string& group) {
  KPS_ASSIGN_OR_RETURN(std::shared_ptr<Communicator> comm, GetGroup(group));
  KPS_CUDA_RETURN_IF_ERROR(cudaSetDevice(comm->cuda_device()), "cudaSetDevice");
  KPS_ASSIGN_OR_RETURN(OwnedCudaStream owned, OwnedCudaStream::Create());
  const Stream stream = owned.stream();
  const std::vector<double> packed = Pack(mine);
  const int64_t k = static_cast<int64_t>(packed.size());
  KPS_ASSIGN_OR_RETURN(Tensor host, Tensor::FromVector(packed, Shape{k}));
  KPS_ASSIGN_OR_RETURN(Tensor dev, host.To(DeviceType::kCuda, stream));
  KPS_ASSIGN_OR_RETURN(Tensor all, Call("all_gather").Input("x", dev).Attr("group", group).OnStream(stream).RunOne());
  KPS_RETURN_IF_ERROR(comm->Synchronize(stream));
  KPS_ASSIGN_OR_RETURN(std::vector<double> values, all.ToVector<double>(stream));
  std::vector<DistributedCountReport> out;
  for (int r = 0; r < comm->size(); ++r) out.push_back(Unpack(values.data() + r * k));
  return out;
}

}  // namespace dist
}  // namespace kps
