#include "support/fake_llm_server.h"

#include <httplib.h>

#include <cctype>
#include <nlohmann/json.hpp>

namespace compactor::testing {

FakeLlmServer::FakeLlmServer() : server_(std::make_unique<httplib::Server>()) {}

FakeLlmServer::~FakeLlmServer() { Stop(); }

bool FakeLlmServer::Start() {
  server_->new_task_queue = [] { return new httplib::ThreadPool(8); };
  server_->set_read_timeout(10, 0);
  server_->set_write_timeout(10, 0);
  server_->Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
    RecordedRequest rec;
    rec.method = req.method;
    rec.path = req.path;
    for (const auto& [k, v] : req.headers) {
      std::string name = k;
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      rec.headers[name] = v;
    }
    rec.body = req.body;
    rec.at = std::chrono::steady_clock::now();
    FakeReply reply;
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(rec);
      if (script_.empty()) {
        reply.status = 500;
        reply.body = R"({"error":{"message":"script exhausted"}})";
      } else {
        reply = script_.front();
        script_.pop_front();
      }
    }
    auto end = std::chrono::steady_clock::now() + reply.delay;
    while (std::chrono::steady_clock::now() < end && !stopping_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    res.status = reply.status;
    for (const auto& [k, v] : reply.headers) res.set_header(k, v);
    if (!reply.chunks.empty()) {
      auto chunks = std::make_shared<std::vector<std::string>>(reply.chunks);
      auto delay = reply.chunk_delay;
      res.set_chunked_content_provider(reply.content_type,
                                       [chunks, delay, this](size_t, httplib::DataSink& sink) {
                                         for (const std::string& c : *chunks) {
                                           if (stopping_.load() || !sink.write(c.data(), c.size()))
                                             return false;
                                           std::this_thread::sleep_for(delay);
                                         }
                                         sink.done();
                                         return true;
                                       });
    } else if (reply.truncate) {
      auto body = std::make_shared<std::string>(reply.body);
      res.set_content_provider(body->size(), reply.content_type,
                               [body](size_t offset, size_t, httplib::DataSink& sink) {
                                 if (offset == 0) sink.write(body->data(), body->size() / 2);
                                 return false;  // drop the connection before the declared length
                               });
    } else {
      res.set_content(reply.body, reply.content_type);
    }
  });
  port_ = server_->bind_to_any_port("127.0.0.1");
  if (port_ <= 0) return false;
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  for (int i = 0; i < 200 && !server_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return server_->is_running();
}

void FakeLlmServer::Stop() {
  stopping_.store(true);
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string FakeLlmServer::base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

void FakeLlmServer::Push(FakeReply reply) {
  std::lock_guard<std::mutex> lock(mu_);
  script_.push_back(std::move(reply));
}

std::vector<RecordedRequest> FakeLlmServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

size_t FakeLlmServer::request_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_.size();
}

using Json = nlohmann::ordered_json;

std::string FakeLlmServer::ChatReply(const std::string& text, const std::string& finish,
                                     int prompt_tokens, int completion_tokens) {
  Json j = {{"id", "chatcmpl-1"},
            {"object", "chat.completion"},
            {"choices", Json::array({{{"index", 0},
                                      {"message", {{"role", "assistant"}, {"content", text}}},
                                      {"finish_reason", finish}}})},
            {"usage",
             {{"prompt_tokens", prompt_tokens},
              {"completion_tokens", completion_tokens},
              {"total_tokens", prompt_tokens + completion_tokens}}}};
  return j.dump();
}

std::string FakeLlmServer::AnthropicReply(const std::string& text, const std::string& stop,
                                          int input_tokens, int output_tokens) {
  Json j = {{"id", "msg_1"},
            {"type", "message"},
            {"role", "assistant"},
            {"content", Json::array({{{"type", "thinking"}, {"thinking", "hmm"}},
                                     {{"type", "text"}, {"text", text}}})},
            {"stop_reason", stop},
            {"usage", {{"input_tokens", input_tokens}, {"output_tokens", output_tokens}}}};
  return j.dump();
}

std::string FakeLlmServer::ResponsesReply(const std::string& text, int input_tokens,
                                          int output_tokens) {
  Json j = {
      {"id", "resp_1"},
      {"object", "response"},
      {"status", "completed"},
      {"output", Json::array({{{"type", "reasoning"}, {"id", "rs_1"}, {"summary", Json::array()}},
                              {{"type", "message"},
                               {"id", "msg_1"},
                               {"role", "assistant"},
                               {"status", "completed"},
                               {"content", Json::array({{{"type", "output_text"},
                                                         {"text", text},
                                                         {"annotations", Json::array()}}})}}})},
      {"usage", {{"input_tokens", input_tokens}, {"output_tokens", output_tokens}}}};
  return j.dump();
}

std::string FakeLlmServer::RemoteReply(const std::string& summary) {
  return Json({{"summary", summary}}).dump();
}

}  // namespace compactor::testing
