// The kernel headers the JIT compiles from, embedded at build time (cmake/embed_headers.cmake):
// the same files the ahead-of-time kernels include, so both compile the same code.
#pragma once

namespace mxq::runtime::jit {

struct EmbeddedHeader {
  const char* name;  // as written in #include directives
  const char* text;
};
extern const EmbeddedHeader kEmbeddedHeaders[];
extern const int kEmbeddedHeaderCount;

}  // namespace mxq::runtime::jit
