// GoogleTest main for multi-rank suites: MPI_Init, one verdict per test agreed
// by all ranks, readable output (see mpi_harness.h). Links as the library
// zap_mpi_gtest_main; suites supply only their tests.
#include <gtest/gtest.h>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>
#include "mpi_harness.h"
extern "C" {
#include "base/log.h"
}

namespace {
int g_rank = 0, g_size = 1;

struct LogState {
    std::mutex mu;
    std::vector<std::string> lines;        // this test's lines
    std::vector<std::string> expected;     // needles announced by the test
    std::vector<std::string> unexpected;   // warn/error lines nobody announced
};
LogState g_log;

void log_sink(void *, zap_log_level_t level, const char *line)
{
    std::lock_guard<std::mutex> g(g_log.mu);
    g_log.lines.emplace_back(line);
    if (level > ZAP_LOG_WARN)
        return;
    for (const auto &n : g_log.expected)
        if (strstr(line, n.c_str()) != nullptr)
            return;
    g_log.unexpected.emplace_back(line);
}

// Prints only on rank 0, except that every rank prints its own failures at
// once (with its rank), so output stays one stream per test.
class MpiPrinter : public testing::EmptyTestEventListener {
  public:
    void OnTestProgramStart(const testing::UnitTest &u) override
    {
        if (g_rank == 0)
            printf("[==========] %d tests from %d suites on %d ranks\n", u.test_to_run_count(),
                   u.test_suite_to_run_count(), g_size);
        fflush(stdout);
    }
    void OnTestStart(const testing::TestInfo &t) override
    {
        {
            std::lock_guard<std::mutex> g(g_log.mu);
            g_log.lines.clear();
            g_log.expected.clear();
            g_log.unexpected.clear();
        }
        if (g_rank == 0)
            printf("[ RUN      ] %s.%s\n", t.test_suite_name(), t.name());
        fflush(stdout);
    }
    void OnTestPartResult(const testing::TestPartResult &r) override
    {
        if (r.skipped()) {
            if (g_rank == 0)
                printf("[  SKIPPED ] %s\n", r.message());
            return;
        }
        if (!r.failed())
            return;
        fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", g_rank, r.file_name() ? r.file_name() : "?",
                r.line_number(), r.message());
        fflush(stderr);
    }
    void OnTestEnd(const testing::TestInfo &t) override
    {
        int failed = t.result()->Failed() ? 1 : 0;
        {
            std::lock_guard<std::mutex> g(g_log.mu);
            for (const auto &l : g_log.unexpected) {
                fprintf(stderr, "[rank %d] unexpected zap log line: %s", g_rank, l.c_str());
                failed = 1;
            }
            g_log.unexpected.clear();
        }
        fflush(stderr);
        std::vector<int> all(g_size);
        MPI_Allgather(&failed, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
        std::string ranks;
        for (int r = 0; r < g_size; r++)
            if (all[r])
                ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
        std::string name = std::string(t.test_suite_name()) + "." + t.name();
        if (!ranks.empty())
            failed_.push_back(name + " (ranks " + ranks + ")");
        if (g_rank == 0) {
            if (!ranks.empty())
                printf("[  FAILED  ] %s on ranks %s (%lld ms)\n", name.c_str(), ranks.c_str(),
                       (long long)t.result()->elapsed_time());
            else
                printf("[       OK ] %s (%lld ms)\n", name.c_str(), (long long)t.result()->elapsed_time());
        }
        fflush(stdout);
    }
    void OnTestProgramEnd(const testing::UnitTest &u) override
    {
        if (g_rank == 0) {
            printf("[==========] %d tests ran (%lld ms)\n", u.test_to_run_count(), (long long)u.elapsed_time());
            if (failed_.empty()) {
                printf("[  PASSED  ] all on %d ranks\n", g_size);
            } else {
                printf("[  FAILED  ] %zu tests:\n", failed_.size());
                for (const auto &f : failed_)
                    printf("[  FAILED  ] %s\n", f.c_str());
            }
        }
        fflush(stdout);
    }
    bool any_failed() const { return !failed_.empty(); }

  private:
    std::vector<std::string> failed_;
};
} // namespace

int MpiRank() { return g_rank; }
int MpiSize() { return g_size; }

void MpiExpectLog(const std::string &needle)
{
    std::lock_guard<std::mutex> g(g_log.mu);
    g_log.expected.push_back(needle);
}

bool MpiLogSeen(const std::string &needle)
{
    std::lock_guard<std::mutex> g(g_log.mu);
    for (const auto &l : g_log.lines)
        if (l.find(needle) != std::string::npos)
            return true;
    return false;
}

std::string MpiLogText()
{
    std::lock_guard<std::mutex> g(g_log.mu);
    std::string s;
    for (const auto &l : g_log.lines)
        s += l;
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    testing::InitGoogleTest(&argc, argv);
    zap_log_set_sink(log_sink, nullptr);
    auto &listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    auto *printer = new MpiPrinter;
    listeners.Append(printer); // owned by GoogleTest
    int rc = RUN_ALL_TESTS();
    (void)rc; /* the agreed verdict below counts, not the local one */
    int bad = printer->any_failed() ? 1 : 0;
    zap_log_set_sink(nullptr, nullptr);
    MPI_Finalize();
    return bad;
}
