// Which CPU kernel the library runs (docs/kernels.md).
//
// The hot parsing code (session indexing, the message estimate, JSON string
// scans) is built for several x86-64 targets in the portable build and one of
// them is chosen when it is first needed: the best the CPU supports, or the one
// named by the environment variable COMPACTOR_FORCE_KERNEL (read through
// Env::Default()) when this CPU supports it. Every kernel gives the same
// results; only speed differs.
#ifndef COMPACTOR_INCLUDE_COMPACTOR_KERNEL_H_
#define COMPACTOR_INCLUDE_COMPACTOR_KERNEL_H_

#include <string_view>
#include <vector>

#include "compactor/status.h"

namespace compactor {

// Name of the kernel in use: "icelake" (AVX-512), "haswell" (AVX2) or
// "fallback" (baseline x86-64) in the portable build; "native" in a build
// with COMPACTOR_NATIVE=ON, which has no other. Thread-safe.
std::string_view ActiveKernelName();

// The kernels of this build that this CPU can run, best first. Thread-safe.
std::vector<std::string_view> AvailableKernels();

// Makes `name` the kernel in use from now on (tests and benchmarks compare
// them). kInvalidArgument when this build has no such kernel or the CPU
// cannot run it; the kernel in use is then unchanged. Thread-safe, but calls
// already running finish on the kernel they started with.
Status SelectKernel(std::string_view name);

}  // namespace compactor

#endif  // COMPACTOR_INCLUDE_COMPACTOR_KERNEL_H_
