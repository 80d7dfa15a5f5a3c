// The PostgreSQL store's schema and its migrations (docs/store.md, "Schema").
// Private to the store module (tests include it to check migrations).
#ifndef COMPACTOR_SRC_STORE_POSTGRES_SCHEMA_H_
#define COMPACTOR_SRC_STORE_POSTGRES_SCHEMA_H_

#include <libpq-fe.h>  // PGconn (the library is opened at run time: store/libpq.h)

#include "compactor/status.h"

namespace compactor::postgres_schema {

// The newest schema version this binary knows (the number of migrations).
int KnownVersion();

// Brings the database `c` is connected to up to KnownVersion(): each
// migration not yet recorded in compactor_schema runs once, in its own
// transaction, under an advisory lock that makes concurrent openers wait
// for each other. kFailedPrecondition when the database records a newer
// version than this binary knows; kIoError when a statement fails.
Status Migrate(PGconn* c);

}  // namespace compactor::postgres_schema

#endif  // COMPACTOR_SRC_STORE_POSTGRES_SCHEMA_H_
