// libpq opened at run time (libpq.h says why).
#include "store/libpq.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace compactor::pq {
namespace {

Api api;
Status loaded = Status::Internal("libpq not loaded");
std::once_flag once;

template <typename F>
bool Bind(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

Status Open() {
  void* lib = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return Status::Unavailable(std::string("the PostgreSQL store needs libpq.so.5 (libpq5): ") +
                               (why != nullptr ? why : "not found"));
  }
  // Never closed: connections and results outlive any one store.
  const bool ok =
      Bind(lib, "PQconnectdbParams", &api.connectdbParams) && Bind(lib, "PQstatus", &api.status) &&
      Bind(lib, "PQerrorMessage", &api.errorMessage) && Bind(lib, "PQfinish", &api.finish) &&
      Bind(lib, "PQsetNoticeProcessor", &api.setNoticeProcessor) &&
      Bind(lib, "PQtransactionStatus", &api.transactionStatus) && Bind(lib, "PQexec", &api.exec) &&
      Bind(lib, "PQexecParams", &api.execParams) &&
      Bind(lib, "PQresultStatus", &api.resultStatus) &&
      Bind(lib, "PQresultErrorMessage", &api.resultErrorMessage) &&
      Bind(lib, "PQclear", &api.clear) && Bind(lib, "PQntuples", &api.ntuples) &&
      Bind(lib, "PQgetvalue", &api.getvalue) && Bind(lib, "PQgetlength", &api.getlength) &&
      Bind(lib, "PQgetisnull", &api.getisnull) && Bind(lib, "PQcmdTuples", &api.cmdTuples);
  if (!ok) return Status::Unavailable("libpq.so.5 lacks a function the PostgreSQL store calls");
  return Status::Ok();
}

}  // namespace

Status Load() {
  std::call_once(once, [] { loaded = Open(); });
  return loaded;
}

const Api& Get() { return api; }

}  // namespace compactor::pq
