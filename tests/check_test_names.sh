#!/usr/bin/env bash
# Checks the names of the Catch2 test cases and sections under tests/:
#   - a ": " must come before column WIDTH - 10 (see support/catch_main.cc:
#     past the console width, Catch aborts when it prints a failing name);
#   - no ";" in a test case's name (CTest splits a discovered test's name
#     there, and neither half matches a test; sections are not discovered).
# Prints each offending name with its file and line; exit 1 if any.
set -euo pipefail
cd "$(dirname "$0")"
WIDTH=${1:-160}
bad=0
while IFS= read -r hit; do
  where=$(cut -d: -f1,2 <<<"$hit")
  what=$(cut -d: -f3- <<<"$hit")
  macro=${what%%(*}
  name=${what#*\(\"}
  name=${name%\"}
  rest=${name%%": "*}
  if [ "$rest" != "$name" ] && [ $(( ${#rest} + 2 )) -ge $(( WIDTH - 10 )) ]; then
    echo "$where: \": \" at column $(( ${#rest} + 2 )) (keep it before $(( WIDTH - 10 ))): $name"
    bad=1
  fi
  if [ "$macro" = TEST_CASE ] && [[ "$name" == *";"* ]]; then
    echo "$where: \";\" in a test case's name (CTest splits the name there): $name"
    bad=1
  fi
done < <(grep -rnoE '(TEST_CASE|SECTION)\("([^"\\]|\\.)*"' --include='*.cc' .)
if [ "$bad" = 0 ]; then echo "ok: every test case and section name fits"; fi
exit "$bad"
