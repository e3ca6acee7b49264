#include "core/trace.h"

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <vector>

#include "core/error.h"

namespace tandem::trace {

namespace {

struct Event {
  std::string name;
  int row;
  double start_us, duration_us;
};

struct Trace {
  std::mutex mutex;
  std::string path;
  std::vector<Event> events;
  std::map<std::string, int> rows;  // name -> the trace's thread id
  Clock::time_point origin = Clock::now();
  std::atomic<bool> on{false};

  Trace() {
    if (const char* env = std::getenv("TANDEM_TRACE"); env && *env) {
      path = env;
      on = true;
    }
  }
  ~Trace() {
    if (on) write();
  }

  void write() {
    std::lock_guard lock(mutex);
    std::ofstream out(path, std::ios::trunc);
    if (!out) return;  // at exit there is no one left to tell; flush() checks below
    // Rows sorted so devices come in order and "comm" last.
    out << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
    bool first = true;
    int rank = 0;
    for (const auto& [name, id] : rows) {
      out << (first ? "" : ",\n") << "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": " << id
          << ", \"args\": {\"name\": \"" << name << "\"}}";
      out << ",\n{\"ph\": \"M\", \"name\": \"thread_sort_index\", \"pid\": 1, \"tid\": " << id
          << ", \"args\": {\"sort_index\": " << (name == "comm" ? 1000000 : rank++) << "}}";
      first = false;
    }
    for (const Event& e : events) {
      out << (first ? "" : ",\n") << "{\"ph\": \"X\", \"name\": \"" << e.name << "\", \"pid\": 1, \"tid\": " << e.row
          << ", \"ts\": " << e.start_us << ", \"dur\": " << e.duration_us << "}";
      first = false;
    }
    out << "\n]}\n";
  }
};

Trace& global() {
  static Trace trace;
  return trace;
}

}  // namespace

bool enabled() { return global().on.load(std::memory_order_relaxed); }

void set_output(const std::string& path) {
  Trace& t = global();
  std::lock_guard lock(t.mutex);
  t.path = path;
  t.events.clear();
  t.on = !path.empty();
}

void flush() {
  Trace& t = global();
  if (!t.on) return;
  t.write();
  std::ifstream check(t.path);
  TD_CHECK(check.good(), "trace: cannot write ", t.path);
}

void record(const std::string& name, const std::string& row, Clock::time_point start, Clock::time_point end) {
  Trace& t = global();
  if (!t.on) return;
  std::lock_guard lock(t.mutex);
  auto [it, added] = t.rows.try_emplace(row, static_cast<int>(t.rows.size()) + 1);
  t.events.push_back({name, it->second, std::chrono::duration<double, std::micro>(start - t.origin).count(),
                      std::chrono::duration<double, std::micro>(end - start).count()});
}

Span::Span(const char* name, std::string row) : name_(name), row_(std::move(row)), on_(enabled()) {
  if (on_) start_ = Clock::now();
}

Span::~Span() {
  if (on_) record(name_, row_, start_, Clock::now());
}

}  // namespace tandem::trace
