// The main of every test binary: runs Catch2 (leaving out [slow] tests unless a test spec is
// given) and ends with one line the CI script counts: "tandem-tests: P passed, F failed, S skipped";
// each failed case is also named on a line "tandem-tests: failed: NAME".
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <set>
#include <string>

#include "tests/testing.h"

namespace tandem::testing {
std::set<std::string>& skipped_tests();
}

namespace {

struct Counts {
  int passed = 0, failed = 0, skipped = 0;
} counts;

class SummaryListener : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;

  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    if (stats.totals.testCases.failed > 0 || stats.totals.assertions.failed > 0) {
      ++counts.failed;
      // One line per failed case, in one piece (Catch2 wraps long names), for scripts to list.
      std::printf("tandem-tests: failed: %s\n", stats.testInfo.name.c_str());
      std::fflush(stdout);
    } else if (tandem::testing::skipped_tests().count(stats.testInfo.name)) {
      ++counts.skipped;
    } else {
      ++counts.passed;
    }
  }

  void testRunEnded(const Catch::TestRunStats&) override {
    std::printf("tandem-tests: %d passed, %d failed, %d skipped\n", counts.passed, counts.failed, counts.skipped);
    std::fflush(stdout);
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(SummaryListener)

int main(int argc, char** argv) {
  Catch::Session session;
  int rc = session.applyCommandLine(argc, argv);
  if (rc != 0) return rc;
  if (session.configData().testsOrTags.empty()) session.configData().testsOrTags = {"~[slow]"};
  std::printf("tandem-tests: seed %llu (set TANDEM_TEST_SEED to repeat)\n",
              static_cast<unsigned long long>(tandem::testing::test_seed()));
  return session.run();
}
