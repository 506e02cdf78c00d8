// The watchdog thread of call_watchdog.h.
#include "dist/call_watchdog.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"

namespace kps {
namespace dist {

class CallWatchdog {
 public:
  // Never destroyed: the thread runs until the process ends.
  static CallWatchdog& Get() {
    static CallWatchdog* w = new CallWatchdog();
    return *w;
  }

  void Add(const std::shared_ptr<CallWatch>& watch) {
    absl::MutexLock lock(&mu_);
    watches_.push_back(watch);
    if (!started_) {
      started_ = true;
      std::thread([this] { Run(); }).detach();
    }
  }

  void SetAction(StuckCallAction action) {
    absl::MutexLock lock(&mu_);
    action_ = std::move(action);
  }

 private:
  void Run() {
    for (;;) {
      absl::Duration period = absl::Milliseconds(250);
      std::vector<std::string> stuck;
      StuckCallAction action;
      {
        absl::MutexLock lock(&mu_);
        const absl::Time now = absl::Now();
        auto live = watches_.begin();
        for (auto it = watches_.begin(); it != watches_.end(); ++it) {
          std::shared_ptr<CallWatch> w = it->lock();
          if (w == nullptr) continue;  // its communicator is gone
          period = std::min(period, w->limit() / 10);
          if (Check(*w, now)) {
            stuck.push_back(absl::StrCat(
                "kps: ", w->who(), ": ", w->call_.load(std::memory_order_relaxed), " has not returned within ",
                absl::FormatDuration(w->limit()),
                " (a blocking NCCL call, the default data path): a rank is missing or stuck. NCCL cannot interrupt a "
                "blocking call safely, so the process ends (exit code ",
                kStuckCallExitCode, "); with KPS_NCCL_BLOCKING=0 the call would end in DeadlineExceeded instead"));
          }
          if (live != it) *live = std::move(*it);
          ++live;
        }
        watches_.erase(live, watches_.end());
        action = action_;
      }
      for (const std::string& message : stuck) {
        if (action) {
          action(message);
        } else {
          std::fprintf(stderr, "%s\n", message.c_str());
          std::fflush(stderr);
          std::_Exit(kStuckCallExitCode);
        }
      }
      absl::SleepFor(std::max(period, absl::Milliseconds(5)));
    }
  }

  // Whether `w` has been inside one call for its limit, as first seen by this thread; true
  // once per call.
  static bool Check(CallWatch& w, absl::Time now) {
    const uint64_t state = w.state_.load(std::memory_order_acquire);
    if (state != w.seen_state_) {
      w.seen_state_ = state;
      w.seen_at_ = now;
      w.reported_ = false;
      return false;
    }
    if ((state & 1) == 0 || w.reported_ || now - w.seen_at_ < w.limit()) return false;
    w.reported_ = true;
    return true;
  }

  absl::Mutex mu_;
  std::vector<std::weak_ptr<CallWatch>> watches_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  StuckCallAction action_ ABSL_GUARDED_BY(mu_);
};

void WatchCalls(const std::shared_ptr<CallWatch>& watch) { CallWatchdog::Get().Add(watch); }

void SetStuckCallActionForTesting(StuckCallAction action) { CallWatchdog::Get().SetAction(std::move(action)); }

}  // namespace dist
}  // namespace kps
