// Binary functors: (a, b) -> a op b, for host and device.
#pragma once

#include "functors/macros.h"
#include "functors/mp_type.h"

namespace kps {

// a + b; 16-bit floats add in float, integers wrap on overflow.
template <typename T>
struct AddFunctor {
  KPS_FUNCTOR_HD T operator()(T a, T b) const {
    using W = WrapType<MPType<T>>;
    return static_cast<T>(static_cast<W>(static_cast<MPType<T>>(a)) +
                          static_cast<W>(static_cast<MPType<T>>(b)));
  }
};

// a + alpha * b (torch.add's alpha); 16-bit floats compute in float, integers wrap.
template <typename T>
struct AddScaledFunctor {
  using MP = MPType<T>;
  MP alpha;
  KPS_FUNCTOR_HD explicit AddScaledFunctor(MP a) : alpha(a) {}
  KPS_FUNCTOR_HD T operator()(T a, T b) const {
    using W = WrapType<MP>;
    return static_cast<T>(static_cast<W>(static_cast<MP>(a)) +
                          static_cast<W>(alpha) * static_cast<W>(static_cast<MP>(b)));
  }
};

// a * b; 16-bit floats multiply in float, integers wrap on overflow.
template <typename T>
struct MulFunctor {
  KPS_FUNCTOR_HD T operator()(T a, T b) const {
    using W = WrapType<MPType<T>>;
    return static_cast<T>(static_cast<W>(static_cast<MPType<T>>(a)) *
                          static_cast<W>(static_cast<MPType<T>>(b)));
  }
};

}  // namespace kps
