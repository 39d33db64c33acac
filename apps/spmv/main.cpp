#include "spmv.hpp"

int main(int argc, char** argv) {
  return locus::run(argc, argv, spmv::app_info(), spmv::run);
}
