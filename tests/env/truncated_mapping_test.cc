// The POSIX Env's answer to a file truncated while it is mapped: the read
// past the new end sees fill bytes (double quotes) instead of killing the
// process (SIGBUS), the mapping says so, a JSON parse caught between its two
// passes stops inside the mapping, and the session loader turns it into an
// error. Also the bounded read of pipes and FIFOs (ReadFileUpTo).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <string>

#include "compactor/env.h"
#include "compactor/mem_env.h"
#include "compactor/session.h"
#include "support/test_util.h"

namespace compactor {
namespace {

using testing::TempDir;

TEST(TruncatedMapping, ReadsPastTheNewEndSeeQuotesAndAreMarked) {
  TempDir d;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const std::string f = d.Write("big.bin", std::string(page * 64, 'a'));
  Result<std::unique_ptr<MappedFile>> map = Env::Default()->MapFile(f);
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  std::unique_ptr<MappedFile> owned = std::move(map).value();
  const MappedFile& m = *owned;
  EXPECT_FALSE(m.truncated());
  ASSERT_EQ(::truncate(f.c_str(), static_cast<off_t>(page + 100)), 0);
  // Page 0 is still the file; the kernel zeroes the rest of page 1, the new
  // last page; page 10 is past the new end.
  EXPECT_EQ(m.data()[0], 'a');
  EXPECT_EQ(m.data()[page + 99], 'a');
  EXPECT_EQ(m.data()[page + 100], '\0');
  EXPECT_FALSE(m.truncated());  // nothing faulted yet
  volatile const char* lost = m.data() + page * 10;
  EXPECT_EQ(*lost, '"');  // without the handler: death by SIGBUS here
  EXPECT_TRUE(m.truncated());
  EXPECT_EQ(m.data()[page * 63], '"');
  // The spare page past the mapped size faults the same way.
  EXPECT_EQ(m.data()[page * 64 + 10], '"');
  owned.reset();  // unmaps: the path is remembered
  std::vector<std::string> seen = TruncatedMappedFiles();
  EXPECT_NE(std::find(seen.begin(), seen.end(), f), seen.end());
}

// The crash this guards against: the parser indexed the line, the line
// vanished, and reading a string then scanned for its closing quote through
// zeros, past the line and the mapping (a SEGV; under ASan an overflow).
TEST(TruncatedMapping, AParseCaughtBetweenItsPassesStopsInsideTheMapping) {
  TempDir d;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  for (size_t cut : {page * 2, page * 2 + 100, page * 5 + 7}) {
    SCOPED_TRACE(cut);
    const std::string line = R"({"b":1,"a":")" + std::string(page * 8, 'x') + R"("})";
    const std::string f = d.Write("s.json", line + "\n" + std::string(page, ' '));
    Result<std::unique_ptr<MappedFile>> map = Env::Default()->MapFile(f);
    ASSERT_TRUE(map.ok()) << map.status().ToString();
    simdjson::ondemand::parser parser;
    ASSERT_EQ(parser.allocate(64u << 10), simdjson::SUCCESS);  // as the session loader does
    simdjson::padded_string_view view((*map)->data(), line.size(),
                                      line.size() + simdjson::SIMDJSON_PADDING);
    simdjson::ondemand::document doc;
    ASSERT_EQ(parser.iterate(view).get(doc), simdjson::SUCCESS);  // pass 1: the index
    simdjson::ondemand::object object;
    ASSERT_EQ(doc.get_object().get(object), simdjson::SUCCESS);  // checks the closing brace
    ASSERT_EQ(::truncate(f.c_str(), static_cast<off_t>(cut)), 0);
    std::string_view a;
    // Pass 2 reads the string: it ends at the fill, within the mapping.
    ASSERT_EQ(object["a"].get_string().get(a), simdjson::SUCCESS);
    EXPECT_LE(a.size(), cut + page);  // up to the next page boundary
    EXPECT_TRUE((*map)->truncated());
  }
}

TEST(TruncatedMapping, OtherSigbusKeepsItsDefaultAction) {
  TempDir d;
  const std::string f = d.Write("x.bin", std::string(100, 'a'));
  // Installs the handler (first mapping of the process, or not).
  ASSERT_TRUE(Env::Default()->MapFile(f).ok());
  pid_t pid = fork();
  if (pid == 0) {
    ::raise(SIGBUS);  // not a fault in a registered mapping
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGBUS);
}

TEST(TruncatedMapping, ReadFileUpToBoundsPipesAndFiles) {
  TempDir d;
  const std::string f = d.Write("t.txt", std::string(1000, 'a'));
  Result<std::string> whole = Env::Default()->ReadFileUpTo(f, 1000);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->size(), 1000u);
  Result<std::string> over = Env::Default()->ReadFileUpTo(f, 999);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(over.status().message(), f + ": more than 999 bytes (the input limit)");
  // A FIFO with a writer that sends more than the limit.
  const std::string fifo = d.path() + "/p";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = ::open(fifo.c_str(), O_WRONLY);
    std::string chunk(1 << 16, 'b');
    for (int i = 0; i < 64; ++i)
      if (::write(fd, chunk.data(), chunk.size()) < 0) _exit(0);  // reader gone
    _exit(0);
  }
  // The writer may not have opened yet: until it has, the FIFO reads as empty.
  Result<std::string> piped = Status::Ok();
  for (int i = 0; i < 200; ++i) {
    piped = Env::Default()->ReadFileUpTo(fifo, 1 << 20);
    if (!piped.ok() || !piped->empty()) break;
    usleep(10000);
  }
  ASSERT_FALSE(piped.ok());
  EXPECT_EQ(piped.status().message(), fifo + ": more than 1048576 bytes (the input limit)");
  int status = 0;
  waitpid(pid, &status, 0);
  // The in-memory Env's default implementation agrees.
  std::unique_ptr<MemEnv> mem = NewMemEnv();
  ASSERT_TRUE(mem->CreateDirs("/work").ok());
  ASSERT_TRUE(mem->ReplaceFile("/work/m.txt", "hello").ok());
  EXPECT_TRUE(mem->ReadFileUpTo("/work/m.txt", 5).ok());
  EXPECT_EQ(mem->ReadFileUpTo("/work/m.txt", 4).status().message(),
            "/work/m.txt: more than 4 bytes (the input limit)");
}

TEST(TruncatedMapping, SessionOpenReportsIt) {
  TempDir d;
  std::string text =
      R"({"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"})"
      "\n";
  for (int i = 0; i < 20000; ++i) {
    text +=
        R"({"type":"message","id":"e)" + std::to_string(i) +
        R"(","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hello there","timestamp":1}})"
        "\n";
  }
  const std::string f = d.Write("s.jsonl", text);
  LoadOptions o;
  o.threads = 1;
  Result<std::unique_ptr<Session>> s = Session::Open(f, o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const Session& session = **s;
  EXPECT_TRUE(session.CheckIntact().ok());
  // Another process truncates the file after the load; a message's bytes
  // (still in the mapping) are read now.
  ASSERT_EQ(::truncate(f.c_str(), 4096), 0);
  // (A middle entry: the last line may be held in a padded copy.)
  const std::string_view middle = session.MessageJson(session.size() / 2);
  EXPECT_EQ(middle.find("hello there"), std::string_view::npos);  // fill, not the message
  Status intact = session.CheckIntact();
  EXPECT_EQ(intact.code(), StatusCode::kIoError);
  EXPECT_EQ(intact.message(), f + ": truncated by another process while it was read");
}

}  // namespace
}  // namespace compactor
