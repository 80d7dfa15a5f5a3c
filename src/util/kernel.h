// CPU kernels: the entry points of the code compiled once per x86-64 target
// (docs/kernels.md).
//
// simdjson's On-Demand API is compiled into our own translation units, for
// whatever target they are compiled for (its "builtin" implementation: the
// portable fallback without target flags, several times slower in places).
// The portable build therefore compiles the translation units that walk JSON
// with it (listed in CMakeLists.txt as COMPACTOR_KERNEL_SOURCES) once more per
// target, each copy linked into one object whose symbols are all local except
// its compactor_kernel_<target> table (so no inline function compiled for AVX2
// can stand in for the baseline copy elsewhere). Those sources define their
// entry points in the `#ifdef COMPACTOR_KERNEL` part, and the baseline copy of
// each entry point starts by handing over to the active kernel's.
#ifndef COMPACTOR_SRC_UTIL_KERNEL_H_
#define COMPACTOR_SRC_UTIL_KERNEL_H_

#include <cstdint>
#include <string_view>
#include <vector>

namespace compactor {
class MessageObserver;  // session/message_observer.h
}  // namespace compactor

namespace compactor::internal {

struct JsonStringBodyScan;

// One kernel's entry points. A null entry means "the baseline code": the
// fallback kernel is all nulls, as is "native" (the whole library is then
// compiled for the build machine).
struct KernelTable {
  const char* name;
  // Session::Impl::ParseChunk; both arguments are the session's own types
  // (session.cc), passed untyped so this header needs none of them.
  void (*session_parse_chunk)(void* impl, void* chunk);
  // internal::EstimateMessageTokensFast: false where it gives up.
  bool (*estimate_fast)(std::string_view message_json, int64_t* tokens);
  // internal::ScanJsonStringBody.
  void (*scan_json_string_body)(std::string_view body, JsonStringBodyScan* out);
  // TokenEstimateObserver() compiled for this kernel: the observer this
  // kernel's session_parse_chunk calls (MessageObserver::ForKernel), since
  // each kernel's simdjson On-Demand types are its own.
  const MessageObserver* (*estimate_observer)();
};

// The kernel in use: chosen on the first call (COMPACTOR_FORCE_KERNEL if this
// CPU supports it, else the best supported), changed only by SelectKernel.
// Thread-safe.
const KernelTable& ActiveKernel();

// Every kernel compiled into this build, best first, whether or not this CPU
// supports it; and whether it does.
std::vector<const KernelTable*> CompiledKernels();
bool KernelSupported(const KernelTable& kernel);

}  // namespace compactor::internal

// In a kernel's copy of a source (compiled with -DCOMPACTOR_KERNEL=<target>),
// the C name of an entry point: compactor_kernel_<target>_<name>, the names
// util/kernel.cc collects into that kernel's table.
#define COMPACTOR_KERNEL_PASTE_(target, name) compactor_kernel_##target##_##name
#define COMPACTOR_KERNEL_PASTE(target, name) COMPACTOR_KERNEL_PASTE_(target, name)
#define COMPACTOR_KERNEL_ENTRY(name) COMPACTOR_KERNEL_PASTE(COMPACTOR_KERNEL, name)

#endif  // COMPACTOR_SRC_UTIL_KERNEL_H_
