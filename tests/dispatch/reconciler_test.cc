// Reconciler: the order in which woken jobs are served.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <thread>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "gantry/dispatch/reconciler.h"
#include "gantry/store/sqlite_store.h"
#include "store_test_util.h"
#include "test_support.h"

namespace gantry {

namespace {

// A reconciler whose pass only records the order in which jobs are served.
struct ServedInOrder {
  testing::TempDir dir;
  std::unique_ptr<SqliteStore> store = testing::OpenStore(dir.File("gantry.db"));
  SystemClock clock;
  std::mutex mu;
  std::vector<std::string> served;
  // Scans read the store two rows at a time, so that a few jobs take pages.
  Reconciler reconciler{*store, clock,
                        [this](const std::string& uid) {
                          std::lock_guard lock(mu);
                          served.push_back(uid);
                          return int64_t{-1};
                        },
                        1, 2};

  // Starts the worker on what is queued, waits until n jobs were served,
  // stops it, and returns the order.
  std::vector<std::string> Serve(std::size_t n) {
    REQUIRE(reconciler.Start().ok());
    REQUIRE(testing::WaitFor([&] {
      std::lock_guard lock(mu);
      return served.size() >= n;
    }));
    reconciler.Stop();
    return served;
  }
};

}  // namespace

TEST_CASE("urgent wakes first, then plain ones, then new jobs by priority and submission order", "[dispatch]") {
  ServedInOrder r;
  Reconciler& reconciler = r.reconciler;
  // Queued before the worker starts, so the order is the queues' alone.
  reconciler.WakeNew("low-seq1", 0, 1);
  reconciler.WakeNew("high-seq3", 10, 3);
  reconciler.WakeNew("high-seq2", 10, 2);
  reconciler.WakeNew("mid-seq4", 5, 4);
  reconciler.WakeNew("negative-seq5", -3, 5);
  reconciler.Wake("plain");
  reconciler.WakeUrgent("urgent");
  reconciler.WakeNew("plain", 100, 6);         // already queued: served once, as a plain wake
  reconciler.WakeUrgent("mid-seq4");           // moves ahead; its new-job entry is skipped
  CHECK(r.Serve(7) == std::vector<std::string>{"urgent", "mid-seq4", "plain", "high-seq2", "high-seq3", "low-seq1",
                                               "negative-seq5"});
}

TEST_CASE("the start-up scans wake every unfinished job over many pages, queued ones by priority", "[dispatch]") {
  ServedInOrder r;
  SqliteStore& store = *r.store;
  std::map<std::string, std::string> name_of;
  auto submit = [&](const std::string& name, int32_t priority) {
    JobRecord job = testing::MakeJob("ns", name);
    job.priority = priority;
    REQUIRE(testing::SubmitSync(store, job).ok());
    name_of[job.uid] = name;
    return job.uid;
  };
  submit("queued-low", 0);
  testing::ForcePhase(store, submit("running-a", 0), JobPhase::kRunning);
  submit("queued-high", 10);
  testing::ForcePhase(store, submit("running-b", 7), JobPhase::kRunning);
  submit("queued-mid", 5);
  submit("queued-high-newer", 10);
  testing::ForcePhase(store, submit("done", 0), JobPhase::kSucceeded);
  const std::string cleanup = submit("finished-with-objects", 0);
  DispatchUpdate nominate;
  nominate.uid = cleanup;
  nominate.expected_phase = JobPhase::kQueued;
  nominate.phase = JobPhase::kNominating;
  nominate.epoch = 1;
  nominate.upsert_intents = {testing::MakeIntent("c1", "Workload", 1, true)};
  REQUIRE(testing::ApplySync(store, nominate).ok());
  testing::ForcePhase(store, cleanup, JobPhase::kFailed);
  // Judged against the clusters of then: judged again, among the new jobs.
  testing::ForcePhase(store, submit("unschedulable", 7), JobPhase::kUnschedulable);

  std::vector<std::string> served;
  for (const std::string& uid : r.Serve(8)) served.push_back(name_of[uid]);
  // Jobs in flight and cleanup left first, then the queued and the
  // unschedulable ones as new jobs, by priority.
  CHECK(served == std::vector<std::string>{"running-a", "running-b", "finished-with-objects", "queued-high",
                                           "queued-high-newer", "unschedulable", "queued-mid", "queued-low"});
}

TEST_CASE("a cancel of a job still waiting for its first pass is served before the other new jobs", "[dispatch]") {
  ServedInOrder r;
  // A backlog of new jobs, the cancelled one last in line.
  for (int i = 0; i < 100; ++i) r.reconciler.WakeNew("new-" + std::to_string(i), 0, i);
  r.reconciler.Wake("plain");
  dispatch::JobIntake& intake = r.reconciler;  // as the API calls it
  bool acknowledged = false;
  intake.CancelRequested("new-99", [&] { acknowledged = true; });
  CHECK(acknowledged);
  std::vector<std::string> served = r.Serve(101);
  REQUIRE(served.size() == 101);  // served once: its new-job entry is skipped
  CHECK(served[0] == "new-99");
  CHECK(served[1] == "plain");
  CHECK(served[2] == "new-0");
  CHECK(served.back() == "new-98");
}

TEST_CASE("a pass answers the timers asked for before it began, not those asked for while it ran", "[dispatch]") {
  testing::TempDir dir;
  std::unique_ptr<SqliteStore> store = testing::OpenStore(dir.File("gantry.db"));
  SystemClock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, int> passes;
  bool hold_in_pass = false;  // the next pass over "held" waits for release
  bool in_pass = false;
  Reconciler reconciler(*store, clock, [&](const std::string& uid) {
    std::unique_lock lock(mu);
    ++passes[uid];
    if (uid == "held" && hold_in_pass) {
      in_pass = true;
      cv.notify_all();
      cv.wait(lock, [&] { return !hold_in_pass; });
    }
    return int64_t{-1};
  });
  REQUIRE(reconciler.Start().ok());
  auto count = [&](const std::string& uid) {
    std::lock_guard lock(mu);
    return passes[uid];
  };

  // A timer set, then a pass that finds nothing left to do: the timer is
  // answered. The marker's later timer shows that it would have fired.
  reconciler.WakeAfter("answered", 300);
  reconciler.WakeUrgent("answered");
  REQUIRE(testing::WaitFor([&] { return count("answered") == 1; }));
  reconciler.WakeAfter("marker", 600);
  REQUIRE(testing::WaitFor([&] { return count("marker") == 1; }));
  CHECK(count("answered") == 1);

  // A timer asked for while the pass runs (an event it may not have seen)
  // is kept, even when it merges into an earlier one set before the pass.
  {
    std::lock_guard lock(mu);
    hold_in_pass = true;
  }
  reconciler.WakeAfter("held", 100);
  reconciler.WakeUrgent("held");
  {
    std::unique_lock lock(mu);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return in_pass; }));
  }
  reconciler.WakeAfter("held", 200);  // merges into the earlier timer
  {
    std::lock_guard lock(mu);
    hold_in_pass = false;
  }
  cv.notify_all();
  REQUIRE(testing::WaitFor([&] { return count("held") == 2; }));
  reconciler.Stop();
}

