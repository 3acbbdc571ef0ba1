// The table of embedded console files, written at build time by cmake/embed_assets.cmake.
#pragma once

#include <cstddef>
#include <span>

namespace warden::gateway::console::detail {

struct EmbeddedFile {
  const char* path;          // URL path, e.g. "/index.html"
  const char* content_type;  // e.g. "text/html; charset=utf-8"
  const char* etag;          // quoted, from the content's SHA-256
  const char* data;
  std::size_t size;
};

// Defined in the generated console_assets.cpp.
std::span<const EmbeddedFile> embedded_files();

}  // namespace warden::gateway::console::detail
