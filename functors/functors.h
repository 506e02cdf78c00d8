// Umbrella header of the KPS functors: OpFunc objects for ElementwiseUnary / Binary /
// Ternary and Reduce, usable in CUDA kernels and in CPU kernels compiled by any C++17
// compiler (KPS_FUNCTOR_HD).
//
//   unary.h       Identity, Inverse (-x), Square, Divide (x / n), Abs, Sign, Reciprocal,
//                 Sqrt, Rsqrt, Exp, Log, Sin, Cos, Floor, Ceil, Round, Clip
//   activation.h  Relu, Sigmoid, Silu, Tanh, Gelu (erf), GeluTanh
//   binary.h      Add*, AddScaled, Sub, Mul*, Div, FloorDiv, Pow, Max* / Min* (NaN
//                 propagating; Maximum / Minimum are the same functors)
//   compare.h     Equal, NotEqual, LessThan, LessEqual, GreaterThan, GreaterEqual (bool)
//   logical.h     LogicalAnd*, LogicalOr*, LogicalXor, LogicalNot (bool)
//   ternary.h     Where, ClipTensor, Addcmul
//   cast.h        Cast<In, Out> (saturating float -> int, NaN -> 0)
//   apply2.h      Packed2Type, HasApply2 (the half2 / bfloat162 path)
//   combiner.h    the combiner concept of reductions and scans, CombinerAccumulate/
//                 Make/Finalize and CombinerIn/Acc/Out
//   (* reduce functors, with initial(): combiners as they stand)
//
// Each is XxxFunctor<T> in namespace kps; 16-bit floats compute in float (mp_type.h).
#pragma once

#include "functors/activation.h"  // IWYU pragma: export
#include "functors/apply2.h"      // IWYU pragma: export
#include "functors/binary.h"      // IWYU pragma: export
#include "functors/cast.h"        // IWYU pragma: export
#include "functors/combiner.h"    // IWYU pragma: export
#include "functors/compare.h"     // IWYU pragma: export
#include "functors/logical.h"     // IWYU pragma: export
#include "functors/mp_type.h"     // IWYU pragma: export
#include "functors/ternary.h"     // IWYU pragma: export
#include "functors/unary.h"       // IWYU pragma: export
