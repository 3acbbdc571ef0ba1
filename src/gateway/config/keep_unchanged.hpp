// A struct of settings read again from the file, over the values in force: field by field (Boost.PFR, so
// that no field can be left out), the file's value where the file changed it, the one in force where the
// file left it as it was. A reload applies the file this way, and so does a restart over a routing change
// stored through the admin API: a change the file did not touch survives both alike.
#pragma once

#include <boost/pfr/core.hpp>
#include <cstddef>
#include <type_traits>
#include <utility>

namespace warden::gateway {

// `next` (the file's value) with `running` kept where the file left a setting as it was (`was` == `now`).
template <class T>
void keep_unchanged(T& next, const T& running, const T& was, const T& now) {
  if constexpr (std::is_aggregate_v<T>) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (keep_unchanged(boost::pfr::get<I>(next), boost::pfr::get<I>(running), boost::pfr::get<I>(was),
                      boost::pfr::get<I>(now)),
       ...);
    }
    (std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
  } else if (was == now) {
    next = running;
  }
}

}  // namespace warden::gateway
