// Owning buffers on a device for the CLI and benchmarks (the library itself owns nothing).
#pragma once

#include <cstring>
#include <memory>
#include <vector>

#include "mxq/api.hpp"
#include "runtime/memory.hpp"

namespace mxq::cli {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const Device& d, int64_t bytes) : dev_(d), bytes_(bytes) {
    if (bytes > 0) ptr_ = runtime::device_alloc(d, bytes);
  }
  ~DeviceBuffer() {
    if (ptr_) runtime::device_free(dev_, ptr_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(dev_, o.dev_);
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  void* data() const { return ptr_; }
  int64_t bytes() const { return bytes_; }
  Buffer buffer() const { return {ptr_, bytes_}; }
  void upload(const void* src) { runtime::copy_to_device(dev_, ptr_, src, bytes_); }
  void download(void* dst) const { runtime::copy_to_host(dev_, dst, ptr_, bytes_); }
  void fill(int value) { runtime::device_memset(dev_, ptr_, value, bytes_); }

 private:
  Device dev_{};
  void* ptr_ = nullptr;
  int64_t bytes_ = 0;
};

// Every buffer a recipe's plan asks for, plus the optional amax.
class QuantizedBuffers {
 public:
  QuantizedBuffers(const Recipe& r, int64_t rows, int64_t cols, const Device& d)
      : recipe_(r), rows_(rows), cols_(cols), dev_(d), layout_(plan(r, rows, cols)),
        data_(d, layout_.data.bytes), scales_(d, layout_.scales.bytes), col_data_(d, layout_.col_data.bytes),
        col_scales_(d, layout_.col_scales.bytes), global_(d, layout_.global_scale.bytes), amax_(d, 4) {}
  QuantizedTensor view() const {
    QuantizedTensor q;
    q.recipe = recipe_;
    q.rows = rows_;
    q.cols = cols_;
    q.device = dev_;
    q.data = data_.buffer();
    q.scales = scales_.buffer();
    q.col_data = col_data_.buffer();
    q.col_scales = col_scales_.buffer();
    q.global_scale = global_.buffer();
    q.amax = amax_.buffer();
    return q;
  }
  const QuantizedLayout& layout() const { return layout_; }
  DeviceBuffer& data() { return data_; }
  DeviceBuffer& scales() { return scales_; }
  DeviceBuffer& col_data() { return col_data_; }
  DeviceBuffer& col_scales() { return col_scales_; }
  DeviceBuffer& global_scale() { return global_; }
  DeviceBuffer& amax() { return amax_; }

 private:
  Recipe recipe_;
  int64_t rows_, cols_;
  Device dev_;
  QuantizedLayout layout_;
  DeviceBuffer data_, scales_, col_data_, col_scales_, global_, amax_;
};

inline Device pick_device(Backend b) {
  if (b == Backend::cpu) return {};
  if (runtime::cuda_device_count() > 0) return {DeviceKind::cuda, 0};
  return {};
}

inline void synchronize(const Device& d) { runtime::device_synchronize(d); }

}  // namespace mxq::cli
