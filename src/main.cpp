#include "app/cli.hpp"

int main(int argc, char** argv) {
  return warden::app::run_cli(argc, argv);
}
