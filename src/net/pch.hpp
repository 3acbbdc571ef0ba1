// Precompiled for every I/O layer: Asio and Beast dominate build time on small machines.
#pragma once
#include <spdlog/spdlog.h>
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
