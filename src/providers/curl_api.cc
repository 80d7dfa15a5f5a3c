#include "providers/curl_api.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace compactor::internal {
namespace {

#ifndef COMPACTOR_LIBCURL_SONAME
#define COMPACTOR_LIBCURL_SONAME "libcurl.so.4"
#endif

struct Loaded {
  CurlApi api{};
  Status status = Status::Ok();
};

template <typename Fn>
bool Resolve(void* lib, const char* name, Fn* out, std::string* missing) {
  *out = reinterpret_cast<Fn>(dlsym(lib, name));
  if (*out == nullptr) *missing = name;
  return *out != nullptr;
}

Loaded Load() {
  Loaded l;
  // RTLD_LOCAL: nothing else in the process should bind to these symbols. The
  // handle is never closed; libcurl stays loaded for the life of the process.
  void* lib = dlopen(COMPACTOR_LIBCURL_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) lib = dlopen("libcurl.so", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    l.status = Status::Unsupported(std::string("cannot load libcurl (") + COMPACTOR_LIBCURL_SONAME +
                                   "): " + (why ? why : "unknown error"));
    return l;
  }
  CurlApi& a = l.api;
  std::string missing;
  bool ok = Resolve(lib, "curl_global_init", &a.global_init, &missing) &&
            Resolve(lib, "curl_easy_init", &a.easy_init, &missing) &&
            Resolve(lib, "curl_easy_cleanup", &a.easy_cleanup, &missing) &&
            Resolve(lib, "curl_easy_reset", &a.easy_reset, &missing) &&
            Resolve(lib, "curl_easy_setopt", &a.easy_setopt, &missing) &&
            Resolve(lib, "curl_easy_getinfo", &a.easy_getinfo, &missing) &&
            Resolve(lib, "curl_easy_strerror", &a.easy_strerror, &missing) &&
            Resolve(lib, "curl_multi_init", &a.multi_init, &missing) &&
            Resolve(lib, "curl_multi_cleanup", &a.multi_cleanup, &missing) &&
            Resolve(lib, "curl_multi_add_handle", &a.multi_add_handle, &missing) &&
            Resolve(lib, "curl_multi_remove_handle", &a.multi_remove_handle, &missing) &&
            Resolve(lib, "curl_multi_perform", &a.multi_perform, &missing) &&
            Resolve(lib, "curl_multi_poll", &a.multi_poll, &missing) &&
            Resolve(lib, "curl_multi_info_read", &a.multi_info_read, &missing) &&
            Resolve(lib, "curl_slist_append", &a.slist_append, &missing) &&
            Resolve(lib, "curl_slist_free_all", &a.slist_free_all, &missing);
  if (!ok) {
    l.status = Status::Unsupported("libcurl lacks " + missing + " (libcurl >= 7.66 is needed)");
    return l;
  }
  if (a.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    l.status = Status::Internal("curl_global_init failed");
  }
  return l;
}

}  // namespace

Result<const CurlApi*> Curl() {
  static const Loaded* loaded = new Loaded(Load());
  if (!loaded->status.ok()) return loaded->status;
  return &loaded->api;
}

}  // namespace compactor::internal
