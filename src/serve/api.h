// The service API under /compactor/v1/ (docs/api.md): sessions of the store
// listed, measured, shown and compacted with the same JSON shapes as the
// CLI's --json output (compactor/report.h), entries appended, branches
// moved, and a stateless compaction of a session sent in the body. Also
// owns what `compactor serve` records into: the store, the recorder and its
// proxy hook.
//
// Thread safety: handlers run on any worker thread at once; the store and
// the recorder are thread-safe.
#ifndef COMPACTOR_SRC_SERVE_API_H_
#define COMPACTOR_SRC_SERVE_API_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compactor/compaction_settings.h"
#include "compactor/providers.h"
#include "compactor/serve.h"
#include "compactor/store.h"
#include "serve/loaded_sessions.h"
#include "serve/recorder.h"
#include "serve/server.h"
#include "serve/service.h"

namespace compactor::serve {

class SessionService {
 public:
  // Opens the directory store of `options.store` (created when missing) with
  // `options.sessions` read-only, reads the settings file's compaction
  // settings and models, registers the API's routes on `server.router()` and
  // the recording hook on its proxy. Call before server.Start(); the service
  // must outlive the server's requests (shut the server down first).
  static Result<std::unique_ptr<SessionService>> Install(Server& server,
                                                         const ServeOptions& options);
  ~SessionService();
  SessionService(const SessionService&) = delete;
  SessionService& operator=(const SessionService&) = delete;

  SessionStore& store() { return *store_; }
  ConversationRecorder& recorder() { return *recorder_; }

 private:
  SessionService() = default;
  void Register(ServiceRouter& router);

  void List(const ServiceRequest& req, ServiceResponse& res);
  void Stats(const ServiceRequest& req, ServiceResponse& res);
  void Context(const ServiceRequest& req, ServiceResponse& res);
  void Tree(const ServiceRequest& req, ServiceResponse& res);
  void Plan(const ServiceRequest& req, ServiceResponse& res);
  void Compact(const ServiceRequest& req, ServiceResponse& res);
  void Entries(const ServiceRequest& req, ServiceResponse& res);
  void Branch(const ServiceRequest& req, ServiceResponse& res);
  void CompactStateless(const ServiceRequest& req, ServiceResponse& res);
  // For the web viewer: one stored entry, a line of text per entry, the
  // context's tokens by origin against the window.
  void EntryOf(const ServiceRequest& req, ServiceResponse& res);
  void Outline(const ServiceRequest& req, ServiceResponse& res);
  void Window(const ServiceRequest& req, ServiceResponse& res);

  Env* env_ = nullptr;
  // The upstream URL of an API's model endpoint ("" when serve has none for
  // it): where `summarizer=upstream` sends its summary requests.
  std::function<std::string(const std::string& api)> upstream_url_;
  CompactionSettings settings_;
  std::vector<ModelConfig> models_;
  // A model's context window as the proxy sees it (0: unknown).
  std::function<int64_t(const std::string& model)> window_of_;
  std::unique_ptr<SessionStore> store_;
  // Sessions kept loaded between requests (declared after the store, which
  // it reads: destroyed before it).
  std::unique_ptr<LoadedSessions> loaded_;
  std::unique_ptr<ConversationRecorder> recorder_;
  std::shared_ptr<RecordingHook> hook_;
};

}  // namespace compactor::serve

#endif  // COMPACTOR_SRC_SERVE_API_H_
