#include "support/fake_upstream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "support/http_client.h"

namespace compactor::testing {
namespace {

using Json = nlohmann::ordered_json;

bool IEq(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string Hex(size_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%zx", n);
  return buf;
}

// Waits `ms` (or not at all); false when the peer closed its side meanwhile.
bool PeerStillThere(int fd, int ms) {
  pollfd p{fd, POLLRDHUP, 0};
  int r = ::poll(&p, 1, ms);
  return !(r > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0);
}

// Reads from `fd` into `buf` until it holds `need` bytes past `pos`.
bool Fill(int fd, std::string& buf, size_t need) {
  char tmp[16384];
  while (buf.size() < need) {
    ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
  }
  return true;
}

bool FillUntil(int fd, std::string& buf, std::string_view marker, size_t from, size_t* at) {
  char tmp[16384];
  while (true) {
    size_t p = buf.find(marker, from);
    if (p != std::string::npos) {
      *at = p;
      return true;
    }
    if (buf.size() > (1u << 20)) return false;
    ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
  }
}

// Parses one request from the front of `buf` (reading more as needed) and
// removes it from `buf`.
bool ReadRequest(int fd, std::string& buf, UpstreamRecord* r) {
  size_t end;
  if (!FillUntil(fd, buf, "\r\n\r\n", 0, &end)) return false;
  std::string head = buf.substr(0, end);
  buf.erase(0, end + 4);
  size_t line_end = head.find("\r\n");
  std::string line = head.substr(0, line_end);
  size_t s1 = line.find(' ');
  size_t s2 = line.rfind(' ');
  r->method = line.substr(0, s1);
  r->target = line.substr(s1 + 1, s2 - s1 - 1);
  size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    size_t e = head.find("\r\n", pos);
    if (e == std::string::npos) e = head.size();
    std::string field = head.substr(pos, e - pos);
    size_t colon = field.find(':');
    if (colon != std::string::npos) {
      size_t v = field.find_first_not_of(' ', colon + 1);
      r->headers.emplace_back(field.substr(0, colon),
                              v == std::string::npos ? "" : field.substr(v));
    }
    pos = e + 2;
  }
  std::string te = r->Header("transfer-encoding");
  if (!te.empty()) {
    r->chunked = true;
    while (true) {
      size_t le;
      if (!FillUntil(fd, buf, "\r\n", 0, &le)) return false;
      size_t size = std::stoul(buf.substr(0, le), nullptr, 16);
      buf.erase(0, le + 2);
      if (!Fill(fd, buf, size + 2)) return false;
      r->body.append(buf, 0, size);
      buf.erase(0, size + 2);
      if (size == 0) break;
    }
    return true;
  }
  std::string length = r->Header("content-length");
  size_t n = length.empty() ? 0 : std::stoul(length);
  if (!Fill(fd, buf, n)) return false;
  r->body = buf.substr(0, n);
  buf.erase(0, n);
  return true;
}

std::string Sse(const std::string& event, const Json& data) {
  std::string out;
  if (!event.empty()) out += "event: " + event + "\n";
  out += "data: " + data.dump() + "\n\n";
  return out;
}

std::vector<std::string> Split(const std::string& text, int pieces) {
  std::vector<std::string> out;
  pieces = std::max(1, pieces);
  size_t step = (text.size() + static_cast<size_t>(pieces) - 1) / static_cast<size_t>(pieces);
  for (size_t i = 0; i < text.size(); i += step) out.push_back(text.substr(i, step));
  if (out.empty()) out.emplace_back();
  return out;
}

struct Turn {
  std::string model;
  bool stream = false;
  bool tool_call = false;  // answer with a tool call
  std::string tool_name;
  int64_t input_tokens = 0;
};

Turn ReadTurn(const UpstreamRecord& req, std::string_view api) {
  Turn t;
  Json j = Json::parse(req.body, nullptr, false);
  t.input_tokens = static_cast<int64_t>(req.body.size() / 4);
  if (!j.is_object()) return t;
  t.model = j.value("model", "");
  t.stream = j.value("stream", false);
  bool has_tools = j.contains("tools") && j["tools"].is_array() && !j["tools"].empty();
  if (has_tools) {
    const Json& tool = j["tools"][0];
    t.tool_name = tool.contains("function") ? tool["function"].value("name", "tool")
                                            : tool.value("name", "tool");
  }
  std::string marker = api == "anthropic"          ? "\"tool_result\""
                       : api == "openai-responses" ? "\"function_call_output\""
                                                   : "\"tool_call_id\"";
  t.tool_call = has_tools && req.body.find(marker) == std::string::npos;
  return t;
}

ScriptedReply JsonReply(int status, const Json& body) {
  ScriptedReply r;
  r.status = status;
  r.reason = status == 200 ? "OK" : "Bad Request";
  r.headers = {{"Content-Type", "application/json"}, {"request-id", "req_fake"}};
  r.pieces = {body.dump()};
  return r;
}

ScriptedReply StreamReply(std::vector<std::string> events, const ApiReplyOptions& o) {
  ScriptedReply r;
  r.headers = {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};
  r.framing = ScriptedReply::Framing::kChunked;
  r.pieces = std::move(events);
  r.piece_delay = std::chrono::duration_cast<std::chrono::milliseconds>(o.event_delay);
  return r;
}

constexpr const char* kArgs = R"({"path":"README.md"})";

ScriptedReply Anthropic(const Turn& t, const ApiReplyOptions& o) {
  std::string stop = t.tool_call ? "tool_use" : "end_turn";
  Json usage = {{"input_tokens", t.input_tokens}, {"output_tokens", o.events}};
  Json block = t.tool_call ? Json{{"type", "tool_use"},
                                  {"id", "toolu_fake1"},
                                  {"name", t.tool_name},
                                  {"input", Json::parse(kArgs)}}
                           : Json{{"type", "text"}, {"text", o.text}};
  if (!t.stream) {
    return JsonReply(200, {{"id", "msg_fake"},
                           {"type", "message"},
                           {"role", "assistant"},
                           {"model", t.model},
                           {"content", Json::array({block})},
                           {"stop_reason", stop},
                           {"stop_sequence", nullptr},
                           {"usage", usage}});
  }
  std::vector<std::string> ev;
  ev.push_back(Sse("message_start",
                   {{"type", "message_start"},
                    {"message",
                     {{"id", "msg_fake"},
                      {"type", "message"},
                      {"role", "assistant"},
                      {"model", t.model},
                      {"content", Json::array()},
                      {"stop_reason", nullptr},
                      {"stop_sequence", nullptr},
                      {"usage", {{"input_tokens", t.input_tokens}, {"output_tokens", 1}}}}}}));
  Json start_block = block;
  if (t.tool_call) {
    start_block["input"] = Json::object();
  } else {
    start_block["text"] = "";
  }
  ev.push_back(
      Sse("content_block_start",
          {{"type", "content_block_start"}, {"index", 0}, {"content_block", start_block}}));
  ev.push_back(Sse("ping", {{"type", "ping"}}));
  for (const std::string& piece : Split(t.tool_call ? kArgs : o.text, o.events)) {
    Json delta = t.tool_call ? Json{{"type", "input_json_delta"}, {"partial_json", piece}}
                             : Json{{"type", "text_delta"}, {"text", piece}};
    ev.push_back(Sse("content_block_delta",
                     {{"type", "content_block_delta"}, {"index", 0}, {"delta", delta}}));
  }
  ev.push_back(Sse("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}}));
  ev.push_back(Sse("message_delta", {{"type", "message_delta"},
                                     {"delta", {{"stop_reason", stop}, {"stop_sequence", nullptr}}},
                                     {"usage", {{"output_tokens", o.events}}}}));
  ev.push_back(Sse("message_stop", {{"type", "message_stop"}}));
  return StreamReply(std::move(ev), o);
}

Json ResponsesItem(const Turn& t, const ApiReplyOptions& o, bool done) {
  if (t.tool_call) {
    return {{"id", "fc_fake1"},
            {"type", "function_call"},
            {"status", done ? "completed" : "in_progress"},
            {"arguments", done ? kArgs : ""},
            {"call_id", "call_fake1"},
            {"name", t.tool_name}};
  }
  Json content = Json::array();
  if (done) {
    content.push_back({{"type", "output_text"}, {"text", o.text}, {"annotations", Json::array()}});
  }
  return {{"id", "msg_fake1"},
          {"type", "message"},
          {"status", done ? "completed" : "in_progress"},
          {"role", "assistant"},
          {"content", content}};
}

Json ResponsesObject(const Turn& t, const ApiReplyOptions& o, bool done) {
  Json usage = {{"input_tokens", t.input_tokens},
                {"output_tokens", o.events},
                {"total_tokens", t.input_tokens + o.events}};
  return {{"id", "resp_fake"},
          {"object", "response"},
          {"created_at", 1700000000},
          {"status", done ? "completed" : "in_progress"},
          {"model", t.model},
          {"output", done ? Json::array({ResponsesItem(t, o, true)}) : Json::array()},
          {"usage", done ? usage : Json(nullptr)}};
}

ScriptedReply Responses(const Turn& t, const ApiReplyOptions& o) {
  if (!t.stream) return JsonReply(200, ResponsesObject(t, o, true));
  std::vector<std::string> ev;
  int seq = 0;
  auto add = [&](const std::string& type, Json data) {
    data["type"] = type;
    data["sequence_number"] = seq++;
    ev.push_back(Sse(type, data));
  };
  add("response.created", {{"response", ResponsesObject(t, o, false)}});
  add("response.output_item.added", {{"output_index", 0}, {"item", ResponsesItem(t, o, false)}});
  std::string item_id = t.tool_call ? "fc_fake1" : "msg_fake1";
  if (t.tool_call) {
    for (const std::string& piece : Split(kArgs, o.events)) {
      add("response.function_call_arguments.delta",
          {{"item_id", item_id}, {"output_index", 0}, {"delta", piece}});
    }
    add("response.function_call_arguments.done",
        {{"item_id", item_id}, {"output_index", 0}, {"arguments", kArgs}});
  } else {
    Json part = {{"type", "output_text"}, {"text", ""}, {"annotations", Json::array()}};
    add("response.content_part.added",
        {{"item_id", item_id}, {"output_index", 0}, {"content_index", 0}, {"part", part}});
    for (const std::string& piece : Split(o.text, o.events)) {
      add("response.output_text.delta", {{"item_id", item_id},
                                         {"output_index", 0},
                                         {"content_index", 0},
                                         {"delta", piece},
                                         {"logprobs", Json::array()}});
    }
    add("response.output_text.done", {{"item_id", item_id},
                                      {"output_index", 0},
                                      {"content_index", 0},
                                      {"text", o.text},
                                      {"logprobs", Json::array()}});
    part["text"] = o.text;
    add("response.content_part.done",
        {{"item_id", item_id}, {"output_index", 0}, {"content_index", 0}, {"part", part}});
  }
  add("response.output_item.done", {{"output_index", 0}, {"item", ResponsesItem(t, o, true)}});
  add("response.completed", {{"response", ResponsesObject(t, o, true)}});
  return StreamReply(std::move(ev), o);
}

ScriptedReply Chat(const Turn& t, const ApiReplyOptions& o) {
  std::string finish = t.tool_call ? "tool_calls" : "stop";
  Json usage = {{"prompt_tokens", t.input_tokens},
                {"completion_tokens", o.events},
                {"total_tokens", t.input_tokens + o.events}};
  Json call = {{"id", "call_fake1"},
               {"type", "function"},
               {"function", {{"name", t.tool_name}, {"arguments", kArgs}}}};
  if (!t.stream) {
    Json message = {{"role", "assistant"}, {"content", t.tool_call ? Json(nullptr) : Json(o.text)}};
    if (t.tool_call) message["tool_calls"] = Json::array({call});
    return JsonReply(
        200, {{"id", "chatcmpl-fake"},
              {"object", "chat.completion"},
              {"created", 1700000000},
              {"model", t.model},
              {"choices",
               Json::array({{{"index", 0}, {"message", message}, {"finish_reason", finish}}})},
              {"usage", usage}});
  }
  std::vector<std::string> ev;
  auto chunk = [&](const Json& delta, const Json& finish_reason) {
    ev.push_back(Sse(
        "", {{"id", "chatcmpl-fake"},
             {"object", "chat.completion.chunk"},
             {"created", 1700000000},
             {"model", t.model},
             {"choices",
              Json::array({{{"index", 0}, {"delta", delta}, {"finish_reason", finish_reason}}})}}));
  };
  chunk({{"role", "assistant"}, {"content", ""}}, nullptr);
  bool first = true;
  for (const std::string& piece : Split(t.tool_call ? kArgs : o.text, o.events)) {
    if (!t.tool_call) {
      chunk({{"content", piece}}, nullptr);
      continue;
    }
    Json c = {{"index", 0}, {"function", {{"arguments", piece}}}};
    if (first) {
      c["id"] = "call_fake1";
      c["type"] = "function";
      c["function"]["name"] = t.tool_name;
    }
    first = false;
    chunk({{"tool_calls", Json::array({c})}}, nullptr);
  }
  chunk(Json::object(), finish);
  ev.push_back("data: [DONE]\n\n");
  return StreamReply(std::move(ev), o);
}

}  // namespace

std::string UpstreamRecord::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (IEq(n, name)) return v;
  }
  return "";
}

std::string ScriptedReply::Body() const {
  std::string out;
  for (const std::string& p : pieces) out += p;
  return out;
}

ScriptedReply ApiReply(const UpstreamRecord& req, const ApiReplyOptions& options) {
  ApiReplyOptions o = options;
  if (std::string v = req.Header("x-fake-events"); !v.empty()) o.events = std::stoi(v);
  if (std::string v = req.Header("x-fake-delay-us"); !v.empty()) {
    o.event_delay = std::chrono::microseconds(std::stoll(v));
  }
  std::string path = req.target.substr(0, req.target.find('?'));
  std::string api = path == "/v1/messages"           ? "anthropic"
                    : path == "/v1/responses"        ? "openai-responses"
                    : path == "/v1/chat/completions" ? "openai-chat"
                                                     : "";
  if (req.method == "HEAD" && path == "/") {
    ScriptedReply r;
    r.headers = {{"Content-Type", "text/plain"}};
    return r;
  }
  if (req.method == "GET" && path == "/v1/models") {
    return JsonReply(200, {{"object", "list"},
                           {"data", Json::array({{{"id", "fake-model"},
                                                  {"object", "model"},
                                                  {"created", 1700000000},
                                                  {"owned_by", "fake"}}})}});
  }
  if (api.empty() || req.method != "POST") {
    return JsonReply(404, {{"error", {{"message", "not found: " + path}, {"type", "not_found"}}}});
  }
  Turn t = ReadTurn(req, api);
  if (t.model == "fake-error") {
    if (api == "anthropic") {
      return JsonReply(400,
                       {{"type", "error"},
                        {"error",
                         {{"type", "invalid_request_error"},
                          {"message", "prompt is too long: 250000 tokens > 200000 maximum"}}}});
    }
    return JsonReply(400, {{"error",
                            {{"message", "This model's maximum context length is 128000 tokens."},
                             {"type", "invalid_request_error"},
                             {"param", "messages"},
                             {"code", "context_length_exceeded"}}}});
  }
  if (api == "anthropic") return Anthropic(t, o);
  if (api == "openai-responses") return Responses(t, o);
  return Chat(t, o);
}

FakeUpstream::FakeUpstream() = default;

FakeUpstream::~FakeUpstream() { Stop(); }

bool FakeUpstream::Start(int port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return false;
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 1024) != 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
    return false;
  }
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  return true;
}

