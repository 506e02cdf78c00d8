// A name -> object map that lookups read without a lock while registrations add to it.
//
// Ops and kernels may be registered at any time (a plugin opened with dlopen registers
// while other threads call ops), and the eager call path looks names up on every call.
// Entries are only ever added, never moved or freed, so a reader holding a pointer from
// Find can keep it; a writer publishes a fully built node with one release store.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"

namespace kps {
namespace internal {

template <typename V>
class AppendOnlyNameMap {
 public:
  AppendOnlyNameMap() {
    for (auto& b : buckets_) b.store(nullptr, std::memory_order_relaxed);
  }
  AppendOnlyNameMap(const AppendOnlyNameMap&) = delete;
  AppendOnlyNameMap& operator=(const AppendOnlyNameMap&) = delete;
  ~AppendOnlyNameMap() {
    const Node* n = all_.load(std::memory_order_relaxed);
    while (n != nullptr) {
      const Node* next = n->all_next;
      delete n;
      n = next;
    }
  }

  // Lock-free; nullptr when absent.
  V* Find(absl::string_view name) const {
    for (const Node* n = buckets_[Bucket(name)].load(std::memory_order_acquire); n != nullptr;
         n = n->bucket_next) {
      if (n->name == name) return n->value.get();
    }
    return nullptr;
  }

  // Adds `value` under `name` unless the name is taken (then returns the present value
  // and drops `value`). Writers must be serialized by the caller; readers need not be.
  std::pair<V*, bool> Insert(std::string name, std::unique_ptr<V> value) {
    if (V* present = Find(name)) return {present, false};
    const size_t b = Bucket(name);
    Node* n = new Node{std::move(name), std::move(value), buckets_[b].load(std::memory_order_relaxed),
                       all_.load(std::memory_order_relaxed)};
    buckets_[b].store(n, std::memory_order_release);
    all_.store(n, std::memory_order_release);
    size_.fetch_add(1, std::memory_order_release);
    return {n->value.get(), true};
  }

  // Calls f(name, value) for every entry, newest first; lock-free.
  template <typename F>
  void ForEach(F f) const {
    for (const Node* n = all_.load(std::memory_order_acquire); n != nullptr; n = n->all_next) {
      f(n->name, n->value.get());
    }
  }

  size_t size() const { return size_.load(std::memory_order_acquire); }

 private:
  // 4096 heads: chains stay a node or two long for a few thousand names.
  static constexpr size_t kBuckets = 4096;
  struct Node {
    const std::string name;
    const std::unique_ptr<V> value;
    const Node* const bucket_next;
    const Node* const all_next;
  };
  static size_t Bucket(absl::string_view name) { return absl::Hash<absl::string_view>{}(name) % kBuckets; }

  std::atomic<const Node*> buckets_[kBuckets];
  std::atomic<const Node*> all_{nullptr};
  std::atomic<size_t> size_{0};
};

}  // namespace internal
}  // namespace kps
