#pragma once
// The split-phase frame the notified halos share (halo.cpp's NotifiedHalo,
// halo_staged.cpp's StagedHalo): start() begins an exchange, finish()
// completes it; exchange() is both, and begin()/end() split them when the
// strategy is non-blocking (locus-nb).
#include <string>
#include <utility>

#include "locus/halo.hpp"

namespace locus::detail {

template <class T>
class SplitHalo : public HaloExchange<T> {
 public:
  void exchange(GridFieldT<T>& field) override {
    start(field);
    finish(field);
  }
  void begin(GridFieldT<T>& field) override {
    if (nonblocking_)
      start(field);
    else
      exchange(field);
  }
  void end(GridFieldT<T>& field) override {
    if (nonblocking_) finish(field);
  }
  bool split_phase() const override { return nonblocking_; }
  std::string name() const override { return name_; }

 protected:
  SplitHalo(std::string name, bool nonblocking) : name_(std::move(name)), nonblocking_(nonblocking) {}
  virtual void start(GridFieldT<T>& field) = 0;
  virtual void finish(GridFieldT<T>& field) = 0;

  std::string name_;
  bool nonblocking_;
};

}  // namespace locus::detail
