// The settings table against the docs made from it, and against Config's
// own defaults: a setting added, renamed or re-worded in one place and not
// the other fails here. So does a setting the README or a doc names that
// the table does not have.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "runtime/manpage.hpp"
#include "runtime/settings.hpp"

using edri::Config;
using edri::settings;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The doc's settings table: from its header row to the first line that is
// not a table row.
std::vector<std::string> doc_table() {
  std::ifstream doc(EDRI_DOCS_DIR "/configuration.md");
  REQUIRE(doc);
  std::vector<std::string> table;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("| variable | default | meaning |", 0) == 0)
      table.push_back(line);
    else if (!table.empty() && line.rfind("|", 0) == 0)
      table.push_back(line);
    else if (!table.empty())
      break;
  }
  return table;
}

bool is_value(const edri::Setting& s) { return s.default_text[0] == '`'; }

std::string text_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  REQUIRE(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Each EDRI_ name in `text`, as far as its capitals, digits and '_' go.
std::vector<std::string> edri_names(const std::string& text) {
  std::vector<std::string> names;
  for (std::size_t at = text.find("EDRI_"); at != std::string::npos; at = text.find("EDRI_", at)) {
    std::size_t end = at + 5;
    while (end < text.size() && (std::isupper(static_cast<unsigned char>(text[end])) ||
                                 std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '_'))
      ++end;
    names.push_back(text.substr(at, end - at));
    at = end;
  }
  return names;
}

}  // namespace

TEST_CASE("docs/configuration.md's table is the one the settings make", "[config][docs]") {
  const auto doc = doc_table();
  const auto made = lines_of(edri::settings_markdown());
  INFO("regenerate it: build/bin/edri-server --print-config-markdown, pasted over the table");
  for (std::size_t i = 0; i < std::min(doc.size(), made.size()); ++i) {
    INFO("table line " << i + 1);
    REQUIRE(doc[i] == made[i]);
  }
  CHECK(doc.size() == made.size());
}

TEST_CASE("every EDRI_ name in the README and the docs is a setting of the table", "[config][docs]") {
  // Named in the docs and not settings: the plugin macros, the notes
  // app's database, the supervisor's variables for its children, and the
  // typo the docs show refused, and the prefix itself.
  const std::set<std::string> others{"EDRI_PLUGIN",    "EDRI_TOOLCHAIN", "EDRI_NOTES_DB",
                                     "EDRI_INTERNAL_", "EDRI_PROT",      "EDRI_"};
  std::set<std::string> names(others);
  for (const auto& s : settings()) names.insert(s.name);
  const std::filesystem::path docs(EDRI_DOCS_DIR);
  std::vector<std::filesystem::path> files{docs.parent_path() / "README.md"};
  for (const auto& entry : std::filesystem::directory_iterator(docs))
    if (entry.path().extension() == ".md") files.push_back(entry.path());
  REQUIRE(files.size() > 5);
  for (const auto& file : files)
    for (const std::string& name : edri_names(text_of(file))) {
      INFO(file.filename().string() << " names " << name);
      CHECK(names.count(name) == 1);
    }
}

TEST_CASE("a setting's default in the docs is Config's default", "[config][docs]") {
  const Config defaults;
  for (const auto& s : settings()) {
    INFO(s.name << " documented as " << s.default_text);
    const std::string shown = s.binding.show(defaults);
    if (is_value(s))
      CHECK("`" + shown + "`" == s.default_text);
    else  // unset: nothing, or 0 for "what the plugin asked for"
      CHECK((shown.empty() || shown == "0"));
  }
}

TEST_CASE("a default written back into the environment reads as itself", "[config]") {
  for (const auto& s : settings()) {
    if (!is_value(s)) continue;
    const std::string shown = s.binding.show(Config{});
    INFO(s.name << "=" << shown);
    ::setenv(s.name, shown.c_str(), 1);
    CHECK(s.binding.show(Config::from_env()) == shown);
    ::unsetenv(s.name);
  }
}

TEST_CASE("every setting has one name and one print-config line", "[config]") {
  std::set<std::string> names;
  for (const auto& s : settings()) CHECK(names.insert(s.name).second);
  const auto described = lines_of(Config{}.describe());
  REQUIRE(described.size() == settings().size());
  for (std::size_t i = 0; i < described.size(); ++i)
    CHECK(described[i].rfind(std::string(settings()[i].name) + "=", 0) == 0);
}

TEST_CASE("the manual page names every setting, its text in troff", "[config][docs]") {
  const auto page = edri::manpage("9.8.7");
  CHECK(page.rfind(".TH EDRI\\-SERVER 1 \"\" \"edri 9.8.7\"", 0) == 0);
  for (const auto& s : edri::settings()) CHECK(page.find(std::string("\n.B ") + s.name + "\n") != std::string::npos);
  for (const auto* section : {".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH ENVIRONMENT", ".SH SIGNALS",
                              ".SH EXIT STATUS", ".SH FILES", ".SH SEE ALSO"})
    CHECK(page.find(std::string("\n") + section + "\n") != std::string::npos);
  CHECK(edri::troff_text("a `--port` b-c") == "a \\fB\\-\\-port\\fR b-c");
  CHECK(edri::troff_text("`a,b` c\\d") == "\\fBa,\\:b\\fR c\\ed");
  CHECK(edri::troff_text(".hidden") == "\\&.hidden");
  CHECK(edri::troff_text("`open") == "\\fBopen\\fR");
}
