// libcurl, loaded on first use. Linking libcurl makes every process map it and
// its ~30 dependencies (TLS, Kerberos, LDAP, ...) at start-up, which costs a
// few milliseconds even for commands that never open a connection (context,
// plan, stats on a file). The transport resolves the handful of entry points
// it needs through dlopen the first time a request is sent instead.
#ifndef COMPACTOR_SRC_PROVIDERS_CURL_API_H_
#define COMPACTOR_SRC_PROVIDERS_CURL_API_H_

#include <curl/curl.h>

#include "compactor/status.h"

namespace compactor::internal {

struct CurlApi {
  CURLcode (*global_init)(long flags);
  CURL* (*easy_init)();
  void (*easy_cleanup)(CURL* handle);
  void (*easy_reset)(CURL* handle);
  // Variadic in libcurl: one option and one value per call.
  CURLcode (*easy_setopt)(CURL* handle, CURLoption option, ...);
  CURLcode (*easy_getinfo)(CURL* handle, CURLINFO info, ...);
  const char* (*easy_strerror)(CURLcode code);
  CURLM* (*multi_init)();
  CURLMcode (*multi_cleanup)(CURLM* multi);
  CURLMcode (*multi_add_handle)(CURLM* multi, CURL* handle);
  CURLMcode (*multi_remove_handle)(CURLM* multi, CURL* handle);
  CURLMcode (*multi_perform)(CURLM* multi, int* running);
  CURLMcode (*multi_poll)(CURLM* multi, curl_waitfd extra_fds[], unsigned int extra_nfds,
                          int timeout_ms, int* ret);
  CURLMsg* (*multi_info_read)(CURLM* multi, int* msgs_in_queue);
  curl_slist* (*slist_append)(curl_slist* list, const char* string);
  void (*slist_free_all)(curl_slist* list);
};

// The process-wide table, loaded (and curl_global_init run) once. Fails with
// kUnavailable when the shared library or one of the symbols is missing.
Result<const CurlApi*> Curl();

}  // namespace compactor::internal

#endif  // COMPACTOR_SRC_PROVIDERS_CURL_API_H_
