// Requests waiting for a replica's first byte, by model and replica: nothing has reached their clients yet,
// so when the replica is marked unhealthy they are recalled at once (net::Recall) and go to another replica,
// as a refused connect would, instead of waiting out timeouts.first_byte on an engine that will not answer.
//
//   net::Recall recall;
//   auto entry = waiting.add(model, replica, recall);   // removed when `entry` goes
//   auto r = co_await pool.send(endpoint, request, timeouts, &recall);
//   if (!r && recall.recalled()) { /* send it elsewhere */ }
//   ...
//   waiting.recall(model, {replica});                    // elsewhere: the replica was marked unhealthy
//
// Not thread-safe: owned by the gateway's I/O thread.
#pragma once

#include <cstddef>
#include <list>
#include <map>
#include <utility>
#include <vector>

#include "net/client.hpp"

namespace warden::gateway {

class ModelRuntime;

class WaitingRequests {
 public:
  using Key = std::pair<const ModelRuntime*, int>;
  using List = std::list<net::Recall*>;

  // One request's place in the registry, left when destroyed.
  class Entry {
   public:
    Entry(List* list, List::iterator at) : list_(list), at_(at) {}
    Entry(Entry&& other) noexcept : list_(std::exchange(other.list_, nullptr)), at_(other.at_) {}
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    Entry& operator=(Entry&&) = delete;
    ~Entry() {
      if (list_ != nullptr) {
        list_->erase(at_);
      }
    }

   private:
    List* list_;
    List::iterator at_;
  };

  /// `recall` waits on `replica` of `model` until the returned entry is destroyed.
  Entry add(const ModelRuntime& model, int replica, net::Recall& recall) {
    List& list = waiting_[{&model, replica}];
    return Entry(&list, list.insert(list.end(), &recall));
  }
  /// Recalls every request waiting on one of `replicas` of `model`; returns how many.
  std::size_t recall(const ModelRuntime& model, const std::vector<int>& replicas) {
    std::size_t n = 0;
    for (int replica : replicas) {
      const auto it = waiting_.find({&model, replica});
      if (it == waiting_.end()) {
        continue;
      }
      for (net::Recall* r : it->second) {
        n += r->recalled() ? 0 : 1;
        r->recall();
      }
    }
    return n;
  }

 private:
  std::map<Key, List> waiting_;  // lists never move: entries point into them
};

}  // namespace warden::gateway
