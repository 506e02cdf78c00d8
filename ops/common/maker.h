// The combiner (or functor) an op runs, from a type that is either the combiner itself or
// a Maker that builds it from the call: the reduce and scan ops' registration lines take
// either (KPS_REDUCE_OP, KPS_SCAN_OP).
#pragma once

#include <type_traits>
#include <utility>

namespace kps {
namespace internal {

template <class M, class Args, class = void>
inline constexpr bool kIsMakerFor = false;
template <class M, class... A>
inline constexpr bool kIsMakerFor<M, void(A...), std::void_t<decltype(M::Make(std::declval<const A&>()...))>> =
    true;

// M::Make(args...) when M has such a static Make (a Maker), else M{} (the combiner).
template <class M, class... A>
auto MakeOrConstruct(const A&... args) {
  if constexpr (kIsMakerFor<M, void(A...)>) {
    return M::Make(args...);
  } else {
    return M{};
  }
}

}  // namespace internal
}  // namespace kps
