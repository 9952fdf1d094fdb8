// The daemon's flag table (PQCD_SERVER_FLAGS in server/include/pqcd/server/config.h) against what
// is derived from it and what is still written by hand: `pqcd --help`, the effective-config log
// and the flag list in server/README.md. A flag added in one place only fails here; a Config
// member added outside the table does not compile (the static_assert in config.cc).
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "pqcd/server/config.h"

namespace pqcd::server {
namespace {

// The table's flag names, and the options CLI11 adds itself besides them.
std::vector<std::string> TableNames() {
  std::vector<std::string> names;
  for (const FlagInfo& info : kFlags) names.emplace_back(info.name);
  return names;
}
const std::vector<std::string> kBuiltIn = {"help", "version", "config"};

std::string Help() {
  std::vector<const char*> args = {"pqcd", "--help"};
  auto parsed = ParseConfig(static_cast<int>(args.size()), args.data());
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? parsed->output : std::string();
}

// Every "--name" in `text`.
std::set<std::string> Mentioned(const std::string& text) {
  std::set<std::string> out;
  const std::regex flag("--([a-z][a-z0-9-]*)");
  for (std::sregex_iterator it(text.begin(), text.end(), flag), end; it != end; ++it) {
    out.insert((*it)[1]);
  }
  return out;
}

TEST(ConfigFlags, TableRowsAreUnique) {
  std::set<std::string> seen;
  for (const std::string& name : TableNames()) {
    EXPECT_TRUE(seen.insert(name).second) << name << " has two rows";
    EXPECT_FALSE(name.starts_with("-")) << name;
  }
  EXPECT_GT(seen.size(), 50u);
}

// `pqcd --help` lists the table's rows, in the table's order, after CLI11's own options, each
// with its PQCD_<FLAG> environment variable, and no other option.
TEST(ConfigFlags, HelpListsExactlyTheTableInOrder) {
  const std::string help = Help();
  std::vector<std::string> listed;
  std::istringstream lines(help);
  const std::regex option_line("^  (?:-h,)?--([a-z0-9-]+)(.*)$");
  std::smatch m;
  for (std::string line; std::getline(lines, line);) {
    if (!std::regex_match(line, m, option_line)) continue;
    listed.push_back(m[1]);
    if (std::find(kBuiltIn.begin(), kBuiltIn.end(), m[1]) != kBuiltIn.end()) continue;
    std::string env = "PQCD_" + std::string(m[1]);
    std::transform(env.begin(), env.end(), env.begin(),
                   [](char c) { return c == '-' ? '_' : static_cast<char>(std::toupper(c)); });
    EXPECT_NE(line.find("(Env:" + env + ")"), std::string::npos) << line;
  }
  std::vector<std::string> expected = kBuiltIn;
  for (const std::string& name : TableNames()) expected.push_back(name);
  for (const std::string& name : listed) {
    EXPECT_NE(std::find(expected.begin(), expected.end(), name), expected.end())
        << "--" << name << " is in pqcd --help but not a row of PQCD_SERVER_FLAGS";
  }
  for (const std::string& name : expected) {
    EXPECT_NE(std::find(listed.begin(), listed.end(), name), listed.end())
        << "--" << name << " is a row of PQCD_SERVER_FLAGS but not in pqcd --help";
  }
  EXPECT_EQ(listed, expected) << help;
}

// The start-up log's effective configuration has one key per row (the flag name with '_', as in
// a --config file) and --config, and nothing else.
TEST(ConfigFlags, EffectiveConfigHasEveryRowAndNothingElse) {
  std::vector<const char*> args = {"pqcd"};
  auto parsed = ParseConfig(static_cast<int>(args.size()), args.data());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const auto j = nlohmann::json::parse(parsed->effective_json);
  std::set<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.insert(key);
  std::set<std::string> expected = {"config"};
  for (std::string name : TableNames()) {
    std::replace(name.begin(), name.end(), '-', '_');
    expected.insert(name);
  }
  EXPECT_EQ(keys, expected) << parsed->effective_json;
}

// server/README.md's flag list (its "## Flags" section) names exactly the table's rows and the
// options CLI11 adds: a row without its README entry, or an entry without its row, fails.
TEST(ConfigFlags, ReadmeFlagListIsTheTable) {
  std::ifstream in(PQCD_SERVER_README);
  ASSERT_TRUE(in) << PQCD_SERVER_README;
  const std::string readme{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const size_t begin = readme.find("\n## Flags");
  ASSERT_NE(begin, std::string::npos) << "server/README.md has no '## Flags' section";
  const size_t end = readme.find("\n## ", begin + 1);
  const std::set<std::string> documented = Mentioned(readme.substr(begin, end - begin));
  std::set<std::string> expected(kBuiltIn.begin(), kBuiltIn.end());
  for (const std::string& name : TableNames()) expected.insert(name);
  for (const std::string& name : expected) {
    EXPECT_TRUE(documented.contains(name))
        << "--" << name << " is a flag but not in server/README.md's flag list";
  }
  for (const std::string& name : documented) {
    EXPECT_TRUE(expected.contains(name))
        << "--" << name << " is in server/README.md's flag list but not a flag";
  }
}

// --legacy-local-owner's default is computed (pqcd's euid): Config has it, and --help shows it.
TEST(ConfigFlags, ComputedDefault) {
  const std::string owner = "unix:uid:" + std::to_string(::geteuid());
  EXPECT_EQ(DefaultLegacyLocalOwner(), owner);
  EXPECT_EQ(Config{}.legacy_local_owner, owner);
  EXPECT_NE(Help().find("--legacy-local-owner TEXT=" + owner + " "), std::string::npos) << Help();
}

}  // namespace
}  // namespace pqcd::server
