// Chained setters of a test case's node attributes (case.ints("pads", {...}).i("group", 2)),
// shared by the structs that describe a node to build: Self derives from AttrSetters<Self>.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace voxrt::test {

template <class Self>
struct AttrSetters {
  std::map<std::string, ir::Attribute> attrs;

  Self& ints(const std::string& n, std::vector<int64_t> v) {
    attrs[n].kind = ir::Attribute::Kind::is;
    attrs[n].is = std::move(v);
    return self();
  }
  Self& i(const std::string& n, int64_t v) {
    attrs[n].kind = ir::Attribute::Kind::i;
    attrs[n].i = v;
    return self();
  }
  Self& f(const std::string& n, float v) {
    attrs[n].kind = ir::Attribute::Kind::f;
    attrs[n].f = v;
    return self();
  }
  Self& s(const std::string& n, std::string v) {
    attrs[n].kind = ir::Attribute::Kind::s;
    attrs[n].s = std::move(v);
    return self();
  }

 private:
  Self& self() { return static_cast<Self&>(*this); }
};

}  // namespace voxrt::test
