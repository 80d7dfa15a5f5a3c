#!/usr/bin/env bash
# The installed package as an outside project sees it (docs/architecture.md,
# "Installing"): installs BUILD_DIR into a temporary prefix, moves the prefix
# elsewhere (the install must be relocatable), checks its tree, builds
# tests/consumer against it with find_package(compactor) and with pkg-config,
# runs both on a bundled session and compares them with the installed
# bin/compactor run from the moved prefix (vocabulary found relative to the
# binary). Needs a built BUILD_DIR with the vocabularies converted
# (scripts/install_vocab.sh BUILD_DIR/vocab, then a build). ctest runs it as
# `install_consumer`.
#   scripts/test_consumer.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/compactor_consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
  echo "test_consumer: $*" >&2
  exit 1
}
unset COMPACTOR_VOCAB_DIR

cmake --install "$build" --prefix "$work/staged" >/dev/null
mv "$work/staged" "$work/moved"
prefix=$work/moved

# The tree: public headers only, the library, the package files, the program
# and its data.
pc=$(find "$prefix" -name compactor.pc -path '*/pkgconfig/*' | head -1)
[ -n "$pc" ] || fail "no compactor.pc in the install"
libdir=$(dirname "$(dirname "$pc")")
for f in include/compactor/session.h include/compactor/context.h include/compactor/version.h \
  bin/compactor share/compactor/vocab/o200k_base.cvocab; do
  [ -e "$prefix/$f" ] || fail "missing $f in the install"
done
for f in compactorConfig.cmake compactorConfigVersion.cmake compactorTargets.cmake; do
  [ -e "$libdir/cmake/compactor/$f" ] || fail "missing cmake/compactor/$f in the install"
done
lib=
for f in "$libdir"/libcompactor.a "$libdir"/libcompactor.so; do
  if [ -e "$f" ]; then lib=$f; fi
done
[ -n "$lib" ] || fail "no libcompactor.a or .so in $libdir"
expected_headers=$( (cd "$root/include/compactor" && ls ./*.h; echo ./version.h) | sed 's|^\./||' | sort)
installed_headers=$(cd "$prefix/include/compactor" && ls | sort)
[ "$expected_headers" = "$installed_headers" ] ||
  fail "installed headers differ from include/compactor/: $(diff <(echo "$expected_headers") <(echo "$installed_headers") | tr '\n' ' ')"
# The product library holds no test-only code and no evaluation.
if nm -C "$lib" 2>/dev/null | grep -E ' [TW] .*(Pcre2Splitter|SyntheticCorpus|SampleEnglish|FakeLlmServer|RunOracle|GenerateEvalSession|ScoreFacts|ParseFactFile)' | head -3 | grep .; then
  fail "test-only or eval symbols in $lib"
fi

launcher=()
if command -v ccache >/dev/null; then launcher=(ccache); fi
cxx=${CXX:-c++}

# 1. CMake: find_package(compactor) from the moved prefix.
cmake -S "$root/tests/consumer" -B "$work/cmake-build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER=ccache} >/dev/null
cmake --build "$work/cmake-build" >/dev/null
# 2. pkg-config: the flags of compactor.pc alone link a static consumer.
export PKG_CONFIG_PATH="$libdir/pkgconfig"
read -r -a cflags <<<"$(pkg-config --cflags compactor)"
read -r -a libs <<<"$(pkg-config --libs --static compactor)"
# A shared libcompactor is found at run time through the consumer's rpath.
if [ "${lib%.so}" != "$lib" ]; then libs+=("-Wl,-rpath,$libdir"); fi
"${launcher[@]}" "$cxx" -std=c++20 -O2 "${cflags[@]}" "$root/tests/consumer/main.cc" \
  -o "$work/consumer-pc" "${libs[@]}"

session=$root/examples/session.jsonl
vocab=$prefix/share/compactor/vocab
out_cmake=$("$work/cmake-build/consumer" "$session" "$vocab")
out_pc=$("$work/consumer-pc" "$session" "$vocab")
[ "$out_cmake" = "$out_pc" ] || fail "the two consumers differ: '$out_cmake' vs '$out_pc'"

# The installed program from the moved prefix: its version, and the o200k
# vocabulary found relative to it (no --vocab-dir, no COMPACTOR_VOCAB_DIR).
version=$(sed -n 's/^project(compactor VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
[ "$("$prefix/bin/compactor" --version | head -n 1)" = "compactor $version" ] ||
  fail "bin/compactor --version is not 'compactor $version'"
json=$(cd / && "$prefix/bin/compactor" tokens "$session" --tokenizer o200k --json)
messages=$(sed -n 's/.*"messages":\([0-9]*\).*/\1/p' <<<"$json")
tokens=$(sed -n 's/.*"tokens":\([0-9]*\).*/\1/p' <<<"$json")
expected="version $version"$'\n'"entries $(($(wc -l <"$session") - 1))"$'\n'"messages $messages"$'\n'"tokens $tokens"
[ "$out_cmake" = "$expected" ] || fail "consumer printed '$out_cmake', expected '$expected' (bin/compactor: $json)"
echo "test_consumer: ok ($(basename "$lib"), find_package and pkg-config consumers agree with bin/compactor: $messages messages, $tokens o200k tokens)"
