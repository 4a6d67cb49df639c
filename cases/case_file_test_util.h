// Shared by the case-file tests: a file that must be refused, and the words its error must carry.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "case_file.h"

namespace kvh::testing {

/// Parses `text` as "bad.toml" and expects CaseFileError whose message contains `needle`.
inline void expect_error(const std::string& text, const std::string& needle) {
  try {
    parse_case_text(text, "bad.toml");
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const CaseFileError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what() << "\nwanted: " << needle;
  }
}

}  // namespace kvh::testing