TEST_CASE("a timer asked for while a pass runs is kept when the wall clock steps back meanwhile", "[dispatch]") {
  testing::TempDir dir;
  std::unique_ptr<SqliteStore> store = testing::OpenStore(dir.File("gantry.db"));
  FakeClock clock;
  std::mutex mu;
  std::map<std::string, int> passes;
  Reconciler* self = nullptr;
  Reconciler reconciler(*store, clock, [&](const std::string& uid) {
    int n;
    {
      std::lock_guard lock(mu);
      n = ++passes[uid];
    }
    if (n == 1) {
      // NTP steps the clock back 2 s, then an event of the job asks for a
      // look (as Engine::Observed does) before this pass ends.
      clock.Advance(-2'000);
      self->WakeAfter(uid, 0);
    }
    return int64_t{-1};
  });
  self = &reconciler;
  REQUIRE(reconciler.Start().ok());
  reconciler.WakeUrgent("stepped");
  // Dropped as answered by the pass (stamped before it began, by the wall
  // clock), the event would get no look until the job's next wake.
  CHECK(testing::WaitFor([&] {
    std::lock_guard lock(mu);
    return passes["stepped"] == 2;
  }));
  reconciler.Stop();
}

TEST_CASE("backstop_timers() counts the timers a pass marked as a backstop until they fire or are answered", "[dispatch]") {
  testing::TempDir dir;
  std::unique_ptr<SqliteStore> store = testing::OpenStore(dir.File("gantry.db"));
  SystemClock clock;
  std::mutex mu;
  std::map<std::string, int> passes;
  Reconciler reconciler(*store, clock, [&](const std::string& uid) -> Reconciler::PassResult {
    std::lock_guard lock(mu);
    ++passes[uid];
    if (uid == "waits") return {3'600'000, true};    // on the backstop for an hour
    if (uid == "soon") return {passes[uid] == 1 ? 1 : -1, true};  // a backstop that fires at once
    return {3'600'000, false};                     // a timer of its own
  });
  auto count = [&](const std::string& uid) {
    std::lock_guard lock(mu);
    return passes[uid];
  };
  REQUIRE(reconciler.Start().ok());
  reconciler.WakeUrgent("waits");
  reconciler.WakeUrgent("own");
  REQUIRE(testing::WaitFor([&] { return count("waits") == 1 && count("own") == 1; }));
  REQUIRE(testing::WaitFor([&] { return reconciler.backstop_timers() == 1; }));
  reconciler.WakeAfter("waits", 100);  // an earlier timer of another kind replaces it
  CHECK(reconciler.backstop_timers() == 0);
  REQUIRE(testing::WaitFor([&] { return count("waits") == 2; }));  // fired; its pass marks a backstop again
  REQUIRE(testing::WaitFor([&] { return reconciler.backstop_timers() == 1; }));
  reconciler.WakeUrgent("soon");  // a backstop that fires, then none
  REQUIRE(testing::WaitFor([&] { return count("soon") == 2; }));
  CHECK(reconciler.backstop_timers() == 1);
  // A wake answers the backstop timer; the pass marks it again.
  reconciler.WakeUrgent("waits");
  REQUIRE(testing::WaitFor([&] { return count("waits") == 3; }));
  REQUIRE(testing::WaitFor([&] { return reconciler.backstop_timers() == 1; }));
  reconciler.Stop();
}

TEST_CASE("idle workers: a timer wakes one of them, a later timer none, a burst all of them", "[dispatch]") {
  testing::TempDir dir;
  std::unique_ptr<SqliteStore> store = testing::OpenStore(dir.File("gantry.db"));
  SystemClock clock;
  constexpr int kWorkers = 8;
  std::mutex mu;
  std::condition_variable cv;
  int in_pass = 0;
  int most_in_pass = 0;
  int passes = 0;
  bool hold = false;      // passes wait until every worker is in one
  bool released = false;  // set once they all were: a latch, so none waits on
  Reconciler reconciler(
      *store, clock,
      [&](const std::string&) {
        std::unique_lock lock(mu);
        ++passes;
        most_in_pass = std::max(most_in_pass, ++in_pass);
        if (in_pass == kWorkers) released = true;
        cv.notify_all();
        // Not "in_pass == kWorkers": the first to leave lowers it, and the
        // others, not yet awake, would wait out the whole 20 s.
        cv.wait_for(lock, std::chrono::seconds(20), [&] { return !hold || released; });
        --in_pass;
        return int64_t{-1};
      },
      kWorkers);
  REQUIRE(reconciler.Start().ok());
  auto all_idle = [&] { return reconciler.idle_workers() == kWorkers; };
  REQUIRE(testing::WaitFor(all_idle));
  // The timer waiter also wakes every half second without a timer: allow
  // for those polls in what is counted.
  auto polls_since = [&](std::chrono::steady_clock::time_point t) {
    return 1 + std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t).count() / 500;
  };

  SECTION("timers set later than the earliest wake no one") {
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t w0 = reconciler.wakeups();
    reconciler.WakeAfter("first", 60'000);  // the timer waiter sleeps until then now: one wake-up
    for (int i = 0; i < 50; ++i) reconciler.WakeAfter("later-" + std::to_string(i), 61'000 + i);
    REQUIRE(testing::WaitFor(all_idle));
    CHECK(reconciler.wakeups() - w0 <= 1 + polls_since(t0));
  }
  SECTION("a timer coming due wakes the timer waiter and one more, not all of them") {
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t w0 = reconciler.wakeups();
    reconciler.WakeAfter("soon", 50);
    REQUIRE(testing::WaitFor([&] {
      std::lock_guard lock(mu);
      return passes == 1;
    }));
    REQUIRE(testing::WaitFor(all_idle));
    // Set (1), due (1), the next timer waiter (1): kWorkers + 1 before.
    CHECK(reconciler.wakeups() - w0 <= 3 + polls_since(t0));
  }
  SECTION("a burst keeps every worker busy at once") {
    {
      std::lock_guard lock(mu);
      hold = true;
    }
    for (int i = 0; i < kWorkers; ++i) reconciler.Wake("burst-" + std::to_string(i));
    REQUIRE(testing::WaitFor([&] {
      std::lock_guard lock(mu);
      return passes == kWorkers;
    }));
    std::lock_guard lock(mu);
    CHECK(most_in_pass == kWorkers);
  }
  reconciler.Stop();
}

}  // namespace gantry

namespace gantry {

TEST_CASE("SetConcurrency bounds the passes at work at once, and the queue's order holds", "[dispatch]") {
  testing::TempDir dir;
  std::unique_ptr<SqliteStore> store = testing::OpenStore(dir.File("gantry.db"));
  SystemClock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> served;
  int at_work = 0, most_at_work = 0;
  bool hold_for_three = false;  // raised: a pass waits (bounded) until three are at work
  Reconciler reconciler{*store, clock,
                        [&](const std::string& uid) {
                          std::unique_lock lock(mu);
                          served.push_back(uid);
                          most_at_work = std::max(most_at_work, ++at_work);
                          cv.notify_all();
                          // Bounded, so that a pass cannot hold the others up for long
                          // while only two may be at work: a third is not let in then.
                          cv.wait_for(lock, std::chrono::milliseconds(hold_for_three ? 5'000 : 2),
                                      [&] { return hold_for_three && at_work >= 3; });
                          --at_work;
                          return int64_t{-1};
                        },
                        8};
  reconciler.SetConcurrency(2);
  std::vector<std::string> want;
  for (int i = 0; i < 40; ++i) {
    want.push_back("job-" + std::to_string(100 + i));
    reconciler.WakeNew(want.back(), 0, i + 1);
  }
  REQUIRE(reconciler.Start().ok());
  REQUIRE(testing::WaitFor([&] {
    std::lock_guard lock(mu);
    return served.size() >= 40;
  }));
  {
    std::lock_guard lock(mu);
    CHECK(most_at_work <= 2);  // two may overlap, a third never
    // Taken in the queue's order (two at a time may begin in either order).
    for (std::size_t i = 0; i + 2 < served.size(); ++i) {
      INFO(i);
      CHECK(std::find(want.begin(), want.end(), served[i]) - want.begin() <= static_cast<long>(i) + 1);
    }
  }
  // Drained: workers still waiting at the gate are idle, not jobs waiting for a pass.
  REQUIRE(testing::WaitFor([&] { return reconciler.active() == 0; }));
  CHECK(reconciler.gated() == 0);
  SECTION("raised, more go at once") {
    {
      std::lock_guard lock(mu);
      hold_for_three = true;
    }
    reconciler.SetConcurrency(8);
    for (int i = 0; i < 40; ++i) reconciler.WakeNew("more-" + std::to_string(i), 0, 100 + i);
    REQUIRE(testing::WaitFor([&] {
      std::lock_guard lock(mu);
      return served.size() >= 80;
    }));
    std::lock_guard lock(mu);
    CHECK(most_at_work > 2);
    CHECK(most_at_work <= 8);
  }
  reconciler.Stop();
}

}  // namespace gantry
