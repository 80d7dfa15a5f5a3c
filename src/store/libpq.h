// libpq, opened when the first PostgreSQL store opens (dlopen of
// libpq.so.5), not linked: libpq brings libssl, Kerberos and LDAP into a
// process, and every `compactor` command would pay their loading at start
// for a store most never use. Private to the store module.
#ifndef COMPACTOR_SRC_STORE_LIBPQ_H_
#define COMPACTOR_SRC_STORE_LIBPQ_H_

#include <libpq-fe.h>  // types and constants only

#include "compactor/status.h"

namespace compactor::pq {

// The functions the store calls, named after libpq's without the PQ prefix.
struct Api {
  decltype(&::PQconnectdbParams) connectdbParams;
  decltype(&::PQstatus) status;
  decltype(&::PQerrorMessage) errorMessage;
  decltype(&::PQfinish) finish;
  decltype(&::PQsetNoticeProcessor) setNoticeProcessor;
  decltype(&::PQtransactionStatus) transactionStatus;
  decltype(&::PQexec) exec;
  decltype(&::PQexecParams) execParams;
  decltype(&::PQresultStatus) resultStatus;
  decltype(&::PQresultErrorMessage) resultErrorMessage;
  decltype(&::PQclear) clear;
  decltype(&::PQntuples) ntuples;
  decltype(&::PQgetvalue) getvalue;
  decltype(&::PQgetlength) getlength;
  decltype(&::PQgetisnull) getisnull;
  decltype(&::PQcmdTuples) cmdTuples;
};

// Opens libpq once (later calls return the first answer). kUnavailable
// naming the library when it is missing (apt-get install libpq5).
Status Load();
// REQUIRES: Load() succeeded.
const Api& Get();

// Frees a result (for std::unique_ptr).
struct ResultDeleter {
  void operator()(PGresult* r) const { Get().clear(r); }
};

}  // namespace compactor::pq

#endif  // COMPACTOR_SRC_STORE_LIBPQ_H_
