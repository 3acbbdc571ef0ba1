// Small helpers shared by the code that keeps state in the SQLite database under state_dir.
#pragma once

#include "base/result.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <string>
#include <string_view>
#include <utility>

namespace warden::gateway {

inline std::string sqlite_error(sqlite3* db, std::string_view what) {
  return fmt::format("{}: {}", what, db ? sqlite3_errmsg(db) : "out of memory");
}

// A prepared statement that finalizes itself.
struct Stmt {
  sqlite3_stmt* s = nullptr;
  Stmt() = default;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(s); }
};

// BEGIN … COMMIT, rolled back unless commit() succeeded (every early return included).
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db) { sqlite3_exec(db_, "BEGIN", nullptr, nullptr, nullptr); }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction() {
    if (!done_) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    }
  }
  base::Result<void> commit() {
    done_ = sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK;
    if (!done_) {
      return base::Failure{sqlite_error(db_, "commit")};
    }
    return {};
  }

 private:
  sqlite3* db_;
  bool done_ = false;
};

}  // namespace warden::gateway
