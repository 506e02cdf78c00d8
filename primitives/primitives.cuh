// Umbrella header of the KPS block-level primitive API.
#pragma once

#include "primitives/compute.cuh"      // IWYU pragma: export
#include "primitives/cumsum.cuh"       // IWYU pragma: export
#include "primitives/datamover.cuh"    // IWYU pragma: export
#include "primitives/details/macros.cuh"       // IWYU pragma: export
#include "primitives/details/vector_type.cuh"  // IWYU pragma: export
#include "primitives/radix.cuh"        // IWYU pragma: export
#include "primitives/reduce.cuh"       // IWYU pragma: export
#include "primitives/sort.cuh"         // IWYU pragma: export
