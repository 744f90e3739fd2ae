// CleanText and CutText: a cluster's words made safe for logs, events and
// terminals, and cut to a bound.
#include <catch2/catch.hpp>

#include "gantry/common/cut_text.h"

namespace gantry {

TEST_CASE("CleanText replaces control characters and keeps the rest of the text", "[common]") {
  CHECK(CleanText("quota exceeded") == "quota exceeded");
  CHECK(CleanText("a\nb\r\nc\td") == "a b  c d");
  CHECK(CleanText("\x1b[2Jcleared\x7f") == "?[2Jcleared?");
  CHECK(CleanText("c1 \xc2\x9b" "31m") == "c1 ?31m");                // U+009B, a C1 escape
  CHECK(CleanText("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac") == "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac");  // kept
  CHECK(CleanText("\xc2\xa0nbsp") == "\xc2\xa0nbsp");                // U+00A0 is no control
}

TEST_CASE("CleanText removes Unicode line separators and bidirectional controls", "[common]") {
  // U+2028 and U+2029 break a line in some terminals and log viewers.
  CHECK(CleanText("one\xe2\x80\xa8two\xe2\x80\xa9three") == "one two three");
  // A right-to-left override shows "gpj.exe" as "exe.jpg"; each control is a '?'.
  CHECK(CleanText("file \xe2\x80\xaegpj.exe") == "file ?gpj.exe");
  for (const char* control : {"\xe2\x80\x8e", "\xe2\x80\x8f", "\xe2\x80\xaa", "\xe2\x80\xab", "\xe2\x80\xac",
                              "\xe2\x80\xad", "\xe2\x81\xa6", "\xe2\x81\xa7", "\xe2\x81\xa8", "\xe2\x81\xa9",
                              "\xd8\x9c"}) {
    INFO(control);
    CHECK(CleanText(std::string("a") + control + "b") == "a?b");
  }
  // Their neighbours are ordinary characters: an en dash, a bullet, an Arabic letter.
  CHECK(CleanText("1\xe2\x80\x93" "2 \xe2\x80\xa2 \xd8\xa8") == "1\xe2\x80\x93" "2 \xe2\x80\xa2 \xd8\xa8");
  // Cut short inside one: the bytes left are kept as they are (CutText cuts between characters).
  CHECK(CleanText("x\xe2\x80") == "x\xe2\x80");
}

TEST_CASE("CutText cuts between UTF-8 characters and cleans what it keeps", "[common]") {
  CHECK(CutText("short", 10) == "short");
  CHECK(CutText("abc\xe2\x80\xae" "def", 5) == "abc...");  // the override's first bytes would fit: not kept
  CHECK(CutText("a\nbcdef", 3) == "a b...");
}

TEST_CASE("HasControlText tells the text CleanText would change", "[common]") {
  CHECK_FALSE(HasControlText("eu-central-1"));
  CHECK_FALSE(HasControlText("s3://bucket/\xe2\x80\x93" "data"));  // an en dash is text
  CHECK(HasControlText("eu\nus"));
  CHECK(HasControlText("a\tb"));
  CHECK(HasControlText("x\x1b[31m"));
  CHECK(HasControlText("H100\xe2\x80\xae"));  // U+202E
}

}  // namespace gantry
