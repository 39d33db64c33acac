#include "heat3d.hpp"

int main(int argc, char** argv) {
  return locus::run(argc, argv, heat3d::app_info(), heat3d::run);
}
