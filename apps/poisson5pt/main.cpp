#include "poisson5pt.hpp"

int main(int argc, char** argv) {
  return locus::run(argc, argv, poisson5pt::app_info(), poisson5pt::run);
}
