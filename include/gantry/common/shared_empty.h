// SharedEmpty<T>(): one empty T per type, made once and shared, as the
// default of a shared_ptr<const T> that must never be null. Such a default
// then costs no allocation: the reconciler builds several per pass and
// replaces them at once.
//
// Thread-safe (a function-local static).
#pragma once

#include <memory>

namespace gantry {

template <class T>
const std::shared_ptr<const T>& SharedEmpty() {
  static const auto* empty = new std::shared_ptr<const T>(std::make_shared<const T>());
  return *empty;
}

}  // namespace gantry
