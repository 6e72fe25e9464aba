// A C++ program image for image_loader's tests: static objects with constructors and
// destructors, library containers as globals, virtual functions, typeid/dynamic_cast,
// exceptions thrown and caught in the image (also from libstdc++), std::function.
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

namespace {
char event_log[64];  // trivial: never destroyed
void log_event(const char* s) { std::strncat(event_log, s, sizeof event_log - std::strlen(event_log) - 1); }

struct Tracked {
  const char* name;
  explicit Tracked(const char* n) : name(n) { log_event(n); }
  ~Tracked() { log_event("~"), log_event(name); }
};
Tracked first("a");
Tracked second("b");

struct Base {
  virtual ~Base() = default;
  virtual int f() const { return 1; }
};
struct Derived : Base {
  int f() const override { return 2; }
};
struct ImageError : std::runtime_error {
  int code;
  explicit ImageError(int c) : std::runtime_error("image error"), code(c) {}
};
}  // namespace

std::string greeting = "hello from a loaded image";
std::vector<int> squares = {0, 1, 4, 9, 16};
std::map<std::string, int> numbers = {{"one", 1}, {"two", 2}, {"three", 3}};

extern "C" {
const char* events() { return event_log; }
const char* greeting_text() { return greeting.c_str(); }
int squares_sum() {
  int s = 0;
  for (int x : squares) s += x;
  return s;
}
int number(const char* name) {
  auto it = numbers.find(name);
  return it == numbers.end() ? -1 : it->second;
}
int append_number(const char* name, int v) {
  numbers[name] = v;
  return static_cast<int>(numbers.size());
}
int virtual_call(int derived) {
  Base* b = derived ? new Derived : new Base;
  int r = b->f();
  delete b;
  return r;
}
int rtti() {
  Derived d;
  Base& b = d;
  return dynamic_cast<Derived*>(&b) != nullptr && typeid(b) == typeid(Derived) &&
         std::strcmp(typeid(b).name(), typeid(Derived).name()) == 0;
}
// An exception of the image's own type, thrown and caught in the image.
int own_exception() {
  try {
    throw ImageError(42);
  } catch (const ImageError& e) {
    return e.code;
  }
  return 0;
}
// One thrown inside libstdc++ (vector::at), caught in the image by a libstdc++ base class.
int library_exception() {
  try {
    return squares.at(1000);
  } catch (const std::logic_error& e) {
    return typeid(e) == typeid(std::out_of_range) && dynamic_cast<const std::out_of_range*>(&e) != nullptr ? 7 : 1;
  }
}
int function_object(int x) {
  int k = 5;
  std::function<int(int)> f = [k](int y) { return y * k; };
  std::function<int(int)> g = f;
  return g(x) + 1;
}
// A function-local static: registers its destructor when first called.
int local_static() {
  static Tracked local("l");
  return 1;
}
}
// Thrown here, caught by the caller outside the image.
void throw_out(int code) { throw ImageError(code); }
extern "C" void throw_out_c(int code) { throw_out(code); }
