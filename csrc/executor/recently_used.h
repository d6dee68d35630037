#pragma once
// Keys in the order of their last use, at most `limit` of them. The CUDA backend keeps a CUDA Graph
// per input signature, each with a memory pool of its own. A server that sees many shapes (sequence
// lengths, batch sizes) must not keep them all, so the least recently used ones are released.
#include <cstddef>
#include <list>
#include <map>
#include <vector>

namespace autograph {

template <typename Key>
class RecentlyUsed {
 public:
  explicit RecentlyUsed(size_t limit) : limit_(limit < 1 ? 1 : limit) {}

  // Marks a use of `key` (new or known). Returns the keys that fall out: the least recently used
  // beyond the limit, oldest first; never `key` itself.
  std::vector<Key> Use(const Key& key) {
    // The common case, the latest key again (a replay's key on every call of a served model): one compare,
    // no copy. A capture's key holds every weight's numbers: thousands of them.
    if (!order_.empty() && order_.front() == key) return {};
    auto found = where_.find(key);
    if (found != where_.end()) order_.erase(found->second);
    order_.push_front(key);
    where_[key] = order_.begin();
    std::vector<Key> evicted;
    while (order_.size() > limit_) {
      evicted.push_back(order_.back());
      where_.erase(order_.back());
      order_.pop_back();
    }
    return evicted;
  }

  size_t size() const { return order_.size(); }
  size_t limit() const { return limit_; }

 private:
  size_t limit_;
  std::list<Key> order_;  // most recent first
  std::map<Key, typename std::list<Key>::iterator> where_;
};

}  // namespace autograph
