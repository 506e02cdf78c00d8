// A watchdog over host calls that may block without a bound: the NCCL calls on a blocking
// communicator (dist/communicator.h, KPS_NCCL_BLOCKING=1). Private to dist/ and its tests.
//
// NCCL cannot interrupt a blocking call safely: its fault-tolerance guide asks for nonblocking
// communicators and for no thread to be inside an NCCL call while ncclCommAbort runs (the
// abort frees the communicator under the blocked thread). So the watchdog does not abort: a
// call still inside after its limit ends the process, with a message naming the rank, the call
// and the limit, rather than leaving it hung forever. Launchers (kps launch, torchrun) then
// stop the other ranks.
//
//   auto watch = std::make_shared<CallWatch>("rank 0 of 2 on cuda:0", absl::Minutes(5));
//   WatchCalls(watch);
//   { WatchedCall in(watch.get(), "ncclAllReduce"); nccl->AllReduce(...); }
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/time/time.h"

namespace kps {
namespace dist {

// The exit code of a process the watchdog ends (as coreutils' timeout).
inline constexpr int kStuckCallExitCode = 124;

// The calls of one communicator. Enter and Leave cost two relaxed loads and stores, no clock
// read, so that watching adds nanoseconds to a call: the watchdog thread samples the state.
// One thread at a time calls Enter/Leave (the communicator's calls are serialized); calls do
// not nest.
class CallWatch {
 public:
  // `who` names the communicator in the message ("rank 0 of 2 on cuda:0"); `limit` is how
  // long one call may stay inside.
  CallWatch(std::string who, absl::Duration limit) : who_(std::move(who)), limit_(limit) {}
  CallWatch(const CallWatch&) = delete;
  CallWatch& operator=(const CallWatch&) = delete;

  // `call` must outlive the call (a string literal).
  void Enter(const char* call) {
    call_.store(call, std::memory_order_relaxed);
    // Odd: inside. The release orders the name before the state the watchdog acquires.
    state_.store(state_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  void Leave() { state_.store(state_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

  const std::string& who() const { return who_; }
  absl::Duration limit() const { return limit_; }

 private:
  friend class CallWatchdog;
  const std::string who_;
  const absl::Duration limit_;
  std::atomic<uint64_t> state_{0};  // the number of Enters and Leaves: odd while inside a call
  std::atomic<const char*> call_{""};
  // The watchdog thread's own view (only it reads and writes these).
  uint64_t seen_state_ = 0;
  absl::Time seen_at_;
  bool reported_ = false;
};

// Marks one call into NCCL on `watch` for the scope (nothing when `watch` is null: the
// nonblocking path, whose waits are bounded by polling).
class WatchedCall {
 public:
  WatchedCall(CallWatch* watch, const char* call) : watch_(watch) {
    if (watch_ != nullptr) watch_->Enter(call);
  }
  ~WatchedCall() {
    if (watch_ != nullptr) watch_->Leave();
  }
  WatchedCall(const WatchedCall&) = delete;
  WatchedCall& operator=(const WatchedCall&) = delete;

 private:
  CallWatch* watch_;
};

// Puts `watch` under the process's watchdog thread (started on the first call; it holds the
// watch weakly, so a destroyed communicator drops out). The thread wakes every tenth of the
// smallest limit (5 ms to 250 ms): a call is reported between its limit and its limit plus
// two wake-ups after it entered.
void WatchCalls(const std::shared_ptr<CallWatch>& watch);

// What the watchdog does with a call that stayed inside past its limit, given the message.
// By default: the message to stderr, then std::_Exit(kStuckCallExitCode) (no destructors or
// atexit handlers: they would wait on the same communicator). Each stuck call is reported
// once. Tests replace the action; an empty function restores the default.
using StuckCallAction = std::function<void(const std::string& message)>;
void SetStuckCallActionForTesting(StuckCallAction action);

}  // namespace dist
}  // namespace kps
