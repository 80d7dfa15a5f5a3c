#include "util/kernel.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <atomic>
#include <optional>
#include <string>

#include "compactor/env.h"
#include "compactor/kernel.h"

namespace compactor::internal {

// The kernel objects of the portable build (CMakeLists.txt defines
// COMPACTOR_KERNEL_<TARGET> for each one it links). Their entry points have C
// linkage so that one pattern, compactor_kernel_*, keeps them visible.
#define COMPACTOR_DECLARE_KERNEL(t)                                                    \
  extern "C" void compactor_kernel_##t##_session_parse_chunk(void* impl, void* chunk); \
  extern "C" bool compactor_kernel_##t##_estimate_fast(std::string_view, int64_t*);    \
  extern "C" void compactor_kernel_##t##_scan_json_string_body(std::string_view,       \
                                                               JsonStringBodyScan*);   \
  extern "C" const MessageObserver* compactor_kernel_##t##_estimate_observer();
#define COMPACTOR_KERNEL_TABLE(t)                                                             \
  const KernelTable k_##t = {                                                                 \
      #t, &compactor_kernel_##t##_session_parse_chunk, &compactor_kernel_##t##_estimate_fast, \
      &compactor_kernel_##t##_scan_json_string_body, &compactor_kernel_##t##_estimate_observer};

#ifdef COMPACTOR_KERNEL_ICELAKE
COMPACTOR_DECLARE_KERNEL(icelake)
#endif
#ifdef COMPACTOR_KERNEL_HASWELL
COMPACTOR_DECLARE_KERNEL(haswell)
#endif

namespace {

#ifdef COMPACTOR_KERNEL_ICELAKE
COMPACTOR_KERNEL_TABLE(icelake)
#endif
#ifdef COMPACTOR_KERNEL_HASWELL
COMPACTOR_KERNEL_TABLE(haswell)
#endif
#ifdef COMPACTOR_NATIVE_BUILD
// The whole library is compiled for the build machine: nothing to choose.
const KernelTable kBaseline = {"native", nullptr, nullptr, nullptr, nullptr};
#else
const KernelTable kBaseline = {"fallback", nullptr, nullptr, nullptr, nullptr};
#endif

// Whether the CPU (and the OS, which must save the wider registers) runs the
// instructions a kernel is compiled for: exactly the -m flags CMakeLists.txt
// gives it, so the compiler may use any of them.
#if defined(__x86_64__)
bool CpuRunsHaswell() {
  __builtin_cpu_init();
  // LZCNT (AMD's ABM) has no name for __builtin_cpu_supports in every
  // compiler: CPUID leaf 0x80000001, ECX bit 5.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool lzcnt = __get_cpuid(0x80000001, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 5)) != 0;
  return lzcnt && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
         __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("pclmul") &&
         __builtin_cpu_supports("popcnt");
}

bool CpuRunsIcelake() {
  return CpuRunsHaswell() && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vbmi2");
}
#else
bool CpuRunsHaswell() { return false; }
bool CpuRunsIcelake() { return false; }
#endif

const KernelTable* Find(std::string_view name) {
  for (const KernelTable* k : CompiledKernels())
    if (name == k->name) return k;
  return nullptr;
}

const KernelTable* Initial() {
  std::optional<std::string> forced = Env::Default()->GetEnvVar("COMPACTOR_FORCE_KERNEL");
  if (forced && !forced->empty()) {
    // An unknown or unsupported name falls back to the automatic choice;
    // `compactor --version` shows which kernel runs.
    const KernelTable* k = Find(*forced);
    if (k != nullptr && KernelSupported(*k)) return k;
  }
  for (const KernelTable* k : CompiledKernels())
    if (KernelSupported(*k)) return k;
  return &kBaseline;
}

std::atomic<const KernelTable*>& Active() {
  static std::atomic<const KernelTable*> active{Initial()};
  return active;
}

}  // namespace

std::vector<const KernelTable*> CompiledKernels() {
  std::vector<const KernelTable*> out;
#ifdef COMPACTOR_KERNEL_ICELAKE
  out.push_back(&k_icelake);
#endif
#ifdef COMPACTOR_KERNEL_HASWELL
  out.push_back(&k_haswell);
#endif
  out.push_back(&kBaseline);
  return out;
}

bool KernelSupported(const KernelTable& kernel) {
  std::string_view name = kernel.name;
  if (name == "icelake") return CpuRunsIcelake();
  if (name == "haswell") return CpuRunsHaswell();
  return true;  // the baseline runs wherever the library does
}

const KernelTable& ActiveKernel() { return *Active().load(std::memory_order_acquire); }

}  // namespace compactor::internal

namespace compactor {

std::string_view ActiveKernelName() { return internal::ActiveKernel().name; }

std::vector<std::string_view> AvailableKernels() {
  std::vector<std::string_view> out;
  for (const internal::KernelTable* k : internal::CompiledKernels())
    if (internal::KernelSupported(*k)) out.push_back(k->name);
  return out;
}

Status SelectKernel(std::string_view name) {
  for (const internal::KernelTable* k : internal::CompiledKernels()) {
    if (name != k->name) continue;
    if (!internal::KernelSupported(*k))
      return Status::InvalidArgument("this CPU cannot run the " + std::string(name) + " kernel");
    internal::Active().store(k, std::memory_order_release);
    return Status::Ok();
  }
  return Status::InvalidArgument("no kernel named " + std::string(name) + " in this build");
}

}  // namespace compactor