void FakeUpstream::Stop() {
  if (stopping_.exchange(true)) return;
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
  if (accept_thread_.joinable()) accept_thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    workers.swap(workers_);
  }
  for (auto& t : workers) t.join();
}

void FakeUpstream::AcceptLoop() {
  while (!stopping_) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    connections_.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu_);
    open_fds_.push_back(fd);
    workers_.emplace_back([this, fd] { Serve(fd); });
  }
}

void FakeUpstream::Serve(int fd) {
  std::string buf;
  while (!stopping_) {
    UpstreamRecord r;
    if (!ReadRequest(fd, buf, &r)) break;
    ScriptedReply reply;
    size_t index;
    {
      std::lock_guard<std::mutex> lock(mu_);
      index = requests_.size();
      requests_.push_back(r);
      if (!script_.empty()) {
        reply = std::move(script_.front());
        script_.pop_front();
      } else {
        reply = ApiReply(r, api_);
      }
    }
    cv_.notify_all();
    bool ok = SendReply(fd, reply, index);
    if (!ok || reply.close_after || IEq(r.Header("connection"), "close")) break;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    open_fds_.erase(std::remove(open_fds_.begin(), open_fds_.end(), fd), open_fds_.end());
  }
  ::close(fd);
}

bool FakeUpstream::SendReply(int fd, const ScriptedReply& reply, size_t index) {
  auto left = [&] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_[index].client_left = true;
    }
    cv_.notify_all();
    return false;
  };
  if (reply.head_delay.count() > 0 &&
      !PeerStillThere(fd, static_cast<int>(reply.head_delay.count()))) {
    return left();
  }
  std::string head = "HTTP/1.1 " + std::to_string(reply.status) + " " + reply.reason + "\r\n";
  for (const auto& [n, v] : reply.headers) head += n + ": " + v + "\r\n";
  if (reply.framing == ScriptedReply::Framing::kLength) {
    head += "Content-Length: " + std::to_string(reply.Body().size()) + "\r\n";
  } else if (reply.framing == ScriptedReply::Framing::kChunked) {
    head += "Transfer-Encoding: chunked\r\n";
  } else if (reply.framing == ScriptedReply::Framing::kClose) {
    head += "Connection: close\r\n";
  }
  head += "\r\n";
  if (!SendAll(fd, head)) return left();
  for (size_t i = 0; i < reply.pieces.size(); ++i) {
    if (reply.abort_after >= 0 && static_cast<int>(i) == reply.abort_after) return false;
    int wait = i > 0 ? static_cast<int>(reply.piece_delay.count()) : 0;
    if (!PeerStillThere(fd, wait)) return left();
    const std::string& p = reply.pieces[i];
    std::string out = reply.framing == ScriptedReply::Framing::kChunked
                          ? (p.empty() ? "" : Hex(p.size()) + "\r\n" + p + "\r\n")
                          : p;
    if (!SendAll(fd, out)) return left();
  }
  if (reply.framing == ScriptedReply::Framing::kChunked && !SendAll(fd, "0\r\n\r\n")) {
    return left();
  }
  return reply.framing != ScriptedReply::Framing::kClose;
}

void FakeUpstream::Push(ScriptedReply reply) {
  std::lock_guard<std::mutex> lock(mu_);
  script_.push_back(std::move(reply));
}

std::vector<UpstreamRecord> FakeUpstream::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

size_t FakeUpstream::request_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_.size();
}

bool FakeUpstream::WaitForClientLeft(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [this] {
    return std::any_of(requests_.begin(), requests_.end(),
                       [](const UpstreamRecord& r) { return r.client_left; });
  });
}

bool FakeUpstream::WaitForRequests(size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
}

}  // namespace compactor::testing
