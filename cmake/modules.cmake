# The module table: every module of the code, what it owns and what it uses.
# docs/architecture.md explains the rules; scripts/check_layers.py checks every
# #include against this table and the module graph in docs/architecture.md
# against the USES below (ctest `check_layers`, CI).
#
# compactor_module(NAME n [DIR d] [LIBRARY lib] [HEADERS h...] [USES m...]
#                  [EXPORTS h...] [DEPENDS target...] [PUBLIC_DEPENDS target...])
#   DIR      the module's folder (default src/<n>); every .cc in it is the
#            module's, so a new file needs no edit here.
#   LIBRARY  the library its objects go into: compactor (the product, default),
#            compactor_eval, compactor_test_support.
#   HEADERS  the public headers it owns, in include/compactor/.
#   USES     the modules whose headers it may include: each listed one must
#            come earlier in this file, so the graph has no cycle.
#   EXPORTS  the private headers of its folder that modules using it may
#            include (internal helpers shared below the public API); every
#            other header of the folder is the module's own.
#   DEPENDS / PUBLIC_DEPENDS  third-party targets (PUBLIC_DEPENDS: its
#            exported headers include them, so users compile against them too).
#
# compactor_program(NAME n DIR d USES lib... [INTERNAL m...])
#   A program folder (not a library module): it may include the public headers
#   of every module in the libraries it USES and, only where INTERNAL names a
#   module, that module's private headers (build tools and benchmarks of
#   internals). It builds its own targets in CMakeLists.txt.
#
# The order is the layering: a module may use only modules above it here.

compactor_module(NAME status
  HEADERS status.h version.h)
compactor_module(NAME env
  HEADERS env.h mem_env.h
  USES status)
compactor_module(NAME util
  HEADERS js_json.h kernel.h
  USES status env
  EXPORTS utf8.h json_scan.h js_canonical.h file.h background.h two_halves.h kernel.h
          simdjson_alloc.h
  PUBLIC_DEPENDS simdjson::simdjson)
compactor_module(NAME session
  HEADERS session.h message.h writer.h entries.h
  USES status env util
  EXPORTS message_observer.h
  PUBLIC_DEPENDS simdjson::simdjson)
# Sessions by id: the store `compactor serve` records into and serves
# (docs/api.md); the directory of pi session files or PostgreSQL (docs/store.md).
compactor_module(NAME store
  HEADERS store.h
  USES status env util session
  DEPENDS nlohmann_json::nlohmann_json ${CMAKE_DL_LIBS})
compactor_module(NAME context
  HEADERS context.h
  USES status session util
  DEPENDS simdjson::simdjson)
compactor_module(NAME tokens
  HEADERS estimate.h tokenizer.h
  USES status env util session context
  DEPENDS simdjson::simdjson ${CMAKE_DL_LIBS})
compactor_module(NAME policy
  HEADERS compaction_settings.h policy.h
  USES status env tokens
  DEPENDS fmt::fmt nlohmann_json::nlohmann_json)
compactor_module(NAME prepare
  HEADERS prepare.h file_ops.h
  USES status env util session context tokens policy
  DEPENDS simdjson::simdjson nlohmann_json::nlohmann_json)
compactor_module(NAME summarize
  HEADERS summarizer.h
  USES status util session)
compactor_module(NAME prune
  HEADERS prune.h
  USES status util session context tokens
  DEPENDS fmt::fmt nlohmann_json::nlohmann_json)
compactor_module(NAME strategies
  HEADERS compaction.h strategy.h user_prompts.h
  USES status env util session context tokens policy prepare summarize prune
  DEPENDS fmt::fmt)
# Reading settings files checks strategy names against the registry: above
# the strategies (the settings struct itself is policy's).
compactor_module(NAME settings
  HEADERS settings.h
  USES status env util tokens policy strategies
  DEPENDS fmt::fmt nlohmann_json::nlohmann_json)
compactor_module(NAME providers
  HEADERS providers.h provider_api.h client_request.h overflow.h llm_summarizer.h model_input.h
  USES status env util session context tokens summarize strategies
  EXPORTS curl_api.h json_util.h
  DEPENDS simdjson::simdjson nlohmann_json::nlohmann_json PkgConfig::PCRE2 compactor_curl_headers
    ${CMAKE_DL_LIBS})
compactor_module(NAME compact
  HEADERS compact.h branch.h
  USES status env util session context tokens policy prepare summarize prune strategies settings)
# The JSON shapes of the CLI's --json output, shared by the CLI and the
# service API of `compactor serve` (one builder, not copies).
compactor_module(NAME report
  HEADERS report.h
  USES status util session context tokens prepare strategies compact
  DEPENDS nlohmann_json::nlohmann_json)
compactor_module(NAME runtime
  HEADERS runtime.h
  USES status env util session context tokens policy summarize prune strategies settings compact
    providers
  DEPENDS fmt::fmt)

# Above the product: the quality evaluation (`compactor eval`), its own library.
compactor_module(NAME eval
  LIBRARY compactor_eval
  HEADERS eval.h
  USES status env util session context tokens summarize strategies compact providers
  DEPENDS fmt::fmt nlohmann_json::nlohmann_json)
# Above the product: `compactor serve`, the HTTP service and proxy
# (docs/serve.md), its own library because it links the HTTP server and the
# compression codecs. It reaches the upstream through its own HTTP/1.1
# client (plain HTTP to an address or localhost) or the providers' libcurl
# loader (curl_api.h) for the rest.
compactor_module(NAME serve
  LIBRARY compactor_serve
  HEADERS serve.h
  USES status env util session store context tokens policy prepare summarize strategies settings
    compact report providers
  DEPENDS fmt::fmt nlohmann_json::nlohmann_json compactor_curl_headers PkgConfig::SERVE_CODECS
  PUBLIC_DEPENDS PkgConfig::HTTPLIB)
# Test-only code: the sample corpus, the PCRE2 reference pre-tokenizer, the
# fake LLM server, the pi oracle runner, test helpers. Built only with tests
# or benchmarks; never in the product library.
compactor_module(NAME test_support
  DIR tests/support
  LIBRARY compactor_test_support
  USES status env util session tokens summarize compact providers
  EXPORTS compaction_fixtures.h fake_llm_server.h oracle.h pcre2_splitter.h sample_corpus.h
    test_util.h
  PUBLIC_DEPENDS GTest::gtest
  DEPENDS PkgConfig::PCRE2 PkgConfig::HTTPLIB nlohmann_json::nlohmann_json)

# Programs: the public API only, except where INTERNAL says (and why).
compactor_program(NAME cli DIR cli USES compactor compactor_eval compactor_serve)
compactor_program(NAME examples DIR examples USES compactor)
# The vocabulary converter writes the binary format tokens/vocab_file.h
# defines; it is a build step, not an installed program.
compactor_program(NAME tools DIR tools USES compactor INTERNAL tokens util)
# The tokenizer benchmark measures the pre-tokenizer kernels against the PCRE2
# reference (test support) directly; the serve benchmarks time the proxy's
# compaction hook in process and build its requests with serve's own helpers.
compactor_program(NAME bench DIR bench USES compactor compactor_serve compactor_test_support
  INTERNAL tokens test_support serve)
